"""The Statlog shuttle data as the paper's SNAR benchmark (Kumar & Lambert, arXiv 2303.08269).

Class 1 is negative, classes 2-7 are positive subtypes. The unlabeled set is every
class-1 row plus ``int(n_negative * fraction / (1 - fraction))`` positives taken from
the subtypes unevenly: each small class (2, 3, 6, 7) gives a random count between
``size * fraction`` and ``size``, and the two large classes (4, 5) give the rest so that
the labeled positives keep them in equal numbers where possible. The labeled positives
are the positives not taken, so the subtype mix differs between P and U.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pulsnar_dask.datasets.synthetic import PUData

NEGATIVE_CLASS = 1
LARGE_CLASSES = (4, 5)
FRACTIONS = (0.01, 0.05, 0.10, 0.15)


def read_shuttle(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read a shuttle file (whitespace-separated, 9 features then the class).

    Returns
    -------
    (X, classes)
        ``X`` float32 of shape (n, 9); ``classes`` int of shape (n,), values 1-7.
    """
    table = np.loadtxt(path, dtype=np.int64, ndmin=2)
    if table.shape[1] != 10:
        raise ValueError(f"{path}: expected 10 columns (9 features, class), got {table.shape[1]}")
    return table[:, :9].astype(np.float32), table[:, 9]


def _take(rng: np.random.Generator, idx: np.ndarray, k: int) -> np.ndarray:
    return rng.permutation(idx)[:k]


def shuttle_pu_data(
    X: np.ndarray, classes: np.ndarray, fraction: float, random_state: int = 0
) -> PUData:
    """Build the SNAR PU data set of the paper from the shuttle rows.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    classes : ndarray of int of shape (n,)
        Shuttle classes; 1 negative, the others positive subtypes.
    fraction : float
        Wanted fraction of positives among the unlabeled, in (0, 1).
    random_state : int
        Seed of the counts taken from the small classes and of which rows are taken.

    Returns
    -------
    PUData
        Rows in the input order; ``true_label`` is 0 for negatives and the class for
        positives.

    Raises
    ------
    ValueError
        If the large classes hold too few rows for the fraction.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    classes = np.asarray(classes)
    rng = np.random.default_rng(random_state)
    n_negative = int(np.sum(classes == NEGATIVE_CLASS))
    remaining = int(n_negative * fraction / (1 - fraction))
    hidden = np.zeros(classes.size, dtype=bool)
    small = sorted(set(np.unique(classes).tolist()) - {NEGATIVE_CLASS, *LARGE_CLASSES})
    for c in small:
        idx = np.flatnonzero(classes == c)
        k = int(rng.integers(int(idx.size * fraction), idx.size)) if idx.size > 1 else 0
        hidden[_take(rng, idx, k)] = True
        remaining -= k
    large = [np.flatnonzero(classes == c) for c in LARGE_CLASSES]
    keep = sum(i.size for i in large) - remaining
    keep_counts = [keep // 2, keep - keep // 2]
    if any(k > i.size for k, i in zip(keep_counts, large, strict=True)):
        # One large class is too small to keep half: take equal numbers from both instead.
        take_counts = [remaining // 2, remaining - remaining // 2]
    else:
        take_counts = [i.size - k for k, i in zip(keep_counts, large, strict=True)]
    for idx, k in zip(large, take_counts, strict=True):
        if not 0 <= k <= idx.size:
            raise ValueError(
                f"fraction {fraction} needs {remaining} hidden positives; the large classes "
                f"hold {large[0].size} and {large[1].size}"
            )
        hidden[_take(rng, idx, k)] = True
    positive = classes != NEGATIVE_CLASS
    return PUData(
        X=np.asarray(X, dtype=np.float32),
        label=(positive & ~hidden).astype(np.int8),
        true_label=np.where(positive, classes, 0).astype(np.int8),
    )
