"""The CLI against a real multi-process Dask cluster on loopback."""

import pytest
from distributed import Client
from helpers import run_cli, small_snar

from pulsnar_dask.dask_executor.connect import ProcessCluster

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    true_alpha = small_snar(root / "one.parquet", partitions=1).true_alpha
    small_snar(root / "eight.parquet", partitions=8)
    return root, true_alpha


def test_same_alpha_on_two_workers_one_worker_and_any_partitioning(
    cluster, inputs, tmp_path, capsys
):
    root, true_alpha = inputs
    common = ["--method", "pulsnar", "--seed", "3", "--true-label-col", "true_label"]
    status, remote, err = run_cli(
        [
            "run",
            "--input",
            str(root / "one.parquet"),
            "--out",
            str(tmp_path / "a"),
            "--scheduler",
            cluster.address,
            *common,
        ],
        capsys,
    )
    assert status == 0, err
    status, local, err = run_cli(
        [
            "run",
            "--input",
            str(root / "one.parquet"),
            "--out",
            str(tmp_path / "b"),
            "--n-workers",
            "1",
            *common,
        ],
        capsys,
    )
    assert status == 0, err
    status, eight, err = run_cli(
        [
            "run",
            "--input",
            str(root / "eight.parquet"),
            "--out",
            str(tmp_path / "c"),
            "--scheduler",
            cluster.address,
            *common,
        ],
        capsys,
    )
    assert status == 0, err
    assert remote["alpha"] == pytest.approx(local["alpha"], abs=1e-9)
    assert remote["alpha"] == pytest.approx(eight["alpha"], abs=1e-9)
    assert remote["cluster_alphas"] == pytest.approx(eight["cluster_alphas"], abs=1e-9)
    assert remote["true_alpha"] == pytest.approx(true_alpha)
    assert abs(remote["alpha"] - true_alpha) < 0.08
    assert (tmp_path / "a" / "summary.json").exists()


def test_pulscar_iterations_fan_out_with_a_confidence_interval(cluster, inputs, tmp_path, capsys):
    root, _ = inputs
    status, summary, err = run_cli(
        [
            "run",
            "--input",
            str(root / "eight.parquet"),
            "--out",
            str(tmp_path / "it"),
            "--method",
            "pulscar",
            "--iterations",
            "3",
            "--scheduler",
            cluster.address,
        ],
        capsys,
    )
    assert status == 0, err
    assert len(summary["alphas"]) == 3
    low, high = summary["alpha_ci"]
    assert low <= summary["alpha"] <= high
    assert summary["n_clusters"] == 1 and summary["cluster_alphas"] == [summary["alpha"]]


def test_closing_a_process_cluster_stops_the_workers_it_added_and_its_scheduler(tmp_path):
    with ProcessCluster(tmp_path, n_workers=1) as c:
        c.add_worker()
        with Client(c.address) as client:
            client.wait_for_workers(2, timeout=60)
            assert client.submit(sum, [1, 2]).result() == 3
    assert [proc.poll() is not None for proc in c.procs] == [True, True, True]
