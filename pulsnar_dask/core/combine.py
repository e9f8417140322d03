"""A run's per-row outputs from its subproblems, one subproblem's rows at a time.

Each subproblem scores its own positives and every unlabeled row. The run reports, for
every row, the probability combined over the subproblems (``1 - prod_c (1 - p_c)``, the
paper's), its calibration (Algorithm 3) and the labels Algorithm 4 recovers. All three fold
over the subproblems (:class:`RowOutputs`), so that only one subproblem's rows need be here
at a time, beside a few numbers per row.
"""

from __future__ import annotations

import numpy as np

from pulsnar_dask.core.calibration import CalibrationMap, fit_calibration_map, relabeled
from pulsnar_dask.core.claims import cell_weights, claim_of, claimed_flags
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.grid import cell_of


def positions(row_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Where each of ``ids`` is in ``row_ids`` (every one of them is there; any order)."""
    sorter = np.argsort(row_ids, kind="stable")
    return sorter[np.searchsorted(row_ids, ids, sorter=sorter)]


class RowOutputs:
    """The combined probability, its calibration and the recovered labels of every row,
    folded over the subproblems (:meth:`add`).

    Calibration (Algorithm 3), by ``config.calibration_data``: ``U``, one map per
    subproblem, fitted on its unlabeled rows with its alpha, the calibrated probabilities
    combined as ``1 - prod_c (1 - p_c)`` (the paper); ``PU``, each subproblem flips its
    unlabeled rows with its alpha, and one map regresses the union of the new labels on the
    combined probability over all rows. For a single subproblem the two coincide; for
    PULSNAR's clusters the per-cluster P+U fits rate labeled positives against their own
    cluster's small share of the rows, and the single fit halves the expected calibration
    error on the paper's SNAR data (docs/decisions/).

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
    config : PUConfig
        ``calibration_data`` and ``calibration_method``.
    seed : int
        Seed of the flips and of the claims' boundary rows.
    """

    def __init__(self, row_ids: np.ndarray, labels: np.ndarray | None, config: PUConfig, seed: int):
        n = len(row_ids)
        self.row_ids = np.asarray(row_ids)
        self.labels = None if labels is None else np.asarray(labels).astype(np.int8)
        self.config, self.seed = config, seed
        self._complement = np.ones(n)
        self._seen = np.zeros(n, dtype=bool)
        self._per_subproblem = config.calibration_data == "U"
        self._calibrated_complement = np.ones(n) if self._per_subproblem else None
        self._union = None if self._per_subproblem else np.zeros(n, dtype=np.int8)
        self._claimed = None if labels is None else np.zeros(n, dtype=bool)
        self.maps: list[CalibrationMap] = []

    def add(
        self,
        ids: np.ndarray,
        labels: np.ndarray,
        probabilities: np.ndarray,
        alpha: float,
        claim_alpha: float | None = None,
    ) -> None:
        """Fold in one subproblem's rows.

        Parameters
        ----------
        ids, labels, probabilities : ndarray of shape (m,)
            Its rows (each one of ``row_ids``), their 0/1 labels and out-of-fold
            probabilities.
        alpha : float
            Its alpha, for the calibration.
        claim_alpha : float or None
            The alpha its claim takes (its alpha averaged over the iterations); None:
            ``alpha``.
        """
        at = positions(self.row_ids, ids)
        p, y = np.asarray(probabilities, dtype=float), np.asarray(labels)
        self._complement[at] *= 1.0 - p
        self._seen[at] = True
        flipped = relabeled(p, y, alpha, random_state=self.seed)
        if self._per_subproblem:
            fitted = fit_calibration_map(p, flipped, y == 0, self.config.calibration_method)
            self.maps.append(fitted)
            self._calibrated_complement[at] *= 1.0 - fitted(p)
        else:
            self._union[at] |= flipped.astype(np.int8)  # 1 - prod(1 - l) of 0/1 labels
        if self._claimed is not None:
            unlabeled = y == 0
            cells = cell_of(p[unlabeled])
            claim = claim_of(cell_weights(cells), alpha if claim_alpha is None else claim_alpha)
            self._claimed[at[unlabeled]] |= claimed_flags(cells, claim, ids[unlabeled], self.seed)

    @property
    def probability(self) -> np.ndarray:
        """The combined probability of each row; NaN for rows in no subproblem."""
        return np.where(self._seen, 1.0 - self._complement, np.nan)

    def calibration(self) -> tuple[CalibrationMap | None, list[CalibrationMap] | None]:
        """The calibration's maps.

        Returns
        -------
        (combined, per_subproblem)
            ``PU``: ``(map, None)``, the map applies to the combined probability; ``U``:
            ``(None, maps)``, one per subproblem, in the order added.
        """
        if self._per_subproblem:
            return None, list(self.maps)
        raw = 1.0 - self._complement[self._seen]
        fitted = fit_calibration_map(
            raw, self._union[self._seen], None, self.config.calibration_method
        )
        return fitted, None

    def calibrated(self, combined: CalibrationMap | None = None) -> np.ndarray:
        """Calibrated probabilities of every row (NaN for rows in no subproblem);
        ``combined``: the ``PU`` map, where :meth:`calibration` already fitted it."""
        if self._per_subproblem:
            return np.where(self._seen, 1.0 - self._calibrated_complement, np.nan)
        combined = combined or self.calibration()[0]
        return np.where(self._seen, combined(1.0 - self._complement), np.nan)

    def recovered_labels(self) -> np.ndarray:
        """The labels with every claimed unlabeled row made positive (int8)."""
        if self._claimed is None:
            raise ValueError("the labels were not given, so none are recovered")
        return np.where(self._claimed, 1, self.labels).astype(np.int8)
