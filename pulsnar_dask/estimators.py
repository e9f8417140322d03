"""scikit-learn style PULSCAR and PULSNAR estimators on in-memory data.

``PULSCAR(...).fit(X, y)`` and ``PULSNAR(...).fit(X, y)`` take numpy arrays or pandas
frames (``y``: 1 labeled positive, 0 unlabeled) and expose ``alpha_`` and the
out-of-fold probabilities. They run the same steps (:mod:`pulsnar_dask.core`) that the
distributed engine fans out over a Dask cluster.
"""

from __future__ import annotations

import logging
from typing import Any

import dask.dataframe as dd
import numpy as np
from sklearn.base import BaseEstimator

from pulsnar_dask.core.alpha import AlphaEstimate
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.density import BANDWIDTH_BOUNDS
from pulsnar_dask.core.interval import alpha_interval
from pulsnar_dask.core.mixture import cluster_labels, clustering_matrix
from pulsnar_dask.core.subproblem import (
    SubproblemResult,
    calibrated_on_rows,
    combine_on_rows,
    improved_probabilities,
    run_subproblem,
)
from pulsnar_dask.core.subtypes import (
    Clustering,
    choose_method,
    choose_mixture,
    fit_mixture_size,
    importance_gain,
    make_clustering,
    min_cluster_size,
    mixture_sizes,
    select_features,
    subtype_profiles,
)

logger = logging.getLogger(__name__)


def _feature_names(X: Any) -> list[str]:
    """Column names of a frame, or ``x0, x1, ...`` for an array."""
    if hasattr(X, "columns"):
        return [str(c) for c in X.columns]
    return [f"x{i}" for i in range(np.shape(X)[1])]


def _as_arrays(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X_arr = np.asarray(X, dtype=np.float32)
    if X_arr.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X_arr.shape}")
    if np.isinf(X_arr).any():
        raise ValueError("X contains infinite values")
    y_arr = np.asarray(y).ravel()
    if y_arr.shape[0] != X_arr.shape[0]:
        raise ValueError(f"X has {X_arr.shape[0]} rows but y has {y_arr.shape[0]}")
    bad = ~np.isin(y_arr, (0, 1))
    if bad.any():
        raise ValueError(
            f"y must be 0 (unlabeled) or 1 (positive); {int(bad.sum())} values are not"
        )
    return X_arr, y_arr.astype(np.int8)


_COMMON_DOC = """
    n_folds : int, default 5
        Stratified cross-validation folds of the XGBoost classifier.
    bin_method : {"rice", "square_root", "sturges", "scott", "fd"}, default "rice"
        Bin-count rule of the beta-kernel densities.
    alpha_region : {"upper", "all"}, default "upper"
        Grid points (``z > 0.5`` or all) the alpha objective is minimised over.
    alpha_estimator : {"kernel", "tail", "bbe"}, default "kernel"
        Alpha from the beta-kernel objective, the smallest tail ratio, or Best Bin
        Estimation (cross-fitted), for PULSCAR and for each of PULSNAR's clusters.
    bandwidth_search : {"local", "global"}, default "local"
    bandwidth_bounds : (float, float), default (0.05, 0.5)
        Bandwidth search interval (the reference's is (0.01, 0.5)).
    kernel_normalization : {"point", "grid"}, default "point"
        Beta-kernel normalisation: each probability's kernel sums to 1 over the grid, or
        the reference's single normalisation over the grid.
    xgb_params : dict or None
        XGBoost parameter overrides (defaults: ``max_depth=4, eta=0.2``, hist trees).
    n_rounds : int, default 100
        Boosting rounds.
    max_unlabeled_ratio : float or None, default 5.0
        Train each fold's model on all positives and at most this many unlabeled rows per
        positive (every row is still scored; ``None``: all rows). Much faster on
        imbalanced data, and as accurate in the benchmarks.
    n_iterations : int, default 1
        Repeats with seeds ``random_state + i``; ``alpha_`` is their mean.
    calibration : {None, "isotonic", "sigmoid"}, default None
        Calibrate probabilities with the estimated alpha (Algorithm 3).
    calibration_data : {"PU", "U"}, default "PU"
    classify : bool, default False
        Retrain on recovered labels (Algorithm 4); implies isotonic calibration if none.
    interval_resamples : int, default 30
        Bootstrap resamples of the probabilities behind ``alpha_interval_`` (0: none).
    n_jobs : int or None
        XGBoost threads.
    random_state : int, default 0
"""


