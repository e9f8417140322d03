"""Give Dask workers back glibc's large-block reuse that Dask's nanny turns off.

A nanny starts its worker with ``MALLOC_TRIM_THRESHOLD_`` set (64 KiB, Dask's
``distributed.nanny.pre-spawn-environ``), so that freed memory goes back to the operating
system. Setting any of glibc's malloc parameters also turns off its dynamic mmap
threshold (``mallopt(3)``): every block over 128 KiB is then a fresh ``mmap`` whose pages
fault in and are zeroed on first touch, and is unmapped when freed. NumPy code that
makes a few-MiB temporary per step pays that on every step: a 10-component Gaussian
mixture on 5,000 positives x 100 features took 5.0-5.5 s of a worker's time against 2.0
s in a plain process (benchmarks/results/README.md, item 30).

:func:`tune_malloc` restores what glibc's dynamic threshold would reach (blocks up to 32
MiB come from the heap) and keeps at most 32 MiB at the top of a heap when trimming
(``M_TOP_PAD``), so Dask's trim threshold still returns the rest. It acts only where a
malloc parameter was set in the environment and the two it sets were not: a worker
started without them keeps glibc's own behaviour, and a user's explicit choice stands.
:class:`MallocTuning` applies it on every worker of a cluster, those that join later
included.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

from distributed.diagnostics.plugin import WorkerPlugin

logger = logging.getLogger(__name__)

# mallopt(3) parameter numbers (glibc's malloc.h)
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
# glibc's ceiling for its dynamic mmap threshold on 64-bit systems (4 MiB * sizeof(long))
MMAP_THRESHOLD = 32 * 2**20
TOP_PAD = 32 * 2**20
# environment variables that set a malloc parameter, and so turn the dynamic threshold off
MALLOC_VARIABLES = (
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
)
SETS = {"MALLOC_MMAP_THRESHOLD_": M_MMAP_THRESHOLD, "MALLOC_TOP_PAD_": M_TOP_PAD}
PLUGIN_NAME = "pulsnar-dask-malloc"


def tune_malloc() -> bool:
    """Raise this process's mmap threshold and top pad to 32 MiB where the environment
    turned glibc's dynamic threshold off (module docstring).

    Returns
    -------
    bool
        Whether a parameter was set: ``False`` off glibc (macOS, Windows, musl), where no
        malloc variable is set, or where the user set both of these.
    """
    if not sys.platform.startswith("linux") or not any(v in os.environ for v in MALLOC_VARIABLES):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    values = {M_MMAP_THRESHOLD: MMAP_THRESHOLD, M_TOP_PAD: TOP_PAD}
    changed = [p for v, p in SETS.items() if v not in os.environ and mallopt(p, values[p]) == 1]
    if changed:
        logger.debug("malloc: blocks up to %d MiB from the heap", MMAP_THRESHOLD >> 20)
    return bool(changed)


class MallocTuning(WorkerPlugin):
    """Run :func:`tune_malloc` in every worker process (registered by the Dask
    executor under ``PLUGIN_NAME``, so registering it again replaces it)."""

    name = PLUGIN_NAME

    def setup(self, worker) -> None:
        tune_malloc()
