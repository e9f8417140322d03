"""Defaults judged out of sample: every family fitted with defaults, recorded once a run.

``fit`` fits the in-memory estimator (``PULSNAR``, ``method="auto"``, defaults) on every
family's PU constructions (the paper's synthetic SCAR and SNAR data, every real table of
:mod:`benchmarks.realdata`, and a SCAR construction of each real SNAR table,
``SCARSUB_*``: all its positive classes hidden at one rate) and appends one JSON line a
run to ``--out``: the true alpha, the reported alpha and interval, the call auto made,
every warning the run logged, and the readings and evidence the package records (what
``table`` needs to apply another setting of a rule to the same fit). Runs already in
``--out`` are skipped, so a stopped job resumes. The package fitted is whichever
``pulsnar_dask`` Python imports: put another checkout first on ``PYTHONPATH`` to record
an earlier commit's defaults on the same runs; each line names its commit.

    python jobs/benchmark_out_of_sample.py fit --seeds 5 6 7 8 9 --out RUNS.jsonl
                                               [--families NAME ...] [--set OPTION=JSON ...]
                                               [--claim-overlaps X ...]

With ``--claim-overlaps``, each run also records under ``clusters`` the clusters'
readings at each ``claim_overlap`` X, read from the same subproblems, with each cluster's
alpha and positives and the pairwise overlaps of their claims (what another combining
rule would read), and every run its mixture's component count.

``table`` applies each setting of a candidate auto's rules (:data:`GRID`: the call's
threshold on the subtype-mix test, its undecided band and what an undecided run reports,
the readers the interval spans) to the candidate's recorded fits, chooses the setting
leave-one-family-out on seeds 0-4 (the one applied to a family is the one with the
least :func:`family_losses` over all the other families), and reports seeds 5-9, which
no choice touches: per family and per family group, the in-sample and the
leave-one-family-out figures side by side, PULSCAR and PULSNAR alone, and an earlier
commit's defaults, as they ran, on the same runs (``--before``: any commit's fits). The
candidate's fits are those of a commit whose auto records its bootstrap in
``method_evidence`` (``readings``, ``bootstrap``, ``mix_z``: commit d2b4397, measured
and not adopted, docs/decisions/2026-12-02-out-of-sample-auto.md). It writes
benchmarks/results/<name>.{md,csv}.

    python jobs/benchmark_out_of_sample.py table --runs RUNS.jsonl [--before RUNS.jsonl]
                                                 [--name out_of_sample]

``defaults`` reports one commit's defaults as they ran, per family and per family
group, on the visible families and, with ``--held-out``, on the held-out panel beside them:
MAE, 95% coverage, width, width of the unwarned runs, confident wrong runs, share warned,
false alarms, share read PULSCAR, and the MAE of each assumption's own reading. It chooses
no setting, so its in-sample and leave-one-family-out figures are the same figure.

    python jobs/benchmark_out_of_sample.py defaults --runs RUNS.jsonl [--held-out RUNS.jsonl]
                                                    [--name defaults]

``claims`` chooses ``claim_overlap`` leave-one-family-out (one setting for both uses of the
clusters' reading, method pulsnar's alpha and auto's interval and warning) from fits that
record the clusters' readings at each setting (``fit --claim-overlaps``), and reports it
on seeds 5-9 beside the default, 0.3.

    python jobs/benchmark_out_of_sample.py claims --tuning RUNS.jsonl --runs RUNS.jsonl
                                                  [--name claim_overlap]

``switch`` judges a rule of the clusters' reading that changes the subproblems, so each
setting is fitted: per setting, a label and its fits of seeds 0-4 and 5-9 (``fit
--claim-overlaps 0.3`` with the rule set so), chosen as ``claims`` chooses (ties to the
setting named first) and reported beside the default's label.

    python jobs/benchmark_out_of_sample.py switch --setting LABEL TUNING RUNS ...
                                                  --default LABEL --name NAME

``overlap`` and ``width`` choose a warning's line leave-one-family-out from the
defaults' fits (:data:`WARNING_LINES`): the overlap line (the implied AUC between labeled
positives and unlabeled negatives below which a run warns that alpha may be high), and
the width line (the 95% interval's width past which a run warns that alpha is
imprecise). Each run is warned as though the line were at each of the warning's lines,
and the choice is reported on seeds 5-9 beside the default.

    python jobs/benchmark_out_of_sample.py overlap|width --tuning RUNS.jsonl --runs RUNS.jsonl
                                                         [--name overlap_line|width_line]

``floor`` chooses, leave-one-family-out from the same fits, how far below its readings the
interval of a run whose classes overlap reaches: its low end kept, halved or taken to 0
where the implied AUC is below each of :data:`FLOOR_LINES`, reported on seeds 5-9 beside
no floor.

    python jobs/benchmark_out_of_sample.py floor --tuning RUNS.jsonl --runs RUNS.jsonl
                                                 [--name overlap_floor]

``reach`` and ``differ`` read the same fits with the package's floor: ``reach`` chooses
how far past the clusters' reading the interval of a run whose two readings differ
reaches (:data:`REACHES`, multiples of their gap), ``differ`` how far apart, in their
combined bootstrap spreads, the two readings must lie for auto to warn that they differ
(:data:`DIFFER_LINES`; never, the last).

    python jobs/benchmark_out_of_sample.py reach|differ --tuning RUNS.jsonl --runs RUNS.jsonl
                                                        [--name clusters_reach|differ_line]

Seeds 0-4 are for choosing settings, seeds 5-9 for the figures reported (DESIGN.md
section 8); no screen may touch 5-9.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import (
    HELD_OUT_SUBTYPE_SETS,
    RESULTS,
    SUBTYPE_SETS,
    build,
    config_from_settings,
    write_result,
)

import pulsnar_dask
import pulsnar_dask.pipeline.finish as finish
from pulsnar_dask import PULSNAR
from pulsnar_dask.core.claims import claim_overlaps
from pulsnar_dask.core.interval import INTERVAL_READERS, Z_95
from pulsnar_dask.core.map_reduce import identity, in_memory
from pulsnar_dask.core.subproblem import piece_overlaps, subproblem_claims
from pulsnar_dask.estimators import CLUSTER_SETTINGS
from pulsnar_dask.pipeline.method_choice import reads_the_clusters
from pulsnar_dask.pipeline.result import OVERLAP_AUC, WIDE_INTERVAL

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
# the held-out panel: tables no setting is chosen on, fitted only to judge a choice
HELD_OUT: dict[str, tuple[str, tuple[float, ...]]] = {
    **{f"SCAR_{s}": ("held-out SCAR", (0.05, 0.3)) for s in ("spambase", "german", "chess")},
    **{f"SCARSUB_{s}": ("held-out SCARSUB", (0.05, 0.3)) for s in HELD_OUT_SUBTYPE_SETS},
    **{f"SNAR_{s}": ("held-out SNAR", (0.05, 0.3)) for s in HELD_OUT_SUBTYPE_SETS},
}
GROUPS = {family: group for family, (group, _) in {**FAMILIES, **HELD_OUT}.items()}


class _ClusterReadings:
    """While a fit runs, the clusters' readings at other ``claim_overlap`` values: each
    setting's interval readings (kernel and tail, with their bootstrap spread), read from
    the same subproblems as the fit's own, and what the setting acts on (each cluster's
    alpha and positives, and the pairwise overlaps of their claims). ``claim_overlap``
    only decides how the clusters' alphas combine, so one fit serves every setting.

    The pipeline's :func:`~pulsnar_dask.core.interval.alpha_interval` is wrapped for the
    fit's duration (in process, where the subproblems' rows are still held).
    """

    def __init__(self, overlaps: tuple[float, ...]) -> None:
        self.overlaps = overlaps
        self.record: dict = {}

    def __enter__(self) -> _ClusterReadings:
        self.original = finish.alpha_interval

        def wrapped(groups, config, seed=0, alphas=(), map_reduce=None):
            interval = self.original(groups, config, seed, alphas, map_reduce)
            clusters = groups.get("pulsnar", ())
            if len(clusters) > 1 and self.overlaps:
                claims = subproblem_claims(clusters)
                (shared,) = (map_reduce or in_memory)(
                    piece_overlaps, identity, [r.pieces for r in clusters], [(claims,)]
                )
                self.record = {
                    "cluster_alphas": [float(r.alpha) for r in clusters],
                    "cluster_positives": [r.counts.count(1) for r in clusters],
                    "claim_overlaps": np.round(claim_overlaps(shared), 4),
                    "by_claim_overlap": {
                        str(x): self.original(
                            {"pulsnar": clusters}, config.with_(claim_overlap=x), seed,
                            (), map_reduce,
                        ).readings
                        for x in self.overlaps
                    },
                }  # fmt: skip
            return interval

        finish.alpha_interval = wrapped
        return self

    def __exit__(self, *exc) -> None:
        finish.alpha_interval = self.original


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


def fit_one(
    family: str,
    fraction: float,
    seed: int,
    commit: str,
    settings: dict | None = None,
    overlap_settings: tuple[float, ...] = (),
) -> dict:
    """One run's record (``error``: the run could not be built); ``settings``: PULSNAR
    parameters other than the defaults, recorded with the run; ``overlap_settings``: the
    clusters' readings at these settings too (:class:`_ClusterReadings`, ``clusters``)."""
    head = {"set": family, "group": GROUPS[family], "frac": fraction, "seed": seed}
    try:
        data, categorical = build(family, fraction, seed)
    except ValueError as exc:  # too few positives to hide that many
        return {**head, "error": str(exc)}
    labels = data.label.astype(int)
    caught = _Warnings()
    logging.getLogger("pulsnar_dask").addHandler(caught)
    start = time.perf_counter()
    try:
        est = PULSNAR(
            random_state=seed, n_jobs=2, categorical_features=categorical, **(settings or {})
        )
        with _ClusterReadings(overlap_settings) as clusters:
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
        **({"settings": settings} if settings else {}),
        **({"clusters": _plain(clusters.record)} if clusters.record else {}),
        **_mixture(est),
    }


