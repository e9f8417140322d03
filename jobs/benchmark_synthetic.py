"""In-memory PULSNAR/PULSCAR on the paper's synthetic protocol, next to the paper's numbers.

P=2000, U=6000, 50 features, class_sep 0.3, fractions 0.01-0.5, seeds 0-4 by default:
PULSNAR and PULSCAR on SNAR data, PULSCAR on SCAR data. Runs are spread over local
processes. Writes benchmarks/results/synthetic_inmemory.{csv,md}.

    python jobs/benchmark_synthetic.py [--seeds 5] [--workers 2] [--set alpha_region=all]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
from common import RESULTS

from benchmarks.summaries import (
    comparison_table,
    load_paper_results,
    paper_mae,
    summarize_runs,
)
from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data

FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
CASES = (
    ("SNAR_synthetic", "PULSNAR"),
    ("SNAR_synthetic", "PULSCAR"),
    ("SCAR_synthetic", "PULSCAR"),
)


def run_one(task: tuple[str, str, float, int, dict]) -> dict:
    dataset, algorithm, fraction, seed, options = task
    scenario = "snar" if dataset.startswith("SNAR") else "scar"
    data = make_pu_data(scenario, 2000, 6000, 50, fraction, class_sep=0.3, random_state=seed)
    cls = PULSNAR if algorithm == "PULSNAR" else PULSCAR
    start = time.perf_counter()
    model = cls(random_state=seed, n_jobs=1, **options).fit(data.X, data.label)
    return {
        "dataset": dataset,
        "algorithm": algorithm,
        "true_alpha": fraction,
        "seed": seed,
        "alpha": model.alpha_,
        "n_clusters": model.n_clusters_,
        "seconds": time.perf_counter() - start,
    }


def parse_options(pairs: list[str]) -> dict:
    """``option=value`` pairs; a value is read as JSON where it is JSON, else as text."""
    options = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    parser.add_argument("--cases", nargs="+", default=[f"{d}:{a}" for d, a in CASES])
    parser.add_argument("--set", nargs="*", default=[], help="estimator option=value overrides")
    parser.add_argument("--name", default="synthetic_inmemory")
    args = parser.parse_args()
    options = parse_options(args.set)
    cases = [tuple(c.split(":")) for c in args.cases]
    tasks = [
        (
            dataset,
            algorithm,
            f,
            seed,
            options
            if algorithm == "PULSNAR"
            else {k: v for k, v in options.items() if k in PULSCAR().get_params()},
        )
        for dataset, algorithm in cases
        for f in args.fractions
        for seed in range(args.seeds)
    ]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        runs = pd.DataFrame(list(pool.map(run_one, tasks)))
    wall = time.perf_counter() - start
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / f"{args.name}.csv", index=False)
    paper = load_paper_results()
    lines = [
        f"# Synthetic protocol, in-memory estimators ({args.name})",
        "",
        f"P=2000, U=6000, 50 features, class_sep 0.3; seeds 0-{args.seeds - 1}; "
        f"options {options or 'defaults'}; {len(runs)} runs in {wall:.0f} s on "
        f"{args.workers} processes (mean {runs.seconds.mean():.1f} s per run).",
        "",
    ]
    for (dataset, algorithm), sel in runs.groupby(["dataset", "algorithm"], sort=False):
        summary = summarize_runs(sel)
        mae = float(np.mean(np.abs(sel.alpha - sel.true_alpha)))
        lines += [
            f"## {algorithm} on {dataset}",
            "",
            f"Per-run MAE: **{mae:.4f}** (paper {algorithm}: "
            f"{paper_mae(paper, dataset, algorithm):.4f}); mean clusters "
            f"{sel.n_clusters.mean():.1f}.",
            "",
            comparison_table(summary, paper, ["PULSNAR", "PULSCAR", "DEDPUL"]),
            "",
        ]
        print(f"{algorithm} on {dataset}: MAE {mae:.4f}")
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
