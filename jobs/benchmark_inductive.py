"""Scoring new rows: fit on 80% of a PU data set, score the other 20% with ``score``.

For each data set, fraction and seed the rows are split 80/20 at random. ``pulsnar-dask
run --classify`` fits on the 80% (its saved model: the retrain on recovered labels and
its calibration map) and ``pulsnar-dask score`` applies the model to the 20% as new
rows. Beside it, the plain PU classifier: XGBoost with the same parameters trained to
tell the 80%'s labeled positives from its unlabeled rows. On the 20%, against the true
labels: ROC AUC of each model's probability, and the expected calibration error (10
bins) of the probability each offers as the chance of being positive (the PU model's
calibrated probability; the plain classifier's own output, which is the chance of being
labeled).

Data: the paper's synthetic SNAR data (2,000 positives, 6,000 unlabeled, 50 features),
the real SNAR sets (shuttle, gas, avila) and mushroom (real, SCAR, every feature
categorical: run with ``--categorical``) and bank (real, SCAR, mixed numeric and
categorical columns). Both commands run against one local cluster
(``--scheduler``).

    python jobs/benchmark_inductive.py [--seeds 3] [--only SCAR_mushroom]

Writes ``benchmarks/results/inductive.{csv,md}``.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import DATA, RESULTS, half_width, write_result

from benchmarks.realdata import REAL_SETS
from pulsnar_dask import make_pu_data
from pulsnar_dask.cli import main
from pulsnar_dask.core.calibration import expected_calibration_error
from pulsnar_dask.core.metrics import roc_auc
from pulsnar_dask.core.scoring import DEFAULT_XGB_PARAMS
from pulsnar_dask.datasets.synthetic import pu_frame

logger = logging.getLogger("inductive")
SETS = {
    "SNAR_synthetic": (0.1, 0.3, 0.5),
    "SNAR_shuttle": (0.05, 0.15),
    "SNAR_gas": (0.1, 0.3, 0.5),
    "SNAR_avila": (0.1, 0.3),
    "SCAR_mushroom": (0.1, 0.3),
    "SCAR_bank": (0.1, 0.3),
}


def pu_table(name: str, fraction: float, seed: int) -> tuple[pd.DataFrame, list[str]]:
    """A data set's PU table (``f0..``, ``label``, ``true_label``, ``row_id``) and its
    categorical columns."""
    if name == "SNAR_synthetic":
        return pu_frame(make_pu_data("snar", 2000, 6000, 50, fraction, random_state=seed)), []
    real = REAL_SETS[name]
    return pu_frame(real.pu_data(DATA, fraction, seed)), [f"f{i}" for i in real.categorical]


def plain_pu_classifier(train: pd.DataFrame, test: pd.DataFrame, features, seed: int):
    """XGBoost trained labeled vs unlabeled: the probability of being labeled."""
    import xgboost as xgb

    params = {**DEFAULT_XGB_PARAMS, "seed": seed}
    dtrain = xgb.DMatrix(train[features].to_numpy(np.float32), label=train["label"])
    booster = xgb.train(params, dtrain, num_boost_round=100)
    return booster.predict(xgb.DMatrix(test[features].to_numpy(np.float32))).astype(float)


def one_run(name: str, fraction: float, seed: int, scheduler: str, tmp: Path) -> dict:
    table, categorical = pu_table(name, fraction, seed)
    rng = np.random.default_rng(seed)
    new = rng.random(len(table)) < 0.2
    train, test = table[~new], table[new]
    folder = tmp / f"{name}-{fraction}-{seed}"
    folder.mkdir()
    train.to_parquet(folder / "train.parquet", index=False)
    test.drop(columns=["label"]).to_parquet(folder / "new.parquet", index=False)
    extra = ["--categorical", *categorical] if categorical else []
    start = time.perf_counter()
    status = main(
        ["run", "--input", str(folder / "train.parquet"), "--out", str(folder / "run"),
         "--scheduler", scheduler, "--classify", "--quiet", *extra]
    )  # fmt: skip
    fitted = time.perf_counter() - start
    assert status == 0, f"run failed on {folder}"
    status = main(
        ["score", "--model", str(folder / "run"), "--input", str(folder / "new.parquet"),
         "--out", str(folder / "scored"), "--scheduler", scheduler, "--quiet"]
    )  # fmt: skip
    assert status == 0, f"score failed on {folder}"
    scored = pd.read_parquet(folder / "scored" / "predictions").set_index("row_id")
    scored = scored.loc[test["row_id"]]
    truth = test["true_label"].to_numpy() > 0
    features = [c for c in table.columns if c.startswith("f")]
    plain = plain_pu_classifier(train, test, features, seed)
    summary = json.loads((folder / "run" / "summary.json").read_text())
    return {
        "dataset": name,
        "fraction": fraction,
        "seed": seed,
        "n_new": int(new.sum()),
        "alpha": summary["alpha"],
        "true_alpha": summary["true_alpha"],
        "method": summary["method"],
        "auc_plain": roc_auc(truth, plain),
        "auc_pulsnar": roc_auc(truth, scored["probability"].to_numpy()),
        "auc_pulsnar_calibrated": roc_auc(truth, scored["calibrated_probability"].to_numpy()),
        "ece_plain": expected_calibration_error(truth, plain),
        "ece_pulsnar": expected_calibration_error(
            truth, scored["calibrated_probability"].to_numpy()
        ),
        "fit_seconds": fitted,
    }


def paired(diff: pd.Series) -> str:
    return f"{diff.mean():+.4f} +- {half_width(diff):.4f}"


def markdown(runs: pd.DataFrame) -> str:
    lines = [
        "# Scoring new rows: PULSNAR's saved model against a plain PU classifier",
        "",
        "`python jobs/benchmark_inductive.py` (see its docstring): fit with `pulsnar-dask run "
        "--classify` on 80% of the rows, score the other 20% with `pulsnar-dask score`; the "
        "plain PU classifier is XGBoost (same parameters) trained labeled vs unlabeled on the "
        "same 80%. Seeds 0.. per setting (`runs`); means over seeds; ECE over 10 equal bins.",
        "",
        "| data set | fraction | runs | AUC plain | AUC PULSNAR | ECE plain | ECE PULSNAR "
        "(calibrated) | alpha (true) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, fraction), g in runs.groupby(["dataset", "fraction"]):
        lines.append(
            f"| {name} | {fraction:g} | {len(g)} | {g.auc_plain.mean():.4f} "
            f"| {g.auc_pulsnar.mean():.4f} "
            f"| {g.ece_plain.mean():.4f} | {g.ece_pulsnar.mean():.4f} "
            f"| {g.alpha.mean():.3f} ({g.true_alpha.mean():.3f}) |"
        )
    lines += [
        "",
        "Paired differences, PULSNAR minus plain, with 95% half-widths (every run of a set):",
        "",
        "| data set | runs | AUC | PULSNAR's AUC higher / lower | ECE |",
        "|---|---|---|---|---|",
    ]
    for name, g in runs.groupby("dataset"):
        auc = g.auc_pulsnar - g.auc_plain
        lines.append(
            f"| {name} | {len(g)} | {paired(auc)} | {int((auc > 0).sum())} / "
            f"{int((auc < 0).sum())} | {paired(g.ece_pulsnar - g.ece_plain)} |"
        )
    return "\n".join(lines) + "\n"


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "inductive")
    parser.add_argument(
        "--only", nargs="+", default=None, help="rerun these sets, keeping the others' rows"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    from distributed import LocalCluster

    rows = []
    with (
        LocalCluster(n_workers=args.n_workers, threads_per_worker=1) as cluster,
        tempfile.TemporaryDirectory(prefix="inductive-") as tmp,
    ):
        for name, fractions in SETS.items():
            if args.only and name not in args.only:
                continue
            for fraction in fractions:
                for seed in range(args.seeds):
                    row = one_run(name, fraction, seed, cluster.scheduler_address, Path(tmp))
                    rows.append(row)
                    logger.info(
                        "%s %g seed %d: AUC %.4f vs %.4f plain, ECE %.4f vs %.4f plain",
                        name, fraction, seed, row["auc_pulsnar"], row["auc_plain"],
                        row["ece_pulsnar"], row["ece_plain"],
                    )  # fmt: skip
    runs = pd.DataFrame(rows)
    if args.only:
        kept = pd.read_csv(args.out.with_suffix(".csv"))
        runs = pd.concat([kept[~kept["dataset"].isin(args.only)], runs], ignore_index=True)
    runs.to_csv(args.out.with_suffix(".csv"), index=False)
    write_result(args.out.with_suffix(".md"), markdown(runs))
    print(markdown(runs))


if __name__ == "__main__":
    run()