def _mixture(est: PULSNAR) -> dict:
    """The components of the mixture a fit chose (before small ones merged)."""
    clustering = getattr(est, "clustering_", None)
    if clustering is None:
        return {}
    return {"mixture_components": int(clustering.mixture_components)}


def fit(
    families: list[str],
    seeds: list[int],
    out: Path,
    settings: dict | None = None,
    overlap_settings: tuple[float, ...] = (),
) -> None:
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            run = json.loads(line)
            done.add((run["set"], run["frac"], run["seed"]))
    commit = _commit()
    with out.open("a") as sink:
        for seed in seeds:
            for family in families:
                for fraction in {**FAMILIES, **HELD_OUT}[family][1]:
                    if (family, fraction, seed) in done:
                        continue
                    run = fit_one(family, fraction, seed, commit, settings, overlap_settings)
                    sink.write(json.dumps(run) + "\n")
                    sink.flush()
                    print(
                        json.dumps(
                            {
                                k: run.get(k)
                                for k in (
                                    "set",
                                    "frac",
                                    "seed",
                                    "true",
                                    "alpha",
                                    "low",
                                    "high",
                                    "method",
                                    "sec",
                                )
                            }
                        ),
                        flush=True,
                    )


TUNING_SEEDS, REPORTED_SEEDS = range(5), range(5, 10)
# the settings each run is read with: auto's threshold on the mix test, the half-width of
# its undecided band, the alpha an undecided run reports (the call's reading, or the
# middle of both) and the readers the interval spans. The overlap warning's line stays
# the package's: no family here has classes that overlap enough to judge it
# (benchmarks/results/overlap.md holds the tables that do).
GRID = {
    "mix_z": (-np.inf, 0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, np.inf),
    "band": (0.0, 1.0, 2.0, 3.0, 5.0, 10.0, np.inf),
    "point": ("call", "middle"),
    "readers": (("kernel",), ("kernel", "tail")),
}
# the warnings that say a run cannot know (the others note the data, not the reading)
HONEST = ("hardly tells", "perfectly separated", "can go unseen")
# what a commit's run warns as it ran: the overlap line, auto's two readings apart, and
# an interval too wide to act on
DIFFER = "cannot tell SCAR from SNAR"
AS_RAN_WARNINGS = (
    *HONEST,
    "overlap (implied AUC",
    DIFFER,
    "alpha is imprecise",
)
CONFIDENT_ERROR = 0.05  # an error past it, outside the interval, with no warning
SMALL_ERROR = 0.02  # a warning on a run closer than this is a false alarm


def _span(readings: dict, assumptions, readers) -> tuple[float, float]:
    kept = [
        (a, sd)
        for name, (a, sd) in readings.items()
        if name.split(" ")[0] in assumptions and name.split(" ")[1] in readers
    ]
    low = min(a - Z_95 * sd for a, sd in kept)
    high = max(a + Z_95 * sd for a, sd in kept)
    return max(low, 0.0), min(high, 1.0)


def _warned_honestly(run: dict) -> bool:
    """Whether the run logged a warning that says it cannot know, or its classes overlap
    past the overlap line."""
    auc = run.get("negative_auc")
    honest = any(any(key in w for key in HONEST) for w in run["warnings"])
    return honest or (auc is not None and auc < OVERLAP_AUC)


def _judged(method: str, alpha: float, low: float, high: float, true: float, warned: bool) -> dict:
    """A reading's figures against the true alpha: its error, coverage, width, interval
    score, and whether it is a confident wrong run or a false alarm."""
    error = abs(alpha - true)
    miss = max(low - true, true - high, 0.0)
    return {
        "method": method,
        "error": error,
        "covered": miss == 0,
        "width": high - low,
        "score": high - low + 2 / 0.05 * miss,
        "warned": warned,
        "confident_wrong": error > CONFIDENT_ERROR and miss > 0 and not warned,
        "false_alarm": warned and error < SMALL_ERROR,
    }


def _read_each(runs: pd.DataFrame, read_one: Callable[[dict], dict]) -> pd.DataFrame:
    """Each run's key columns beside its figures (``read_one(run)``)."""
    reads = pd.DataFrame([read_one(run) for run in runs.to_dict("records")])
    return pd.concat([runs[["set", "group", "frac", "seed"]].reset_index(drop=True), reads], axis=1)


def read_run(run: dict, setting: dict) -> dict:
    """One recorded fit read with one setting: its call, alpha, interval and warning."""
    evidence = run.get("evidence") or {}
    warned = _warned_honestly(run)
    if "bootstrap" in evidence:
        z = evidence["mix_z"] if evidence["mix_z"] is not None else np.inf
        method = "pulsnar" if z > setting["mix_z"] else "pulscar"
        alpha = evidence["readings"][method]
        spans = [method]
        # an infinite band leaves every run undecided, whatever the threshold
        if setting["band"] == np.inf or abs(z - setting["mix_z"]) < setting["band"]:
            other = "pulscar" if method == "pulsnar" else "pulsnar"
            spans.append(other)
            if setting["point"] == "middle":
                alpha = (alpha + evidence["readings"][other]) / 2
            # auto's warning until e884b41
            warned |= _apart(*(evidence["bootstrap"][f"{m} kernel"] for m in spans), Z_95)
        low, high = _span(evidence["bootstrap"], spans, setting["readers"])
    else:  # one cluster: PULSCAR's reading alone
        method, alpha = run["method"], run["alpha"]
        low, high = _span(run["readings"], [method], setting["readers"])
    return _judged(method, alpha, low, high, run["true"], warned)


def settings_grid() -> list[dict]:
    return [dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())]


def family_losses(reads: pd.DataFrame) -> pd.Series:
    """What a setting is chosen by, per family: the mean absolute error, a tenth of the
    mean interval score, a false alarm costing as much as an error of 0.05 and a
    confident wrong run, the worst outcome, five times that. A setting's loss weighs
    every family the same."""
    cost = (
        reads.error
        + 0.1 * reads.score
        + CONFIDENT_ERROR * (5 * reads.confident_wrong.astype(float) + reads.false_alarm)
    )
    return cost.groupby(reads.set).mean()


def read_all(runs: pd.DataFrame, setting: dict) -> pd.DataFrame:
    return _read_each(runs, lambda run: read_run(run, setting))


def choose(runs: pd.DataFrame, grid: list[dict]) -> tuple[dict, dict[str, dict]]:
    """On seeds 0-4: the setting best over all families, and per family the one best
    over the others."""
    tuning = runs[runs.seed.isin(TUNING_SEEDS)].reset_index(drop=True)
    return best_and_lofo(
        _losses({i: read_all(tuning, setting) for i, setting in enumerate(grid)}), grid
    )


def _losses(reads: dict) -> pd.DataFrame:
    """:func:`family_losses` of each setting's reads: a family a row, a setting a column
    (in the order of ``reads``)."""
    return pd.DataFrame({setting: family_losses(r) for setting, r in reads.items()})


def best_and_lofo(losses: pd.DataFrame, settings: list) -> tuple[Any, dict]:
    """The setting whose loss (``losses``: a family a row, ``settings`` the columns in
    order) is least over every family, and per family the one least over the others;
    ties go to the setting listed first."""

    def least(frame: pd.DataFrame) -> Any:
        return settings[int(np.argmin(frame.mean().to_numpy()))]

    return least(losses), {f: least(losses.drop(index=f)) for f in losses.index}


def figures(reads: pd.DataFrame) -> pd.DataFrame:
    unwarned = reads[~reads.warned]
    out = reads.groupby("set", sort=False).agg(
        runs=("error", "size"),
        mae=("error", "mean"),
        coverage=("covered", "mean"),
        width=("width", "mean"),
        confident_wrong=("confident_wrong", "sum"),
        warned=("warned", "mean"),
        false_alarms=("false_alarm", "sum"),
        pulscar=("method", lambda m: float(np.mean(m == "pulscar"))),
    )
    out["unwarned_width"] = unwarned.groupby("set").width.mean()
    return out


def read_as_ran(run: dict) -> dict:
    """One recorded fit as it ran (its alpha, interval and warnings): :func:`read_run`'s
    figures for a commit's own defaults."""
    warned = any(any(key in w for key in AS_RAN_WARNINGS) for w in run["warnings"])
    return _judged(run["method"], run["alpha"], run["low"], run["high"], run["true"], warned)


def read_all_as_ran(runs: pd.DataFrame) -> pd.DataFrame:
    return _read_each(runs, read_as_ran)


def before_figures(before: pd.DataFrame) -> pd.DataFrame:
    """An earlier commit's defaults as they ran (alpha, interval and warnings recorded)."""
    return figures(read_all_as_ran(before))


def _records(path: Path) -> pd.DataFrame:
    runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame([r for r in runs if "error" not in r])


