"""PULSNAR's clusters of the labeled positives: the clustering and a subproblem per
cluster."""

from __future__ import annotations

import numpy as np

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.mixture import MixtureFit, cluster_labels, clustering_matrix
from pulsnar_dask.core.subproblem import SubproblemResult
from pulsnar_dask.core.subtypes import (
    Clustering,
    choose_mixture,
    fit_bic_curve,
    make_clustering,
    min_cluster_size,
    select_features,
    subtype_profiles,
)
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.executor import Executor
from pulsnar_dask.pipeline.job import Job, Reading


def score_clusters(job: Job, beside_pulscar: bool) -> tuple[Reading, list[SubproblemResult]]:
    """Cluster the labeled positives and score a subproblem per cluster, iteration after
    iteration.

    Parameters
    ----------
    job : Job
    beside_pulscar : bool
        Also score PULSCAR's subproblem (every positive), alongside the clusters, where
        there is more than one cluster (auto weighs the two).

    Returns
    -------
    (reading, pulscar)
        PULSNAR's reading, and PULSCAR's subproblem in each iteration where it was scored
        (else empty).
    """
    features, iterations = job.features, job.iterations
    job.stage("PULSNAR: importance model and clustering of the positives")
    # the threads the user asked for, if any: the importance model trains alone, so the
    # executor may give it more than one task's share
    clustering = cluster_positives(
        job.executor, job.for_columns(features, n_threads=job.asked.n_threads), job.seed
    )
    positive_ids = job.table.positive_ids
    job.mark("clustering")
    n_clusters = clustering.n_clusters
    model_cols = [features[i] for i in clustering.model_features]
    job.stage(f"scoring: {n_clusters} cluster subproblem(s) x {iterations} iteration(s)")

    pending = [
        job.request(model_cols, positive_ids[clustering.labels == c], it, f"cluster{c + 1}")
        for it in range(iterations)
        for c in range(n_clusters)
    ]
    if beside_pulscar and n_clusters > 1:
        pending += [job.request(features, None, it) for it in range(iterations)]
    results = job.subproblems(pending)
    per_iteration = [results[i * n_clusters : (i + 1) * n_clusters] for i in range(iterations)]
    reading = Reading(
        "pulsnar", per_iteration, n_clusters, clustering.mixture_components, clustering
    )
    return reading, results[iterations * n_clusters :]


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
    chosen, bic, positive_labels = _assigned(
        executor, clustering_matrix(X_positive, gain[cluster_idx]), config, seed
    )  # the clustering matrix goes before the profiles take their copies
    X_described, names = executor.schema.one_hot(X_positive, cluster_cols)
    profiles = subtype_profiles(X_described, positive_labels, names)
    return make_clustering(chosen, bic, positive_labels, gain, model_idx, cluster_idx, profiles)


def _assigned(
    executor: Executor, Z: np.ndarray, config: PUConfig, seed: int
) -> tuple[MixtureFit, np.ndarray, np.ndarray]:
    """The mixture the BIC chooses on the clustering matrix ``Z`` (categorical features
    as their codes: as indicators, a column of noise splits the positives by its
    categories), its BIC curve and each positive's cluster."""
    curves = fit_bic_curve(executor.map, Z, config, seed)
    chosen, bic, _ = choose_mixture(curves, config)
    return chosen, bic, cluster_labels(chosen, Z, min_cluster_size(config, len(Z)))
