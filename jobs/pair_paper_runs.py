"""Two runs of the paper job, paired run by run: what a change of default did.

Joins two ``runs.csv`` files of ``jobs/benchmark_paper.py`` (the committed default and a
variant, or the job before and after a change) on benchmark, algorithm, setting and
seed, and writes per benchmark and algorithm: the per-run MAE of alpha against the
actual fraction before and after, the paired difference (after minus before, mean +-
1.96 standard errors), the runs whose alpha moved (by more than 5e-5: the kernel reader
reads alpha in steps of 1e-4), the runs where auto chose PULSCAR, and the default
interval's coverage before and after (over the runs that have one, as the job counts
it). Runs in only one file are left out and counted; a key twice in a file, or two
files that disagree on a run's actual fraction, are refused.

    python jobs/pair_paper_runs.py BEFORE/runs.csv AFTER/runs.csv [--out FILE.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from common import half_width, write_result

KEYS = ["benchmark", "algorithm", "setting", "seed"]
MOVED = 5e-5


def coverage(runs: pd.DataFrame, suffix: str) -> float:
    """Share of the runs with a default interval whose interval holds the actual
    fraction (NaN where none has one)."""
    low, high = f"interval_low{suffix}", f"interval_high{suffix}"
    if low not in runs:
        return np.nan
    runs = runs.dropna(subset=[low, high])
    return float(((runs[low] <= runs.actual_alpha) & (runs.actual_alpha <= runs[high])).mean())


def pair(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Per benchmark and algorithm, the paired comparison; and the runs left unpaired."""
    both = before.merge(after, on=KEYS, suffixes=("_before", "_after"), validate="one_to_one")
    if not np.allclose(both.actual_alpha_before, both.actual_alpha_after, rtol=0, atol=1e-12):
        raise ValueError("the two files disagree on some run's actual fraction")
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
                "half_width": half_width(diff),
                "moved": int(((g.alpha_after - g.alpha_before).abs() > MOVED).sum()),
                "pulscar_before": int((g.method_before == "pulscar").sum()),
                "pulscar_after": int((g.method_after == "pulscar").sum()),
                "coverage_before": coverage(g, "_before"),
                "coverage_after": coverage(g, "_after"),
            }
        )
    return pd.DataFrame(rows), unpaired


def _cell(value: float, form: str) -> str:
    return "-" if np.isnan(value) else format(value, form)


def markdown(table: pd.DataFrame, unpaired: int, before: Path, after: Path) -> str:
    """The table of :func:`pair` as markdown, with its legend."""
    lines = [
        f"# Paired runs: `{before}` -> `{after}`",
        "",
        "Per-run MAE of alpha against the actual fraction; difference: after minus before, "
        f"mean +- 1.96 standard errors; moved: runs whose alpha changed by more than {MOVED:g}; "
        "PULSCAR: runs "
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
            f"{r.difference:+.4f} +- {_cell(r.half_width, '.4f')} | {r.moved} | "
            f"{r.pulscar_before} -> {r.pulscar_after} | "
            f"{_cell(r.coverage_before, '.1%')} -> {_cell(r.coverage_after, '.1%')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Pair the two files named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path, help="write the table here (default: print)")
    args = parser.parse_args()
    table, unpaired = pair(pd.read_csv(args.before), pd.read_csv(args.after))
    text = markdown(table, unpaired, args.before, args.after)
    if args.out:
        write_result(args.out, text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
