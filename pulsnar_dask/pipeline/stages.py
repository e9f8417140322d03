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

from pulsnar_dask.core.alpha import (
    VALLEY_MAX_LABELED_BELOW,
    reliable_negatives,
    separated_count,
    valley_cut,
)
from pulsnar_dask.core.calibration import fit_calibration_map
from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import PUConfig, check_seed, config_dict
from pulsnar_dask.core.folds import CopyGroups
from pulsnar_dask.core.interval import AlphaInterval, alpha_interval
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
    read_alpha,
    relabel_claimed,
    subproblems_alpha,
)
from pulsnar_dask.core.subtypes import (
    Clustering,
    choose_method,
    choose_mixture,
    cluster_halves,
    fit_bic_curve,
    halves_differ,
    make_clustering,
    min_cluster_size,
    select_features,
    subtype_profiles,
)
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.result import (
    OVERLAP_AUC,
    PERFECT_PU_AUC,
    SEPARATED_READING,
    WEAK_PU_AUC,
    JobResult,
    overlaps,
)

logger = logging.getLogger(__name__)

METHODS = ("auto", "pulscar", "pulsnar")
# The second scoring (:func:`scored_against_negatives`) needs this many reliable
# negatives per fold, to learn what the negatives look like from.
MIN_RELIABLE_NEGATIVES_PER_FOLD = 10


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
        raise PUError(f"no labeled positives ({label_name} = 1) in the input: one class only")
    if not (labels == 0).any():
        raise PUError(f"no unlabeled rows ({label_name} = 0) in the input: one class only")


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
    # positives by its categories
    Z = clustering_matrix(X_positive, gain[cluster_idx])
    curves = fit_bic_curve(executor.map, Z, config, seed)
    chosen, bic, _ = choose_mixture(curves, config)
    min_size = min_cluster_size(config, len(Z))
    positive_labels = cluster_labels(chosen, Z, min_size)
    halves = []
    if config.cluster_split is not None:
        halves = cluster_halves(
            executor.map,
            Z,
            positive_labels,
            chosen.covariance_type,
            min_size,
            seed,
            config.max_cluster_rows,
        )
    profiles = _profiles(executor, cluster_cols, positive_labels, X_positive)
    return make_clustering(
        chosen,
        bic,
        positive_labels,
        gain,
        model_idx,
        cluster_idx,
        profiles,
        halves,
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


Rescore = Callable[[list[tuple[SubproblemResult, np.ndarray]]], list[SubproblemResult]]


def scored_against_negatives(
    results: list[SubproblemResult], config: PUConfig, rescore: Rescore
) -> tuple[list[SubproblemResult], list[np.ndarray]] | None:
    """Score each subproblem's labeled positives again, against its reliable negatives.

    The reliable negatives are the unlabeled rows scored below all but 5% of the labeled
    positives (:func:`~pulsnar_dask.core.alpha.reliable_negatives`); the other unlabeled
    rows are scored by the model of their fold, and no model trains on them. That
    classifier learns what the negatives look like, not how often each kind of positive
    is labeled.

    Parameters
    ----------
    results : list of SubproblemResult
        PULSCAR's subproblems: one per iteration (the valley reader), or the first
        iteration's alone (the separated-classes reading).
    config : PUConfig
        ``n_folds``.
    rescore : callable
        Scores each given subproblem's labeled positives against its unlabeled rows, on
        its columns, training on none of the ids given with it: one subproblem each.

    Returns
    -------
    (rescored, negatives) or None
        The second scorings and each subproblem's reliable negatives (a mask on its
        rows); None where one has fewer than ``MIN_RELIABLE_NEGATIVES_PER_FOLD`` times
        ``n_folds`` reliable negatives (a fold could train on none).
    """
    negatives = [reliable_negatives(r.probabilities, r.labels) for r in results]
    if any(n.sum() < MIN_RELIABLE_NEGATIVES_PER_FOLD * config.n_folds for n in negatives):
        return None
    untrained = [r.row_ids[(r.labels == 0) & ~n] for r, n in zip(results, negatives, strict=True)]
    return rescore(list(zip(results, untrained, strict=True))), negatives


def separated_reading(rescored: SubproblemResult, negatives: np.ndarray) -> dict[str, Any]:
    """``method_evidence["separated"]``: alpha if positives and negatives do not overlap
    (:func:`~pulsnar_dask.core.alpha.separated_count` of the second scoring), and the
    reliable negatives it was trained against."""
    alpha = separated_count(rescored.probabilities, rescored.labels, negatives)
    return {
        "alpha": None if np.isnan(alpha) else round(alpha, 4),
        "reliable_negatives": int(negatives.sum()),
    }


def spanning_separated(interval: AlphaInterval, separated: dict[str, Any]) -> AlphaInterval:
    """The interval widened to take in the separated-classes reading
    (:func:`separated_reading`, its alpha not None) as one more reading, with no
    bootstrap of its own; ``separated["extends_interval"]`` is set to whether it lay
    outside the others' span (above or below)."""
    alpha = separated["alpha"]
    low, high = min(interval.low, alpha), max(interval.high, alpha)
    separated["extends_interval"] = bool(low < interval.low or high > interval.high)
    return AlphaInterval(low, high, {**interval.readings, SEPARATED_READING: (alpha, 0.0)})


def valley_readings(
    results: list[SubproblemResult],
    evidence: dict[str, Any],
    config: PUConfig,
    seed: int,
    rescore: Rescore,
) -> list[SubproblemResult] | None:
    """``method="auto"``'s valley reader (:func:`~pulsnar_dask.core.alpha.valley_cut`).

    Where PULSCAR's scores of the unlabeled rows dip plainly, the labeled positives are
    scored again against the unlabeled rows below all but 5% of them
    (:func:`scored_against_negatives`): the negatives' tail past the first dip then
    scores low, and every subtype's hidden positives score as their kind does, however
    rarely it is labeled. Alpha is read at its dip where that one is plain too, else at
    PULSCAR's.

    Parameters
    ----------
    results : list of SubproblemResult
        PULSCAR's subproblem, one per iteration.
    evidence : dict
        ``choose_method``'s evidence, updated in place: ``valley`` (what the first
        iteration's dip shows, and ``valley["rescored"]`` what the second scoring's
        shows, where it ran) always, and ``separated`` where the second scoring ran
        (:func:`separated_reading`); where alpha is read at a dip, ``reason`` says so and
        ``subtypes_may_be_unseen`` is False (the reading does not rest on the clusters).
    config : PUConfig
        ``valley_depth``, the deepest dip read.
    seed : int
        The run's seed (iteration ``i`` reads with ``seed + i``, as it was scored).
    rescore : callable
        As :func:`scored_against_negatives`.

    Returns
    -------
    list of SubproblemResult or None
        The iterations read at their valley where the first iteration's dip is plain
        (each later iteration at its own dip): the second scoring's where its first
        iteration's dip is plain, else PULSCAR's; None where PULSCAR's is not.
    """
    first = results[0]
    cut = valley_cut(first.probabilities, first.labels)
    credible = cut.credible(config.valley_depth)
    valley = {**cut.as_dict(), "max_depth": config.valley_depth, "credible": credible}
    evidence["valley"] = valley
    if not credible:
        return None
    evidence["reason"] = (
        f"the unlabeled rows' scores dip to {cut.depth:.2f} of the negatives' peak below all "
        f"but {cut.labeled_below:.1%} of the labeled positives: alpha is read at the dip, "
        "which counts the hidden positives of every subtype however rarely each is labeled"
    )
    scored = scored_against_negatives(results, config, rescore)
    if scored is not None:
        rescored, negatives = scored
        separated = evidence["separated"] = separated_reading(rescored[0], negatives[0])
        second = valley_cut(rescored[0].probabilities, rescored[0].labels)
        valley["rescored"] = {
            **second.as_dict(),
            "reliable_negatives": separated["reliable_negatives"],
            "credible": second.credible(config.valley_depth),
        }
        if valley["rescored"]["credible"]:
            results = rescored
            evidence["reason"] += (
                f"; the dip read is that of the labeled positives scored against the "
                f"{valley['rescored']['reliable_negatives']:,} unlabeled rows below all but "
                f"{VALLEY_MAX_LABELED_BELOW:.0%} of them (it dips to {second.depth:.2f}), which "
                "leaves out the negatives' tail past the first dip"
            )
    evidence["subtypes_may_be_unseen"] = False
    config = config.with_(alpha_estimator="valley")
    return [
        replace(r, estimate=read_alpha(r.probabilities, r.labels, config, seed + it))
        for it, r in enumerate(results)
    ]


def split_clusters(
    executor: Executor,
    clustering: Clustering,
    per_iteration: list[list[SubproblemResult]],
    positive_ids: np.ndarray,
    config: PUConfig,
    seed: int,
    score_parts: Callable[[list[np.ndarray]], list[SubproblemResult]],
) -> tuple[list[list[SubproblemResult]], Clustering]:
    """Cut the clusters whose subproblems score their halves apart (``cluster_split``),
    and the parts again, for at most ``cluster_split_rounds`` rounds.

    A cluster whose halves (:func:`~pulsnar_dask.core.subtypes.cluster_halves`) the first
    iteration's subproblem scores apart (:func:`~pulsnar_dask.core.subtypes.halves_differ`)
    becomes two clusters, each with a subproblem of its own in every iteration. Each part
    is cut again the same way, on its own positives' two-component mixture and its own
    subproblem: a cluster that holds three or more subtypes labeled at different rates
    needs more than one cut. The clusters are renumbered by decreasing size.

    Parameters
    ----------
    per_iteration : list of list of SubproblemResult
        Each iteration's cluster subproblems, in cluster order.
    positive_ids : ndarray
        The labeled positives' ids, ascending (the order of ``clustering.labels`` and of
        ``executor.positives``).
    config : PUConfig
        ``cluster_split``, ``cluster_split_rounds`` and the mixtures' settings.
    seed : int
        Seed of the parts' mixtures.
    score_parts : callable
        ``score_parts(parts) -> results``: the subproblems of the given positives' ids
        (each with every unlabeled row), iteration after iteration.

    Returns
    -------
    (per_iteration, clustering)
        The clusters' subproblems and the clustering without its halves (``halves=()``);
        the subproblems as they were where no cluster is cut.
    """
    labels, halves = clustering.labels, clustering.halves
    clustering = replace(clustering, halves=())
    n_iterations = len(per_iteration)
    # every cluster as (positive ids, its subproblem in each iteration, its halves while
    # they are still to be tested)
    clusters = [
        (positive_ids[labels == c], [it[c] for it in per_iteration], halves[c])
        for c in range(clustering.n_clusters)
    ]
    columns = [executor.features[i] for i in clustering.cluster_features]
    first_cut: list[int] = []
    n_cuts = 0
    X_positive = Z = None
    for round_ in range(config.cluster_split_rounds):
        cut = []
        for c, (ids, results, half) in enumerate(clusters):
            if half is None:
                continue
            r = results[0]
            held = r.row_ids[r.labels == 1]
            at = np.searchsorted(held, ids)  # both ascend
            if halves_differ(r.probabilities[r.labels == 1][at], half, config.cluster_split):
                cut.append(c)
        if not cut:
            break
        if round_ == 0:
            first_cut = cut
            logger.info(
                "clusters %s hide positives at different rates in their two halves: each "
                "half becomes a cluster",
                [c + 1 for c in cut],
            )
        else:
            logger.info("round %d: %d part(s) cut again", round_ + 1, len(cut))
        n_cuts += len(cut)
        parts = []
        for c in cut:
            ids, _, half = clusters[c]
            parts += [ids[~half], ids[half]]
        scored = score_parts(parts)
        n_parts = len(parts)
        part_halves: list[np.ndarray | None] = [None] * n_parts
        if round_ + 1 < config.cluster_split_rounds:
            if Z is None:
                X_positive = executor.positives(columns)
                Z = clustering_matrix(X_positive, clustering.gain[clustering.cluster_features])
            rows = [np.searchsorted(positive_ids, ids) for ids in parts]
            part_halves = cluster_halves(
                executor.map,
                Z[np.concatenate(rows)],
                np.concatenate([np.full(r.size, j) for j, r in enumerate(rows)]),
                clustering.covariance_type,
                min_cluster_size(config, positive_ids.size),
                seed,
                config.max_cluster_rows,
            )
        # the clusters left whole were tested: only the new parts are tested next round
        clusters = [
            (ids, results, None) for c, (ids, results, _) in enumerate(clusters) if c not in cut
        ]
        clusters += [
            (ids, [scored[i * n_parts + j] for i in range(n_iterations)], part_halves[j])
            for j, ids in enumerate(parts)
        ]
    if not first_cut:
        return per_iteration, clustering
    clusters.sort(key=lambda cluster: -cluster[0].size)
    new_labels = np.empty_like(labels)
    for c, (ids, _, _) in enumerate(clusters):
        new_labels[np.searchsorted(positive_ids, ids)] = c
    clustering = replace(
        clustering,
        n_clusters=len(clusters),
        labels=new_labels,
        profiles=_profiles(executor, columns, new_labels, X_positive),
        cut=tuple(c + 1 for c in first_cut),
        n_cuts=n_cuts,
    )
    per_iteration = [[results[i] for _, results, _ in clusters] for i in range(n_iterations)]
    return per_iteration, clustering


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
    # auto's reading of PULSNAR's first iteration: (its subproblems, their alpha and groups)
    first_read: tuple[list[SubproblemResult], tuple] | None = None
    pulscar_first: SubproblemResult | None = None  # PULSCAR beside PULSNAR (auto)
    at_valley = False  # auto read alpha at a valley of the unlabeled rows' scores
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
        model_cols = [features[i] for i in clustering.model_features]
        stage(f"scoring: {n_clusters} cluster subproblem(s) x {iterations} iteration(s)")

        def group_requests(groups: list[np.ndarray], name: str) -> list[ScoreRequest]:
            """Each group of positives' subproblem, iteration after iteration."""
            return [
                request(model_cols, ids, it, f"{name}{j + 1}")
                for it in range(iterations)
                for j, ids in enumerate(groups)
            ]

        pending = group_requests(
            [positive_ids[positive_labels == c] for c in range(n_clusters)], "cluster"
        )
        # auto weighs PULSCAR against the clusters: its subproblems run alongside them
        # (and alongside one cluster that a cut may make two)
        may_cut = any(h is not None for h in clustering.halves)
        compare = method == "auto" and (n_clusters > 1 or may_cut)
        if compare:
            pending += [request(features, None, it) for it in range(iterations)]
        results = subproblems(pending)
        per_iteration = [results[i * n_clusters : (i + 1) * n_clusters] for i in range(iterations)]
        pulscar_results = results[iterations * n_clusters :]
        mixture_components = clustering.mixture_components
        if may_cut:
            per_iteration, clustering = split_clusters(
                executor, clustering, per_iteration, positive_ids, config, seed,
                lambda parts: subproblems(group_requests(parts, "part")),
            )  # fmt: skip
            n_clusters = clustering.n_clusters
        # one cluster left uncut is read as without the cut (its PULSCAR scoring unused)
        compare = compare and n_clusters > 1
        if compare:
            pulscar_first = pulscar_results[0]
        if method == "auto":
            first = per_iteration[0]
            # hidden positives for the test against sampling noise: the larger reading's
            # (under SNAR PULSCAR reads low, and a smaller count makes more noise)
            n_hidden = None
            if compare:
                first_read = (first, subproblems_alpha(first, config.claim_overlap))
                larger = max(pulscar_first.alpha, first_read[1][0])
                n_hidden = larger * int(np.sum(pulscar_first.labels == 0))
            method, evidence = choose_method(
                [r.alpha for r in first],
                [r.n_positive for r in first],
                clustering.cluster_features.size,
                clustering.model_features.size,
                n_hidden,
            )
            if method == "pulscar":
                if compare:
                    alternative = per_iteration[0]
                    per_iteration = [[r] for r in pulscar_results]
                n_clusters = 1
            elif compare:
                alternative = [pulscar_first]
            whole = [it[0] for it in per_iteration] if method == "pulscar" else pulscar_results

            def rescore(pairs: list[tuple[SubproblemResult, np.ndarray]]) -> list[SubproblemResult]:
                stage("scoring: the labeled positives against the unlabeled rows least like them")
                return subproblems(
                    [
                        request(list(r.features), None, it, "negatives", ids)
                        for it, (r, ids) in enumerate(pairs)
                    ]
                )

            if config.valley_depth > 0:
                valley_runs = valley_readings(whole, evidence, config, seed, rescore)
                if valley_runs is not None:
                    if method == "pulsnar":
                        alternative = per_iteration[0]
                    pulscar_first = whole[0]  # the PU classifier, which the checks read
                    per_iteration = [[r] for r in valley_runs]
                    method, n_clusters, at_valley = "pulscar", 1, True
            # read at PULSNAR's clusters, the interval also spans the reading that needs no
            # clusters but assumes the classes do not overlap
            if method == "pulsnar" and config.interval_resamples:
                scored = scored_against_negatives(whole[:1], config, rescore)
                if scored is not None:
                    evidence["separated"] = separated_reading(scored[0][0], scored[1][0])
            log = logger.warning if evidence["subtypes_may_be_unseen"] else logger.info
            log("method auto: %s (%s)", method, evidence["reason"])
    mark("scoring")
    # the PU classifiers whose separation the checks read: PULSCAR's own where auto read
    # alpha at the valley of the second scoring (trained against the negatives alone)
    checked = [pulscar_first] if at_valley else per_iteration[0]
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
        implied = implied_negative_auc((checked[0] if at_valley else whole).pu_auc, whole.alpha)
        negative_auc = None if np.isnan(implied) else round(implied, 3)
    if overlaps(negative_auc):
        logger.warning(
            "labeled positives and unlabeled negatives overlap (implied AUC %.3f, below "
            "%g): every reading of alpha also counts the negatives that resemble "
            "positives, so alpha is an upper bound and may be far too high",
            negative_auc,
            OVERLAP_AUC,
        )
    readings = [
        first_read[1]
        if first_read is not None and it is first_read[0]
        else subproblems_alpha(it, config.claim_overlap)
        for it in per_iteration
    ]
    alphas = [a for a, _ in readings]
    cluster_groups = None
    if method == "pulsnar" and n_clusters > 1:
        subtypes = readings[0][1]
        cluster_groups = [(np.flatnonzero(subtypes == g) + 1).tolist() for g in np.unique(subtypes)]
        if len(cluster_groups) < n_clusters:
            logger.info(
                "clusters that claim the same unlabeled rows count once: %s", cluster_groups
            )
    alpha = float(np.mean(alphas))
    first = per_iteration[0]
    cluster_alphas = [
        float(np.mean([it[c].alpha for it in per_iteration])) for c in range(len(first))
    ]
    interval = None
    if config.interval_resamples:
        stage(f"95% interval: {config.interval_resamples} resamples of the probabilities")
        assumptions = {method: first}
        if alternative:
            assumptions["pulscar" if method == "pulsnar" else "pulsnar"] = alternative
        interval = alpha_interval(
            assumptions, config, seed, alphas, executor.map,
            readers={"pulscar": ("valley",)} if at_valley else None,
        )  # fmt: skip
        separated = (evidence or {}).get("separated") if method == "pulsnar" else None
        if separated and separated["alpha"] is not None:
            interval = spanning_separated(interval, separated)
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
            if at_valley:  # the PU classifier, not the second scoring
                baseline = pulscar_first.probabilities
            elif method == "pulscar":
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
        cluster_groups=cluster_groups,
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
