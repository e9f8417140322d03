"""Whole-process wall time against the reference implementation's published figures.

P=5000, U=100000, 100 features: SCAR data with PULSCAR and SNAR data with PULSNAR, each
run as ``pulsnar-dask run`` in its own process on a local cluster (start-up, reading,
scoring, report and all). The reference figures on this machine kind are 23 s (PULSCAR)
and 91 s (PULSNAR) (DESIGN.md section 7). Writes benchmarks/results/speed.{csv,md}.

    python jobs/benchmark_speed.py [--repeats 3] [--data /tmp/pulsnar-speed]
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import numpy as np
import pandas as pd
from common import RESULTS, synthetic_parquet, timed_run

REFERENCE_S = {"pulscar": 23.0, "pulsnar": 91.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-speed"))
    parser.add_argument("--alpha", type=float, default=0.2)
    args = parser.parse_args()
    rows = []
    for method, scenario in (("pulscar", "scar"), ("pulsnar", "snar")):
        path = args.data / f"{scenario}_5000_100000_100"
        true_alpha = synthetic_parquet(path, scenario, 5000, 100_000, 100, args.alpha)
        for repeat in range(args.repeats):
            summary = timed_run(
                [
                    "--input",
                    str(path),
                    "--method",
                    method,
                    "--out",
                    str(args.data / f"out_{method}"),
                ]
            )
            rows.append(
                {
                    "method": method,
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
    runs = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / "speed.csv", index=False)
    lines = [
        "# Whole-process wall time, P=5000, U=100000, 100 features",
        "",
        f"`pulsnar-dask run` as its own process on a local cluster (2 workers), "
        f"{platform.machine()}, {args.repeats} repeats; median shown. Reference: the "
        "authors' implementation on this machine kind (DESIGN.md section 7).",
        "",
        "| method | data | wall (s) | job (s) | reference (s) | target (s) | ratio | alpha "
        "| true alpha |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for method, sel in runs.groupby("method", sort=False):
        wall = float(np.median(sel.wall_s))
        ref = REFERENCE_S[method]
        lines.append(
            f"| {method.upper()} | {'SCAR' if method == 'pulscar' else 'SNAR'} | {wall:.1f} | "
            f"{np.median(sel.job_s):.1f} | {ref:.0f} | {ref / 4:.1f} | {ref / wall:.1f}x faster | "
            f"{sel.alpha.iloc[0]:.4f} | {sel.true_alpha.iloc[0]:.4f} |"
        )
    (RESULTS / "speed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
