"""A lost worker does not change the answer; a lost scheduler and SIGTERM stop cleanly."""

import json
import logging
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from helpers import start_cli, wait_for_text

from pulsnar_dask import PULSNAR, make_pu_data
from pulsnar_dask.dask_executor.connect import ProcessCluster, open_client
from pulsnar_dask.io import write_pu_parquet

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def medium_data():
    return make_pu_data("snar", 3000, 30000, 30, 0.3, class_sep=1.0, random_state=5)


@pytest.fixture(scope="module")
def medium(tmp_path_factory, medium_data):
    """SNAR data large enough for a run of tens of seconds on three workers."""
    path = tmp_path_factory.mktemp("medium") / "snar.parquet"
    write_pu_parquet(medium_data.split(6), path)
    return path


@pytest.fixture(scope="module")
def single_alpha(medium_data):
    """PULSNAR's alpha of ``medium`` with seed 1, in one process: what every run on a
    cluster reads."""
    est = PULSNAR(random_state=1, n_jobs=1, method="pulsnar")
    return est.fit(medium_data.X, medium_data.label).alpha_


def busiest(cluster: ProcessCluster) -> subprocess.Popen:
    """The worker the scheduler has given the most fold models now (it waits up to 30 s
    for one to have any), as its process: a fold model takes seconds, so the worker still
    holds it when it is killed, whatever the cores' load."""

    def folds(keys: list) -> int:
        return sum(bool(re.search(r"-fold\d+-", str(key))) for key in keys)

    with open_client(cluster.address, timeout=30) as client:
        deadline = time.monotonic() + 30
        processing = client.processing()
        while not any(map(folds, processing.values())):
            if time.monotonic() > deadline:
                pytest.fail(f"no worker was given a fold model within 30 s: {processing}")
            time.sleep(0.02)
            processing = client.processing()
        address = max(processing, key=lambda a: folds(processing[a]))
        pid = client.run(os.getpid, workers=[address])[address]
    (worker,) = [w for w in cluster.workers if w.pid == pid]  # no nanny: the worker's own
    return worker


@pytest.mark.slow
def test_workers_killed_in_the_subproblems_and_the_retrain_change_nothing(
    medium, single_alpha, tmp_path
):
    """One worker SIGKILLed while the subproblems are scored and another while the
    retrain runs: the job completes with the alpha, the clusters and the predictions of
    an undisturbed run, and its log says which worker was lost and what was rerun."""
    import pandas as pd

    with ProcessCluster(tmp_path, n_workers=3) as cluster:
        common = ["run", "--input", str(medium), "--method", "pulsnar", "--seed", "1",
                  "--classify", "--true-label-col", "true_label",
                  "--scheduler", cluster.address]  # fmt: skip
        quiet = start_cli([*common, "--out", str(tmp_path / "a"), "--quiet"], tmp_path / "a.log")
        undisturbed = json.loads(quiet.communicate(timeout=600)[0].strip().splitlines()[-1])
        log = tmp_path / "b.log"
        proc = start_cli([*common, "--out", str(tmp_path / "b")], log)
        victims = []
        for stage in ("scoring:", "classification:"):
            wait_for_text(log, stage)
            victims.append(busiest(cluster))
            victims[-1].send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=600)
        text = log.read_text()
        assert proc.returncode == 0, text[-3000:]
        disturbed = json.loads(out.strip().splitlines()[-1])
        assert all(v.poll() is not None for v in victims)
    for key in ("alpha", "cluster_alphas", "alpha_interval", "metrics"):
        assert disturbed[key] == undisturbed[key], key
    rows = [
        pd.read_parquet(tmp_path / run / "predictions").sort_values("row_id", ignore_index=True)
        for run in "ab"
    ]
    pd.testing.assert_frame_equal(rows[0], rows[1])
    assert text.count(" assigned task(s)") == 2, text[-3000:]  # one line per lost worker
    assert "Traceback" not in text
    # and three workers give what one process gives
    assert undisturbed["alpha"] == pytest.approx(single_alpha, abs=1e-12)


def run_until_a_worker_joins(medium, tmp_path, n_workers, until) -> tuple[str, dict, str]:
    """A PULSNAR run (seed 1) on an external cluster of ``n_workers``, ``until(cluster,
    log)`` called once it has started and a worker added after it: the run's log, its
    summary and the scheduler's address, once it has completed (asserted)."""
    with ProcessCluster(tmp_path, n_workers=n_workers) as cluster:
        log = tmp_path / "run.log"
        proc = start_cli(
            ["run", "--input", str(medium), "--method", "pulsnar", "--seed", "1",
             "--out", str(tmp_path / "out"), "--scheduler", cluster.address],
            log,
        )  # fmt: skip
        until(cluster, log)
        cluster.workers.append(cluster.add_worker())
        out, _ = proc.communicate(timeout=600)
    text = log.read_text()
    assert proc.returncode == 0, text[-3000:]
    assert text.count("joined: the run goes on") == 1, text[-3000:]
    return text, json.loads(out.strip().splitlines()[-1]), cluster.address


