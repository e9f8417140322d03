"""method="auto"'s SCAR/SNAR call on every family, today's rule beside the fixed threshold.

The in-memory estimator (defaults, ``method="auto"``) is fitted on every benchmark family
(the paper's synthetic SNAR and SCAR data, every real set of
:mod:`benchmarks.realdata`) and on SCAR constructions of the real tables whose
positives hold subtypes (``SCARSUB_*``: the SNAR sets' positive classes, hidden at
random, the way the hidden SCAR sets with several positive classes are built). Each run
records what :func:`~pulsnar_dask.core.subtypes.choose_method` saw (the clusters' alphas
and labeled positives) and both readings (PULSNAR's and PULSCAR's), so each rule is
applied to the same fits: the fixed threshold alone (the rule before session 20) and the
threshold with the test against sampling noise (:func:`scar_mix_noise`, the default),
both through ``choose_method`` itself. Writes benchmarks/results/<name>.{csv,md} and, when
fitting, the recorded runs as <name>_runs.jsonl (one JSON line per fit or skipped run);
``--runs FILE`` re-reads such a file instead of fitting.

    python jobs/compare_method_choice.py [--seeds 0 1] [--families NAME ...] [--runs FILE]
                                         [--name method_choice]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import RESULTS, SUBTYPE_SETS, build

import pulsnar_dask.pipeline.stages as stages
from benchmarks.realdata import FRACTIONS
from pulsnar_dask import PULSNAR
from pulsnar_dask.core.subtypes import (
    SCAR_MIX_DISTANCE,
    choose_method,
)

FAMILIES = (
    *(f"SCARSUB_{s}" for s in SUBTYPE_SETS),
    "SNAR_segment",
    "SNAR_digits",
    "SCAR_bank",
    "SCAR_mushroom",
    "SNAR_gas",
    "SCAR_grid",
    "SNAR_shuttle",
    "SNAR_synthetic",
    "SCAR_synthetic",
    "SNAR_avila",
)


def fractions(family: str) -> tuple[float, ...]:
    if family.startswith("SCARSUB_"):
        return (0.05, 0.2, 0.4)
    if family == "SNAR_shuttle":
        return (0.01, 0.05, 0.1, 0.15)
    return (*FRACTIONS, 0.6) if family == "SCAR_grid" else FRACTIONS


def fit_runs(families: list[str], seeds: list[int], record: Path) -> list[dict]:
    """Fit every run, each appended to ``record`` as a JSON line as it ends."""
    seen: dict = {}

    def spy(alphas, sizes, *args, **kwargs):  # what the rule saw, recorded
        seen.update(alphas=[float(a) for a in alphas], sizes=[int(n) for n in sizes])
        return choose_method(alphas, sizes, *args, **kwargs)

    stages.choose_method = spy
    runs = []
    try:
        with record.open("w") as out:
            for family in families:
                for fraction in fractions(family):
                    for seed in seeds:
                        runs.append(fit_one(family, fraction, seed, seen))
                        out.write(json.dumps(runs[-1]) + "\n")
                        out.flush()
                        print(json.dumps(runs[-1]), flush=True)
    finally:
        stages.choose_method = choose_method
    return runs


def fit_one(family: str, fraction: float, seed: int, seen: dict) -> dict:
    """One fit's record (``error``: the run could not be built)."""
    try:
        data, categorical = build(family, fraction, seed)
    except ValueError as exc:  # too few positives to hide that many
        return {"set": family, "frac": fraction, "seed": seed, "error": str(exc)}
    labels = data.label.astype(int)
    seen.clear()
    start = time.perf_counter()
    # the clusters' mix rule alone: the valley reader (item 50) decides before it where a
    # dip is plain, and its runs would record no PULSCAR kernel reading
    est = PULSNAR(random_state=seed, n_jobs=2, categorical_features=categorical, valley_depth=0)
    est.fit(data.X, labels)
    readings = est.alpha_interval_.readings
    return {
        "set": family,
        "frac": fraction,
        "seed": seed,
        "true": data.true_alpha,
        "pulsnar": readings.get("pulsnar kernel", (None,))[0],
        "pulscar": readings.get("pulscar kernel", (None,))[0],
        "alpha": float(est.alpha_),
        "cl_alphas": seen.get("alphas"),
        "cl_sizes": seen.get("sizes"),
        "U": int(np.sum(labels == 0)),
        "sec": round(time.perf_counter() - start, 1),
    }


