"""``method="auto"``: PULSCAR or PULSNAR's clusters, the valley of PULSCAR's scores, and
the separated-classes reading the interval also spans."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from pulsnar_dask.core.alpha import (
    VALLEY_MAX_LABELED_BELOW,
    reliable_negatives,
    separated_count,
    valley_cut,
)
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.interval import AlphaInterval
from pulsnar_dask.core.scar_or_snar import choose_method
from pulsnar_dask.core.subproblem import SubproblemResult, read_alpha, subproblems_alpha
from pulsnar_dask.pipeline.job import Job, Reading
from pulsnar_dask.pipeline.result import SEPARATED_READING

logger = logging.getLogger(__name__)

# The second scoring (:func:`scored_against_negatives`) needs this many reliable
# negatives per fold, to learn what the negatives look like from.
MIN_RELIABLE_NEGATIVES_PER_FOLD = 10


def choose_reading(job: Job, reading: Reading, pulscar: list[SubproblemResult]) -> None:
    """Auto's choice, made on PULSNAR's reading in place: PULSCAR or the clusters
    (:func:`~pulsnar_dask.core.scar_or_snar.choose_method`), then the valley of PULSCAR's
    scores where one is plain (:func:`valley_readings`), and where the clusters stay,
    the separated-classes reading (:func:`separated_reading`).

    Parameters
    ----------
    job : Job
    reading : Reading
        PULSNAR's, from :func:`~pulsnar_dask.pipeline.clusters.score_clusters`; its
        method, subproblems, evidence and alternative are set here.
    pulscar : list of SubproblemResult
        PULSCAR's subproblem in each iteration, scored beside the clusters (empty where
        there is one cluster: the cluster is then PULSCAR's subproblem).
    """
    config = job.config
    compare = bool(pulscar)
    first = reading.first
    # hidden positives for the test against sampling noise: the larger reading's (under
    # SNAR PULSCAR reads low, and a smaller count makes more noise)
    n_hidden = None
    if compare:
        reading.first_read = (first, subproblems_alpha(first, config.claim_overlap))
        larger = max(reading.pulscar_first.alpha, reading.first_read[1][0])
        n_hidden = larger * int(np.sum(reading.pulscar_first.labels == 0))
    method, evidence = choose_method(
        [r.alpha for r in first],
        [r.n_positive for r in first],
        reading.clustering.cluster_features.size,
        reading.clustering.model_features.size,
        n_hidden,
    )
    reading.method, reading.evidence = method, evidence
    if method == "pulscar":
        if compare:
            reading.alternative = first
            reading.per_iteration = [[r] for r in pulscar]
        reading.n_clusters = 1
    elif compare:
        reading.alternative = [reading.pulscar_first]
    whole = [it[0] for it in reading.per_iteration] if method == "pulscar" else pulscar
    if config.valley_depth > 0:
        valley_runs = valley_readings(whole, evidence, config, job.seed, job.rescore)
        if valley_runs is not None:
            if method == "pulsnar":
                reading.alternative = first
            reading.pulscar_first = whole[0]  # the PU classifier, which the checks read
            reading.per_iteration = [[r] for r in valley_runs]
            reading.method, reading.n_clusters, reading.at_valley = "pulscar", 1, True
    # read at PULSNAR's clusters, the interval also spans the reading that needs no
    # clusters but assumes the classes do not overlap
    if reading.method == "pulsnar" and config.interval_resamples:
        scored = scored_against_negatives(whole[:1], config, job.rescore)
        if scored is not None:
            evidence["separated"] = separated_reading(scored[0][0], scored[1][0])
    log = logger.warning if evidence["subtypes_may_be_unseen"] else logger.info
    log("method auto: %s (%s)", reading.method, evidence["reason"])


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