def _tuning_and_reported(tuning_path: Path, report_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tuning seeds' fits of ``tuning_path`` and the reported seeds' of
    ``report_path``, each indexed from 0."""
    tuning = _records(tuning_path)
    reported = _records(report_path)
    return (
        tuning[tuning.seed.isin(TUNING_SEEDS)].reset_index(drop=True),
        reported[reported.seed.isin(REPORTED_SEEDS)].reset_index(drop=True),
    )


def _setting_text(setting: dict) -> str:
    return (
        f"mix_z {setting['mix_z']:g}, band {setting['band']:g} (alpha: "
        f"{setting['point']}), readers {'+'.join(setting['readers'])}"
    )


KEYS = ["set", "frac", "seed"]


def _cells(row: pd.Series, columns: list[tuple[str, str]]) -> str:
    out = []
    for column, form in columns:
        value = row.get(column, np.nan)
        out.append("-" if value != value else format(value, form))
    return " | ".join(out)


COUNTS = (
    "runs",
    "confident_wrong",
    "false_alarms",
    "confident_wrong_before",
    "confident_wrong_dflt",
    "false_alarms_dflt",
    "confident_wrong_base",
    "false_alarms_base",
)


def _markdown_table(
    title: str, rows: pd.DataFrame, columns: list[tuple[str, str]], names: list[str]
) -> list[str]:
    """A Markdown table of ``rows`` (one per index entry, headed ``title``): ``columns``
    as (column, format), headed ``names``; counts as integers; a blank line after it."""
    lines = ["| " + " | ".join([title, *names]) + " |", "|" + "---|" * (len(names) + 1)]
    for key, row in rows.iterrows():
        row = row.astype(object)
        for c in COUNTS:
            if c in row and row[c] == row[c]:
                row[c] = int(row[c])
        lines.append(f"| {key} | {_cells(row, columns)} |")
    return [*lines, ""]


def _grouped(frame: pd.DataFrame) -> pd.DataFrame:
    """Per family group: counts summed over its families, other figures their mean."""
    groups = frame.groupby([GROUPS[f] for f in frame.index], sort=False)
    return groups.agg({c: "sum" if c in COUNTS else "mean" for c in frame.columns})


def table(runs_path: Path, before_path: Path | None, name: str) -> None:
    runs = _records(runs_path)
    runs = runs[runs.set.isin(FAMILIES)].reset_index(drop=True)  # never the held-out panel
    grid = settings_grid()
    best, held_out = choose(runs, grid)
    reported = runs[runs.seed.isin(REPORTED_SEEDS)].reset_index(drop=True)
    inside = read_all(reported, best)
    lofo = pd.concat(
        [read_all(reported[reported.set == f].reset_index(drop=True), held_out[f])
         for f in reported.set.unique()]
    )  # fmt: skip
    frame = figures(inside)[["runs", "mae"]].rename(columns={"mae": "mae_in"})
    frame = frame.join(figures(lofo).drop(columns="runs"))
    always = {}
    for method, z in (("pulscar", np.inf), ("pulsnar", -np.inf)):
        reads = read_all(reported, {**best, "mix_z": z})
        always[method] = figures(reads).mae
        frame[f"mae_{method}"] = always[method]
    seeds = sorted(reported.seed.unique())
    before_text = ""
    if before_path is not None:
        before = _records(before_path)
        before = before[before.seed.isin(REPORTED_SEEDS)]
        shared = before.merge(lofo[KEYS], on=KEYS)
        same = lofo.merge(before[KEYS], on=KEYS)
        frame["mae_lofo_shared"] = figures(same).mae
        frame = frame.join(before_figures(shared).add_suffix("_before"))
        before_text = (
            f" beside commit {', '.join(sorted(before.commit.unique()))}'s defaults on "
            f"{len(shared)} of the same runs (seeds "
            f"{', '.join(map(str, sorted(shared.seed.unique())))})"
        )
    frame.to_csv(RESULTS / f"{name}.csv")
    commits = ", ".join(sorted(runs.commit.unique()))
    tuning = runs[runs.seed.isin(TUNING_SEEDS)]
    command = f"python jobs/benchmark_out_of_sample.py table --runs {runs_path.name}"
    if before_path is not None:
        command += f" --before {before_path.name}"
    lines = [
        "# Defaults out of sample: in sample and leave-one-family-out",
        "",
        f"`{command}`, fits of commit {commits}{before_text}; "
        f"{pd.Timestamp.now(tz='UTC'):%Y-%m-%d}. Settings chosen on seeds "
        f"{', '.join(map(str, sorted(tuning.seed.unique())))} ({len(tuning)} fits), figures "
        f"on seeds {', '.join(map(str, seeds))} ({len(reported)} fits), which no choice "
        f"touched. Chosen on every family (the package's defaults): {_setting_text(best)}.",
        "",
        "Per family: MAE with the setting chosen on every family (`in`) and with the one "
        "chosen on the other families (`lofo`); then, leave-one-family-out: 95% coverage, "
        "mean width, mean width of the unwarned runs, confident wrong runs (error > 0.05, "
        "outside the interval, no warning), share of runs warned, false alarms (warned, "
        "error < 0.02), share read PULSCAR; PULSCAR and PULSNAR alone (MAE); and the "
        "earlier defaults on the runs both have (`lofo` MAE on those runs beside theirs, "
        "their coverage, width and confident wrong runs).",
        "",
    ]
    columns = [
        ("runs", "d"), ("mae_in", ".4f"), ("mae", ".4f"), ("coverage", ".0%"),
        ("width", ".3f"), ("unwarned_width", ".3f"), ("confident_wrong", "d"),
        ("warned", ".0%"), ("false_alarms", "d"), ("pulscar", ".0%"),
        ("mae_pulscar", ".4f"), ("mae_pulsnar", ".4f"),
    ]  # fmt: skip
    names = ["runs", "MAE in", "MAE lofo", "cover", "width", "unwarned width", "conf. wrong",
             "warned", "false alarms", "PULSCAR", "PULSCAR alone", "PULSNAR alone"]  # fmt: skip
    if before_path is not None:
        columns += [("mae_lofo_shared", ".4f"), ("mae_before", ".4f"),
                    ("coverage_before", ".0%"), ("width_before", ".3f"),
                    ("confident_wrong_before", "d")]  # fmt: skip
        names += ["MAE lofo, shared runs", "MAE before", "cover before", "width before",
                  "conf. wrong before"]  # fmt: skip
    for title, rows in (("family", frame), ("group", _grouped(frame))):
        lines += _markdown_table(title, rows, columns, names)
    lines += ["Setting applied to each family (chosen on the others):", ""]
    lines += [f"- {family}: {_setting_text(s)}" for family, s in held_out.items()]
    write_result(RESULTS / f"{name}.md", "\n".join(lines))
    print("\n".join(lines))


# what the held-out panel judges besides the candidate's chosen setting (its readings)
HELD_OUT_READINGS = {
    "PULSCAR alone": {"mix_z": np.inf, "band": 0.0},
    "PULSCAR, spanning PULSNAR where they differ": {"mix_z": np.inf, "band": np.inf},
    "PULSNAR alone": {"mix_z": -np.inf, "band": 0.0},
}


def held_out_losses(reads: pd.DataFrame) -> tuple[pd.Series, float]:
    """Per family :func:`family_losses`, and their mean with every group weighing alike."""
    losses = family_losses(reads)
    by_group = losses.groupby([GROUPS[f] for f in losses.index]).mean()
    return losses, float(by_group.mean())


def confirm(runs_path: Path, held_out_path: Path, as_ran: list[Path], name: str) -> None:
    """Judge on the held-out panel the setting chosen on every family of ``runs_path``
    (seeds 0-4), beside PULSCAR and PULSNAR alone, PULSCAR with an interval that spans
    PULSNAR's readings where they differ (warned), and commits' defaults as they ran
    (``as_ran``: a file of fits each), on the runs of seeds 5-9 that every file holds."""
    visible = _records(runs_path)
    best, _ = choose(visible[visible.set.isin(FAMILIES)].reset_index(drop=True), settings_grid())
    held = _records(held_out_path)
    held = held[held.seed.isin(REPORTED_SEEDS)]
    ran = [_records(path) for path in as_ran]
    for fits in ran:
        held = held.merge(fits[KEYS], on=KEYS)
    ran = [held[KEYS].merge(fits, on=KEYS) for fits in ran]
    configs = {
        **{
            f"defaults of {', '.join(sorted(fits.commit.unique()))}": read_all_as_ran(fits)
            for fits in ran
        },
        f"candidate ({_setting_text(best)})": read_all(held, best),
        **{label: read_all(held, {**best, **s}) for label, s in HELD_OUT_READINGS.items()},
    }
    lines = [
        "# The held-out panel: a choice made on the other families, judged on tables no "
        "setting was chosen on",
        "",
        f"Candidate fits of commit {', '.join(sorted(held.commit.unique()))}, its setting "
        f"chosen on seeds 0-4 of every family of `{runs_path.name}`; {len(held)} runs of "
        f"seeds {', '.join(map(str, sorted(held.seed.unique())))} on "
        f"{held.set.nunique()} held-out families (benchmarks/realdata.py, HELD_OUT_SETS), "
        "each run fitted by every commit named. `loss` is the job's (MAE + 0.1 x interval score "
        "+ 0.05 x false alarms + 0.25 x confident wrong runs); `overall` weighs the three "
        "groups alike.",
        "",
        "| configuration | group | runs | MAE | cover | width | unwarned width | "
        "conf. wrong | warned | false alarms | PULSCAR | loss |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows, per_family = [], {}
    for label, reads in configs.items():
        losses, overall = held_out_losses(reads)
        frame = figures(reads).join(losses.rename("loss"))
        per_family[label] = frame
        grouped = _grouped(frame)
        for group, row in grouped.iterrows():
            lines.append(
                f"| {label} | {group} | {int(row.runs)} | {row.mae:.4f} | {row.coverage:.0%} | "
                f"{row.width:.3f} | {row.unwarned_width:.3f} | {int(row.confident_wrong)} | "
                f"{row.warned:.0%} | {int(row.false_alarms)} | {row.pulscar:.0%} | "
                f"{row.loss:.4f} |"
            )
        rows.append({"configuration": label, "overall_loss": overall})
        lines.append(f"| {label} | overall | {len(reads)} | {reads.error.mean():.4f} | "
                     f"{reads.covered.mean():.0%} | {reads.width.mean():.3f} | - | "
                     f"{int(reads.confident_wrong.sum())} | {reads.warned.mean():.0%} | "
                     f"{int(reads.false_alarm.sum())} | - | {overall:.4f} |")  # fmt: skip
    lines += ["", "Per family, MAE (confident wrong runs):", ""]
    labels = list(per_family)
    lines += ["| family | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for family in per_family[labels[0]].index:
        cells = [
            f"{row.mae:.4f} ({int(row.confident_wrong)})"
            for row in (per_family[k].loc[family] for k in labels)
        ]
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    pd.concat({k: v for k, v in per_family.items()}, names=["configuration", "set"]).to_csv(
        RESULTS / f"{name}.csv"
    )
    write_result(RESULTS / f"{name}.md", "\n".join(lines))
    print("\n".join(lines))


# the clusters' claims counted once where they overlap by more than this share
# (``claim_overlap``): the settings ``fit --claim-overlaps`` records
CLAIM_OVERLAPS = ("0.0", "0.1", "0.2", "0.3", "0.5", "1.0")
DEFAULT_OVERLAP = "0.3"
# what the clusters' reading is for: auto's interval and warning, or method pulsnar's alpha
USES = ("auto", "pulsnar")


def read_claims(run: dict, use: str, overlap: str) -> dict:
    """One instrumented fit read with the clusters' claims combined at ``overlap``
    (``use``: ``auto``, PULSCAR's alpha with the interval spanning the clusters' readings
    too and a warning where the two kernel readings differ beyond their noise;
    ``pulsnar``, the clusters' alpha and interval). A run of one cluster is PULSCAR's. The
    warnings are the run's as auto logged them: the overlap line's, which reads PULSCAR's
    subproblem, counts for both uses. The interval and the warnings then follow the
    package's rules for every method: from 0 below the overlap line, and warned where
    wider than the width line.

    Raises
    ------
    ValueError
        If a run of several clusters did not record their readings (fitted without
        ``--claim-overlaps``).
    """
    warned = _warned_honestly(run)
    recorded = run.get("clusters")  # NaN in a frame's record of one cluster
    clusters = recorded["by_claim_overlap"][overlap] if isinstance(recorded, dict) else None
    if clusters is None and (run.get("evidence") or {}).get("n_clusters", 1) > 1:
        raise ValueError(f"{run['set']} {run['frac']} {run['seed']}: no clusters' readings")
    # the clusters' readings at this setting in place of those the fit ran with
    readings = {**run["readings"], **(clusters or {})}
    kernel = {m: readings.get(f"{m} kernel") for m in ("pulscar", "pulsnar")}
    if clusters is None:
        spans = ["pulscar"]
    elif use == "pulsnar":
        spans = ["pulsnar"]
    else:
        spans = ["pulscar", "pulsnar"]
        warned |= _apart(kernel["pulscar"], kernel["pulsnar"], Z_95)  # auto's, until e884b41
    low, high = _span(readings, spans, INTERVAL_READERS)
    if _negative_auc(run) < OVERLAP_AUC:
        low = 0.0
    warned |= high - low > WIDE_INTERVAL
    return _judged(use, kernel[spans[0]][0], low, high, run["true"], warned)


def _claims_reads(runs: pd.DataFrame, use: str, overlap: str) -> pd.DataFrame:
    return _read_each(runs, lambda run: read_claims(run, use, overlap))


def _seeds(runs: pd.DataFrame) -> str:
    return ", ".join(map(str, sorted(runs.seed.unique())))


def _choose_for_both_uses(
    tuning: dict[str, dict[str, pd.DataFrame]],
    reported: dict[str, dict[str, pd.DataFrame]],
    default: str,
    name: str,
    lines: list[str],
) -> None:
    """One setting of a rule of the clusters' reading chosen for both its uses at once
    (:data:`USES`, their :func:`family_losses` summed, families alike) on the tuning
    seeds, each family's on the other families, and reported on seeds 5-9 beside
    ``default``: the loss per setting, then per use, per group and per family, the
    leave-one-family-out figures beside the default's. ``tuning`` and ``reported`` hold
    per use and per setting (in the order ties go) the runs read so. Writes
    ``name``.{md,csv} with ``lines`` first."""
    losses = {use: _losses(tuning[use]) for use in USES}
    reported_by_use = {use: _losses(reported[use]) for use in USES}
    choice = Chosen.summed(list(losses.values()), list(reported_by_use.values()))
    both, best = choice.tuning_losses, choice.best
    chosen = ", ".join(f"{x}: {n}" for x, n in pd.Series(choice.lofo).value_counts().items())
    lines += [
        f"Best on every family, both uses' losses summed: {best} (per setting: "
        + ", ".join(f"{x} {v:.4f}" for x, v in both.mean().items())
        + f"). Chosen with each family left out: {chosen}.",
        "",
    ]
    # the reported seeds' loss, both uses summed, families alike: each setting, and each
    # family read at the setting chosen on the others
    lines += [
        "Reported seeds, both uses' losses summed: leave-one-family-out "
        f"{choice.applied_loss:.4f}; "
        + ", ".join(f"{x} {v:.4f}" for x, v in choice.reported_losses.mean().items())
        + ".",
        "",
    ]
    frames = []
    for use in USES:
        reads = reported[use]
        frame = figures(choice.applied(reads))  # leave-one-family-out
        frame["mae_in"] = figures(reads[best]).mae
        frame = frame.join(figures(reads[default]).add_suffix("_dflt"))
        frame["chosen"] = [choice.setting_of(f) for f in frame.index]
        columns = [
            ("runs", "d"), ("mae_in", ".4f"), ("mae", ".4f"), ("mae_dflt", ".4f"),
            ("coverage", ".0%"), ("coverage_dflt", ".0%"), ("width", ".3f"),
            ("width_dflt", ".3f"), ("confident_wrong", "d"), ("confident_wrong_dflt", "d"),
            ("warned", ".0%"), ("warned_dflt", ".0%"), ("false_alarms", "d"),
            ("false_alarms_dflt", "d"),
        ]  # fmt: skip
        names = [
            "runs", "MAE in", "MAE lofo", "MAE dflt", "cover lofo", "cover dflt", "width lofo",
            "width dflt", "conf. wrong lofo", "conf. wrong dflt", "warned lofo", "warned dflt",
            "false alarms lofo", "false alarms dflt",
        ]  # fmt: skip
        own = losses[use].mean()
        own_reported = reported_by_use[use].mean()
        lines += [
            f"## The clusters' reading for {'auto' if use == 'auto' else 'method pulsnar'}",
            "",
            "Loss of this use alone per setting, tuning seeds: "
            + ", ".join(f"{x} {v:.4f}" for x, v in own.items())
            + f" (best alone: {own.idxmin()}); reported seeds: "
            + ", ".join(f"{x} {v:.4f}" for x, v in own_reported.items())
            + ".",
            "",
            *_markdown_table("group", _grouped(frame.drop(columns="chosen")), columns, names),
            *_markdown_table("family", frame, [*columns, ("chosen", "s")], [*names, "lofo"]),
        ]
        frames.append(frame.assign(use=use))
    pd.concat(frames).to_csv(RESULTS / f"{name}.csv")
    write_result(RESULTS / f"{name}.md", "\n".join(lines))
    print("\n".join(lines))


def claims(tuning_path: Path, report_path: Path, name: str) -> None:
    """``claim_overlap`` chosen leave-one-family-out on seeds 0-4 of ``tuning_path``, one
    setting for both uses of the clusters' reading (:data:`USES`, their losses summed),
    and reported for each use on seeds 5-9 of ``report_path`` beside the default (both
    files: ``fit --claim-overlaps``, every family of both panels)."""
    tuning, reported = _tuning_and_reported(tuning_path, report_path)
    command = (
        f"python jobs/benchmark_out_of_sample.py claims --tuning {tuning_path.name} "
        f"--runs {report_path.name}"
    )
    lines = [
        "# Claims counted once: `claim_overlap` chosen out of sample",
        "",
        f"`{command}`: fits of commit {', '.join(sorted(tuning.commit.unique()))} (tuning) "
        f"and {', '.join(sorted(reported.commit.unique()))} (reported), every "
        "family of the visible and the held-out panel, each fit reading the clusters' claims "
        f"at every setting ({', '.join(CLAIM_OVERLAPS)}). Chosen on seeds "
        f"{_seeds(tuning)} ({len(tuning)} runs) by the "
        "job's loss, families alike; the setting applied to a family is the one best on the "
        f"others (`lofo`); figures on seeds {_seeds(reported)}"
        f" ({len(reported)} runs), beside the default {DEFAULT_OVERLAP} (`dflt`).",
        "",
    ]

    def reads_of(runs: pd.DataFrame) -> dict[str, dict[str, pd.DataFrame]]:
        return {use: {x: _claims_reads(runs, use, x) for x in CLAIM_OVERLAPS} for use in USES}

    _choose_for_both_uses(reads_of(tuning), reads_of(reported), DEFAULT_OVERLAP, name, lines)


def switch(settings: list[list[str]], default: str, name: str) -> None:
    """A rule of the clusters' reading judged by refitting: each setting (``[label,
    tuning fits, reported fits]``, files of ``fit --claim-overlaps 0.3`` with the rule
    set so, ties going to the setting named first) read at the default ``claim_overlap``
    on the runs every setting's fits hold, chosen for both uses as :func:`claims`
    chooses, and reported beside ``default``."""
    fits = {label: (_records(Path(t)), _records(Path(r))) for label, t, r in settings}
    kept = []
    for i, seeds in enumerate((TUNING_SEEDS, REPORTED_SEEDS)):
        keys = None
        for both in fits.values():
            own = both[i][both[i].seed.isin(seeds)][KEYS]
            keys = own if keys is None else keys.merge(own, on=KEYS)
        kept.append(keys)
    runs = {
        label: [kept[i].merge(both[i], on=KEYS) for i in range(2)] for label, both in fits.items()
    }

    def reads_of(i: int) -> dict[str, dict[str, pd.DataFrame]]:
        return {
            use: {
                label: _claims_reads(both[i], use, DEFAULT_OVERLAP) for label, both in runs.items()
            }
            for use in USES
        }

    tuning, reported = kept
    command = "python jobs/benchmark_out_of_sample.py switch " + " ".join(
        f"--setting {label} {Path(t).name} {Path(r).name}" for label, t, r in settings
    )
    commits = {
        label: ", ".join(sorted(pd.concat(both).commit.dropna().unique()))
        for label, both in runs.items()
    }
    lines = [
        f"# `{name}` judged out of sample: each setting fitted on the same runs",
        "",
        f"`{command} --default {default} --name {name}`: "
        + "; ".join(f"{label}, fits of commit {c}" for label, c in commits.items())
        + ". Every family of the visible and the held-out panel present in every setting's "
        f"fits, the clusters' claims counted once past {DEFAULT_OVERLAP}. Chosen on seeds "
        f"{_seeds(tuning)} ({len(tuning)} runs) by the job's loss, families alike, ties to "
        "the setting named first; the setting applied to a family is the one best on the "
        f"others (`lofo`); figures on seeds {_seeds(reported)} ({len(reported)} runs), "
        f"beside the default, {default} (`dflt`).",
        "",
    ]
    _choose_for_both_uses(reads_of(0), reads_of(1), default, name, lines)


@dataclass(frozen=True)
class WarningLine:
    """A warning a run gives past a line on one of its figures, re-read from the recorded
    fits as though the line were elsewhere.

    Attributes
    ----------
    key : str
        A fragment of the warning's text (one of :data:`AS_RAN_WARNINGS`).
    default : float
        The package's line.
    lines : tuple of float
        The lines screened, the one that warns least first (ties go to it): the first
        warns no run.
    what : str
        What the line is, for the results' text.
    statistic : str
        The run's figure the line is drawn on, shown per family (its median).
    figure : callable
        A run's figure (NaN: not checked).
    past : callable
        Whether a figure is past a line.
    """

    key: str
    default: float
    lines: tuple[float, ...]
    what: str
    statistic: str
    figure: Callable[[dict], float]
    past: Callable[[float, float], bool]

    def warns(self, run: dict, line: float) -> bool:
        figure = self.figure(run)
        return figure == figure and self.past(figure, line)  # NaN: not checked


def _negative_auc(run: dict) -> float:
    auc = run.get("negative_auc")
    return np.nan if auc is None else float(auc)


# the warning lines the job screens: the overlap line (OVERLAP_AUC) and the width past
# which an interval is too wide to act on (WIDE_INTERVAL)
WARNING_LINES = {
    "overlap": WarningLine(
        key="overlap (implied AUC",
        default=OVERLAP_AUC,
        lines=(0.0, 0.75, 0.8, 0.825, 0.85, 0.875, 0.9, 0.925, 0.95),
        what="the overlap line (the implied AUC between labeled positives and unlabeled "
        "negatives below which a run warns)",
        statistic="median implied AUC",
        figure=_negative_auc,
        past=lambda auc, line: auc < line,
    ),
    "width": WarningLine(
        key="alpha is imprecise",
        default=WIDE_INTERVAL,
        lines=(np.inf, 0.6, 0.5, 0.4, 0.35, 0.3, 0.25, 0.2, 0.175, 0.15, 0.125, 0.1),
        what="the width line (the width of the 95% interval past which a run warns that "
        "alpha is imprecise)",
        statistic="median width",
        figure=lambda run: run["high"] - run["low"],
        past=lambda width, line: width > line,
    ),
}


@dataclass(frozen=True)
class Chosen:
    """A setting chosen leave-one-family-out on the tuning seeds, applied to the reported
    ones.

    Attributes
    ----------
    tuning_losses, reported_losses : DataFrame
        :func:`family_losses` (summed over the uses chosen for at once), a family a row, a
        setting a column.
    best : Any
        The setting best over every family (on a tie, the first listed).
    lofo : dict
        Family -> the setting best over the other families.
    """

    tuning_losses: pd.DataFrame
    reported_losses: pd.DataFrame
    best: Any
    lofo: dict

    @classmethod
    def of(cls, tuning_reads: dict, reported_reads: dict) -> Chosen:
        """From each setting's reads of the tuning and of the reported runs."""
        return cls.summed([_losses(tuning_reads)], [_losses(reported_reads)])

    @classmethod
    def summed(
        cls, tuning_losses: list[pd.DataFrame], reported_losses: list[pd.DataFrame]
    ) -> Chosen:
        """One setting for several uses at once, their losses summed: from each use's
        :func:`_losses` (the same settings, in the same order), of the tuning and of the
        reported runs."""
        tuning, reported = sum(tuning_losses), sum(reported_losses)
        return cls(tuning, reported, *best_and_lofo(tuning, list(tuning.columns)))

    def setting_of(self, family: str) -> Any:
        """The setting applied to ``family``: the one chosen on the others (the best
        over every family for one the tuning runs lack)."""
        return self.lofo.get(family, self.best)

    def applied(self, reported_reads: dict) -> pd.DataFrame:
        """The reported runs, each family's read with :meth:`setting_of` (the families in
        the order of :attr:`reported_losses`)."""
        sets = reported_reads[self.best].set
        return pd.concat(
            [reported_reads[self.setting_of(f)][sets == f] for f in self.reported_losses.index]
        )

    @property
    def applied_loss(self) -> float:
        """The reported runs' loss, each family's at :meth:`setting_of`, families alike."""
        losses = self.reported_losses
        return float(np.mean([losses.at[f, self.setting_of(f)] for f in losses.index]))


