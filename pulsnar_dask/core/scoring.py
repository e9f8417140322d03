"""XGBoost on in-memory arrays: out-of-fold probabilities and gain importances.

These run inside one process: the client, for the in-memory estimators, or one Dask task,
for the distributed job (a fold model on its gathered training rows with the ``task``
engine, a partition's rows scored with either engine; the ``dask`` engine trains its
fold models with ``xgboost.dask`` over every worker instead, with the same parameters,
:func:`booster_params`). Training rows are expected in canonical order (by row id) so
that a model is bit-identical whatever produced the arrays.

XGBoost is imported where a model is trained or applied: the distributed job's client
never does either (it imports XGBoost only to check ``xgb_params`` when some are given),
and the import would add about half a second to every run's start-up.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pulsnar_dask.core.config import DEFAULT_N_ROUNDS, is_whole

if TYPE_CHECKING:
    import xgboost as xgb

DEFAULT_XGB_PARAMS: dict[str, Any] = {
    "objective": "binary:logistic",
    "eval_metric": "logloss",
    "tree_method": "hist",
    "max_depth": 4,
    "eta": 0.2,
    # 64 histogram bins instead of XGBoost's 256: training 40% faster, alpha within noise
    # on the paper's benchmarks (docs/decisions/).
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


def column_params(
    overrides: Mapping[str, Any], table: Sequence[str], columns: Sequence[str]
) -> dict[str, Any]:
    """Return XGBoost parameters for a model on ``columns``, with the parameters that hold
    one entry per feature, given for the table's features, rewritten for those columns.

    A model sees a subset of the table's features in its own order (PULSNAR's subproblems
    take the features the importance model split on, by decreasing gain), so XGBoost's
    positional forms given for the table would constrain the wrong features.

    Parameters
    ----------
    overrides : mapping
        The user's XGBoost parameters. ``monotone_constraints``: XGBoost's string
        ``"(1,0,-1)"`` or a list, one value in {-1, 0, 1} per table feature in order, or a
        mapping from feature name to such a value (features left out: 0).
        ``interaction_constraints``: a list of sets, each a list of feature names or table
        positions, or XGBoost's string of such a list; features the model does not see
        leave the sets.
    table : sequence of str
        The table's features, in order.
    columns : sequence of str
        The features the model sees, in its order.

    Returns
    -------
    dict
        ``overrides`` with those parameters in XGBoost's positional string forms over
        ``columns``.

    Raises
    ------
    ValueError
        If a per-feature parameter has the wrong length, an unknown feature or a value
        out of range.
    """
    params = dict(overrides)
    if "monotone_constraints" in params:
        by_name = _monotone_by_name(params["monotone_constraints"], list(table))
        values = [by_name.get(c, 0) for c in columns]
        params["monotone_constraints"] = "(" + ",".join(str(v) for v in values) + ")"
    if "interaction_constraints" in params:
        sets = _interaction_sets(params["interaction_constraints"], list(table))
        where = {name: i for i, name in enumerate(columns)}
        kept = [[where[n] for n in s if n in where] for s in sets]
        params["interaction_constraints"] = json.dumps([s for s in kept if s])
    return params


def _monotone_by_name(value: Any, table: list[str]) -> dict[str, int]:
    """``monotone_constraints`` as {feature: -1, 0 or 1} (see :func:`column_params`)."""
    name = "xgb_params: monotone_constraints"
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in table]
        if unknown:
            raise ValueError(f"{name} names unknown feature(s) {', '.join(map(str, unknown))}")
        pairs = list(value.items())
    else:
        if isinstance(value, str):
            text = value.strip().strip("()[]").strip()
            try:
                value = [int(v) for v in text.split(",")] if text else []
            except ValueError:
                raise ValueError(f"{name} {value!r} is not a list of -1, 0 and 1") from None
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, Sequence) or len(value) != len(table):
            length = len(value) if isinstance(value, Sequence) else "no"
            raise ValueError(
                f"{name} has {length} values for the table's {len(table)} features (one per "
                "feature in order, or a mapping from feature name to -1, 0 or 1)"
            )
        pairs = list(zip(table, value, strict=True))
    bad = [f"{k}={v!r}" for k, v in pairs if isinstance(v, bool) or v not in (-1, 0, 1)]
    if bad:
        raise ValueError(f"{name} takes -1, 0 or 1 per feature, got {', '.join(bad)}")
    return {k: int(v) for k, v in pairs}


def _interaction_sets(value: Any, table: list[str]) -> list[list[str]]:
    """``interaction_constraints`` as lists of feature names (see :func:`column_params`)."""
    name = "xgb_params: interaction_constraints"
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"{name} {value!r} is not a list of lists of features") from None
    if not isinstance(value, Sequence) or not all(
        isinstance(s, Sequence) and not isinstance(s, str) for s in value
    ):
        raise ValueError(f"{name} must be a list of lists of feature names or positions")
    known, sets = set(table), []
    for group in value:
        names = []
        for f in group:
            if isinstance(f, str) and f in known:
                names.append(f)
            elif is_whole(f) and 0 <= f < len(table):
                names.append(table[int(f)])
            else:
                raise ValueError(f"{name}: {f!r} is not a feature name or position of the table")
        sets.append(names)
    return sets


# Parameters that depend on the machine the models train on, not checked on the client.
_MACHINE_PARAMS = ("device", "nthread", "n_jobs")


# XGBoost's time and source file, before each of its messages
_XGBOOST_PREFIX = re.compile(r"^\[[\d:]+\] \S+: ")


def asks_for_gpu(params: Mapping[str, Any]) -> bool:
    """Whether XGBoost's ``device`` names a GPU (``cuda``, ``cuda:1``, ``gpu``...).

    Parameters
    ----------
    params : mapping
        XGBoost parameters (``xgb_params``).
    """
    return str(params.get("device", "cpu")).startswith(("cuda", "gpu"))


def trained_device(device: str) -> str:
    """The device XGBoost trains on in this process when asked for ``device``: that of a
    model of one round on four rows. Where it finds no GPU at all, XGBoost trains on the
    CPU with a warning; this reads ``cpu`` there, quietly. A GPU number past those it
    finds is an error here (``fail_on_invalid_gpu_id``), not XGBoost's other GPU.

    Parameters
    ----------
    device : str
        XGBoost's ``device`` (``cuda``, ``cuda:1``...).

    Returns
    -------
    str
        ``cpu``, ``cuda:0``...; or ``error: `` and XGBoost's message, on one line.
    """
    import xgboost as xgb

    rows = matrix(np.zeros((4, 1), dtype=np.float32), np.array([0, 1, 0, 1], dtype=np.float32))
    params = {"device": device, "fail_on_invalid_gpu_id": True, "verbosity": 0}
    try:
        with xgb.config_context(verbosity=0), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            booster = xgb.train(params, rows, num_boost_round=1)
    except xgb.core.XGBoostError as exc:  # its list of devices follows the first line
        said = " ".join(str(exc).split("Stack trace:")[0].split())
        return "error: " + _XGBOOST_PREFIX.sub("", said)
    return json.loads(booster.save_config())["learner"]["generic_param"]["device"]


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
            raise ValueError(f"xgb_params: {_XGBOOST_PREFIX.sub('', said)}") from None
    said = " ".join(str(w.message) for w in caught)
    found = re.findall(r"Parameters: \{ (.*?) \} are not used", said)
    unused = [n.strip().strip('"') for n in ", ".join(found).split(",")] if found else []
    names = [n for n in unused if n in overrides]  # not the defaults another booster ignores
    if names:
        raise ValueError(f"xgb_params: XGBoost has no parameter(s) {', '.join(names)}")


def model_threads(params: Mapping[str, Any]) -> int | None:
    """The threads XGBoost parameters give a model (``nthread``, or its alias ``n_jobs``;
    ``None``: not given, XGBoost's default of every core)."""
    threads = params.get("nthread", params.get("n_jobs"))
    return None if threads is None else int(threads)


def matrix(
    X: np.ndarray,
    labels: np.ndarray | None = None,
    feature_types: list[str] | None = None,
    n_threads: int | None = None,
) -> xgb.DMatrix:
    """An XGBoost matrix of float32 features; ``feature_types`` (``c`` categorical codes,
    ``q`` numeric, see :class:`~pulsnar_dask.core.schema.FeatureSchema`) turns on
    XGBoost's categorical splits; ``n_threads``: the threads that build it (``None``:
    XGBoost's default, every core)."""
    import xgboost as xgb

    return xgb.DMatrix(
        X,
        label=labels,
        feature_types=feature_types,
        enable_categorical=feature_types is not None,
        nthread=n_threads,
    )


# Past twice this many training rows, a model's histogram bins are the quantiles of a
# seeded sample of this many of them rather than of every row: XGBoost's quantile
# sketch of every row takes about half of a large fold's training time, and a sample's
# sketch with the binning of every row against it about half as long. Below that size the
# sample saves nothing.
SKETCH_ROWS = 20_000


def sketch_rows(
    X: np.ndarray, seed: int, max_bin: int, feature_types: list[str] | None = None
) -> np.ndarray | None:
    """The rows whose quantiles bin a model's training rows ``X``.

    A seeded sample of ``SKETCH_ROWS`` rows, topped up with a row for each value the
    sample misses in a column of which it holds at most ``max_bin`` values: XGBoost gives
    each value of a column of at most ``max_bin`` values a bin of its own, and a rare one
    (a flag set on a few rows) left out of the sample would share its neighbour's; with
    the top-up the sample's bins of such a column are every row's. Columns the sample
    shows with more values are binned by quantiles either way (the few rows topped up
    move a quantile by about their share of the sample, 0.1%, against a bin's 1.6%).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The training rows (NaN: missing).
    seed : int
    max_bin : int
        XGBoost's ``max_bin``.
    feature_types : list of str or None
        As :func:`matrix`.

    Returns
    -------
    ndarray of int or None
        Row positions, sorted, where ``n`` exceeds twice ``SKETCH_ROWS`` and no feature is
        categorical; ``None``: every row (XGBoost's own sketch). A categorical feature
        turns the sample off for the whole model: each of its categories needs a bin, and
        a category the sample missed would have none.
    """
    n_rows = len(X)
    if n_rows <= 2 * SKETCH_ROWS or (feature_types is not None and "c" in feature_types):
        return None
    rows = np.random.default_rng(seed).choice(n_rows, SKETCH_ROWS, replace=False)
    found = [rows]
    for column, sampled in zip(X.T, X[rows].T, strict=True):
        sampled = sampled[~np.isnan(sampled)]
        if np.unique(sampled[: max_bin + 1]).size > max_bin:
            continue  # more values than bins in the first few: no need to count them all
        values = np.unique(sampled)
        if values.size > max_bin:
            continue
        missed = ~np.isin(column, values) & ~np.isnan(column)
        if missed.any():
            _, first = np.unique(column[missed], return_index=True)
            found.append(np.flatnonzero(missed)[first])
    return np.unique(np.concatenate(found))


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
    # the matrices are built with the model's threads: left to XGBoost, they take every
    # core, and on a worker whose neighbours are busy the threads wait on one another
    n_threads = model_threads(params)
    if params.get("tree_method", "hist") == "hist":
        # the histogram index built straight from the array: the same model as from a
        # DMatrix (tested), without the DMatrix's copy of the rows
        max_bin = int(params.get("max_bin", 256))
        sample = sketch_rows(X, int(params.get("seed", 0)), max_bin, feature_types)
        dtrain = xgb.QuantileDMatrix(
            X,
            label=y,
            max_bin=max_bin,
            feature_types=feature_types,
            enable_categorical=feature_types is not None,
            nthread=n_threads,
            ref=None
            if sample is None
            else xgb.QuantileDMatrix(X[sample], max_bin=max_bin, nthread=n_threads),
        )
    else:
        dtrain = matrix(X, y, feature_types, n_threads)
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
        The model as XGBoost UBJSON (:func:`model_bytes`).
    """
    train = folds != fold if trainable is None else (folds != fold) & trainable
    y = np.asarray(labels, dtype=np.float32)[train]
    booster = _fit(X[train], y, params, n_rounds, feature_types)
    return model_bytes(booster)


def model_bytes(booster: xgb.Booster) -> bytes:
    """A fold model as it travels between tasks: XGBoost's binary UBJSON, which loads
    about ten times faster than its JSON (every task that scores a partition loads the
    fold models again). What a run keeps, and a saved model holds, is the JSON
    (:func:`json_model`)."""
    return bytes(booster.save_raw(raw_format="ubj"))


def json_model(model: bytes) -> bytes:
    """The XGBoost JSON of a fold model in either of XGBoost's formats (JSON, UBJSON)."""
    import xgboost as xgb

    return bytes(xgb.Booster(model_file=bytearray(model)).save_raw(raw_format="json"))


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
    # rows are taken fold by fold: from a frame's column-major values that gather strides
    # across every column, 3-4 times the cost of one row-major copy first
    X = np.ascontiguousarray(X)
    for fold, model in enumerate(models):
        held_out = np.flatnonzero(folds == fold)  # positions: twice as fast a copy as a mask
        if held_out.size:
            booster = xgb.Booster(model_file=bytearray(model))
            if n_threads is not None:
                booster.set_param({"nthread": int(n_threads)})
            # in place: no DMatrix, and the columns go by position (a model trained on
            # xgboost.dask carries names); the model holds the categorical columns' types
            proba[held_out] = booster.inplace_predict(X.take(held_out, axis=0))
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
    proba = fold_predictions(models, X, folds, model_threads(params))
    return proba, [json_model(m) for m in models]


def trained_gain(
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
