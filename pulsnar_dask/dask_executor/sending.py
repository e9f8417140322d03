"""Data that goes to the cluster once, on purpose.

Distributed warns (``UserWarning``, "Sending large graph of size ...") when a graph it
submits is over ``distributed.admin.large-graph-warning-threshold`` (10 MB), and advises
sending the data once as a future that tasks then fetch. That is what the engine does
with what many tasks need (:func:`share`): the warning then only tells a user of a large
run about a transfer that is by design.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from distributed import Client, Future

from pulsnar_dask.core.map_reduce import identity

LARGE_GRAPH = "Sending large graph"  # the start of distributed's warning

# ``catch_warnings`` saves and restores the process's filter list: two blocks open at
# once in two threads would restore each other's filters (one left silenced for good)
_FILTERS = threading.RLock()


@contextlib.contextmanager
def sent_once() -> Iterator[None]:
    """Submit inside this block without distributed's large-graph warning. Keep the
    block to the submit (the warning is raised there): filters are per process, so the
    same warning raised by another thread meanwhile is silenced too, and blocks in
    other threads wait for this one."""
    with _FILTERS, warnings.catch_warnings():
        warnings.filterwarnings("ignore", LARGE_GRAPH, UserWarning)
        yield


def share(client: Client, value: Any) -> Future:
    """Put a value many tasks need on the cluster once, as a task that returns it (a
    graph would carry it again with each computation). Tasks fetch it from the worker
    that holds it, and if that worker is lost the scheduler computes it again from the
    task: scattered data would be gone, and a broadcast scatter waited for ever on a
    killed worker (``tests/test_reliability.py``)."""
    with sent_once():
        return client.submit(identity, value, pure=False)
