"""The alpha reader's settings on every family, re-read from the same kept fits.

Each run (the families of ``compare_method_choice.py`` and the large synthetic data at
U=5,000 and 25,000) is fitted once in memory with defaults: PULSNAR (``method="pulsnar"``,
its own clusters and cuts) and PULSCAR, without the interval. Each subproblem's
probabilities are kept (``--fits DIR``, one pickle per run, about 100 MB in all, by
default under benchmarks/fits/, which git ignores; a run already there is not fitted
again), and alpha is re-read from them with the defaults and with each variant of the
reader's settings (``--variant``, PUConfig options as ``OPTION=JSON``, several joined by
``;``): every subproblem through :func:`~pulsnar_dask.core.subproblem.read_alpha`, PULSNAR
through the pipeline's own combination
(:func:`~pulsnar_dask.core.subproblem.subproblems_alpha`), PULSCAR, and
``method="auto"``'s call (:func:`~pulsnar_dask.core.subtypes.choose_method`, with the test
against sampling noise) and reading. The clusters and their cuts stay those the default
reader made. Writes benchmarks/results/<name>.{csv,md}: per family and variant, auto's
per-run MAE and bias, and the paired difference against the defaults.

    python jobs/compare_readings.py --variant 'alpha_region="positives"' --name alpha_regions
    python jobs/compare_readings.py --variant 'bandwidth_bounds=[0.1, 0.5]' ... --name NAME
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from common import RESULTS, ROOT, build, config_from_settings, half_width
from compare_method_choice import FAMILIES, fractions

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.subproblem import read_alpha, subproblems_alpha
from pulsnar_dask.core.subtypes import choose_method

DEFAULT = "default"
LARGE_SIZES = (5000, 25000)
LARGE_ALPHA = 0.2
REAL_SNAR = ("SNAR_segment", "SNAR_digits", "SNAR_gas", "SNAR_avila", "SNAR_shuttle")
# What a re-read can change: the alpha reader's settings and how PULSNAR combines clusters.
READER_OPTIONS = (
    "alpha_estimator",
    "alpha_region",
    "bin_method",
    "bandwidth_search",
    "bandwidth_error",
    "bandwidth_bounds",
    "kernel_normalization",
    "exact_density",
    "tail_fraction",
    "claim_overlap",
)


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


def read(run: dict, config: PUConfig) -> dict:
    """PULSNAR's, PULSCAR's and auto's alpha, every subproblem read with ``config``.

    With the default config each subproblem reads the alpha the fit read (checked).
    """
    check = config == PUConfig()

    def alpha(sub: dict) -> float:
        value = read_alpha(sub["probabilities"], sub["labels"], config, run["seed"]).alpha
        if check and value != sub["alpha"]:
            raise SystemExit(
                f"{run['family']} {run['setting']} seed {run['seed']}: the defaults re-read "
                f"{value}, the kept fit read {sub['alpha']}: fits kept before the defaults "
                "changed; fit again into a fresh --fits folder"
            )
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


def parse_variant(text: str) -> PUConfig:
    """``OPTION=JSON[;OPTION=JSON ...]`` (reader options only) as the PUConfig it names."""
    items = [part.strip() for part in text.split(";") if part.strip()]
    if not items:
        raise SystemExit(f"--variant {text!r}: no OPTION=VALUE in it")
    why = (
        f" with OPTION one of the reader's: {', '.join(READER_OPTIONS)} (the fits are kept, "
        "so nothing else can change)"
    )
    return config_from_settings(items, f"--variant {text!r}", READER_OPTIONS, why)


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Per family and variant: auto's MAE and bias, the paired difference against the
    defaults (mean and 95% half-width) and the runs it made better or worse (by 1e-4)."""
    runs = runs.assign(error=(runs.auto - runs.true).abs(), bias=runs.auto - runs.true)
    keys = ["family", "setting", "seed"]
    base = runs[runs.variant == DEFAULT].set_index(keys).error
    rows = []
    for (family, variant), group in runs.groupby(["family", "variant"], sort=False):
        diff = group.set_index(keys).error - base.loc[group.set_index(keys).index]
        rows.append(
            {
                "family": family,
                "variant": variant,
                "runs": len(group),
                "mae": group.error.mean(),
                "bias": group.bias.mean(),
                "difference": diff.mean(),
                "half_width": half_width(diff),
                "better": int(np.sum(diff < -1e-4)),
                "worse": int(np.sum(diff > 1e-4)),
            }
        )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame, variants: list[str], seeds: list[int]) -> list[str]:
    """The per-family table, one column per variant, and the real SNAR sets' mean."""
    head = "| family | runs | " + " | ".join(variants) + " |"
    lines = [
        "# The alpha reader's settings, re-read from the same fits",
        "",
        "`python jobs/compare_readings.py` (see its docstring): in memory, seeds "
        + ", ".join(map(str, seeds))
        + '; per family `method="auto"`\'s per-run MAE with its mean bias, and for each '
        "variant the paired difference against the defaults (mean +- 95% interval) and the "
        "runs it made better or worse (by more than 1e-4). "
        "Every subproblem is re-read with the variant, PULSCAR's too; the clusters are "
        "those the defaults made.",
        "",
        head,
        "|---|---|" + "---|" * len(variants),
    ]
    for family, group in table.groupby("family", sort=False):
        cells = []
        for variant in variants:
            row = group[group.variant == variant].iloc[0]
            cell = f"{row.mae:.4f} (bias {row.bias:+.4f})"
            if variant != DEFAULT:
                cell += (
                    f", {row.difference:+.4f} +- {row.half_width:.4f} "
                    f"({int(row.better)} better / {int(row.worse)} worse)"
                )
            cells.append(cell)
        lines.append(f"| {family} | {int(group.runs.iloc[0])} | " + " | ".join(cells) + " |")
    snar = table[table.family.isin(REAL_SNAR)].groupby("variant", sort=False).mae.mean()
    if not snar.empty:
        lines.append(
            "| real SNAR sets' mean | - | " + " | ".join(f"{snar[v]:.4f}" for v in variants) + " |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="OPTION=JSON[;...]",
        help="reader settings to re-read with, e.g. 'bandwidth_bounds=[0.1, 0.5]' or "
        "'bin_method=\"sturges\"' (text in JSON's double quotes); repeat for more variants",
    )
    parser.add_argument("--name", default="readings", help="results file name (no suffix)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    families = [*FAMILIES, "SNAR_large"]
    parser.add_argument("--families", nargs="+", default=families, choices=families)
    parser.add_argument("--fits", type=Path, default=ROOT / "benchmarks" / "fits" / "readings")
    args = parser.parse_args()
    args.seeds = list(dict.fromkeys(args.seeds))  # a seed named twice is one run
    configs = {DEFAULT: PUConfig()} | {v: parse_variant(v) for v in args.variant}
    args.fits.mkdir(parents=True, exist_ok=True)
    rows = []
    for family in args.families:
        for setting in settings(family):
            for seed in args.seeds:
                run = fit(family, setting, seed, args.fits)
                if run is None:
                    continue
                for variant, config in configs.items():
                    rows.append(
                        {"family": family, "setting": setting, "seed": seed, "true": run["true"]}
                        | {"variant": variant, **read(run, config)}
                    )
    runs = pd.DataFrame(rows).round(5)  # the table is what the CSV recomputes
    runs.to_csv(RESULTS / f"{args.name}.csv", index=False)
    lines = markdown(paired(runs), list(configs), args.seeds)
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
