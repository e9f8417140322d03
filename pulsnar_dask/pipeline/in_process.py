"""The in-process executor: the pipeline's heavy steps on arrays in this process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.folds import CopyGroups, content_hashes
from pulsnar_dask.core.map_reduce import each_piece, in_memory, tally_of
from pulsnar_dask.core.schema import FeatureSchema, frame_schema
from pulsnar_dask.core.subproblem import cross_validated_scores
from pulsnar_dask.core.subtypes import importance_model_gain
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.checks import check_labels, check_representable
from pulsnar_dask.pipeline.executor import Scored, ScoreRequest, TableRows


def feature_names(X: Any) -> list[str]:
    """Column names of a frame, or ``x0, x1, ...`` for an array."""
    if hasattr(X, "columns"):
        return [str(c) for c in X.columns]
    return [f"x{i}" for i in range(np.shape(X)[1])]


def check_2d(X: Any) -> None:
    """Refuse features that are not a table of rows and columns.

    Raises
    ------
    PUError
    """
    if np.ndim(X) != 2:
        raise PUError(
            f"X must be 2-dimensional, got shape {np.shape(X)}. Reshape your data: "
            "X.reshape(-1, 1) for one feature, X.reshape(1, -1) for one row"
        )


class InProcessExecutor:
    """Features and PU labels in memory; rows are identified by their position.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Features: a numeric array, or a pandas frame whose string and ``category``
        columns are categorical features; held as float32 (categories as codes).
    y : array-like of shape (n,)
        1 labeled positive, 0 unlabeled.
    categorical : sequence of str
        Numeric columns to take as categorical (names; ``x0, x1, ...`` for an array).

    Raises
    ------
    PUError
        For ``X`` sparse, complex, not 2-dimensional or without columns, columns no
        model can use, values float32 cannot hold (infinite or beyond its range), or
        ``y`` of another length.
    """

    engine = "in-process"
    threads = None  # XGBoost's own default: the models run one after another

    def __init__(self, X: Any, y: Any, categorical: Sequence[str] = ()):
        if sparse.issparse(X):
            raise PUError("sparse input is not supported: pass a dense array (X.toarray())")
        if not hasattr(X, "columns"):
            X = np.asarray(X)  # lists, and objects that convert to arrays
        check_2d(X)
        if np.shape(X)[1] == 0:
            raise PUError(
                f"X has 0 feature(s) (shape={np.shape(X)}) while a minimum of 1 is required."
            )
        if not isinstance(X, pd.DataFrame) and np.iscomplexobj(X):
            raise PUError("Complex data not supported: X holds complex numbers")
        frame = X if isinstance(X, pd.DataFrame) else None
        if frame is None and categorical:
            frame = pd.DataFrame(np.asarray(X), columns=feature_names(X))
        if frame is not None:
            try:  # every column of X is a feature the caller chose
                self.schema, _ = frame_schema(frame, categorical, explicit=feature_names(X))
            except ValueError as exc:
                raise PUError(str(exc)) from None
            X = self.schema.encode(frame.set_axis(self.schema.names, axis=1))
        else:
            self.schema = FeatureSchema(feature_names(X))
        with np.errstate(over="ignore"):  # values beyond float32's range become inf
            self.X = np.asarray(X, dtype=np.float32)
        self.features = self.schema.names
        check_representable(pd.Series(np.isinf(self.X).sum(axis=0), index=self.features))
        self.y = np.asarray(y).ravel()
        if self.y.shape[0] != self.X.shape[0]:
            raise PUError(f"X has {self.X.shape[0]} rows but y has {self.y.shape[0]}")
        self.row_ids = np.arange(self.y.size)

    def read(self) -> tuple[TableRows, None]:
        check_labels(self.row_ids, self.y, "the row index", "y")
        self.y = self.y.astype(np.int8)
        self.copies = CopyGroups.of_rows(
            self.row_ids,
            content_hashes(self.X),
            lambda: pd.DataFrame(self.X).nunique(dropna=False).to_numpy(),
        )
        return TableRows.of(self.row_ids, self.y), None

    def importance(self, config: PUConfig, seed: int) -> np.ndarray:
        types = self.schema.feature_types()
        return importance_model_gain(self.X, self.y, self.row_ids, config, seed, types)

    def _columns(self, columns: Sequence[str]) -> np.ndarray:
        """The features ``columns`` (the array itself when they are all, in order)."""
        if list(columns) == self.features:
            return self.X
        return self.X[:, self.schema.positions(columns)]

    def positive_pieces(self, columns: Sequence[str]) -> list[Any]:
        positive = self.y == 1
        return [(self.row_ids[positive], self._columns(columns)[positive])]

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        return [fn(*args) for args in calls]

    @staticmethod
    def on_every_worker(fn: Callable[[], Any]) -> dict[str, Any]:
        return {"this machine": fn()}

    map_reduce = staticmethod(in_memory)  # a scoring's rows are its one piece
    map_pieces = staticmethod(each_piece)
    gather = staticmethod(list)

    @staticmethod
    def release(pieces: Sequence[Any]) -> None:
        pass  # the arrays go with the last reference to them

    @staticmethod
    def collect(pieces: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ((proba, labels, ids),) = pieces
        return ids, labels, proba

    def score(self, requests: Sequence[ScoreRequest]) -> list[Scored]:
        out = []
        for r in requests:
            keep, labels = r.rows(self.row_ids, self.y)
            X, ids = self._columns(r.features)[keep], self.row_ids[keep]
            ids, labels, proba, models = cross_validated_scores(
                X, labels, ids, r.config, r.seed, r.feature_types, self.copies
            )
            tally = tally_of(proba, labels, ids)
            out.append(Scored(tally, models, ((proba, labels, ids),), (ids, labels, proba)))
        return out
