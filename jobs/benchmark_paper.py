"""Every benchmark family through the distributed engine: the paper's alpha tables,
calibration and classification figures, and the real data sets beside them.

Every run goes through the engine the CLI uses (``pulsnar_dask.dask_executor.engine.run_job``) with
default settings, on a local cluster or the one named by ``--scheduler`` /
``--cluster-config``. The data of each run is generated (or, for the real sets, built
from their scattered tables) by a task on a worker, and the runs of all seeds, fractions
and algorithms are in flight together, so their futures share the cluster. ``AUTO`` is
the CLI's default (``--method auto``); the table of each benchmark shows the method it
chose.

Benchmarks (``--only`` picks some; ``--seeds`` caps the real sets at 5 seeds):

* ``SNAR_synthetic``: P=2000, U=6000, 50 features, class_sep 0.3, fractions 0.01-0.5;
  PULSNAR (with calibration and classification), PULSCAR and AUTO.
* ``SCAR_synthetic``: the same sizes, SCAR; PULSCAR (with calibration) and AUTO.
* ``SNAR_shuttle``: ../shared/data/shuttle/shuttle.trn, fractions 0.01-0.15; PULSNAR,
  PULSCAR and AUTO.
* ``SNAR_large``: P=5000, U=5000/25000/50000/100000, 100 features, alpha 0.2; PULSNAR.
* The real sets of :mod:`benchmarks.realdata` (``SNAR_avila``, ``SNAR_gas``,
  ``SNAR_digits``, ``SNAR_segment``, ``SCAR_grid``, ``SCAR_bank``, ``SCAR_mushroom``),
  built as the reference's example scripts build them, fractions 0.01-0.5 (grid to 0.6,
  as the paper): AUTO; the fractions a set cannot hold (too few positives to hide) are
  left out and listed.

Writes to benchmarks/results/paper/ (or ``--out``): ``runs.csv`` (every run; under auto,
``pulsnar_alpha`` is the clusters' reading beside PULSCAR's),
``<benchmark>.md`` tables beside the paper's numbers, ``<benchmark>.png`` bar plots,
``calibration.{md,png}``, ``classification.{md,png}`` and ``summary.md`` (headline
errors against the targets).

    python jobs/benchmark_paper.py            # 10 seeds, everything (about an hour here)
    python jobs/benchmark_paper.py --quick    # 2 seeds, fewer fractions (a few minutes)
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.dataframe as dd
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from common import DATA, ROOT, config_from_settings, write_result

from benchmarks.realdata import REAL_SETS
from benchmarks.shuttle import FRACTIONS as SHUTTLE_FRACTIONS
from benchmarks.summaries import (
    comparison_table,
    load_paper_results,
    paper_mae,
    summarize_runs,
)
from pulsnar_dask import make_pu_data
from pulsnar_dask.core.calibration import expected_calibration_error, reliability_sums
from pulsnar_dask.core.metrics import METRIC_NAMES
from pulsnar_dask.core.stats import mean_ci
from pulsnar_dask.dask_executor.connect import connect
from pulsnar_dask.dask_executor.engine import EXPRESSIONS, run_job
from pulsnar_dask.datasets.synthetic import pu_frame
from pulsnar_dask.io import PUFrame
from pulsnar_dask.report import plot_reliability

FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
REAL_SEEDS = 5
LARGE_SIZES = (5000, 25000, 50000, 100000)
LARGE_ALPHA = 0.2
TARGETS = {  # per-run MAE the issue asks for (the paper's is read from its published table)
    ("SNAR_synthetic", "PULSNAR"): 0.030,
    ("SCAR_synthetic", "PULSCAR"): 0.015,
    ("SNAR_shuttle", "PULSNAR"): 0.016,
}
OTHER_REAL = [name for name in REAL_SETS if name != "SNAR_shuttle"]
logger = logging.getLogger("benchmark_paper")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: its algorithms and settings (fractions, or U sizes for the large)."""

    name: str
    algorithms: tuple[str, ...]
    settings: tuple[float, ...]
    calibrate: bool = False
    classify: tuple[str, ...] = ()


