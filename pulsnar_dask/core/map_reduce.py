"""Sums over a subproblem's rows, wherever its rows are held.

An executor holds each scoring's rows as pieces, one per partition of the table: each
piece is the partition's (probabilities, labels, ids) of the scoring's rows, in process as
arrays (one piece holding every row), on a cluster as the futures of the workers that hold
them. What a step needs of the rows is written as a function of one piece whose results
add up (:func:`summed`), so that an executor's ``map_reduce`` reduces the pieces where
they are and only the sum reaches the caller (:data:`MapReduce`); :func:`in_memory` is the
same on pieces held here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pulsnar_dask.core.folds import id_checksum
from pulsnar_dask.core.grid import cell_of
from pulsnar_dask.core.score_counts import RowsToCount, ScoreCounts

# one partition's rows of each subproblem: (probabilities, labels, row ids)
Piece = Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]
# map_reduce(per_piece, finish, pieces, calls) -> [finish(sum over the partitions of
# per_piece(piece, *args)) for args in calls], ``pieces`` holding each subproblem's pieces
# (partition by partition, every subproblem's in the same partitions): an executor's, or
# in_memory's
MapReduce = Callable[
    [Callable[..., Any], Callable[[Any], Any], Sequence[Sequence[Any]], Sequence[tuple]],
    list[Any],
]


def in_memory(
    per_piece: Callable[..., Any],
    finish: Callable[[Any], Any],
    pieces: Sequence[Sequence[Any]],
    calls: Sequence[tuple],
) -> list[Any]:
    """:data:`MapReduce` on pieces held in this process."""
    by_partition = [list(piece) for piece in zip(*pieces, strict=True)]
    return [finish(summed_over(per_piece, by_partition, *args)) for args in calls]


def each_piece(
    per_piece: Callable[..., Any], pieces: Sequence[Sequence[Any]], args: tuple
) -> list[Any]:
    """``per_piece(piece, *args)`` on each partition's rows of the scorings whose
    ``pieces`` are held in this process, one result per partition."""
    return [per_piece(list(piece), *args) for piece in zip(*pieces, strict=True)]


def summed_over(per_piece: Callable[..., Any], pieces: Sequence[Any], *args: Any) -> Any:
    """``per_piece(piece, *args)`` on each piece in turn, summed as they come
    (:func:`summed`): one piece's result held at a time."""
    total = None
    for piece in pieces:
        value = per_piece(piece, *args)
        total = value if total is None else summed(total, value)
    return total


def summed(a: Any, b: Any) -> Any:
    """The sum of two per-piece results: lists and tuples element by element, dicts key by
    key, anything else (arrays, numbers, :class:`~pulsnar_dask.core.score_counts.Scores`,
    :class:`Tally`) by ``+``."""
    if isinstance(a, list | tuple):
        return type(a)(summed(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return {k: summed(a[k], b[k]) for k in a}
    return a + b


@dataclass(frozen=True)
class Tally:
    """What the pipeline keeps of a scoring: its rows' statistics, and its labeled
    positives' probabilities by id (the positives are few: their ids check which were
    scored, and calibration shares its flips out by their probabilities).

    Attributes
    ----------
    counts : ScoreCounts
    positive_ids, positive_probabilities : ndarray
        Ascending by id once :meth:`in_id_order`.
    unlabeled_checksum : int
        :func:`id_checksum` of the unlabeled rows' ids: which rows were counted, in any
        order.
    """

    counts: ScoreCounts
    positive_ids: np.ndarray
    positive_probabilities: np.ndarray
    unlabeled_checksum: int

    def __add__(self, other: Tally) -> Tally:
        """Both pieces' rows together."""
        return Tally(
            self.counts + other.counts,
            np.concatenate([self.positive_ids, other.positive_ids]),
            np.concatenate([self.positive_probabilities, other.positive_probabilities]),
            (self.unlabeled_checksum + other.unlabeled_checksum) % 2**64,
        )

    def in_id_order(self) -> Tally:
        order = np.argsort(self.positive_ids, kind="stable")
        return replace(
            self,
            positive_ids=self.positive_ids[order],
            positive_probabilities=self.positive_probabilities[order],
        )


def piece_tally(piece: Piece) -> Tally:
    """One partition's :class:`Tally` of a scoring (the piece's one subproblem).

    Raises
    ------
    ValueError
        For a probability outside [0, 1] (NaN included).
    """
    (p, y, ids), = piece  # fmt: skip
    positive = np.asarray(y) == 1
    ids = np.asarray(ids)
    return Tally(
        RowsToCount(p, y).counts(),
        ids[positive],
        np.asarray(p)[positive],
        id_checksum(ids[~positive]),
    )


def tally_of(probabilities: np.ndarray, labels: np.ndarray, row_ids: np.ndarray) -> Tally:
    """:func:`piece_tally` of rows held here, in id order."""
    return piece_tally([(probabilities, labels, row_ids)]).in_id_order()


def unlabeled_ids(piece: Piece) -> np.ndarray:
    """The unlabeled rows' ids of a piece, which every scoring of it holds in the same
    order.

    Raises
    ------
    ValueError
        Where the scorings' unlabeled rows differ.
    """
    first = piece[0][2][piece[0][1] == 0]
    if not all(np.array_equal(ids[y == 0], first) for _, y, ids in piece[1:]):
        raise ValueError("every subproblem must hold the same unlabeled rows")
    return first


def unlabeled_cells(piece: Piece) -> list[np.ndarray]:
    """Each scoring's grid cells of the piece's unlabeled rows (:func:`unlabeled_ids`
    checked)."""
    unlabeled_ids(piece)
    return [cell_of(p[y == 0]) for p, y, _ in piece]


def identity(value: Any) -> Any:
    """A ``finish`` that keeps the sum as it is."""
    return value
