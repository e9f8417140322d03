"""Every path mistake with a local output location: one line, exit status 2, and no byte
of the input, the model or the user's files changed (hashes of every file before and
after), nothing left behind."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers import run_cli, small_snar


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root``: its path and the hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """An input dataset, a finished run (its model), and folders of the user's own files,
    one of which holds an input."""
    root = tmp_path_factory.mktemp("paths")
    small_snar(root / "data", partitions=2)
    (root / "notes" / "sub").mkdir(parents=True)
    (root / "notes" / "todo.txt").write_text("mine")
    (root / "notes" / "sub" / "keep.csv").write_text("a,b\n1,2\n")
    small_snar(root / "work" / "data")
    (root / "work" / "readme.md").write_text("my project")
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from pulsnar_dask.cli import main

    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        status = main(
            ["run", "--input", str(root / "data"), "--out", str(root / "run"), "--method",
             "pulscar", "--interval-resamples", "0", "--n-workers", "1", "--quiet"]
        )  # fmt: skip
    assert status == 0
    return root


def cases(root: Path) -> dict[str, tuple[list[str], str]]:
    data, notes, run = str(root / "data"), str(root / "notes"), str(root / "run")
    overlap = "overlap; the outputs need a location of their own"
    foreign = "holds files that are not a run's"
    return {
        "run into the input": (["run", "--input", data, "--out", data], overlap),
        "run into a folder inside the input": (
            ["run", "--input", data, "--out", f"{data}/runs/one"],
            overlap,
        ),
        "run into a folder holding the input": (
            ["run", "--input", str(root / "work" / "data"), "--out", str(root / "work")],
            overlap,
        ),
        "run into the user's folder": (["run", "--input", data, "--out", notes], foreign),
        "run into the user's folder, overwriting": (
            ["run", "--input", data, "--out", notes, "--overwrite"],
            foreign,
        ),
        "run into the input, overwriting": (
            ["run", "--input", data, "--out", data, "--overwrite"],
            overlap,
        ),
        "run onto a user's file": (
            ["run", "--input", data, "--out", f"{notes}/todo.txt"],
            "cannot write to output location",
        ),
        "run onto a finished run": (
            ["run", "--input", data, "--out", run],
            "already holds a finished run",
        ),
        "score into the model's run": (
            ["score", "--model", run, "--input", data, "--out", run],
            overlap,
        ),
        "score into a folder inside the model's run": (
            ["score", "--model", run, "--input", data, "--out", f"{run}/scored"],
            overlap,
        ),
        "score into the input": (
            ["score", "--model", run, "--input", data, "--out", data],
            overlap,
        ),
        "score with the input as the model": (
            ["score", "--model", data, "--input", data, "--out", str(root / "scored")],
            "no model at",
        ),
    }


CASES = list(cases(Path("/")))


@pytest.mark.parametrize("case", CASES)
def test_a_path_mistake_gets_one_line_and_changes_no_byte(place, case, capsys):
    args, message = cases(place)[case]
    before = tree(place)
    status, _, err = run_cli([*args, "--n-workers", "1"], capsys)
    assert status == 2, err
    assert message in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1
    assert tree(place) == before  # no byte changed, nothing added, nothing removed