def benchmarks(quick: bool) -> list[Benchmark]:
    fractions = (0.05, 0.3) if quick else FRACTIONS
    return [
        Benchmark("SNAR_synthetic", ("PULSNAR", "PULSCAR", "AUTO"), fractions, True, ("PULSNAR",)),
        Benchmark("SCAR_synthetic", ("PULSCAR", "AUTO"), fractions, True),
        Benchmark(
            "SNAR_shuttle",
            ("PULSNAR", "PULSCAR", "AUTO"),
            (0.05, 0.15) if quick else SHUTTLE_FRACTIONS,
        ),
        Benchmark("SNAR_large", ("PULSNAR",), LARGE_SIZES[:2] if quick else LARGE_SIZES),
    ] + [
        Benchmark(name, ("AUTO",), (*fractions, 0.6) if name == "SCAR_grid" else fractions)
        for name in OTHER_REAL
    ]


def make_frame(name: str, setting: float, seed: int, table: tuple | None) -> pd.DataFrame:
    """Build one run's data (runs on a worker; ``table`` is a real set's (X, classes))."""
    if name in REAL_SETS:
        return pu_frame(REAL_SETS[name].construction(*table, setting, seed))
    if name == "SNAR_large":
        return pu_frame(
            make_pu_data("snar", 5000, int(setting), 100, LARGE_ALPHA, random_state=seed)
        )
    scenario = "snar" if name.startswith("SNAR") else "scar"
    return pu_frame(make_pu_data(scenario, 2000, 6000, 50, setting, random_state=seed))


def run_one(
    client, bench: Benchmark, algorithm: str, setting: float, seed: int, tables, config, codes
):
    """One run through the engine; returns its row and, for seed 0, calibration curves.

    ``tables`` maps each real set to its scattered (X, classes) and feature count;
    ``config`` is the PUConfig of every run; ``codes``: categorical columns as numbers."""
    table, d = tables.get(bench.name, (None, {"SNAR_large": 100}.get(bench.name, 50)))
    meta = pd.DataFrame({f"f{i}": pd.Series(dtype="float32") for i in range(d)})
    meta = meta.assign(
        label=pd.Series(dtype="int8"),
        true_label=pd.Series(dtype="int8"),
        row_id=pd.Series(dtype="int64"),
    )
    part = dask.delayed(make_frame)(bench.name, setting, seed, table)
    with EXPRESSIONS:  # runs build their frames in threads (see EXPRESSIONS)
        frame = dd.from_delayed([part], meta=meta, verify_meta=False)
    real = REAL_SETS.get(bench.name)
    categorical = [f"f{i}" for i in real.categorical] if real and not codes else []
    puf = PUFrame(frame, [f"f{i}" for i in range(d)], "label", "row_id", "true_label", categorical)
    result = run_job(
        client,
        puf,
        algorithm.lower(),
        config,
        seed,
        calibrate_probabilities=bench.calibrate,
        classify=algorithm in bench.classify,
    )
    summary = result.summary()
    row = {
        "benchmark": bench.name,
        "dataset": bench.name,
        "algorithm": algorithm,
        "method": result.method,
        "setting": setting,
        "true_alpha": LARGE_ALPHA if bench.name == "SNAR_large" else setting,
        "actual_alpha": summary["true_alpha"],
        "seed": seed,
        "alpha": result.alpha,
        "n_clusters": result.n_clusters,
        "negative_auc": summary.get("negative_auc"),
        "n_rows": int(result.labels.size),
        "seconds": result.seconds,
    }
    if result.alpha_interval is not None:
        row["interval_low"] = result.alpha_interval.low
        row["interval_high"] = result.alpha_interval.high
    evidence = result.method_evidence or {}
    if "readings" in evidence:  # auto with several clusters: the clusters' reading too
        row["pulsnar_alpha"] = evidence["readings"]["pulsnar"]
    curves = None
    if bench.calibrate:
        truth = (result.true_labels > 0).astype(float)
        unlabeled = result.labels == 0
        # the same run calibrated on the unlabeled rows (the subproblems' probabilities
        # stay on the workers): the same folds and models, so the same alpha
        u_run = run_job(
            client, puf, algorithm.lower(),
            config.with_(calibration_data="U", interval_resamples=0), seed,
            calibrate_probabilities=True,
        )  # fmt: skip
        if abs(u_run.alpha - result.alpha) > 1e-12:
            raise RuntimeError(f"the U-calibrated run read alpha {u_run.alpha}, not {result.alpha}")
        calibrated_u = u_run.calibrated
        for tag, rows, calibrated in (
            ("pu", np.isfinite(result.probability), result.calibrated),
            ("u", unlabeled, calibrated_u),
        ):
            row[f"ece_before_{tag}"] = expected_calibration_error(
                truth[rows], result.probability[rows]
            )
            row[f"ece_after_{tag}"] = expected_calibration_error(truth[rows], calibrated[rows])
        if seed == 0:
            curves = (truth, result.labels, result.probability, result.calibrated, calibrated_u)
    if result.metrics:
        for which, values in result.metrics.items():
            for metric, value in values.items():
                row[f"{which}_{metric}"] = value
    return row, curves


