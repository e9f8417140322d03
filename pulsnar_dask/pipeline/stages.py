"""The PU pipeline, written once: check the input, the importance model, the positives'
subtypes, the subproblems, alpha and its interval, calibration and the retrain.

An executor runs the steps that touch the feature table where the table is: in this
process on arrays (:class:`~pulsnar_dask.pipeline.in_process.InProcessExecutor`, what the
estimators use on numpy and pandas data) or over a Dask cluster
(:class:`~pulsnar_dask.dask_executor.engine.DaskExecutor`). What reaches the pipeline is
small: row ids and labels, the positives' clustering features, and probability vectors;
the alpha, interval and calibration steps run here on those.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd

from pulsnar_dask.core.calibration import fit_calibration_map
from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import DEFAULT_RESAMPLES, PUConfig, check_seed, config_dict
from pulsnar_dask.core.folds import CopyGroups
from pulsnar_dask.core.interval import Z_95, AlphaInterval, alpha_interval
from pulsnar_dask.core.metrics import classification_metrics, implied_negative_auc
from pulsnar_dask.core.mixture import cluster_labels, clustering_matrix
from pulsnar_dask.core.model import Component, PUModel, package_version, subproblem_components
from pulsnar_dask.core.schema import FeatureSchema
from pulsnar_dask.core.scoring import check_booster_params, column_params
from pulsnar_dask.core.subproblem import (
    SubproblemResult,
    calibrated_on_rows,
    calibration_maps,
    check_subproblem,
    combine_on_rows,
    estimate_subproblem,
    relabel_claimed,
)
from pulsnar_dask.core.subtypes import (
    Clustering,
    MixTest,
    choose_method,
    choose_mixture,
    fit_bic_curve,
    make_clustering,
    min_cluster_size,
    scar_mix_test,
    select_features,
    subtype_profiles,
)
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.result import (
    OVERLAP_AUC,
    PERFECT_PU_AUC,
    WEAK_PU_AUC,
    JobResult,
    overlaps,
)

logger = logging.getLogger(__name__)

METHODS = ("auto", "pulscar", "pulsnar")


@dataclass(frozen=True)
class ScoreRequest:
    """One cross-validated XGBoost scoring: a PULSCAR subproblem, or the retrain on
    recovered labels (Algorithm 4).

    Attributes
    ----------
    features : list of str
        Columns the models see.
    positive_ids : ndarray or None
        The labeled positives kept beside every unlabeled row; ``None``: every row.
    flipped_ids : ndarray or None
        Unlabeled rows relabeled positive before training; ``None``: none.
    config : PUConfig
    seed : int
        Seed of the folds, the unlabeled subsample and XGBoost.
    name : str
        Names the work in task keys and logs (``cluster2-it0``).
    feature_types : list of str or None
        XGBoost's type of each of ``features`` (``c`` categorical, ``q`` numeric);
        ``None``: all numeric.
    untrained_ids : ndarray or None
        Rows scored (each by the model of its fold) that no model trains on; ``None``:
        none.
    """

    features: list[str]
    positive_ids: np.ndarray | None
    flipped_ids: np.ndarray | None
    config: PUConfig
    seed: int
    name: str
    feature_types: list[str] | None = None
    untrained_ids: np.ndarray | None = None

    def rows(self, row_ids: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of the table's rows the scoring uses, and the labels it trains on.

        Returns
        -------
        (keep, labels)
            ``keep``: bool mask over ``row_ids``; ``labels``: the labels of the kept rows
            after relabeling, int8.
        """
        keep = np.ones(len(labels), dtype=bool)
        if self.positive_ids is not None:
            keep = (labels == 0) | np.isin(row_ids, self.positive_ids)
        new = np.asarray(labels, dtype=np.int8)[keep]
        if self.flipped_ids is not None:
            new[np.isin(row_ids[keep], self.flipped_ids)] = 1
        return keep, new


