"""Alpha, the fraction of positives among the unlabeled, from classifier probabilities.

``kernel`` (PULSCAR, Kumar & Lambert, arXiv 2303.08269): with beta-kernel densities ``f_p`` (labeled
positives) and ``f_u`` (unlabeled) on the same grid and bandwidth,
``err(a) = min_z (f_u(z) - a f_p(z))`` over candidates ``a = 0, 0.0001, ..., 0.9999``; the
objective is ``log10(|err(a)| + eps)`` and the estimate is the candidate where the slope
of the objective changes most.

``bbe``: Best Bin Estimation (Garg et al., NeurIPS 2021): the tail ratio at the
threshold that minimises an upper confidence bound of the ratio, cross-fitted
(:func:`best_bin_alpha`).

``tail``: the smallest ratio of tail probabilities ``P_U(p >= t) / P_P(p >= t)`` over ten
thresholds ``t`` at quantiles of the positives' probabilities from the median up to the
``1 - tail_fraction`` quantile (the mixture-proportion bound of Blanchard, Lee and Scott
2010, read off the top half of the positives' score range). PULSNAR uses it for its
cluster subproblems: there the unlabeled rows hold other clusters' positives, which score
in the middle of the range, and the kernel objective's sharpest kink lands on that plateau
(docs/decisions/).

``valley``: the share of unlabeled rows that score above the deepest dip of their density
between the negatives' mode and the labeled positives, over the share of labeled positives
above it (:func:`valley_cut`). Where the classifier ranks every positive subtype above the
negatives, however rarely each is labeled, that counts the hidden positives of all of them;
the other readers read the ratio where the positives are best labeled, and read SNAR data
low. It needs such a dip: where the unlabeled rows' scores run on into the positives'
(``ValleyCut.depth`` near 1, many labeled positives below the cut), a cut counts negatives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pulsnar_dask.core.binning import BIN_METHODS
from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import ALPHA_ESTIMATORS, ALPHA_REGIONS, DEFAULT_TAIL_FRACTION
from pulsnar_dask.core.density import (
    BANDWIDTH_BOUNDS,
    beta_kernel_density,
    select_bandwidth,
)
from pulsnar_dask.core.score_counts import ScoreCounts, Scores, ScoreVectors

logger = logging.getLogger(__name__)

CANDIDATES = np.arange(10000) / 10000.0
TAIL_THRESHOLDS = 10
# Confidence level of BBE's binomial widths (Garg et al. 2021 use delta = 0.1).
BBE_DELTA = 0.1
# Random halvings of the rows BBE is cross-fitted over (see best_bin_alpha).
BBE_SPLITS = 5
# The valley reader's grid points and the probabilities' clip before their logit.
VALLEY_GRID = 512
LOGIT_CLIP = 1e-7


@dataclass(frozen=True)
class AlphaEstimate:
    """Result of :func:`estimate_alpha`, with everything needed to plot it.

    Attributes
    ----------
    alpha : float
        Estimated fraction of positives among the unlabeled, in [0, 1).
    bandwidth : float
        Beta-kernel bandwidth chosen against the histogram of all probabilities.
    n_bins : int
        Number of grid points / histogram bins.
    grid : ndarray of shape (n_bins,)
        Grid ``linspace(0, 1, n_bins)`` the densities are evaluated on.
    density_positive, density_unlabeled : ndarray of shape (n_bins,)
        Beta-kernel densities (summing to 1) of the positives' and unlabeled' probabilities.
    candidates : ndarray of shape (10000,)
        Candidate alphas.
    objective : ndarray of shape (10000,)
        ``log10(|err(a)| + eps)`` at each candidate.
    region : str
        Grid points the objective's minimum was taken over (:func:`region_mask`).
    exact : bool
        Whether the kernel was averaged over the raw probabilities (oracle path).
    estimator : str
        The reader alpha comes from (:func:`estimate_alpha`).
    tail_thresholds, tail_ratios : ndarray
        Thresholds and ``P_U(p >= t) / P_P(p >= t)`` of the tail or BBE reader, or the
        valley reader's one cut and ``P_U(p > cut) / P_P(p > cut)`` (below 1, as alpha;
        empty for ``kernel``).
    """

    alpha: float
    bandwidth: float
    n_bins: int
    grid: np.ndarray
    density_positive: np.ndarray
    density_unlabeled: np.ndarray
    candidates: np.ndarray
    objective: np.ndarray
    region: str
    exact: bool
    estimator: str = "kernel"
    tail_thresholds: np.ndarray = field(default_factory=lambda: np.empty(0))
    tail_ratios: np.ndarray = field(default_factory=lambda: np.empty(0))


def region_mask(grid: np.ndarray, region: str, positives_median: float | None = None) -> np.ndarray:
    """Grid points the objective's minimum is taken over.

    Parameters
    ----------
    grid : ndarray of shape (k,)
        Ascending grid points in [0, 1], the last one 1.
    region : {"positives", "upper", "all"}
        ``upper``: the points above 0.5 (the reference's); ``all``: every point;
        ``positives``: the points above 0.5 at or above the labeled positives' median
        probability (the ``inverted_cdf`` median, the tail reader's lowest threshold; the
        last point, 1, always is). The positives' density there rests on at least half
        of them; below it, where few positives and fewer hidden ones score, the ratio of
        two thin densities is noise and its minimum is biased low.
    positives_median : float or None
        The labeled positives' median probability (``positives`` only).

    Returns
    -------
    ndarray of bool of shape (k,)
    """
    check_choice("alpha region", region, ALPHA_REGIONS)
    if region == "all":
        return np.ones_like(grid, dtype=bool)
    if region == "upper":
        return grid > 0.5
    if positives_median is None:
        raise ValueError("the positives region needs the positives' median probability")
    return (grid > 0.5) & (grid >= positives_median)


def alpha_objective(
    density_positive: np.ndarray,
    density_unlabeled: np.ndarray,
    grid: np.ndarray,
    region: str = "upper",
    positives_median: float | None = None,
) -> np.ndarray:
    """Return ``log10(|min_z (f_u(z) - a f_p(z))| + eps)`` for every candidate ``a``.

    Parameters
    ----------
    density_positive, density_unlabeled : ndarray of shape (k,)
        ``f_p`` and ``f_u`` on ``grid``.
    grid : ndarray of shape (k,)
        The grid points.
    region : {"positives", "upper", "all"}
        Grid points the minimum is taken over (:func:`region_mask`).
    positives_median : float or None
        The labeled positives' median probability (region ``positives`` only).

    Returns
    -------
    ndarray of shape (len(CANDIDATES),)
        The objective, in log10 units.
    """
    mask = region_mask(grid, region, positives_median)
    fp, fu = density_positive[mask], density_unlabeled[mask]
    min_fp = abs(float(density_positive.min()))
    eps = min_fp if min_fp > 0 else 1e-10
    err = (fu[:, None] - fp[:, None] * CANDIDATES[None, :]).min(axis=0)
    return np.log10(np.abs(err) + eps)


def alpha_from_objective(objective: np.ndarray) -> float:
    """Return the candidate at which the objective's slope changes most.

    ``d`` is the finite-difference slope of the objective; the estimate is the candidate
    (from the second on) where ``|diff(d)|`` is largest, the first one if tied.

    Returns
    -------
    float
        The estimated alpha.
    """
    slope = np.diff(objective) / np.diff(CANDIDATES)
    i = int(np.argmax(np.abs(np.diff(slope))))
    return float(CANDIDATES[1:][i])


def tail_ratios(
    scores: Scores, tail_fraction: float = DEFAULT_TAIL_FRACTION
) -> tuple[np.ndarray, np.ndarray]:
    """Ratio of unlabeled to positive tail probabilities at a few thresholds.

    Parameters
    ----------
    scores : Scores
        The probabilities (:class:`~pulsnar_dask.core.score_counts.ScoreVectors`) or their
        counts (:class:`~pulsnar_dask.core.score_counts.ScoreCounts`).
    tail_fraction : float
        The thresholds are ``TAIL_THRESHOLDS`` quantiles of the positives' probabilities,
        evenly spaced from the median to the ``1 - tail_fraction`` quantile. Few fixed
        thresholds keep the minimum from chasing noise, which a minimum over every
        threshold does (biased low by 0.01-0.03 in the benchmarks).

    Returns
    -------
    (thresholds, ratios) : ndarrays of shape (TAIL_THRESHOLDS,)
        Ascending thresholds ``t`` and ``P_U(p >= t) / P_P(p >= t)``.
    """
    if not 0 < tail_fraction < 0.5:
        raise ValueError(f"tail_fraction must be in (0, 0.5), got {tail_fraction}")
    thresholds = scores.quantiles(1, np.linspace(0.5, 1.0 - tail_fraction, TAIL_THRESHOLDS))
    return thresholds, scores.share_at_least(0, thresholds) / scores.share_at_least(1, thresholds)


def _smallest_ratio(ratios: np.ndarray) -> float:
    return float(min(ratios.min(), CANDIDATES[-1]))


@dataclass(frozen=True)
class ValleyCut:
    """The dip of the unlabeled rows' scores between the negatives and the labeled positives.

    Attributes
    ----------
    alpha : float
        ``P_U(p > cut) / P_P(p > cut)``, below 1: the unlabeled rows above the cut, with
        the hidden positives below it counted in the share the labeled ones have there.
    cut : float
        The probability at the dip.
    depth : float
        The unlabeled rows' density at the cut over its height at their mode below the
        labeled positives' median (1: no dip).
    labeled_below : float
        Share of the labeled positives at or below the cut.
    """

    alpha: float
    cut: float
    depth: float
    labeled_below: float


def _logits(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(q) - np.log1p(-q)


def _smoothed_counts(x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gaussian kernel density of ``x`` on an even ``grid`` (Scott's bandwidth), binned:
    the counts per grid cell convolved with the kernel, so millions of rows cost one pass."""
    step = grid[1] - grid[0]
    edges = np.append(grid - step / 2, grid[-1] + step / 2)
    counts = np.histogram(x, bins=edges)[0].astype(float)
    bandwidth = max(float(np.std(x)) * x.size ** (-1 / 5), step)
    reach = int(np.ceil(4 * bandwidth / step))
    offsets = np.arange(-reach, reach + 1) * step
    # the full convolution, cut back to the grid (``mode="same"`` returns the longer of
    # the two inputs where the kernel outreaches the grid)
    full = np.convolve(counts, np.exp(-0.5 * (offsets / bandwidth) ** 2))
    return full[reach : reach + grid.size]


def valley_cut(probabilities: np.ndarray, labels: np.ndarray) -> ValleyCut:
    """Read alpha at the dip of the unlabeled rows' scores below the labeled positives.

    On the logit of the probabilities: the unlabeled rows' density (:func:`_smoothed_counts`
    on ``VALLEY_GRID`` points from their 0.1% quantile to the labeled positives' 99.9%
    one), its mode below the labeled positives' median (the negatives), and its lowest
    point between that mode and the median (the cut).

    Parameters
    ----------
    probabilities : array-like of shape (n,)
        Out-of-fold classifier probabilities of being labeled positive, in [0, 1].
    labels : array-like of shape (n,)
        1 for labeled positives, 0 for unlabeled.

    Returns
    -------
    ValleyCut
        Where no point lies between the mode and the median (or no unlabeled row lies
        below the median), the cut is the labeled positives' median probability and the
        depth 1.
    """
    p, y = check_scores(probabilities, labels)
    x_u, x_p = _logits(p[y == 0]), _logits(p[y == 1])
    median = float(np.median(x_p))
    low, high = float(np.quantile(x_u, 0.001)), float(np.quantile(x_p, 0.999))
    cut_p, depth = float(np.median(p[y == 1])), 1.0
    # at most as high as the positives' top: half of them may sit at the clipped logit
    if low < median <= high:
        grid = np.linspace(low, high, VALLEY_GRID)
        density = _smoothed_counts(x_u, grid)
        below = np.flatnonzero(grid < median)
        mode = below[np.argmax(density[below])]
        between = np.arange(mode + 1, below[-1] + 1)
        if between.size and density[mode] > 0:
            dip = between[np.argmin(density[between])]
            cut_p = float(1.0 / (1.0 + np.exp(-grid[dip])))
            depth = float(density[dip] / density[mode])
    n_positive = int(np.sum(y == 1))
    n_below = int(np.count_nonzero(p[y == 1] <= cut_p))  # counted: exact at 5%
    above_p = (n_positive - n_below) / n_positive
    alpha = float(np.mean(p[y == 0] > cut_p)) / above_p if above_p > 0 else 1.0
    labeled_below = n_below / n_positive
    return ValleyCut(min(alpha, float(CANDIDATES[-1])), cut_p, depth, labeled_below)


def best_bin_ratios(
    probabilities: np.ndarray, labels: np.ndarray, delta: float = BBE_DELTA
) -> tuple[np.ndarray, np.ndarray, int]:
    """Tail ratios and the threshold Best Bin Estimation picks (Garg et al. 2021).

    For every threshold ``t`` among the distinct probabilities, ``q_u(t)`` and ``q_p(t)``
    are the shares of unlabeled and labeled-positive probabilities ``>= t``, and
    ``c_u, c_p = sqrt(log(4 / delta) / (2 n))`` their binomial confidence widths. BBE
    picks the threshold minimising the upper bound ``(q_u + c_u) / (q_p - c_p)`` (over
    thresholds with ``q_p > c_p``) and reads alpha as ``q_u / q_p`` there: the top bin
    the data can still vouch for, rather than the thinnest tail, whose ratio is noise.

    Parameters
    ----------
    probabilities, labels : ndarray of shape (n,)
        Out-of-fold probabilities; labels 1 positive, 0 unlabeled.
    delta : float
        Confidence level of the widths, in (0, 1).

    Returns
    -------
    (thresholds, ratios, best) : (ndarray, ndarray, int)
        Ascending candidate thresholds, ``q_u / q_p`` at each, and the index of the
        chosen one.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    p, y = check_scores(probabilities, labels)
    pos, unl = np.sort(p[y == 1]), np.sort(p[y == 0])
    thresholds = np.unique(p)
    q_p = 1.0 - np.searchsorted(pos, thresholds, side="left") / pos.size
    q_u = 1.0 - np.searchsorted(unl, thresholds, side="left") / unl.size
    width = np.sqrt(np.log(4.0 / delta) / 2.0)
    c_p, c_u = width / np.sqrt(pos.size), width / np.sqrt(unl.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = q_u / q_p
        bound = np.where(q_p > c_p, (q_u + c_u) / (q_p - c_p), np.inf)
    if not np.isfinite(bound).any():
        # Too few positives for any bin to be vouched for: the widest bin (all rows).
        return thresholds, ratios, 0
    return thresholds, ratios, int(np.argmin(bound))


def best_bin_alpha(
    probabilities: np.ndarray,
    labels: np.ndarray,
    delta: float = BBE_DELTA,
    splits: int = BBE_SPLITS,
    random_state: int | None = 0,
) -> float:
    """Alpha by Best Bin Estimation, cross-fitted so the bin choice does not bias it.

    The threshold BBE picks is the one whose bound happens to be low, which is where the
    positives' tail share happens to be high: read on the same rows, ``q_u / q_p`` there
    is biased low (by 2-3% of alpha with 1,000 positives, ``tests/test_alpha.py``).
    Here the rows are halved at random (each label split evenly), the threshold is
    picked on one half and the ratio read on the other, both ways round, and the
    estimate is the mean over ``splits`` halvings.

    Returns
    -------
    float
        The estimated alpha, in [0, 1).
    """
    p, y = check_scores(probabilities, labels)
    rng = np.random.default_rng(random_state)
    estimates = []
    for _ in range(splits):
        half = np.zeros(p.size, dtype=bool)
        for label in (0, 1):
            rows = rng.permutation(np.flatnonzero(y == label))
            half[rows[: rows.size // 2]] = True
        for pick, read in ((half, ~half), (~half, half)):
            if np.unique(y[pick]).size < 2 or np.unique(y[read]).size < 2:
                continue  # a label with a single row: it cannot be halved
            thresholds, _, best = best_bin_ratios(p[pick], y[pick], delta)
            above = p[read] >= thresholds[best]
            if above[y[read] == 1].any():
                estimates.append(np.mean(above[y[read] == 0]) / np.mean(above[y[read] == 1]))
    if not estimates:
        _, ratios, best = best_bin_ratios(p, y, delta)
        estimates.append(ratios[best])
    return float(min(np.mean(estimates), CANDIDATES[-1]))


@dataclass(frozen=True)
class RatioReading:
    """Alpha read from ratios of tail shares, with the ratios it was read from (plots).

    Attributes
    ----------
    alpha : float
    thresholds, ratios : ndarray
        The probabilities the shares were taken above, and ``P_U(p >= t) / P_P(p >= t)``.
    """

    alpha: float
    thresholds: np.ndarray
    ratios: np.ndarray


def _tail_reading(scores: Scores, tail_fraction: float, seed: int | None) -> RatioReading:
    thresholds, ratios = tail_ratios(scores, tail_fraction)
    return RatioReading(_smallest_ratio(ratios), thresholds, ratios)


def _rows(scores: Scores) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(scores, ScoreVectors):
        raise ValueError("the bbe and valley readers read the probabilities themselves")
    return scores.probabilities, scores.labels


def _bbe_reading(scores: Scores, tail_fraction: float, seed: int | None) -> RatioReading:
    p, y = _rows(scores)
    thresholds, ratios, _ = best_bin_ratios(p, y)
    return RatioReading(best_bin_alpha(p, y, random_state=seed), thresholds, ratios)


def _valley_reading(scores: Scores, tail_fraction: float, seed: int | None) -> RatioReading:
    valley = valley_cut(*_rows(scores))
    return RatioReading(valley.alpha, np.array([valley.cut]), np.array([valley.alpha]))


# Every reader of alpha but the kernel objective (which reads the densities:
# :func:`estimate_alpha`), by its name in ``ALPHA_ESTIMATORS``; each takes (scores,
# tail_fraction, seed).
RATIO_READERS: dict[str, Callable[[Scores, float, int | None], RatioReading]] = {
    "tail": _tail_reading,
    "bbe": _bbe_reading,
    "valley": _valley_reading,
}
# The readers that read the rows themselves (BBE's random halvings, the valley's smoothed
# density of logits): they are given the probabilities, not their counts.
ROW_READERS = ("bbe", "valley")


def check_scores(probabilities: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities as float64 and labels as int8, checked.

    Raises
    ------
    ValueError
        For lengths that differ, a probability outside [0, 1] or not finite, a label not
        0/1, or a label without rows.
    """
    p = np.asarray(probabilities, dtype=float).ravel()
    y = np.asarray(labels).ravel()
    if p.shape != y.shape:
        raise ValueError(f"probabilities ({p.size}) and labels ({y.size}) differ in length")
    if not np.all(np.isfinite(p)) or p.min(initial=0.0) < 0 or p.max(initial=0.0) > 1:
        raise ValueError("probabilities must be finite and within [0, 1]")
    bad = (y != 0) & (y != 1)
    if bad.any():
        raise ValueError(f"labels must be 0 (unlabeled) or 1 (positive); {int(bad.sum())} are not")
    if not (y == 1).any() or not (y == 0).any():
        raise ValueError("both labeled positives (1) and unlabeled rows (0) are needed")
    return p, y.astype(np.int8)


def _check_choices(estimator: str, bin_method: str, region: str) -> None:
    check_choice("alpha estimator", estimator, ALPHA_ESTIMATORS)
    check_choice("bin method", bin_method, BIN_METHODS)
    check_choice("alpha region", region, ALPHA_REGIONS)


def estimate_alpha(
    probabilities: np.ndarray,
    labels: np.ndarray,
    bin_method: str = "rice",
    region: str = "upper",
    bandwidth_search: str = "local",
    bandwidth_error: str = "mse",
    bandwidth_bounds: tuple[float, float] = BANDWIDTH_BOUNDS,
    exact: bool = False,
    kernel_normalization: str = "point",
    random_state: int | None = 0,
    estimator: str = "kernel",
    tail_fraction: float = DEFAULT_TAIL_FRACTION,
) -> AlphaEstimate:
    """Estimate the fraction of positives among the unlabeled (PULSCAR).

    Parameters
    ----------
    probabilities : array-like of shape (n,)
        Out-of-fold classifier probabilities of being labeled positive, in [0, 1].
    labels : array-like of shape (n,)
        1 for labeled positives, 0 for unlabeled.
    bin_method : {"square_root", "sturges", "rice", "scott", "fd"}
        Rule for the number of grid points / histogram bins.
    region : {"positives", "upper", "all"}
        Grid points the objective's minimum is taken over (:func:`region_mask`).
    bandwidth_search : {"local", "global"}
        Bounded scalar minimisation or differential evolution.
    bandwidth_error : {"mse", "js"}
        Distance between histogram and kernel densities minimised by the search.
    bandwidth_bounds : (float, float)
        Search interval for the bandwidth.
    exact : bool
        Read the probabilities themselves (the oracle; the kernel's cost grows with
        ``n``) instead of their fixed-size counts
        (:class:`~pulsnar_dask.core.score_counts.ScoreCounts`: the kernel over weighted
        nodes, quantiles and tail shares on a fine grid of cells,
        :mod:`pulsnar_dask.core.grid`).
    kernel_normalization : {"point", "grid"}
        ``point``: each probability's kernel sums to 1 over the grid (mass-preserving);
        ``grid``: the paper's mean kernel, normalised once over the grid.
    random_state : int or None
        Seed of the global bandwidth search and of BBE's random halvings.
    estimator : {"kernel", "tail", "bbe", "valley"}
        Alpha from the kernel objective (PULSCAR), the smallest tail ratio, Best Bin
        Estimation (:func:`best_bin_alpha`) or the tail ratio at the dip of the unlabeled
        rows' scores (:func:`valley_cut`; see the module docstring); the densities and
        objective are computed either way.
    tail_fraction : float
        Share of the positives the tail estimator keeps above its thresholds.

    Returns
    -------
    AlphaEstimate
        ``.alpha`` is the estimate; the rest is kept for plots and diagnostics.
    """
    _check_choices(estimator, bin_method, region)
    p, y = check_scores(probabilities, labels)
    vectors = ScoreVectors(p, y)
    scores = vectors if exact else ScoreCounts.from_scores(p, y)
    return read_scores(
        scores,
        bin_method=bin_method,
        region=region,
        bandwidth_search=bandwidth_search,
        bandwidth_error=bandwidth_error,
        bandwidth_bounds=bandwidth_bounds,
        kernel_normalization=kernel_normalization,
        random_state=random_state,
        estimator=estimator,
        tail_fraction=tail_fraction,
        rows=vectors,
    )


def read_scores(
    scores: Scores,
    bin_method: str = "rice",
    region: str = "upper",
    bandwidth_search: str = "local",
    bandwidth_error: str = "mse",
    bandwidth_bounds: tuple[float, float] = BANDWIDTH_BOUNDS,
    kernel_normalization: str = "point",
    random_state: int | None = 0,
    estimator: str = "kernel",
    tail_fraction: float = DEFAULT_TAIL_FRACTION,
    rows: ScoreVectors | None = None,
) -> AlphaEstimate:
    """Estimate alpha from what the readers need of the probabilities
    (:func:`estimate_alpha`, on its statistics).

    Parameters
    ----------
    scores : Scores
        The probabilities (:class:`~pulsnar_dask.core.score_counts.ScoreVectors`) or their
        fixed-size counts (:class:`~pulsnar_dask.core.score_counts.ScoreCounts`).
    bin_method, region, bandwidth_search, bandwidth_error, bandwidth_bounds,
    kernel_normalization, random_state, estimator, tail_fraction
        As :func:`estimate_alpha`.
    rows : ScoreVectors or None
        The probabilities themselves, for the readers that read rows (``ROW_READERS``);
        None: ``scores``.

    Returns
    -------
    AlphaEstimate

    Raises
    ------
    ValueError
        For an unknown choice, or a row reader without the rows.
    """
    _check_choices(estimator, bin_method, region)
    if not (scores.count(1) > 0 and scores.count(0) > 0):
        raise ValueError("both labeled positives (1) and unlabeled rows (0) are needed")
    exact = isinstance(scores, ScoreVectors)
    k = scores.bin_count(bin_method)
    grid = np.linspace(0.0, 1.0, k)
    bandwidth = select_bandwidth(
        scores.kernel_sample(None),
        scores.histogram(k),
        grid,
        search=bandwidth_search,
        error=bandwidth_error,
        bounds=bandwidth_bounds,
        random_state=random_state,
        normalization=kernel_normalization,
    )
    f_p = beta_kernel_density(scores.kernel_sample(1), grid, bandwidth, kernel_normalization)
    f_u = beta_kernel_density(scores.kernel_sample(0), grid, bandwidth, kernel_normalization)
    median = float(scores.quantiles(1, np.array([0.5]))[0]) if region == "positives" else None
    objective = alpha_objective(f_p, f_u, grid, region, median)
    if estimator == "kernel":
        alpha, thresholds, ratios = alpha_from_objective(objective), np.empty(0), np.empty(0)
    else:
        ratio_scores = (rows or scores) if estimator in ROW_READERS else scores
        read = RATIO_READERS[estimator](ratio_scores, tail_fraction, random_state)
        alpha, thresholds, ratios = read.alpha, read.thresholds, read.ratios
    logger.debug(
        "alpha=%.4f (%s) bandwidth=%.4f bins=%d region=%s", alpha, estimator, bandwidth, k, region
    )
    return AlphaEstimate(
        alpha=alpha,
        bandwidth=bandwidth,
        n_bins=k,
        grid=grid,
        density_positive=f_p,
        density_unlabeled=f_u,
        candidates=CANDIDATES,
        objective=objective,
        region=region,
        exact=exact,
        estimator=estimator,
        tail_thresholds=thresholds,
        tail_ratios=ratios,
    )
