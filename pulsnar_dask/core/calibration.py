"""Probability calibration with an estimated alpha (paper Algorithm 3).

``round(alpha |U|)`` unlabeled rows are relabeled positive so that their distribution over
equal probability bins follows the labeled positives' histogram: bins are walked from the
top (p near 1) down, rows picked at random inside a bin, and a bin's shortfall carried to
the next lower one. An isotonic (or logistic) regression of the new labels on the
probabilities then gives calibrated probabilities.

The pipeline fits that regression on counts (:func:`takes_of_counts`, :func:`cell_sums`,
:func:`fit_map_on_cells`): each bin's expected share of flipped rows, summed on the
probability grid where the rows are held, so that no row need be in one place. The draws
on rows (:func:`flip_labels`, :func:`calibrate`) stay as the oracle it is tested against.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import CALIBRATION_DATA, CALIBRATION_METHODS
from pulsnar_dask.core.grid import N_CELLS, cell_of


def flips_per_bin(
    positive_probabilities: np.ndarray, n_flips: int, n_bins: int = 100
) -> np.ndarray:
    """Split ``n_flips`` over equal bins in proportion to the positives' histogram.

    Uses largest remainders, so the counts sum to exactly ``n_flips``.

    Returns
    -------
    ndarray of int of shape (n_bins,)
        Flips wanted in each bin, lowest bin first.
    """
    counts, _ = np.histogram(positive_probabilities, bins=np.linspace(0.0, 1.0, n_bins + 1))
    share = n_flips * counts / counts.sum()
    wanted = np.floor(share).astype(np.int64)
    remainder = n_flips - int(wanted.sum())
    if remainder:
        # Ties go to the higher bin, where positives are most likely.
        order = np.lexsort((-np.arange(n_bins), -(share - wanted)))
        wanted[order[:remainder]] += 1
    return wanted


def flip_labels(
    positive_probabilities: np.ndarray,
    unlabeled_probabilities: np.ndarray,
    alpha: float,
    n_bins: int = 100,
    random_state: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Choose the unlabeled rows to relabel positive.

    Parameters
    ----------
    positive_probabilities : ndarray of shape (n_p,)
        Labeled positives' probabilities.
    unlabeled_probabilities : ndarray of shape (n_u,)
        Unlabeled rows' probabilities.
    alpha : float
        Estimated fraction of positives among the unlabeled.
    n_bins : int
        Number of equal bins on [0, 1].
    random_state : int, Generator or None
        Seed of the choice inside each bin.

    Returns
    -------
    ndarray of bool of shape (n_u,)
        True for the ``round(alpha n_u)`` rows relabeled positive.
    """
    rng = np.random.default_rng(random_state)
    u = np.asarray(unlabeled_probabilities, dtype=float)
    n_flips = int(np.round(alpha * u.size))
    bins = flip_bins(u, n_bins)
    wanted = flips_per_bin(positive_probabilities, n_flips, n_bins)
    takes = takes_of_counts(wanted, np.bincount(bins, minlength=n_bins))
    flipped = np.zeros(u.size, dtype=bool)
    for b in np.flatnonzero(takes)[::-1]:
        flipped[rng.choice(np.flatnonzero(bins == b), takes[b], replace=False)] = True
    return flipped


def flip_bins(probabilities: np.ndarray, n_bins: int = 100) -> np.ndarray:
    """Each probability's equal bin on [0, 1] (1 in the last), as int64."""
    return np.minimum(
        (np.asarray(probabilities, dtype=float) * n_bins).astype(np.int64), n_bins - 1
    )


