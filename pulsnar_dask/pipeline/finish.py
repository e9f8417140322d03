"""The last stages of a run: alpha over the iterations, its interval, the calibrated
probabilities, the retrain on recovered labels (Algorithm 4) and the model they make."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pulsnar_dask.core.calibration import fit_map_on_cells
from pulsnar_dask.core.combine import claimed_rows, piece_cell_sums, piece_outputs
from pulsnar_dask.core.interval import AlphaInterval, alpha_interval
from pulsnar_dask.core.map_reduce import identity
from pulsnar_dask.core.metrics import classification_metrics
from pulsnar_dask.core.model import Component, subproblem_components
from pulsnar_dask.core.subproblem import (
    check_counts,
    subproblem_claims,
    subproblems_alpha,
    subproblems_calibration,
)
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.executor import ScoreRequest
from pulsnar_dask.pipeline.job import Job, Reading
from pulsnar_dask.pipeline.method_choice import record_readings
from pulsnar_dask.pipeline.result import (
    WIDE_INTERVAL,
    HeldRows,
    clusters_alpha_read,
    overlaps,
    too_wide,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Alphas:
    """Alpha over the iterations.

    Attributes
    ----------
    alphas : list of float
        One per iteration.
    alpha : float
        Their mean.
    cluster_alphas : list of float
        Each first-iteration subproblem's alpha, averaged over the iterations.
    cluster_groups : list of list of int or None
        PULSNAR's clusters counted as one subtype (1-based), where there are several.
    subproblem_alphas : list of float
        What each first-iteration subproblem is calibrated and its claim taken at:
        ``cluster_alphas``, or ``[alpha]`` where auto reads the clusters' alpha off
        PULSCAR's scoring (:func:`clusters_read`).
    """

    alphas: list[float]
    alpha: float
    cluster_alphas: list[float]
    cluster_groups: list[list[int]] | None
    subproblem_alphas: list[float]


def read_alphas(job: Job, reading: Reading) -> Alphas:
    """Each iteration's alpha, with clusters that claim the same unlabeled rows counted
    once (:func:`~pulsnar_dask.core.subproblem.subproblems_alpha`)."""
    readings = [
        subproblems_alpha(it, job.config.claim_overlap, job.executor.map_reduce)
        for it in reading.per_iteration
    ]
    alphas = [a for a, _ in readings]
    cluster_groups = None
    if reading.method == "pulsnar" and reading.n_clusters > 1:
        cluster_groups = _cluster_groups(readings[0][1])
    cluster_alphas = [
        float(np.mean([it[c].alpha for it in reading.per_iteration]))
        for c in range(len(reading.first))
    ]
    return Alphas(alphas, float(np.mean(alphas)), cluster_alphas, cluster_groups, cluster_alphas)


def _cluster_groups(subtypes: np.ndarray) -> list[list[int]]:
    """The clusters (numbered from 1) of each subtype group, logged where some share one."""
    groups = [(np.flatnonzero(subtypes == g) + 1).tolist() for g in np.unique(subtypes)]
    if len(groups) < subtypes.size:
        logger.info("clusters that claim the same unlabeled rows count once: %s", groups)
    return groups


def clusters_read(
    job: Job, reading: Reading, alphas: Alphas, interval: AlphaInterval | None
) -> Alphas:
    """Alpha as auto reads it: ``alphas`` (PULSCAR's), or where
    :func:`~pulsnar_dask.pipeline.method_choice.record_readings` chose the clusters'
    reading (``evidence["read"]``), that reading (the interval's, by the configured
    reader, from the clusters' one scoring) with each cluster's alpha and the clusters
    that count as one subtype (as the interval grouped them); PULSCAR's scoring, whose
    probabilities the outputs come from, is then calibrated and its claim taken at that
    alpha."""
    if interval is None or not clusters_alpha_read(reading.evidence):
        return alphas
    alpha = float(interval.readings[f"pulsnar {job.config.alpha_estimator}"][0])
    groups = _cluster_groups(np.asarray(interval.subtypes["pulsnar"]))
    cluster_alphas = [r.alpha for r in reading.alternative]
    return Alphas([alpha], alpha, cluster_alphas, groups, [alpha])


def interval_of(
    job: Job, reading: Reading, alphas: list[float], negative_auc: float | None
) -> AlphaInterval | None:
    """The 95% interval (:func:`~pulsnar_dask.core.interval.alpha_interval`) over the
    readings of both assumptions where auto scored the clusters beside PULSCAR (whose
    readings :func:`~pulsnar_dask.pipeline.method_choice.record_readings` then records);
    from 0 where labeled positives and unlabeled negatives overlap
    (:func:`~pulsnar_dask.pipeline.result.overlaps` on ``negative_auc``), as every
    reading is then an upper bound; with a warning where it is too wide to act on
    (:func:`~pulsnar_dask.pipeline.result.too_wide`), saying what widens it. None with
    ``interval_resamples=0``."""
    config = job.config
    if not config.interval_resamples:
        return None
    job.stage(f"95% interval: {config.interval_resamples} resamples of the probabilities")
    assumptions = {reading.method: reading.first}
    if reading.alternative:  # auto: the clusters, scored beside PULSCAR
        assumptions["pulsnar"] = reading.alternative
    interval = alpha_interval(assumptions, config, job.seed, alphas, job.executor.map_reduce)
    why = []
    if reading.alternative:
        record_readings(interval, reading.evidence, config.alpha_estimator)
        why.append(
            "it spans PULSCAR's reading, {pulscar:.3f} (positives labeled at random), and the "
            "{n} clusters', {pulsnar:.3f} (each subtype at its own rate)".format(
                n=reading.evidence["n_clusters"], **reading.evidence["readings"]
            )
        )
    if overlaps(negative_auc):
        interval = replace(interval, low=0.0)
        why.append("it starts at 0, as the classes overlap")
    why.append("the summary's interval_readings show which readings widen it")
    if too_wide(interval):
        logger.warning(
            "alpha is imprecise: its 95%% interval is %.3f wide (%.3f-%.3f), more than %g; "
            "the data do not pin alpha down, so read the interval rather than the point (%s)",
            interval.high - interval.low,
            interval.low,
            interval.high,
            WIDE_INTERVAL,
            "; ".join(why),
        )
    job.mark("interval")
    return interval


@dataclass(frozen=True)
class Outputs:
    """The per-row outputs, where the executor holds them, and what the model is made of.

    Attributes
    ----------
    rows : HeldRows
        The combined out-of-fold probability, calibrated (Algorithm 3, where asked) and
        retrained (Algorithm 4, where asked) probabilities.
    metrics : dict or None
        The retrain's classification metrics against the PU classifier's, with true labels.
    components : list of Component
        The model's fold models.
    model_map : Any
        The model's calibration map.
    """

    rows: HeldRows
    metrics: dict[str, Any] | None
    components: list[Component]
    model_map: Any


def outputs_of(
    job: Job, reading: Reading, subproblem_alphas: list[float], calibrate: bool, classify: bool
) -> Outputs:
    """The probabilities, their calibration, the retrain on the clusters' claims and the
    fold models the saved model keeps: each partition's rows computed where they are held
    (:func:`~pulsnar_dask.core.combine.piece_outputs`), the calibration fitted on counts
    (:func:`~pulsnar_dask.core.subproblem.subproblems_calibration`), each subproblem
    calibrated and its claim taken at its alpha in ``subproblem_alphas``
    (:attr:`Alphas.subproblem_alphas`).

    Raises
    ------
    PUError
        Where the recovered labels leave too few rows of a label for the folds.
    """
    config, seed, executor = job.config, job.seed, job.executor
    if calibrate or classify:
        job.stage("calibrating probabilities")
    calibration = subproblems_calibration(
        reading.first, config, executor.map_reduce, subproblem_alphas
    )
    claims = subproblem_claims(reading.first, subproblem_alphas) if classify else None
    parts = executor.map_pieces(
        piece_outputs,
        [r.pieces for r in reading.first],
        (calibration if calibrate or classify else None, claims, seed),
    )
    reading.release_pieces(executor, but_first=True)  # the parts are computed from the first
    held = (job.table, executor.gather, executor.map_pieces, calibrate or classify, job.truth)
    rows = HeldRows(parts, None, *held)
    model_map = calibration.combined
    if not classify:
        components = subproblem_components(reading.first, calibration.per_subproblem)
        return Outputs(rows, None, components, model_map)
    # with true labels, the PU classifier the retrain is compared with: PULSCAR's scoring,
    # trained alongside the retrain where the run read PULSNAR
    baseline_needed = job.truth is not None and reading.method != "pulscar"
    job.stage(
        "classification: retraining on recovered labels"
        + (" (and scoring PULSCAR, the baseline it is compared with)" if baseline_needed else "")
    )
    (claimed,) = executor.map_reduce(claimed_rows, identity, [parts], [()])
    n_claimed = claimed.row_ids.size  # unlabeled rows, each once
    try:
        check_counts(job.table.n_positive + n_claimed, job.table.n_unlabeled - n_claimed, config)
    except ValueError as exc:
        raise PUError(f"cannot retrain on the recovered labels: {exc}") from None
    features = job.features
    retrain = ScoreRequest(
        features,
        None,
        claimed.row_ids,
        job.for_columns(features, max_unlabeled_ratio=None),
        seed,
        "classify",
        job.executor.schema.feature_types(features),
    )
    scored, *baseline_scored = executor.score(
        [retrain, job.request(features, None, 0)] if baseline_needed else [retrain]
    )
    rows = HeldRows(parts, list(scored.pieces), *held)
    # the retrain's probabilities mapped to the recovered labels it was trained on
    (sums,) = executor.map_reduce(piece_cell_sums, identity, [scored.pieces], [()])
    model_map = fit_map_on_cells(sums, config.calibration_method)
    components = [Component(features, scored.models)]
    metrics = None
    if job.truth is not None:
        true_labels = rows.true_labels
        baseline = rows.outputs.probability
        if baseline_scored:
            baseline = executor.collect(baseline_scored[0].pieces)[2]
            executor.release(baseline_scored[0].pieces)
        metrics = {
            "without_pu": classification_metrics(true_labels > 0, baseline),
            "with_pu": classification_metrics(true_labels > 0, rows.improved_probability),
        }
    job.mark("classification")
    return Outputs(rows, metrics, components, model_map)
