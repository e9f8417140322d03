"""Data that goes to the cluster once, on purpose.

Distributed warns (``UserWarning``, "Sending large graph of size ...") when a graph it
submits is over ``distributed.admin.large-graph-warning-threshold`` (10 MB), and advises
sending the data once as a future that tasks then fetch. That is what the engine does
with the arrays many tasks need (:func:`~pulsnar_dask.dask_executor.engine.share`), and
the results the workers write are split over partitions and sent once: the warning then
only tells a user of a large run about a transfer that is by design.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

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
