"""How a local cluster's worker processes start: forked from a pre-imported server.

By default Dask spawns each local worker as a fresh interpreter, which imports
distributed and then, on its first task, NumPy, pandas, XGBoost and scikit-learn: about
1.6 s of CPU per worker, paid by every worker. A fork server imports these modules once
and forks ready workers from itself (a single-threaded process, so forking is safe).
Started before the client's own imports, it does that work alongside them. Linux only:
on macOS forking after system frameworks are loaded is unsafe (Python spawns there too),
and Windows has no fork; elsewhere Dask's spawn stays.

A forked worker inherits the server's environment, not the client's, so the server
starts with the variables Dask's nanny sets before spawning a worker (one BLAS thread,
the fixed hash seed), and
:func:`pulsnar_dask.dask_executor.connect.make_cluster` hands each nanny the client's
environment of the moment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing
import multiprocessing.forkserver
import os
import sys
from collections.abc import Iterator, Mapping

PRELOAD = "pulsnar_dask.dask_executor.preload"
PRE_SPAWN = "distributed.nanny.pre-spawn-environ"


def start_fork_server() -> bool:
    """Start (once) the fork server that local workers are forked from.

    It imports :mod:`pulsnar_dask.dask_executor.preload` in the background; this call does not wait
    for it.

    Returns
    -------
    bool
        Whether workers can be forked from it (Linux only).
    """
    if not sys.platform.startswith("linux"):
        return False
    with _environ(pre_spawn_environ()):
        multiprocessing.get_context("forkserver").set_forkserver_preload([PRELOAD])
        multiprocessing.forkserver.ensure_running()
    return True


def pre_spawn_environ() -> dict[str, str]:
    """Return the variables Dask's nanny sets before it spawns a worker process.

    ``distributed.nanny.pre-spawn-environ`` (variables already set win), and the hash
    seed the nanny fixes so that every worker hashes alike. Distributed's defaults are
    read from its own ``distributed.yaml`` rather than by importing it (0.3-0.4 s that
    would delay the server's start), with Dask's configuration over them as distributed
    puts it.
    """
    import dask.config

    config = {**_distributed_defaults(), **(dask.config.get(PRE_SPAWN, default=None) or {})}
    env = {k: os.environ.get(k, str(v)) for k, v in config.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"  # distributed.nanny's choice, dask/distributed#8400
    return env


def _distributed_defaults() -> dict:
    """``distributed.nanny.pre-spawn-environ`` as distributed's ``distributed.yaml`` sets it
    (where that file is not found: as its imported defaults set it)."""
    spec = importlib.util.find_spec("distributed")
    locations = (spec and spec.submodule_search_locations) or []
    for location in locations:
        path = os.path.join(location, "distributed.yaml")
        if os.path.isfile(path):
            import yaml

            with open(path) as f:
                defaults = yaml.safe_load(f)
            return defaults["distributed"]["nanny"]["pre-spawn-environ"] or {}
    import dask.config
    import distributed  # noqa: F401 - puts distributed's defaults into dask's config

    return dask.config.get(PRE_SPAWN)


@contextlib.contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