@pytest.mark.slow
def test_a_cluster_left_with_no_worker_waits_for_one_and_goes_on(medium, single_alpha, tmp_path):
    """The only worker SIGKILLed while the subproblems are scored: the run says that it
    waits for a worker, goes on once one joins, and reads what one process reads."""

    def kill_the_only_worker(cluster: ProcessCluster, log: Path) -> None:
        wait_for_text(log, "scoring:")
        cluster.workers[0].send_signal(signal.SIGKILL)
        wait_for_text(log, "no worker left on the cluster")

    text, summary, address = run_until_a_worker_joins(medium, tmp_path, 1, kill_the_only_worker)
    assert f"no worker left on the cluster at {address}: the run waits" in text
    assert "Traceback" not in text
    assert summary["alpha"] == pytest.approx(single_alpha, abs=1e-12)


@pytest.mark.slow
def test_a_cluster_with_no_worker_yet_is_waited_for(medium, single_alpha, tmp_path):
    """A scheduler with no worker when the run connects (a batch system's workers still
    queued): the run says that it waits, and goes on once one joins."""

    def told_it_waits(cluster: ProcessCluster, log: Path) -> None:
        wait_for_text(log, f"no worker on the cluster at {cluster.address} yet")

    _, summary, _ = run_until_a_worker_joins(medium, tmp_path, 0, told_it_waits)
    assert summary["alpha"] == pytest.approx(single_alpha, abs=1e-12)


def run_killed_at_scoring(medium, tmp_path, kill, n_workers=2) -> tuple[int, str, Path]:
    """A PULSNAR run on an external cluster of ``n_workers``, ``kill(cluster)`` called
    once its subproblems are being scored: the run's exit status, its log, and its
    ``--out``."""
    with ProcessCluster(tmp_path, n_workers=n_workers) as cluster:
        log, out = tmp_path / "run.log", tmp_path / "out"
        proc = start_cli(
            ["run", "--input", str(medium), "--method", "pulsnar", "--out", str(out),
             "--scheduler", cluster.address],
            log,
        )  # fmt: skip
        wait_for_text(log, "scoring:")
        kill(cluster)
        proc.communicate(timeout=120)
    return proc.returncode, log.read_text(), out


@pytest.mark.slow
def test_a_lost_scheduler_ends_in_one_line_and_leaves_nothing(medium, tmp_path):
    address = []

    def kill_the_scheduler(cluster: ProcessCluster) -> None:
        address.append(cluster.address)
        cluster.procs[0].send_signal(signal.SIGKILL)

    status, text, out = run_killed_at_scoring(medium, tmp_path, kill_the_scheduler)
    assert status == 2, text[-3000:]
    assert text.strip().splitlines()[-1] == (
        f"error: lost the connection to the Dask scheduler at {address[0]} while the "
        "job ran; nothing was written"
    )
    assert "Traceback" not in text and " ERROR " not in text, text[-3000:]
    assert not out.exists()


@pytest.mark.slow
def test_a_task_whose_every_worker_dies_ends_in_one_line(medium, tmp_path, monkeypatch):
    """With no retry allowed (``allowed-failures`` 0 on the scheduler), the task a killed
    worker was running fails for good: one line naming it, and no output."""
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "0")
    status, text, out = run_killed_at_scoring(
        medium, tmp_path, lambda cluster: busiest(cluster).send_signal(signal.SIGKILL)
    )
    assert status == 2, text[-3000:]
    last = text.strip().splitlines()[-1]
    assert last.startswith("error: task ") and "failed: 1 worker died running it" in last, last
    assert "Traceback" not in text, text[-3000:]
    assert not out.exists()


@pytest.mark.slow
def test_a_no_workers_timeout_on_the_scheduler_ends_the_run_in_one_line(
    medium, tmp_path, monkeypatch
):
    """A scheduler that fails tasks left with no worker (``no-workers-timeout``, here 2 s):
    the run says that it waits, then ends with one line naming a task, and no output."""
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__NO_WORKERS_TIMEOUT", "2s")
    status, text, out = run_killed_at_scoring(
        medium,
        tmp_path,
        lambda cluster: cluster.workers[0].send_signal(signal.SIGKILL),
        n_workers=1,
    )
    assert status == 2, text[-3000:]
    last = text.strip().splitlines()[-1]
    assert last.startswith("error: task "), last
    assert last.endswith(
        "failed: no worker could run it for 2.00 s (the scheduler's no-workers-timeout); "
        "nothing was written"
    ), last
    assert "no worker left on the cluster at" in text
    assert "Traceback" not in text, text[-3000:]
    assert not out.exists()


