"""Large NumPy blocks from the heap, for the tasks that make many of them.

A nanny starts its worker with ``MALLOC_TRIM_THRESHOLD_`` set (64 KiB, Dask's
``distributed.nanny.pre-spawn-environ``), so that freed memory goes back to the operating
system. Setting any of glibc's malloc parameters also turns off its dynamic mmap
threshold (``mallopt(3)``): every block over 128 KiB is then a fresh ``mmap`` whose pages
fault in and are zeroed on first touch, and is unmapped when freed. Code that makes a
few-MiB temporary per step, such as a Gaussian mixture fit, pays that on every step and
runs more than twice as slow in a worker as in a plain process.

:func:`heap_blocks` lifts the threshold to what glibc's dynamic one would reach (blocks
up to 32 MiB from the heap) and keeps up to 32 MiB at the top of a heap when trimming
(``M_TOP_PAD``) for the length of a task, then puts back glibc's defaults. Only for the
length of a task: lifted for a worker's whole life, the pages a large table frees into
the heap would stay there and the worker would hold more memory.

It acts only where a malloc variable was set in the environment the process started
with (``/proc/self/environ``; a nanny also puts its variables into its own
``os.environ``, where glibc never read them), as elsewhere glibc's dynamic threshold is
on and a fixed value would turn it off; and it leaves alone a parameter the user set,
and glibc's tunables. The lift is counted: on a worker with several threads the defaults
come back when the last task inside it ends, and while one runs, the worker's other
threads allocate the same way.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator

# mallopt(3) parameter numbers (glibc's malloc.h) and their defaults (the man page's)
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
DEFAULTS = {M_MMAP_THRESHOLD: 128 * 2**10, M_TOP_PAD: 128 * 2**10}
# blocks up to glibc's ceiling for its dynamic mmap threshold on 64-bit systems (4 MiB *
# sizeof(long)) from the heap, and as much kept at a heap's top when it is trimmed
LIFTED = {M_MMAP_THRESHOLD: 32 * 2**20, M_TOP_PAD: 32 * 2**20}
# environment variables that set a malloc parameter, and so turn the dynamic threshold off
MALLOC_VARIABLES = (
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
)
VARIABLE_OF = {M_MMAP_THRESHOLD: "MALLOC_MMAP_THRESHOLD_", M_TOP_PAD: "MALLOC_TOP_PAD_"}

_lock = threading.Lock()
_inside = 0  # tasks inside heap_blocks in this process


def _startup_environment() -> set[str] | None:
    """Names of the variables this process started with (``None``: unknown)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return None
    return {e.split(b"=", 1)[0].decode(errors="replace") for e in entries if b"=" in e}


@functools.cache
def _adjustable() -> tuple[Callable[[int, int], int] | None, tuple[int, ...]]:
    """glibc's ``mallopt`` and the parameters this process may adjust: none off glibc,
    where no malloc variable was set at start-up, where glibc's tunables set malloc's
    parameters, or those the user set."""
    try:
        glibc = sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        glibc = None
    started = _startup_environment() if glibc else None
    if not started or not any(v in started for v in MALLOC_VARIABLES):
        return None, ()
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return None, ()
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return None, ()
    return mallopt, tuple(p for p, v in VARIABLE_OF.items() if v not in started)


def _set(values: dict[int, int], params: tuple[int, ...], mallopt) -> bool:
    return all(mallopt(p, values[p]) == 1 for p in params)


@contextlib.contextmanager
def heap_blocks() -> Iterator[bool]:
    """Serve blocks up to 32 MiB from the heap inside the ``with`` (module docstring).

    Yields
    ------
    bool
        Whether glibc took the lifted parameters (already lifted by another thread
        counts).
    """
    global _inside
    mallopt, params = _adjustable()
    if mallopt is None or not params:
        yield False
        return
    with _lock:
        _inside += 1
        lifted = _inside > 1 or _set(LIFTED, params, mallopt)
    try:
        yield lifted
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _set(DEFAULTS, params, mallopt)


def with_heap_blocks(fn: Callable, *args):
    """``fn(*args)`` inside :func:`heap_blocks`: a task's body."""
    with heap_blocks():
        return fn(*args)
