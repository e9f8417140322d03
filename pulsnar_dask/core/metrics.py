"""Classification metrics on probability vectors (threshold 0.5 where one is needed).

Implemented directly on numpy so they run on the collected probability vectors of any
size without copies; the tests check them against scikit-learn.
"""

from __future__ import annotations

import numpy as np

METRIC_NAMES = ("accuracy", "roc_auc", "brier", "f1", "mcc", "average_precision")


def _confusion(y: np.ndarray, predicted: np.ndarray) -> tuple[int, int, int, int]:
    tp = int(np.sum(predicted & y))
    fp = int(np.sum(predicted & ~y))
    fn = int(np.sum(~predicted & y))
    tn = int(np.sum(~predicted & ~y))
    return tp, fp, fn, tn


def _wins(small: np.ndarray, large: np.ndarray) -> float:
    """Share of the (small, large) pairs where the ``small`` score is higher, level pairs
    counted half: ``large`` sorted and ``small`` searched in it, no ranking of all rows."""
    ordered = np.sort(large)
    below = np.searchsorted(ordered, small, side="left")
    level = np.searchsorted(ordered, small, side="right") - below
    return (float(np.sum(below)) + 0.5 * float(np.sum(level))) / (small.size * large.size)


def roc_auc(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Return the area under the ROC curve (Mann-Whitney, ties counted half).

    The larger class is sorted and the smaller one counted against it by binary search
    (several times faster than ranks at a million rows, where it is read for every
    subproblem); the negatives' wins over the positives are ``1 - AUC``.

    Returns
    -------
    float
        In [0, 1]; NaN with no positive, no negative or a NaN score.
    """
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(scores, dtype=float)
    n_pos, n_neg = int(y.sum()), int(y.size - y.sum())
    if n_pos == 0 or n_neg == 0 or np.isnan(s).any():
        return float("nan")
    if n_pos <= n_neg:
        return _wins(s[y], s[~y])
    return 1.0 - _wins(s[~y], s[y])


def implied_negative_auc(pu_auc: float, alpha: float) -> float:
    """AUC between labeled positives and the unlabeled negatives that a labeled-vs-unlabeled
    AUC implies, when a fraction ``alpha`` of the unlabeled rows are positives scored like
    the labeled ones (SCAR).

    The unlabeled rows' AUC is ``alpha * 0.5 + (1 - alpha) * auc_negatives`` (a hidden
    positive ranks above or below a labeled one at even odds), so ``auc_negatives =
    (pu_auc - alpha / 2) / (1 - alpha)``. Where ``pu_auc > 0.5`` it grows with ``alpha``:
    read at an alpha that is an upper bound (every reading is, under SCAR, where negatives
    resemble positives somewhere), it is an upper bound too.

    Returns
    -------
    float
        In [0, 1]; NaN where ``alpha >= 1`` or ``pu_auc`` is NaN.
    """
    if not alpha < 1 or np.isnan(pu_auc):
        return float("nan")
    return float(np.clip((pu_auc - alpha / 2) / (1 - alpha), 0.0, 1.0))


def average_precision(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Return average precision: sum over thresholds of precision times recall gained."""
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(scores, dtype=float)
    if not y.any():
        return float("nan")
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]
    tp = np.cumsum(y)[last_of_tie]
    precision = tp / (last_of_tie + 1)
    recall_gain = np.diff(np.r_[0, tp]) / y.sum()
    return float(np.sum(precision * recall_gain))


def classification_metrics(
    y_true: np.ndarray, probabilities: np.ndarray, threshold: float = 0.5
) -> dict[str, float]:
    """Return the six metrics of the paper's classification comparison.

    Parameters
    ----------
    y_true : ndarray of shape (n,)
        True classes, 1 positive and 0 negative.
    probabilities : ndarray of shape (n,)
        Predicted probabilities of being positive.
    threshold : float
        Probability at or above which a row is predicted positive.

    Returns
    -------
    dict
        ``accuracy``, ``roc_auc``, ``brier``, ``f1``, ``mcc``, ``average_precision``.
    """
    y = np.asarray(y_true).astype(bool)
    p = np.asarray(probabilities, dtype=float)
    predicted = p >= threshold
    tp, fp, fn, tn = _confusion(y, predicted)
    f1_denominator = 2 * tp + fp + fn
    mcc_denominator = np.sqrt(float(tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return {
        "accuracy": (tp + tn) / y.size,
        "roc_auc": roc_auc(y, p),
        "brier": float(np.mean((p - y) ** 2)),
        "f1": 2 * tp / f1_denominator if f1_denominator else 0.0,
        "mcc": float((tp * tn - fp * fn) / mcc_denominator) if mcc_denominator else 0.0,
        "average_precision": average_precision(y, p),
    }