def test_a_broadcast_scatter_leaves_the_jobs_client_connected(caplog):
    """``scatter(..., broadcast=True)`` makes the scheduler publish an event it cannot
    serialize (its ``replicate`` event holds its own worker objects) on its ``all``
    topic. The job's client, which does not subscribe to that topic, stays connected and
    computes on, and nothing is logged as an error."""
    import numpy as np

    from pulsnar_dask.dask_executor.connect import connect

    with connect(n_workers=2) as client:
        table = client.scatter((np.arange(100.0), np.arange(100)), broadcast=True)
        assert client.submit(lambda t: float(t[0].sum()), table).result() == 4950.0
        assert client.status == "running"
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_error_that_is_not_the_clusters_is_not_called_a_lost_scheduler():
    from pulsnar_dask.dask_executor.connect import connect

    with pytest.raises(ValueError, match="a bug of the job's own"), connect(n_workers=1):
        raise ValueError("a bug of the job's own")


def test_sigterm_stops_the_job_and_its_cluster(medium, tmp_path):
    log = tmp_path / "term.log"
    proc = start_cli(
        ["run", "--input", str(medium), "--method", "pulsnar", "--out", str(tmp_path / "out"),
         "--n-workers", "2"],
        log,
    )  # fmt: skip
    wait_for_text(log, "scoring:")
    children = psutil.Process(proc.pid).children(recursive=True)
    assert children  # the local cluster's worker processes
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "interrupted" in log.read_text()
    assert not (tmp_path / "out" / "summary.json").exists()
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, [p.pid for p in alive]


def test_ctrl_c_stops_with_one_line_and_leaves_nothing(medium, tmp_path):
    """Ctrl-C in a terminal reaches the whole process group: the command, the fork
    server and the workers. Only the command answers, with one line."""
    log, out = tmp_path / "int.log", tmp_path / "out"
    proc = start_cli(
        ["run", "--input", str(medium), "--method", "pulsnar", "--out", str(out),
         "--n-workers", "2"],
        log,
        new_group=True,
    )  # fmt: skip
    wait_for_text(log, "scoring:")
    children = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=120)
    text = log.read_text()
    assert proc.returncode == 130, text[-3000:]
    assert text.count("interrupted: stopped") == 1 and "Traceback" not in text, text[-3000:]
    assert "could not remove" not in text, text[-3000:]
    assert not out.exists()  # nothing staged stays, and the location did not exist before
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, [p.pid for p in alive]


def test_a_lost_interrupt_still_stops_before_any_output(medium, tmp_path, monkeypatch, capsys):
    """A signal whose interrupt was raised inside a callback that swallows errors (one
    of distributed's garbage-collector callbacks, in a test run) still stops the command
    before it commits anything."""
    import contextlib
    import logging

    from pulsnar_dask import cli
    from pulsnar_dask.outputs import RunOutput

    levels = {name: logging.getLogger(name).level for name in cli._stop_loggers()}
    write_summary = RunOutput.write_summary

    def signalled_while_writing(self, summary):
        # lost, as in a callback whose errors Python only prints
        with contextlib.suppress(KeyboardInterrupt):
            cli._terminate(signal.SIGTERM, None)
        write_summary(self, summary)

    monkeypatch.setattr(RunOutput, "write_summary", signalled_while_writing)
    try:
        status = cli.main(
            ["run", "--input", str(medium), "--method", "pulscar", "--out",
             str(tmp_path / "out"), "--n-workers", "2", "--interval-resamples", "0", "--quiet"]
        )  # fmt: skip
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    assert status == 130
    assert "interrupted: stopped, no summary written" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_stop_signal_quiets_the_event_loops_errors_in_callbacks(caplog):
    """distributed's ``sync`` schedules a callback that cancels the call it waits on; an
    interrupt that lands before that call has started makes the callback fail
    (``NameError``), and the event loop logs its traceback. After a stopping signal,
    that logger says nothing: the command's one line stays the only one."""
    import contextlib
    import logging

    from pulsnar_dask import cli

    levels = {name: logging.getLogger(name).level for name in cli._stop_loggers()}
    try:
        logging.getLogger("tornado.application").error("before the signal")
        with contextlib.suppress(KeyboardInterrupt):
            cli._terminate(signal.SIGINT, None)
        logging.getLogger("tornado.application").error("Exception in callback")
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        cli._signalled.clear()
    assert "before the signal" in caplog.text and "Exception in callback" not in caplog.text


def test_an_interrupt_lost_in_a_finalizer_prints_no_traceback(capsys, monkeypatch):
    """Ctrl-C that lands in a garbage collector's ``__del__`` (distributed's futures) is
    lost there; the command stops at its next stage, and no traceback is printed."""
    import sys

    from pulsnar_dask import cli

    monkeypatch.setattr(sys, "unraisablehook", cli._quiet_lost_interrupt)
    monkeypatch.setattr(cli, "_signalled", [signal.SIGINT])

    class Interrupted:
        def __del__(self):
            raise KeyboardInterrupt("signal 2")

    class Broken:
        def __del__(self):
            raise ValueError("not an interrupt")

    Interrupted()  # collected at once
    Broken()
    err = capsys.readouterr().err
    assert "KeyboardInterrupt" not in err and "not an interrupt" in err
