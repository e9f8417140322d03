"""XGBoost on in-memory arrays: out-of-fold probabilities and gain importances.

These run inside one process (the client for the in-memory estimators, or one Dask task
for a subproblem that fits a worker). Rows are expected in canonical order (by row id) so
that a model is bit-identical whatever produced the arrays.

XGBoost is imported where a model is trained: the distributed job's client never trains
one, and the import would add about half a second to every run's start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pulsnar_dask.core.config import DEFAULT_N_ROUNDS

if TYPE_CHECKING:
    import xgboost as xgb

DEFAULT_XGB_PARAMS: dict[str, Any] = {
    "objective": "binary:logistic",
    "eval_metric": "logloss",
    "tree_method": "hist",
    "max_depth": 4,
    "eta": 0.2,
    # 64 histogram bins instead of XGBoost's 256: training 40% faster, alpha within noise
    # on the paper's benchmarks (benchmarks/results/README.md).
    "max_bin": 64,
}


def booster_params(
    overrides: Mapping[str, Any] | None, seed: int, n_threads: int | None = None
) -> dict[str, Any]:
    """Return XGBoost training parameters: defaults, then ``overrides``, then the seed.

    Parameters
    ----------
    overrides : mapping or None
        Any native XGBoost parameters (``max_depth``, ``eta``, ``device``...).
    seed : int
        XGBoost's random seed.
    n_threads : int or None
        Threads per model; ``None`` leaves XGBoost's default.

    Returns
    -------
    dict
    """
    params = {**DEFAULT_XGB_PARAMS, **(overrides or {}), "seed": int(seed)}
    if n_threads is not None:
        params["nthread"] = int(n_threads)
    return params


def matrix(
    X: np.ndarray, labels: np.ndarray | None = None, feature_types: list[str] | None = None
) -> xgb.DMatrix:
    """An XGBoost matrix of float32 features; ``feature_types`` (``c`` categorical codes,
    ``q`` numeric, see :class:`~pulsnar_dask.core.schema.FeatureSchema`) turns on
    XGBoost's categorical splits."""
    import xgboost as xgb

    return xgb.DMatrix(
        X, label=labels, feature_types=feature_types, enable_categorical=feature_types is not None
    )


def _fit(
    X: np.ndarray,
    y: np.ndarray,
    params: Mapping[str, Any],
    n_rounds: int,
    feature_types: list[str] | None = None,
) -> xgb.Booster:
    import xgboost as xgb

    n_pos = int(np.sum(y == 1))
    weight = (y.size - n_pos) / n_pos if n_pos else 1.0
    dtrain = matrix(X, y, feature_types)
    return xgb.train({**params, "scale_pos_weight": weight}, dtrain, num_boost_round=n_rounds)


def fold_probabilities(
    X: np.ndarray,
    labels: np.ndarray,
    folds: np.ndarray,
    fold: int,
    params: Mapping[str, Any],
    n_rounds: int = DEFAULT_N_ROUNDS,
    trainable: np.ndarray | None = None,
    feature_types: list[str] | None = None,
) -> tuple[np.ndarray, bytes]:
    """Train on every fold but ``fold`` and return the probabilities of ``fold``'s rows.

    The model uses ``scale_pos_weight = n_negative / n_positive`` of its training rows.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features (NaN allowed: XGBoost treats it as missing).
    labels : ndarray of shape (n,)
        0/1 training labels.
    folds : ndarray of int of shape (n,)
        Fold of each row.
    fold : int
        The held-out fold.
    params : mapping
        XGBoost parameters (see :func:`booster_params`).
    n_rounds : int
        Boosting rounds.
    trainable : ndarray of bool or None
        Rows allowed in training (see :func:`pulsnar_dask.core.folds.training_subsample`);
        every row is scored either way.
    feature_types : list of str or None
        XGBoost's type of each column (see :func:`matrix`).

    Returns
    -------
    (probabilities, model)
        Class-1 probabilities (float64) of the rows with ``folds == fold``, in row order,
        and the model as XGBoost JSON.
    """
    y = np.asarray(labels, dtype=np.float32)
    test = folds == fold
    train = ~test if trainable is None else ~test & trainable
    booster = _fit(X[train], y[train], params, n_rounds, feature_types)
    proba = booster.predict(matrix(X[test], feature_types=feature_types)).astype(float)
    return proba, bytes(booster.save_raw(raw_format="json"))


def out_of_fold_probabilities(
    X: np.ndarray,
    labels: np.ndarray,
    folds: np.ndarray,
    params: Mapping[str, Any],
    n_rounds: int = DEFAULT_N_ROUNDS,
    trainable: np.ndarray | None = None,
    feature_types: list[str] | None = None,
) -> tuple[np.ndarray, list[bytes]]:
    """Return each row's class-1 probability from the model not trained on its fold.

    Returns
    -------
    (probabilities, models)
        Out-of-fold probabilities (float64, shape ``(n,)``) and the fold models as
        XGBoost JSON, fold 0 first (see :func:`fold_probabilities`).
    """
    proba = np.empty(len(labels), dtype=float)
    models = []
    for fold in np.unique(folds):
        proba[folds == fold], model = fold_probabilities(
            X, labels, folds, fold, params, n_rounds, trainable, feature_types
        )
        models.append(model)
    return proba, models


def gain_importance(
    X: np.ndarray,
    labels: np.ndarray,
    params: Mapping[str, Any],
    n_rounds: int = DEFAULT_N_ROUNDS,
    feature_types: list[str] | None = None,
) -> np.ndarray:
    """Return the ``gain`` importance of every feature in a model trained on all rows.

    Returns
    -------
    ndarray of float of shape (n_features,)
        Average gain of the splits on each feature; 0 for features never used.
    """
    booster = _fit(X, np.asarray(labels, dtype=np.float32), params, n_rounds, feature_types)
    return gain_vector(booster, X.shape[1])


def gain_vector(booster: xgb.Booster, n_features: int) -> np.ndarray:
    """Return a booster's ``gain`` importance as a dense vector over ``f0..f{n-1}``."""
    scores = booster.get_score(importance_type="gain")
    gain = np.zeros(n_features)
    for name, value in scores.items():
        gain[int(name[1:])] = value
    return gain
