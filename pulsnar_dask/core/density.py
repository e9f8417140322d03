"""Histogram and beta-kernel densities of probabilities on [0, 1], and bandwidth search.

The beta kernel (Chen 1999) at grid point ``z`` with bandwidth ``bw`` is
``Beta.pdf(p; 1 + z/bw, 1 + (1 - z)/bw)``. A :class:`KernelSample` holds the points the
kernel is averaged over: either the raw probabilities (the exact path, kept as the oracle)
or the nodes of :data:`~pulsnar_dask.core.grid.NODES` carrying the probabilities' weight by
linear binning (the fast path, whose kernel cost does not grow with ``n``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import differential_evolution, minimize_scalar
from scipy.spatial.distance import jensenshannon
from scipy.special import betaln

from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import (
    BANDWIDTH_BOUNDS,
    BANDWIDTH_ERRORS,
    BANDWIDTH_SEARCHES,
    KERNEL_NORMALIZATIONS,
)
from pulsnar_dask.core.grid import NODES, node_weights

# The reference searches [0.01, 0.5]. On the paper's synthetic protocol the histogram fit
# then settles on the 0.01 floor, where the alpha objective, a minimum over noisy density
# ratios, is biased low; with the point-normalised kernel a 0.05 floor halves PULSCAR's
# error and barely moves alpha elsewhere (docs/decisions/).
_CLIP = 1e-12
_CHUNK = 1 << 16


@dataclass(frozen=True)
class KernelSample:
    """Points and weights a beta-kernel density is averaged over.

    Attributes
    ----------
    log_p, log_q : ndarray of shape (m,)
        ``log(p)`` and ``log(1 - p)`` of the points, with ``p`` clipped to
        ``[1e-12, 1 - 1e-12]``.
    weights : ndarray of shape (m,)
        Non-negative weights (node weights for binned samples, ones for exact samples).
    """

    log_p: np.ndarray
    log_q: np.ndarray
    weights: np.ndarray

    @classmethod
    def from_probabilities(cls, probabilities: np.ndarray, *, exact: bool = False) -> KernelSample:
        """Build a sample from probabilities.

        Parameters
        ----------
        probabilities : ndarray of shape (n,)
            Values in [0, 1].
        exact : bool
            Keep every probability (the exact path) instead of spreading them over
            :data:`~pulsnar_dask.core.grid.NODES` by linear binning and keeping the nodes
            with weight (the fast path).

        Returns
        -------
        KernelSample
        """
        p = np.asarray(probabilities, dtype=float)
        if exact:
            points = np.clip(p, _CLIP, 1 - _CLIP)
            return cls(np.log(points), np.log1p(-points), np.ones_like(p))
        return cls.from_node_weights(node_weights(p))

    @classmethod
    def from_node_weights(cls, weights: np.ndarray) -> KernelSample:
        """Build a binned sample from the weights of :data:`~pulsnar_dask.core.grid.NODES`
        (:func:`~pulsnar_dask.core.grid.node_weights`; weights of several samples add up
        to their pooled sample's)."""
        keep = np.flatnonzero(weights > 0)
        points = np.clip(NODES[keep], _CLIP, 1 - _CLIP)
        return cls(np.log(points), np.log1p(-points), weights[keep])


def histogram_density(probabilities: np.ndarray, n_bins: int) -> np.ndarray:
    """Return the histogram density of probabilities over ``n_bins`` equal bins of [0, 1].

    Returns
    -------
    ndarray of shape (n_bins,)
        Bin masses, summing to 1.
    """
    p = np.asarray(probabilities, dtype=float)
    counts = np.bincount(np.minimum((p * n_bins).astype(np.int64), n_bins - 1), minlength=n_bins)
    return counts / counts.sum()


class BetaKernel:
    """Beta-kernel density of one sample on one grid, as a function of the bandwidth.

    With ``normalization="grid"`` (the paper and reference) the density is the mean
    kernel value at each grid point, normalised to sum 1 over the grid. The beta kernel
    does not integrate to 1 over a grid, and how much of a point's mass the grid sees
    depends on where the point lies and on the bandwidth (a pile of probabilities at 0
    is seen almost only by ``z = 0``), so the unlabeled density is not exactly the
    mixture of its parts. ``normalization="point"`` scales each point's kernel to sum 1
    over the grid first: every point carries the same mass, mixtures stay mixtures, and
    alpha depends far less on the bandwidth.

    The log kernel is ``(z log p + (1 - z) log(1 - p)) / bw - log B(a, b)``; the part in
    parentheses does not depend on ``bw``, so it is computed once and kept when it is
    small (the fast path), and recomputed chunk by chunk otherwise (the exact path on
    large samples), which bounds memory at ``k * 65536`` floats.

    Parameters
    ----------
    sample : KernelSample
        The points (exact or binned) and their weights.
    grid : ndarray of shape (k,)
        Evaluation points in [0, 1], normally ``linspace(0, 1, k)``.
    normalization : {"grid", "point"}
        Normalise the summed density over the grid, or each point's kernel first.
    """

    _CACHE_LIMIT = 1 << 22

    def __init__(self, sample: KernelSample, grid: np.ndarray, normalization: str = "grid"):
        check_choice("kernel normalization", normalization, KERNEL_NORMALIZATIONS)
        self.per_point = normalization == "point"
        self.sample = sample
        self.grid = np.asarray(grid, dtype=float)
        self._chunks = [
            slice(start, start + _CHUNK) for start in range(0, sample.weights.size, _CHUNK)
        ]
        cache = sample.weights.size * self.grid.size <= self._CACHE_LIMIT
        self._cached = [self._base(chunk) for chunk in self._chunks] if cache else None

    def _base(self, chunk: slice) -> np.ndarray:
        base = np.outer(self.grid, self.sample.log_p[chunk])
        base += np.outer(1.0 - self.grid, self.sample.log_q[chunk])
        return base

    def __call__(self, bandwidth: float) -> np.ndarray:
        """Return the density at the grid points for ``bandwidth > 0``.

        Returns
        -------
        ndarray of shape (k,)
            The weighted mean kernel value at each grid point, normalised to sum 1.
        """
        z = self.grid
        log_norm = betaln(z / bandwidth + 1.0, (1.0 - z) / bandwidth + 1.0)
        total = np.zeros_like(z)
        for i, chunk in enumerate(self._chunks):
            base = self._cached[i] if self._cached is not None else self._base(chunk)
            exponent = base / bandwidth
            exponent -= log_norm[:, None]
            np.exp(exponent, out=exponent)
            weights = self.sample.weights[chunk]
            if self.per_point:
                weights = weights / exponent.sum(axis=0)
            total += exponent @ weights
        return total / total.sum()


def beta_kernel_density(
    sample: KernelSample, grid: np.ndarray, bandwidth: float, normalization: str = "grid"
) -> np.ndarray:
    """Return the beta-kernel density of a sample at the grid points.

    Parameters
    ----------
    sample : KernelSample
        The points (exact or binned) and their weights.
    grid : ndarray of shape (k,)
        Evaluation points in [0, 1].
    bandwidth : float
        Kernel bandwidth ``bw > 0``.
    normalization : {"grid", "point"}
        See :class:`BetaKernel`.

    Returns
    -------
    ndarray of shape (k,)
        The weighted mean of ``Beta.pdf(p; 1 + z/bw, 1 + (1 - z)/bw)`` at each grid point
        ``z``, normalised to sum 1.
    """
    return BetaKernel(sample, grid, normalization)(bandwidth)


def _density_error(kind: str):
    check_choice("bandwidth error", kind, BANDWIDTH_ERRORS)
    if kind == "mse":
        return lambda a, b: float(np.mean((a - b) ** 2))
    return lambda a, b: float(jensenshannon(a, b))  # js


def select_bandwidth(
    sample: KernelSample,
    target: np.ndarray,
    grid: np.ndarray,
    search: str = "local",
    error: str = "mse",
    bounds: tuple[float, float] = BANDWIDTH_BOUNDS,
    random_state: int | None = 0,
    normalization: str = "grid",
) -> float:
    """Return the bandwidth whose beta-kernel density best matches a histogram density.

    Parameters
    ----------
    sample : KernelSample
        All probabilities (positives and unlabeled).
    target : ndarray of shape (k,)
        Histogram density of the same probabilities.
    grid : ndarray of shape (k,)
        Grid the kernel density is evaluated on.
    search : {"local", "global"}
        ``local``: bounded scalar minimisation; ``global``: differential evolution.
    error : {"mse", "js"}
        Mean squared error or Jensen-Shannon distance between the two densities.
    bounds : (float, float)
        Search interval for the bandwidth.
    random_state : int or None
        Seed of the differential evolution (``global`` only).
    normalization : {"grid", "point"}
        Kernel normalisation (see :class:`BetaKernel`).

    Returns
    -------
    float
        The bandwidth.
    """
    check_choice("bandwidth search", search, BANDWIDTH_SEARCHES)
    distance = _density_error(error)
    kernel = BetaKernel(sample, grid, normalization)

    def objective(bw: float | np.ndarray) -> float:
        return distance(kernel(float(np.ravel(bw)[0])), target)

    if search == "local":
        return float(minimize_scalar(objective, bounds=bounds, method="bounded").x)
    # global
    result = differential_evolution(objective, bounds=[bounds], seed=random_state, tol=1e-6)
    return float(result.x[0])
