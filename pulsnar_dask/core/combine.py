"""A run's per-row outputs from its subproblems, computed where the rows are held.

Each subproblem scores its own positives and every unlabeled row. The run reports, for
every row, the probability combined over the subproblems (``1 - prod_c (1 - p_c)``, the
paper's), its calibration (Algorithm 3) and the unlabeled rows Algorithm 4 claims.

The calibration's maps are fitted on counts (:class:`Calibration`): each subproblem's
unlabeled rows counted in Algorithm 3's equal bins (:func:`piece_flip_members`) give each
bin's chance that a row in it is flipped (:func:`~pulsnar_dask.core.calibration.flip_shares`),
and the rows' probabilities and those chances summed on the probability grid
(:func:`piece_calibration_sums`) are what the maps are fitted on; both add up over the
partitions where the rows are held. Each partition's rows then give their own outputs
(:func:`piece_outputs`), every subproblem's probabilities of a row side by side in the
partition, so no row need come to the caller unless asked for.

Recovered labels (Algorithm 4): each subproblem claims its ``round(alpha_c |U|)`` most
probable unlabeled rows, ranked on the probability grid (:mod:`pulsnar_dask.core.claims`:
every row above the claim's boundary cell, and in that cell the rows a hash of their id
and the seed picks, each with the claim's share as its chance); every row one of them
claims becomes positive. With one subproblem (PULSCAR) these are the rows it ranks
highest; with PULSNAR's clusters each cluster's own ranking picks its share, which
recovers the hidden positives better than one ranking of the combined probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pulsnar_dask.core.calibration import CalibrationMap, cell_sums, flip_bins, reliability_sums
from pulsnar_dask.core.claims import Claim, claimed_flags
from pulsnar_dask.core.grid import cell_of
from pulsnar_dask.core.map_reduce import Piece, unlabeled_ids

FLIP_BINS = 100  # Algorithm 3's equal bins on [0, 1]


@dataclass(frozen=True)
class Calibration:
    """Algorithm 3's maps of a run, by ``config.calibration_data``.

    ``PU``: each subproblem flips its unlabeled rows with its alpha, and one map regresses
    the union of the new labels on the combined probability over all rows. ``U``: one map
    per subproblem, fitted on its unlabeled rows with its alpha, the calibrated
    probabilities combined as ``1 - prod_c (1 - p_c)`` (the paper). For a single
    subproblem the two coincide; for PULSNAR's clusters the per-cluster P+U fits rate
    labeled positives against their own cluster's small share of the rows, and the single
    fit halves the expected calibration error on the paper's SNAR data (docs/decisions/).

    The new labels are expected values: an unlabeled row in an equal bin counts as the
    share of that bin's rows Algorithm 3 flips, and a row several subproblems could flip
    as the chance that one of them does. The maps are those of the draws' average, not of
    one draw.

    Attributes
    ----------
    combined : CalibrationMap or None
        ``PU``: the map of the combined probability.
    per_subproblem : list of CalibrationMap or None
        ``U``: each subproblem's map of its own probability.
    """

    combined: CalibrationMap | None
    per_subproblem: list[CalibrationMap] | None

    def apply(
        self, probabilities: Sequence[np.ndarray], which: Sequence[int] | None = None
    ) -> np.ndarray:
        """Calibrated probabilities of rows from their probabilities in the subproblems
        ``which`` (None: every subproblem, in order), one array per subproblem: the
        ``PU`` map of their combination, or the combination of each ``U`` map's."""
        if self.per_subproblem is None:
            return self.combined(1.0 - _complement(probabilities))
        maps = self.per_subproblem if which is None else [self.per_subproblem[c] for c in which]
        return 1.0 - _complement([m(p) for m, p in zip(maps, probabilities, strict=True)])


def _complement(probabilities: list[np.ndarray]) -> np.ndarray:
    """``prod_c (1 - p_c)``, multiplied in the subproblems' order."""
    out = np.ones(len(probabilities[0]))
    for p in probabilities:
        out *= 1.0 - np.asarray(p, dtype=float)
    return out


def piece_flip_members(piece: Piece) -> list[np.ndarray]:
    """Each subproblem's unlabeled rows of one partition counted in Algorithm 3's equal
    bins (:data:`FLIP_BINS`)."""
    unlabeled_ids(piece)
    return [np.bincount(flip_bins(p[y == 0], FLIP_BINS), minlength=FLIP_BINS) for p, y, _ in piece]


def piece_calibration_sums(
    piece: Piece, shares: list[np.ndarray], per_subproblem: bool
) -> np.ndarray | list[np.ndarray]:
    """One partition's :func:`~pulsnar_dask.core.calibration.cell_sums` of the rows a
    :class:`Calibration` is fitted on, each unlabeled row's new label its chance of being
    flipped (``shares``: each subproblem's :func:`~pulsnar_dask.core.calibration.flip_shares`).

    Returns
    -------
    ndarray of shape (3, N_CELLS), or a list of them
        ``per_subproblem`` (``U``): each subproblem's unlabeled rows on its own
        probability. Otherwise (``PU``): every row on the combined probability, a labeled
        positive's new label 1 and an unlabeled row's the chance that a subproblem flips
        it.
    """
    unlabeled_ids(piece)
    kept = [
        (p[y == 0], share[flip_bins(p[y == 0], FLIP_BINS)])
        for (p, y, _), share in zip(piece, shares, strict=True)
    ]
    if per_subproblem:
        return [cell_sums(p, flipped) for p, flipped in kept]
    positives = [1.0 - _complement([p[y == 1]]) for p, y, _ in piece]
    combined = 1.0 - _complement([p for p, _ in kept])
    flipped = 1.0 - _complement([f for _, f in kept])
    n_positive = sum(len(p) for p in positives)
    return cell_sums(np.concatenate([combined, *positives]), np.r_[flipped, np.ones(n_positive)])