class PULSCAR(BaseEstimator):
    __doc__ = (
        """Positive-unlabeled alpha estimation when positives are labeled at random (SCAR).

    Parameters
    ----------"""
        + _COMMON_DOC
        + """
    Attributes
    ----------
    alpha_ : float
        Estimated fraction of positives among the unlabeled rows.
    alphas_ : ndarray
        One estimate per iteration.
    alpha_interval_ : AlphaInterval or None
        95% interval of alpha (``.low``, ``.high``) and the readings it spans
        (:func:`pulsnar_dask.core.interval.alpha_interval`); None with ``interval_resamples=0``.
    method_ : str
        ``"pulscar"`` (``method_evidence_`` is None).
    n_clusters_ : int
        Always 1.
    oof_proba_ : ndarray of shape (n,)
        Out-of-fold probabilities (mean over iterations).
    alpha_estimate_ : AlphaEstimate
        Densities and objective of the first iteration, for plots.
    subproblems_ : list of SubproblemResult
        The first iteration's subproblems (row ids, labels, out-of-fold probabilities,
        estimate), from which alpha can be re-read with other settings.
    calibrated_proba_ : ndarray of shape (n,)
        With ``calibration``.
    improved_proba_ : ndarray of shape (n,)
        With ``classify``.
    """
    )

    def __init__(
        self,
        n_folds: int = 5,
        bin_method: str = "rice",
        alpha_region: str = "upper",
        alpha_estimator: str = "kernel",
        bandwidth_search: str = "local",
        bandwidth_bounds: tuple[float, float] = BANDWIDTH_BOUNDS,
        kernel_normalization: str = "point",
        xgb_params: dict | None = None,
        n_rounds: int = 100,
        max_unlabeled_ratio: float | None = 5.0,
        n_iterations: int = 1,
        calibration: str | None = None,
        calibration_data: str = "PU",
        classify: bool = False,
        interval_resamples: int = 30,
        n_jobs: int | None = None,
        random_state: int = 0,
    ):
        self.n_folds = n_folds
        self.bin_method = bin_method
        self.alpha_region = alpha_region
        self.alpha_estimator = alpha_estimator
        self.bandwidth_search = bandwidth_search
        self.bandwidth_bounds = bandwidth_bounds
        self.kernel_normalization = kernel_normalization
        self.xgb_params = xgb_params
        self.n_rounds = n_rounds
        self.max_unlabeled_ratio = max_unlabeled_ratio
        self.n_iterations = n_iterations
        self.calibration = calibration
        self.calibration_data = calibration_data
        self.classify = classify
        self.interval_resamples = interval_resamples
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _config(self, **extra: Any) -> PUConfig:
        return PUConfig(
            n_folds=self.n_folds,
            bin_method=self.bin_method,
            alpha_region=self.alpha_region,
            alpha_estimator=self.alpha_estimator,
            bandwidth_search=self.bandwidth_search,
            bandwidth_bounds=tuple(self.bandwidth_bounds),
            kernel_normalization=self.kernel_normalization,
            xgb_params=dict(self.xgb_params or {}),
            n_rounds=self.n_rounds,
            max_unlabeled_ratio=self.max_unlabeled_ratio,
            n_threads=self.n_jobs,
            calibration_method=self.calibration or "isotonic",
            calibration_data=self.calibration_data,
            interval_resamples=self.interval_resamples,
            **extra,
        )

    def _finish(
        self, alphas: list[float], groups: dict[str, list[SubproblemResult]], config: PUConfig
    ) -> None:
        """Alpha over the iterations and its interval from the first iteration's
        subproblems under each labeling assumption computed (``groups``)."""
        self.alphas_ = np.asarray(alphas)
        self.alpha_ = float(np.mean(self.alphas_))
        self.alpha_interval_ = (
            alpha_interval(groups, config, self.random_state, alphas)
            if config.interval_resamples
            else None
        )

    def _classify(
        self, X: np.ndarray, y: np.ndarray, row_ids: np.ndarray, config: PUConfig
    ) -> None:
        self.improved_proba_ = improved_probabilities(
            X, y, row_ids, self.calibrated_proba_, self.alpha_, config, self.random_state
        )

    def _fit_dask(self, X: Any, y: Any, client: Any, method: str, config: PUConfig) -> Any:
        """Fit on Dask collections through the distributed engine (same numerics)."""
        from distributed import default_client

        from pulsnar_dask.dask_executor.engine import run_job
        from pulsnar_dask.io import PUFrame, with_row_ids

        label, row_id = "__pu_label__", "__pu_row_id__"
        frame = with_row_ids(X.assign(**{label: y}), row_id)
        puf = PUFrame(frame, [str(c) for c in X.columns], label, row_id, None)
        result = run_job(
            client or default_client(), puf, method=method, config=config,
            seed=self.random_state, iterations=self.n_iterations,
            calibrate_probabilities=bool(self.calibration or self.classify),
            classify=self.classify,
        )  # fmt: skip
        self.alphas_ = np.asarray(result.alphas)
        self.alpha_ = result.alpha
        self.alpha_interval_ = result.alpha_interval
        self.method_, self.method_evidence_ = result.method, result.method_evidence
        self.n_clusters_ = result.n_clusters
        self.cluster_alphas_ = np.asarray(result.cluster_alphas)
        self.cluster_estimates_ = result.estimates
        self.alpha_estimate_ = result.estimates[0]
        self.subproblems_ = result.subproblems
        self.oof_proba_ = result.probability
        if result.calibrated is not None:
            self.calibrated_proba_ = result.calibrated
        if result.improved is not None:
            self.improved_proba_ = result.improved
        return self

    def fit(self, X: Any, y: Any, client: Any = None) -> PULSCAR:
        """Estimate alpha from features ``X`` and PU labels ``y``; return self.

        ``X`` and ``y`` may be numpy/pandas (fitted in this process) or a Dask dataframe
        and series (fitted on ``client``'s cluster, or the default client's); the fitted
        vectors are then in row order.
        """
        config = self._config()
        if isinstance(X, dd.DataFrame):
            return self._fit_dask(X, y, client, "pulscar", config)
        X_arr, y_arr = _as_arrays(X, y)
        row_ids = np.arange(y_arr.size)
        results: list[SubproblemResult] = [
            run_subproblem(X_arr, y_arr, row_ids, config, self.random_state + i)
            for i in range(self.n_iterations)
        ]
        self._finish([r.alpha for r in results], {"pulscar": results[:1]}, config)
        self.method_, self.method_evidence_ = "pulscar", None
        self.n_clusters_ = 1
        self.cluster_alphas_ = np.array([self.alpha_])
        self.alpha_estimate_: AlphaEstimate = results[0].estimate
        self.subproblems_ = results[:1]
        self.oof_proba_ = np.mean([r.probabilities for r in results], axis=0)
        if self.calibration or self.classify:
            self.calibrated_proba_ = calibrated_on_rows(
                row_ids, results[:1], config, self.random_state
            )
        if self.classify:
            self._classify(X_arr, y_arr, row_ids, config)
        return self