# ---------------------------------------------------------------------------------------
# Tables and figures


def bar_plot(summary: pd.DataFrame, paper: pd.DataFrame, name: str, path: Path) -> None:
    """Mean alpha with 95% CI per setting, ours beside the paper's, true alpha marked."""
    algorithms = list(dict.fromkeys(summary.algorithm))
    paper_algos = [a for a in ("PULSNAR", "PULSCAR", "DEDPUL") if (paper.dataset == name).any()]
    settings = sorted(summary.setting.unique())
    series = [(f"ours {a}", a, True) for a in algorithms] + [
        (f"paper {a}", a, False) for a in paper_algos
    ]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(settings) * len(series) / 2), 4))
    x = np.arange(len(settings))
    for k, (label, algo, ours) in enumerate(series):
        means, errs = [], []
        for s in settings:
            if ours:
                sel = summary[(summary.algorithm == algo) & (summary.setting == s)]
                means.append(float(sel["mean"].iloc[0]))
                errs.append(float(sel["mean"].iloc[0] - sel.ci_low.iloc[0]))
            else:
                sel = paper[
                    (paper.dataset == name)
                    & (paper.algorithm == algo)
                    & np.isclose(paper.true_alpha, s)
                ]
                ok = len(sel) > 0
                means.append(float(sel.mean_est_alpha.iloc[0]) if ok else np.nan)
                errs.append(
                    float(1.96 * sel.std_est_alpha.iloc[0] / np.sqrt(sel.runs.iloc[0]))
                    if ok
                    else np.nan
                )
        ax.bar(
            x + (k - (len(series) - 1) / 2) * width,
            means,
            width,
            yerr=errs,
            capsize=2,
            label=label,
            alpha=1.0 if ours else 0.45,
        )
    truths = [summary[summary.setting == s].true_alpha.iloc[0] for s in settings]
    ax.scatter(x, truths, marker="_", s=900, color="black", label="true alpha", zorder=3)
    ax.set_xticks(x, [f"{s:g}" for s in settings])
    ax.set_xlabel("U size" if name == "SNAR_large" else "true alpha")
    ax.set_ylabel("estimated alpha (mean, 95% CI)")
    ax.set_title(name)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (benchmark, algorithm, setting): mean, CI and MAE against each run's true alpha."""
    return summarize_runs(
        runs.assign(dataset=runs.benchmark), ("dataset", "algorithm", "setting"), "actual_alpha"
    )


