"""Each subproblem's claim on the unlabeled rows, read on the probability grid.

A subproblem with alpha ``alpha_c`` claims its most probable unlabeled rows, ``round(alpha_c
W)`` of their total weight ``W`` (PULSNAR's Algorithm 4, and the union of the claims of
clusters cut from one subtype). Ranked on the grid of :mod:`pulsnar_dask.core.grid`, a claim
is a :class:`Claim`: every row in a cell above one boundary cell, and a share of the weight
in that cell. A claim is found from the unlabeled rows' weight per cell, so the rows'
partitions each count theirs and the sums settle it; what the claims share is then a sum
over rows too (:func:`overlap_weights`, :func:`union_weight`), which the partitions add up.
Where every row has a cell of its own the claim is exactly the top-ranked rows.

Claims that end in the same cell take the same rows of it, as far as their shares allow:
relabeling takes a row of a boundary cell where a hash of its id falls below the claim's
share (:func:`claimed_flags`), one hash for every claim, so the rows two claims take there
are nested. Two claims share ``min(q_c, q_d)`` of a row and any of several takes
``max_c q_c`` of it, with ``q_c`` its claimed share (1, the boundary share, or 0): two
clusters cut from one subtype, whose scores tie, claim the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pulsnar_dask.core.folds import row_uniform
from pulsnar_dask.core.grid import N_CELLS

# keeps the relabeling's hash apart from the folds' and the bootstrap's of the same id
_SALT = 0x5DEECE66D


@dataclass(frozen=True)
class Claim:
    """The unlabeled rows one subproblem claims: every row whose grid cell is above
    ``cell``, and ``share`` of the weight in ``cell`` itself.

    Attributes
    ----------
    cell : int
        The boundary cell (-1: every row is claimed; ``N_CELLS``: none).
    share : float
        In [0, 1].
    """

    cell: int
    share: float

    def of_rows(self, cells: np.ndarray) -> np.ndarray:
        """Each row's claimed share (1, ``share`` or 0) from its grid cell.

        Returns
        -------
        ndarray of float64
        """
        return np.where(cells > self.cell, 1.0, np.where(cells == self.cell, self.share, 0.0))


def claim_of(cell_weights: np.ndarray, alpha: float) -> Claim:
    """The claim of ``round(alpha W)`` of the unlabeled rows' total weight ``W``, taken
    from the highest cells down.

    Parameters
    ----------
    cell_weights : ndarray of shape (N_CELLS,)
        The unlabeled rows' weight in each grid cell.
    alpha : float
        The subproblem's alpha, a fraction of the unlabeled rows.

    Returns
    -------
    Claim
    """
    w = np.asarray(cell_weights, dtype=float)
    total = float(w.sum())
    target = float(np.round(alpha * total)) if np.isfinite(alpha) else 0.0  # NaN: none
    target = min(max(target, 0.0), total)
    if target >= total:
        return Claim(-1, 1.0)
    at_or_above = np.cumsum(w[::-1])[::-1]  # weight in each cell and the cells above it
    cell = int(np.count_nonzero(at_or_above > target)) - 1  # where the target is crossed
    above = float(at_or_above[cell + 1]) if cell + 1 < N_CELLS else 0.0
    return Claim(cell, (target - above) / float(w[cell]))


def cell_weights(cells: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The rows' weight (1 each where ``weights`` is None) in each grid cell.

    Returns
    -------
    ndarray of shape (N_CELLS,)
    """
    return np.bincount(cells, weights=weights, minlength=N_CELLS).astype(float)


def claims_of(
    cells: Sequence[np.ndarray], alphas: Sequence[float], weights: np.ndarray | None = None
) -> list[Claim]:
    """Each subproblem's :func:`claim_of` from its unlabeled rows' grid cells.

    Parameters
    ----------
    cells : sequence of ndarray of shape (n_u,)
        Each subproblem's grid cells of the same unlabeled rows, in the same order.
    alphas : sequence of float
    weights : ndarray of shape (n_u,) or None
        Each row's weight (a bootstrap resample's); None: 1 each.
    """
    return [claim_of(cell_weights(c, weights), a) for c, a in zip(cells, alphas, strict=True)]


def overlap_weights(
    cells: Sequence[np.ndarray], claims: Sequence[Claim], weights: np.ndarray | None = None
) -> np.ndarray:
    """The weight each pair of subproblems claims together: ``sum_rows w min(q_c, q_d)``,
    with ``q_c`` a row's claimed share (:meth:`Claim.of_rows`); on the diagonal, the
    weight each claims (``sum_rows w q_c``). Rows' partitions add up.

    Returns
    -------
    ndarray of shape (n_subproblems, n_subproblems)
    """
    shares = [c.of_rows(k) for k, c in zip(cells, claims, strict=True)]
    n = len(shares)
    rows = np.asarray(cells[0]).size
    w = np.ones(rows) if weights is None else np.asarray(weights, dtype=float)
    shared = np.zeros((n, n))
    for c in range(n):
        shared[c, c] = np.einsum("i,i", w, shares[c])
        for d in range(c + 1, n):
            shared[c, d] = shared[d, c] = np.einsum("i,i", w, np.minimum(shares[c], shares[d]))
    return shared


