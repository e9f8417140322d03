"""Two runs of the paper job, paired run by run: what a change of default did.

Joins two ``runs.csv`` files of ``jobs/benchmark_paper.py`` (the committed default and a
variant, or the job before and after a change) on benchmark, algorithm, setting and
seed, and writes per benchmark and algorithm: the per-run MAE of alpha against the
actual fraction before and after, the paired difference (after minus before, mean +-
1.96 standard errors), the runs whose alpha moved (by more than 5e-5, the job's own
rounding), the runs where auto chose PULSCAR, and the default interval's coverage
before and after. Runs in only one file are left out and counted.

    python jobs/pair_paper_runs.py BEFORE/runs.csv AFTER/runs.csv [--out FILE.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

KEYS = ["benchmark", "algorithm", "setting", "seed"]
MOVED = 5e-5


def covered(runs: pd.DataFrame, suffix: str) -> pd.Series:
    """Whether each run's default interval holds the actual fraction."""
    low, high = runs[f"interval_low{suffix}"], runs[f"interval_high{suffix}"]
    return (low <= runs.actual_alpha) & (runs.actual_alpha <= high)


def pair(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Per benchmark and algorithm, the paired comparison; and the runs left unpaired."""
    both = before.merge(after, on=KEYS, suffixes=("_before", "_after"))
    both["actual_alpha"] = both.actual_alpha_after
    unpaired = len(before) + len(after) - 2 * len(both)
    rows = []
    for (benchmark, algorithm), g in both.groupby(["benchmark", "algorithm"], sort=False):
        error = {s: (g[f"alpha_{s}"] - g.actual_alpha).abs() for s in ("before", "after")}
        diff = error["after"] - error["before"]
        rows.append(
            {
                "benchmark": benchmark,
                "algorithm": algorithm,
                "runs": len(g),
                "before": error["before"].mean(),
                "after": error["after"].mean(),
                "difference": diff.mean(),
                "half_width": 1.96 * diff.std() / np.sqrt(len(g)) if len(g) > 1 else np.nan,
                "moved": int(((g.alpha_after - g.alpha_before).abs() > MOVED).sum()),
                "pulscar_before": int((g.method_before == "pulscar").sum()),
                "pulscar_after": int((g.method_after == "pulscar").sum()),
                "coverage_before": covered(g, "_before").mean(),
                "coverage_after": covered(g, "_after").mean(),
            }
        )
    return pd.DataFrame(rows), unpaired


def markdown(table: pd.DataFrame, unpaired: int, before: Path, after: Path) -> str:
    lines = [
        f"# Paired runs: `{before}` -> `{after}`",
        "",
        "Per-run MAE of alpha against the actual fraction; difference: after minus before, "
        "mean +- 1.96 standard errors; moved: runs whose alpha changed; PULSCAR: runs "
        "where the method chosen was PULSCAR; coverage: the default 95% interval holds the "
        f"actual fraction. Runs in one file only: {unpaired}.",
        "",
        "| benchmark | algorithm | runs | before | after | difference | moved | PULSCAR | "
        "coverage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        lines.append(
            f"| {r.benchmark} | {r.algorithm} | {r.runs} | {r.before:.4f} | {r.after:.4f} | "
            f"{r.difference:+.4f} +- {r.half_width:.4f} | {r.moved} | "
            f"{r.pulscar_before} -> {r.pulscar_after} | "
            f"{r.coverage_before:.1%} -> {r.coverage_after:.1%} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path, help="write the table here (default: print)")
    args = parser.parse_args()
    table, unpaired = pair(pd.read_csv(args.before), pd.read_csv(args.after))
    text = markdown(table, unpaired, args.before, args.after)
    if args.out:
        args.out.write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
