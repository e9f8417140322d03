"""Bin-count rules for the histogram and the density grid.

The rules follow the paper and the reference implementation: every rule
but Sturges is rounded to the nearest power of two, and the count is capped at 512.
"""

from __future__ import annotations

import numpy as np

from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import BIN_METHODS

MAX_BINS = 512
MIN_BINS = 4


def nearest_power_of_two(value: float) -> int:
    """Return the power of two nearest to ``value`` (ties go up).

    Parameters
    ----------
    value : float
        A positive number.

    Returns
    -------
    int
        ``2**round(log2(value))`` in the reference's sense: the lower power wins
        only when strictly nearer.
    """
    if not np.isfinite(value) or value <= 1:
        return 1
    lo = 2 ** int(np.floor(np.log2(value)))
    hi = 2 ** int(np.ceil(np.log2(value)))
    return lo if value - lo < hi - value else hi


def raw_bin_count(probabilities: np.ndarray, method: str = "rice") -> float:
    """Return the unrounded bin count of a rule.

    Parameters
    ----------
    probabilities : ndarray of shape (n,)
        Values in [0, 1].
    method : {"square_root", "sturges", "rice", "scott", "fd"}
        The rule. Sturges is ``ceil(log2 n) + 1`` as in the reference.

    Returns
    -------
    float
        The number of bins the rule asks for, before rounding and capping.
    """
    check_choice("bin method", method, BIN_METHODS)
    p = np.asarray(probabilities, dtype=float)
    n = p.size
    if n < 2:
        raise ValueError("at least two probabilities are needed to choose a bin count")
    if method == "square_root":
        return float(np.sqrt(n))
    if method == "sturges":
        return float(np.ceil(np.log2(n)) + 1)
    if method == "rice":
        return float(2 * n ** (1 / 3))
    spread = float(p.max() - p.min())
    if method == "scott":
        width = 3.5 * float(np.std(p)) / n ** (1 / 3)
    else:  # fd
        q75, q25 = np.percentile(p, [75, 25])
        width = 2 * float(q75 - q25) / n ** (1 / 3)
    return spread / width if width > 0 else float(MAX_BINS)


def bin_count(probabilities: np.ndarray, method: str = "rice") -> int:
    """Return the number of bins ``k`` for the density grid.

    Parameters
    ----------
    probabilities : ndarray of shape (n,)
        All probabilities (positives and unlabeled together).
    method : {"square_root", "sturges", "rice", "scott", "fd"}
        The rule; all but Sturges are rounded to the nearest power of two.

    Returns
    -------
    int
        The bin count, between ``MIN_BINS`` (4) and ``MAX_BINS`` (512).
    """
    raw = raw_bin_count(probabilities, method)
    k = int(raw) if method == "sturges" else nearest_power_of_two(raw)
    return int(min(MAX_BINS, max(MIN_BINS, k)))
