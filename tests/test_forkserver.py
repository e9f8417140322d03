"""Local workers are forked from a server that has already imported what they need."""

import os
import subprocess
import sys

from distributed import Client

from pulsnar_dask.dask_executor.connect import make_cluster
from pulsnar_dask.dask_executor.forkserver import start_fork_server


def _log_an_error() -> str:
    """Log an error with its exception on a worker's Dask logger; return what its handler
    writes."""
    import io
    import logging

    handler = logging.getLogger("distributed").handlers[0]
    stream, handler.stream = handler.stream, io.StringIO()
    try:
        try:
            raise ValueError("cut")
        except ValueError:
            logging.getLogger("distributed.worker").exception("failed during get data")
        return handler.stream.getvalue()
    finally:
        handler.stream = stream


def _on_workers(client: Client, expression: str) -> list:
    """Evaluate ``expression`` on every worker (``eval`` pickles by reference)."""
    return list(client.run(eval, expression).values())


def test_local_workers_are_forked_ready_with_the_clients_environment(monkeypatch):
    assert start_fork_server()
    # set after the server started: it reaches the workers through their nannies
    monkeypatch.setenv("PULSNAR_FORK_TEST", "from-the-client")
    with (
        make_cluster({"type": "local", "n_workers": 2}) as cluster,
        Client(cluster) as client,
    ):
        parents = client.run(os.getppid).values()
        # forked by one server, not spawned by the nannies that live in this process
        assert len(set(parents)) == 1 and os.getpid() not in parents
        assert _on_workers(client, "'xgboost' in __import__('sys').modules") == [True, True]
        # scikit-learn (and scipy.stats with it) waits for the first mixture: XGBoost was
        # imported without it, and it still imports
        assert _on_workers(client, "'sklearn' in __import__('sys').modules") == [False] * 2
        assert (
            _on_workers(client, "__import__('sklearn.mixture').mixture.GaussianMixture.__name__")
            == ["GaussianMixture"] * 2
        )
        # Ctrl-C is the command's to answer (it closes the cluster): workers ignore it
        ignored = "__import__('signal').getsignal(2) == __import__('signal').SIG_IGN"
        assert _on_workers(client, ignored) == [True, True]
        # and log an error as one line, without its traceback
        logged = client.run(_log_an_error)
        assert all(text.count("\n") == 1 for text in logged.values()), logged
        assert all("(ValueError: cut)" in text for text in logged.values()), logged
        assert (
            _on_workers(client, "__import__('os').environ['PULSNAR_FORK_TEST']")
            == ["from-the-client"] * 2
        )
        blas = _on_workers(
            client,
            "[p['num_threads'] for p in __import__('threadpoolctl').threadpool_info() "
            "if p['user_api'] == 'blas']",
        )
        assert all(threads and set(threads) == {1} for threads in blas), blas
        # the hash seed Dask's nanny gives spawned workers, so all workers hash alike
        expected = subprocess.run(
            [sys.executable, "-c", "print(hash('pulsnar'))"],
            env={**os.environ, "PYTHONHASHSEED": "6640"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert _on_workers(client, "str(hash('pulsnar'))") == [expected] * 2


def test_nanny_variables_read_without_importing_distributed(tmp_path):
    """The server starts with the variables Dask's nanny would set, read from
    distributed's defaults file and Dask's configuration before distributed is imported:
    the same as distributed's own configuration gives once imported (here with a user's
    configuration file that changes one and adds one)."""
    (tmp_path / "nanny.yaml").write_text(
        "distributed:\n  nanny:\n    pre-spawn-environ:\n"
        "      OMP_NUM_THREADS: 3\n      PULSNAR_FORK_EXTRA: 'x'\n"
    )
    script = (
        "import sys\n"
        "from pulsnar_dask.dask_executor.forkserver import pre_spawn_environ\n"
        "before = pre_spawn_environ()\n"
        "assert 'distributed' not in sys.modules\n"
        "import distributed\n"
        "print(before == pre_spawn_environ(), before['OMP_NUM_THREADS'],"
        " before['PULSNAR_FORK_EXTRA'], before['MALLOC_TRIM_THRESHOLD_'])\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OMP_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_") and not k.startswith("DASK_")
    }
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**env, "DASK_CONFIG": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["True", "3", "x", "65536"]