@dataclass
class Scored:
    """Out-of-fold probabilities of a request's rows, by ascending row id; ``labels`` are
    the labels the models trained on (after the request's relabeling); ``models`` the
    fold models as XGBoost JSON, fold 0 first."""

    row_ids: np.ndarray
    labels: np.ndarray
    probabilities: np.ndarray
    models: list[bytes]


class Executor(Protocol):
    """Where the feature table lives and how the heavy steps run there.

    Attributes
    ----------
    engine : str
        ``in-process``, ``task`` (each fold model one task on its gathered training
        rows) or ``dask`` (``xgboost.dask``).
    features : list of str
        The feature columns (after :meth:`read`: those of ``schema``).
    schema : FeatureSchema
        The features' types and categories (set by :meth:`read`).
    threads : int or None
        XGBoost threads per model when the settings leave it open.
    copies : CopyGroups
        Rows whose features are copies of one another's, each group kept in one fold
        (set by :meth:`read`; :mod:`pulsnar_dask.core.folds`).
    """

    engine: str
    features: list[str]
    schema: FeatureSchema
    threads: int | None
    copies: CopyGroups

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Check the table and settle its schema; return row ids (ascending), their 0/1
        labels and true labels."""

    def importance(self, config: PUConfig, seed: int) -> np.ndarray:
        """Gain importance per feature (:func:`~pulsnar_dask.core.subtypes.importance_gain`);
        ``config.n_threads`` is the user's setting, ``None`` leaving the threads to the
        executor (the model trains while nothing else runs)."""

    def positives(self, columns: Sequence[str]) -> np.ndarray:
        """The labeled positives' values of ``columns`` (float32), by ascending row id."""

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        """``[fn(*args) for args in calls]``, side by side where it can."""

    def score(self, requests: Sequence[ScoreRequest]) -> list[Scored]:
        """Run every request (side by side where it can); results in request order."""


FLOAT32_MAX = float(np.finfo(np.float32).max)


def unrepresentable_counts(features: pd.DataFrame) -> pd.DataFrame:
    """Per feature column, the values the models' float32 cannot hold: infinite ones and
    finite ones beyond its range (one row: partitions' counts add up). Column by column:
    a float64 copy of a whole partition would be its largest temporary."""
    counts = [  # NaN compares false: missing values are allowed
        np.count_nonzero(np.abs(column.to_numpy(dtype=float)) > FLOAT32_MAX)
        for _, column in features.items()
    ]
    return pd.DataFrame([counts], columns=features.columns, dtype="int64")


def check_representable(counts: pd.Series) -> None:
    """Refuse feature values float32 cannot hold (:func:`unrepresentable_counts`).

    Raises
    ------
    PUError
        Naming the columns and their counts.
    """
    bad = counts[counts > 0]
    if len(bad):
        shown = ", ".join(f"{name} ({n_rows(int(n))})" for name, n in bad.head(5).items())
        raise PUError(
            f"feature values that are infinite or beyond float32's range (|x| > "
            f"{FLOAT32_MAX:.3g}), which the models cannot hold: {shown}"
        )


def n_rows(n: int) -> str:
    """``1 row``, ``2 rows``."""
    return f"{n} row{'' if n == 1 else 's'}"


def _shown(counts: pd.Series) -> str:
    """The first five values of a ``value_counts`` and their rows: ``2 (1 row), missing
    (4 rows)``."""
    return ", ".join(
        f"{'missing' if pd.isna(v) else repr(v)} ({n_rows(n)})" for v, n in counts.head(5).items()
    )


