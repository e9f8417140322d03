"""SCAR or SNAR: ``method="auto"``'s call from PULSNAR's clusters, whether the hidden
positives' subtype mix differs from the labeled positives' by more than sampling would
make it under labeling at random."""

from __future__ import annotations

import numpy as np

# Subtype-mix distance below which ``method="auto"`` keeps PULSCAR (see choose_method).
SCAR_MIX_DISTANCE = 0.1


# Clusters below this share of the positives are left out of the subtype-mix distance.
MIX_MIN_SHARE = 0.02


def _weighed(sizes: np.ndarray) -> np.ndarray:
    """The clusters the subtype mix weighs (mask): those holding at least
    ``MIX_MIN_SHARE`` of the positives."""
    return sizes >= MIX_MIN_SHARE * sizes.sum()


def subtype_mix_distance(cluster_alphas: np.ndarray, cluster_sizes: np.ndarray) -> float:
    """How far the hidden positives' subtype mix is from the labeled positives'.

    Total variation distance between each cluster's share of the hidden positives
    (``alpha_c / sum(alpha)``) and its share of the labeled positives (``n_c / n``). When
    positives were labeled at random (SCAR) every cluster hides positives in proportion
    to its labeled ones and the distance is near 0; the SNAR benchmarks give 0.12-0.8.
    Clusters holding less than ``MIX_MIN_SHARE`` of the positives are left out: a few
    dozen positives read a share of the unlabeled rows too noisily to weigh.

    Returns
    -------
    float
        In [0, 1]; 0 for fewer than two clusters or when no positive is hidden anywhere.
    """
    alphas = np.clip(np.asarray(cluster_alphas, dtype=float), 0.0, None)
    sizes = np.asarray(cluster_sizes, dtype=float)
    keep = _weighed(sizes)
    alphas, sizes = alphas[keep], sizes[keep]
    if alphas.size < 2 or alphas.sum() <= 0:
        return 0.0
    return float(0.5 * np.abs(alphas / alphas.sum() - sizes / sizes.sum()).sum())


# Draws of the SCAR null behind :func:`scar_mix_noise` (seeded: the same answer each run).
NULL_DRAWS = 4000


def scar_mix_noise(cluster_sizes: np.ndarray, n_hidden: float, quantile: float = 0.95) -> float:
    """The subtype-mix distance that sampling alone reaches under SCAR.

    Under SCAR each hidden positive falls in a cluster with that cluster's share of the
    labeled positives, so the hidden counts are a multinomial draw of ``n_hidden`` over
    those shares. Returned is the ``quantile`` of the distance
    (:func:`subtype_mix_distance`, the same clusters left out) between such draws and
    the labeled shares: with a few dozen hidden positives over ten equal clusters it is
    about 0.25-0.35. The clusters' readings are noisier still (each is read by its own
    classifier), so this is the least a distance must exceed to say SNAR.

    Parameters
    ----------
    cluster_sizes : ndarray of shape (n_clusters,)
        Labeled positives per cluster.
    n_hidden : float
        Hidden positives (alpha times the unlabeled rows).
    quantile : float

    Returns
    -------
    float
        In [0, 1]; 0 with fewer than two clusters counted, 1 with no hidden positive.

    Raises
    ------
    ValueError
        If ``n_hidden`` is not finite.
    """
    if not np.isfinite(n_hidden):
        raise ValueError(f"n_hidden must be finite, got {n_hidden}")
    sizes = np.asarray(cluster_sizes, dtype=float)
    sizes = sizes[_weighed(sizes)]
    if sizes.size < 2:
        return 0.0
    n = round(max(float(n_hidden), 0.0))
    if n < 1:
        return 1.0
    shares = sizes / sizes.sum()
    draws = np.random.default_rng(0).multinomial(n, shares, size=NULL_DRAWS)
    distances = 0.5 * np.abs(draws / n - shares).sum(axis=1)
    return float(np.quantile(distances, quantile))


