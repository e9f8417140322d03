"""A run's output location: everything staged, moved into place only when complete."""

import json
import os
import socket

import pytest
from helpers import file_hashes, object_hashes

from pulsnar_dask.errors import PUError
from pulsnar_dask.outputs import RunOutput, is_run_entry


def _finished_run(path):
    path.mkdir()
    (path / "report.html").write_text("old report")
    (path / "calibration.png").write_bytes(b"old plot")
    (path / "summary.json").write_text(json.dumps({"alpha": 0.1}))


def test_a_run_that_stops_before_committing_leaves_nothing(tmp_path):
    out = RunOutput(str(tmp_path / "new"))
    out.prepare()
    out.write_bytes("report.html", b"<html></html>")
    out.write_summary({"alpha": 0.2})
    out.discard_staging()  # what a failure or an interrupt does
    assert not (tmp_path / "new").exists()


def test_an_unfinished_replacement_keeps_the_finished_run(tmp_path):
    _finished_run(tmp_path / "run")
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    out = RunOutput(str(tmp_path / "run"), overwrite=True)
    out.prepare()
    out.write_bytes("report.html", b"new report")
    out.discard_staging()
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == before


def test_commit_replaces_every_file_of_the_older_run(tmp_path):
    _finished_run(tmp_path / "run")
    out = RunOutput(str(tmp_path / "run"), overwrite=True)
    out.prepare()
    out.write_bytes("report.html", b"new report")
    out.write_summary({"alpha": 0.3})
    out.commit()
    out.discard_staging()
    run = tmp_path / "run"
    # the old run's calibration plot is not this run's: it goes
    assert sorted(p.name for p in run.iterdir()) == ["report.html", "summary.json"]
    assert (run / "report.html").read_text() == "new report"
    assert json.loads((run / "summary.json").read_text()) == {"alpha": 0.3}


def test_folders_an_interrupted_run_left_are_named_and_kept(tmp_path, caplog):
    _finished_run(tmp_path / "run")
    left = tmp_path / "run" / "_staging-0123456789ab"  # a run killed before its commit
    left.mkdir()
    (left / "report.html").write_text("unfinished")
    out = RunOutput(str(tmp_path / "run"), overwrite=True)
    with caplog.at_level("WARNING", logger="pulsnar_dask.outputs"):
        out.prepare()
    assert "holds 1 folder(s) an interrupted run left (_staging-0123456789ab)" in caplog.text
    out.write_summary({"alpha": 0.3})
    out.commit()
    out.discard_staging()
    assert (left / "report.html").read_text() == "unfinished"


@pytest.mark.parametrize("name", ["notes.txt", "holiday.png"])
def test_a_location_with_other_files_is_refused_and_kept(tmp_path, name):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / name).write_text("keep")
    with pytest.raises(PUError, match=rf"holds files that are not a run's \({name}\)"):
        RunOutput(str(tmp_path / "mine"), overwrite=True).prepare()
    assert (tmp_path / "mine" / name).read_text() == "keep"


def test_the_report_files_are_the_ones_a_location_may_replace():
    from pulsnar_dask.outputs import REPORT_FILES
    from pulsnar_dask.report import CAPTIONS

    assert set(REPORT_FILES) == {"report.html", *CAPTIONS}


@pytest.mark.parametrize("out", ["data", "data/runs/one", "."])
def test_output_and_input_must_not_overlap(tmp_path, out):
    (tmp_path / "data").mkdir()
    with pytest.raises(PUError, match="overlap; the outputs need a location of their own"):
        RunOutput(str(tmp_path / out)).check_apart_from(str(tmp_path / "data"))
    RunOutput(str(tmp_path / "elsewhere")).check_apart_from(str(tmp_path / "data"))


def test_a_commit_that_fails_midway_puts_the_older_run_back(tmp_path, monkeypatch):
    _finished_run(tmp_path / "run")
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    out = RunOutput(str(tmp_path / "run"), overwrite=True)
    out.prepare()
    for name in ("report.html", "densities.png"):
        out.write_bytes(name, b"new")
    out.write_summary({"alpha": 0.3})
    move, calls = out._move, []

    def failing_move(source, target):
        calls.append(target)
        if len(calls) == 5:  # three old entries aside, one new one placed, then the disk
            raise OSError(28, "No space left on device")
        move(source, target)

    monkeypatch.setattr(out, "_move", failing_move)
    with pytest.raises(OSError, match="No space left"):
        out.commit()
    out.discard_staging()
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == before


def test_hidden_files_and_an_object_stores_folder_marker_are_not_in_the_way(tmp_path):
    _finished_run(tmp_path / "run")
    (tmp_path / "run" / ".DS_Store").write_bytes(b"finder")
    out = RunOutput(str(tmp_path / "run"), overwrite=True)
    out.prepare()
    out.write_summary({"alpha": 0.3})
    out.commit()
    out.discard_staging()
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".DS_Store", "summary.json"]


