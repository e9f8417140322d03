"""What the kernel and tail readers need from a subproblem's probabilities, in two forms.

:class:`ScoreCounts` holds fixed-size statistics, each label apart: the weight of the
probabilities in each cell of a fine grid (:data:`~pulsnar_dask.core.grid.EDGES`: every
1/4096 of [0, 1], refined towards 0 and 1 to a logit step of 1/256, so that scores piled up
near 1 still spread over many cells), their linear-binning weights on the beta kernel's
nodes (:data:`~pulsnar_dask.core.grid.NODES`), the sums of ``p`` and ``p**2``, and
the smallest and largest ``p``. Statistics of disjoint rows add up (``a + b``), so the
partitions of a subproblem reduce to the subproblem's by summing, and a resample that
weighs each row (:func:`pulsnar_dask.core.bootstrap.poisson_weights`) is the same sums,
weighted. Their size does not grow with the rows.

:class:`ScoreVectors` reads the same quantities off the probabilities themselves: the
exact path, kept as the oracle the counts are tested against.

Both answer the same questions (:class:`Scores`); the readers of
:mod:`pulsnar_dask.core.alpha` ask them and do not know which form they hold. In both
forms a quantile is the lower edge of the grid cell it falls in, and the tail shares are
counted from that edge, so the tail reader's thresholds lie on the grid and its two forms
read the same rows: on a few hundred rows one row moves a tail ratio by more than the
counts' tolerance, and a threshold inside a cell would split that cell's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pulsnar_dask.core.binning import (
    bin_count,
    check_bin_rule,
    rounded_bin_count,
    rule_bin_count,
)
from pulsnar_dask.core.density import KernelSample, histogram_density
from pulsnar_dask.core.grid import EDGES, N_CELLS, N_NODES, cell_of, node_split, node_weights


class Scores(Protocol):
    """The questions the kernel and tail readers ask of a subproblem's probabilities;
    ``label`` is 1 (labeled positives), 0 (unlabeled) or None (both)."""

    def count(self, label: int | None) -> float:
        """Number (total weight) of the rows."""

    def kernel_sample(self, label: int | None) -> KernelSample:
        """The sample the beta kernel averages over."""

    def histogram(self, n_bins: int) -> np.ndarray:
        """Histogram density of all rows over ``n_bins`` equal bins of [0, 1], summing to 1."""

    def bin_count(self, method: str) -> int:
        """The density grid's size by a bin-count rule
        (:func:`~pulsnar_dask.core.binning.bin_count`)."""

    def quantiles(self, label: int | None, levels: np.ndarray) -> np.ndarray:
        """``inverted_cdf`` quantiles of the rows' probabilities, ascending levels, each
        the lower edge of the grid cell it falls in."""

    def share_at_least(self, label: int, thresholds: np.ndarray) -> np.ndarray:
        """Share of one label's rows with probability at or above each threshold (counts:
        from the cell the threshold falls in, exact at the cells' lower edges)."""

    def cell_weights(self, label: int) -> np.ndarray:
        """One label's weight in each grid cell, shape ``(N_CELLS,)``."""

    def __add__(self, other: Scores) -> Scores:
        """The rows of both (disjoint sets of rows) together."""


def _check_label(label: int | None) -> None:
    if label not in (0, 1, None):
        raise ValueError(f"label must be 0, 1 or None, got {label!r}")


@dataclass(frozen=True)
class ScoreVectors:
    """The probabilities themselves (the exact path).

    Attributes
    ----------
    probabilities : ndarray of shape (n,)
        Values in [0, 1].
    labels : ndarray of int8 of shape (n,)
        1 for labeled positives, 0 for unlabeled.
    keys : ndarray of shape (n,) or None
        The rows' ids, where the rows come in pieces: :meth:`in_key_order` puts them in
        one order whatever pieces they came in (the ``bbe`` reader draws a random split
        of the rows, which depends on their order).
    """

    probabilities: np.ndarray
    labels: np.ndarray
    keys: np.ndarray | None = None

    def _of(self, label: int | None) -> np.ndarray:
        _check_label(label)
        p = self.probabilities
        return p if label is None else p[self.labels == label]

    def count(self, label: int | None) -> float:
        return float(self._of(label).size)

    def kernel_sample(self, label: int | None) -> KernelSample:
        return KernelSample.from_probabilities(self._of(label), exact=True)

    def histogram(self, n_bins: int) -> np.ndarray:
        return histogram_density(self.probabilities, n_bins)

    def bin_count(self, method: str) -> int:
        return bin_count(self.probabilities, method)

    def quantiles(self, label: int | None, levels: np.ndarray) -> np.ndarray:
        return EDGES[cell_of(np.quantile(self._of(label), levels, method="inverted_cdf"))]

    def share_at_least(self, label: int, thresholds: np.ndarray) -> np.ndarray:
        # rows below each threshold counted without sorting them (there may be millions)
        values = self._of(label)
        order = np.argsort(thresholds, kind="stable")
        passed = np.searchsorted(np.asarray(thresholds)[order], values, side="right")
        below = np.cumsum(np.bincount(passed, minlength=order.size + 1))[:-1]
        shares = np.empty(order.size)
        shares[order] = 1.0 - below / values.size
        return shares

    def cell_weights(self, label: int) -> np.ndarray:
        return np.bincount(cell_of(self._of(label)), minlength=N_CELLS).astype(float)

    def __add__(self, other: ScoreVectors) -> ScoreVectors:
        """Both sets of rows, concatenated."""
        keys = None
        if self.keys is not None and other.keys is not None:
            keys = np.concatenate([self.keys, other.keys])
        return ScoreVectors(
            np.concatenate([self.probabilities, other.probabilities]),
            np.concatenate([self.labels, other.labels]),
            keys,
        )

    def in_key_order(self) -> ScoreVectors:
        """The rows by ascending key (a row counted several times stays together); the
        rows as they are where there are no keys."""
        if self.keys is None:
            return self
        order = np.argsort(self.keys, kind="stable")
        return ScoreVectors(self.probabilities[order], self.labels[order], self.keys[order])


