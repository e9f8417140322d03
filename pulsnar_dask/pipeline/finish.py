"""The last stages of a run: alpha over the iterations, its interval, the calibrated
probabilities, the retrain on recovered labels (Algorithm 4) and the model they make."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from pulsnar_dask.core.calibration import fit_calibration_map
from pulsnar_dask.core.combine import RowOutputs
from pulsnar_dask.core.interval import AlphaInterval, alpha_interval
from pulsnar_dask.core.metrics import classification_metrics
from pulsnar_dask.core.model import Component, subproblem_components
from pulsnar_dask.core.subproblem import (
    check_subproblem,
    subproblem_claims,
    subproblems_alpha,
    subproblems_calibration,
)
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.executor import ScoreRequest
from pulsnar_dask.pipeline.job import Job, Reading
from pulsnar_dask.pipeline.method_choice import readings_differ

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
    """

    alphas: list[float]
    alpha: float
    cluster_alphas: list[float]
    cluster_groups: list[list[int]] | None


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
        subtypes = readings[0][1]
        cluster_groups = [(np.flatnonzero(subtypes == g) + 1).tolist() for g in np.unique(subtypes)]
        if len(cluster_groups) < reading.n_clusters:
            logger.info(
                "clusters that claim the same unlabeled rows count once: %s", cluster_groups
            )
    cluster_alphas = [
        float(np.mean([it[c].alpha for it in reading.per_iteration]))
        for c in range(len(reading.first))
    ]
    return Alphas(alphas, float(np.mean(alphas)), cluster_alphas, cluster_groups)


def interval_of(job: Job, reading: Reading, alphas: list[float]) -> AlphaInterval | None:
    """The 95% interval (:func:`~pulsnar_dask.core.interval.alpha_interval`) over the
    readings of both assumptions where auto scored the clusters beside PULSCAR (whose
    readings :func:`~pulsnar_dask.pipeline.method_choice.readings_differ` then weighs);
    None with ``interval_resamples=0``."""
    config = job.config
    if not config.interval_resamples:
        return None
    job.stage(f"95% interval: {config.interval_resamples} resamples of the probabilities")
    assumptions = {reading.method: reading.first}
    if reading.alternative:  # auto: the clusters, scored beside PULSCAR
        assumptions["pulsnar"] = reading.alternative
    interval = alpha_interval(assumptions, config, job.seed, alphas, job.executor.map_reduce)
    if reading.alternative:
        readings_differ(interval, reading.evidence, config.alpha_estimator)
    job.mark("interval")
    return interval


@dataclass(frozen=True)
class Outputs:
    """Per-row vectors (by ascending row id) and what the model is made of.

    Attributes
    ----------
    probability : ndarray
        The combined out-of-fold probability.
    calibrated, improved : ndarray or None
        Calibrated (Algorithm 3) and retrained (Algorithm 4) probabilities, where asked.
    metrics : dict or None
        The retrain's classification metrics against the PU classifier's, with true labels.
    components : list of Component
        The model's fold models.
    model_map : Any
        The model's calibration map.
    """

    probability: np.ndarray
    calibrated: np.ndarray | None
    improved: np.ndarray | None
    metrics: dict[str, Any] | None
    components: list[Component]
    model_map: Any


def outputs_of(
    job: Job, reading: Reading, cluster_alphas: list[float], calibrate: bool, classify: bool
) -> Outputs:
    """The probabilities, their calibration, the retrain on the clusters' claims and the
    fold models the saved model keeps.

    Raises
    ------
    PUError
        Where the recovered labels leave too few rows of a label for the folds.
    """
    config, seed, executor = job.config, job.seed, job.executor
    if calibrate or classify:
        job.stage("calibrating probabilities")
    calibration = subproblems_calibration(reading.first, config, executor.map_reduce)
    rows = RowOutputs(job.row_ids, job.labels if classify else None, calibration, seed)
    claims = subproblem_claims(reading.first, cluster_alphas) if classify else None
    for c, r in enumerate(reading.first):
        rows.add(*job.rows_of(r), claims[c] if claims else None)  # one subproblem at a time
    reading.release_pieces(executor)  # the workers' copies of the probabilities are done with
    probability = rows.probability
    model_map = calibration.combined
    calibrated = improved = metrics = None
    if calibrate or classify:
        calibrated = rows.calibrated()
    if not classify:
        components = subproblem_components(reading.first, calibration.per_subproblem)
        return Outputs(probability, calibrated, None, None, components, model_map)
    # with true labels, the PU classifier the retrain is compared with: PULSCAR's scoring,
    # trained alongside the retrain where the run read PULSNAR
    true_labels = job.true_labels
    baseline_needed = true_labels is not None and reading.method != "pulscar"
    job.stage(
        "classification: retraining on recovered labels"
        + (" (and scoring PULSCAR, the baseline it is compared with)" if baseline_needed else "")
    )
    new_labels = rows.recovered_labels()
    try:
        check_subproblem(new_labels, config)
    except ValueError as exc:
        raise PUError(f"cannot retrain on the recovered labels: {exc}") from None
    features = job.features
    retrain = ScoreRequest(
        features,
        None,
        job.row_ids[new_labels > job.labels],
        job.for_columns(features, max_unlabeled_ratio=None),
        seed,
        "classify",
        job.executor.schema.feature_types(features),
    )
    scored, *baseline_scored = executor.score(
        [retrain, job.request(features, None, 0)] if baseline_needed else [retrain]
    )
    _, trained_on, improved = executor.collect(scored.pieces)
    executor.release(scored.pieces)
    components = [Component(features, scored.models)]
    # the retrain's probabilities mapped to the recovered labels it was trained on
    model_map = fit_calibration_map(improved, trained_on, None, config.calibration_method)
    if true_labels is not None:
        baseline = probability
        if baseline_scored:
            baseline = executor.collect(baseline_scored[0].pieces)[2]
            executor.release(baseline_scored[0].pieces)
        metrics = {
            "without_pu": classification_metrics(true_labels > 0, baseline),
            "with_pu": classification_metrics(true_labels > 0, improved),
        }
    job.mark("classification")
    return Outputs(probability, calibrated, improved, metrics, components, model_map)
