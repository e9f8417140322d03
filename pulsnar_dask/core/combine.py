"""A run's per-row outputs from its subproblems, one subproblem's rows at a time.

Each subproblem scores its own positives and every unlabeled row. The run reports, for
every row, the probability combined over the subproblems (``1 - prod_c (1 - p_c)``, the
paper's), its calibration (Algorithm 3) and the labels Algorithm 4 recovers.

The calibration's maps are fitted on counts (:class:`Calibration`): each subproblem's
unlabeled rows counted in Algorithm 3's equal bins (:func:`piece_flip_members`) give each
bin's chance that a row in it is flipped (:func:`~pulsnar_dask.core.calibration.flip_shares`),
and the rows' probabilities and those chances summed on the probability grid
(:func:`piece_calibration_sums`) are what the maps are fitted on; both add up over the
partitions where the rows are held. The rows' outputs then fold over the subproblems
(:class:`RowOutputs`), so that only one subproblem's rows need be here at a time, beside a
few numbers per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pulsnar_dask.core.calibration import CalibrationMap, cell_sums, flip_bins
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


def positions(row_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Where each of ``ids`` is in ``row_ids`` (every one of them is there; any order)."""
    sorter = np.argsort(row_ids, kind="stable")
    return sorter[np.searchsorted(row_ids, ids, sorter=sorter)]


class RowOutputs:
    """The combined probability, its calibration and the recovered labels of every row,
    folded over the subproblems (:meth:`add`).

    Recovered labels (Algorithm 4): each subproblem claims its ``round(alpha_c |U|)``
    most probable unlabeled rows, ranked on the probability grid
    (:mod:`pulsnar_dask.core.claims`: every row above the claim's boundary cell, and in
    that cell the rows a hash of their id and the seed picks, each with the claim's share
    as its chance); every row one of them claims becomes positive. With one subproblem
    (PULSCAR) these are the rows it ranks highest; with PULSNAR's clusters each cluster's
    own ranking picks its share, which recovers the hidden positives better than one
    ranking of the combined probabilities.

    Parameters
    ----------
    row_ids : ndarray of shape (n,)
        Every row the outputs are for, in the order wanted.
    labels : ndarray of shape (n,) or None
        Their 0/1 labels, where the labels are to be recovered.
    calibration : Calibration or None
        The run's maps, where the probabilities are to be calibrated.
    seed : int
        Seed of the claims' boundary rows.
    """

    def __init__(
        self,
        row_ids: np.ndarray,
        labels: np.ndarray | None,
        calibration: Calibration | None,
        seed: int,
    ):
        n = len(row_ids)
        self.row_ids = np.asarray(row_ids)
        self.labels = None if labels is None else np.asarray(labels).astype(np.int8)
        self.calibration, self.seed = calibration, seed
        self._complement = np.ones(n)
        self._seen = np.zeros(n, dtype=bool)
        self._per_subproblem = calibration is not None and calibration.per_subproblem is not None
        self._calibrated_complement = np.ones(n) if self._per_subproblem else None
        self._claimed = None if labels is None else np.zeros(n, dtype=bool)
        self._added = 0

    def add(
        self, ids: np.ndarray, labels: np.ndarray, probabilities: np.ndarray, claim: Claim | None
    ) -> None:
        """Fold in the next subproblem's rows.

        Parameters
        ----------
        ids, labels, probabilities : ndarray of shape (m,)
            Its rows (each one of ``row_ids``), their 0/1 labels and out-of-fold
            probabilities.
        claim : Claim or None
            The unlabeled rows it claims, where the labels are to be recovered.
        """
        at = positions(self.row_ids, ids)
        p, y = np.asarray(probabilities, dtype=float), np.asarray(labels)
        self._complement[at] *= 1.0 - p
        self._seen[at] = True
        if self._per_subproblem:
            self._calibrated_complement[at] *= 1.0 - self.calibration.per_subproblem[self._added](p)
        if self._claimed is not None:
            unlabeled = y == 0
            cells = cell_of(p[unlabeled])
            self._claimed[at[unlabeled]] |= claimed_flags(cells, claim, ids[unlabeled], self.seed)
        self._added += 1

    @property
    def probability(self) -> np.ndarray:
        """The combined probability of each row; NaN for rows in no subproblem."""
        return np.where(self._seen, 1.0 - self._complement, np.nan)

    def calibrated(self) -> np.ndarray:
        """Calibrated probabilities of every row (NaN for rows in no subproblem)."""
        if self._per_subproblem:
            return np.where(self._seen, 1.0 - self._calibrated_complement, np.nan)
        return np.where(self._seen, self.calibration.combined(1.0 - self._complement), np.nan)

    def recovered_labels(self) -> np.ndarray:
        """The labels with every claimed unlabeled row made positive (int8)."""
        if self._claimed is None:
            raise ValueError("the labels were not given, so none are recovered")
        return np.where(self._claimed, 1, self.labels).astype(np.int8)
