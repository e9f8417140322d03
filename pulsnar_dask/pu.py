"""The PU steps shared by the in-memory estimators and the distributed engine.

Each function here works on in-memory arrays and is what one Dask task runs: a PULSCAR
subproblem (out-of-fold XGBoost + alpha), the BIC fit of one mixture size, and the
clustering of the positives. The estimators call them in a loop; the engine submits them
as concurrent futures. Either way the numbers come from this one place.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .alpha import (
    ALPHA_ESTIMATORS,
    DEFAULT_TAIL_FRACTION,
    AlphaEstimate,
    best_bin_alpha,
    estimate_alpha,
    tail_alpha,
)
from .binning import BIN_METHODS
from .calibration import (
    CALIBRATION_DATA,
    CALIBRATION_METHODS,
    calibrate,
    fit_calibration,
    relabeled,
)
from .clustering import (
    CLUSTER_SELECTIONS,
    MIN_CLUSTER_SIZE,
    MixtureFit,
    fit_mixture,
    important_features,
    select_n_clusters,
)
from .density import (
    BANDWIDTH_BOUNDS,
    BANDWIDTH_ERRORS,
    BANDWIDTH_SEARCHES,
    KERNEL_NORMALIZATIONS,
)
from .folds import assign_folds, unlabeled_subsample
from .metrics import roc_auc
from .scoring import DEFAULT_N_ROUNDS, booster_params, gain_importance, out_of_fold_probabilities

logger = logging.getLogger(__name__)

# Features named per positive subtype in the summary and report.
SUBTYPE_FEATURES = 3


@dataclass(frozen=True)
class PUConfig:
    """Settings of a PULSCAR/PULSNAR run.

    Attributes
    ----------
    n_folds : int
        Cross-validation folds of the classifier.
    bin_method : str
        Bin-count rule of the densities.
    alpha_region : {"upper", "all"}
        Grid points the alpha objective's minimum is taken over.
    alpha_estimator : {"kernel", "tail", "bbe"}
        How a subproblem's alpha is read from its probabilities (see
        :mod:`pulsnar_dask.alpha`): the kernel objective (default, for PULSCAR and for
        PULSNAR's clusters), the smallest tail ratio, or Best Bin Estimation; measured on
        every benchmark family (benchmarks/results/README.md, item 14).
    tail_fraction : float
        Share of the positives the tail estimator keeps above its thresholds.
    bandwidth_search : {"local", "global"}
    bandwidth_error : {"mse", "js"}
    bandwidth_bounds : (float, float)
        Interval of the bandwidth search.
    kernel_normalization : {"point", "grid"}
        Beta-kernel normalisation (see :class:`pulsnar_dask.density.BetaKernel`).
    exact_density : bool
        Use the exact (oracle) kernel density instead of the binned one.
    xgb_params : mapping
        XGBoost parameter overrides.
    n_rounds : int
        Boosting rounds.
    max_unlabeled_ratio : float or None
        Train each fold's model on every positive and at most this many unlabeled rows
        per positive (all rows are still scored); ``None`` trains on all rows. The
        default 5 trains imbalanced subproblems several times faster and was as accurate
        or more in every benchmark (benchmarks/results/README.md).
    n_threads : int or None
        XGBoost threads per model.
    max_clusters : int
        Largest mixture size tried for the cluster count.
    n_clusters : int or None
        Fixed number of clusters (skips the BIC curve).
    cluster_selection : {"min", "knee"}
        Lowest BIC, or the reference's knee procedure.
    covariance_type : str
        First covariance type of the mixtures.
    max_cluster_features : int or None
        Cap on the number of top-gain features the positives are clustered on (100:
        subtypes that differ only jointly over many features are found; decision record
        items 17-19).
    max_cluster_rows : int or None
        Cap on the positives the mixtures are fitted on (a seeded sample); all positives
        are then assigned to the chosen mixture's components.
    min_cluster_fraction : float
        Components holding fewer than this share of the positives (or fewer than
        ``MIN_CLUSTER_SIZE``) are merged into their most probable neighbours.
    calibration_method : {"isotonic", "sigmoid"}
    calibration_data : {"PU", "U"}
    interval_resamples : int
        Bootstrap resamples of the collected probabilities behind the default 95%
        interval of alpha (:mod:`pulsnar_dask.interval`); 0: no interval.
    """

    n_folds: int = 5
    bin_method: str = "rice"
    alpha_region: str = "upper"
    alpha_estimator: str = "kernel"
    tail_fraction: float = DEFAULT_TAIL_FRACTION
    bandwidth_search: str = "local"
    bandwidth_error: str = "mse"
    bandwidth_bounds: tuple[float, float] = BANDWIDTH_BOUNDS
    kernel_normalization: str = "point"
    exact_density: bool = False
    xgb_params: Mapping[str, Any] = field(default_factory=dict)
    n_rounds: int = DEFAULT_N_ROUNDS
    max_unlabeled_ratio: float | None = 5.0
    n_threads: int | None = None
    max_clusters: int = 10
    n_clusters: int | None = None
    cluster_selection: str = "min"
    covariance_type: str = "full"
    max_cluster_features: int | None = 100
    max_cluster_rows: int | None = 5000
    min_cluster_fraction: float = 0.02
    calibration_method: str = "isotonic"
    calibration_data: str = "PU"
    interval_resamples: int = 30

    def __post_init__(self) -> None:
        choices = {
            "bin_method": BIN_METHODS,
            "alpha_region": ("upper", "all"),
            "alpha_estimator": ALPHA_ESTIMATORS,
            "bandwidth_search": BANDWIDTH_SEARCHES,
            "bandwidth_error": BANDWIDTH_ERRORS,
            "kernel_normalization": KERNEL_NORMALIZATIONS,
            "cluster_selection": CLUSTER_SELECTIONS,
            "covariance_type": ("full", "diag", "spherical"),
            "calibration_method": CALIBRATION_METHODS,
            "calibration_data": CALIBRATION_DATA,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"invalid {name} {getattr(self, name)!r}; choose one of {', '.join(allowed)}"
                )
        low, high = self.bandwidth_bounds
        if not 0 < low < high:
            raise ValueError(f"bandwidth bounds must satisfy 0 < low < high, got {low}, {high}")
        if not 0 < self.tail_fraction < 0.5:
            raise ValueError(f"tail_fraction must be in (0, 0.5), got {self.tail_fraction}")
        if self.n_folds < 2:
            raise ValueError(f"n_folds must be at least 2, got {self.n_folds}")
        if self.max_clusters < 1:
            raise ValueError(f"max_clusters must be at least 1, got {self.max_clusters}")
        if self.n_clusters is not None and self.n_clusters < 1:
            raise ValueError(f"n_clusters must be at least 1, got {self.n_clusters}")
        if not 0 <= self.min_cluster_fraction < 1:
            raise ValueError(
                f"min_cluster_fraction must be in [0, 1), got {self.min_cluster_fraction}"
            )
        if self.interval_resamples < 0 or self.interval_resamples == 1:
            raise ValueError(
                f"interval_resamples must be 0 (no interval) or at least 2, got "
                f"{self.interval_resamples}"
            )

    def with_(self, **changes: Any) -> PUConfig:
        """Return a copy with some settings changed."""
        return replace(self, **changes)


@dataclass(frozen=True)
class SubproblemResult:
    """Out-of-fold probabilities and alpha of one PULSCAR problem.

    Attributes
    ----------
    row_ids : ndarray of shape (n,)
        Row ids, in canonical (ascending) order.
    labels : ndarray of int8 of shape (n,)
    probabilities : ndarray of shape (n,)
        Out-of-fold probabilities, aligned with ``row_ids``.
    estimate : AlphaEstimate
    """

    row_ids: np.ndarray
    labels: np.ndarray
    probabilities: np.ndarray
    estimate: AlphaEstimate

    @property
    def alpha(self) -> float:
        return self.estimate.alpha

    @property
    def n_positive(self) -> int:
        """Labeled positives in the subproblem (the cluster's size for PULSNAR)."""
        return int(np.sum(self.labels == 1))

    @property
    def pu_auc(self) -> float:
        """ROC AUC of the probabilities for labeled positives against unlabeled rows: how
        well the classifier separates them (0.5: not at all)."""
        return roc_auc(self.labels == 1, self.probabilities)


def config_dict(config: PUConfig) -> dict[str, Any]:
    """The settings as plain JSON values (tuples as lists, the XGBoost overrides as a dict)."""
    out = {}
    for name in config.__dataclass_fields__:
        value = getattr(config, name)
        out[name] = (
            list(value)
            if isinstance(value, tuple)
            else (dict(value) if isinstance(value, Mapping) else value)
        )
    return out


def check_subproblem(labels: np.ndarray, config: PUConfig) -> None:
    """Refuse a subproblem with fewer positives or unlabeled rows than folds."""
    n_pos = int(np.sum(labels == 1))
    n_unl = int(np.size(labels)) - n_pos
    if n_pos < config.n_folds or n_unl < config.n_folds:
        raise ValueError(
            f"{n_pos} positives and {n_unl} unlabeled rows: each needs at least "
            f"n_folds={config.n_folds}"
        )


def read_alpha(proba: np.ndarray, labels: np.ndarray, config: PUConfig, seed: int) -> AlphaEstimate:
    """Read alpha from out-of-fold probabilities with the settings of ``config``."""
    return estimate_alpha(
        proba,
        labels,
        bin_method=config.bin_method,
        region=config.alpha_region,
        bandwidth_search=config.bandwidth_search,
        bandwidth_error=config.bandwidth_error,
        bandwidth_bounds=config.bandwidth_bounds,
        kernel_normalization=config.kernel_normalization,
        exact=config.exact_density,
        random_state=seed,
        estimator=config.alpha_estimator,
        tail_fraction=config.tail_fraction,
    )


def alpha_value(proba: np.ndarray, labels: np.ndarray, config: PUConfig, seed: int) -> float:
    """Alpha alone, as :func:`read_alpha` reads it, without the densities kept for plots
    where the reader does not need them (``tail``, ``bbe``): what resamples need."""
    if config.alpha_estimator == "tail":
        return tail_alpha(proba, labels, config.tail_fraction)
    if config.alpha_estimator == "bbe":
        return best_bin_alpha(proba, labels, random_state=seed)
    return read_alpha(proba, labels, config, seed).alpha


def estimate_subproblem(
    row_ids: np.ndarray, labels: np.ndarray, proba: np.ndarray, config: PUConfig, seed: int
) -> SubproblemResult:
    """Estimate alpha from a subproblem's out-of-fold probabilities."""
    return SubproblemResult(row_ids, labels, proba, read_alpha(proba, labels, config, seed))


def canonical_subproblem(
    X: np.ndarray, labels: np.ndarray, row_ids: np.ndarray, config: PUConfig, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Put a subproblem's rows in canonical order (by row id), check it, and assign folds.

    Returns
    -------
    (X, labels, row_ids, folds, trainable)
        Sorted by row id; ``labels`` as int8, ``folds`` from :func:`assign_folds`,
        ``trainable`` from :func:`unlabeled_subsample` (``None``: every row).
    """
    order = np.argsort(row_ids, kind="stable")
    labels = np.asarray(labels)[order].astype(np.int8)
    check_subproblem(labels, config)
    row_ids = np.asarray(row_ids)[order]
    return (
        X[order],
        labels,
        row_ids,
        assign_folds(row_ids, labels, config.n_folds, seed),
        unlabeled_subsample(row_ids, labels, config.max_unlabeled_ratio, seed),
    )


def run_subproblem(
    X: np.ndarray, labels: np.ndarray, row_ids: np.ndarray, config: PUConfig, seed: int
) -> SubproblemResult:
    """Score rows with cross-validated XGBoost and estimate alpha (one PULSCAR problem).

    Rows are first put in canonical order (by row id), so the result does not depend on
    the order they arrive in.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    labels : ndarray of shape (n,)
        1 labeled positive, 0 unlabeled.
    row_ids : ndarray of shape (n,)
        Unique row ids.
    config : PUConfig
    seed : int
        Seed of the folds and of XGBoost.

    Returns
    -------
    SubproblemResult
    """
    X, labels, row_ids, folds, trainable = canonical_subproblem(X, labels, row_ids, config, seed)
    params = booster_params(config.xgb_params, seed, config.n_threads)
    proba = out_of_fold_probabilities(X, labels, folds, params, config.n_rounds, trainable)
    return estimate_subproblem(row_ids, labels, proba, config, seed)


def mixture_random_state(n_components: int, seed: int) -> int:
    """Seed of the mixture with ``n_components`` components (reference: ``100 + n``)."""
    return 100 + n_components + 1000 * seed


def importance_gain(
    X: np.ndarray, labels: np.ndarray, row_ids: np.ndarray, config: PUConfig, seed: int
) -> np.ndarray:
    """Gain importance of XGBoost on every positive and the capped unlabeled rows.

    Rows are taken in canonical (row id) order and the unlabeled ones subsampled as in
    the subproblems (``config.max_unlabeled_ratio``), so the model does not depend on row
    order and its cost does not grow with the unlabeled rows beyond the cap.

    Returns
    -------
    ndarray of shape (n_features,)
        Average gain per feature; 0 for features never split on.
    """
    labels = np.asarray(labels)
    order = np.argsort(row_ids, kind="stable")
    keep = unlabeled_subsample(
        np.asarray(row_ids)[order], labels[order], config.max_unlabeled_ratio, seed
    )
    rows = order if keep is None else order[keep]
    params = booster_params(config.xgb_params, seed, config.n_threads)
    return gain_importance(X[rows], labels[rows], params, config.n_rounds)


def fit_mixture_size(Z: np.ndarray, n_components: int, config: PUConfig, seed: int) -> MixtureFit:
    """Fit the mixture of one size for the BIC curve (one task of the fan-out).

    With more than ``config.max_cluster_rows`` positives the mixture is fitted (and its
    BIC taken) on that many of them, drawn with the seed; every positive is assigned
    afterwards by :func:`pulsnar_dask.clustering.cluster_labels`.
    """
    if config.max_cluster_rows is not None and len(Z) > config.max_cluster_rows:
        rng = np.random.default_rng(seed)
        Z = Z[np.sort(rng.choice(len(Z), config.max_cluster_rows, replace=False))]
    return fit_mixture(
        Z,
        n_components,
        covariance_type=config.covariance_type,
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
        What sets each cluster apart (:func:`subtype_profiles`).
    """

    n_clusters: int
    mixture_components: int
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


def choose_mixture(fits: list[MixtureFit], config: PUConfig) -> tuple[MixtureFit, np.ndarray]:
    """Pick the mixture: the fixed-size one, or the BIC curve's choice.

    Parameters
    ----------
    fits : list of MixtureFit
        Mixtures of sizes ``1..M`` (BIC curve), or the single fixed-size mixture.

    Returns
    -------
    (MixtureFit, ndarray)
        The chosen mixture and the BIC curve (empty when the count was fixed).
    """
    if config.n_clusters is not None:
        return fits[0], np.array([])
    bic = np.array([f.bic for f in fits])
    return fits[select_n_clusters(bic, config.cluster_selection) - 1], bic


def make_clustering(
    chosen: MixtureFit,
    bic: np.ndarray,
    labels: np.ndarray,
    gain: np.ndarray,
    model_features: np.ndarray,
    cluster_features: np.ndarray,
    profiles: list[list[dict[str, Any]]],
) -> Clustering:
    """Record the clustering of the positives (``labels`` from :func:`cluster_labels`,
    ``profiles`` from :func:`subtype_profiles`)."""
    n_clusters = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=n_clusters)
    logger.info("PULSNAR: %d clusters of positives, sizes %s", n_clusters, sizes.tolist())
    if n_clusters < chosen.n_components:
        logger.info(
            "merged %d small mixture component(s) into their most probable neighbours",
            chosen.n_components - n_clusters,
        )
    return Clustering(
        n_clusters,
        chosen.n_components,
        labels,
        bic,
        cluster_features,
        model_features,
        gain,
        profiles,
    )


def subtype_profiles(
    X: np.ndarray, labels: np.ndarray, names: list[str], top: int = SUBTYPE_FEATURES
) -> list[list[dict[str, Any]]]:
    """What sets each cluster of positives apart from the positives as a whole.

    Parameters
    ----------
    X : ndarray of shape (n_positives, n_features)
        The positives' values of the features they were clustered on.
    labels : ndarray of int of shape (n_positives,)
        Cluster of each positive (0 = largest).
    names : list of str
        Feature names, one per column of ``X``.
    top : int
        Features kept per cluster.

    Returns
    -------
    list of list of dict
        Per cluster, up to ``top`` dicts ``{"feature": name, "difference_sd": d}``, the
        largest ``|d|`` first: ``d`` is the cluster's mean minus the mean over all
        positives, in standard deviations of all positives (positive: higher in this
        cluster), rounded to 0.01. Missing values are left out of the means; features
        constant over the positives are never named.
    """
    X = np.asarray(X, dtype=float)
    labels = np.asarray(labels)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-missing columns give NaN
        mean = np.nanmean(X, axis=0)
        sd = np.nanstd(X, axis=0)
        out = []
        for c in range(int(labels.max()) + 1 if labels.size else 0):
            d = (np.nanmean(X[labels == c], axis=0) - mean) / sd
            d[~(sd > 0) | ~np.isfinite(d)] = np.nan
            order = np.argsort(-np.nan_to_num(np.abs(d), nan=-1.0), kind="stable")[:top]
            out.append(
                [
                    {"feature": names[i], "difference_sd": round(float(d[i]), 2)}
                    for i in order
                    if np.isfinite(d[i])
                ]
            )
    return out


def min_cluster_size(config: PUConfig, n_positives: int) -> int:
    """Fewest positives a PULSNAR cluster may keep (see :func:`cluster_labels`)."""
    return max(MIN_CLUSTER_SIZE, int(np.ceil(config.min_cluster_fraction * n_positives)))


def mixture_sizes(config: PUConfig, n_positives: int) -> list[int]:
    """Mixture sizes to fit: the fixed count, or ``1..max_clusters`` (capped by positives)."""
    if config.n_clusters is not None:
        return [config.n_clusters]
    return list(range(1, min(config.max_clusters, max(1, n_positives // 2)) + 1))


def calibrate_subproblem(result: SubproblemResult, config: PUConfig, seed: int) -> np.ndarray:
    """Return calibrated probabilities of a subproblem's rows (Algorithm 3)."""
    return calibrate(
        result.probabilities,
        result.labels,
        result.alpha,
        method=config.calibration_method,
        data=config.calibration_data,
        random_state=seed,
    )


def calibrated_on_rows(
    row_ids: np.ndarray, subproblems: list[SubproblemResult], config: PUConfig, seed: int
) -> np.ndarray:
    """Calibrated probabilities of every row from one or more subproblems (Algorithm 3).

    ``U`` data: each subproblem is calibrated on its unlabeled rows with its alpha and the
    results combined as ``1 - prod_c (1 - p_c)`` (the paper). ``PU`` data: each subproblem
    flips its unlabeled rows with its alpha, and one regression of the union of the new
    labels on the combined probabilities is fitted over all rows. For a single
    subproblem the two readings coincide; for PULSNAR's clusters the per-cluster P+U fits
    rate labeled positives against their own cluster's small share of the rows, and the
    single fit halves the expected calibration error on the paper's SNAR data
    (benchmarks/results/README.md).

    Returns
    -------
    ndarray of shape (n,)
        Calibrated probabilities aligned with ``row_ids``; NaN for rows in no subproblem.
    """
    if config.calibration_data == "U":
        return combine_on_rows(
            row_ids, [(r.row_ids, calibrate_subproblem(r, config, seed)) for r in subproblems]
        )
    raw = combine_on_rows(row_ids, [(r.row_ids, r.probabilities) for r in subproblems])
    new_labels = combine_on_rows(
        row_ids,
        [
            (r.row_ids, relabeled(r.probabilities, r.labels, r.alpha, random_state=seed))
            for r in subproblems
        ],
    )  # 1 - prod(1 - l) of 0/1 labels: the union
    out = np.full(len(row_ids), np.nan)
    seen = np.isfinite(raw)
    out[seen] = fit_calibration(raw[seen], new_labels[seen], None, config.calibration_method)
    return out


def combine_on_rows(row_ids: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Combine per-subproblem probabilities onto all rows: ``1 - prod_c (1 - p_c)``.

    Parameters
    ----------
    row_ids : ndarray of shape (n,)
        The rows to report, in the order wanted.
    parts : list of (ids, probabilities)
        Each subproblem's row ids and probabilities.

    Returns
    -------
    ndarray of shape (n,)
        Combined probability; NaN for rows in no subproblem.
    """
    complement = np.ones(len(row_ids))
    seen = np.zeros(len(row_ids), dtype=bool)
    sorter = np.argsort(row_ids, kind="stable")
    for ids, proba in parts:
        idx = sorter[np.searchsorted(row_ids, ids, sorter=sorter)]
        complement[idx] *= 1.0 - proba
        seen[idx] = True
    out = 1.0 - complement
    out[~seen] = np.nan
    return out


def relabel_top(labels: np.ndarray, calibrated: np.ndarray, alpha: float) -> np.ndarray:
    """Relabel the ``round(alpha |U|)`` most probable unlabeled rows positive (Algorithm 4).

    Returns
    -------
    ndarray of int8
        New 0/1 labels.
    """
    y = np.asarray(labels).astype(np.int8).copy()
    unlabeled = np.flatnonzero(y == 0)
    n_flip = int(np.round(alpha * unlabeled.size))
    if n_flip:
        scores = np.nan_to_num(np.asarray(calibrated)[unlabeled], nan=0.0)
        top = unlabeled[np.argsort(-scores, kind="stable")[:n_flip]]
        y[top] = 1
    return y


def improved_probabilities(
    X: np.ndarray,
    labels: np.ndarray,
    row_ids: np.ndarray,
    calibrated: np.ndarray,
    alpha: float,
    config: PUConfig,
    seed: int,
) -> np.ndarray:
    """Retrain cross-validated XGBoost on recovered labels (Algorithm 4).

    Returns
    -------
    ndarray of shape (n,)
        Out-of-fold probabilities of the retrained classifier, in the input row order.
    """
    new_labels = relabel_top(labels, calibrated, alpha)
    folds = assign_folds(row_ids, new_labels, config.n_folds, seed)
    params = booster_params(config.xgb_params, seed, config.n_threads)
    return out_of_fold_probabilities(X, new_labels, folds, params, config.n_rounds)


# Subtype-mix distance below which ``method="auto"`` keeps PULSCAR (see choose_method).
SCAR_MIX_DISTANCE = 0.1
# Clusters below this share of the positives are left out of the subtype-mix distance.
MIX_MIN_SHARE = 0.02


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
    keep = sizes >= MIX_MIN_SHARE * sizes.sum()
    alphas, sizes = alphas[keep], sizes[keep]
    if alphas.size < 2 or alphas.sum() <= 0:
        return 0.0
    return float(0.5 * np.abs(alphas / alphas.sum() - sizes / sizes.sum()).sum())


def choose_method(cluster_alphas: np.ndarray, cluster_sizes: np.ndarray) -> tuple[str, dict]:
    """Decide between PULSCAR and PULSNAR from PULSNAR's clusters (``method="auto"``).

    PULSCAR when the positives form one cluster, or when the clusters hide positives in
    proportion to their labeled ones (:func:`subtype_mix_distance` below
    ``SCAR_MIX_DISTANCE``): the data look SCAR, and one subproblem over all positives
    reads alpha with less noise than a sum over clusters. PULSNAR otherwise.

    Returns
    -------
    (method, evidence)
        ``"pulscar"`` or ``"pulsnar"``, and a JSON-ready dict: ``n_clusters``,
        ``subtype_mix_distance``, ``threshold`` and ``reason``.
    """
    distance = subtype_mix_distance(cluster_alphas, cluster_sizes)
    n_clusters = int(np.size(cluster_sizes))
    if n_clusters == 1:
        method, reason = "pulscar", "the positives form one cluster"
    elif distance < SCAR_MIX_DISTANCE:
        method, reason = (
            "pulscar",
            "the clusters hide positives in proportion to their labeled ones (SCAR)",
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
        "reason": reason,
    }
    return method, evidence