def claim_overlaps(shared: np.ndarray) -> np.ndarray:
    """Pairwise overlap of claims from their :func:`overlap_weights`: the weight two
    claim together over the smaller claim's.

    Returns
    -------
    ndarray of shape (n_subproblems, n_subproblems)
        In [0, 1]; 0 where either claim is empty, 1 on the diagonal of non-empty claims.
    """
    sizes = np.diag(shared)
    smaller = np.minimum.outer(sizes, sizes)
    overlaps = np.divide(shared, smaller, out=np.zeros_like(shared), where=smaller > 0)
    return np.minimum(overlaps, 1.0)


def subtype_groups(overlaps: np.ndarray, threshold: float) -> np.ndarray:
    """Clusters that count as one subtype: linked where their claims overlap by more than
    ``threshold`` (connected components of that graph).

    Two clusters cut from one subtype both claim its hidden positives; two subtypes share
    only the rows their classifiers misrank.

    Returns
    -------
    ndarray of int of shape (n_subproblems,)
        Group of each subproblem, numbered in order of first appearance.
    """
    n = overlaps.shape[0]
    group = np.arange(n)
    linked = overlaps > threshold
    for c in range(n):  # label propagation: few clusters, so a plain loop
        for d in np.flatnonzero(linked[c]):
            low, high = sorted((group[c], group[d]))
            group[group == high] = low
    return np.unique(group, return_inverse=True)[1]


def union_weight(
    cells: Sequence[np.ndarray], claims: Sequence[Claim], weights: np.ndarray | None = None
) -> float:
    """The weight of the unlabeled rows any of the claims takes: ``sum_rows w max_c q_c``
    (claims ending in one cell take nested rows of it). Rows' partitions add up."""
    claimed = np.zeros(np.asarray(cells[0]).size)
    for k, claim in zip(cells, claims, strict=True):
        np.maximum(claimed, claim.of_rows(k), out=claimed)
    return float(
        claimed.sum() if weights is None else np.einsum("i,i", claimed, np.asarray(weights, float))
    )


def group_sum(
    alphas: Sequence[float], groups: np.ndarray, united: Callable[[list[int]], float]
) -> float:
    """One alpha from the subproblems': a group of one adds its alpha (the paper's
    PULSNAR sum), a group of several ``united(members)``, the share of the unlabeled rows
    that any of its members claims."""
    total = 0.0
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g).tolist()
        total += float(alphas[members[0]]) if len(members) == 1 else united(members)
    return total


def combined_alpha(
    cells: Sequence[np.ndarray],
    alphas: Sequence[float],
    groups: np.ndarray,
    weights: np.ndarray | None = None,
) -> float:
    """One alpha from the subproblems': summed over groups, united within a group
    (:func:`group_sum`), a group's union the share of the unlabeled rows' weight that any
    of its members claims (:func:`union_weight`), so the hidden positives of a subtype
    cut into several clusters count once.

    Parameters
    ----------
    cells : sequence of ndarray of shape (n_u,)
        Each subproblem's grid cells of the same unlabeled rows, in the same order.
    alphas : sequence of float
    groups : ndarray of int of shape (n_subproblems,)
        From :func:`subtype_groups`.
    weights : ndarray of shape (n_u,) or None
        Each unlabeled row's weight (a bootstrap resample's); None: 1 each.

    Returns
    -------
    float
        Fraction of the unlabeled rows (of their weight).
    """
    total_weight = float(np.asarray(cells[0]).size if weights is None else np.sum(weights))

    def united(members: list[int]) -> float:
        member_cells = [cells[c] for c in members]
        claims = claims_of(member_cells, [alphas[c] for c in members], weights)
        return union_weight(member_cells, claims, weights) / total_weight

    return group_sum(alphas, groups, united)


def claimed_flags(cells: np.ndarray, claim: Claim, row_ids: np.ndarray, seed: int) -> np.ndarray:
    """Which rows a claim takes whole, for relabeling: every row above the boundary cell,
    and in it each row whose hash of (id, seed) falls below the claim's share, so that the
    rows taken there are the same on any partitioning.

    Returns
    -------
    ndarray of bool
    """
    taken = cells > claim.cell
    boundary = cells == claim.cell
    if claim.share > 0 and boundary.any():
        taken[boundary] = row_uniform(np.asarray(row_ids)[boundary], seed ^ _SALT) < claim.share
    return taken