def test_folders_created_for_a_new_location_go_when_the_run_leaves_nothing(tmp_path):
    out = RunOutput(str(tmp_path / "a" / "b" / "c"))
    out.prepare()  # the run holds the new location: its lock, nothing else
    assert [p.name for p in (tmp_path / "a" / "b" / "c").iterdir()] == ["_running.json"]
    out.write_bytes("report.html", b"<html></html>")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    out.discard_staging()  # a failure before the commit
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _holders(path):
    return json.loads((path / "_running.json").read_text())


def test_one_run_at_a_time_holds_a_location(tmp_path):
    """The second run is refused in one line naming the first, and touches nothing; the
    location is free again once the first has ended, whether it committed or not."""
    first = RunOutput(str(tmp_path / "run"))
    first.prepare()
    held = _holders(tmp_path / "run")
    assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
    second = RunOutput(str(tmp_path / "run"), overwrite=True)
    with pytest.raises(PUError, match=rf"is in use by another run \(process {os.getpid()} on "):
        second.prepare()
    assert _holders(tmp_path / "run") == held  # the holder's lock untouched
    second.discard_staging()  # as the command line does on any exit
    assert _holders(tmp_path / "run") == held
    first.write_summary({"alpha": 0.2})
    first.commit()
    first.discard_staging()
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["summary.json"]
    third = RunOutput(str(tmp_path / "run"), overwrite=True)
    third.prepare()  # free again
    third.discard_staging()
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["summary.json"]


def test_a_lock_left_by_a_killed_run_is_named_not_taken(tmp_path):
    """A run killed outright leaves its lock: the next run is told that its process has
    ended and which file to remove, and removes nothing itself (two runs taking over one
    lock at once could each remove the other's)."""
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    (tmp_path / "run").mkdir()
    left = {"host": socket.gethostname(), "pid": int(gone.stdout), "started": "then", "token": "x"}
    (tmp_path / "run" / "_running.json").write_text(json.dumps(left))
    out = RunOutput(str(tmp_path / "run"))
    with pytest.raises(PUError, match="which has ended without releasing it") as err:
        out.prepare()
    assert f"remove {tmp_path / 'run' / '_running.json'} once you are sure" in str(err.value)
    out.discard_staging()
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["_running.json"]
    assert _holders(tmp_path / "run") == left


def test_a_lock_of_another_host_or_a_live_process_is_never_taken(tmp_path):
    """Whether another host's run is alive cannot be told from here: the run is refused,
    told which file to remove if no run writes there."""
    (tmp_path / "run").mkdir()
    for held in (
        {"host": "node-7", "pid": 1, "started": "2026-12-01T10:00:00+00:00", "token": "y"},
        {"host": socket.gethostname(), "pid": os.getpid(), "started": "now", "token": "z"},
    ):
        (tmp_path / "run" / "_running.json").write_text(json.dumps(held))
        with pytest.raises(
            PUError, match=f"in use by another run \\(process {held['pid']} on"
        ) as err:
            RunOutput(str(tmp_path / "run")).prepare()
        assert f"remove {tmp_path / 'run' / '_running.json'} if no run is writing" in str(err.value)
        assert _holders(tmp_path / "run") == held
        assert [p.name for p in (tmp_path / "run").iterdir()] == ["_running.json"]


@pytest.mark.parametrize("where", ["local", "s3"])
def test_two_runs_started_together_into_one_location(where, tmp_path, request):
    """Two real processes of the command line: one run ends whole at the location, the
    other is refused in one line (while the first holds the location, or, had it
    already finished, because a finished run is there) and leaves no file of its own.
    On object storage the lock is a conditional put to moto's server."""
    import subprocess
    import sys

    from pulsnar_dask import make_pu_data
    from pulsnar_dask.io import write_pu_parquet

    data = make_pu_data("scar", 200, 800, 4, 0.25, random_state=0)
    write_pu_parquet(data.split(2), tmp_path / "data.parquet")
    if where == "s3":
        s3 = request.getfixturevalue("s3_env")  # the server, in the processes' environment
        out = "s3://pu-test/together"
        listed = lambda: object_hashes(s3, "together")  # noqa: E731
        read = lambda: s3.get_object(Bucket="pu-test", Key="together/summary.json")["Body"].read()  # noqa: E731
    else:
        out = str(tmp_path / "out")
        listed = lambda: file_hashes(tmp_path / "out")  # noqa: E731
        read = (tmp_path / "out" / "summary.json").read_bytes

    args = [sys.executable, "-m", "pulsnar_dask", "run", "--input", str(tmp_path / "data.parquet"),
            "--out", out, "--method", "pulscar", "--n-workers", "1", "--n-rounds", "10",
            "--interval-resamples", "0", "--quiet"]  # fmt: skip
    runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]  # fmt: skip
    done = [(p.wait(timeout=300), *p.communicate()) for p in runs]
    assert sorted(status for status, _, _ in done) == [0, 2], done
    (_, stdout, _), (_, _, err) = sorted(done, key=lambda d: d[0])
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "is in use by another run" in err or "already holds a finished run" in err
    assert json.loads(read()) == json.loads(stdout.splitlines()[-1])
    names = {name.split("/")[0] for name in listed()}
    assert {"summary.json", "model", "predictions", "report.html"} <= names
    assert all(is_run_entry(n) and not n.startswith(("_", ".")) for n in names), names
