"""Shared helpers for the command-line and cluster tests."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from pulsnar_dask import make_pu_data
from pulsnar_dask.cli import main, write_pu_parquet


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def small_snar(path: Path, partitions: int = 1, seed: int = 0, **kwargs) -> float:
    """Write a small SNAR data set; return its true alpha."""
    settings = {"n_pos": 600, "n_unlab": 3000, "n_features": 8, "alpha": 0.3, "class_sep": 1.5}
    settings.update(kwargs)
    data = make_pu_data(
        "snar",
        settings["n_pos"],
        settings["n_unlab"],
        settings["n_features"],
        settings["alpha"],
        class_sep=settings["class_sep"],
        n_subtypes=3,
        random_state=seed,
    )
    write_pu_parquet(data, path, partitions)
    return data.true_alpha


def run_cli(args: list[str], capsys) -> tuple[int, dict | None, str]:
    """Run the CLI in-process; return (status, summary or None, stderr)."""
    status = main([*args, "--quiet"])
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    summary = json.loads(lines[-1]) if status == 0 and lines and lines[-1].startswith("{") else None
    return status, summary, captured.err


def start_cli(args: list[str], log: Path):
    """Start ``python -m pulsnar_dask`` as its own process, stderr to ``log``."""
    import subprocess
    import sys

    with open(log, "w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "pulsnar_dask", *args],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )  # fmt: skip


def wait_for_text(log: Path, text: str, timeout: float = 120) -> None:
    """Wait until ``text`` appears in a log file."""
    import time

    deadline = time.time() + timeout
    while text not in log.read_text(errors="replace"):
        if time.time() > deadline:
            raise TimeoutError(f"{text!r} did not appear in {log}")
        time.sleep(0.2)
