"""``method="auto"``: PULSCAR's alpha, with PULSNAR's clusters as the reading the interval
also spans; the clusters' alpha where even their tail reading lies past PULSCAR's beyond
the noise of both."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pulsnar_dask.core.interval import AlphaInterval
from pulsnar_dask.core.subproblem import SubproblemResult
from pulsnar_dask.pipeline.job import Reading

logger = logging.getLogger(__name__)

# How far the clusters' tail reading must lie above PULSCAR's alpha, in their combined
# bootstrap spreads, for auto to read the clusters' alpha: chosen leave-one-family-out
# (docs/decisions/2026-12-07-clusters-tail-past-pulscar.md).
CLUSTERS_PAST_PULSCAR = 2.0


def choose_reading(
    reading: Reading, pulscar: list[SubproblemResult], n_unlabeled: int, n_positive: int
) -> None:
    """Auto's reading, set on PULSNAR's in place: PULSCAR's alpha; where the positives
    form several clusters, their subproblems become the alternative the interval spans
    (:func:`record_readings` then records the two readings and says whose alpha is read).

    Parameters
    ----------
    reading : Reading
        PULSNAR's, from :func:`~pulsnar_dask.pipeline.clusters.score_clusters`; its
        method, subproblems, evidence and alternative are set here.
    pulscar : list of SubproblemResult
        PULSCAR's subproblem in each iteration, scored beside the clusters (empty where
        there is one cluster: the cluster is then PULSCAR's subproblem). Where the
        clusters were not scored (no interval to span them), ``reading`` holds no
        subproblem.
    n_unlabeled, n_positive : int
        The table's unlabeled rows and labeled positives: where the clusters scored fewer
        (a sample, ``max_reading_rows``), ``evidence["clusters_unlabeled_rows"]`` and
        ``evidence["clusters_positive_rows"]`` record how many.
    """
    clustering = reading.clustering
    n_clusters = reading.n_clusters
    evidence: dict[str, Any] = {
        "n_clusters": n_clusters,
        "cluster_features": int(clustering.cluster_features.size),
        "model_features": int(clustering.model_features.size),
    }
    if pulscar and not reading.per_iteration:
        evidence["reason"] = (
            f"alpha is PULSCAR's; the {n_clusters} clusters of positives are not read, as "
            "there is no interval to span their reading or weigh it against PULSCAR's "
            "(interval_resamples=0)"
        )
    elif pulscar:
        scored = int(reading.first[0].counts.count(0))
        positives = int(sum(r.counts.count(1) for r in reading.first))
        if scored < n_unlabeled:
            evidence["clusters_unlabeled_rows"] = scored
            if positives < n_positive:  # the clusters had more than the floor to sample
                evidence["clusters_positive_rows"] = positives
        evidence["reason"] = (
            f"alpha is PULSCAR's; the {n_clusters} clusters of positives are read as "
            f"PULSNAR reads them{on_a_sample(evidence, n_unlabeled, n_positive)}, and the "
            "interval spans both readings"
        )
        reading.alternative = reading.first
    else:
        evidence["reason"] = "the positives form one cluster"
    # one cluster found on part of the features is no evidence that there are no subtypes
    evidence["subtypes_may_be_unseen"] = (
        n_clusters == 1 and evidence["cluster_features"] < evidence["model_features"]
    )
    if evidence["subtypes_may_be_unseen"]:
        evidence["reason"] += (
            f" on the top {evidence['cluster_features']} of the {evidence['model_features']} "
            "features the classifier uses; subtypes that differ a little in many features "
            "can go unseen there, and PULSCAR then reads alpha low"
        )
        logger.warning("method auto: %s", evidence["reason"])
    elif not reading.alternative:  # else record_readings says whose alpha is read
        logger.info("method auto: %s", evidence["reason"])
    if pulscar:
        reading.per_iteration = [[r] for r in pulscar]
    reading.method, reading.n_clusters, reading.evidence = "pulscar", 1, evidence


def on_a_sample(evidence: Mapping[str, Any], n_unlabeled: int, n_positive: int) -> str:
    """Words that say the clusters were read on a sample of the table (the evidence's
    ``clusters_unlabeled_rows`` and ``clusters_positive_rows``), to follow "read"; ``""``
    where they scored every row."""
    scored = evidence.get("clusters_unlabeled_rows")
    if not scored:
        return ""
    text = f" on a sample of {scored:,} of the {n_unlabeled:,} unlabeled rows"
    positives = evidence.get("clusters_positive_rows")
    if positives:
        text += f" and {positives:,} of the {n_positive:,} labeled positives"
    return text


def clusters_past_pulscar(readings: Mapping[str, Sequence[float]], reader: str) -> float:
    """How far the clusters' tail reading lies above PULSCAR's by ``reader``, in their
    combined bootstrap spreads, from ``"<assumption> <reader>"`` -> ``(alpha, sd)``
    (:attr:`~pulsnar_dask.core.interval.AlphaInterval.readings`)."""
    (a, sd_a), (tail, sd_tail) = readings[f"pulscar {reader}"], readings["pulsnar tail"]
    return (tail - a) / max(math.hypot(sd_a, sd_tail), 1e-12)


def reads_the_clusters(
    readings: Mapping[str, Sequence[float]], reader: str, line: float = CLUSTERS_PAST_PULSCAR
) -> bool:
    """Whether auto reads the clusters' alpha: :func:`clusters_past_pulscar` beyond
    ``line``, and the clusters' reading by ``reader`` above PULSCAR's."""
    above = readings[f"pulsnar {reader}"][0] > readings[f"pulscar {reader}"][0]
    return clusters_past_pulscar(readings, reader) > line and above


def record_readings(interval: AlphaInterval, evidence: dict[str, Any], reader: str) -> None:
    """Record auto's two readings by ``reader`` in ``evidence["readings"]`` and say which
    alpha auto reads: PULSCAR's (``"pulscar"``: the positives labeled at random), or the
    clusters' (``"pulsnar"``: each subtype labeled at its own rate) where even their tail
    reading lies more than :data:`CLUSTERS_PAST_PULSCAR` of its and PULSCAR's combined
    bootstrap spreads above PULSCAR's alpha (and their own reading above it too). Where
    subtypes overlap one another or the negatives, the clusters' kernel reading
    over-counts and their tail reading far less, so a kernel reading above PULSCAR's
    alone leaves PULSCAR's alpha.

    The interval spans both either way; where that leaves it too wide to act on, the run
    warns so and names them (:func:`~pulsnar_dask.pipeline.finish.interval_of`).

    Parameters
    ----------
    interval : AlphaInterval
        Spanning ``"pulscar <reader>"``, ``"pulsnar <reader>"`` and ``"pulsnar tail"``.
    evidence : dict
        Auto's evidence (:func:`choose_reading`), updated in place: ``readings`` (the two
        alphas, rounded to 4 places), ``clusters_past_pulscar`` (the clusters' tail reading
        less PULSCAR's alpha, in combined spreads, to 2 places), ``read`` (``"pulscar"`` or
        ``"pulsnar"``: whose alpha auto reads) and, where it reads the clusters',
        ``reason``.
    reader : str
        The configured alpha reader.
    """
    readings = interval.readings
    a, b = (readings[f"{m} {reader}"][0] for m in ("pulscar", "pulsnar"))
    tail, past = readings["pulsnar tail"][0], clusters_past_pulscar(readings, reader)
    read = "pulsnar" if reads_the_clusters(readings, reader) else "pulscar"
    k = evidence["n_clusters"]
    evidence["readings"] = {"pulscar": round(a, 4), "pulsnar": round(b, 4)}
    evidence["clusters_past_pulscar"] = round(past, 2)
    evidence["read"] = read
    if read == "pulsnar":
        evidence["reason"] = (
            evidence["reason"].replace("alpha is PULSCAR's;", "alpha is PULSNAR's:", 1)
            + f"; even the clusters' tail reading, {tail:.3f}, lies {past:.2f} of the "
            f"readings' spreads above PULSCAR's {a:.3f}, so the subtypes are labeled at "
            "different rates"
        )
    logger.info(
        "method auto: %s (PULSCAR reads %.3f and the %d clusters %.3f; their tail %.3f, %.2f "
        "spreads past PULSCAR's)",
        evidence["reason"], a, k, b, tail, past,
    )  # fmt: skip
