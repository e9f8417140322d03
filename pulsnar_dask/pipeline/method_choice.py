"""``method="auto"``: PULSCAR's alpha, with PULSNAR's clusters as the reading the interval
also spans, and a warning where the two readings differ beyond their noise."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from pulsnar_dask.core.interval import Z_95, AlphaInterval
from pulsnar_dask.core.subproblem import SubproblemResult
from pulsnar_dask.pipeline.job import Reading

logger = logging.getLogger(__name__)


def choose_reading(reading: Reading, pulscar: list[SubproblemResult]) -> None:
    """Auto's reading, set on PULSNAR's in place: PULSCAR's alpha; where the positives
    form several clusters, their subproblems become the alternative the interval spans
    (:func:`readings_differ` then weighs the two).

    Parameters
    ----------
    reading : Reading
        PULSNAR's, from :func:`~pulsnar_dask.pipeline.clusters.score_clusters`; its
        method, subproblems, evidence and alternative are set here.
    pulscar : list of SubproblemResult
        PULSCAR's subproblem in each iteration, scored beside the clusters (empty where
        there is one cluster: the cluster is then PULSCAR's subproblem).
    """
    clustering = reading.clustering
    n_clusters = reading.n_clusters
    evidence: dict[str, Any] = {
        "n_clusters": n_clusters,
        "cluster_features": int(clustering.cluster_features.size),
        "model_features": int(clustering.model_features.size),
        "readings_differ": None,  # not weighed: one cluster, or no interval
    }
    if pulscar:
        evidence["reason"] = (
            f"alpha is PULSCAR's; the {n_clusters} clusters of positives are read as "
            "PULSNAR reads them, and the interval spans both readings"
        )
        reading.alternative = reading.first
        reading.per_iteration = [[r] for r in pulscar]
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
    else:
        logger.info("method auto: %s", evidence["reason"])
    reading.method, reading.n_clusters, reading.evidence = "pulscar", 1, evidence


def readings_differ(interval: AlphaInterval, evidence: dict[str, Any], reader: str) -> None:
    """Weigh auto's two readings against their bootstrap noise, in ``evidence``.

    ``evidence["readings"]`` gets PULSCAR's and the clusters' alpha by ``reader``;
    ``evidence["readings_differ"]`` (None until weighed) is True, and the run warns, where
    they lie more than 1.96 of their combined standard deviations apart: the data cannot
    tell whether the positives were labeled at random (PULSCAR's reading) or each subtype
    at its own rate (the clusters'), and alpha may lie anywhere the interval spans.

    Parameters
    ----------
    interval : AlphaInterval
        Spanning ``"pulscar <reader>"`` and ``"pulsnar <reader>"``.
    evidence : dict
        Auto's evidence (:func:`choose_reading`), updated in place.
    reader : str
        The configured alpha reader.
    """
    (a, sd_a), (b, sd_b) = (interval.readings[f"{m} {reader}"] for m in ("pulscar", "pulsnar"))
    evidence["readings"] = {"pulscar": round(a, 4), "pulsnar": round(b, 4)}
    evidence["readings_differ"] = bool(abs(a - b) > Z_95 * float(np.hypot(sd_a, sd_b)))
    if evidence["readings_differ"]:
        logger.warning(
            "method auto cannot tell SCAR from SNAR: PULSCAR reads %.3f and the %d clusters "
            "%.3f, further apart than their noise; alpha is PULSCAR's, and nearer the "
            "clusters' if each subtype is labeled at its own rate: the interval spans both",
            a,
            evidence["n_clusters"],
            b,
        )