def piece_cell_sums(piece: Piece) -> np.ndarray:
    """One partition's :func:`~pulsnar_dask.core.calibration.cell_sums` of a scoring's
    rows on their own labels (the retrain's, on the labels it trained on)."""
    ((p, y, _),) = piece
    return cell_sums(p, y)


def positions(row_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Where each of ``ids`` is in ``row_ids`` (every one of them is there; any order)."""
    sorter = np.argsort(row_ids, kind="stable")
    return sorter[np.searchsorted(row_ids, ids, sorter=sorter)]


@dataclass(frozen=True)
class RowOutputs:
    """Rows' outputs: one partition's (:func:`piece_outputs`), several partitions' (their
    sum, ``+``), or every row's in a given order (:meth:`on`).

    Attributes
    ----------
    row_ids : ndarray
    probability : ndarray of float
        The combined out-of-fold probability (NaN: a row in no subproblem).
    calibrated : ndarray of float or None
        Calibrated (NaN likewise); None where not asked for.
    claimed : ndarray of bool or None
        Whether a subproblem claims the row (Algorithm 4); None where not asked for.
    """

    row_ids: np.ndarray
    probability: np.ndarray
    calibrated: np.ndarray | None
    claimed: np.ndarray | None

    def __add__(self, other: RowOutputs) -> RowOutputs:
        """Both pieces' rows together."""

        def joined(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.concatenate([a, b])

        return RowOutputs(
            *(joined(getattr(self, f), getattr(other, f)) for f in RowOutputs.__match_args__)
        )

    def on(self, row_ids: np.ndarray) -> RowOutputs:
        """The outputs of ``row_ids`` in their order; rows in none of these: NaN, not
        claimed."""
        n = len(row_ids)
        at = positions(row_ids, self.row_ids)

        def placed(values: np.ndarray | None, empty: float | bool) -> np.ndarray | None:
            if values is None:
                return None
            out = np.full(n, empty, dtype=values.dtype)
            out[at] = values
            return out

        return RowOutputs(
            np.asarray(row_ids),
            placed(self.probability, np.nan),
            placed(self.calibrated, np.nan),
            placed(self.claimed, False),
        )


def piece_reliability(piece: Sequence[Any], n_bins: int) -> np.ndarray:
    """One partition's :func:`~pulsnar_dask.core.calibration.reliability_sums` against
    true labels, of its uncalibrated and calibrated probabilities.

    Parameters
    ----------
    piece : (truth, outputs)
        The partition's (ids, labels, true labels), 0 negative and more a positive, and
        its :func:`piece_outputs` (calibrated).
    n_bins : int

    Returns
    -------
    ndarray of shape (2, 2, 3, n_bins)
        Rows (every row, the unlabeled ones) by probabilities (uncalibrated,
        calibrated); rows without a probability are left out.
    """
    (ids, labels, truth), outputs = piece
    held = outputs.on(ids)
    out = np.zeros((2, 2, 3, n_bins))
    for r, rows in enumerate((np.ones(len(ids), dtype=bool), np.asarray(labels) == 0)):
        for c, p in enumerate((held.probability, held.calibrated)):
            kept = rows & np.isfinite(p)
            out[r, c] = reliability_sums(np.asarray(truth)[kept] > 0, p[kept], n_bins)
    return out


def claimed_rows(piece: Sequence[RowOutputs]) -> RowOutputs:
    """The rows of one partition's :func:`piece_outputs` that a subproblem claims."""
    (out,) = piece
    keep = out.claimed
    return RowOutputs(
        out.row_ids[keep],
        out.probability[keep],
        None if out.calibrated is None else out.calibrated[keep],
        keep[keep],
    )


def piece_outputs(
    piece: Piece, calibration: Calibration | None, claims: Sequence[Claim] | None, seed: int
) -> RowOutputs:
    """One partition's outputs: its unlabeled rows, then each subproblem's positives.

    Parameters
    ----------
    piece : Piece
        Each subproblem's rows of the partition.
    calibration : Calibration or None
        The run's maps, where the probabilities are to be calibrated.
    claims : sequence of Claim or None
        Each subproblem's claim, where the claimed rows are wanted.
    seed : int
        Seed of the claims' boundary rows.
    """
    unlabeled = unlabeled_ids(piece)
    held = [p[y == 0] for p, y, _ in piece]
    positives = [(ids[y == 1], p[y == 1]) for p, y, ids in piece]
    row_ids = np.concatenate([unlabeled, *(ids for ids, _ in positives)])
    probability = np.concatenate(
        [1.0 - _complement(held), *(1.0 - _complement([p]) for _, p in positives)]
    )
    calibrated = claimed = None
    if calibration is not None:
        calibrated = np.concatenate(
            [
                calibration.apply(held),
                *(calibration.apply([p], [c]) for c, (_, p) in enumerate(positives)),
            ]
        )
    if claims is not None:
        claimed = np.zeros(row_ids.size, dtype=bool)
        for p, claim in zip(held, claims, strict=True):
            claimed[: unlabeled.size] |= claimed_flags(cell_of(p), claim, unlabeled, seed)
    return RowOutputs(row_ids, probability, calibrated, claimed)
