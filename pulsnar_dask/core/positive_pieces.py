"""PULSNAR's clustering of the labeled positives, reduced where their rows are held.

A piece is one partition's labeled positives, ``(ids, X)``: their row ids and their
float32 values of the clustering columns. The functions named ``piece_*`` take an
executor's pieces of one partition (a sequence holding that one piece, as
:data:`~pulsnar_dask.core.map_reduce.MapReduce` hands them) and return what adds up over
the partitions, so that the client needs none of the positives' features: each column's
range, missing values and category counts (:class:`ColumnSums`), the medians of the
columns with missing values, the few rows the mixtures are fitted on, each positive's
component (one small integer a positive) and each component's sums for its profile
(:class:`~pulsnar_dask.core.subtypes.ProfileSums`). However the positives are
partitioned, they give the same clusters; the profiles' sums of numeric columns may
differ in their last bits, below the 0.01 the profiles are rounded to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pulsnar_dask.core.mixture import MixtureFit, Scaling, assigned_components, column_range
from pulsnar_dask.core.schema import FeatureSchema
from pulsnar_dask.core.subtypes import ProfileSums, profile_sums

# one partition's labeled positives: (row ids, float32 values of the clustering columns)
PositivePiece = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Stacked:
    """Arrays that add up by concatenation (rows of several partitions, in no order)."""

    arrays: tuple[np.ndarray, ...]

    def __add__(self, other: Stacked) -> Stacked:
        return Stacked(
            tuple(np.concatenate([a, b]) for a, b in zip(self.arrays, other.arrays, strict=True))
        )


@dataclass(frozen=True)
class ColumnSums:
    """What the scaling of the clustering columns needs of every positive.

    Attributes
    ----------
    low, high : ndarray
        Each scaled column's lowest and highest value, missing values left out
        (:func:`~pulsnar_dask.core.mixture.column_range`).
    missing : ndarray of int
        Missing values per column.
    codes : dict
        Categorical column -> positives per category
        (:meth:`~pulsnar_dask.core.schema.FeatureSchema.code_counts`).
    """

    low: np.ndarray
    high: np.ndarray
    missing: np.ndarray
    codes: dict[str, np.ndarray]

    def __add__(self, other: ColumnSums) -> ColumnSums:
        return ColumnSums(
            np.fmin(self.low, other.low),
            np.fmax(self.high, other.high),
            self.missing + other.missing,
            {name: c + other.codes[name] for name, c in self.codes.items()},
        )


def piece_columns(
    pieces: Sequence[PositivePiece], gain: np.ndarray, schema: FeatureSchema, columns: list[str]
) -> ColumnSums:
    """A partition's :class:`ColumnSums`."""
    ((_, X),) = pieces
    low, high = column_range(X, gain)
    return ColumnSums(low, high, np.isnan(X).sum(axis=0), schema.code_counts(X, columns))


def piece_present(
    pieces: Sequence[PositivePiece], gain: np.ndarray, columns: np.ndarray
) -> Stacked:
    """A partition's scaled values present (not missing) in each of ``columns`` (their
    positions among the clustering columns), one array a column."""
    ((_, X),) = pieces
    scaled = (np.asarray(X[:, c], dtype=float) * float(gain[c]) for c in columns)
    return Stacked(tuple(z[~np.isnan(z)] for z in scaled))


def column_medians(present: Stacked) -> np.ndarray:
    """Each column's median of its values present (:func:`piece_present`; NaN where
    none is)."""
    return np.array([np.median(v) if v.size else np.nan for v in present.arrays])


def piece_rows(pieces: Sequence[PositivePiece], wanted: np.ndarray) -> Stacked:
    """A partition's positives among the ``wanted`` ids (ascending): (ids, values)."""
    ((ids, X),) = pieces
    keep = np.isin(ids, wanted, assume_unique=True)
    return Stacked((ids[keep], X[keep]))


def piece_components(
    pieces: Sequence[PositivePiece], scaling: Scaling, fit: MixtureFit
) -> np.ndarray:
    """A partition's positives per component of ``fit`` (each positive's most probable)."""
    ((_, X),) = pieces
    return np.bincount(assigned_components(fit, scaling.apply(X)), minlength=fit.n_components)


def piece_clusters(
    pieces: Sequence[PositivePiece],
    scaling: Scaling,
    fit: MixtureFit,
    kept: np.ndarray,
    schema: FeatureSchema,
    columns: list[str],
    tops: dict[str, np.ndarray],
    shift: np.ndarray,
) -> tuple[Stacked, ProfileSums]:
    """A partition's positives' components among the ``kept`` ones, as (ids, component
    int16), and each component's :class:`~pulsnar_dask.core.subtypes.ProfileSums` on the
    columns that describe the subtypes
    (:meth:`~pulsnar_dask.core.schema.FeatureSchema.indicators` of ``tops``), shifted by
    ``shift``."""
    ((ids, X),) = pieces
    raw = assigned_components(fit, scaling.apply(X), kept)
    described, _ = schema.indicators(X, columns, tops)
    sums = profile_sums(described, raw, fit.n_components, shift)
    return Stacked((ids, raw.astype(np.int16))), sums