def read_warning_line(run: dict, warning: WarningLine, line: float) -> dict:
    """One recorded fit as it ran, warned as though ``warning``'s line were at ``line``:
    where it logged another warning that says it cannot know, or where its figure is past
    ``line``."""
    others = [w for w in run["warnings"] if warning.key not in w]
    warned = any(any(key in w for key in AS_RAN_WARNINGS) for w in others)
    warned |= warning.warns(run, line)
    return _judged(run["method"], run["alpha"], run["low"], run["high"], run["true"], warned)


def _ran_at(runs: pd.DataFrame, warning: WarningLine) -> list[float]:
    """The lines at which every run of a commit's fits is warned as it ran (a commit
    before the warning: the first, no line).

    Raises
    ------
    SystemExit
        Where no line reads the runs as they ran.
    """
    as_ran = read_all_as_ran(runs).warned
    matching = [
        x
        for x in warning.lines
        if (
            as_ran == _read_each(runs, lambda r, x=x: read_warning_line(r, warning, x)).warned
        ).all()
    ]
    if not matching:
        raise SystemExit(
            f"no line of {warning.lines} reads {', '.join(runs.commit.unique())} as ran"
        )
    return matching


def warning_line(command: str, tuning_path: Path, report_path: Path, name: str) -> None:
    """A warning's line chosen leave-one-family-out on seeds 0-4 of ``tuning_path`` and
    reported on seeds 5-9 of ``report_path`` beside the default (both files: the
    defaults' fits of every family of both panels).

    Raises
    ------
    SystemExit
        Where no line reads a file's runs as they ran.
    """
    warning = WARNING_LINES[command]
    tuning, reported = _tuning_and_reported(tuning_path, report_path)
    ran_at = {
        label: "/".join(f"{x:g}" for x in _ran_at(runs, warning))
        for label, runs in (("tuning", tuning), ("reported", reported))
    }

    def reads_of(runs: pd.DataFrame) -> dict[float, pd.DataFrame]:
        return {
            x: _read_each(runs, lambda run, x=x: read_warning_line(run, warning, x))
            for x in warning.lines
        }

    reported_reads = reads_of(reported)
    choice = Chosen.of(reads_of(tuning), reported_reads)
    tuning_losses, reported_losses = choice.tuning_losses, choice.reported_losses
    lofo = choice.lofo
    chosen = ", ".join(f"{x:g}: {n}" for x, n in pd.Series(lofo).value_counts().items())
    settings = ", ".join(f"{x:g}" for x in warning.lines)
    command_line = (
        f"python jobs/benchmark_out_of_sample.py {command} --tuning {tuning_path.name} "
        f"--runs {report_path.name}"
    )
    lines = [
        f"# The {command} line chosen out of sample",
        "",
        f"`{command_line}`: fits of commit {', '.join(sorted(tuning.commit.unique()))} "
        f"(tuning; as they ran, the line at {ran_at['tuning']}) and "
        f"{', '.join(sorted(reported.commit.unique()))} (reported; the line at "
        f"{ran_at['reported']}), every family of the visible and the held-out panel, the "
        f"defaults as they ran, each run warned as though {warning.what} were at each of "
        f"{settings} ({warning.lines[0]:g}: no line). Chosen on seeds "
        f"{', '.join(map(str, sorted(tuning.seed.unique())))} ({len(tuning)} runs) by the "
        "job's loss, families alike, ties to the line that warns least; the line applied to "
        "a family is the one best on the others (`lofo`); figures on seeds "
        f"{', '.join(map(str, sorted(reported.seed.unique())))} ({len(reported)} runs), "
        f"beside the default {warning.default:g} (`dflt`). Only the confident wrong runs and "
        "the false alarms move with the line.",
        "",
        f"Best on every family: {choice.best:g}. Chosen with each family left out: {chosen}. "
        f"Reported seeds, leave-one-family-out: {choice.applied_loss:.4f}.",
        "",
        "| line | loss, tuning seeds | loss, reported seeds | warned, reported | "
        "confident wrong, reported | false alarms, reported |",
        "|---|---|---|---|---|---|",
    ]
    for x in warning.lines:
        reads = reported_reads[x]
        lines.append(
            f"| {x:g} | {tuning_losses[x].mean():.4f} | {reported_losses[x].mean():.4f} | "
            f"{reads.warned.mean():.0%} | {int(reads.confident_wrong.sum())} | "
            f"{int(reads.false_alarm.sum())} |"
        )
    frame = figures(choice.applied(reported_reads))
    frame = frame.join(figures(reported_reads[warning.default]).add_suffix("_dflt"))
    frame["statistic"] = reported.apply(warning.figure, axis=1).groupby(reported.set).median()
    frame["chosen"] = [choice.setting_of(f) for f in frame.index]
    columns = [
        ("runs", "d"), ("mae", ".4f"), ("coverage", ".0%"), ("unwarned_width", ".3f"),
        ("unwarned_width_dflt", ".3f"), ("confident_wrong", "d"),
        ("confident_wrong_dflt", "d"), ("warned", ".0%"), ("warned_dflt", ".0%"),
        ("false_alarms", "d"), ("false_alarms_dflt", "d"),
    ]  # fmt: skip
    names = [
        "runs", "MAE", "cover", "unwarned width lofo", "unwarned width dflt",
        "conf. wrong lofo", "conf. wrong dflt", "warned lofo", "warned dflt",
        "false alarms lofo", "false alarms dflt",
    ]  # fmt: skip
    lines += [
        "",
        *_markdown_table("group", _grouped(frame.drop(columns=["statistic", "chosen"])),
                         columns, names),
        *_markdown_table("family", frame,
                         [*columns, ("statistic", ".3f"), ("chosen", "g")],
                         [*names, warning.statistic, "lofo line"]),
    ]  # fmt: skip
    frame.to_csv(RESULTS / f"{name}.csv")
    write_result(RESULTS / f"{name}.md", "\n".join(lines))
    print("\n".join(lines))


