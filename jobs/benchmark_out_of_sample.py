"""Defaults judged out of sample: every family fitted with defaults, recorded once a run.

``fit`` fits the in-memory estimator (``PULSNAR``, ``method="auto"``, defaults) on every
family's PU constructions (the paper's synthetic SCAR and SNAR data, every real table of
:mod:`pulsnar_dask.datasets.realdata`, and a SCAR construction of each real SNAR table,
``SCARSUB_*``: all its positive classes hidden at one rate) and appends one JSON line a
run to ``--out``: the true alpha, the reported alpha and interval, the call auto made,
every warning the run logged, and the readings and evidence the package records (what
``table`` needs to apply another setting of a rule to the same fit). Runs already in
``--out`` are skipped, so a stopped job resumes. The package fitted is whichever
``pulsnar_dask`` Python imports: put another checkout first on ``PYTHONPATH`` to record
an earlier commit's defaults on the same runs; each line names its commit.

    python jobs/benchmark_out_of_sample.py fit --seeds 5 6 7 8 9 --out RUNS.jsonl
                                               [--families NAME ...]

Seeds 0-4 are for choosing settings, seeds 5-9 for the figures reported (DESIGN.md
section 8); no screen may touch 5-9.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import time
from pathlib import Path

import numpy as np
from common import DATA

import pulsnar_dask
from pulsnar_dask import PULSNAR, make_pu_data
from pulsnar_dask.datasets.realdata import REAL_SETS, scar_pu_data

SUBTYPE_SETS = ("segment", "digits", "gas", "shuttle", "avila")
# family -> its group (the acceptance figures are per group) and the fractions it is built at
FAMILIES: dict[str, tuple[str, tuple[float, ...]]] = {
    "SCAR_synthetic": ("SCAR", (0.05, 0.3)),
    "SCAR_grid": ("SCAR", (0.05, 0.3)),
    "SCAR_bank": ("SCAR", (0.05, 0.3)),
    "SCAR_mushroom": ("SCAR", (0.05, 0.3)),
    **{f"SCARSUB_{s}": ("SCARSUB", (0.05, 0.3)) for s in SUBTYPE_SETS},
    "SNAR_synthetic": ("SNAR synthetic", (0.05, 0.3)),
    "SNAR_shuttle": ("SNAR real", (0.05, 0.15)),
    **{f"SNAR_{s}": ("SNAR real", (0.05, 0.3)) for s in SUBTYPE_SETS if s != "shuttle"},
}


def build(family: str, fraction: float, seed: int):
    """A run's PU data and its categorical columns (the estimator's names)."""
    if family in ("SNAR_synthetic", "SCAR_synthetic"):
        scenario = family.split("_")[0].lower()
        return make_pu_data(scenario, 2000, 6000, 50, fraction, random_state=seed), None
    if family.startswith("SCARSUB_"):
        real = REAL_SETS["SNAR_" + family.removeprefix("SCARSUB_")]
        X, classes = real.read(Path(DATA) / real.folder)
        values, sizes = np.unique(classes, return_counts=True)
        # the SNAR construction's negative class: shuttle's 1, elsewhere the largest
        negative = 1 if family == "SCARSUB_shuttle" else int(values[np.argmax(sizes)])
        return scar_pu_data(X, classes != negative, fraction, seed), None
    real = REAL_SETS[family]
    return real.pu_data(DATA, fraction, seed), [f"x{i}" for i in real.categorical] or None


class _Warnings(logging.Handler):
    """The warnings a run logs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _commit() -> str:
    where = Path(pulsnar_dask.__file__).resolve().parents[1]
    out = subprocess.run(
        ["git", "-C", str(where), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def _plain(value):
    """JSON-ready: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def fit_one(family: str, fraction: float, seed: int, commit: str) -> dict:
    """One run's record (``error``: the run could not be built)."""
    head = {"set": family, "group": FAMILIES[family][0], "frac": fraction, "seed": seed}
    try:
        data, categorical = build(family, fraction, seed)
    except ValueError as exc:  # too few positives to hide that many
        return {**head, "error": str(exc)}
    labels = data.label.astype(int)
    caught = _Warnings()
    logging.getLogger("pulsnar_dask").addHandler(caught)
    start = time.perf_counter()
    try:
        est = PULSNAR(random_state=seed, n_jobs=2, categorical_features=categorical)
        est.fit(data.X, labels)
    finally:
        logging.getLogger("pulsnar_dask").removeHandler(caught)
    interval = est.alpha_interval_
    return {
        **head,
        "true": float(data.true_alpha),
        "alpha": float(est.alpha_),
        "low": interval.low,
        "high": interval.high,
        "method": est.method_,
        "n_clusters": int(est.n_clusters_),
        "negative_auc": est.negative_auc_,
        "warnings": caught.messages,
        "readings": _plain(interval.readings),
        "evidence": _plain(est.method_evidence_),
        "U": int(np.sum(labels == 0)),
        "sec": round(time.perf_counter() - start, 1),
        "commit": commit,
    }


def fit(families: list[str], seeds: list[int], out: Path) -> None:
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            run = json.loads(line)
            done.add((run["set"], run["frac"], run["seed"]))
    commit = _commit()
    with out.open("a") as sink:
        for seed in seeds:
            for family in families:
                for fraction in FAMILIES[family][1]:
                    if (family, fraction, seed) in done:
                        continue
                    run = fit_one(family, fraction, seed, commit)
                    sink.write(json.dumps(run) + "\n")
                    sink.flush()
                    print(json.dumps({k: run.get(k) for k in ("set", "frac", "seed", "true",
                                      "alpha", "low", "high", "method", "sec")}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fitting = sub.add_parser("fit", help="fit the runs, one JSON line each")
    fitting.add_argument("--seeds", type=int, nargs="+", required=True)
    fitting.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    fitting.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "fit":
        fit(args.families, args.seeds, args.out)


if __name__ == "__main__":
    main()