@dataclass(frozen=True)
class ScoreCounts:
    """Fixed-size statistics of probabilities, each label apart (index 0: unlabeled,
    1: labeled positives).

    Attributes
    ----------
    cells : ndarray of shape (2, N_CELLS)
        Weight of the rows whose probability falls in each cell ``[EDGES[j], EDGES[j+1])``
        (1 falls in the last).
    nodes : ndarray of shape (2, N_NODES)
        The rows' linear-binning weights on the kernel's nodes
        (:func:`~pulsnar_dask.core.grid.node_weights`), what the beta kernel averages over.
    sums : ndarray of shape (2, 2)
        Sum of ``p`` and of ``p**2`` (weighted).
    low, high : float
        Smallest and largest probability with weight (``inf``, ``-inf`` where none has).
    """

    cells: np.ndarray
    nodes: np.ndarray
    sums: np.ndarray
    low: float
    high: float

    @classmethod
    def from_scores(
        cls,
        probabilities: np.ndarray,
        labels: np.ndarray,
        weights: np.ndarray | None = None,
        cells: np.ndarray | None = None,
    ) -> ScoreCounts:
        """Reduce probabilities to their statistics.

        Parameters
        ----------
        probabilities : ndarray of shape (n,)
            Values in [0, 1].
        labels : ndarray of shape (n,)
            1 for labeled positives, 0 for unlabeled.
        weights : ndarray of shape (n,) or None
            Non-negative weight of each row (a resample's); None: 1 each.
        cells : ndarray of shape (n,) or None
            The rows' :func:`~pulsnar_dask.core.grid.cell_of`, where the caller keeps them
            (a bootstrap counts the same rows once per resample); None: counted here.

        Returns
        -------
        ScoreCounts

        Raises
        ------
        ValueError
            For a probability outside [0, 1] (NaN included).
        """
        return RowsToCount(probabilities, labels, cells).counts(weights)

    def __add__(self, other: ScoreCounts) -> ScoreCounts:
        """The statistics of both sets of rows together."""
        return ScoreCounts(
            self.cells + other.cells,
            self.nodes + other.nodes,
            self.sums + other.sums,
            min(self.low, other.low),
            max(self.high, other.high),
        )

    def _rows(self, array: np.ndarray, label: int | None) -> np.ndarray:
        _check_label(label)
        return array.sum(axis=0) if label is None else array[label]

    def count(self, label: int | None) -> float:
        return float(self._rows(self.cells, label).sum())

    def cell_weights(self, label: int) -> np.ndarray:
        return self._rows(self.cells, label)

    def kernel_sample(self, label: int | None) -> KernelSample:
        return KernelSample.from_node_weights(self._rows(self.nodes, label))

    def histogram(self, n_bins: int) -> np.ndarray:
        # a cell counts in the bin of its lower edge: exact where n_bins divides 4096
        # (every power of two the rules but Sturges round to), as all bin edges are then
        # cell edges
        bins = np.minimum((EDGES[:-1] * n_bins).astype(np.int64), n_bins - 1)
        counts = np.bincount(bins, weights=self._rows(self.cells, None), minlength=n_bins)
        return counts / counts.sum()

    def bin_count(self, method: str) -> int:
        n = self.count(None)
        check_bin_rule(method, n)
        total, squares = self.sums.sum(axis=0)
        sd = float(np.sqrt(max(squares / n - (total / n) ** 2, 0.0)))
        q25, q75 = self.quantiles(None, np.array([0.25, 0.75]))
        raw = rule_bin_count(method, n, self.high - self.low, sd, float(q75 - q25))
        return rounded_bin_count(raw, method)

    def quantiles(self, label: int | None, levels: np.ndarray) -> np.ndarray:
        return _cell_quantiles(self._rows(self.cells, label), levels)

    def auc(self) -> float:
        """ROC AUC of the labeled positives against the unlabeled rows (Mann-Whitney),
        rows in one grid cell counted as tied.

        Returns
        -------
        float
            In [0, 1]; NaN where a label has no weight.
        """
        unlabeled, positive = self.cells
        n_u, n_p = unlabeled.sum(), positive.sum()
        if n_u <= 0 or n_p <= 0:
            return float("nan")
        below = np.cumsum(unlabeled) - unlabeled  # unlabeled weight in the cells below
        return float(positive @ (below + 0.5 * unlabeled) / (n_u * n_p))

    def share_at_least(self, label: int, thresholds: np.ndarray) -> np.ndarray:
        cells = self._rows(self.cells, label)
        above = np.r_[np.cumsum(cells[::-1])[::-1], 0.0]  # weight from each cell up
        # from the cell each threshold falls in: exact at a cell's lower edge, where the
        # quantiles lie
        first = np.searchsorted(EDGES, np.asarray(thresholds, dtype=float), side="right") - 1
        return above[np.clip(first, 0, N_CELLS - 1)] / cells.sum()


