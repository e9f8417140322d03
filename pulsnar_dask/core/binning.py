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
    p = np.asarray(probabilities, dtype=float)
    check_bin_rule(method, p.size)
    q75, q25 = np.percentile(p, [75, 25]) if method == "fd" else (0.0, 0.0)
    return rule_bin_count(method, p.size, float(p.max() - p.min()), float(np.std(p)), q75 - q25)


def check_bin_rule(method: str, n: float) -> None:
    """Refuse an unknown rule, or fewer than two probabilities to apply it to."""
    check_choice("bin method", method, BIN_METHODS)
    if n < 2:
        raise ValueError("at least two probabilities are needed to choose a bin count")


def rule_bin_count(method: str, n: float, spread: float, sd: float, iqr: float) -> float:
    """Return the unrounded bin count of a rule from the statistics it reads.

    Parameters
    ----------
    method : {"square_root", "sturges", "rice", "scott", "fd"}
    n : float
        Number of probabilities.
    spread, sd, iqr : float
        Their range, standard deviation and interquartile range (the latter two read
        only by ``scott`` and ``fd``).

    Returns
    -------
    float
    """
    if method == "square_root":
        return float(np.sqrt(n))
    if method == "sturges":
        return float(np.ceil(np.log2(n)) + 1)
    if method == "rice":
        return float(2 * n ** (1 / 3))
    width = (3.5 * sd if method == "scott" else 2 * iqr) / n ** (1 / 3)
    # no spread: the widths are rounding noise, and no finite width is meant
    return spread / width if spread > 0 and width > 0 else float(MAX_BINS)


def rounded_bin_count(raw: float, method: str) -> int:
    """Round a rule's bin count as the reference does (all but Sturges to the nearest
    power of two) and keep it between ``MIN_BINS`` (4) and ``MAX_BINS`` (512)."""
    k = int(raw) if method == "sturges" else nearest_power_of_two(raw)
    return int(min(MAX_BINS, max(MIN_BINS, k)))


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
    return rounded_bin_count(raw_bin_count(probabilities, method), method)
