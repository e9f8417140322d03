"""Shared helpers for the command-line and cluster tests."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path

from pulsnar_dask import PUData, make_pu_data
from pulsnar_dask.cli import main
from pulsnar_dask.io import write_pu_parquet


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def small_snar(path: Path, partitions: int = 1, seed: int = 0) -> PUData:
    """Write a small SNAR data set (600 positives, 3000 unlabeled, 3 subtypes) and return it."""
    data = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=1.5, n_subtypes=3, random_state=seed)
    write_pu_parquet(data.split(partitions), path)
    return data


def run_cli(args: list[str], capsys) -> tuple[int, dict | None, str]:
    """Run the CLI in-process; return (status, summary or None, stderr). The variable
    the command sets for its own processes (``CUDA_VISIBLE_DEVICES``) is put back."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        status = main([*args, "--quiet"])
    finally:
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    summary = json.loads(lines[-1]) if status == 0 and lines and lines[-1].startswith("{") else None
    return status, summary, captured.err


def start_cli(args: list[str], log: Path, new_group: bool = False):
    """Start ``python -m pulsnar_dask`` as its own process, stderr to ``log``;
    ``new_group``: in a process group of its own, as a terminal starts a command."""
    import subprocess
    import sys

    with open(log, "w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "pulsnar_dask", *args],
            stdout=subprocess.PIPE, stderr=err, text=True, process_group=0 if new_group else None,
        )  # fmt: skip


def wait_for_text(log: Path, text: str, timeout: float = 120) -> None:
    """Wait until ``text`` appears in a log file."""
    import time

    deadline = time.time() + timeout
    while text not in log.read_text(errors="replace"):
        if time.time() > deadline:
            raise TimeoutError(f"{text!r} did not appear in {log}")
        time.sleep(0.2)


def file_hashes(root: Path) -> dict[str, str]:
    """Every file under ``root``: its path (relative) and the sha256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def path_mistakes(
    data: str, data_holder: str, holder_input: str, user: str, user_file: str, run: str,
    run_holder: str, elsewhere: str,
) -> dict[str, tuple[list[str], str]]:  # fmt: skip
    """Every path mistake of ``run`` and ``score``, for local paths or URLs alike: each
    case's arguments and the words its one error line must hold.

    ``data``: an input; ``data_holder``: a location holding the input ``holder_input``;
    ``user``: a folder of the user's own files, ``user_file`` one of them; ``run``: a
    finished run, inside ``run_holder``; ``elsewhere``: a new location.
    """
    overlap = "overlap; the outputs need a location of their own"
    foreign = "holds files that are not a run's"
    return {
        "run into the input": (["run", "--input", data, "--out", data], overlap),
        "run into a folder inside the input": (
            ["run", "--input", data, "--out", f"{data}/runs/one"],
            overlap,
        ),
        "run into a folder holding the input": (
            ["run", "--input", holder_input, "--out", data_holder],
            overlap,
        ),
        "run into the input, overwriting": (
            ["run", "--input", data, "--out", data, "--overwrite"],
            overlap,
        ),
        "run into the user's folder": (["run", "--input", data, "--out", user], foreign),
        "run into the user's folder, overwriting": (
            ["run", "--input", data, "--out", user, "--overwrite"],
            foreign,
        ),
        "run onto a user's file": (
            ["run", "--input", data, "--out", user_file],
            "is a file, not a folder",
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
        "score into a folder holding the model's run": (
            ["score", "--model", run, "--input", data, "--out", run_holder],
            overlap,
        ),
        "score into the input": (
            ["score", "--model", run, "--input", data, "--out", data],
            overlap,
        ),
        "score with the input as the model": (
            ["score", "--model", data, "--input", data, "--out", elsewhere],
            "no model at",
        ),
    }


def upload(s3, local_dir: Path, prefix: str, bucket: str = "pu-test") -> None:
    """Every file under ``local_dir`` to ``s3://bucket/prefix/``, keyed by its relative path."""
    for path in sorted(p for p in local_dir.rglob("*") if p.is_file()):
        s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local_dir).as_posix()}")


def object_hashes(s3, prefix: str = "", bucket: str = "pu-test") -> dict[str, str]:
    """Every object under ``s3://bucket/prefix/`` (the whole bucket where ``prefix`` is
    empty): its key after the prefix and the sha256 of its bytes."""
    import hashlib

    start = f"{prefix}/" if prefix else ""
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=start)
    return {
        obj["Key"][len(start) :]: hashlib.sha256(
            s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
        ).hexdigest()
        for page in pages
        for obj in page.get("Contents", [])
    }
