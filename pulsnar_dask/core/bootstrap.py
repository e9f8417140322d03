"""The Poisson bootstrap: each row's weight in a resample drawn from its id.

A row's weight in resample ``b`` is a Poisson(1) draw seeded by a hash of (row id, seed,
``b``) (Hanley & MacGibbon 2006; Chamandy et al. 2012). No row has to move for a
resample, whoever holds it computes its weight, and the resample is the same on any
partitioning. A row that appears in several subproblems (every unlabeled row, under
PULSNAR) has the same weight in each, as it is the same row of the data.
"""

from __future__ import annotations

from math import exp, factorial

import numpy as np

from pulsnar_dask.core.folds import row_hash

# Poisson(1) cumulative probabilities, e^-1 sum_{j <= k} 1/j!; in float64 they reach 1 at
# 18, the largest draw (written out: scipy.stats costs the client 0.9 s to import)
_POISSON_CDF = np.minimum(np.cumsum([exp(-1.0) / factorial(k) for k in range(20)]), 1.0)
# keeps the weights' hash apart from the folds' hash of the same (id, seed)
_SALT = np.uint64(0xD1B54A32D192ED03)


def resample_keys(row_ids: np.ndarray, seed: int) -> np.ndarray:
    """Return the 64-bit keys each row's weights are drawn from, once for every resample
    (:func:`weights_of_keys`).

    Parameters
    ----------
    row_ids : ndarray of shape (n,)
        Row ids (integers, or any values :func:`~pulsnar_dask.core.folds.row_hash` takes).
    seed : int
        The run's seed.

    Returns
    -------
    ndarray of uint64 of shape (n,)
    """
    return row_hash(row_ids, seed) ^ _SALT


def weights_of_keys(keys: np.ndarray, resample: int) -> np.ndarray:
    """Return each row's weight in one resample, from its :func:`resample_keys`.

    Parameters
    ----------
    keys : ndarray of uint64 of shape (n,)
    resample : int
        The resample's number, from 0.

    Returns
    -------
    ndarray of int64 of shape (n,)
        Poisson(1) draws: how many times each row counts in the resample.
    """
    if resample < 0:
        raise ValueError(f"resample must be non-negative, got {resample}")
    mixed = row_hash(keys, resample)
    uniform = (mixed >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return np.searchsorted(_POISSON_CDF, uniform, side="right").astype(np.int64)


def poisson_weights(row_ids: np.ndarray, seed: int, resample: int) -> np.ndarray:
    """Return each row's weight in one resample of the Poisson bootstrap
    (:func:`weights_of_keys` of the rows' :func:`resample_keys`).

    Returns
    -------
    ndarray of int64 of shape (n,)
    """
    return weights_of_keys(resample_keys(row_ids, seed), resample)