def check_labels(row_ids: np.ndarray, labels: np.ndarray, id_name: str, label_name: str) -> None:
    """Refuse labels other than 0/1, missing or duplicate ids, and a table without
    positives or without unlabeled rows.

    Raises
    ------
    PUError
    """
    if len(labels) == 0:
        raise PUError("the input has no rows")
    values = pd.Series(labels, dtype=object)  # any dtype, missing values included
    bad = ~values.isin([0, 1]).to_numpy(dtype=bool)
    if bad.any():
        counts = values[bad].value_counts(dropna=False)
        text = " (text, not numbers)" if any(isinstance(v, str) for v in counts.index) else ""
        raise PUError(
            f"{label_name} must hold only the numbers 0 and 1; found {_shown(counts)}{text}"
        )
    duplicated = pd.Series(row_ids).duplicated().to_numpy()
    check_id_counts(
        id_name,
        int(pd.isna(pd.Series(row_ids)).sum()),
        int(duplicated.sum()),
        pd.Series(row_ids[duplicated][:1]).tolist(),
    )
    if not (labels == 1).any():
        raise PUError(f"no labeled positives ({label_name} = 1) in the input")
    if not (labels == 0).any():
        raise PUError(f"no unlabeled rows ({label_name} = 0) in the input")


def check_true_labels(values: np.ndarray, name: str) -> np.ndarray:
    """Refuse ground truth that is not whole numbers from 0 (0 negative, 1 or more a
    positive's subtype), missing values included: a missing one would count as a
    negative in ``true_alpha`` and the metrics.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    PUError
    """
    values = np.asarray(values)
    if values.dtype.kind in "biuf":  # no text; one pass (a million rows as objects: 1.5 s)
        numeric, text = values.astype(float), np.zeros(values.shape, dtype=bool)
    else:
        series = pd.Series(values, dtype=object)
        numeric = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
        text = series.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):  # NaN (missing) fails every test below
        # past 2**53 floats skip whole numbers (and past 2**63 int64 wraps negative)
        bad = text | ~((numeric >= 0) & (numeric % 1 == 0) & (numeric <= 2**53))
    if bad.any():
        counts = pd.Series(values, dtype=object)[bad].value_counts(dropna=False)
        raise PUError(
            f"{name} must hold whole numbers from 0 (0 negative, 1 or more a positive's "
            f"subtype) in every row; found {_shown(counts)}"
        )
    return numeric.astype(np.int64)


def check_id_counts(id_name: str, missing: int, duplicates: int, examples: list = ()) -> None:
    """Refuse missing or repeated ids (counted by the caller; ``examples``: repeated ones
    to name), which could not join results back to the rows.

    Raises
    ------
    PUError
    """
    if missing:
        raise PUError(f"{id_name} has {missing} missing value(s)")
    if duplicates:
        shown = f", e.g. {examples[0]!r}" if examples else ""
        raise PUError(
            f"{id_name} has {duplicates} duplicate value(s){shown}; each row needs its own id"
        )


def cluster_positives(executor: Executor, config: PUConfig, seed: int) -> Clustering:
    """PULSNAR's clustering of the labeled positives: the importance model's gains pick
    the features, mixtures of growing size are fitted on the positives' gain-scaled
    values (:func:`~pulsnar_dask.core.subtypes.fit_bic_curve`), and the chosen one
    assigns every positive (its clustering matrix and fits are dropped on return).

    Raises
    ------
    PUError
        If the importance model used no feature.
    """
    gain = executor.importance(config, seed)
    try:
        model_idx, cluster_idx = select_features(gain, config)
    except ValueError as exc:
        raise PUError(str(exc)) from None
    cluster_cols = [executor.features[i] for i in cluster_idx]
    X_positive = executor.positives(cluster_cols)
    # categorical features as their codes: as indicators, a column of noise splits the
    # positives by its categories (benchmarks/results/README.md, item 24)
    Z = clustering_matrix(X_positive, gain[cluster_idx])
    curves = fit_bic_curve(executor.map, Z, config, seed)
    chosen, bic, _ = choose_mixture(curves, config)
    min_size = min_cluster_size(config, len(Z))
    positive_labels = cluster_labels(chosen, Z, min_size)
    profiles = _profiles(executor, cluster_cols, positive_labels, X_positive)
    return make_clustering(
        chosen,
        bic,
        positive_labels,
        gain,
        model_idx,
        cluster_idx,
        profiles,
    )


