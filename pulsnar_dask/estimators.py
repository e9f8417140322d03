"""scikit-learn style PULSCAR and PULSNAR estimators.

``PULSCAR(...).fit(X, y)`` and ``PULSNAR(...).fit(X, y)`` take numpy arrays or pandas
frames (fitted in this process) or Dask collections (fitted on a cluster), with ``y`` 1 for
a labeled positive and 0 for unlabeled, and expose ``alpha_`` and the probabilities. Both
run the one pipeline (:mod:`pulsnar_dask.pipeline.stages`); their parameters are
:class:`~pulsnar_dask.core.config.PUConfig`'s settings, with its defaults and help.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.utils import ClassifierTags, check_random_state

from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import MAX_SEED, PUConfig, is_whole, parameter_docs
from pulsnar_dask.core.model import PUModel
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.checks import check_representable, unrepresentable_counts
from pulsnar_dask.pipeline.in_process import check_2d
from pulsnar_dask.pipeline.result import JobResult
from pulsnar_dask.pipeline.stages import run_pipeline

logger = logging.getLogger(__name__)

_D = PUConfig()  # the defaults
# PUConfig settings that are parameters of both estimators, and of PULSNAR alone
SCORING_SETTINGS = [
    "n_folds", "bin_method", "alpha_region", "alpha_estimator", "tail_fraction",
    "bandwidth_search", "bandwidth_error", "bandwidth_bounds", "kernel_normalization",
    "xgb_params", "n_rounds", "max_unlabeled_ratio", "max_train_rows", "calibration_data",
    "interval_resamples",
]  # fmt: skip
CLUSTER_SETTINGS = [
    "n_clusters", "max_clusters", "cluster_selection", "covariance_type",
    "max_cluster_features", "max_cluster_rows", "min_cluster_fraction", "claim_overlap",
    "max_reading_rows",
]  # fmt: skip
_OWN_DOC = """    n_iterations : int, default 1
        Repeats with seeds ``random_state + i``; ``alpha_`` is their mean.
    calibration : {None, "isotonic", "sigmoid"}, default None
        Calibrate probabilities with the estimated alpha (Algorithm 3).
    classify : bool, default False
        Retrain on recovered labels (Algorithm 4); implies isotonic calibration if none.
    random_state : int, RandomState, Generator or None, default 0
        The seed of every random draw (folds, bootstrap, mixtures). ``None`` or a NumPy
        random state draws one (a fit then differs from the next); ``seed_`` is the one
        used.
    categorical_features : list of str or None, default None
        Numeric columns to take as categorical (names; ``x0, x1, ...`` for an array).
        String and ``category`` columns of a frame always are: XGBoost splits them on
        sets of categories.
"""


def _proba_part(part: pd.DataFrame, model: PUModel) -> pd.DataFrame:
    """Two-column probabilities (negative, positive) of one frame's rows, after refusing
    feature values float32 cannot hold (:func:`check_representable`)."""
    counts = None
    with contextlib.suppress(ValueError, TypeError):  # text: refused by the encoding
        counts = unrepresentable_counts(part[model.schema.numeric]).iloc[0]
    if counts is not None:
        check_representable(counts)
    _, positive = model.predict_frame(part)
    return pd.DataFrame({"negative": 1.0 - positive, "positive": positive}, index=part.index)


def _proba_partition(
    part: pd.DataFrame, model: PUModel, partition_info: dict | None = None
) -> pd.DataFrame:
    """:func:`_proba_part` of one partition of a Dask dataframe, a refusal naming it."""
    try:
        return _proba_part(part, model)
    except PUError as exc:
        number = (partition_info or {}).get("number")
        where = "" if number is None else f" (X's partition {number}, counted from 0)"
        raise PUError(f"{exc}{where}") from None


def _seed_of(random_state: Any, iterations: Any) -> Any:
    """The job's seed from scikit-learn's ``random_state``: an integer as given (checked
    by the job); for ``None`` (NumPy's global random state, as scikit-learn reads it) or a
    NumPy ``RandomState`` or ``Generator``, one drawn from it that leaves room for the
    iterations' seeds ``seed + i`` (0 where there is none: the job refuses the
    iterations)."""
    if is_whole(random_state):
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        draw = random_state.integers
    elif random_state is None or isinstance(random_state, np.random.RandomState):
        draw = partial(check_random_state(random_state).randint, dtype=np.int64)
    else:
        return random_state
    top = max(MAX_SEED - max(int(iterations), 1) + 1, 0) if is_whole(iterations) else MAX_SEED
    return int(draw(0, top + 1))


class PULSCAR(BaseEstimator):
    __doc__ = (
        """Positive-unlabeled alpha estimation when positives are labeled at random (SCAR).

    Parameters
    ----------