class RowsToCount:
    """A subproblem's rows made ready to be counted (:class:`ScoreCounts`) under many
    weightings, as a bootstrap weighs the same rows once per resample: each label's
    probabilities, grid cells and kernel nodes are found once.

    Parameters
    ----------
    probabilities : ndarray of shape (n,)
        Values in [0, 1].
    labels : ndarray of shape (n,)
        1 for labeled positives, 0 for unlabeled.
    cells : ndarray of shape (n,) or None
        The rows' :func:`~pulsnar_dask.core.grid.cell_of`, where the caller keeps them.

    Raises
    ------
    ValueError
        For a probability outside [0, 1] (NaN included).
    """

    def __init__(
        self, probabilities: np.ndarray, labels: np.ndarray, cells: np.ndarray | None = None
    ):
        p = np.asarray(probabilities, dtype=float)
        if not np.all((p >= 0.0) & (p <= 1.0)):
            raise ValueError("probabilities must lie in [0, 1]")
        y = np.asarray(labels)
        cell = cell_of(p) if cells is None else np.asarray(cells, dtype=np.int64)
        self._masks = [y == label for label in (0, 1)]
        self._rows = []
        for rows in self._masks:
            p_l, c_l = p[rows], cell[rows]
            self._rows.append((p_l, p_l * p_l, c_l, node_split(p_l, c_l)))

    def counts(self, weights: np.ndarray | None = None) -> ScoreCounts:
        """The rows' statistics, each row counted as often as its weight (None: once).

        Parameters
        ----------
        weights : ndarray of shape (n,) or None
            Non-negative weight of each row, in the rows' order.

        Returns
        -------
        ScoreCounts
        """
        if weights is None:
            return self.counts_by_label(None, None)
        w = np.asarray(weights, dtype=float)
        return self.counts_by_label(*(w[rows] for rows in self._masks))

    def counts_by_label(
        self, unlabeled: np.ndarray | None, positive: np.ndarray | None
    ) -> ScoreCounts:
        """:meth:`counts` with the weights given for each label apart: the unlabeled
        rows', then the labeled positives', each in the rows' order (None: 1 each)."""
        cells = np.zeros((2, N_CELLS))
        nodes = np.zeros((2, N_NODES))
        sums = np.zeros((2, 2))
        low, high = np.inf, -np.inf
        for label, (weights, (p_l, p2_l, c_l, split)) in enumerate(
            zip((unlabeled, positive), self._rows, strict=True)
        ):
            w = np.ones(p_l.size) if weights is None else np.asarray(weights, dtype=float)
            cells[label] = np.bincount(c_l, weights=w, minlength=N_CELLS)
            nodes[label] = node_weights(p_l, weights=w, split=split)
            sums[label] = (np.einsum("i,i", p_l, w), np.einsum("i,i", p2_l, w))
            held = p_l if weights is None else p_l[w > 0]
            if held.size:
                low, high = min(low, float(held.min())), max(high, float(held.max()))
        return ScoreCounts(cells, nodes, sums, low, high)


def _cell_quantiles(cells: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The lower edge of the cell each ``inverted_cdf`` quantile falls in."""
    cumulative = np.cumsum(cells)
    index = np.searchsorted(cumulative, np.asarray(levels) * cumulative[-1], side="left")
    return EDGES[np.minimum(index, N_CELLS - 1)]