# the interval's low end read from 0 (``floor`` 0) or at a share of itself where a run's
# implied AUC between labeled positives and unlabeled negatives is below ``line``
FLOOR_LINES = (0.8, 0.85, 0.9, 0.925, 0.95)
FLOORS = (0.5, 0.0)
# how far past the clusters' reading the interval of a run whose two readings differ
# reaches, in multiples of the gap between the readings
REACHES = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
# how far apart auto's two readings must lie, in their combined bootstrap spreads, for
# the run to warn that they differ (inf: never), the line that warns least first
DIFFER_LINES = (np.inf, 16.0, 12.0, 8.0, 6.0, 4.0, 3.0, Z_95)


def _unfloored_low(run: dict) -> float:
    """The interval's low end as the readings give it, before any floor: the lowest
    reading less 1.96 of its bootstrap spreads (:func:`_span` over every reading)."""
    return _span(run["readings"], ("pulscar", "pulsnar"), INTERVAL_READERS)[0]


def _unreached_high(run: dict) -> float:
    """The interval's high end as the readings give it: the highest reading plus 1.96 of
    its bootstrap spreads."""
    return _span(run["readings"], ("pulscar", "pulsnar"), INTERVAL_READERS)[1]


@dataclass(frozen=True)
class IntervalRule:
    """How a recorded fit's interval is read again: its low end multiplied by ``floor``
    where the implied AUC is below ``line``; where auto's two readings lie more than 1.96
    of their combined bootstrap spreads apart, its end on the clusters' side moved
    ``reach`` times their gap further out; and a warning that the two readings differ
    where they lie more than ``differ`` spreads apart (``inf``: never, as the package
    since e884b41; 1.96 before)."""

    line: float = 0.0
    floor: float = 1.0
    reach: float = 0.0
    differ: float = np.inf


