"""The positives' subtypes (PULSNAR): importance features, Gaussian mixtures of the
positives, the cluster count, and what sets each subtype apart. The clusters' reading
beside PULSCAR's is :func:`pulsnar_dask.pipeline.method_choice.record_readings`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pulsnar_dask.core.config import AUTO_COVARIANCE_TYPES, PUConfig
from pulsnar_dask.core.folds import take_rows, training_subsample
from pulsnar_dask.core.mixture import (
    MIN_CLUSTER_SIZE,
    MixtureFit,
    fit_mixture,
    important_features,
    select_n_clusters,
)
from pulsnar_dask.core.scoring import (
    booster_params,
    trained_gain,
)

logger = logging.getLogger(__name__)

# Features named per positive subtype in the summary and report.
SUBTYPE_FEATURES = 3


def mixture_random_state(n_components: int, seed: int) -> int:
    """Seed of the mixture with ``n_components`` components (reference: ``100 + n``),
    within scikit-learn's range."""
    return (100 + n_components + 1000 * seed) % 2**32


def importance_model_gain(
    X: np.ndarray,
    labels: np.ndarray,
    row_ids: np.ndarray,
    config: PUConfig,
    seed: int,
    feature_types: list[str] | None = None,
) -> np.ndarray:
    """Gain importance of XGBoost on every positive and the capped unlabeled rows.

    Rows are taken in canonical (row id) order and the unlabeled ones subsampled as in
    the subproblems (``config.max_unlabeled_ratio``, ``config.max_train_rows``), so the
    model does not depend on row order and its cost does not grow with the rows beyond
    the caps.

    Returns
    -------
    ndarray of shape (n_features,)
        Average gain per feature; 0 for features never split on.
    """
    labels = np.asarray(labels)
    order = np.argsort(row_ids, kind="stable")
    keep = training_subsample(
        np.asarray(row_ids)[order],
        labels[order],
        config.max_unlabeled_ratio,
        config.max_train_rows,
        seed,
    )
    X, labels = take_rows(order if keep is None else order[keep], X, labels)
    params = booster_params(config.xgb_params, seed, config.n_threads)
    return trained_gain(X, labels, params, config.n_rounds, feature_types)


def seeded_positions(n_rows: int, max_rows: int | None, seed: int) -> np.ndarray | None:
    """Positions of at most ``max_rows`` of ``n_rows`` rows, a sample drawn with ``seed``
    (ascending); ``None`` (every row) where there are no more or ``max_rows`` is
    ``None``."""
    if max_rows is None or n_rows <= max_rows:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, max_rows, replace=False))


def seeded_rows(Z: np.ndarray, max_rows: int | None, seed: int) -> np.ndarray:
    """At most ``max_rows`` rows of ``Z``, a sample drawn with ``seed`` (in row order);
    all of them where there are no more or ``max_rows`` is ``None``."""
    positions = seeded_positions(len(Z), max_rows, seed)
    return Z if positions is None else Z[positions]


def fit_mixture_size(
    Z: np.ndarray,
    n_components: int,
    config: PUConfig,
    seed: int,
    covariance_type: str | None = None,
) -> MixtureFit:
    """Fit the mixture of one size and covariance type for a BIC curve (one task of the
    fan-out; :func:`fit_bic_curve` gives the types ``config.covariance_type`` asks for).

    With more than ``config.max_cluster_rows`` positives the mixture is fitted (and its
    BIC taken) on that many of them, drawn with the seed; every positive is assigned
    afterwards, where it is held (:mod:`pulsnar_dask.core.positive_pieces`).
    """
    covariance_type = covariance_type or config.covariance_type
    if covariance_type == "auto":
        raise ValueError("a mixture has one covariance type; fit_bic_curve chooses among them")
    return fit_mixture(
        seeded_rows(Z, config.max_cluster_rows, seed),
        n_components,
        covariance_type=covariance_type,
        random_state=mixture_random_state(n_components, seed),
    )


@dataclass(frozen=True)
class Clustering:
    """How PULSNAR split the labeled positives.

    Attributes
    ----------
    n_clusters : int
        Number of clusters (the mixture's components once small ones are merged).
    mixture_components : int
        Components of the chosen mixture.
    covariance_type : str
        The chosen mixture's covariance type (the lower BIC's; simpler where its fit
        fell back).
    labels : ndarray of int of shape (n_positives,)
        Cluster of each positive, 0 = largest.
    bic : ndarray of shape (M,)
        BIC for 1..M components (empty when the count was fixed).
    cluster_features : ndarray of int
        Features the positives were clustered on (top by gain).
    model_features : ndarray of int
        Features with non-zero gain, used by the subproblems.
    gain : ndarray of shape (n_features,)
    profiles : list of list of dict
        What sets each cluster apart (:func:`profiles_of`).
    """

    n_clusters: int
    mixture_components: int
    covariance_type: str
    labels: np.ndarray
    bic: np.ndarray
    cluster_features: np.ndarray
    model_features: np.ndarray
    gain: np.ndarray
    profiles: list[list[dict[str, Any]]]


