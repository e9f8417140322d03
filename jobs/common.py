"""Helpers shared by the job scripts: synthetic Parquet inputs and timed CLI runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from pulsnar_dask import make_pu_data
from pulsnar_dask.cli import write_pu_parquet

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CLI = [sys.executable, "-m", "pulsnar_dask"]


def synthetic_parquet(
    path: Path,
    scenario: str,
    n_pos: int,
    n_unlab: int,
    n_features: int,
    alpha: float,
    seed: int = 0,
    partitions: int = 4,
    class_sep: float = 0.3,
) -> float:
    """Write the paper's synthetic data to ``path`` unless it is already there.

    Returns
    -------
    float
        The data's true alpha.
    """
    marker = path / "_true_alpha"
    if not marker.exists():
        data = make_pu_data(
            scenario, n_pos, n_unlab, n_features, alpha, class_sep=class_sep, random_state=seed
        )
        write_pu_parquet(data, path, partitions)
        marker.write_text(str(data.true_alpha))
    return float(marker.read_text())


def timed_run(args: list[str], env: dict | None = None) -> dict:
    """Run ``pulsnar-dask run`` as its own process under /usr/bin/time.

    Returns
    -------
    dict
        The summary plus ``wall_s`` (whole process) and ``peak_rss_mib`` (client process).
    """
    command = ["/usr/bin/time", "-v", *CLI, "run", *args, "--quiet", "--overwrite"]
    start = time.perf_counter()
    proc = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    summary["wall_s"] = wall
    summary["peak_rss_mib"] = int(rss.group(1)) / 1024 if rss else float("nan")
    return summary