def benchmark_markdown(name: str, runs: pd.DataFrame, summary: pd.DataFrame, paper) -> str:
    lines = [f"# {name}", ""]
    for algorithm, sel in summary.groupby("algorithm", sort=False):
        these = runs[(runs.benchmark == name) & (runs.algorithm == algorithm)]
        mae = float(np.mean(np.abs(these.alpha - these.actual_alpha)))
        published = paper_mae(paper, name, "PULSNAR" if algorithm == "AUTO" else algorithm)
        chose = (
            f"; chose PULSNAR in {int((these.method == 'pulsnar').sum())} of {len(these)}"
            if algorithm == "AUTO"
            else ""
        )
        lines += [
            f"## {algorithm}: per-run MAE **{mae:.4f}** over {len(these)} runs "
            f"(paper {'PULSNAR' if algorithm == 'AUTO' else algorithm}: "
            f"{'-' if np.isnan(published) else f'{published:.4f}'}); "
            f"mean clusters {these.n_clusters.mean():.1f}; mean {these.seconds.mean():.1f} s "
            f"per run{chose}",
            "",
        ]
        if name == "SNAR_large":
            lines += [
                "| U | runs | true alpha | mean (95% CI) | MAE | mean s per run |",
                "|---|---|---|---|---|---|",
            ]
            for _, r in sel.iterrows():
                secs = these[these.setting == r.setting].seconds.mean()
                lines.append(
                    f"| {r.setting:,.0f} | {r.runs} | {r.true_alpha:.4f} | {r['mean']:.4f} "
                    f"({r.ci_low:.4f}-{r.ci_high:.4f}) | {r.mae:.4f} | {secs:.1f} |"
                )
        else:
            table = sel.assign(true_alpha=sel.setting)
            lines.append(comparison_table(table, paper, ["PULSNAR", "PULSCAR", "DEDPUL"]))
        lines.append("")
    return "\n".join(lines)