def select_features(gain: np.ndarray, config: PUConfig) -> tuple[np.ndarray, np.ndarray]:
    """Return (model features, clustering features) from the importance model's gains.

    Model features have non-zero gain, by decreasing gain; the positives are clustered on
    the first ``config.max_cluster_features`` of them.

    Raises
    ------
    ValueError
        If no feature has non-zero gain (the classifier found nothing to split on).
    """
    model_features = important_features(gain)
    if model_features.size == 0:
        raise ValueError("the importance model used no feature: positives and unlabeled look alike")
    return model_features, model_features[: config.max_cluster_features]


def choose_mixture(
    curves: dict[str, list[MixtureFit]], config: PUConfig
) -> tuple[MixtureFit, np.ndarray, str]:
    """Pick the mixture: on the covariance type whose curve reaches the lowest BIC, the
    fixed-size one or the BIC curve's choice (``config.cluster_selection``).

    Parameters
    ----------
    curves : dict
        Covariance type -> mixtures of sizes ``1..M`` (BIC curve), or the single
        fixed-size mixture (:func:`fit_bic_curve`).

    Returns
    -------
    (MixtureFit, ndarray, str)
        The chosen mixture, the BIC curve it was chosen on (empty when the count was
        fixed) and its covariance type.
    """
    kind = min(curves, key=lambda k: min(f.bic for f in curves[k]))
    fits = curves[kind]
    if len(curves) > 1:
        logger.info(
            "mixtures: lowest BIC %s; %s covariance kept",
            ", ".join(f"{k} {min(f.bic for f in c):.6g}" for k, c in curves.items()),
            kind,
        )
    if config.n_clusters is not None:
        return fits[0], np.array([]), kind
    bic = np.array([f.bic for f in fits])
    return fits[select_n_clusters(bic, config.cluster_selection) - 1], bic, kind


def make_clustering(
    chosen: MixtureFit,
    bic: np.ndarray,
    labels: np.ndarray,
    gain: np.ndarray,
    model_features: np.ndarray,
    cluster_features: np.ndarray,
    profiles: list[list[dict[str, Any]]],
) -> Clustering:
    """Record the clustering of the positives (``labels``: each positive's cluster, 0 the
    largest; ``profiles`` from :func:`profiles_of`); its covariance type is the chosen
    mixture's own."""
    n_clusters = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=n_clusters)
    logger.info(
        "PULSNAR: %d cluster%s of positives, sizes %s",
        n_clusters,
        "" if n_clusters == 1 else "s",
        sizes.tolist(),
    )
    if n_clusters < chosen.n_components:
        logger.info(
            "merged %d small mixture component(s) into their most probable neighbours",
            chosen.n_components - n_clusters,
        )
    return Clustering(
        n_clusters,
        chosen.n_components,
        chosen.covariance_type,
        labels,
        bic,
        cluster_features,
        model_features,
        gain,
        profiles,
    )


@dataclass(frozen=True)
class ProfileSums:
    """Per cluster (rows) and describing column (columns): the positives' values
    present, their sum and their sum of squares, each value less the column's ``shift``
    (near its mean, so that the squares keep their precision; 0 for an indicator, whose
    sums are then whole numbers in any order); sums that add up over the positives'
    partitions.

    Attributes
    ----------
    count, total, squares : ndarray of shape (n_clusters, n_columns)
    shift : ndarray of shape (n_columns,)
    """

    count: np.ndarray
    total: np.ndarray
    squares: np.ndarray
    shift: np.ndarray

    def __add__(self, other: ProfileSums) -> ProfileSums:
        return ProfileSums(
            self.count + other.count,
            self.total + other.total,
            self.squares + other.squares,
            self.shift,
        )

    def renumbered(self, rank: np.ndarray) -> ProfileSums:
        """The sums of cluster ``rank[k]`` from row ``k`` (rows ranked -1 dropped)."""
        order = np.argsort(np.where(rank < 0, rank.size, rank), kind="stable")
        order = order[: int(np.sum(rank >= 0))]
        return ProfileSums(self.count[order], self.total[order], self.squares[order], self.shift)


def profile_sums(
    X: np.ndarray, labels: np.ndarray, n_clusters: int, shift: np.ndarray
) -> ProfileSums:
    """:class:`ProfileSums` of the rows ``X`` (n, n_columns) in clusters ``labels``."""
    shift = np.asarray(shift, dtype=float)
    X = np.asarray(X, dtype=float) - shift[None, :]
    present = ~np.isnan(X)
    X = np.where(present, X, 0.0)
    shape = (n_clusters, X.shape[1])
    count, total, squares = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    np.add.at(count, labels, present)
    np.add.at(total, labels, X)
    np.add.at(squares, labels, X * X)
    return ProfileSums(count, total, squares, shift)