"""
        + parameter_docs([*SCORING_SETTINGS, "n_threads"], rename={"n_threads": "n_jobs"})
        + _OWN_DOC
        + """
    Attributes
    ----------
    alpha_ : float
        Estimated fraction of positives among the unlabeled rows.
    alphas_ : ndarray
        One estimate per iteration (one only where ``method="auto"`` reads the clusters,
        which are scored once).
    seed_ : int
        The seed the fit used: ``random_state``, or the one drawn from it.
    alpha_interval_ : AlphaInterval or None
        95% interval of alpha (``.low``, ``.high``) and the readings it spans
        (:func:`pulsnar_dask.core.interval.alpha_interval`), from 0 where the classes
        overlap (``negative_auc_`` below the overlap line); None with
        ``interval_resamples=0``.
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
    negative_auc_ : float
        AUC between labeled positives and the unlabeled negatives implied at the first
        iteration's alpha (:func:`pulsnar_dask.core.metrics.implied_negative_auc`), to 3
        decimals; below 0.95 the classes overlap and alpha may be far too high (the run
        warns).
    calibrated_proba_ : ndarray of shape (n,)
        With ``calibration``.
    improved_proba_ : ndarray of shape (n,)
        With ``classify``.
    model_ : PUModel
        What scores new rows (:meth:`predict_proba`, :meth:`save`): the fold models and
        the calibration (:mod:`pulsnar_dask.core.model`).
    """
    )
    _settings = SCORING_SETTINGS

    def __init__(
        self,
        *,
        n_folds: int = _D.n_folds,
        bin_method: str = _D.bin_method,
        alpha_region: str = _D.alpha_region,
        alpha_estimator: str = _D.alpha_estimator,
        tail_fraction: float = _D.tail_fraction,
        bandwidth_search: str = _D.bandwidth_search,
        bandwidth_error: str = _D.bandwidth_error,
        bandwidth_bounds: tuple[float, float] = _D.bandwidth_bounds,
        kernel_normalization: str = _D.kernel_normalization,
        xgb_params: dict | None = None,
        n_rounds: int = _D.n_rounds,
        max_unlabeled_ratio: float | None = _D.max_unlabeled_ratio,
        max_train_rows: int | None = _D.max_train_rows,
        calibration_data: str = _D.calibration_data,
        interval_resamples: int = _D.interval_resamples,
        n_jobs: int | None = _D.n_threads,
        n_iterations: int = 1,
        calibration: str | None = None,
        classify: bool = False,
        random_state: int | np.random.RandomState | np.random.Generator | None = 0,
        categorical_features: list[str] | None = None,
    ):
        self.n_folds = n_folds
        self.bin_method = bin_method
        self.alpha_region = alpha_region
        self.alpha_estimator = alpha_estimator
        self.tail_fraction = tail_fraction
        self.bandwidth_search = bandwidth_search
        self.bandwidth_error = bandwidth_error
        self.bandwidth_bounds = bandwidth_bounds
        self.kernel_normalization = kernel_normalization
        self.xgb_params = xgb_params
        self.n_rounds = n_rounds
        self.max_unlabeled_ratio = max_unlabeled_ratio
        self.max_train_rows = max_train_rows
        self.calibration_data = calibration_data
        self.interval_resamples = interval_resamples
        self.n_jobs = n_jobs
        self.n_iterations = n_iterations
        self.calibration = calibration
        self.classify = classify
        self.random_state = random_state
        self.categorical_features = categorical_features

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # A binary classifier of the PU labels to scikit-learn (stratified folds, scorers
        # on predict_proba's positive column): 1 labeled positive, 0 unlabeled.
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags(multi_class=False)
        tags.input_tags.allow_nan = True  # XGBoost takes a missing value as missing
        tags.target_tags.required = True
        return tags

    def _config(self) -> PUConfig:
        """The settings, checked once (ValueError naming the bad one)."""
        values = {name: getattr(self, name) for name in self._settings}
        if self.xgb_params is not None and not isinstance(self.xgb_params, Mapping):
            raise PUError(
                f"xgb_params must be a dict of XGBoost parameters, got {self.xgb_params!r}"
            )
        if isinstance(self.categorical_features, str):  # would be read letter by letter
            raise PUError(
                "categorical_features must be a list of column names, got the string "
                f"{self.categorical_features!r}"
            )
        values["xgb_params"] = dict(self.xgb_params or {})
        return PUConfig(
            **values, n_threads=self.n_jobs, calibration_method=self.calibration or "isotonic"
        )

    def _fit(self, X: Any, y: Any, client: Any, method: str, config: PUConfig) -> PULSCAR:
        """Run the pipeline where the data are, and set the fitted attributes from its
        result: the same whatever the input type."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)  # a refit leaves nothing of the previous fit
        if y is None:
            raise PUError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        if not isinstance(X, dd.DataFrame):  # a Dask fit takes y as given
            y = np.asarray(y)
        if np.ndim(y) == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected: its one column "
                "is taken as the labels",
                DataConversionWarning,
                stacklevel=3,
            )
        declared = list(self.categorical_features or [])
        if hasattr(X, "columns"):
            names = pd.Index([str(c) for c in X.columns])
            if names.has_duplicates:
                twice = ", ".join(map(repr, names[names.duplicated()].unique()))
                raise PUError(f"X has more than one column named {twice}; each needs its own")
        if isinstance(X, dd.DataFrame) and not isinstance(y, (dd.Series, pd.Series)):
            raise PUError(
                "with a Dask dataframe X, y must be a Dask or pandas series on X's index, "
                f"got {type(y).__name__}"
            )
        if isinstance(X, dd.DataFrame):
            from distributed import default_client

            from pulsnar_dask.core.schema import categorical_columns
            from pulsnar_dask.dask_executor.engine import DaskExecutor
            from pulsnar_dask.dask_executor.partitions import with_row_ids
            from pulsnar_dask.io import PUFrame

            client = client or default_client()
            # "y" as the user passed it, named so in any refusal of its values
            label = "y" if "y" not in X.columns else "__pu_label__"
            row_id = "__pu_row_id__"
            frame = with_row_ids(X.assign(**{label: y}), row_id, client)
            names = [str(c) for c in X.columns]
            categorical = categorical_columns(X.dtypes, names, declared)
            puf = PUFrame(frame, names, label, row_id, None, categorical, names)
            executor = DaskExecutor(
                client, puf, max_train_rows=config.max_train_rows, n_threads=config.n_threads
            )
        else:
            from pulsnar_dask.pipeline.in_process import InProcessExecutor

            executor = InProcessExecutor(X, y, declared)
        seed = _seed_of(self.random_state, self.n_iterations)
        result = run_pipeline(
            executor,
            method=method,
            config=config,
            seed=seed,
            iterations=self.n_iterations,
            calibrate_probabilities=bool(self.calibration or self.classify),
            classify=self.classify,
        )
        self._set_fitted(result)
        self.seed_ = seed
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = len(result.model.schema.names)
        if hasattr(X, "columns") and all(isinstance(c, str) for c in X.columns):
            self.feature_names_in_ = np.asarray(list(X.columns), dtype=object)
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
        self.negative_auc_ = result.negative_auc
        self.oof_proba_ = result.probability
        if result.clustering is not None:
            self.clustering_ = result.clustering
        if result.calibrated is not None:
            self.calibrated_proba_ = result.calibrated
        if result.improved is not None:
            self.improved_proba_ = result.improved
        self.model_ = result.model

    def fit(self, X: Any, y: Any, client: Any = None) -> PULSCAR:
        """Estimate alpha from features ``X`` and PU labels ``y``; return self.

        ``X`` and ``y`` may be numpy/pandas (fitted in this process) or a Dask dataframe
        and series (fitted on ``client``'s cluster, or the default client's); the fitted
        vectors are in row order either way.
        """
        return self._fit(X, y, client, "pulscar", self._config())

    def _fitted_model(self) -> PUModel:
        if not hasattr(self, "model_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        return self.model_

    def predict_proba(self, X: Any) -> Any:
        """Probability of being positive of new rows, from the saved models and the
        calibration (:meth:`PUModel.predict <pulsnar_dask.core.model.PUModel.predict>`).

        Parameters
        ----------
        X : array-like or dask.dataframe.DataFrame
            Rows with the features the model was fitted on: a frame with those columns
            (others are ignored), or an array with them in order. Categories it has not
            seen count as missing. Values float32 cannot hold (infinite ones) are refused:
            for a Dask dataframe as its partitions are computed.

        Returns
        -------
        ndarray of shape (n, 2), or a dask array for a Dask dataframe
            Columns: probability of being negative, of being positive (calibrated).
        """
        model = self._fitted_model()
        if isinstance(X, dd.DataFrame):
            self._check_columns(model, X.columns)
            meta = pd.DataFrame({"negative": [], "positive": []}, dtype=float)
            scored = X[model.schema.names].map_partitions(_proba_partition, model, meta=meta)
            return scored.to_dask_array()
        return _proba_part(self._frame(model, X), model).to_numpy()

    def predict(self, X: Any) -> Any:
        """1 where the calibrated probability of being positive is at least 0.5, else 0
        (int8; a dask array for a Dask dataframe)."""
        positive = self.predict_proba(X)[:, 1]
        return (positive >= 0.5).astype(np.int8)

    @staticmethod
    def _check_columns(model: PUModel, columns: Any) -> None:
        missing = model.schema.missing(columns)
        if missing:
            raise ValueError(f"X lacks feature column(s) the model needs: {', '.join(missing)}")

    @classmethod
    def _frame(cls, model: PUModel, X: Any) -> pd.DataFrame:
        if isinstance(X, pd.DataFrame):
            X = X.set_axis([str(c) for c in X.columns], axis=1)
            cls._check_columns(model, X.columns)
            return X
        if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
            raise PUError("sparse X is not supported: pass a dense array (X.toarray())")
        X = np.asarray(X)
        check_2d(X)
        if X.shape[1] != len(model.schema.names):
            raise ValueError(
                f"X has {X.shape[1]} features, but {cls.__name__} is expecting "
                f"{len(model.schema.names)} features as input"
            )
        return pd.DataFrame(X, columns=model.schema.names)

    def save(self, path: str, storage_options: dict | None = None) -> None:
        """Write the fitted model to a folder (local path or fsspec URL) as plain files:
        ``model.json`` and XGBoost JSON models (:func:`pulsnar_dask.io.write_model`)."""
        from pulsnar_dask.io import write_model

        write_model(self._fitted_model(), path, storage_options)

    @classmethod
    def load(cls, path: str, storage_options: dict | None = None) -> PULSCAR:
        """An estimator holding a saved model: ``model_``, ``alpha_`` and ``method_`` are
        set (the fit's other attributes are not saved), and its parameters are the saved
        run's where they are this estimator's."""
        from pulsnar_dask.io import read_model

        model = read_model(path, storage_options)
        names = cls._get_param_names()
        renamed = {"seed": "random_state", "n_threads": "n_jobs", "iterations": "n_iterations"}
        settings = {renamed.get(k, k): v for k, v in model.settings.items()}
        if settings.get("calibrate"):
            settings["calibration"] = settings["calibration_method"]
        estimator = cls(
            **{
                k: tuple(v) if isinstance(v, list) else v  # JSON gave lists for tuples
                for k, v in settings.items()
                if k in names and k != "method"
            }
        )
        estimator.model_ = model
        estimator.n_features_in_ = len(model.schema.names)
        estimator.alpha_ = model.alpha
        estimator.method_ = model.method
        return estimator


class PULSNAR(PULSCAR):
    __doc__ = (
        """Positive-unlabeled alpha estimation when positives are not labeled at random (SNAR).

    The labeled positives are clustered into subtypes; PULSCAR runs on each cluster's
    positives plus all unlabeled rows, and the cluster alphas add up to ``alpha_``. With
    ``method="auto"`` (default) ``alpha_`` is PULSCAR's on all positives, and the clusters'
    reading is recorded beside it and spanned by the interval (``method_evidence_``); it is
    the clusters' where even their tail reading lies above PULSCAR's beyond the noise of
    both.

    Parameters
    ----------
"""
        + parameter_docs(
            [*SCORING_SETTINGS, *CLUSTER_SETTINGS, "n_threads"], rename={"n_threads": "n_jobs"}
        )
        + _OWN_DOC
        + """    method : {"auto", "pulsnar"}, default "auto"
        ``auto`` reads PULSCAR's alpha (all positives as one subproblem); where the
        positives form several clusters it scores them as ``pulsnar`` does, the
        interval spans both readings (``method_evidence_["readings"]``), and it reads
        the clusters' alpha instead where even their tail reading lies above PULSCAR's
        beyond the noise of both (``method_evidence_["read"]``); ``pulsnar`` always sums
        the clusters.

    Attributes
    ----------
    alpha_ : float
    alphas_ : ndarray
    seed_ : int
        The seed the fit used (see :class:`PULSCAR`).
    cluster_alphas_ : ndarray of shape (``n_clusters_``,)
        Per-cluster alphas (mean over iterations; with ``method="auto"`` reading the
        clusters' alpha, their one scoring's).
    n_clusters_ : int
    method_ : str
        ``"pulsnar"``; with ``method="auto"``, whose alpha it reads.
    method_evidence_ : dict or None
        With ``method="auto"``: the clusters found (``n_clusters``), ``reason``, and
        where there are several and the interval is computed, both readings
        (``readings``: ``"pulscar"`` and ``"pulsnar"``, the clusters'), how far the
        clusters' tail reading lies above PULSCAR's in their combined bootstrap spreads
        (``clusters_past_pulscar``) and whose alpha is read (``read``).
    clustering_ : Clustering
        BIC curve, cluster of each positive, features used.
    cluster_estimates_ : list of AlphaEstimate
        First iteration's densities per cluster (with ``method="auto"``, PULSCAR's one,
        whichever alpha it reads).
    subproblems_ : list of SubproblemResult
        First iteration's subproblems: the clusters', or PULSCAR's with
        ``method="auto"``.
    negative_auc_ : float or None
        As PULSCAR's, from the subproblem over all positives (PULSCAR's, scored beside
        the clusters under ``method="auto"``, or the one cluster's); None where none was
        scored (``method="pulsnar"`` with several clusters).
    oof_proba_ : ndarray of shape (n,)
        ``1 - prod_c (1 - p_c)`` of the subproblems' out-of-fold probabilities.
    calibrated_proba_, improved_proba_ : ndarray of shape (n,)
        With ``calibration`` / ``classify``.
    model_ : PUModel
        What scores new rows (see :class:`PULSCAR`).
    """
    )
    _settings = SCORING_SETTINGS + CLUSTER_SETTINGS

    def __init__(
        self,
        *,
        n_folds: int = _D.n_folds,
        bin_method: str = _D.bin_method,
        alpha_region: str = _D.alpha_region,
        alpha_estimator: str = _D.alpha_estimator,
        tail_fraction: float = _D.tail_fraction,
        bandwidth_search: str = _D.bandwidth_search,
        bandwidth_error: str = _D.bandwidth_error,
        bandwidth_bounds: tuple[float, float] = _D.bandwidth_bounds,
        kernel_normalization: str = _D.kernel_normalization,
        xgb_params: dict | None = None,
        n_rounds: int = _D.n_rounds,
        max_unlabeled_ratio: float | None = _D.max_unlabeled_ratio,
        max_train_rows: int | None = _D.max_train_rows,
        calibration_data: str = _D.calibration_data,
        interval_resamples: int = _D.interval_resamples,
        n_jobs: int | None = _D.n_threads,
        n_iterations: int = 1,
        calibration: str | None = None,
        classify: bool = False,
        random_state: int | np.random.RandomState | np.random.Generator | None = 0,
        categorical_features: list[str] | None = None,
        n_clusters: int | None = _D.n_clusters,
        max_clusters: int = _D.max_clusters,
        cluster_selection: str = _D.cluster_selection,
        covariance_type: str = _D.covariance_type,
        max_cluster_features: int | None = _D.max_cluster_features,
        max_cluster_rows: int | None = _D.max_cluster_rows,
        min_cluster_fraction: float = _D.min_cluster_fraction,
        claim_overlap: float = _D.claim_overlap,
        max_reading_rows: int | None = _D.max_reading_rows,
        method: str = "auto",
    ):
        super().__init__(
            n_folds=n_folds,
            bin_method=bin_method,
            alpha_region=alpha_region,
            alpha_estimator=alpha_estimator,
            tail_fraction=tail_fraction,
            bandwidth_search=bandwidth_search,
            bandwidth_error=bandwidth_error,
            bandwidth_bounds=bandwidth_bounds,
            kernel_normalization=kernel_normalization,
            xgb_params=xgb_params,
            n_rounds=n_rounds,
            max_unlabeled_ratio=max_unlabeled_ratio,
            max_train_rows=max_train_rows,
            calibration_data=calibration_data,
            interval_resamples=interval_resamples,
            n_jobs=n_jobs,
            n_iterations=n_iterations,
            calibration=calibration,
            classify=classify,
            random_state=random_state,
            categorical_features=categorical_features,
        )
        self.n_clusters = n_clusters
        self.max_clusters = max_clusters
        self.cluster_selection = cluster_selection
        self.covariance_type = covariance_type
        self.max_cluster_features = max_cluster_features
        self.max_cluster_rows = max_cluster_rows
        self.min_cluster_fraction = min_cluster_fraction
        self.claim_overlap = claim_overlap
        self.max_reading_rows = max_reading_rows
        self.method = method

    def fit(self, X: Any, y: Any, client: Any = None) -> PULSNAR:
        """Cluster the positives, estimate each cluster's alpha, and return self.

        Takes numpy/pandas data, or a Dask dataframe and series with ``client`` (see
        :meth:`PULSCAR.fit`).
        """
        check_choice("PULSNAR method", self.method, ("auto", "pulsnar"))
        return self._fit(X, y, client, self.method, self._config())