def decide(run: dict) -> dict:
    """Both rules on one run's recorded inputs, through ``choose_method``: ``fixed``
    (the distance against SCAR_MIX_DISTANCE alone) and ``test`` (also against the
    sampling noise of the larger reading's hidden count, as the pipeline asks); each
    call (``*_call``) and the alpha it reports."""
    alphas, sizes = np.array(run["cl_alphas"] or [0.0]), np.array(run["cl_sizes"] or [1])
    n_hidden = None
    if alphas.size > 1:  # PULSCAR ran beside the clusters
        n_hidden = max(run["pulscar"], run["pulsnar"]) * run["U"]
    fixed, _ = choose_method(alphas, sizes)
    test, evidence = choose_method(alphas, sizes, n_hidden=n_hidden)
    return {
        "distance": evidence["subtype_mix_distance"],
        "noise": evidence["sampling_noise"],
        "fixed_call": fixed,
        "test_call": test,
        "fixed": run[fixed],
        "test": run[test],
    }


def table(runs: pd.DataFrame) -> pd.DataFrame:
    error = {c: (runs[c] - runs["true"]).abs() for c in ("fixed", "test", "pulscar", "pulsnar")}
    moved = runs.fixed_call != runs.test_call
    frame = runs.assign(**{f"e_{c}": e for c, e in error.items()}, moved=moved)
    return frame.groupby("set", sort=False).agg(
        runs=("frac", "size"),
        fixed=("e_fixed", "mean"),
        noise_test=("e_test", "mean"),
        pulscar=("e_pulscar", "mean"),
        pulsnar=("e_pulsnar", "mean"),
        moved=("moved", "sum"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    parser.add_argument("--runs", type=Path, help="recorded runs (JSON lines) instead of fits")
    parser.add_argument("--name", default="method_choice", help="results files' name")
    args = parser.parse_args()
    if args.runs:
        lines = args.runs.read_text().splitlines()
        recorded = [json.loads(line) for line in lines if line.startswith("{")]
    else:
        recorded = fit_runs(args.families, args.seeds, RESULTS / f"{args.name}_runs.jsonl")
    runs = pd.DataFrame([{**r, **decide(r)} for r in recorded if "error" not in r])
    keep = ["set", "frac", "seed", "true", "pulsnar", "pulscar", "distance", "noise"]
    keep += ["fixed_call", "test_call", "fixed", "test"]
    runs[keep].to_csv(RESULTS / f"{args.name}.csv", index=False)
    summary = table(runs)
    lines = [
        "# method=auto: the fixed threshold alone against the test against sampling noise",
        "",
        "`python jobs/compare_method_choice.py` (see its docstring): the in-memory estimator "
        "with defaults, seeds " + ", ".join(map(str, sorted(runs.seed.unique()))) + "; per "
        "family the per-run MAE of alpha when auto keeps PULSNAR at a subtype-mix distance "
        f"of at least {SCAR_MIX_DISTANCE} (`fixed`), and when that distance must also exceed "
        "what sampling the larger reading's hidden positives gives under SCAR (`noise_test`, "
        "the default); PULSCAR and PULSNAR alone beside them (PULSNAR over the runs with two "
        "or more clusters; -: none had); `moved`: runs whose call differs.",
        "",
        "| family | runs | fixed | noise_test | PULSCAR | PULSNAR | moved |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in summary.iterrows():
        cells = [f"{v:.4f}" if v == v else "-" for v in row[["fixed", "noise_test"]]]
        cells += [f"{v:.4f}" if v == v else "-" for v in row[["pulscar", "pulsnar"]]]
        lines.append(f"| {name} | {int(row.runs)} | {' | '.join(cells)} | {int(row.moved)} |")
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