def profiles_of(
    sums: ProfileSums, names: list[str], top: int = SUBTYPE_FEATURES
) -> list[list[dict[str, Any]]]:
    """What sets each cluster of positives apart from the positives as a whole.

    Parameters
    ----------
    sums : ProfileSums
        The clusters' sums (0 = largest).
    names : list of str
        Feature names, one per column.
    top : int
        Features kept per cluster.

    Returns
    -------
    list of list of dict
        Per cluster, up to ``top`` dicts ``{"feature": name, "difference_sd": d}``, the
        largest ``|d|`` first: ``d`` is the cluster's mean minus the mean over all
        positives, in standard deviations of all positives (positive: higher in this
        cluster), rounded to 0.01; ties in the rounded ``|d|`` go to the earlier column,
        so that the order does not hang on the sums' last bits. Missing values are left
        out of the means; features constant over the positives (a spread under 1e-12 of
        their mean's size) are never named.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        n = sums.count.sum(axis=0)
        mean = sums.total.sum(axis=0) / n
        sd = np.sqrt(np.maximum(sums.squares.sum(axis=0) / n - mean**2, 0.0))
        constant = ~(sd > 1e-12 * np.maximum(np.abs(mean + sums.shift), 1.0))
        out = []
        columns = np.arange(mean.size)
        for count, total in zip(sums.count, sums.total, strict=True):
            d = (total / count - mean) / sd
            d[constant | ~np.isfinite(d)] = np.nan
            size = np.round(np.nan_to_num(np.abs(d), nan=-1.0), 2)
            order = np.lexsort((columns, -size))[:top]
            out.append(
                [
                    {"feature": names[i], "difference_sd": round(float(d[i]), 2)}
                    for i in order
                    if np.isfinite(d[i])
                ]
            )
    return out


def min_cluster_size(config: PUConfig, n_positives: int) -> int:
    """Fewest positives a PULSNAR cluster may keep: smaller mixture components are
    dissolved (:func:`~pulsnar_dask.core.mixture.kept_components`)."""
    return max(MIN_CLUSTER_SIZE, int(np.ceil(config.min_cluster_fraction * n_positives)))


# Mixture sizes are fitted in rounds of this many; with the lowest-BIC rule a further round
# is fitted only while the lowest BIC lies at the end of the sizes fitted so far.
MIXTURE_ROUND = 10


def mixture_sizes(config: PUConfig, n_positives: int) -> list[list[int]]:
    """Mixture sizes to fit, in rounds: the fixed count alone, or ``1..max_clusters``
    (capped by the positives) in rounds of ``MIXTURE_ROUND`` (one round for the knee rule,
    which reads the whole curve)."""
    if config.n_clusters is not None:
        return [[config.n_clusters]]
    sizes = list(range(1, min(config.max_clusters, max(1, n_positives // 2)) + 1))
    if config.cluster_selection != "min":
        return [sizes]
    return [sizes[i : i + MIXTURE_ROUND] for i in range(0, len(sizes), MIXTURE_ROUND)]


def lowest_bic_at_end(fits: list[MixtureFit]) -> bool:
    """Whether the lowest BIC so far is one of the two largest sizes fitted: the curve may
    go lower past them, so the next round of sizes is worth fitting.

    On real tables (discrete, skewed features) the BIC often keeps falling past ten
    components; where it turns up within the first round, the sizes past it are not
    fitted at all.
    """
    bic = [f.bic for f in fits]
    return int(np.argmin(bic)) >= len(bic) - 2


def fit_bic_curve(
    map_fits: Callable[[Callable[..., MixtureFit], list[tuple]], list[MixtureFit]],
    Z: np.ndarray,
    config: PUConfig,
    seed: int,
    n_positives: int | None = None,
) -> dict[str, list[MixtureFit]]:
    """Fit the mixtures of :func:`mixture_sizes` for each covariance type (full and
    diagonal for ``covariance_type="auto"``), a round at a time, while
    :func:`lowest_bic_at_end` asks for more of that type's curve.

    Parameters
    ----------
    map_fits : callable
        ``map_fits(fit_mixture_size, [(Z, n, config, seed, type), ...])`` returns the fits in
        order: a plain loop, or an executor's fan-out (each round's sizes, of every type
        still fitted, fit side by side).
    Z : ndarray of shape (n, d)
        The positives' clustering matrix, or the rows of it :func:`seeded_rows` keeps.
    n_positives : int or None
        The positives ``Z`` was drawn from (``None``: ``len(Z)``, every one).

    Returns
    -------
    dict
        Covariance type -> mixtures of sizes ``1..m`` (or the fixed size), ``m`` where
        that type's rounds stopped.
    """
    kinds = AUTO_COVARIANCE_TYPES if config.covariance_type == "auto" else (config.covariance_type,)
    curves: dict[str, list[MixtureFit]] = {k: [] for k in kinds}
    n_positives = len(Z) if n_positives is None else n_positives
    Z = seeded_rows(Z, config.max_cluster_rows, seed)  # each fit's rows, sent alone
    for sizes in mixture_sizes(config, n_positives):
        going = [k for k in kinds if not curves[k] or lowest_bic_at_end(curves[k])]
        if not going:
            break
        calls = [(Z, n, config, seed, k) for k in going for n in sizes]
        fits = map_fits(fit_mixture_size, calls)
        for i, k in enumerate(going):
            curves[k] += fits[i * len(sizes) : (i + 1) * len(sizes)]
    return curves
