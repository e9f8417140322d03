"""Every shipped cluster config loads; the ones that can start here do, the batch ones
become job scripts."""

from pathlib import Path

import pytest
from distributed import LocalCluster

from pulsnar_dask.dask_executor.connect import (
    CLUSTER_TYPES,
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
    with pytest.raises(PUError, match="needs an 'address'"):
        make_cluster({"type": "scheduler"})


def test_local_cluster_type_defaults():
    cluster = make_cluster({"type": "local", "n_workers": 1})
    try:
        assert isinstance(cluster, LocalCluster)
    finally:
        cluster.close()
