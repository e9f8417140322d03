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

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.density import BANDWIDTH_BOUNDS
from pulsnar_dask.pipeline.result import JobResult
from pulsnar_dask.pipeline.stages import run_pipeline

logger = logging.getLogger(__name__)

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
        Out-of-fold probabilities of the first iteration.
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
        *,
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

    def _fit(self, X: Any, y: Any, client: Any, method: str, config: PUConfig) -> PULSCAR:
        """Run the pipeline where the data are, and set the fitted attributes from its
        result: the same whatever the input type."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)  # a refit leaves nothing of the previous fit
        if isinstance(X, dd.DataFrame):
            from distributed import default_client

            from pulsnar_dask.dask_executor.engine import DaskExecutor
            from pulsnar_dask.io import PUFrame, with_row_ids

            label, row_id = "__pu_label__", "__pu_row_id__"
            frame = with_row_ids(X.assign(**{label: y}), row_id)
            puf = PUFrame(frame, [str(c) for c in X.columns], label, row_id, None)
            executor = DaskExecutor(client or default_client(), puf)
        else:
            from pulsnar_dask.pipeline.in_process import InProcessExecutor

            executor = InProcessExecutor(X, y)
        result = run_pipeline(
            executor,
            method=method,
            config=config,
            seed=self.random_state,
            iterations=self.n_iterations,
            calibrate_probabilities=bool(self.calibration or self.classify),
            classify=self.classify,
        )
        self._set_fitted(result)
        return self

    def _set_fitted(self, result: JobResult) -> None:
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
        if result.clustering is not None:
            self.clustering_ = result.clustering
        if result.calibrated is not None:
            self.calibrated_proba_ = result.calibrated
        if result.improved is not None:
            self.improved_proba_ = result.improved

    def fit(self, X: Any, y: Any, client: Any = None) -> PULSCAR:
        """Estimate alpha from features ``X`` and PU labels ``y``; return self.

        ``X`` and ``y`` may be numpy/pandas (fitted in this process) or a Dask dataframe
        and series (fitted on ``client``'s cluster, or the default client's); the fitted
        vectors are in row order either way.
        """
        return self._fit(X, y, client, "pulscar", self._config())


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
        *,
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
        return self._fit(X, y, client, self.method, config)
