"""Every shipped cluster config loads; the ones that can start here do, the batch ones
become job scripts; a config that cannot start, and a scheduler whose handshake fails,
end in one error."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster, default_client
from helpers import run_cli, small_snar

from pulsnar_dask.dask_executor.connect import (
    CLUSTER_TYPES,
    HANDSHAKE_TRIES,
    _close_failed_client,
    connect,
    load_cluster_config,
    make_cluster,
)
from pulsnar_dask.errors import PUError

CONFIGS = Path(__file__).resolve().parents[1] / "cluster_configs"


@pytest.mark.parametrize("name", ["local", "scheduler", "ssh", "kubernetes", "slurm", "pbs"])
def test_shipped_configs_load(name):
    config = load_cluster_config(CONFIGS / f"{name}.yaml")
    assert config["type"] in CLUSTER_TYPES


def test_local_config_starts_a_cluster_and_connect_closes_it():
    with connect(cluster_config=CONFIGS / "local.yaml") as client:
        assert len(client.scheduler_info()["workers"]) == 2
        cluster = client.cluster
    assert cluster.status.name == "closed"


def test_scheduler_config_gives_its_address():
    assert (
        make_cluster(load_cluster_config(CONFIGS / "scheduler.yaml")) == "tcp://scheduler-host:8786"
    )


@pytest.mark.parametrize(("name", "directive"), [("slurm", "#SBATCH"), ("pbs", "#PBS")])
def test_batch_configs_become_job_scripts(name, directive):
    pytest.importorskip("dask_jobqueue")
    cluster = make_cluster(load_cluster_config(CONFIGS / f"{name}.yaml"))
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert directive in script
    assert "dask" in script and "worker" in script
    assert "32G" in script or "30G" in script or "--memory-limit" in script


def test_bad_configs_are_refused(tmp_path):
    (tmp_path / "bad.yaml").write_text("type: mesos\n")
    with pytest.raises(PUError, match="needs 'type' set to one of"):
        load_cluster_config(tmp_path / "bad.yaml")
    (tmp_path / "broken.yaml").write_text("type: [local\n")
    with pytest.raises(PUError, match="not valid YAML"):
        load_cluster_config(tmp_path / "broken.yaml")
    with pytest.raises(PUError, match="does not exist"):
        load_cluster_config(tmp_path / "missing.yaml")
    (tmp_path / "binary.yaml").write_bytes(b"PAR1\xff\xfe\x00")
    with pytest.raises(PUError, match=r"binary\.yaml is not a text file"):
        load_cluster_config(tmp_path / "binary.yaml")
    with pytest.raises(PUError, match=r"cannot read cluster config .*: Is a directory"):
        load_cluster_config(tmp_path)
    with pytest.raises(PUError, match="needs an 'address'"):
        make_cluster({"type": "scheduler"})


def test_local_cluster_type_defaults():
    cluster = make_cluster({"type": "local", "n_workers": 1})
    try:
        assert isinstance(cluster, LocalCluster)
    finally:
        cluster.close()


def test_a_local_cluster_of_threads_starts(tmp_path):
    """``processes: false``: workers are threads of this process, given no environment
    (a worker process's option, refused by a thread's worker)."""
    (tmp_path / "threads.yaml").write_text("type: local\nprocesses: false\nn_workers: 2\n")
    with connect(cluster_config=tmp_path / "threads.yaml") as client:
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2 and all(a.startswith("inproc://") for a in workers)
        assert client.submit(sum, [1, 2]).result() == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n_worker: 2", "cluster config of type 'local': unknown option(s) n_worker"),
        ("n_workers: -3", "n_workers must be a whole number of at least 1 (or none), got -3"),
        ("threads_per_worker: two", "threads_per_worker must be a whole number of at least 1"),
        ("memory_limit: lots", "cannot start the cluster of {path}: Could not interpret 'lots'"),
    ],
)
def test_a_local_option_it_cannot_start_with_is_one_error(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(f"type: local\n{text}\n")
    with pytest.raises(PUError) as caught, connect(cluster_config=path):
        pass
    assert message.format(path=path) in str(caught.value)


@pytest.fixture
def noisy_scheduler(tmp_path, request):
    """A scheduler process that sends its first ``request.param`` clients a message beside
    the handshake's: yields its address."""
    scheduler_file = tmp_path / "scheduler.json"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dask"), "scheduler", "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file),
         "--preload", str(Path(__file__).with_name("scheduler_noise.py"))],
        env={**os.environ, "NOISY_CLIENTS": str(request.param)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the scheduler did not start within 60 s"
            time.sleep(0.1)
        yield json.loads(scheduler_file.read_text())["address"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize("noisy_scheduler", [2], indirect=True)
def test_a_handshake_with_a_message_beside_it_is_tried_again(noisy_scheduler):
    with pytest.raises(AssertionError):  # distributed's own client, as it is
        Client(noisy_scheduler, timeout=10)
    _close_failed_client()
    with connect(scheduler=noisy_scheduler) as client:
        assert client.status == "running"
        # the plain client, the run's failed try and its second try
        seen = client.run_on_scheduler(
            lambda dask_scheduler: dask_scheduler.plugins["handshake-noise"].seen
        )
        assert seen == 3


@pytest.mark.parametrize("noisy_scheduler", [HANDSHAKE_TRIES], indirect=True)
def test_a_scheduler_whose_every_handshake_fails_is_one_error(noisy_scheduler):
    with pytest.raises(PUError) as refused, connect(scheduler=noisy_scheduler):
        pass
    assert str(refused.value) == (
        f"the Dask scheduler at {noisy_scheduler} answered {HANDSHAKE_TRIES} connections with "
        "more than the handshake distributed expects"
    )
    with pytest.raises(ValueError):  # no half-started client left as the default
        default_client()


def test_the_command_says_a_config_it_cannot_start_in_one_line(tmp_path, capfd):
    small_snar(tmp_path / "data.parquet")
    (tmp_path / "bad.yaml").write_text("type: local\nn_workers: 1\nmemory_limit: lots\n")
    out = tmp_path / "out"
    status, _, err = run_cli(
        ["run", "--input", str(tmp_path / "data.parquet"), "--out", str(out),
         "--cluster-config", str(tmp_path / "bad.yaml")],
        capfd,
    )  # fmt: skip
    assert status == 2
    assert err.strip().splitlines() == [
        f"error: cannot start the cluster of {tmp_path / 'bad.yaml'}: "
        "Could not interpret 'lots' as a byte unit"
    ]
    assert not out.exists()
