"""The kernel reader's region on every family: grid points above 0.5 against the positives'
upper half, on the same out-of-fold probabilities.

Each run (the families of ``compare_method_choice.py`` and the large synthetic data at
U=5,000 and 25,000) is fitted once in memory with defaults: PULSNAR (``method="pulsnar"``,
its own clusters and cuts) and PULSCAR, without the interval. Each subproblem's
probabilities are kept (``--fits DIR``, one pickle per run, about 100 MB in all, by
default under benchmarks/fits/, which git ignores; a run already there is not fitted
again), and alpha is re-read from them with each region
(:func:`~pulsnar_dask.core.alpha.region_mask`): PULSNAR through the pipeline's own
combination (:func:`~pulsnar_dask.core.subproblem.subproblems_alpha`), PULSCAR, and
``method="auto"``'s call (:func:`~pulsnar_dask.core.subtypes.choose_method`, with the test
against sampling noise) and reading. Writes benchmarks/results/alpha_regions.{csv,md}.

    python jobs/compare_alpha_regions.py [--seeds 0 1] [--families NAME ...] [--fits DIR]
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from common import RESULTS, ROOT, half_width
from compare_method_choice import FAMILIES, build, fractions

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.subproblem import read_alpha, subproblems_alpha
from pulsnar_dask.core.subtypes import choose_method

REGIONS = ("upper", "positives")
LARGE_SIZES = (5000, 25000)
LARGE_ALPHA = 0.2


def settings(family: str) -> tuple:
    """A family's fractions (the large data: its U sizes)."""
    return LARGE_SIZES if family == "SNAR_large" else fractions(family)


def kept(result) -> dict:
    """What a subproblem's alpha is read from, and the alpha the fit read."""
    return {
        "alpha": result.alpha,
        "probabilities": result.probabilities,
        "labels": result.labels,
        "n_positive": result.n_positive,
    }


def fit(family: str, setting: float, seed: int, fits: Path) -> dict | None:
    """One run's subproblems, fitted or read back from ``fits`` (None: cannot be built)."""
    path = fits / f"{family}_{setting}_{seed}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    try:
        if family == "SNAR_large":
            data = make_pu_data("snar", 5000, int(setting), 100, LARGE_ALPHA, random_state=seed)
            categorical = None
        else:
            data, categorical = build(family, setting, seed)
    except ValueError as exc:  # too few positives to hide that many
        print(f"{family} {setting} seed {seed}: left out ({exc})", flush=True)
        return None
    start = time.perf_counter()
    labels = data.label.astype(int)
    shared = {"random_state": seed, "categorical_features": categorical, "interval_resamples": 0}
    nar = PULSNAR(method="pulsnar", **shared).fit(data.X, labels)
    car = PULSCAR(**shared).fit(data.X, labels)
    run = {
        "family": family,
        "setting": setting,
        "seed": seed,
        "true": data.true_alpha,
        "clusters": [kept(r) for r in nar.subproblems_],
        "pulscar": kept(car.subproblems_[0]),
        "cluster_features": int(nar.clustering_.cluster_features.size),
        "model_features": int(nar.clustering_.model_features.size),
        "seconds": time.perf_counter() - start,
    }
    path.write_bytes(pickle.dumps(run))
    print(f"{family} {setting} seed {seed}: {run['seconds']:.1f} s", flush=True)
    return run


