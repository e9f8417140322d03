"""Large NumPy blocks from the heap, for the tasks that make many of them.

A nanny starts its worker with ``MALLOC_TRIM_THRESHOLD_`` set (64 KiB, Dask's
``distributed.nanny.pre-spawn-environ``), so that freed memory goes back to the operating
system. Setting any of glibc's malloc parameters also turns off its dynamic mmap
threshold (``mallopt(3)``): every block over 128 KiB is then a fresh ``mmap`` whose pages
fault in and are zeroed on first touch, and is unmapped when freed. Code that makes a
few-MiB temporary per step pays that on every step: a 10-component Gaussian mixture on
5,000 positives x 100 features took 5.0-5.5 s of a worker's time against 2.0 s in a plain
process (benchmarks/results/README.md, item 30).

:func:`heap_blocks` lifts the threshold to what glibc's dynamic one would reach (blocks
up to 32 MiB from the heap) and keeps up to 32 MiB at the top of a heap when trimming
(``M_TOP_PAD``) for the length of a task, then puts back glibc's defaults. Only for the
length of a task: lifted for a whole run, the workers held 20-30% more memory (the
table's pages freed into the heap stay there). It acts only where a malloc variable is
set in the environment (else glibc's dynamic threshold is on) and leaves a parameter the
user set. On a worker with several threads, a task that ends first puts the defaults
back for the others too: they run slower, never wrong.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import sys
from collections.abc import Callable, Iterator

# mallopt(3) parameter numbers (glibc's malloc.h) and their defaults (the man page's)
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
DEFAULTS = {M_MMAP_THRESHOLD: 128 * 2**10, M_TOP_PAD: 128 * 2**10}
# glibc's ceiling for its dynamic mmap threshold on 64-bit systems (4 MiB * sizeof(long))
LIFTED = {M_MMAP_THRESHOLD: 32 * 2**20, M_TOP_PAD: 32 * 2**20}
# environment variables that set a malloc parameter, and so turn the dynamic threshold off
MALLOC_VARIABLES = (
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
)
VARIABLE_OF = {M_MMAP_THRESHOLD: "MALLOC_MMAP_THRESHOLD_", M_TOP_PAD: "MALLOC_TOP_PAD_"}


@functools.cache
def _adjustable() -> tuple[Callable[[int, int], int] | None, tuple[int, ...]]:
    """glibc's ``mallopt`` and the parameters this process may adjust (none off glibc,
    with no malloc variable set, or where the user set them)."""
    if not sys.platform.startswith("linux") or not any(v in os.environ for v in MALLOC_VARIABLES):
        return None, ()
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return None, ()
    return mallopt, tuple(p for p, v in VARIABLE_OF.items() if v not in os.environ)


@contextlib.contextmanager
def heap_blocks() -> Iterator[bool]:
    """Serve blocks up to 32 MiB from the heap inside the ``with`` (module docstring).

    Yields
    ------
    bool
        Whether anything was changed.
    """
    mallopt, params = _adjustable()
    if mallopt is None or not params:
        yield False
        return
    for p in params:
        mallopt(p, LIFTED[p])
    try:
        yield True
    finally:
        for p in params:
            mallopt(p, DEFAULTS[p])


def with_heap_blocks(fn: Callable, *args):
    """``fn(*args)`` inside :func:`heap_blocks`: a task's body."""
    with heap_blocks():
        return fn(*args)
