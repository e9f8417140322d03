"""A run killed outright (SIGKILL) while it publishes its outputs over a finished run, at
several points of the publishing: a reader of the location sees the older run whole, the
new run whole, or no finished run (and is told so), never a mix; the older run's files
are all kept; and the next run with ``--overwrite`` completes there."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import file_hashes, run_cli, small_snar

from pulsnar_dask.outputs import LOCK, PREVIOUS_PREFIX, STAGING_PREFIX, SUMMARY

# The command in a process of its own that SIGKILLs itself just before its n-th move of
# a published file or folder: a real kill at a chosen point of the publishing.
KILLED_AT_MOVE = """
import os, signal, sys
from pulsnar_dask import outputs
from pulsnar_dask.cli import console
kill_at, moves, move = int(sys.argv[1]), [], outputs.RunOutput._move
def counted(self, source, target):
    if len(moves) == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    moves.append(source)
    move(self, source, target)
outputs.RunOutput._move = counted
sys.argv = ["pulsnar-dask", *sys.argv[2:]]
console()
"""
RUN = ["--method", "pulscar", "--interval-resamples", "0", "--n-workers", "1", "--quiet"]


@pytest.fixture(scope="module")
def older(tmp_path_factory):
    """An input and a finished run at a location (seed 0)."""
    root = tmp_path_factory.mktemp("publish")
    small_snar(root / "data")
    out = root / "older"
    with open(os.devnull, "w") as sink:
        status = subprocess.run(
            [sys.executable, "-m", "pulsnar_dask", "run", "--input", str(root / "data"),
             "--out", str(out), "--seed", "0", *RUN],
            stdout=sink, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    assert status.returncode == 0, status.stderr
    return root, out


def killed_run(root: Path, out: Path, at: int) -> None:
    """``run --overwrite`` (seed 1) at ``out``, SIGKILLed before its ``at``-th move."""
    args = ["run", "--input", str(root / "data"), "--out", str(out), "--overwrite", "--seed", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_AT_MOVE, str(at), *args, *RUN],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, process_group=0,
    )  # fmt: skip
    try:
        assert proc.wait(timeout=300) == -signal.SIGKILL
    finally:
        with contextlib.suppress(ProcessLookupError):  # its local cluster's workers
            os.killpg(proc.pid, signal.SIGKILL)


def run_entries(out: Path) -> dict[str, str]:
    """The hashes of the files of the run at the top of ``out`` (not staged, set aside
    or the lock)."""
    return {
        name: digest
        for name, digest in file_hashes(out).items()
        if not name.startswith((STAGING_PREFIX, PREVIOUS_PREFIX, LOCK))
    }


# The older run's entries are set aside first (its summary first), then the new ones
# moved in (its summary last): kill before the first, inside and after the set-aside,
# among the new, and just before the new summary.
@pytest.mark.parametrize(
    "point",
    [
        pytest.param("first", marks=pytest.mark.slow),
        "second",
        pytest.param("last aside", marks=pytest.mark.slow),
        "first new",
        "last",
    ],
)
def test_a_run_killed_while_publishing_leaves_one_whole_run_or_none(older, point, tmp_path, capsys):
    root, source = older
    entries = [p.name for p in source.iterdir()]
    n_moves = 2 * len(entries)  # the older entries aside, then as many new ones in
    at = {
        "first": 0,
        "second": 1,
        "last aside": len(entries) - 1,
        "first new": len(entries),
        "last": n_moves - 1,
    }[point]
    out = tmp_path / "out"
    shutil.copytree(source, out)
    old = file_hashes(source)
    killed_run(root, out, at)

    top, kept = run_entries(out), {}
    aside = [p for p in out.iterdir() if p.name.startswith(PREVIOUS_PREFIX)]
    if SUMMARY in top:  # a finished run: the older one, whole (killed before any move)
        assert top == old
    else:  # no finished run: a reader is told so, and the older run is whole, aside
        status, _, err = run_cli(
            ["score", "--model", str(out), "--input", str(root / "data"),
             "--out", str(tmp_path / "scored"), "--n-workers", "1"],
            capsys,
        )  # fmt: skip
        assert status == 2, err
        assert "holds no finished run" in err or "no model at" in err, err
        assert len(aside) == 1
        kept = file_hashes(aside[0])  # every file of the older run, aside or where it was
        assert all(
            kept.get(name) == digest or top.get(name) == digest for name, digest in old.items()
        )
    # the next run there is told of the killed one's lock; once it is removed, as the
    # line says, that run completes, and keeps what the killed one set aside
    again = ["run", "--input", str(root / "data"), "--out", str(out), "--overwrite", *RUN]
    status, _, err = run_cli(again, capsys)
    assert status == 2 and "which has ended without releasing it" in err, err
    (out / LOCK).unlink()
    status, summary, err = run_cli(again, capsys)
    assert status == 0, err
    assert json.loads((out / SUMMARY).read_text())["alpha"] == summary["alpha"]
    for folder in aside:  # another run's files: named in a warning, never removed
        assert file_hashes(folder) == kept