def read(run: dict, region: str) -> dict:
    """PULSNAR's, PULSCAR's and auto's alpha with the kernel reader over ``region``.

    Each subproblem is read as the pipeline reads it (:func:`read_alpha`, defaults but
    the region); with the default region that is the alpha the fit read.
    """
    config = PUConfig(alpha_region=region)

    def alpha(sub: dict) -> float:
        value = read_alpha(sub["probabilities"], sub["labels"], config, run["seed"]).alpha
        if region == PUConfig().alpha_region and value != sub["alpha"]:
            raise AssertionError(f"re-read {value} differs from the fit's {sub['alpha']}")
        return value

    clusters = [SimpleNamespace(**{**sub, "alpha": alpha(sub)}) for sub in run["clusters"]]
    pulscar = alpha(run["pulscar"])
    pulsnar = subproblems_alpha(clusters, config.claim_overlap)[0]
    if len(clusters) == 1:  # one cluster, uncut: auto reads its subproblem (no PULSCAR)
        call, auto = "pulscar", pulsnar
    else:
        n_unlabeled = int(np.sum(run["pulscar"]["labels"] == 0))
        call, _ = choose_method(
            [c.alpha for c in clusters],
            [c.n_positive for c in clusters],
            run["cluster_features"],
            run["model_features"],
            max(pulscar, pulsnar) * n_unlabeled,
        )
        auto = pulsnar if call == "pulsnar" else pulscar
    return {"pulsnar": pulsnar, "pulscar": pulscar, "auto": auto, "call": call}


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Per family: auto's MAE with each region, the paired difference (positives minus
    upper) with its 95% interval, and the runs whose alpha moved either way."""
    wide = runs.pivot_table(
        index=["family", "setting", "seed"], columns="region", values="error", sort=False
    )
    diff = wide["positives"] - wide["upper"]
    by = diff.groupby(level="family", sort=False)
    return pd.DataFrame(
        {
            "runs": by.size(),
            "upper": wide["upper"].groupby(level="family", sort=False).mean(),
            "positives": wide["positives"].groupby(level="family", sort=False).mean(),
            "difference": by.mean(),
            "half_width": by.agg(half_width),
            "better": by.apply(lambda d: int(np.sum(d < -1e-4))),
            "worse": by.apply(lambda d: int(np.sum(d > 1e-4))),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--families", nargs="+", default=[*FAMILIES, "SNAR_large"])
    parser.add_argument("--fits", type=Path, default=ROOT / "benchmarks" / "fits" / "alpha_regions")
    args = parser.parse_args()
    args.fits.mkdir(parents=True, exist_ok=True)
    rows = []
    for family in args.families:
        for setting in settings(family):
            for seed in args.seeds:
                run = fit(family, setting, seed, args.fits)
                if run is None:
                    continue
                for region in REGIONS:
                    reading = read(run, region)
                    rows.append(
                        {"family": family, "setting": setting, "seed": seed, "true": run["true"]}
                        | {"region": region, **reading}
                    )
    runs = pd.DataFrame(rows).round(5)  # the table is what the CSV recomputes
    runs["error"] = (runs.auto - runs.true).abs()
    runs.to_csv(RESULTS / "alpha_regions.csv", index=False)
    table = paired(runs)
    lines = [
        "# The kernel reader's region: above 0.5 against the positives' upper half",
        "",
        "`python jobs/compare_alpha_regions.py` (see its docstring): in memory, defaults, "
        "seeds " + ", ".join(map(str, args.seeds)) + "; per family the per-run MAE of "
        "`method=\"auto\"`'s alpha with the kernel reader's minimum over the grid points "
        "above 0.5 (`upper`, the default) and over those at or above the labeled positives' "
        "median probability too (`positives`), the paired difference (positives minus "
        "upper, mean +- 95% interval) and the runs it made better or worse (by more than "
        "1e-4). Every subproblem is read with the region, PULSCAR's too.",
        "",
        "| family | runs | upper | positives | difference | better | worse |",
        "|---|---|---|---|---|---|---|",
    ]
    for family, row in table.iterrows():
        lines.append(
            f"| {family} | {int(row.runs)} | {row.upper:.4f} | {row.positives:.4f} | "
            f"{row.difference:+.4f} +- {row.half_width:.4f} | {int(row.better)} | "
            f"{int(row.worse)} |"
        )
    (RESULTS / "alpha_regions.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
