"""XGBoost on in-memory arrays: out-of-fold probabilities and gain importances.

These run inside one process (the client for the in-memory estimators, or one Dask task:
a fold model on its gathered training rows, or a partition's rows scored). Training rows
are expected in canonical order (by row id) so that a model is bit-identical whatever
produced the arrays.

XGBoost is imported where a model is trained or applied: the distributed job's client
never does either (it imports XGBoost only to check ``xgb_params`` when some are given),
and the import would add about half a second to every run's start-up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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


# Parameters that depend on the machine the models train on, not checked on the client.
_MACHINE_PARAMS = ("device", "nthread", "n_jobs")


def check_booster_params(
    overrides: Mapping[str, Any], feature_types: list[str] | None, n_features: int
) -> None:
    """Refuse XGBoost parameters XGBoost does not know or whose values it refuses, by
    training one round on four rows of the table's shape and types with them (a misspelt
    name would otherwise only draw a warning on a worker, and the run go on without it).

    Parameters
    ----------
    overrides : mapping
        The user's XGBoost parameters (``xgb_params``).
    feature_types : list of str or None
        The table's column types (:func:`matrix`); ``None``: all numeric.
    n_features : int
        The table's number of columns.

    Raises
    ------
    ValueError
        Naming the parameters, or with XGBoost's own first line about the value.
    """
    import warnings

    import xgboost as xgb

    params = {k: v for k, v in booster_params(overrides, 0).items() if k not in _MACHINE_PARAMS}
    verbosity = params.pop("verbosity", 1)
    X = np.zeros((4, n_features), dtype=np.float32)
    rows = matrix(X, np.array([0, 1, 0, 1], dtype=np.float32), feature_types)
    # XGBoost names the parameters it does not use in a warning, at verbosity 1 and up;
    # the context puts the process's own setting back
    with warnings.catch_warnings(record=True) as caught, xgb.config_context(verbosity=1):
        warnings.simplefilter("always")
        try:
            with xgb.config_context(verbosity=verbosity):
                pass
            xgb.train(params, rows, num_boost_round=1)
        except Exception as exc:  # XGBoost's own errors, and Python's on a value's type
            said = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            said = re.sub(r"^\[[\d:]+\] \S+: ", "", said)  # XGBoost's time and source line
            raise ValueError(f"xgb_params: {said}") from None
    said = " ".join(str(w.message) for w in caught)
    found = re.findall(r"Parameters: \{ (.*?) \} are not used", said)
    unused = [n.strip().strip('"') for n in ", ".join(found).split(",")] if found else []
    names = [n for n in unused if n in overrides]  # not the defaults another booster ignores
    if names:
        raise ValueError(f"xgb_params: XGBoost has no parameter(s) {', '.join(names)}")


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
    if params.get("tree_method", "hist") == "hist":
        # the histogram index built straight from the array: the same model as from a
        # DMatrix (tested), without the DMatrix's copy of the rows
        dtrain = xgb.QuantileDMatrix(
            X,
            label=y,
            max_bin=int(params.get("max_bin", 256)),
            feature_types=feature_types,
            enable_categorical=feature_types is not None,
        )
    else:
        dtrain = matrix(X, y, feature_types)
    return xgb.train({**params, "scale_pos_weight": weight}, dtrain, num_boost_round=n_rounds)


def fold_model(
    X: np.ndarray,
    labels: np.ndarray,
    folds: np.ndarray,
    fold: int,
    params: Mapping[str, Any],
    n_rounds: int = DEFAULT_N_ROUNDS,
    trainable: np.ndarray | None = None,
    feature_types: list[str] | None = None,
) -> bytes:
    """Train on every fold but ``fold``: the model that scores ``fold``'s rows.

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
        ``None``: every row.
    feature_types : list of str or None
        XGBoost's type of each column (see :func:`matrix`).

    Returns
    -------
    bytes
        The model as XGBoost JSON.
    """
    train = folds != fold if trainable is None else (folds != fold) & trainable
    y = np.asarray(labels, dtype=np.float32)[train]
    booster = _fit(X[train], y, params, n_rounds, feature_types)
    return bytes(booster.save_raw(raw_format="json"))


def fold_predictions(
    models: Sequence[bytes], X: np.ndarray, folds: np.ndarray, n_threads: int | None = None
) -> np.ndarray:
    """Score each row with the model of its fold (``models[f]`` for ``folds == f``).

    Rows are scored independently, so any subset of a table, in any order, gets the
    probabilities the whole table would. ``n_threads``: XGBoost threads (``None``: its
    default, every core).

    Returns
    -------
    ndarray of float64 of shape (n,)
        Class-1 probabilities, in row order.
    """
    import xgboost as xgb

    proba = np.empty(len(folds), dtype=float)
    for fold, model in enumerate(models):
        held_out = folds == fold
        if held_out.any():
            booster = xgb.Booster(model_file=bytearray(model))
            if n_threads is not None:
                booster.set_param({"nthread": int(n_threads)})
            # in place: no DMatrix, and the columns go by position (a model trained on
            # xgboost.dask carries names); the model holds the categorical columns' types
            proba[held_out] = booster.inplace_predict(X[held_out])
    return proba


def out_of_fold_probabilities(
    X: np.ndarray,
    labels: np.ndarray,
    folds: np.ndarray,
    n_folds: int,
    params: Mapping[str, Any],
    n_rounds: int = DEFAULT_N_ROUNDS,
    trainable: np.ndarray | None = None,
    feature_types: list[str] | None = None,
) -> tuple[np.ndarray, list[bytes]]:
    """Return each row's class-1 probability from the model not trained on its fold.

    ``folds`` holds values in ``0..n_folds-1``; the other arguments are
    :func:`fold_model`'s.

    Returns
    -------
    (probabilities, models)
        Out-of-fold probabilities (float64, shape ``(n,)``) and the ``n_folds`` fold
        models as XGBoost JSON, fold 0 first.
    """
    models = [
        fold_model(X, labels, folds, fold, params, n_rounds, trainable, feature_types)
        for fold in range(n_folds)
    ]
    return fold_predictions(models, X, folds, params.get("nthread")), models


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