def read_interval(run: dict, rule: IntervalRule) -> dict:
    """One recorded fit, its interval read with ``rule``; warned where it logged a warning
    of :data:`AS_RAN_WARNINGS` or where the interval so read is wider than the package's
    width line."""
    low, high, warned = _interval_by(run, rule)
    return _judged(run["method"], run["alpha"], low, high, run["true"], warned)


def _interval_by(run: dict, rule: IntervalRule) -> tuple[float, float, bool]:
    """:func:`read_interval`'s interval and whether the run is warned."""
    low, high = _unfloored_low(run), _unreached_high(run)
    if _negative_auc(run) < rule.line:  # NaN: not checked, never below
        low *= rule.floor
    if _readings_apart(run, Z_95):
        gap = _kernel(run, "pulsnar")[0] - _kernel(run, "pulscar")[0]
        if gap > 0:
            high = min(high + rule.reach * gap, 1.0)
        else:
            low = max(low + rule.reach * gap, 0.0)
    others = [w for w in run["warnings"] if DIFFER not in w]
    warned = any(any(key in w for key in AS_RAN_WARNINGS) for w in others)
    warned |= high - low > WIDE_INTERVAL or _readings_apart(run, rule.differ)
    return low, high, warned


def _kernel(run: dict, assumption: str) -> tuple[float, float]:
    """An assumption's kernel reading and its bootstrap spread, as the run recorded them."""
    a, sd = run["readings"][f"{assumption} kernel"]
    return float(a), float(sd)


def _apart(first: tuple[float, float], second: tuple[float, float], z: float) -> bool:
    """Whether two readings, each ``(alpha, bootstrap sd)``, lie more than ``z`` of their
    combined spreads apart (never for ``z`` infinite)."""
    (a, sd_a), (b, sd_b) = first, second
    return bool(abs(a - b) > z * float(np.hypot(sd_a, sd_b)))


def _readings_apart(run: dict, z: float) -> bool:
    """:func:`_apart` of auto's two kernel readings (False for one cluster, a single
    reading)."""
    if "pulsnar kernel" not in run["readings"]:
        return False
    return _apart(_kernel(run, "pulscar"), _kernel(run, "pulsnar"), z)


@dataclass(frozen=True)
class IntervalScreen:
    """A rule of the interval screened on recorded fits (:func:`interval_screen`).

    Attributes
    ----------
    command : str
        The job's subcommand.
    title : str
        The results' heading.
    what : str
        How each run's interval is read, for the results' text.
    rules : dict
        Label -> rule, in the order ties go (to the first listed).
    baseline : str
        The rule the choice is reported beside (the package's as the fits ran).
    """

    command: str
    title: str
    what: str
    rules: dict[str, IntervalRule]
    baseline: str = "none"


def _floor_label(line: float, floor: float) -> str:
    return "none" if line == 0 else f"below {line:g}: low x {floor:g}"


SCREENS = {
    "floor": IntervalScreen(
        command="floor",
        title="The interval's low end where the classes overlap, chosen out of sample",
        what="each run's interval read with its low end (the lowest reading less 1.96 of "
        "its bootstrap spreads) multiplied by a floor where the implied AUC between labeled "
        "positives and unlabeled negatives is below a line",
        rules={
            _floor_label(line, floor): IntervalRule(line, floor)
            for line, floor in [(0.0, 1.0), *itertools.product(FLOOR_LINES, FLOORS)]
        },
    ),
    "reach": IntervalScreen(
        command="reach",
        title="How far past the clusters' reading the interval reaches, chosen out of sample",
        what=f"each run's interval read from 0 where the implied AUC is below {OVERLAP_AUC:g} "
        "(the package's floor) and, where auto's two readings lie more than 1.96 of their "
        "combined bootstrap spreads apart, with its end on the clusters' side moved a "
        "multiple of the gap between the two readings further out",
        rules={
            "none" if k == 0 else f"{k:g} x the gap": IntervalRule(OVERLAP_AUC, 0.0, k, Z_95)
            for k in REACHES
        },
    ),
    "differ": IntervalScreen(
        command="differ",
        title="Where auto warns that its two readings differ, chosen out of sample",
        what=f"each run's interval read from 0 where the implied AUC is below {OVERLAP_AUC:g} "
        "(the package's floor), with a warning that PULSCAR's and the clusters' readings "
        "differ given where they lie more than a line of their combined bootstrap spreads "
        "apart (`never`: no such warning, the package since e884b41; 1.96: auto's line "
        "before)",
        rules={
            ("1.96" if z == Z_95 else "never" if z == np.inf else f"{z:g}"): IntervalRule(
                OVERLAP_AUC, 0.0, 0.0, z
            )
            for z in DIFFER_LINES
        },
        baseline="1.96",
    ),
}


