"""PULSNAR's clusters of the labeled positives: the clustering, a subproblem per cluster,
and the cuts of clusters whose halves hide positives at different rates."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.mixture import MixtureFit, cluster_labels, clustering_matrix
from pulsnar_dask.core.subproblem import SubproblemResult
from pulsnar_dask.core.subtypes import (
    Clustering,
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
from pulsnar_dask.pipeline.executor import Executor, ScoreRequest
from pulsnar_dask.pipeline.job import Job, Reading

logger = logging.getLogger(__name__)


def score_clusters(job: Job, beside_pulscar: bool) -> tuple[Reading, list[SubproblemResult]]:
    """Cluster the labeled positives and score a subproblem per cluster, iteration after
    iteration; cut the clusters whose halves differ (:func:`split_clusters`).

    Parameters
    ----------
    job : Job
    beside_pulscar : bool
        Also score PULSCAR's subproblem (every positive), alongside the clusters, where
        there is more than one cluster or one a cut may make two (auto weighs the two).

    Returns
    -------
    (reading, pulscar)
        PULSNAR's reading, and PULSCAR's subproblem in each iteration where it was scored
        and more than one cluster remains (else empty).
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

    def group_requests(groups: list[np.ndarray], name: str) -> list[ScoreRequest]:
        """Each group of positives' subproblem, iteration after iteration."""
        return [
            job.request(model_cols, ids, it, f"{name}{j + 1}")
            for it in range(iterations)
            for j, ids in enumerate(groups)
        ]

    pending = group_requests(
        [positive_ids[clustering.labels == c] for c in range(n_clusters)], "cluster"
    )
    may_cut = any(h is not None for h in clustering.halves)
    compare = beside_pulscar and (n_clusters > 1 or may_cut)
    if compare:
        pending += [job.request(features, None, it) for it in range(iterations)]
    results = job.subproblems(pending)
    per_iteration = [results[i * n_clusters : (i + 1) * n_clusters] for i in range(iterations)]
    pulscar = results[iterations * n_clusters :]
    mixture_components = clustering.mixture_components
    if may_cut:
        per_iteration, clustering = split_clusters(
            job.executor, clustering, per_iteration, positive_ids, job.config, job.seed,
            lambda parts: job.subproblems(group_requests(parts, "part")),
        )  # fmt: skip
    reading = Reading(
        "pulsnar", per_iteration, clustering.n_clusters, mixture_components, clustering
    )
    # one cluster left uncut is read as without the cut (its PULSCAR scoring unused)
    if not (compare and reading.n_clusters > 1):
        return reading, []
    return reading, pulscar


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
    chosen, bic, positive_labels, halves = _assigned(
        executor, clustering_matrix(X_positive, gain[cluster_idx]), config, seed
    )  # the clustering matrix goes before the profiles take their copies
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


def _assigned(
    executor: Executor, Z: np.ndarray, config: PUConfig, seed: int
) -> tuple[MixtureFit, np.ndarray, np.ndarray, list[np.ndarray | None]]:
    """The mixture the BIC chooses on the clustering matrix ``Z`` (categorical features
    as their codes: as indicators, a column of noise splits the positives by its
    categories), its BIC curve, each positive's cluster and each cluster's halves (none
    without ``cluster_split``)."""
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
    return chosen, bic, positive_labels, halves


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
        for c, (_, results, half) in enumerate(clusters):
            if half is None:
                continue
            # the subproblem's positives are the cluster's, both by ascending id
            if halves_differ(results[0].positive_probabilities, half, config.cluster_split):
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