def choose_method(
    cluster_alphas: np.ndarray,
    cluster_sizes: np.ndarray,
    cluster_features: int | None = None,
    model_features: int | None = None,
    n_hidden: float | None = None,
) -> tuple[str, dict]:
    """Decide between PULSCAR and PULSNAR from PULSNAR's clusters (``method="auto"``).

    PULSCAR when the positives form one cluster, or when the clusters hide positives in
    proportion to their labeled ones: :func:`subtype_mix_distance` below
    ``SCAR_MIX_DISTANCE``, or no farther than sampling alone takes it under SCAR
    (:func:`scar_mix_noise` of ``n_hidden``). The data then look SCAR, and one
    subproblem over all positives reads alpha with less noise than a sum over clusters.
    PULSNAR otherwise.

    One cluster found on only part of the features the classifier uses
    (``cluster_features < model_features``, the top ``max_cluster_features`` by gain) is
    weak evidence of SCAR: subtypes that differ a little in each of many features go
    unseen there (the wide benchmark's five subtypes: docs/decisions/), and
    PULSCAR then reads alpha low. The evidence says so (``subtypes_may_be_unseen``).

    Parameters
    ----------
    cluster_alphas, cluster_sizes : ndarray of shape (n_clusters,)
        Each cluster's alpha and labeled positives.
    cluster_features, model_features : int or None
        Features the positives were clustered on, and features the classifier uses;
        ``None``: not known.
    n_hidden : float or None
        Hidden positives for the sampling noise: the larger of PULSCAR's and PULSNAR's
        alpha times the unlabeled rows (under SNAR PULSCAR reads low, and fewer hidden
        positives would make the noise, and so the case for PULSCAR, larger than it is);
        ``None`` (or not finite): no test against sampling noise.

    Returns
    -------
    (method, evidence)
        ``"pulscar"`` or ``"pulsnar"``, and a JSON-ready dict: ``n_clusters``,
        ``subtype_mix_distance``, ``threshold``, ``sampling_noise`` (the distance that
        sampling alone reaches, or ``None``), ``reason`` and ``subtypes_may_be_unseen``;
        with the feature counts, also ``cluster_features`` and ``model_features``.
    """
    distance = subtype_mix_distance(cluster_alphas, cluster_sizes)
    n_clusters = int(np.size(cluster_sizes))
    noise = None
    if n_clusters > 1 and n_hidden is not None and np.isfinite(n_hidden):
        noise = scar_mix_noise(cluster_sizes, n_hidden)
    unseen = (
        n_clusters == 1
        and cluster_features is not None
        and model_features is not None
        and cluster_features < model_features
    )
    if n_clusters == 1:
        method, reason = "pulscar", "the positives form one cluster"
        if unseen:
            reason += (
                f" on the top {cluster_features} of the {model_features} features the "
                "classifier uses; subtypes that differ a little in many features can go "
                "unseen there, and PULSCAR then reads alpha low"
            )
    elif distance < SCAR_MIX_DISTANCE:
        method, reason = (
            "pulscar",
            "the clusters hide positives in proportion to their labeled ones (SCAR)",
        )
    elif noise is not None and distance <= noise:
        hidden = round(n_hidden)
        method, reason = (
            "pulscar",
            f"the clusters' shares of the hidden positives differ from their labeled ones' "
            f"no more than sampling {hidden:,} hidden positives does under SCAR (no "
            "evidence of SNAR)"
            if hidden
            else "no hidden positive is read, so no subtype mix to tell from the labeled one",
        )
    else:
        method, reason = (
            "pulsnar",
            "the hidden positives' subtype mix differs from the labeled ones' (SNAR)",
        )
    evidence = {
        "n_clusters": n_clusters,
        "subtype_mix_distance": round(distance, 4),
        "threshold": SCAR_MIX_DISTANCE,
        "sampling_noise": None if noise is None else round(noise, 4),
        "reason": reason,
        "subtypes_may_be_unseen": unseen,
    }
    if cluster_features is not None and model_features is not None:
        evidence["cluster_features"] = int(cluster_features)
        evidence["model_features"] = int(model_features)
    return method, evidence