def calibration_outputs(runs: pd.DataFrame, curves: dict, out: Path) -> list[str]:
    sel = runs[runs.ece_before_pu.notna()] if "ece_before_pu" in runs else runs.iloc[:0]
    lines = [
        "# Calibration: expected calibration error before and after isotonic calibration",
        "",
        "Mean over seeds (10 equal-width bins, against the true labels). P+U: calibrated on "
        "and measured over all rows; U: calibrated on and measured over the unlabeled rows.",
        "",
        "| data | algorithm | true alpha | ECE before (P+U) | ECE after (P+U) | "
        "ECE before (U) | ECE after (U) | after < before (P+U) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, algorithm, setting), g in sel.groupby(["benchmark", "algorithm", "setting"]):
        lines.append(
            f"| {name} | {algorithm} | {setting:g} | {g.ece_before_pu.mean():.4f} | "
            f"{g.ece_after_pu.mean():.4f} | {g.ece_before_u.mean():.4f} | "
            f"{g.ece_after_u.mean():.4f} | "
            f"{'yes' if g.ece_after_pu.mean() < g.ece_before_pu.mean() else 'NO'} |"
        )
    # Up to three fractions per data set: the smallest, a middle one and the largest.
    panels = []
    for name, algo in (("SCAR_synthetic", "PULSCAR"), ("SNAR_synthetic", "PULSNAR")):
        settings = sorted(s for n, a, s in curves if (n, a) == (name, algo))
        picks = (
            sorted({settings[0], settings[len(settings) // 2], settings[-1]}) if settings else []
        )
        panels += [(name, algo, s) for s in picks]
    if panels:
        fig, axes = plt.subplots(2, len(panels), figsize=(3.6 * len(panels), 7), squeeze=False)
        for j, key in enumerate(panels):
            truth, labels, before, after_pu, after_u = curves[key]
            unl = labels == 0
            ok = np.isfinite(before)
            for ax, rows, after in ((axes[0, j], ok, after_pu), (axes[1, j], unl, after_u)):
                rows = rows & np.isfinite(before) & np.isfinite(after)
                plot_reliability(
                    ax,
                    {
                        "uncalibrated": reliability_sums(truth[rows], before[rows]),
                        "isotonic": reliability_sums(truth[rows], after[rows]),
                    },
                )
            axes[0, j].set_title(f"{key[0]} {key[1]}\nalpha {key[2]:g}, P+U", fontsize=9)
            axes[1, j].set_title(f"alpha {key[2]:g}, U only", fontsize=9)
        fig.tight_layout()
        fig.savefig(out / "calibration.png", dpi=100)
        plt.close(fig)
    return lines


def classification_outputs(runs: pd.DataFrame, out: Path) -> list[str]:
    if "with_pu_mcc" not in runs:
        return []
    sel = runs[runs.with_pu_mcc.notna()]
    settings = sorted(sel.setting.unique())
    lines = [
        "# Classification (Algorithm 4) on SNAR synthetic data, PULSNAR",
        "",
        "Metrics against the true labels at threshold 0.5, over all rows: the PU classifier "
        "(labeled vs unlabeled) without PULSNAR, and the classifier retrained on the labels "
        "PULSNAR recovers; mean (95% CI) over seeds.",
        "",
        "| true alpha | metric | without PULSNAR | with PULSNAR | better |",
        "|---|---|---|---|---|",
    ]
    fig, axes = plt.subplots(2, 3, figsize=(11, 6))
    for ax, metric in zip(axes.ravel(), METRIC_NAMES, strict=True):
        for which, label in (("without_pu", "without PULSNAR"), ("with_pu", "with PULSNAR")):
            stats = [
                mean_ci(sel[sel.setting == s][f"{which}_{metric}"].to_numpy()) for s in settings
            ]
            m = np.array(stats)
            ax.plot(settings, m[:, 0], marker="o", label=label)
            ax.fill_between(settings, m[:, 1], m[:, 2], alpha=0.25)
        ax.set_title(metric)
        ax.set_xlabel("true alpha")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "classification.png", dpi=100)
    plt.close(fig)
    for s in settings:
        g = sel[sel.setting == s]
        for metric in METRIC_NAMES:
            before = mean_ci(g[f"without_pu_{metric}"].to_numpy())
            after = mean_ci(g[f"with_pu_{metric}"].to_numpy())
            better = after[0] < before[0] if metric == "brier" else after[0] > before[0]
            lines.append(
                f"| {s:g} | {metric} | {before[0]:.4f} ({before[1]:.4f}-{before[2]:.4f}) | "
                f"{after[0]:.4f} ({after[1]:.4f}-{after[2]:.4f}) | {'yes' if better else 'no'} |"
            )
    return lines


def real_data_acceptance(runs: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    """The default method (AUTO) on the real sets: per-run MAE per set, against the
    targets (SNAR sets: 0.02 on average, none above 0.03; grid: the paper's PULSCAR)."""
    auto = runs[(runs.algorithm == "AUTO") & runs.benchmark.isin(list(REAL_SETS))]
    if auto.empty:
        return []
    lines = [
        "",
        "## Real data sets, default method (AUTO)",
        "",
        "| data set | runs | per-run MAE | bias | chose PULSNAR | target |",
        "|---|---|---|---|---|---|",
    ]
    snar: dict[str, float] = {}
    for name, g in auto.groupby("benchmark", sort=False):
        err = g.alpha - g.actual_alpha
        mae = float(err.abs().mean())
        if name.startswith("SNAR"):
            snar[name] = mae
            target = f"0.03 ({'met' if mae <= 0.03 else 'MISSED'})"
        elif name == "SCAR_grid":
            published = paper_mae(paper, name, "PULSCAR")
            target = f"paper PULSCAR {published:.4f} ({'met' if mae <= published else 'MISSED'})"
        else:
            target = "-"
        lines.append(
            f"| {name} | {len(g)} | **{mae:.4f}** | {err.mean():+.4f} | "
            f"{int((g.method == 'pulsnar').sum())} of {len(g)} | {target} |"
        )
    if snar:
        mean = float(np.mean(list(snar.values())))
        missing = [n for n in REAL_SETS if n.startswith("SNAR") and n not in snar]
        verdict = (
            f"target 0.02: {'met' if mean <= 0.02 else 'MISSED'}"
            if not missing
            else f"not run: {', '.join(missing)}, so no verdict on the 0.02 target"
        )
        lines += [
            "",
            f"SNAR real sets ({', '.join(snar)}), mean of the per-set MAEs: **{mean:.4f}** "
            f"({verdict}).",
        ]
    return lines


PAPER_PROTOCOL = ("SNAR_synthetic", "SCAR_synthetic", "SNAR_shuttle")


def interval_coverage(runs: pd.DataFrame) -> list[str]:
    """How often the default 95% interval holds each run's true alpha, per benchmark and
    algorithm, and over the paper protocol (its synthetic data and shuttle)."""
    if "interval_low" not in runs:
        return []
    runs = runs.dropna(subset=["interval_low"])
    covered = (runs.interval_low <= runs.actual_alpha) & (runs.actual_alpha <= runs.interval_high)
    width = runs.interval_high - runs.interval_low
    lines = [
        "",
        "## The default 95% interval",
        "",
        "| benchmark | algorithm | runs | covers the true alpha | mean width |",
        "|---|---|---|---|---|",
    ]
    for (name, algorithm), g in runs.groupby(["benchmark", "algorithm"], sort=False):
        lines.append(
            f"| {name} | {algorithm} | {len(g)} | {covered[g.index].mean():.1%} | "
            f"{width[g.index].mean():.3f} |"
        )
    paper = runs.benchmark.isin(PAPER_PROTOCOL)
    for label, rows in (
        ("the default method (AUTO)", paper & (runs.algorithm == "AUTO")),
        ("every algorithm, a fixed method's interval assuming that method", paper),
    ):
        if rows.any():
            share = covered[rows].mean()
            lines += [
                "",
                f"Paper protocol ({', '.join(PAPER_PROTOCOL)}), {label}: **{share:.1%}** of "
                f"{int(rows.sum())} runs covered (target 90%: "
                f"{'met' if share >= 0.9 else 'MISSED'}).",
            ]
    return lines


def write_outputs(
    runs: pd.DataFrame, curves: dict, out: Path, wall: float, args, left_out: list[str]
) -> None:
    aliases = {s.paper: name for name, s in REAL_SETS.items() if s.paper and s.paper != name}
    paper = load_paper_results().replace({"dataset": aliases})
    out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(out / "runs.csv", index=False)
    summary = summarize(runs)
    head = [
        "# Paper reproduction through the distributed engine",
        "",
        f"{len(runs)} runs, seeds 0-{args.seeds - 1}, "
        f"{'settings changed: ' + ', '.join(args.set) if args.set else 'default settings'}, "
        f"{'quick variant, ' if args.quick else ''}{wall / 60:.1f} min on this machine "
        "(2 cores). Regenerate: `python jobs/benchmark_paper.py` (`--quick` for a few minutes).",
        "",
        "| benchmark | algorithm | runs | our per-run MAE | target | paper |",
        "|---|---|---|---|---|---|",
    ]
    for name, sel in summary.groupby("dataset", sort=False):
        write_result(out / f"{name}.md", benchmark_markdown(name, runs, sel, paper))
        bar_plot(sel, paper, name, out / f"{name}.png")
        for algorithm in sel.algorithm.unique():
            these = runs[(runs.benchmark == name) & (runs.algorithm == algorithm)]
            mae = float(np.mean(np.abs(these.alpha - these.actual_alpha)))
            target = TARGETS.get((name, algorithm))
            published = paper_mae(paper, name, algorithm)
            mark = "" if target is None else (" (met)" if mae <= target else " (MISSED)")
            head.append(
                f"| {name} | {algorithm} | {len(these)} | **{mae:.4f}**{mark} | "
                f"{'-' if target is None else f'{target:.3f}'} | "
                f"{'-' if np.isnan(published) else f'{published:.4f}'} |"
            )
    calibration = calibration_outputs(runs, curves, out)
    if calibration:
        write_result(out / "calibration.md", "\n".join(calibration))
    classification = classification_outputs(runs, out)
    if classification:
        write_result(out / "classification.md", "\n".join(classification))
    head += real_data_acceptance(runs, paper)
    head += interval_coverage(runs)
    if left_out:
        head += ["", "Left out (the set cannot hide that many positives):", ""]
        head += [f"- {line}" for line in left_out]
    write_result(out / "summary.md", "\n".join(head))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, fewer settings")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per setting (10)")
    parser.add_argument("--only", nargs="+", default=None, help="benchmark names to run")
    parser.add_argument(
        "--algorithms", nargs="+", default=None, help="algorithms to run (PULSNAR, PULSCAR, AUTO)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "paper")
    parser.add_argument("--scheduler", default=None, help="address of an existing scheduler")
    parser.add_argument("--cluster-config", default=None, help="YAML cluster config")
    parser.add_argument("--n-workers", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=4, help="runs in flight at once")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="OPTION=VALUE",
        help="PUConfig settings to change from the defaults (a variant to compare), e.g. "
        "max_cluster_features=100; values are read as JSON",
    )
    parser.add_argument(
        "--numeric-codes",
        action="store_true",
        help="categorical columns (bank, mushroom) as numeric codes, not categorical",
    )
    args = parser.parse_args()
    config = config_from_settings(args.set, f"--set {' '.join(args.set)}")
    args.seeds = args.seeds or (2 if args.quick else 10)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("pulsnar_dask").setLevel(logging.WARNING)
    logging.getLogger("distributed").setLevel(logging.WARNING)
    chosen = [b for b in benchmarks(args.quick) if not args.only or b.name in args.only]
    if not chosen:
        sys.exit(f"no benchmark named {args.only}")
    tables = {b.name: REAL_SETS[b.name].read(DATA / REAL_SETS[b.name].folder) for b in chosen
              if b.name in REAL_SETS}  # fmt: skip
    feasible, left_out = {}, []
    for b in chosen:
        for s in b.settings:
            try:
                if b.name in tables:
                    REAL_SETS[b.name].construction(*tables[b.name], s, 0)
                feasible[(b.name, s)] = True
            except ValueError as exc:
                left_out.append(f"{b.name} at {s:g}: {exc}")
    tasks = [
        (b, a, s, seed)
        for b in chosen
        for a in b.algorithms
        if not args.algorithms or a in args.algorithms
        for s in b.settings
        if (b.name, s) in feasible
        for seed in range(min(args.seeds, REAL_SEEDS) if b.name in OTHER_REAL else args.seeds)
    ]
    if not tasks:
        asked = " or ".join(args.algorithms or ["any"])
        sys.exit(f"no runs: no feasible setting of the chosen benchmarks with algorithm {asked}")
    # Longest first, so the big runs do not trail at the end.
    tasks.sort(key=lambda t: -(t[2] if t[0].name == "SNAR_large" else 8000 * len(t[0].algorithms)))
    start = time.perf_counter()
    rows, curves = [], {}
    with connect(args.scheduler, args.cluster_config, args.n_workers) as client:
        scattered = {
            name: (client.scatter(table, broadcast=True), table[0].shape[1])
            for name, table in tables.items()
        }
        with ThreadPoolExecutor(args.concurrency) as pool:
            futures = {
                pool.submit(run_one, client, *t, scattered, config, args.numeric_codes): t
                for t in tasks
            }
            for k, future in enumerate(as_completed(futures), 1):
                if future.exception() is not None:  # stop now, not after every other run
                    pool.shutdown(wait=False, cancel_futures=True)
                bench, algorithm, setting, seed = futures[future]
                row, curve = future.result()
                rows.append(row)
                if curve is not None:
                    curves[(bench.name, algorithm, setting)] = curve
                logger.info(
                    "[%d/%d] %s %s %g seed %d: alpha %.4f (true %.4f), %d clusters, %.1f s",
                    k,
                    len(tasks),
                    bench.name,
                    algorithm,
                    setting,
                    seed,
                    row["alpha"],
                    row["actual_alpha"],
                    row["n_clusters"],
                    row["seconds"],
                )
    wall = time.perf_counter() - start
    write_outputs(pd.DataFrame(rows), curves, args.out, wall, args, left_out)
    logger.info("done in %.1f min; results in %s", wall / 60, args.out)


if __name__ == "__main__":
    main()
