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
from helpers import file_hashes, object_hashes, run_cli, small_snar, upload

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


def killed_run(root: Path, out: Path | str, at: int) -> None:
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


def run_entries(hashes: dict[str, str]) -> dict[str, str]:
    """Of a location's file hashes, those of the run at its top (not staged, set aside
    or the lock)."""
    return {
        name: digest
        for name, digest in hashes.items()
        if not name.startswith((STAGING_PREFIX, PREVIOUS_PREFIX, LOCK))
    }


def aside(hashes: dict[str, str]) -> dict[str, dict[str, str]]:
    """Of a location's file hashes, those of each folder a run set aside, by folder."""
    folders: dict[str, dict[str, str]] = {}
    for name, digest in hashes.items():
        if name.startswith(PREVIOUS_PREFIX):
            folder, _, rest = name.partition("/")
            folders.setdefault(folder, {})[rest] = digest
    return folders


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
    out = tmp_path / "out"
    shutil.copytree(source, out)
    killed_and_checked(root, source, str(out), lambda: file_hashes(out), point, tmp_path, capsys)
    (out / LOCK).unlink()
    completes_after(
        root, str(out), lambda: file_hashes(out), lambda name: (out / name).read_bytes(), capsys
    )


# On object storage a folder moves object by object: the same points, with the older run
# published at a prefix, the lock an object.
@pytest.mark.parametrize("point", [pytest.param("second", marks=pytest.mark.slow), "first new"])
def test_a_run_killed_while_publishing_to_object_storage_leaves_one_whole_run_or_none(
    older, point, s3_env, tmp_path, capsys
):
    root, source = older
    upload(s3_env, source, "out")
    listed = lambda: object_hashes(s3_env, "out")  # noqa: E731
    killed_and_checked(root, source, "s3://pu-test/out", listed, point, tmp_path, capsys)
    s3_env.delete_object(Bucket="pu-test", Key=f"out/{LOCK}")
    read = lambda name: s3_env.get_object(Bucket="pu-test", Key=f"out/{name}")["Body"].read()  # noqa: E731
    completes_after(root, "s3://pu-test/out", listed, read, capsys)


def killed_and_checked(root, source, out: str, listed, point, tmp_path, capsys) -> None:
    """Kill a run publishing over the finished run at ``out`` at ``point``; then a
    reader of ``out`` sees the older run whole, or is told that no finished run is there
    while the older run is whole, set aside; and the next run is told of the lock."""
    entries = [p.name for p in source.iterdir()]
    n_moves = 2 * len(entries)  # the older entries aside, then as many new ones in
    at = {
        "first": 0,
        "second": 1,
        "last aside": len(entries) - 1,
        "first new": len(entries),
        "last": n_moves - 1,
    }[point]
    old = file_hashes(source)
    killed_run(root, out, at)
    hashes = listed()
    top, folders = run_entries(hashes), aside(hashes)
    if SUMMARY in top:  # a finished run: the older one, whole (killed before any move)
        assert top == old
    else:  # no finished run: a reader is told so, and the older run is whole, aside
        status, _, err = run_cli(
            ["score", "--model", out, "--input", str(root / "data"),
             "--out", str(tmp_path / "scored"), "--n-workers", "1"],
            capsys,
        )  # fmt: skip
        assert status == 2, err
        assert "holds no finished run" in err or "no model at" in err, err
        assert len(folders) == 1
        kept = next(iter(folders.values()))  # every file of the older run, aside or in place
        assert all(
            kept.get(name) == digest or top.get(name) == digest for name, digest in old.items()
        )
    status, _, err = run_cli(["run", "--input", str(root / "data"), "--out", out,
                              "--overwrite", *RUN], capsys)  # fmt: skip
    assert status == 2 and "which has ended without releasing it" in err, err


def completes_after(root, out: str, listed, read, capsys) -> None:
    """Once the killed run's lock is removed, as the line says, the next run at ``out``
    completes (``read(name)``: the bytes of a file there), and keeps what the killed one
    set aside."""
    folders = aside(listed())
    again = ["run", "--input", str(root / "data"), "--out", out, "--overwrite", *RUN]
    status, summary, err = run_cli(again, capsys)
    assert status == 0, err
    hashes = listed()
    assert json.loads(read(SUMMARY))["alpha"] == summary["alpha"]
    assert aside(hashes) == folders  # another run's files: named in a warning, never removed