def _profiles(
    executor: Executor,
    columns: list[str],
    positive_labels: np.ndarray,
    X_positive: np.ndarray | None = None,
) -> list[list[dict[str, Any]]]:
    """What sets each cluster apart, on the positives' clustering columns (read again
    where not given), described by indicators of their categories ("column=category")."""
    if X_positive is None:
        X_positive = executor.positives(columns)
    X_described, names = executor.schema.one_hot(X_positive, columns)
    return subtype_profiles(X_described, positive_labels, names)


def readings_differ(interval: AlphaInterval, reader: str) -> bool:
    """Whether PULSCAR's and PULSNAR's readings (``reader``'s) differ by more than 1.96
    standard deviations of their difference, taken as independent (their resamples share
    the unlabeled rows, so the difference is noisier this way: the test says "differ"
    less often, not more)."""
    (a, sd_a), (b, sd_b) = (interval.readings[f"{name} {reader}"] for name in METHODS[1:])
    return abs(a - b) > Z_95 * float(np.hypot(sd_a, sd_b))


def run_pipeline(
    executor: Executor,
    method: str = "auto",
    config: PUConfig | None = None,
    seed: int = 0,
    iterations: int = 1,
    calibrate_probabilities: bool = False,
    classify: bool = False,
    on_stage: Callable[[str], None] | None = None,
    settings: dict[str, Any] | None = None,
) -> JobResult:
    """Run PULSCAR or PULSNAR on the table an executor holds.

    Parameters
    ----------
    executor : Executor
    method : {"auto", "pulscar", "pulsnar"}
        ``auto`` clusters the positives as PULSNAR does, runs PULSCAR beside the cluster
        subproblems, and keeps one of the two by :func:`~pulsnar_dask.core.subtypes.choose_method`.
    config : PUConfig or None
        Settings; ``None``: the defaults.
    seed : int
        Iteration ``i`` uses seed ``seed + i`` for folds and XGBoost.
    iterations : int
        Repeats; ``alpha`` is their mean.
    calibrate_probabilities : bool
        Calibrate with the estimated alpha (Algorithm 3).
    classify : bool
        Retrain on recovered labels (Algorithm 4); calibrates first.
    on_stage : callable or None
        Called with a short description as each stage starts, before its log line.
    settings : dict or None
        Entries added to the result's ``settings`` (what the caller was asked for).

    Returns
    -------
    JobResult
        Vectors aligned with the row ids in ascending order.

    Raises
    ------
    PUError
        For an unknown method, fewer than one iteration, or a table the steps cannot use.
    """
    check_choice("method", method, METHODS, PUError)
    if iterations < 1:
        raise PUError(f"iterations must be at least 1, got {iterations}")
    try:
        check_seed(seed, iterations)
    except ValueError as exc:
        raise PUError(str(exc)) from None
    seed = int(seed)  # a numpy integer would overflow in the seeds made from it
    config = config or PUConfig()
    requested, asked = method, config
    if config.n_threads is None and executor.threads is not None:
        config = config.with_(n_threads=executor.threads)

    def stage(text: str) -> None:
        if on_stage is not None:
            on_stage(text)
        logger.info(text)

    start = time.perf_counter()
    timings: dict[str, float] = {}

    def mark(name: str) -> None:
        timings[name] = round(time.perf_counter() - start, 3)

    stage("reading and checking the input")
    row_ids, labels, true_labels = executor.read()
    if len(executor.copies):
        logger.warning(
            "%d of %d rows copy another row's features exactly (not by chance: the table has "
            "features with too many values for that); each group of copies is kept in one "
            "fold (a copy in the training folds would give the held-out row's label away)",
            executor.copies.n_copies,
            row_ids.size,
        )
    try:
        check_subproblem(labels, config)
    except ValueError as exc:
        raise PUError(f"too few rows for {config.n_folds} folds: {exc}") from None
    mark("input")
    features = executor.features
    if config.xgb_params:
        try:
            check_booster_params(
                column_params(config.xgb_params, features, features),
                executor.schema.feature_types(),
                len(features),
            )
        except ValueError as exc:
            raise PUError(f"invalid settings: {exc}") from None

    def for_columns(columns: Sequence[str], **changes: Any) -> PUConfig:
        # a model's XGBoost parameters, per-feature ones rewritten for its columns
        return config.with_(
            xgb_params=column_params(config.xgb_params, features, columns), **changes
        )

    logger.info(
        "%d rows (%d positive), %d features, engine %s",
        labels.size,
        int(labels.sum()),
        len(features),
        executor.engine,
    )

    def request(
        columns: Sequence[str],
        positive_ids: np.ndarray | None,
        it: int,
        name: str = "all",
        untrained: np.ndarray | None = None,
    ) -> ScoreRequest:
        made = ScoreRequest(
            list(columns),
            positive_ids,
            None,
            for_columns(columns),
            seed + it,
            f"{name}-it{it}",
            executor.schema.feature_types(columns),
            untrained,
        )
        if positive_ids is not None:
            try:
                check_subproblem(made.rows(row_ids, labels)[1], config)
            except ValueError as exc:
                raise PUError(f"a subproblem is too small: {exc}") from None
        return made

    def subproblems(requests: list[ScoreRequest]) -> list[SubproblemResult]:
        return [
            replace(
                estimate_subproblem(s.row_ids, s.labels, s.probabilities, r.config, r.seed),
                features=tuple(r.features),
                models=tuple(s.models),
            )
            for r, s in zip(requests, executor.score(requests), strict=True)
        ]

    evidence = clustering = None
    alternative: list[SubproblemResult] = []  # the other assumption's subproblems (auto)
    pulscar_first: SubproblemResult | None = None  # PULSCAR beside PULSNAR (auto)
    if method == "pulscar":
        stage(f"scoring: {iterations} cross-validated XGBoost run(s)")
        results = subproblems([request(features, None, it) for it in range(iterations)])
        per_iteration = [[r] for r in results]
        n_clusters = mixture_components = 1
    else:
        stage("PULSNAR: importance model and clustering of the positives")
        # the threads the user asked for, if any: the importance model trains alone, so
        # the executor may give it more than one task's share
        clustering = cluster_positives(
            executor, for_columns(features, n_threads=asked.n_threads), seed
        )
        positive_ids, positive_labels = row_ids[labels == 1], clustering.labels
        mark("clustering")
        n_clusters = clustering.n_clusters
        mixture_components = clustering.mixture_components
        model_cols = [features[i] for i in clustering.model_features]
        stage(f"scoring: {n_clusters} cluster subproblem(s) x {iterations} iteration(s)")
        pending = [
            request(model_cols, positive_ids[positive_labels == c], it, f"cluster{c + 1}")
            for it in range(iterations)
            for c in range(n_clusters)
        ]
        # auto weighs PULSCAR against the clusters: its subproblems run alongside them
        compare = method == "auto" and n_clusters > 1
        if compare:
            pending += [request(features, None, it) for it in range(iterations)]
        results = subproblems(pending)
        per_iteration = [results[i * n_clusters : (i + 1) * n_clusters] for i in range(iterations)]
        pulscar_results = results[iterations * n_clusters :]
        if compare:
            pulscar_first = pulscar_results[0]
            alternative = [pulscar_first]
    mark("scoring")
    # the 95% interval's bootstrap; auto's call weighs the clusters' mix by it, so auto
    # with several clusters draws it even where no interval is asked for
    resamples = config.interval_resamples or (DEFAULT_RESAMPLES if alternative else 0)
    bootstrap = None
    if resamples:
        stage(f"95% interval: {resamples} resamples of the probabilities")
        # under auto the clusters are PULSNAR's reading, one cluster PULSCAR's
        name = method if method != "auto" else ("pulsnar" if alternative else "pulscar")
        groups = {name: per_iteration[0]}
        if alternative:
            groups["pulscar"] = alternative
        bootstrap = alpha_interval(
            groups, config.with_(interval_resamples=resamples), seed, (), executor.map
        )
    if method == "auto":
        first = per_iteration[0]
        test = MixTest(0.0, 0.0, 0.0, 0.0)
        if alternative:
            test = scar_mix_test(
                [r.alpha for r in first], [r.n_positive for r in first], bootstrap.draws["pulsnar"]
            )
        method, evidence = choose_method(
            test, n_clusters, clustering.cluster_features.size, clustering.model_features.size
        )
        if alternative:
            evidence["readings"] = {
                "pulscar": round(pulscar_first.alpha, 4),
                "pulsnar": round(sum(r.alpha for r in first), 4),
            }
            evidence["bootstrap"] = {
                name: [round(a, 4), round(sd, 4)] for name, (a, sd) in bootstrap.readings.items()
            }
        if method == "pulscar":
            if alternative:
                alternative = per_iteration[0]
                per_iteration = [[r] for r in pulscar_results]
            n_clusters = 1
        log = logger.warning if evidence["subtypes_may_be_unseen"] else logger.info
        log("method auto: %s (%s)", method, evidence["reason"])
    checked = per_iteration[0]  # the PU classifiers whose separation the checks read
    for i, r in enumerate(checked):
        if r.pu_auc < WEAK_PU_AUC:
            logger.warning(
                "subproblem %d: the classifier hardly tells labeled positives from unlabeled "
                "rows (out-of-fold AUC %.3f); alpha is poorly identified from these features",
                i + 1,
                r.pu_auc,
            )
    leading_feature = None
    if all(r.pu_auc >= PERFECT_PU_AUC for r in checked) and checked[0].models:
        top = checked[0]
        leading_feature = Component(list(top.features), list(top.models)).leading_feature()
        logger.warning(
            "labeled positives and unlabeled rows are perfectly separated (out-of-fold AUC "
            "%.4f): if a feature records the label (the models lean most on %r), leave it "
            "out; otherwise no unlabeled row resembles a labeled positive",
            min(r.pu_auc for r in checked),
            leading_feature,
        )
    whole = per_iteration[0][0] if len(per_iteration[0]) == 1 else pulscar_first
    negative_auc = None
    if whole is not None:  # to 3 decimals: what is printed is what is compared
        implied = implied_negative_auc(whole.pu_auc, whole.alpha)
        negative_auc = None if np.isnan(implied) else round(implied, 3)
    if overlaps(negative_auc):
        logger.warning(
            "labeled positives and unlabeled negatives overlap (implied AUC %.3f, below "
            "%g): every reading of alpha also counts the negatives that resemble "
            "positives, so alpha is an upper bound and may be far too high",
            negative_auc,
            OVERLAP_AUC,
        )
    alphas = [float(sum(r.alpha for r in it)) for it in per_iteration]
    alpha = float(np.mean(alphas))
    first = per_iteration[0]
    cluster_alphas = [
        float(np.mean([it[c].alpha for it in per_iteration])) for c in range(len(first))
    ]
    if evidence is not None and alternative:
        evidence["readings_differ"] = readings_differ(bootstrap, config.alpha_estimator)
        if not evidence["decided"] and evidence["readings_differ"]:
            logger.warning(
                "method auto cannot tell SCAR from SNAR (%s), and the two readings differ "
                "(PULSCAR %.3f, PULSNAR %.3f): either may hold, and the interval spans both",
                evidence["reason"],
                evidence["readings"]["pulscar"],
                evidence["readings"]["pulsnar"],
            )
    interval = None
    if config.interval_resamples:
        spans = [method]
        if evidence is not None and not evidence["decided"]:
            spans.append("pulscar" if method == "pulsnar" else "pulsnar")
        interval = bootstrap.spanning(spans, alphas)
        mark("interval")
    probability = combine_on_rows(row_ids, [(r.row_ids, r.probabilities) for r in first])
    calibrated = improved = metrics = None
    maps = calibration_maps(row_ids, first, config, seed) if not classify else None
    if calibrate_probabilities or classify:
        stage("calibrating probabilities")
        calibrated = calibrated_on_rows(row_ids, first, config, seed, maps)
    if classify:
        # with true labels, the PU classifier the retrain is compared with: PULSCAR's
        # scoring, trained alongside the retrain where no subproblem has it yet
        baseline_needed = true_labels is not None and method != "pulscar" and pulscar_first is None
        stage(
            "classification: retraining on recovered labels"
            + (
                " (and scoring PULSCAR, the baseline it is compared with)"
                if baseline_needed
                else ""
            )
        )
        new_labels = relabel_claimed(labels, first, cluster_alphas)
        try:
            check_subproblem(new_labels, config)
        except ValueError as exc:
            raise PUError(f"cannot retrain on the recovered labels: {exc}") from None
        retrain = ScoreRequest(
            features,
            None,
            row_ids[new_labels > labels],
            for_columns(features, max_unlabeled_ratio=None),
            seed,
            "classify",
            executor.schema.feature_types(features),
        )
        scored, *baseline_scored = executor.score(
            [retrain, request(features, None, 0)] if baseline_needed else [retrain]
        )
        improved = scored.probabilities
        components = [Component(features, scored.models)]
        # the retrain's probabilities mapped to the recovered labels it was trained on
        model_map = fit_calibration_map(improved, scored.labels, None, config.calibration_method)
        if true_labels is not None:
            if method == "pulscar":
                baseline = probability
            elif baseline_scored:
                baseline = baseline_scored[0].probabilities
            else:
                baseline = pulscar_first.probabilities
            metrics = {
                "without_pu": classification_metrics(true_labels > 0, baseline),
                "with_pu": classification_metrics(true_labels > 0, improved),
            }
        mark("classification")
    run_settings = {
        "method": requested,
        "seed": seed,
        "iterations": iterations,
        "calibrate": calibrate_probabilities,
        "classify": classify,
        "n_features": len(features),
        **(settings or {}),
        **config_dict(asked),
    }
    if not classify:
        model_map, per_subproblem = maps
        components = subproblem_components(first, per_subproblem)
    model = PUModel(
        executor.schema,
        components,
        model_map,
        "retrain" if classify else "subproblems",
        alpha,
        (interval.low, interval.high) if interval else None,
        method,
        run_settings,
        package_version(),
    )
    return JobResult(
        method=method,
        alpha=alpha,
        alphas=alphas,
        cluster_alphas=cluster_alphas,
        n_clusters=n_clusters,
        row_ids=row_ids,
        labels=labels,
        probability=probability,
        calibrated=calibrated,
        improved=improved,
        true_labels=true_labels,
        estimates=[r.estimate for r in first],
        subproblems=first,
        bic=clustering.bic if clustering is not None else np.array([]),
        mixture_components=mixture_components,
        method_evidence=evidence,
        clustering=clustering,
        profiles=clustering.profiles if method == "pulsnar" else None,
        alpha_interval=interval,
        settings=run_settings,
        metrics=metrics,
        engine=executor.engine,
        copied_rows=executor.copies.n_copies,
        leading_feature=leading_feature,
        negative_auc=negative_auc,
        pu_auc=[r.pu_auc for r in checked],
        seconds=time.perf_counter() - start,
        timings=timings,
        model=model,
    )
