"""PULSNAR's clusters of the labeled positives: the clustering and a subproblem per
cluster."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.folds import sampled_rows
from pulsnar_dask.core.map_reduce import identity
from pulsnar_dask.core.mixture import MIN_CLUSTER_SIZE, component_ranks, kept_components, scaling
from pulsnar_dask.core.positive_pieces import (
    column_medians,
    piece_clusters,
    piece_columns,
    piece_components,
    piece_present,
    piece_rows,
)
from pulsnar_dask.core.subproblem import SubproblemResult
from pulsnar_dask.core.subtypes import (
    Clustering,
    choose_mixture,
    fit_bic_curve,
    make_clustering,
    min_cluster_size,
    profiles_of,
    seeded_positions,
    select_features,
)
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.executor import Executor
from pulsnar_dask.pipeline.job import Job, Reading

logger = logging.getLogger(__name__)


def score_clusters(job: Job, beside_pulscar: bool) -> tuple[Reading, list[SubproblemResult]]:
    """Cluster the labeled positives and score a subproblem per cluster, iteration after
    iteration.

    Parameters
    ----------
    job : Job
    beside_pulscar : bool
        Also score PULSCAR's subproblem (every positive) in each iteration, alongside the
        clusters, where there is more than one cluster (auto's interval spans the two).
        The clusters are then scored once (what auto reads of them is the first
        iteration's reading), on a sample of the table past ``max_reading_rows``
        unlabeled rows (about that many, and the same share of each cluster's positives
        but about 1,000 at least, :func:`reading_positives`), and not at all without an
        interval (``interval_resamples=0``), which alone reads them.

    Returns
    -------
    (reading, pulscar)
        PULSNAR's reading (no subproblems where the clusters were not scored), and
        PULSCAR's subproblem in each iteration where it was scored (else empty).
    """
    features, iterations = job.features, job.iterations
    job.stage("PULSNAR: importance model and clustering of the positives")
    # the threads the user asked for, if any: the importance model trains alone, so the
    # executor may give it more than one task's share
    positive_ids = job.table.positive_ids
    clustering = cluster_positives(
        job.executor,
        job.for_columns(features, n_threads=job.asked.n_threads),
        job.seed,
        positive_ids,
    )
    job.mark("clustering")
    n_clusters = clustering.n_clusters
    model_cols = [features[i] for i in clustering.model_features]
    beside = beside_pulscar and n_clusters > 1
    cluster_iterations, share = iterations, 1.0
    if beside:
        cluster_iterations = 1 if job.config.interval_resamples else 0
        share = reading_share(job.table.n_unlabeled, job.config.max_reading_rows)
    if beside and not cluster_iterations:
        job.stage(
            f"scoring: PULSCAR's subproblem x {iterations} iteration(s); the {n_clusters} "
            "clusters are not read (interval_resamples=0)"
        )
    else:
        job.stage(
            f"scoring: {n_clusters} cluster subproblem(s) x {cluster_iterations} iteration(s)"
            + (f" beside PULSCAR's x {iterations}" if beside else "")
            + (f", the clusters on a {share:.1%} sample of the table" if share < 1 else "")
        )

    pending = [
        job.request(
            model_cols,
            reading_positives(positive_ids[clustering.labels == c], share, job.seed + it),
            it,
            f"cluster{c + 1}",
            share,
        )
        for it in range(cluster_iterations)
        for c in range(n_clusters)
    ]
    if beside:
        pending += [job.request(features, None, it) for it in range(iterations)]
    results = job.subproblems(pending)
    per_iteration = [
        results[i * n_clusters : (i + 1) * n_clusters] for i in range(cluster_iterations)
    ]
    reading = Reading(
        "pulsnar", per_iteration, n_clusters, clustering.mixture_components, clustering
    )
    return reading, results[cluster_iterations * n_clusters :]


def reading_share(n_unlabeled: int, most: int | None) -> float:
    """Share of the unlabeled rows the clusters' reading beside PULSCAR scores: all of
    them up to ``most`` (``max_reading_rows``; None: no cap)."""
    return 1.0 if most is None or n_unlabeled <= most else most / n_unlabeled


# Where the clusters are read on a sample, each keeps about this many of its labeled
# positives at least (all, where it has no more): more than nine in ten of the benchmark
# families' clusters hold fewer, and are read whole
# (docs/decisions/2026-12-07-clusters-positives-sampled.md).
MIN_READING_POSITIVES = 1_000


def reading_positives(ids: np.ndarray, share: float, seed: int) -> np.ndarray:
    """The labeled positives of a cluster that its reading on a sample scores: the same
    ``share`` as of the unlabeled rows, so the sample is one of the table, but about
    :data:`MIN_READING_POSITIVES` at least (each kept by
    :func:`~pulsnar_dask.core.folds.sampled_rows`, the same rows on any partitioning).

    Parameters
    ----------
    ids : ndarray
        The cluster's labeled positives.
    share : float
        The share of the unlabeled rows the clusters score (:func:`reading_share`).
    seed : int
        The scoring's seed.

    Returns
    -------
    ndarray
        A subset of ``ids``, in their order; ``ids`` itself where ``share`` is 1 or the
        cluster holds no more than :data:`MIN_READING_POSITIVES`.
    """
    share = max(share, MIN_READING_POSITIVES / max(ids.size, 1))
    return ids if share >= 1 else ids[sampled_rows(ids, share, seed)]


def cluster_positives(
    executor: Executor, config: PUConfig, seed: int, positive_ids: np.ndarray
) -> Clustering:
    """PULSNAR's clustering of the labeled positives: the importance model's gains pick
    the features, mixtures of growing size are fitted on a seeded sample of the
    positives' gain-scaled values (:func:`~pulsnar_dask.core.subtypes.fit_bic_curve`),
    and the chosen one assigns every positive where its rows are held. Only sums over
    the positives, the sample and each positive's cluster come to this process
    (:mod:`pulsnar_dask.core.positive_pieces`).

    Parameters
    ----------
    positive_ids : ndarray
        The labeled positives' ids, ascending (the order of the returned labels).

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
    columns = [executor.features[i] for i in cluster_idx]
    gain_used, schema = gain[cluster_idx], executor.schema
    pieces = executor.positive_pieces(columns)
    try:

        def reduced(per_piece: Callable[..., Any], *args: Any, finish=identity) -> Any:
            return executor.map_reduce(per_piece, finish, [pieces], [args])[0]

        sums = reduced(piece_columns, gain_used, schema, columns)
        medians = np.full(len(columns), np.nan)
        missing = np.flatnonzero(sums.missing > 0)
        if missing.size:
            medians[missing] = reduced(piece_present, gain_used, missing, finish=column_medians)
        scaled = scaling(gain_used, sums.low, sums.high, medians)
        n_positives = positive_ids.size
        positions = seeded_positions(n_positives, config.max_cluster_rows, seed)
        wanted = positive_ids if positions is None else positive_ids[positions]
        sample_ids, sample = reduced(piece_rows, wanted).arrays
        sample = sample[np.argsort(sample_ids, kind="stable")]
        curves = fit_bic_curve(executor.map, scaled.apply(sample), config, seed, n_positives)
        chosen, bic, _ = choose_mixture(curves, config)
        counts = reduced(piece_components, scaled, chosen)
        least = min_cluster_size(config, n_positives)
        kept = kept_components(counts, least)
        tops = schema.top_levels(sums.codes)
        described, names = schema.indicators(sample, columns, tops)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
            shift = np.nan_to_num(np.nanmean(described, axis=0))
        shift[schema.is_indicator(columns, tops)] = 0.0  # whole-number sums
        assigned, profile = reduced(
            piece_clusters, scaled, chosen, kept, schema, columns, tops, shift
        )
    finally:
        executor.release(pieces)
    ids, raw = assigned.arrays
    order = np.argsort(ids, kind="stable")
    if not (sample_ids.size == wanted.size and np.array_equal(ids[order], positive_ids)):
        raise RuntimeError("the positives' pieces do not hold the table's labeled positives")
    raw = raw[order].astype(np.int64)
    rank = component_ranks(np.bincount(raw, minlength=chosen.n_components), kept)
    profiles = profiles_of(profile.renumbered(rank), names)
    clustering = make_clustering(chosen, bic, rank[raw], gain, model_idx, cluster_idx, profiles)
    if config.n_clusters is not None and clustering.n_clusters != config.n_clusters:
        logger.warning(
            "%d clusters were asked for and %d kept: the mixture had %d components, and "
            "those holding fewer than %d positives (min_cluster_fraction, never under %d) "
            "were merged",
            config.n_clusters,
            clustering.n_clusters,
            chosen.n_components,
            least,
            MIN_CLUSTER_SIZE,
        )
    return clustering
