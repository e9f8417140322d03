"""Whole-process wall time against the reference implementation's published figures.

P=5000, U=100000, 100 features: SCAR data with PULSCAR and SNAR data with PULSNAR, each
run as ``pulsnar-dask run`` in its own process (start-up, reading, scoring, report and
all), two ways: on the local cluster the run starts for itself (the default), and
attached with ``--scheduler`` to a 2-worker cluster started beforehand. The reference
figures on this machine kind are 23 s (PULSCAR) and 91 s (PULSNAR) (timed when the project
was planned).
Writes benchmarks/results/speed.{csv,md}.

    python jobs/benchmark_speed.py [--repeats 5] [--data /tmp/pulsnar-speed]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from common import RESULTS, synthetic_parquet, timed_run

from pulsnar_dask.dask_executor.connect import ProcessCluster

REFERENCE_S = {"pulscar": 23.0, "pulsnar": 91.0}
TARGET_SPEEDUP = 5
SETUPS = {
    "local": "local cluster started by the run (2 workers)",
    "existing": "existing 2-worker cluster (--scheduler)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-speed"))
    parser.add_argument("--alpha", type=float, default=0.2)
    args = parser.parse_args()
    data = {}
    for method, scenario in (("pulscar", "scar"), ("pulsnar", "snar")):
        path = args.data / f"{scenario}_5000_100000_100"
        data[method] = path, synthetic_parquet(path, scenario, 5000, 100_000, 100, args.alpha)
    # The local runs first, with no other cluster alive: an idle separately started one
    # (its scheduler's and workers' event loops) slowed them by 0.2-0.3 s on 2 cores.
    rows = runs(data, "local", [], args)
    with tempfile.TemporaryDirectory() as tmp, ProcessCluster(tmp, n_workers=2) as cluster:
        rows += runs(data, "existing", ["--scheduler", cluster.address], args)
    write(pd.DataFrame(rows))


def runs(data: dict, setup: str, where: list[str], args: argparse.Namespace) -> list[dict]:
    """``args.repeats`` runs of each method's data on one setup: their figures."""
    rows = []
    for method, (path, true_alpha) in data.items():
        for repeat in range(args.repeats):
            out = args.data / f"out_{method}_{setup}"
            summary = timed_run(
                ["--input", str(path), "--method", method, "--out", str(out), *where]
            )
            rows.append(
                {
                    "method": method,
                    "setup": setup,
                    "repeat": repeat,
                    "wall_s": summary["wall_s"],
                    "job_s": summary["seconds"],
                    "peak_rss_mib": summary["peak_rss_mib"],
                    "alpha": summary["alpha"],
                    "true_alpha": true_alpha,
                    "n_clusters": summary["n_clusters"],
                }
            )
            print(rows[-1], flush=True)
    return rows


def write(runs: pd.DataFrame) -> None:
    """speed.csv, and speed.md's medians against the target: a fifth of the reference's
    time (issue 11)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / "speed.csv", index=False)
    repeats = runs.groupby(["method", "setup"]).size().max()
    lines = [
        "# Whole-process wall time, P=5000, U=100000, 100 features",
        "",
        f"`pulsnar-dask run` as its own process, {platform.machine()}, 2 cores, "
        f"{repeats} repeats: median (min-max). Reference: the authors' implementation "
        f"on this machine kind, timed when the project was planned; target: "
        f"{TARGET_SPEEDUP}x faster.",
        "",
        "| method | data | cluster | wall (s) | job (s) | reference (s) | target (s) "
        "| speed-up | alpha | true alpha |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (method, setup), sel in runs.groupby(["method", "setup"], sort=False):
        wall = float(np.median(sel.wall_s))
        ref = REFERENCE_S[method]
        lines.append(
            f"| {method.upper()} | {'SCAR' if method == 'pulscar' else 'SNAR'} "
            f"| {SETUPS[setup]} | {wall:.2f} ({sel.wall_s.min():.2f}-{sel.wall_s.max():.2f}) "
            f"| {np.median(sel.job_s):.2f} | {ref:.0f} | {ref / TARGET_SPEEDUP:.2f} "
            f"| {ref / wall:.1f}x | {sel.alpha.iloc[0]:.4f} | {sel.true_alpha.iloc[0]:.4f} |"
        )
    (RESULTS / "speed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
