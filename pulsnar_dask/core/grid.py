"""The fixed grid on [0, 1] that probabilities are counted on, and the beta kernel's nodes.

:data:`EDGES` cuts [0, 1] every 1/4096 and, towards 0 and 1, at every 1/256 of logit
(within ``logit(1 - 1e-7)``), so that scores piled up near 0 or 1 still spread over many
cells: 12,349 cells. :data:`NODES`, where the kernel readers' linear binning puts the
probabilities' weight, are edges of it: every fourth linear edge (1/1024 apart) and, below
1/1024 and above 1 - 1/1024, every 128th logit edge (half a logit apart), where the beta
kernel changes faster than 1/1024 can follow (scores of 0.9991 read 0.008 off the exact
kernel on 1024 equally spaced nodes). A row's cell is counted arithmetically
(:func:`cell_of`), and its node is looked up from its cell.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

LINEAR_CELLS = 4096
LOGIT_STEP = 1 / 256
LOGIT_REACH = 16.118095650958317  # logit(1 - 1e-7): the valley reader's clip
# the refinement's edges: expit(-LOGIT_REACH + i LOGIT_STEP), none of them a linear edge
_LOGIT_EDGES = expit(np.arange(-LOGIT_REACH, LOGIT_REACH + LOGIT_STEP / 2, LOGIT_STEP))
EDGES = np.sort(np.r_[np.linspace(0.0, 1.0, LINEAR_CELLS + 1), _LOGIT_EDGES])
N_CELLS = EDGES.size - 1

_LINEAR_NODE_STEP = 4  # cells: nodes 1/1024 apart
_LOGIT_NODE_STEP = 128  # logit edges: nodes half a logit apart near 0 and 1


def _node_edges() -> np.ndarray:
    linear = np.linspace(0.0, 1.0, LINEAR_CELLS + 1)[::_LINEAR_NODE_STEP]
    ends = _LOGIT_EDGES[::_LOGIT_NODE_STEP]
    ends = ends[(ends < linear[1]) | (ends > linear[-2])]
    return np.searchsorted(EDGES, np.r_[linear, ends])


_NODE_EDGES = np.sort(_node_edges())
NODES = EDGES[_NODE_EDGES]
N_NODES = NODES.size
# the node at or below each cell's lower edge, never the last node
_NODE_OF_CELL = np.minimum(
    np.searchsorted(_NODE_EDGES, np.arange(N_CELLS), side="right") - 1, N_NODES - 2
)


def cell_of(probabilities: np.ndarray) -> np.ndarray:
    """Return the cell of :data:`EDGES` each probability in [0, 1] falls in (1 in the last).

    Counted, not searched: the linear edges at or below ``p`` are ``floor(4096 p) + 1``
    and the refinement's ``floor((logit(p) + LOGIT_REACH) / LOGIT_STEP) + 1``, which
    costs a few arithmetic passes where a search of 12,000 edges costs a cache miss a row.
    The logit's rounding can miss by one cell within an ulp of a logit edge; a comparison
    with the cell's two edges puts those values right.

    Returns
    -------
    ndarray of int64
    """
    p = np.asarray(probabilities, dtype=float)
    linear = np.minimum((p * LINEAR_CELLS).astype(np.int64), LINEAR_CELLS - 1)
    with np.errstate(divide="ignore"):
        logit = np.log(p) - np.log1p(-p)
    refined = np.floor((logit + LOGIT_REACH) / LOGIT_STEP) + 1
    cell = linear + np.clip(refined, 0, _LOGIT_EDGES.size).astype(np.int64)
    cell -= p < EDGES[cell]
    cell += (p >= EDGES[cell + 1]) & (cell < N_CELLS - 1)
    return cell


def node_split(
    probabilities: np.ndarray, cells: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each probability's lower node of :data:`NODES` and the share of its weight the
    node above takes (linear binning, :func:`node_weights`).

    Parameters
    ----------
    probabilities : ndarray of shape (n,)
        Values in [0, 1].
    cells : ndarray of shape (n,) or None
        The rows' :func:`cell_of`, where the caller has it.

    Returns
    -------
    (lower, upper_share)
        ndarray of int64 (node index, never the last node) and of float64 in [0, 1].
    """
    p = np.asarray(probabilities, dtype=float)
    lower = _NODE_OF_CELL[cell_of(p) if cells is None else cells]
    upper_share = np.clip((p - NODES[lower]) / (NODES[lower + 1] - NODES[lower]), 0.0, 1.0)
    return lower, upper_share


def node_weights(
    probabilities: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    split: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Spread probabilities over :data:`NODES` by linear binning: each splits its weight
    (1, or its entry of ``weights``) between the two nodes around it, in proportion to its
    distance from each (second-order accurate for a smooth kernel).

    Parameters
    ----------
    probabilities : ndarray of shape (n,)
        Values in [0, 1].
    weights : ndarray of shape (n,) or None
        Each row's weight; None: 1 each.
    split : (lower, upper_share) or None
        The rows' :func:`node_split`, where the caller keeps it (a bootstrap weighs the
        same rows once per resample).

    Returns
    -------
    ndarray of shape (N_NODES,)
        Weight of each node, summing to the probabilities' total weight; the weights of
        disjoint rows add up to their union's.
    """
    lower, upper_share = split or node_split(probabilities)
    w = 1.0 if weights is None else np.asarray(weights, dtype=float)
    nodes = np.bincount(lower, weights=w * (1.0 - upper_share), minlength=N_NODES)
    nodes += np.bincount(lower + 1, weights=w * upper_share, minlength=N_NODES)
    return nodes