class PULSNAR(PULSCAR):
    __doc__ = (
        """Positive-unlabeled alpha estimation when positives are not labeled at random (SNAR).

    The labeled positives are clustered into subtypes; PULSCAR runs on each cluster's
    positives plus all unlabeled rows, and the cluster alphas add up to ``alpha_``. With
    ``method="auto"`` (default) PULSCAR on all positives is kept instead where the data
    look SCAR (``method_``).

    Parameters
    ----------"""
        + _COMMON_DOC
        + """    n_clusters : int or None, default None
        Fixed number of clusters; ``None`` chooses it from the BIC curve.
    max_clusters : int, default 10
        Largest mixture tried for the BIC curve.
    cluster_selection : {"min", "knee"}, default "min"
        Cluster count from the lowest BIC, or from the reference's knee procedure (on the
        paper's synthetic protocol the minimum finds the 5 subtypes in 32 of 35 runs,
        the knee in 25; benchmarks/results/synthetic_pulsnar_minbic.md).
    max_cluster_features : int or None, default 100
        Cluster on at most this many top-gain features.
    max_cluster_rows : int or None, default 5000
        Fit the mixtures on at most this many positives (a seeded sample); every positive
        is then assigned to a cluster.
    min_cluster_fraction : float, default 0.02
        Mixture components with fewer positives than this share are merged into their
        most probable neighbours.
    covariance_type : {"full", "diag", "spherical"}, default "full"
    method : {"auto", "pulsnar"}, default "auto"
        ``auto`` also fits PULSCAR (all positives as one subproblem) and keeps it when
        the positives form one cluster or the clusters hide positives in proportion to
        their labeled ones (:func:`pulsnar_dask.core.subtypes.choose_method`); ``pulsnar`` always
        sums the clusters.

    Attributes
    ----------
    alpha_ : float
    alphas_ : ndarray
    cluster_alphas_ : ndarray of shape (n_clusters_,)
        Per-cluster alphas (mean over iterations).
    n_clusters_ : int
    method_ : str
        ``"pulsnar"`` or, with ``method="auto"``, the method chosen.
    method_evidence_ : dict or None
        With ``method="auto"``: the evidence for ``method_``.
    clustering_ : Clustering
        BIC curve, cluster of each positive, features used.
    cluster_estimates_ : list of AlphaEstimate
        First iteration's densities per cluster.
    subproblems_ : list of SubproblemResult
        First iteration's cluster subproblems.
    oof_proba_ : ndarray of shape (n,)
        ``1 - prod_c (1 - p_c)`` of the clusters' out-of-fold probabilities.
    calibrated_proba_, improved_proba_ : ndarray of shape (n,)
        With ``calibration`` / ``classify``.
    """
    )

    def __init__(
        self,
        n_folds: int = 5,
        bin_method: str = "rice",
        alpha_region: str = "upper",
        alpha_estimator: str = "kernel",
        bandwidth_search: str = "local",
        bandwidth_bounds: tuple[float, float] = BANDWIDTH_BOUNDS,
        kernel_normalization: str = "point",
        xgb_params: dict | None = None,
        n_rounds: int = 100,
        max_unlabeled_ratio: float | None = 5.0,
        n_iterations: int = 1,
        calibration: str | None = None,
        calibration_data: str = "PU",
        classify: bool = False,
        interval_resamples: int = 30,
        n_jobs: int | None = None,
        random_state: int = 0,
        n_clusters: int | None = None,
        max_clusters: int = 10,
        cluster_selection: str = "min",
        max_cluster_features: int | None = 100,
        max_cluster_rows: int | None = 5000,
        min_cluster_fraction: float = 0.02,
        covariance_type: str = "full",
        method: str = "auto",
    ):
        super().__init__(
            n_folds=n_folds,
            bin_method=bin_method,
            alpha_region=alpha_region,
            alpha_estimator=alpha_estimator,
            bandwidth_search=bandwidth_search,
            bandwidth_bounds=bandwidth_bounds,
            kernel_normalization=kernel_normalization,
            xgb_params=xgb_params,
            n_rounds=n_rounds,
            max_unlabeled_ratio=max_unlabeled_ratio,
            n_iterations=n_iterations,
            calibration=calibration,
            calibration_data=calibration_data,
            classify=classify,
            interval_resamples=interval_resamples,
            n_jobs=n_jobs,
            random_state=random_state,
        )
        self.n_clusters = n_clusters
        self.max_clusters = max_clusters
        self.cluster_selection = cluster_selection
        self.max_cluster_features = max_cluster_features
        self.max_cluster_rows = max_cluster_rows
        self.min_cluster_fraction = min_cluster_fraction
        self.covariance_type = covariance_type
        self.method = method

    def fit(self, X: Any, y: Any, client: Any = None) -> PULSNAR:
        """Cluster the positives, estimate each cluster's alpha, and return self.

        Takes numpy/pandas data, or a Dask dataframe and series with ``client`` (see
        :meth:`PULSCAR.fit`).
        """
        config = self._config(
            max_clusters=self.max_clusters,
            n_clusters=self.n_clusters,
            cluster_selection=self.cluster_selection,
            covariance_type=self.covariance_type,
            max_cluster_features=self.max_cluster_features,
            max_cluster_rows=self.max_cluster_rows,
            min_cluster_fraction=self.min_cluster_fraction,
        )
        if self.method not in ("auto", "pulsnar"):
            raise ValueError(f"method must be 'auto' or 'pulsnar', got {self.method!r}")
        if isinstance(X, dd.DataFrame):
            return self._fit_dask(X, y, client, self.method, config)
        X_arr, y_arr = _as_arrays(X, y)
        row_ids = np.arange(y_arr.size)
        seed = self.random_state
        gain = importance_gain(X_arr, y_arr, row_ids, config, seed)
        positives = np.flatnonzero(y_arr == 1)
        model_features, cluster_features = select_features(gain, config)
        X_cluster = X_arr[positives][:, cluster_features]
        Z = clustering_matrix(X_cluster, gain[cluster_features])
        fits = [fit_mixture_size(Z, n, config, seed) for n in mixture_sizes(config, positives.size)]
        chosen, bic = choose_mixture(fits, config)
        positive_labels = cluster_labels(chosen, Z, min_cluster_size(config, positives.size))
        names = _feature_names(X)
        self.clustering_: Clustering = make_clustering(
            chosen,
            bic,
            positive_labels,
            gain,
            model_features,
            cluster_features,
            subtype_profiles(X_cluster, positive_labels, [names[i] for i in cluster_features]),
        )
        unlabeled = np.flatnonzero(y_arr == 0)
        X_model = X_arr[:, model_features]
        iterations: list[list[SubproblemResult]] = []
        for i in range(self.n_iterations):
            per_cluster = []
            for c in range(self.clustering_.n_clusters):
                rows = np.concatenate([positives[self.clustering_.labels == c], unlabeled])
                per_cluster.append(
                    run_subproblem(X_model[rows], y_arr[rows], row_ids[rows], config, seed + i)
                )
            iterations.append(per_cluster)
        self.method_, self.method_evidence_ = "pulsnar", None
        clusters = iterations[0]
        groups = {"pulsnar": clusters}
        if self.method == "auto":
            self.method_, self.method_evidence_ = choose_method(
                [r.alpha for r in clusters], [r.n_positive for r in clusters]
            )
            # PULSCAR beside the clusters (as the engine runs it): kept when chosen, and
            # the other assumption of the interval
            if len(clusters) > 1 and (self.method_ == "pulscar" or config.interval_resamples):
                pulscar = [
                    run_subproblem(X_arr, y_arr, row_ids, config, seed + i)
                    for i in range(self.n_iterations if self.method_ == "pulscar" else 1)
                ]
                if self.method_ == "pulscar":
                    iterations = [[r] for r in pulscar]
                    groups = {"pulscar": pulscar[:1], "pulsnar": clusters}
                else:
                    groups["pulscar"] = pulscar[:1]
            elif self.method_ == "pulscar":
                groups = {"pulscar": clusters}
        self._finish(
            [sum(r.alpha for r in per_cluster) for per_cluster in iterations], groups, config
        )
        self.n_clusters_ = len(iterations[0])
        self.cluster_alphas_ = np.mean([[r.alpha for r in it] for it in iterations], axis=0)
        first = iterations[0]
        self.cluster_estimates_ = [r.estimate for r in first]
        self.subproblems_ = first
        self.oof_proba_ = combine_on_rows(row_ids, [(r.row_ids, r.probabilities) for r in first])
        if self.calibration or self.classify:
            self.calibrated_proba_ = calibrated_on_rows(row_ids, first, config, seed)
        if self.classify:
            self._classify(X_arr, y_arr, row_ids, config)
        return self
