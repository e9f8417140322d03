"""Where the job runs: a local cluster, an existing scheduler, or a cluster from a YAML config.

A config file (see ``cluster_configs/``) has a ``type`` and that type's options::

    type: local            # LocalCluster: n_workers, threads_per_worker, memory_limit
    type: scheduler        # an existing scheduler: address
    type: ssh              # distributed.SSHCluster: hosts, connect_options, worker_options
    type: kubernetes       # dask_kubernetes KubeCluster: name, image, n_workers, resources
    type: slurm | pbs      # dask_jobqueue SLURMCluster / PBSCluster: cores, memory, jobs, ...
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import os
import re
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import yaml
from distributed import Client, LocalCluster, Nanny, Worker
from distributed.core import Server

from pulsnar_dask.dask_executor.forkserver import start_fork_server
from pulsnar_dask.errors import PUError

logger = logging.getLogger(__name__)

CLUSTER_TYPES = ("local", "scheduler", "ssh", "kubernetes", "slurm", "pbs")
CONNECT_TIMEOUT_S = 20
# A Dask server's first message, its handshake, is a few hundred bytes; the first 8
# bytes of what it sends give that message's length.
HANDSHAKE_MAX_BYTES = 1 << 20


def load_cluster_config(path: str | Path) -> dict[str, Any]:
    """Read and check a cluster config file.

    Returns
    -------
    dict
        The config, with ``type`` one of :data:`CLUSTER_TYPES`.
    """
    try:
        config = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise PUError(f"cluster config {path} does not exist") from None
    except UnicodeDecodeError:
        raise PUError(f"cluster config {path} is not a text file") from None
    except OSError as exc:  # a folder, no permission
        raise PUError(f"cannot read cluster config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise PUError(f"cluster config {path} is not valid YAML: {exc}") from None
    if not isinstance(config, dict) or config.get("type") not in CLUSTER_TYPES:
        raise PUError(
            f"cluster config {path} needs 'type' set to one of {', '.join(CLUSTER_TYPES)}"
        )
    return config


def make_cluster(config: dict[str, Any]) -> Any:
    """Turn a config into a cluster object (not yet connected to).

    Returns
    -------
    Cluster or str
        A cluster object, or the scheduler address for ``type: scheduler``. Batch
        clusters are not scaled yet: :func:`connect` submits their ``jobs``.
    """
    kind = config["type"]
    options = {k: v for k, v in config.items() if k != "type"}
    if kind == "local":
        _check_local_options(options)
        options.setdefault("n_workers", os.cpu_count() or 1)
        options.setdefault("threads_per_worker", 1)
        options.setdefault("dashboard_address", ":0")
        if options["dashboard_address"] is None:
            # no dashboard; the scheduler's HTTP routes (health, metrics) on a free port
            # rather than on 8787, which another cluster may hold
            options.setdefault("scheduler_kwargs", {}).setdefault("dashboard_address", ":0")
        # a cluster of threads has no processes to fork, nor an environment to give them
        if options.get("processes") is False or not start_fork_server():
            return LocalCluster(**options)
        # Forked workers inherit the server's environment: give them this process's.
        options.setdefault("env", dict(os.environ))
        with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
            return LocalCluster(**options)
    if kind == "scheduler":
        if "address" not in options:
            raise PUError("cluster config of type 'scheduler' needs an 'address'")
        return options["address"]
    if kind == "ssh":
        from distributed import SSHCluster

        if not options.get("hosts"):
            raise PUError("cluster config of type 'ssh' needs 'hosts' (scheduler first)")
        return SSHCluster(**options)
    if kind == "kubernetes":
        try:
            from dask_kubernetes.operator import KubeCluster
        except ImportError:
            raise PUError(
                "type 'kubernetes' needs dask-kubernetes: pip install 'pulsnar-dask[kubernetes]'"
            ) from None
        return KubeCluster(**options)
    try:
        import dask_jobqueue
    except ImportError:
        raise PUError(
            f"type '{kind}' needs dask-jobqueue: pip install 'pulsnar-dask[jobqueue]'"
        ) from None
    options.pop("jobs", None)  # submitted by connect(), not at construction
    cluster_class = dask_jobqueue.SLURMCluster if kind == "slurm" else dask_jobqueue.PBSCluster
    return cluster_class(**options)


def _check_local_options(options: dict[str, Any]) -> None:
    """Refuse an option that neither ``LocalCluster`` nor the workers it starts take (a
    worker would fail to start on it, with a traceback)."""
    known = set()
    for cls in (LocalCluster, Nanny, Worker, Server):
        parameters = inspect.signature(cls.__init__).parameters.values()
        known |= {p.name for p in parameters if p.kind != p.VAR_KEYWORD} - {"self"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise PUError(
            f"cluster config of type 'local': unknown option(s) {', '.join(unknown)} "
            "(see distributed.LocalCluster's parameters)"
        )
    for name in ("n_workers", "threads_per_worker"):  # else the job waits for workers for ever
        value = options.get(name)  # None: sized from the cores
        whole = isinstance(value, int) and not isinstance(value, bool)
        if value is not None and not (whole and value >= 1):
            raise PUError(
                f"cluster config of type 'local': {name} must be a whole number of at least 1 "
                f"(or none), got {value!r}"
            )


def check_speaks_dask(address: str, timeout: float) -> None:
    """Refuse a ``tcp://`` address (or a bare ``host:port``) whose server does not open
    with a Dask handshake within ``timeout`` seconds.

    A Dask scheduler sends its handshake as soon as a connection opens; a web server
    waits for a request, and distributed's client then waits for ever, or reads another
    service's bytes as a message length and tries to allocate that much. Other schemes
    (``tls://``, ``inproc://``, ``ucx://``) are left to distributed.

    Raises
    ------
    PUError
        Naming the address: unreachable, silent, or answering in another protocol.
    """
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends, get_backend

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location, default_port=8786)
    except ValueError as exc:
        raise PUError(f"{address!r} is not a scheduler address: {exc}") from None
    try:
        get_backend(scheme)  # the registered schemes and distributed's plugins
    except ValueError:
        raise PUError(
            f"{address!r} is not a scheduler address: Dask speaks {', '.join(sorted(backends))}, "
            f"not {scheme} (a scheduler's address reads tcp://host:8786)"
        ) from None
    if scheme != "tcp":
        return
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:  # refused, unreachable, or no answer in time
        raise PUError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s: {exc}"
        ) from None
    header = b""
    with sock:
        try:
            while len(header) < 8:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = sock.recv(8 - len(header))
                if not chunk:
                    break
                header += chunk
        except TimeoutError:
            if not header:
                raise PUError(
                    f"{address} accepts connections but sent no Dask handshake within "
                    f"{timeout:g} s: is it a Dask scheduler (not a web server or another "
                    "service)?"
                ) from None
        except OSError:
            pass  # reset by the other end: refused below as another protocol
    if len(header) < 8 or struct.unpack("<Q", header)[0] > HANDSHAKE_MAX_BYTES:
        raise PUError(
            f"{address} answers, but not as a Dask scheduler (it sent {header!r}): "
            "check the host, the port and the protocol"
        )


def _close_failed_client() -> None:
    """Close a client whose start failed: it stays the process's default client (still
    "connecting"), and every later Dask computation in the process would wait on it."""
    from distributed import default_client

    try:
        failed = default_client()
    except ValueError:  # none was left
        return
    if failed.status not in ("running", "closed"):
        failed.close()


HANDSHAKE_TRIES = 3


def open_client(target: Any, timeout: float = CONNECT_TIMEOUT_S) -> Client:
    """A client of ``target`` (an address or a cluster object).

    A scheduler that sends the new client another message along with its first
    (``stream-start``) in one batch fails distributed's handshake on its own
    ``assert len(msg) == 1``; seen with a scheduler busy with a run. Such a client is
    closed and the connection tried again, ``HANDSHAKE_TRIES`` times in all.

    Raises
    ------
    PUError
        Where every try's handshake failed so.
    OSError, TimeoutError, TypeError, ValueError
        As :class:`distributed.Client`, where the scheduler cannot be reached.
    """
    for _ in range(HANDSHAKE_TRIES):
        try:
            return Client(target, timeout=timeout)
        except AssertionError:
            _close_failed_client()
    raise PUError(
        f"the Dask scheduler at {getattr(target, 'scheduler_address', target)} answered "
        f"{HANDSHAKE_TRIES} connections with more than the handshake distributed expects"
    )


WATCH_INTERVAL_S = 1.0  # how often the watch asks the scheduler for its workers


class WorkerWatch:
    """The cluster's workers, as the job's log tells of them.

    Each worker lost unexpectedly (not one retired or closed on purpose) is logged from
    the ``remove-worker`` event the scheduler sends to that worker's own topic: Dask
    hands the tasks assigned to it (running or queued there) back to the scheduler,
    which runs them elsewhere unless they have died with ``allowed-failures`` workers
    already, and recomputes the results only that worker held. The tasks are pure, so
    the answer does not change. The scheduler is asked for its workers every
    :data:`WATCH_INTERVAL_S` seconds, to follow the workers that join and to see the
    cluster left with none: the run then waits, as Dask does, for one to join (a cluster
    that scales or restarts its workers brings one back); the log says so, and says when
    one joins.

    The watch does not subscribe to the scheduler's ``all`` topic: that topic carries
    every event of the cluster, and one the scheduler cannot serialize (its
    ``replicate`` event, after ``scatter(..., broadcast=True)``, holds its own worker
    objects) closes the scheduler's stream to every client subscribed to it.

    Parameters
    ----------
    client : distributed.Client
        The job's client.

    Attributes
    ----------
    followed : set of str
        The workers whose topics the watch has subscribed to.
    workers : set of str
        The workers the scheduler had when last asked.
    waiting : bool
        Whether the log has said that the run waits for a worker, and no worker has
        joined since.
    """

    def __init__(self, client: Client) -> None:
        from tornado.ioloop import PeriodicCallback

        self.client = client
        self.followed: set[str] = set()
        self.workers: set[str] = set()
        self.waiting = False
        self._poll = PeriodicCallback(self._ask, WATCH_INTERVAL_S * 1000)

    def start(self) -> None:
        """Follow the workers there now and start asking (called on the job's thread)."""
        self.workers = set(self.client.nthreads())
        for address in self.workers:
            self._follow(address)
        if not self.workers:  # a batch system's workers still queued, say
            self.waiting = True
            logger.warning(
                "no worker on the cluster at %s yet: the run waits for one to join",
                self.client.scheduler.address,
            )
        self.client.loop.add_callback(self._poll.start)

    def stop(self) -> None:
        """Stop asking, and unsubscribe from every worker's topic where the client is
        still connected."""
        self.client.loop.add_callback(self._poll.stop)
        if self.client.status == "running":
            for address in list(self.followed):
                self.client.unsubscribe_topic(address)

    def _follow(self, address: str) -> None:
        self.followed.add(address)
        self.client.subscribe_topic(address, functools.partial(_log_lost, address))

    async def _ask(self) -> None:
        """Ask the scheduler for its workers (on the client's event loop)."""
        try:
            workers = set(await self.client.scheduler.ncores())
        except Exception:  # a lost scheduler is the job's own error, told by the job
            return
        joined = sorted(workers - self.workers)
        for address in joined:
            if address not in self.followed:
                self._follow(address)
        self.workers = workers
        if joined and self.waiting:
            self.waiting = False
            logger.warning("worker %s joined: the run goes on", joined[0])
        elif not workers and not self.waiting:
            self.waiting = True
            logger.warning(
                "no worker left on the cluster at %s: the run waits for one to join "
                "(Ctrl-C stops it; nothing is written before the run completes)",
                self.client.scheduler.address,
            )


def _log_lost(address: str, event: tuple[float, Any]) -> None:
    """Log an event of worker ``address``'s topic where it is the worker's unexpected
    removal: the tasks it had been assigned (this job's names, without their tokens)
    and the results it held."""
    from dask.utils import key_split

    _, msg = event
    if not isinstance(msg, dict) or msg.get("action") != "remove-worker" or msg.get("expected"):
        return
    # this job's own task names (cluster2-it0-fold3-<token>) without their token
    names = {
        re.sub(r"-[0-9a-f]{8,}$", "", k) if isinstance(k, str) else key_split(k)
        for k in msg.get("processing-tasks", ())
    }
    assigned = sorted(names)[:6] + (["..."] if len(names) > 6 else [])
    logger.warning(
        "worker %s lost: its %d assigned task(s)%s go back to the scheduler, and %d "
        "result(s) it held are recomputed",
        address,
        len(msg.get("processing-tasks", ())),
        f" ({', '.join(assigned)})" if assigned else "",
        len(msg.get("lost-computed-tasks", ())),
    )


class _NoReconnectError(logging.Filter):
    """Drops distributed's client's error that it gave up reconnecting: the run reports
    the lost scheduler itself, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to reconnect to scheduler")


@contextlib.contextmanager
def _silenced(name: str) -> Iterator[None]:
    """Nothing from logger ``name`` while inside (a filter: the level a stopping
    signal sets meanwhile stays)."""
    log, drop = logging.getLogger(name), logging.Filter("nothing passes this")
    log.addFilter(drop)
    try:
        yield
    finally:
        log.removeFilter(drop)


def cluster_failure(exc: Exception, client: Client, target: Any) -> PUError | None:
    """The one-line error for a job the cluster itself stopped.

    Parameters
    ----------
    exc : Exception
        What the job raised.
    client : distributed.Client
        The job's client.
    target : str or cluster
        The scheduler's address, or the cluster object it was started with.

    Returns
    -------
    PUError or None
        For a lost scheduler (pending results cancelled for the lost connection, or a
        connection error once the client has stopped running), a task whose every try
        died with its worker (``KilledWorker``: killed, most often for memory,
        ``allowed-failures + 1`` times) or one failed for want of a worker
        (``NoWorkerError`` or ``NoValidWorkerError``, where the scheduler sets
        ``no-workers-timeout``); ``None`` for any other error, which is not the
        cluster's.
    """
    from concurrent.futures import CancelledError  # what distributed's futures raise

    from dask.utils import format_time
    from distributed.comm import CommClosedError
    from distributed.scheduler import KilledWorker, NoValidWorkerError, NoWorkerError

    if isinstance(exc, NoWorkerError | NoValidWorkerError):  # no worker, or none it may use
        return PUError(
            f"task {exc.task!r} failed: no worker could run it for "
            f"{format_time(exc.timeout)} (the scheduler's no-workers-timeout); nothing was "
            "written"
        )
    if isinstance(exc, KilledWorker):
        tries = exc.allowed_failures + 1
        return PUError(
            f"task {exc.task!r} failed: {tries} worker{'s' * (tries != 1)} died running it "
            "(killed, or out of memory: see the workers' logs); nothing was written"
        )
    cancelled = isinstance(exc, CancelledError) and "scheduler-connection-lost" in str(exc)
    connection = isinstance(exc, (CommClosedError, CancelledError, TimeoutError))
    if cancelled or (connection and not _still_running(client)):
        where = target if isinstance(target, str) else getattr(target, "scheduler_address", "")
        return PUError(
            f"lost the connection to the Dask scheduler at {where} while the job ran; "
            "nothing was written"
        )
    return None


def _still_running(client: Client, patience: float = 5.0) -> bool:
    """Whether the client still runs ``patience`` seconds (at most) after a connection
    error: a call may see the scheduler's connection close before the client does
    (which then stops running)."""
    deadline = time.monotonic() + patience
    while client.status == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    return client.status == "running"


@contextlib.contextmanager
def connect(
    scheduler: str | None = None,
    cluster_config: str | Path | None = None,
    n_workers: int | None = None,
    dashboard: bool = False,
) -> Iterator[Client]:
    """Yield a client on the chosen cluster, closing whatever this function started.

    Parameters
    ----------
    scheduler : str or None
        Address of an existing scheduler (``tcp://host:8786``).
    cluster_config : path or None
        A YAML cluster config.
    n_workers : int or None
        Workers of the default local cluster (one per core when ``None``).
    dashboard : bool
        Serve Dask's dashboard from the default local cluster (bokeh adds about 0.4 s to
        its start).

    Yields
    ------
    Client
    """
    if scheduler and cluster_config:
        raise PUError("give either --scheduler or --cluster-config, not both")
    if scheduler:
        target: Any = scheduler
    elif cluster_config:
        config = load_cluster_config(cluster_config)
        try:
            target = make_cluster(config)
        except PUError:
            raise
        except (TypeError, ValueError, RuntimeError) as exc:  # an option's value
            while isinstance(exc, RuntimeError) and exc.__cause__ is not None:
                exc = exc.__cause__  # "Nanny failed to start" says less than its cause
            reason = " ".join(str(exc).split())
            raise PUError(f"cannot start the cluster of {cluster_config}: {reason}") from None
        if config["type"] in ("slurm", "pbs"):
            target.scale(jobs=int(config.get("jobs", 1)))
    else:
        target = make_cluster(
            {
                "type": "local",
                "n_workers": n_workers or os.cpu_count() or 1,
                "dashboard_address": ":0" if dashboard else None,
            }
        )
    started = target if not isinstance(target, str) else None
    try:
        if started is None:
            check_speaks_dask(target, CONNECT_TIMEOUT_S)
        try:
            client = open_client(target)
        except (OSError, TimeoutError) as exc:
            _close_failed_client()
            raise PUError(
                f"cannot reach the Dask scheduler at {target} within {CONNECT_TIMEOUT_S} s: {exc}"
            ) from None
        except PUError:  # said already
            raise
        except (TypeError, ValueError) as exc:  # e.g. tls:// without its certificates
            _close_failed_client()
            raise PUError(f"cannot connect to the Dask scheduler at {target}: {exc}") from None
        gave_up = _NoReconnectError()
        logging.getLogger("distributed.client").addFilter(gave_up)
        watch = WorkerWatch(client)
        try:
            watch.start()
            yield client
        except Exception as exc:
            failure = cluster_failure(exc, client, target)
            if failure is None:
                raise
            raise failure from exc
        finally:
            try:
                # a client still trying to reconnect logs its cancelled attempt as an
                # error with a traceback when closed: the user has been told already
                reconnecting = client.status != "running"
                watch.stop()
                quiet = (
                    _silenced("distributed.client") if reconnecting else contextlib.nullcontext()
                )
                with quiet:
                    client.close()
            finally:
                logging.getLogger("distributed.client").removeFilter(gave_up)
    finally:
        if started is not None:
            started.close()


class ProcessCluster:
    """A scheduler and worker processes on loopback, started with the ``dask`` command.

    The way a user's separately started cluster looks to the job (used by the tests and
    the scale benchmark). Close it with :meth:`close` or use it as a context manager.

    Parameters
    ----------
    workdir : path
        Where the scheduler file goes.
    n_workers : int
        Single-threaded worker processes to start (and wait for; none: a scheduler
        alone, as a batch system's cluster is while its workers are queued).
    memory_limit : str
        Memory limit of each worker.
    nanny : bool
        Start each worker under a nanny, which restarts it when it passes 95% of its
        memory limit (as ``dask worker`` does by default); without one the limit only
        pauses and spills.
    """

    def __init__(
        self,
        workdir: str | Path,
        n_workers: int = 2,
        memory_limit: str = "auto",
        nanny: bool = False,
    ):
        self._dask = str(Path(sys.executable).parent / "dask")
        scheduler_file = Path(workdir) / "scheduler.json"
        scheduler_file.unlink(missing_ok=True)
        self.procs: list[subprocess.Popen] = []
        self.memory_limit = memory_limit
        self.nanny = nanny
        self._spawn(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(scheduler_file),
        )
        deadline = time.time() + 60
        while not scheduler_file.exists():
            if time.time() > deadline:
                self.close()
                raise RuntimeError("the Dask scheduler did not start within 60 s")
            time.sleep(0.2)
        self.address: str = json.loads(scheduler_file.read_text())["address"]
        self.workers = [self.add_worker() for _ in range(n_workers)]
        if n_workers:
            with open_client(self.address) as client:
                client.wait_for_workers(n_workers, timeout=60)

    def _spawn(self, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [self._dask, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.procs.append(proc)
        return proc

    def add_worker(self) -> subprocess.Popen:
        """Start one more single-threaded worker process."""
        return self._spawn(
            "worker",
            self.address,
            "--nthreads",
            "1",
            "--no-dashboard",
            "--host",
            "127.0.0.1",
            "--nanny" if self.nanny else "--no-nanny",
            "--memory-limit",
            self.memory_limit,
        )

    def close(self) -> None:
        """Stop every process this cluster started: the workers first, then the
        scheduler (a worker stopped beside its scheduler could wait 20-40 s on it)."""
        scheduler, workers = self.procs[:1], self.procs[1:]
        for group in (workers, scheduler):
            for proc in group:
                if proc.poll() is None:
                    proc.terminate()
            for proc in group:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def __enter__(self) -> ProcessCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