def takes_of_counts(wanted: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Flips each bin takes, walking the bins from the top down and carrying a bin's
    shortfall (``wanted`` over its ``members``, the unlabeled rows in it) to the next
    lower one.

    Returns
    -------
    ndarray of int64 of shape (n_bins,)
        At most ``members`` in each bin.
    """
    takes = np.zeros(len(members), dtype=np.int64)
    carry = 0
    for b in range(len(members) - 1, -1, -1):
        need = int(wanted[b]) + carry
        takes[b] = min(need, int(members[b]))
        carry = need - takes[b]
    return takes


def flip_shares(
    positive_probabilities: np.ndarray, members: np.ndarray, alpha: float
) -> np.ndarray:
    """Each equal bin's chance that :func:`flip_labels` flips an unlabeled row in it, from
    the counts of unlabeled rows in the bins (``members``, of shape (n_bins,)): the
    expected new label of such a row, which the calibration fits on counts
    (:func:`fit_map_on_cells`) instead of one draw of the flips.

    Returns
    -------
    ndarray of float of shape (n_bins,)
        ``takes / members`` (0 in an empty bin).
    """
    members = np.asarray(members)
    n_bins = members.size
    n_flips = int(np.round(alpha * members.sum()))
    takes = takes_of_counts(flips_per_bin(positive_probabilities, n_flips, n_bins), members)
    return np.divide(takes, members, out=np.zeros(n_bins), where=members > 0)


def calibrate(
    probabilities: np.ndarray,
    labels: np.ndarray,
    alpha: float,
    method: str = "isotonic",
    data: str = "PU",
    n_bins: int = 100,
    random_state: int | None = 0,
) -> np.ndarray:
    """Return calibrated probabilities of being positive.

    Parameters
    ----------
    probabilities : ndarray of shape (n,)
        Out-of-fold classifier probabilities.
    labels : ndarray of shape (n,)
        1 for labeled positives, 0 for unlabeled.
    alpha : float
        Estimated fraction of positives among the unlabeled.
    method : {"isotonic", "sigmoid"}
        Isotonic regression or logistic regression of the new labels on the probabilities.
    data : {"PU", "U"}
        Fit on positives and unlabeled, or on the unlabeled only.
    n_bins : int
        Bins of the label flipping.
    random_state : int or None
        Seed of the label flipping.

    Returns
    -------
    ndarray of shape (n,)
        Calibrated probabilities in [0, 1] for every row.
    """
    check_choice("calibration data", data, CALIBRATION_DATA)
    y = np.asarray(labels)
    new_labels = relabeled(probabilities, y, alpha, n_bins, random_state)
    return fit_calibration(probabilities, new_labels, y == 0 if data == "U" else None, method)


def relabeled(
    probabilities: np.ndarray,
    labels: np.ndarray,
    alpha: float,
    n_bins: int = 100,
    random_state: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Algorithm 3's new labels: the positives and the flipped unlabeled rows are 1.

    Returns
    -------
    ndarray of float of shape (n,)
        0/1 labels (see :func:`flip_labels` for which unlabeled rows are flipped).
    """
    p = np.asarray(probabilities, dtype=float)
    y = np.asarray(labels)
    unlabeled = y == 0
    new_labels = (y == 1).astype(float)
    new_labels[unlabeled] = flip_labels(p[y == 1], p[unlabeled], alpha, n_bins, random_state)
    return new_labels


@dataclass(frozen=True)
class CalibrationMap:
    """A fitted map from a classifier's probability to a calibrated one, kept as numbers
    so that a saved model applies it to new rows exactly as the run did.

    Attributes
    ----------
    method : {"isotonic", "sigmoid"}
    x, y : tuple of float
        Isotonic: the fitted step function's knots (increasing ``x``); the map
        interpolates linearly between them and is flat beyond them.
    coef, intercept : float
        Sigmoid: ``1 / (1 + exp(-(coef p + intercept)))``.
    """

    method: str
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    coef: float = 0.0
    intercept: float = 0.0

    def __call__(self, probabilities: np.ndarray) -> np.ndarray:
        """Calibrated probabilities in [0, 1] (float64, the shape of ``probabilities``)."""
        p = np.asarray(probabilities, dtype=float)
        if self.method == "isotonic":
            return np.interp(p, self.x, self.y)
        return 1.0 / (1.0 + np.exp(-(self.coef * p + self.intercept)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CalibrationMap:
        return cls(
            data["method"],
            tuple(data["x"]),
            tuple(data["y"]),
            data["coef"],
            data["intercept"],
        )


# scikit-learn merges sorted probabilities closer than this to the first of a run
# (``np.finfo(np.float64).resolution``, its ``_make_unique``)
TIE_RESOLUTION = 1e-15


def isotonic_thresholds(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The thresholds of scikit-learn's ``IsotonicRegression(y_min=0, y_max=1)`` fitted
    to ``y`` on ``x`` (its ``X_thresholds_`` and ``y_thresholds_``, the same numbers),
    without importing scikit-learn: its import (about 0.5 s of CPU, most of it
    scipy.stats) would run on the distributed job's client, whose cores the start-up of
    a local cluster keeps busy.

    As scikit-learn does: rows sorted by ``x`` (then ``y``), runs of ``x`` within
    :data:`TIE_RESOLUTION` of the run's first value averaged into one point weighted by
    its rows, the weighted isotonic fit (scipy's pool-adjacent-violators), clipped to
    [0, 1], and the points inside a flat stretch dropped (its two ends kept).

    Parameters
    ----------
    x : array-like of shape (n,)
        Probabilities, taken as float64 (scikit-learn would work in float32 on float32
        values, and merge ties within 1e-6).
    y : array-like of shape (n,)
        0/1 labels, or the mean label of the rows a point stands for.
    weights : array-like of shape (n,) or None
        The rows each point stands for (None: one each).

    Returns
    -------
    (x_thresholds, y_thresholds) : ndarrays of float64
        Increasing ``x``; non-decreasing ``y`` in [0, 1].

    Raises
    ------
    ValueError
        For no rows, or a probability that is NaN or infinite (as scikit-learn does).
    """
    from scipy.optimize import isotonic_regression

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if not x.size or not np.isfinite(x).all():
        raise ValueError("isotonic calibration needs at least one row and finite probabilities")
    w = np.ones(x.size) if weights is None else np.asarray(weights, dtype=float)
    order = np.lexsort((y, x))
    x, y, w = x[order], y[order], w[order]
    starts = _run_starts(x)
    run_y, w = np.add.reduceat(y * w, starts), np.add.reduceat(w, starts)
    x, y = x[starts], run_y / w
    y = np.clip(isotonic_regression(y, weights=w, increasing=True).x, 0.0, 1.0)
    keep = np.ones(y.size, dtype=bool)
    keep[1:-1] = (y[1:-1] != y[:-2]) | (y[1:-1] != y[2:])
    return x[keep], y[keep]


def _run_starts(x: np.ndarray) -> np.ndarray:
    """Where each run of sorted ``x`` begins: a value at least :data:`TIE_RESOLUTION`
    above the first of the current run starts a new one (scikit-learn's rule, which
    compares with the run's first value, not with the previous one)."""
    starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]])
    near = np.flatnonzero(np.diff(x[starts]) < TIE_RESOLUTION) + 1
    if not near.size:
        return starts
    # Rare (distinct float32 probabilities are that close only below about 1e-8, and
    # PULSNAR's combined float64 ones seldom): walk the values close to their
    # predecessor, carrying the run's first value.
    keep = np.ones(starts.size, dtype=bool)
    keep[near] = False
    last_kept = np.maximum.accumulate(np.where(keep, np.arange(starts.size), 0))
    first = -1
    for k in near:
        first = max(first, last_kept[k - 1])
        if x[starts[k]] - x[starts[first]] >= TIE_RESOLUTION:
            keep[k] = True
            first = k
    return starts[keep]


def fit_calibration_map(
    probabilities: np.ndarray,
    new_labels: np.ndarray,
    fit_rows: np.ndarray | None = None,
    method: str = "isotonic",
) -> CalibrationMap:
    """Regress new labels on probabilities: isotonic regression (``y_min=0, y_max=1``,
    flat beyond the fitted range) or logistic regression.

    Parameters
    ----------
    probabilities, new_labels : ndarray of shape (n,)
    fit_rows : ndarray of bool or None
        Rows the regression is fitted on (``None``: all).
    method : {"isotonic", "sigmoid"}

    Returns
    -------
    CalibrationMap
    """
    check_choice("calibration method", method, CALIBRATION_METHODS)
    p = np.asarray(probabilities, dtype=float)
    rows = slice(None) if fit_rows is None else fit_rows
    return _fitted(p[rows], np.asarray(new_labels, dtype=float)[rows], None, method)


def _fitted(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray | None, method: str
) -> CalibrationMap:
    """The map regressing ``y`` (0/1, or a point's mean label) on ``x``, each point
    weighing ``weights`` rows (None: one)."""
    if method == "isotonic":
        x, y = isotonic_thresholds(x, y, weights)
        return CalibrationMap(method, tuple(x.tolist()), tuple(y.tolist()))
    # scikit-learn is imported here, not by the distributed job's client at start-up.
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression()
    if weights is None:
        model.fit(x.reshape(-1, 1), y)
    else:  # each point as its positive and its negative rows
        both = np.r_[weights * y, weights * (1 - y)]
        keep = both > 0
        labels = np.r_[np.ones(x.size), np.zeros(x.size)]
        model.fit(np.r_[x, x][keep].reshape(-1, 1), labels[keep], sample_weight=both[keep])
    return CalibrationMap(
        method, coef=float(model.coef_[0, 0]), intercept=float(model.intercept_[0])
    )


def cell_sums(probabilities: np.ndarray, new_labels: np.ndarray) -> np.ndarray:
    """The rows, their probabilities and their new labels summed in each cell of the
    probability grid (:mod:`pulsnar_dask.core.grid`): what :func:`fit_map_on_cells`
    reads. Sums of pieces of the rows add up to the sums of all of them.

    Parameters
    ----------
    probabilities : ndarray of shape (n,)
    new_labels : ndarray of shape (n,)
        0/1, or a row's chance of being flipped (:func:`flip_shares`).

    Returns
    -------
    ndarray of float of shape (3, N_CELLS)
        Rows, sum of probabilities, sum of new labels.
    """
    p = np.asarray(probabilities, dtype=float)
    cells = cell_of(p)
    return np.stack(
        [
            np.bincount(cells, minlength=N_CELLS).astype(float),
            np.bincount(cells, weights=p, minlength=N_CELLS),
            np.bincount(cells, weights=np.asarray(new_labels, dtype=float), minlength=N_CELLS),
        ]
    )


def fit_map_on_cells(sums: np.ndarray, method: str = "isotonic") -> CalibrationMap:
    """:func:`fit_calibration_map` on :func:`cell_sums`: each cell's rows as one point at
    their mean probability, with their mean new label, weighing as many rows. A cell is
    1/4096 wide or less, so the map differs from the fit on the rows only inside a cell.

    Raises
    ------
    ValueError
        For no rows.
    """
    check_choice("calibration method", method, CALIBRATION_METHODS)
    n, sum_p, sum_y = np.asarray(sums, dtype=float)
    filled = n > 0
    if not filled.any():
        raise ValueError("calibration needs at least one row")
    n = n[filled]
    return _fitted(sum_p[filled] / n, np.clip(sum_y[filled] / n, 0.0, 1.0), n, method)


def fit_calibration(
    probabilities: np.ndarray,
    new_labels: np.ndarray,
    fit_rows: np.ndarray | None = None,
    method: str = "isotonic",
) -> np.ndarray:
    """Every row's calibrated probability from :func:`fit_calibration_map`.

    Returns
    -------
    ndarray of shape (n,)
        Calibrated probabilities in [0, 1].
    """
    return fit_calibration_map(probabilities, new_labels, fit_rows, method)(probabilities)


def reliability_sums(y_true: np.ndarray, probabilities: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Rows, their summed probability and their summed true label in each of ``n_bins``
    equal-width bins of [0, 1]: what a reliability curve is drawn from, summed over any
    split of the rows.

    Returns
    -------
    ndarray of shape (3, n_bins)
        Counts, probability sums, positive counts.
    """
    y = np.asarray(y_true, dtype=float)
    p = np.asarray(probabilities, dtype=float)
    bins = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    return np.stack(
        [
            np.bincount(bins, minlength=n_bins).astype(float),
            np.bincount(bins, weights=p, minlength=n_bins),
            np.bincount(bins, weights=y, minlength=n_bins),
        ]
    )


def curve_of(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean probability, fraction of positives and count per bin, from
    :func:`reliability_sums`.

    Returns
    -------
    (mean_probability, fraction_positive, count) : ndarrays of shape (n_bins,)
        Bins without rows have NaN means and count 0.
    """
    count, p, y = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        return p / count, y / count, count.astype(np.int64)


def calibration_error(sums: np.ndarray) -> float:
    """The expected calibration error of :func:`reliability_sums`:
    ``sum_b (n_b / n) |mean(y in b) - mean(p in b)|``."""
    mean_p, mean_y, count = curve_of(sums)
    filled = count > 0
    gap = count[filled] * np.abs(mean_y[filled] - mean_p[filled])
    return float(gap.sum() / max(1, count.sum()))


def expected_calibration_error(
    y_true: np.ndarray, probabilities: np.ndarray, n_bins: int = 10
) -> float:
    """Return the expected calibration error over equal-width bins
    (:func:`calibration_error`).

    Returns
    -------
    float
        ``sum_b (n_b / n) |mean(y in b) - mean(p in b)|``.
    """
    return calibration_error(reliability_sums(y_true, probabilities, n_bins))
