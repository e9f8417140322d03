"""Input from and output to a real S3-compatible server (moto in server mode, on loopback)."""

import json

import pandas as pd
import pytest
from helpers import free_port, object_hashes, path_mistakes, run_cli, small_snar, upload


def test_run_reads_and_writes_s3(s3_env, tmp_path, capsys):
    true_alpha = small_snar(tmp_path / "data", partitions=3).true_alpha
    upload(s3_env, tmp_path / "data", "input/data")
    status, summary, err = run_cli(
        [
            "run",
            "--input",
            "s3://pu-test/input/data",
            "--out",
            "s3://pu-test/runs/one",
            "--method",
            "pulscar",
            "--true-label-col",
            "true_label",
            "--calibrate",
            "--n-workers",
            "2",
        ],
        capsys,
    )
    assert status == 0, err
    keys = {o["Key"] for o in s3_env.list_objects_v2(Bucket="pu-test")["Contents"]}
    assert "runs/one/summary.json" in keys and "runs/one/report.html" in keys
    assert not any("_staging" in k for k in keys)
    stored = json.loads(
        s3_env.get_object(Bucket="pu-test", Key="runs/one/summary.json")["Body"].read()
    )
    assert stored["alpha"] == summary["alpha"]
    assert stored["true_alpha"] == pytest.approx(true_alpha)
    assert stored["predictions"] == "s3://pu-test/runs/one/predictions"
    predictions = pd.read_parquet(
        "s3://pu-test/runs/one/predictions", storage_options={"client_kwargs": {}}
    )
    assert len(predictions) == summary["n_positive"] + summary["n_unlabeled"]
    assert set(predictions.columns) >= {"row_id", "label", "probability", "calibrated_probability"}
    assert predictions["row_id"].is_unique
    # the saved model, read from object storage, scores rows there into object storage
    assert "runs/one/model/model.json" in keys and stored["model"] == "s3://pu-test/runs/one/model"
    status, scored, err = run_cli(
        ["score", "--model", "s3://pu-test/runs/one", "--input", "s3://pu-test/input/data",
         "--out", "s3://pu-test/scored/one", "--n-workers", "2"],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    assert scored["n_rows"] == len(predictions)
    rows = pd.read_parquet("s3://pu-test/scored/one/predictions", storage_options={})
    assert set(rows.columns) == {"row_id", "probability", "calibrated_probability"}
    assert sorted(rows["row_id"]) == sorted(predictions["row_id"])


def test_storage_options_are_passed_through(s3_env, s3_endpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    small_snar(tmp_path / "data", partitions=2)
    upload(s3_env, tmp_path / "data", "input/opts")
    options = json.dumps({"client_kwargs": {"endpoint_url": s3_endpoint}})
    status, summary, err = run_cli(
        [
            "run",
            "--input",
            "s3://pu-test/input/opts",
            "--out",
            "s3://pu-test/runs/opts",
            "--method",
            "pulscar",
            "--storage-options",
            options,
            "--n-workers",
            "1",
        ],
        capsys,
    )
    assert status == 0, err
    body = s3_env.get_object(Bucket="pu-test", Key="runs/opts/summary.json")["Body"].read()
    assert json.loads(body)["alpha"] == summary["alpha"]


def test_an_output_bucket_that_does_not_exist_is_refused_before_any_work(s3_env, tmp_path, capsys):
    small_snar(tmp_path / "data", partitions=2)
    upload(s3_env, tmp_path / "data", "input/nobucket")
    status, _, err = run_cli(
        ["run", "--input", "s3://pu-test/input/nobucket", "--out", "s3://no-such-bucket/run",
         "--method", "pulscar", "--n-workers", "1"],
        capsys,
    )  # fmt: skip
    assert status == 2, err
    assert "cannot write to output location s3://no-such-bucket/run" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    buckets = {b["Name"] for b in s3_env.list_buckets()["Buckets"]}
    assert "no-such-bucket" not in buckets


def test_storage_that_cannot_be_reached_gets_one_line(s3_env, tmp_path, capsys):
    nobody = json.dumps({"client_kwargs": {"endpoint_url": f"http://127.0.0.1:{free_port()}"}})
    out = tmp_path / "out"
    status, _, err = run_cli(
        ["run", "--input", "s3://pu-test/input/data", "--out", str(out), "--n-workers", "1",
         "--storage-options", nobody],
        capsys,
    )  # fmt: skip
    assert status == 2, err
    assert "cannot reach s3://pu-test/input/data" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_one_run_at_a_time_holds_an_object_store_location(s3_env):
    """The lock is a conditional put (If-None-Match): a second run is refused while the
    first holds the prefix, and neither leaves an object behind."""
    from pulsnar_dask.errors import PUError
    from pulsnar_dask.outputs import RunOutput

    first = RunOutput("s3://pu-test/runs/locked")
    first.prepare()
    keys = [o["Key"] for o in s3_env.list_objects_v2(Bucket="pu-test")["Contents"]]
    assert keys == ["runs/locked/_running.json"]
    second = RunOutput("s3://pu-test/runs/locked")
    with pytest.raises(PUError, match="s3://pu-test/runs/locked is in use by another run"):
        second.prepare()
    second.discard_staging()
    assert [o["Key"] for o in s3_env.list_objects_v2(Bucket="pu-test")["Contents"]] == keys
    first.write_summary({"alpha": 0.2})
    first.commit()
    first.discard_staging()
    keys = [o["Key"] for o in s3_env.list_objects_v2(Bucket="pu-test")["Contents"]]
    assert keys == ["runs/locked/summary.json"]


def test_no_path_mistake_on_object_storage_changes_an_object(s3_env, tmp_path, capsys):
    """The local sweep of tests/test_path_mistakes.py with prefixes: one line each, and no
    object of the input, the model or the user's added, changed or removed."""
    small_snar(tmp_path / "data", partitions=2)
    upload(s3_env, tmp_path / "data", "data")
    s3_env.put_object(Bucket="pu-test", Key="notes/todo.txt", Body=b"mine")
    s3_env.put_object(Bucket="pu-test", Key="top.txt", Body=b"at the bucket's root")
    run = "s3://pu-test/runs/one"
    status, _, err = run_cli(
        ["run", "--input", "s3://pu-test/data", "--out", run, "--method", "pulscar",
         "--interval-resamples", "0", "--n-workers", "1"],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    sweep = path_mistakes(
        data="s3://pu-test/data",
        data_holder="s3://pu-test",  # the bucket: it holds the input and the user's objects
        holder_input="s3://pu-test/data",
        user="s3://pu-test/notes",
        user_file="s3://pu-test/notes/todo.txt",
        run=run,
        run_holder="s3://pu-test/runs",
        elsewhere="s3://pu-test/scored",
    )
    before = object_hashes(s3_env)
    for case, (args, message) in sweep.items():
        status, _, err = run_cli([*args, "--n-workers", "1"], capsys)
        assert status == 2, (case, err)
        assert message in err and "Traceback" not in err, (case, err)
        assert object_hashes(s3_env) == before, case


def _through(proxy, retries: int | None = None) -> str:
    """``--storage-options`` that send every request through ``proxy`` (client and
    workers alike), with botocore's ``retries`` attempts where given (s3fs retries a
    failed call again on top, five times)."""
    options = {"client_kwargs": {"endpoint_url": proxy.url}}
    if retries is not None:
        options["config_kwargs"] = {"retries": {"max_attempts": retries}}
    return json.dumps(options)


@pytest.mark.slow  # a proxy failing requests: retries with backoff
def test_a_store_failing_some_requests_is_retried_to_the_same_answer(
    s3_env, s3_endpoint, tmp_path, capsys
):
    """One request in ten answered ``503 SlowDown`` by a proxy in front of the server:
    the run retries them (with backoff) and gives the answer and the predictions of a
    run that met none."""
    from benchmarks.faults import FaultProxy

    small_snar(tmp_path / "data", partitions=3)
    upload(s3_env, tmp_path / "data", "input/flaky")
    run = ["run", "--input", "s3://pu-test/input/flaky", "--method", "pulscar",
           "--n-workers", "2", "--interval-resamples", "0"]  # fmt: skip
    status, direct, err = run_cli([*run, "--out", "s3://pu-test/runs/direct"], capsys)
    assert status == 0, err
    with FaultProxy(s3_endpoint, fail_share=0.1) as proxy:
        status, flaky, err = run_cli(
            [*run, "--out", "s3://pu-test/runs/flaky", "--storage-options", _through(proxy)],
            capsys,
        )
    assert status == 0, err
    assert proxy.failed >= 5, proxy.requests
    assert flaky["alpha"] == direct["alpha"]
    rows = [
        pd.read_parquet(f"s3://pu-test/runs/{name}/predictions", storage_options={})
        .sort_values("row_id", ignore_index=True)
        .drop(columns="row_id")
        for name in ("direct", "flaky")
    ]
    pd.testing.assert_frame_equal(rows[0], rows[1])


@pytest.mark.slow  # a proxy failing requests: retries with backoff
def test_a_publish_refused_midway_puts_the_older_run_back(s3_env, s3_endpoint, tmp_path, capsys):
    """``run --overwrite`` over a finished run, the new report's move into place refused
    as often as s3fs tries it (the older run already set aside, four of the new run's
    entries placed; one botocore attempt a try): the run ends in one line, the entries it
    placed are removed and the older run is put back, every object as it was."""
    from s3fs import S3FileSystem

    from benchmarks.faults import FaultProxy

    small_snar(tmp_path / "data", partitions=2)
    upload(s3_env, tmp_path / "data", "input/rollback")
    run = ["run", "--input", "s3://pu-test/input/rollback", "--out", "s3://pu-test/runs/rollback",
           "--method", "pulscar", "--n-workers", "1", "--interval-resamples", "0"]  # fmt: skip
    status, _, err = run_cli(run, capsys)
    assert status == 0, err
    before = object_hashes(s3_env, "runs/rollback")
    tries = S3FileSystem.retries
    refuse = ("PUT", "/runs/rollback/report.html")
    with FaultProxy(s3_endpoint, refuse=refuse, refuse_times=tries) as proxy:
        options = {"client_kwargs": {"endpoint_url": proxy.url},
                   "config_kwargs": {"retries": {"total_max_attempts": 1}}}  # fmt: skip
        status, _, err = run_cli(
            [*run, "--seed", "1", "--overwrite", "--storage-options", json.dumps(options)], capsys
        )
    assert proxy.refused == tries
    assert status == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: cannot write the outputs to s3://pu-test/runs/rollback: "), err
    assert "Traceback" not in err and "could not" not in err, err
    assert object_hashes(s3_env, "runs/rollback") == before


@pytest.mark.slow  # a proxy failing requests: retries with backoff
def test_a_store_going_down_while_the_outputs_are_written_ends_in_one_line(
    s3_env, s3_endpoint, tmp_path, capfd
):
    """Every request fails from the first write of the predictions on (the input read
    and the job done): after its retries the run ends in one line, and the location
    holds no finished run. (``capfd``: the local workers' own lines too, which log the
    tasks that failed, one line each.)"""
    from benchmarks.faults import FaultProxy

    small_snar(tmp_path / "data", partitions=2)
    upload(s3_env, tmp_path / "data", "input/down")
    with FaultProxy(s3_endpoint, outage_from="/predictions/") as proxy:
        status, _, err = run_cli(
            ["run", "--input", "s3://pu-test/input/down", "--out", "s3://pu-test/runs/down",
             "--method", "pulscar", "--n-workers", "1", "--interval-resamples", "0",
             "--storage-options", _through(proxy, retries=2)],
            capfd,
        )  # fmt: skip
    assert proxy.down  # the predictions were reached: the input was read, the job done
    assert status == 2, err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("error: cannot write the outputs to s3://pu-test/runs/down: ")
    ), err
    assert "Traceback" not in err
    keys = {o["Key"] for o in s3_env.list_objects_v2(Bucket="pu-test")["Contents"]}
    assert "runs/down/summary.json" not in keys
    status, _, err = run_cli(
        ["score", "--model", "s3://pu-test/runs/down", "--input", "s3://pu-test/input/down",
         "--out", str(tmp_path / "scored"), "--n-workers", "1"],
        capfd,
    )  # fmt: skip
    assert status == 2 and ("holds no finished run" in err or "no model at" in err), err
