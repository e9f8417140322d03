"""The Poisson bootstrap: each row's weight in a resample drawn from its id.

A row's weight in resample ``b`` is a Poisson(1) draw seeded by a hash of (row id, seed,
``b``) (Hanley & MacGibbon 2006; Chamandy et al. 2012). No row has to move for a
resample, whoever holds it computes its weight, and the resample is the same on any
partitioning. A row that appears in several subproblems (every unlabeled row, under
PULSNAR) has the same weight in each, as it is the same row of the data.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import poisson

from pulsnar_dask.core.folds import row_hash

# Poisson(1) cumulative probabilities; a draw past the last is 20 (probability ~1e-19)
_POISSON_CDF = poisson.cdf(np.arange(20), 1.0)
# keeps the weights' hash apart from the folds' hash of the same (id, seed)
_SALT = np.uint64(0xD1B54A32D192ED03)


def poisson_weights(row_ids: np.ndarray, seed: int, resample: int) -> np.ndarray:
    """Return each row's weight in one resample of the Poisson bootstrap.

    Parameters
    ----------
    row_ids : ndarray of shape (n,)
        Row ids (integers, or any values :func:`~pulsnar_dask.core.folds.row_hash` takes).
    seed : int
        The run's seed.
    resample : int
        The resample's number, from 0.

    Returns
    -------
    ndarray of int64 of shape (n,)
        Poisson(1) draws: how many times each row counts in the resample.
    """
    if resample < 0:
        raise ValueError(f"resample must be non-negative, got {resample}")
    keys = row_hash(row_ids, seed) ^ _SALT
    mixed = row_hash(keys, resample)
    uniform = (mixed >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return np.searchsorted(_POISSON_CDF, uniform, side="right").astype(np.int64)
