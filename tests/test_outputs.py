"""A run's output location: everything staged, moved into place only when complete."""

import json

import pytest

from pulsnar_dask.errors import PUError
from pulsnar_dask.outputs import RunOutput


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
    out.prepare()
    assert not (tmp_path / "a").exists()  # the probe's folders go with it
    out.write_bytes("report.html", b"<html></html>")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    out.discard_staging()  # a failure before the commit
    assert sorted(p.name for p in tmp_path.iterdir()) == []
