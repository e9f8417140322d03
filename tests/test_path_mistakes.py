"""Every path mistake with a local output location: one line, exit status 2, and no byte
of the input, the model or the user's files changed (hashes of every file before and
after), nothing left behind. tests/test_s3.py sweeps the same mistakes on object storage."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from helpers import file_hashes, path_mistakes, run_cli, small_snar

from pulsnar_dask.cli import main


def mistakes(root: Path) -> dict[str, tuple[list[str], str]]:
    return path_mistakes(
        data=str(root / "data"),
        data_holder=str(root / "work"),
        holder_input=str(root / "work" / "data"),
        user=str(root / "notes"),
        user_file=str(root / "notes" / "todo.txt"),
        run=str(root / "runs" / "one"),
        run_holder=str(root / "runs"),
        elsewhere=str(root / "scored"),
    )


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
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        status = main(
            ["run", "--input", str(root / "data"), "--out", str(root / "runs" / "one"),
             "--method", "pulscar", "--interval-resamples", "0", "--n-workers", "1", "--quiet"]
        )  # fmt: skip
    assert status == 0
    return root


@pytest.mark.parametrize("case", list(mistakes(Path("/"))))
def test_a_path_mistake_gets_one_line_and_changes_no_byte(place, case, capsys):
    args, message = mistakes(place)[case]
    before = file_hashes(place)
    status, _, err = run_cli([*args, "--n-workers", "1"], capsys)
    assert status == 2, err
    assert message in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1
    assert file_hashes(place) == before  # no byte changed, nothing added, nothing removed
