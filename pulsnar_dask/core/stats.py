"""Summary statistics of repeated measurements."""

from __future__ import annotations

import numpy as np


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Return (mean, lower, upper) of a t confidence interval for the mean.

    Returns
    -------
    tuple of float
        The interval collapses to the mean when there is a single value.
    """
    v = np.asarray(values, dtype=float)
    mean = float(v.mean())
    if v.size < 2:
        return mean, mean, mean
    from scipy import stats  # here: scipy.stats is slow to import at the job's start-up

    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return mean, mean - half, mean + half
