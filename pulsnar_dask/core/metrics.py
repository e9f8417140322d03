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


def roc_auc(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Return the area under the ROC curve (Mann-Whitney, ties counted half)."""
    y = np.asarray(y_true).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    from scipy.stats import rankdata  # here: scipy.stats is slow to import at start-up

    ranks = rankdata(scores)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


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
