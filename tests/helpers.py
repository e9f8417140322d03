"""Shared helpers for the command-line and cluster tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from pulsnar_dask import make_pu_data
from pulsnar_dask.cli import main, write_pu_parquet

BIN = Path(sys.executable).parent


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


class DaskCluster:
    """A real scheduler and worker processes on loopback, started with the ``dask`` CLI."""

    def __init__(self, tmp: Path, n_workers: int = 2):
        self.scheduler_file = tmp / "scheduler.json"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.procs = [
            subprocess.Popen(
                [
                    str(BIN / "dask"),
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(self.scheduler_file),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        ]
        deadline = time.time() + 60
        while not self.scheduler_file.exists():
            if time.time() > deadline:
                self.close()
                raise RuntimeError("scheduler did not start")
            time.sleep(0.2)
        self.address = json.loads(self.scheduler_file.read_text())["address"]
        self.workers = [self.add_worker() for _ in range(n_workers)]
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n_workers, timeout=60)

    def add_worker(self) -> subprocess.Popen:
        proc = subprocess.Popen(
            [
                str(BIN / "dask"),
                "worker",
                self.address,
                "--nthreads",
                "1",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                "--no-nanny",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