def interval_screen(
    screen: IntervalScreen, tuning_path: Path, report_path: Path, name: str
) -> None:
    """A rule of the interval chosen leave-one-family-out on seeds 0-4 of ``tuning_path``
    among ``screen.rules``, reported on seeds 5-9 of ``report_path`` beside
    ``screen.baseline``.

    Raises
    ------
    SystemExit
        Where a run's interval, read from its readings, is not the one it recorded (a
        commit whose interval is not the span of its readings, or already floored).
    """
    tuning, reported = _tuning_and_reported(tuning_path, report_path)
    for runs in (tuning, reported):
        records = runs.to_dict("records")
        spans = np.array([[_unfloored_low(r), _unreached_high(r)] for r in records])
        floored = np.array([_negative_auc(r) < OVERLAP_AUC for r in records])  # since 2e5e2e6
        lows = runs.low.to_numpy()
        as_read = np.isclose(spans[:, 0], lows, atol=1e-9) | (floored & (lows == 0))
        if not (as_read.all() and np.allclose(spans[:, 1], runs.high, atol=1e-9)):
            raise SystemExit("a run's interval is not the span of its readings")
    baseline = screen.baseline

    def reads_of(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
        return {
            label: _read_each(runs, lambda run, rule=rule: read_interval(run, rule))
            for label, rule in screen.rules.items()
        }

    reported_reads = reads_of(reported)
    choice = Chosen.of(reads_of(tuning), reported_reads)
    chosen = ", ".join(f"{x}: {n}" for x, n in pd.Series(choice.lofo).value_counts().items())
    command = (
        f"python jobs/benchmark_out_of_sample.py {screen.command} --tuning {tuning_path.name} "
        f"--runs {report_path.name}"
    )
    lines = [
        f"# {screen.title}",
        "",
        f"`{command}`: fits of commit {', '.join(sorted(tuning.commit.unique()))} (tuning) "
        f"and {', '.join(sorted(reported.commit.unique()))} (reported), every family of the "
        f"visible and the held-out panel, the defaults as they ran, {screen.what}, and "
        "warned where it logged a warning or where the interval so read is wider than "
        f"{WIDE_INTERVAL:g}. Chosen on seeds "
        f"{', '.join(map(str, sorted(tuning.seed.unique())))} ({len(tuning)} runs) by the "
        "job's loss, families alike, ties to the setting listed first; the setting applied "
        "to a family is the one best on the others (`lofo`); figures on seeds "
        f"{', '.join(map(str, sorted(reported.seed.unique())))} ({len(reported)} runs), "
        f"beside `{baseline}`. No alpha moves.",
        "",
        f"Best on every family: {choice.best}. Chosen with each family left out: {chosen}. "
        f"Reported seeds, leave-one-family-out: {choice.applied_loss:.4f}.",
        "",
        "| setting | loss, tuning seeds | loss, reported seeds | coverage, reported | "
        "mean width, reported | confident wrong, reported |",
        "|---|---|---|---|---|---|",
    ]
    for x in screen.rules:
        reads = reported_reads[x]
        lines.append(
            f"| {x} | {choice.tuning_losses[x].mean():.4f} | "
            f"{choice.reported_losses[x].mean():.4f} | {reads.covered.mean():.0%} | "
            f"{reads.width.mean():.3f} | {int(reads.confident_wrong.sum())} |"
        )
    frame = figures(choice.applied(reported_reads)).join(
        figures(reported_reads[baseline]).add_suffix("_base")
    )
    frame["chosen"] = [choice.setting_of(f) for f in frame.index]
    columns, names = [("runs", "d"), ("mae", ".4f")], ["runs", "MAE"]
    for column, form, named in (
        ("coverage", ".0%", "cover"), ("width", ".3f", "width"),
        ("unwarned_width", ".3f", "unwarned width"), ("confident_wrong", "d", "conf. wrong"),
        ("warned", ".0%", "warned"), ("false_alarms", "d", "false alarms"),
    ):  # fmt: skip
        columns += [(column, form), (f"{column}_base", form)]
        names += [f"{named} lofo", f"{named} {baseline}"]
    lines += [
        "",
        *_markdown_table("group", _grouped(frame.drop(columns=["chosen"])), columns, names),
        *_markdown_table("family", frame, [*columns, ("chosen", "s")], [*names, "lofo"]),
    ]
    frame.to_csv(RESULTS / f"{name}.csv")
    write_result(RESULTS / f"{name}.md", "\n".join(lines))
    print("\n".join(lines))


# how far the clusters' tail reading must lie above PULSCAR's alpha, in their combined
# bootstrap spreads, for auto to read the clusters' alpha (inf: never, auto until this
# rule), the line that reads the clusters least often first
PAST_LINES = (np.inf, 8.0, 5.0, 4.0, 3.0, 2.5, 2.0, 1.5, 1.0)
# the package's interval and warnings, which the line does not move
AS_AUTO_RUNS = IntervalRule(OVERLAP_AUC, 0.0, 0.0, np.inf)


def read_past(run: dict, line: float) -> dict:
    """One recorded fit of auto before it read the clusters' alpha (by the kernel reader),
    read as though it did where the package's rule (:func:`reads_the_clusters`) says so at
    ``line``; the interval and warnings as the package gives them (:data:`AS_AUTO_RUNS`)."""
    low, high, warned = _interval_by(run, AS_AUTO_RUNS)
    several = "pulsnar tail" in run["readings"]  # one cluster: PULSCAR's reading alone
    if several and reads_the_clusters(run["readings"], "kernel", line):
        return _judged("pulsnar", _kernel(run, "pulsnar")[0], low, high, run["true"], warned)
    return _judged(run["method"], run["alpha"], low, high, run["true"], warned)


def _line_label(line: float) -> str:
    return "never" if line == np.inf else f"{line:g}"


def past_screen(tuning_path: Path, report_path: Path, fresh_path: Path | None, name: str) -> None:
    """The line of :func:`read_past` chosen leave-one-family-out on seeds 0-4 of
    ``tuning_path``, reported on seeds 5-9 of ``report_path`` and on the seeds past 9 of
    ``fresh_path`` (fits no screen read before the line was chosen), beside ``never``.

    Raises
    ------
    SystemExit
        Where a run read at ``never`` does not give the alpha it recorded (fits of a
        commit whose auto already reads the clusters' alpha).
    """
    tuning, reported = _tuning_and_reported(tuning_path, report_path)
    fresh = pd.DataFrame()
    if fresh_path is not None:
        fresh = _records(fresh_path)
        fresh = fresh[fresh.seed > max(REPORTED_SEEDS)].reset_index(drop=True)
    runs_of = {"tuning": tuning, "reported": reported, "fresh": fresh}
    reads = {
        which: {
            _line_label(x): _read_each(runs, lambda run, x=x: read_past(run, x)) for x in PAST_LINES
        }
        for which, runs in runs_of.items()
        if len(runs)
    }
    for which, runs in runs_of.items():
        if len(runs) and not np.allclose(
            reads[which]["never"].error, (runs.alpha - runs.true).abs(), atol=1e-12
        ):
            raise SystemExit(f"the {which} fits' auto already reads the clusters' alpha")
    choice = Chosen.of(reads["tuning"], reads["reported"])
    chosen = ", ".join(f"{x}: {n}" for x, n in pd.Series(choice.lofo).value_counts().items())
    command = (
        f"python jobs/benchmark_out_of_sample.py past --tuning {tuning_path.name} "
        f"--runs {report_path.name}" + (f" --fresh {fresh_path.name}" if len(fresh) else "")
    )

    def commits(runs: pd.DataFrame) -> str:
        return ", ".join(sorted(runs.commit.unique()))

    def seeds(runs: pd.DataFrame) -> str:
        return f"seeds {_seeds(runs)} ({len(runs)} runs)"

    lines = [
        "# Where auto reads the clusters' alpha, chosen out of sample",
        "",
        f"`{command}`: fits of auto as it ran before it read the clusters' alpha, every "
        "family of the visible and the held-out panel: commit "
        f"{commits(tuning)} on {seeds(tuning)} to choose, {commits(reported)} on "
        f"{seeds(reported)} to report"
        + (
            f", and {commits(fresh)} on {seeds(fresh)}, fitted after the line was chosen"
            if len(fresh)
            else ""
        )
        + ". Each run is read as though auto took the clusters' alpha (their kernel "
        "reading) where their tail reading lies more than a line of its and PULSCAR's "
        "combined bootstrap spreads above PULSCAR's alpha (`never`: auto as it ran); the "
        "interval and warnings as the package gives them, which the line does not move. "
        "Chosen by the job's loss, families alike, ties to the line listed first; the line "
        "applied to a family is the one best on the others (`lofo`).",
        "",
        f"Best on every family: {choice.best}. Chosen with each family left out: {chosen}. "
        f"Reported seeds, leave-one-family-out: {choice.applied_loss:.4f} (`never`: "
        f"{choice.reported_losses['never'].mean():.4f}).",
        "",
        "| line | loss, tuning | loss, reported | clusters read, SCAR tables (reported) | "
        "clusters read, SNAR tables (reported) |"
        + (" loss, fresh | MAE, fresh |" if "fresh" in reads else ""),
        "|---|---|---|---|---|" + ("---|---|" if "fresh" in reads else ""),
    ]

    def share_read(frame: pd.DataFrame, snar: bool) -> float:
        on = frame.group.str.contains("SNAR") == snar
        return float(np.mean(frame.method[on] == "pulsnar"))

    for x in map(_line_label, PAST_LINES):
        row = (
            f"| {x} | {choice.tuning_losses[x].mean():.4f} | "
            f"{choice.reported_losses[x].mean():.4f} | "
            f"{share_read(reads['reported'][x], False):.0%} | "
            f"{share_read(reads['reported'][x], True):.0%} |"
        )
        if "fresh" in reads:
            fresh_reads = reads["fresh"][x]
            row += (
                f" {family_losses(fresh_reads).mean():.4f} | "
                f"{fresh_reads.groupby('set').error.mean().mean():.4f} |"
            )
        lines.append(row)
    columns, names = [("runs", "d")], ["runs"]
    for column, form, named in (
        ("mae", ".4f", "MAE"), ("pulscar", ".0%", "PULSCAR kept"),
        ("coverage", ".0%", "cover"), ("confident_wrong", "d", "conf. wrong"),
    ):  # fmt: skip
        columns += [(column, form), (f"{column}_base", form)]
        names += [f"{named} lofo", f"{named} never"]
    frame = figures(choice.applied(reads["reported"])).join(
        figures(reads["reported"]["never"]).add_suffix("_base")
    )
    frame["chosen"] = [choice.setting_of(f) for f in frame.index]
    lines += [
        "",
        f"Reported seeds ({_seeds(reported)}), each family at its leave-one-family-out line:",
        "",
        *_markdown_table("group", _grouped(frame.drop(columns=["chosen"])), columns, names),
        *_markdown_table("family", frame, [*columns, ("chosen", "s")], [*names, "lofo"]),
    ]
    if "fresh" in reads:
        pooled = {x: pd.concat([r[x] for r in reads.values()]) for x in reads["tuning"]}
        every = Chosen.of(pooled, pooled)
        every_chosen = pd.Series(every.lofo).value_counts()
        lines += [
            "Every seed above pooled (the fresh seeds no longer unseen), each family left "
            f"out in turn: best on every family {every.best}; chosen with each family left "
            f"out: {', '.join(f'{x}: {n}' for x, n in every_chosen.items())}; loss "
            f"{every.applied_loss:.4f} (`never`: {every.reported_losses['never'].mean():.4f}).",
            "",
        ]
        best = choice.best
        fresh_frame = figures(reads["fresh"][best]).join(
            figures(reads["fresh"]["never"]).add_suffix("_base")
        )
        lines += [
            f"Fresh seeds ({_seeds(fresh)}) at the line best on every family ({best}), "
            "which the package takes:",
            "",
            *_markdown_table(
                "group", _grouped(fresh_frame), columns, [n.replace("lofo", best) for n in names]
            ),
        ]
        frame = frame.join(fresh_frame.add_prefix("fresh_"))
    frame.to_csv(RESULTS / f"{name}.csv")
    write_result(RESULTS / f"{name}.md", "\n".join(lines))
    print("\n".join(lines))


def _own_reading(run: dict, assumption: str) -> float:
    """An assumption's kernel reading as the run recorded it: PULSNAR's is PULSCAR's
    alpha where one cluster was found; NaN where the run did not read it (a commit
    before 5752f15, whose auto read one assumption)."""
    reading = run["readings"].get(f"{assumption} kernel")
    if reading is not None:
        return float(reading[0])
    return run["alpha"] if assumption == "pulsnar" and run["n_clusters"] == 1 else np.nan


def defaults(runs_path: Path, held_out_path: Path | None, name: str) -> None:
    """One commit's defaults as they ran, on seeds 5-9: per family, per group."""
    paths = [runs_path] + ([held_out_path] if held_out_path is not None else [])
    runs = pd.concat([_records(path) for path in paths], ignore_index=True)
    runs = runs[runs.seed.isin(REPORTED_SEEDS)].reset_index(drop=True)
    frame = figures(read_all_as_ran(runs))
    for assumption in ("pulscar", "pulsnar"):
        errors = [abs(_own_reading(r, assumption) - r["true"]) for r in runs.to_dict("records")]
        # a mean over the runs that read it
        frame[f"mae_{assumption}"] = pd.Series(errors).groupby(runs.set).mean()
    frame.to_csv(RESULTS / f"{name}.csv")
    command = f"python jobs/benchmark_out_of_sample.py defaults --runs {runs_path.name}"
    if held_out_path is not None:
        command += f" --held-out {held_out_path.name}"
    seeds = ", ".join(map(str, sorted(runs.seed.unique())))
    lines = [
        "# The defaults as they ran, per family",
        "",
        f"`{command}`: fits of commit {', '.join(sorted(runs.commit.unique()))}, "
        f"{len(runs)} runs of seeds {seeds} (the in-memory estimator, defaults). No setting "
        "is chosen from these runs, so their in-sample and leave-one-family-out figures are "
        "one figure. The rules of the defaults were designed on the visible families, and "
        "auto's reading since 5752f15 (PULSCAR's alpha, the interval spanning the clusters' "
        "readings; until e884b41 also a warning where the two differ beyond their noise) was "
        "chosen on the held-out panel (docs/decisions/2026-12-03-held-out-panel.md), so "
        "neither group is out of sample for every choice: the held-out panel's figures are "
        "out of sample for the designs made before 2026-12-03, in sample for that choice. "
        "The later rules (the width line, the interval from 0 under overlap, the warning's "
        "removal, and since d7a79b6 the clusters' alpha read where their tail reading lies "
        "past PULSCAR's) were chosen leave-one-family-out on seeds 0-2 of both panels "
        "(docs/decisions/).",
        "",
        "Columns: MAE; 95% coverage; mean width; mean width of the unwarned runs; confident "
        "wrong runs (error > 0.05, outside the interval, no warning); share of runs warned; "
        "false alarms (warned, error < 0.02); share read PULSCAR; MAE of PULSCAR's and of "
        "the clusters' kernel readings.",
        "",
    ]
    columns = [
        ("runs", "d"), ("mae", ".4f"), ("coverage", ".0%"), ("width", ".3f"),
        ("unwarned_width", ".3f"), ("confident_wrong", "d"), ("warned", ".0%"),
        ("false_alarms", "d"), ("pulscar", ".0%"), ("mae_pulscar", ".4f"),
        ("mae_pulsnar", ".4f"),
    ]  # fmt: skip
    names = ["runs", "MAE", "cover", "width", "unwarned width", "conf. wrong", "warned",
             "false alarms", "PULSCAR", "PULSCAR reading", "clusters' reading"]  # fmt: skip
    for title, rows in (("group", _grouped(frame)), ("family", frame)):
        lines += _markdown_table(title, rows, columns, names)
    write_result(RESULTS / f"{name}.md", "\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fitting = sub.add_parser("fit", help="fit the runs, one JSON line each")
    fitting.add_argument("--seeds", type=int, nargs="+", required=True)
    fitting.add_argument(
        "--families", nargs="+", default=list(FAMILIES), choices=[*FAMILIES, *HELD_OUT]
    )
    fitting.add_argument("--out", type=Path, required=True)
    fitting.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="OPTION=JSON",
        help="a PULSNAR parameter other than its default (a rule turned off: claim_overlap=1)",
    )
    fitting.add_argument(
        "--claim-overlaps",
        type=float,
        nargs="+",
        default=[],
        metavar="X",
        help="also record the clusters' readings with claim_overlap at each X (one fit)",
    )
    tabling = sub.add_parser("table", help="choose settings out of sample and report")
    tabling.add_argument("--runs", type=Path, required=True)
    tabling.add_argument("--before", type=Path, help="an earlier commit's fits of the same runs")
    tabling.add_argument("--name", default="out_of_sample", help="results files' name")
    confirming = sub.add_parser("confirm", help="judge the chosen setting on the held-out panel")
    confirming.add_argument("--runs", type=Path, required=True, help="the candidate's fits")
    confirming.add_argument("--held-out", type=Path, required=True, help="its held-out fits")
    confirming.add_argument(
        "--as-ran", type=Path, nargs="+", required=True, help="commits' defaults' held-out fits"
    )
    confirming.add_argument("--name", default="held_out", help="results files' name")
    claiming = sub.add_parser("claims", help="claim_overlap chosen out of sample")
    claiming.add_argument("--tuning", type=Path, required=True, help="fits of seeds 0-4")
    claiming.add_argument("--runs", type=Path, required=True, help="fits of seeds 5-9")
    claiming.add_argument("--name", default="claim_overlap", help="results files' name")
    for command, warning in WARNING_LINES.items():
        lining = sub.add_parser(command, help=f"{warning.what.split(' (')[0]} chosen out of sample")
        lining.add_argument("--tuning", type=Path, required=True, help="fits of seeds 0-4")
        lining.add_argument("--runs", type=Path, required=True, help="fits of seeds 5-9")
        lining.add_argument("--name", default=f"{command}_line", help="results files' name")
    for command, (helped, default_name) in {
        "floor": ("the interval's low end where classes overlap", "overlap_floor"),
        "reach": ("the interval past the clusters' reading", "clusters_reach"),
        "differ": ("auto's warning that its readings differ", "differ_line"),
    }.items():
        screening = sub.add_parser(command, help=helped)
        screening.add_argument("--tuning", type=Path, required=True, help="fits of seeds 0-4")
        screening.add_argument("--runs", type=Path, required=True, help="fits of seeds 5-9")
        screening.add_argument("--name", default=default_name, help="results files' name")
    passing = sub.add_parser("past", help="where auto reads the clusters' alpha")
    passing.add_argument("--tuning", type=Path, required=True, help="fits of seeds 0-4")
    passing.add_argument("--runs", type=Path, required=True, help="fits of seeds 5-9")
    passing.add_argument("--fresh", type=Path, help="fits of seeds past 9, made after the choice")
    passing.add_argument("--name", default="clusters_past_pulscar", help="results files' name")
    switching = sub.add_parser("switch", help="a rule judged from fits of each setting")
    switching.add_argument(
        "--setting",
        nargs=3,
        action="append",
        required=True,
        metavar=("LABEL", "TUNING", "RUNS"),
        help="a setting's label, its fits of seeds 0-4 and of seeds 5-9 (ties: first named)",
    )
    switching.add_argument("--default", required=True, help="the default setting's label")
    switching.add_argument("--name", required=True, help="results files' name")
    reporting = sub.add_parser("defaults", help="one commit's defaults as they ran")
    reporting.add_argument("--runs", type=Path, required=True, help="its visible families' fits")
    reporting.add_argument("--held-out", type=Path, help="its held-out panel's fits")
    reporting.add_argument("--name", default="defaults", help="results files' name")
    args = parser.parse_args()
    if args.command == "fit":
        names = [item.partition("=")[0].strip() for item in args.set]
        config = config_from_settings(
            args.set,
            f"--set {' '.join(args.set)}",
            CLUSTER_SETTINGS,
            " (a PULSNAR cluster setting)",
        )
        fit(
            args.families,
            args.seeds,
            args.out,
            {n: getattr(config, n) for n in names},
            tuple(args.claim_overlaps),
        )
    elif args.command == "confirm":
        confirm(args.runs, args.held_out, args.as_ran, args.name)
    elif args.command == "claims":
        claims(args.tuning, args.runs, args.name)
    elif args.command in SCREENS:
        interval_screen(SCREENS[args.command], args.tuning, args.runs, args.name)
    elif args.command in WARNING_LINES:
        warning_line(args.command, args.tuning, args.runs, args.name)
    elif args.command == "switch":
        labels = [label for label, _, _ in args.setting]
        if args.default not in labels:
            parser.error(f"--default {args.default}: not one of the settings ({', '.join(labels)})")
        switch(args.setting, args.default, args.name)
    elif args.command == "defaults":
        defaults(args.runs, args.held_out, args.name)
    elif args.command == "past":
        past_screen(args.tuning, args.runs, args.fresh, args.name)
    else:
        table(args.runs, args.before, args.name)


if __name__ == "__main__":
    main()
