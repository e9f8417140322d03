"""How each alpha estimator does on the same out-of-fold probabilities.

Fits the in-memory estimators once per data set (PULSNAR on SNAR data, PULSCAR on SCAR
data) and re-reads alpha from the fitted subproblems with the ``kernel`` objective and
the ``tail`` ratio, so the comparison is free of classifier noise. Data sets: the paper's
synthetic protocol (P=2000, U=6000, 50 features, class_sep 0.3, 7 fractions), shuttle
(4 fractions), and easier synthetic SNAR settings (more separated subtypes, fewer
features). Writes benchmarks/results/alpha_estimators.{csv,md}.

    python jobs/compare_alpha_estimators.py [--seeds 10] [--workers 2]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from pulsnar_dask import PULSCAR, PULSNAR, estimate_alpha, make_pu_data
from pulsnar_dask.shuttle import FRACTIONS as SHUTTLE_FRACTIONS
from pulsnar_dask.shuttle import read_shuttle, shuttle_pu_data

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SHUTTLE = ROOT.parent / "shared" / "data" / "shuttle" / "shuttle.trn"
PAPER_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
# name: (scenario, n_pos, n_unlab, n_features, class_sep, n_subtypes, fractions)
SYNTHETIC = {
    "SNAR paper (50 f, sep 0.3)": ("snar", 2000, 6000, 50, 0.3, 5, PAPER_FRACTIONS),
    "SCAR paper (50 f, sep 0.3)": ("scar", 2000, 6000, 50, 0.3, 5, PAPER_FRACTIONS),
    "SNAR 20 f, sep 0.5": ("snar", 1000, 5000, 20, 0.5, 5, (0.1, 0.25, 0.45)),
    "SNAR 20 f, sep 1": ("snar", 2000, 10000, 20, 1.0, 5, (0.1, 0.25, 0.45)),
    "SNAR 10 f, sep 1": ("snar", 2000, 6000, 10, 1.0, 5, (0.1, 0.25, 0.45)),
    "SNAR 8 f, sep 2, 3 subtypes": ("snar", 600, 3000, 8, 2.0, 3, (0.1, 0.25, 0.45)),
}
ESTIMATORS = ("kernel", "tail")


def run_one(task: tuple[str, float, int]) -> list[dict]:
    name, fraction, seed = task
    if name == "SNAR shuttle":
        data = shuttle_pu_data(*read_shuttle(SHUTTLE), fraction, random_state=seed)
    else:
        scenario, n_pos, n_unlab, n_features, sep, subtypes, _ = SYNTHETIC[name]
        data = make_pu_data(
            scenario, n_pos, n_unlab, n_features, fraction, class_sep=sep,
            n_subtypes=subtypes, random_state=seed,
        )  # fmt: skip
    cls = PULSCAR if name.startswith("SCAR") else PULSNAR
    model = cls(random_state=seed, n_jobs=1).fit(data.X, data.label)
    rows = []
    for estimator in ESTIMATORS:
        alpha = sum(
            estimate_alpha(r.probabilities, r.labels, estimator=estimator).alpha
            for r in model.subproblems_
        )
        rows.append(
            {
                "data": name,
                "method": cls.__name__,
                "fraction": fraction,
                "seed": seed,
                "true_alpha": data.true_alpha,
                "estimator": estimator,
                "alpha": alpha,
                "n_clusters": model.n_clusters_,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    tasks = [
        (name, f, seed)
        for name, spec in SYNTHETIC.items()
        for f in spec[-1]
        for seed in range(args.seeds if "paper" in name else min(args.seeds, 3))
    ] + [("SNAR shuttle", f, seed) for f in SHUTTLE_FRACTIONS for seed in range(args.seeds)]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        runs = pd.DataFrame([row for rows in pool.map(run_one, tasks) for row in rows])
    runs["error"] = runs.alpha - runs.true_alpha
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / "alpha_estimators.csv", index=False)
    lines = [
        "# Alpha estimators on the same out-of-fold probabilities",
        "",
        f"{len(tasks)} fits in {(time.perf_counter() - start) / 60:.1f} min; PULSNAR on SNAR "
        "data (alpha = sum over its clusters), PULSCAR on SCAR data. Per-run mean absolute "
        "error / mean error (bias); paper data sets with seeds 0-"
        f"{args.seeds - 1}, the others with up to 3 seeds.",
        "",
        "| data | method | runs | kernel MAE | kernel bias | tail MAE | tail bias |",
        "|---|---|---|---|---|---|---|",
    ]
    for (name, method), sel in runs.groupby(["data", "method"], sort=False):
        cells = []
        for estimator in ESTIMATORS:
            err = sel[sel.estimator == estimator].error
            cells += [f"{err.abs().mean():.4f}", f"{err.mean():+.4f}"]
        lines.append(f"| {name} | {method} | {len(sel) // 2} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Per fraction, PULSNAR on the paper's SNAR data (MAE / bias):",
        "",
        "| fraction | kernel | tail |",
        "|---|---|---|",
    ]
    paper = runs[runs.data.str.startswith("SNAR paper")]
    for f, sel in paper.groupby("fraction"):
        cells = []
        for estimator in ESTIMATORS:
            err = sel[sel.estimator == estimator].error
            cells.append(f"{err.abs().mean():.4f} / {err.mean():+.4f}")
        lines.append(f"| {f:g} | " + " | ".join(cells) + " |")
    (RESULTS / "alpha_estimators.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
