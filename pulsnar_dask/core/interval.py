"""The default 95% interval of alpha: how far the collected probabilities let it move.

Three things the probabilities cannot settle by themselves move alpha, and the interval
spans all three:

1. sampling: which rows happened to be collected. A Poisson bootstrap of the out-of-fold
   probabilities (``PUConfig.interval_resamples`` resamples; each row's weight in a
   resample drawn from its id, :func:`~pulsnar_dask.core.bootstrap.poisson_weights`, so
   an unlabeled row weighs the same in every subproblem, as it is the same row of the
   data) gives each reading a standard deviation ``sd``;
2. the reader: alpha read with the kernel objective and with the tail ratios
   (:mod:`pulsnar_dask.core.alpha`), whose biases differ, and with the configured reader if it
   is another;
3. the labeling assumption: PULSNAR's clusters and PULSCAR, where both were computed
   (``method="auto"`` with more than one cluster).

Each (assumption, reader) reading ``a`` gives ``a +- 1.96 sd``; the interval runs from the
lowest to the highest of these (and over the t-interval of the mean of several
iterations), clipped to [0, 1]. One reading's bootstrap alone often misses the true
alpha, as it leaves out the reader's and the labeling assumption's share of the
uncertainty; the span takes them in (see docs/decisions/).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pulsnar_dask.core.bootstrap import resample_keys, weights_of_keys
from pulsnar_dask.core.claims import combined_alpha
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.grid import N_CELLS, cell_of
from pulsnar_dask.core.score_counts import Scores
from pulsnar_dask.core.stats import mean_ci
from pulsnar_dask.core.subproblem import (
    SubproblemResult,
    alpha_of,
    group_subproblems,
    reads_rows,
    scores_for,
)

INTERVAL_READERS = ("kernel", "tail")
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class AlphaInterval:
    """The 95% interval of alpha and the readings it spans.

    Attributes
    ----------
    low, high : float
        Fractions of the unlabeled rows, in [0, 1].
    readings : dict
        ``"<assumption> <reader>"`` (e.g. ``"pulsnar kernel"``) -> ``(alpha, sd)``: the
        reading on the collected probabilities and its bootstrap standard deviation.
    """

    low: float
    high: float
    readings: dict[str, tuple[float, float]]


# each subproblem's probabilities, labels, positives' resample keys and grid cells
Subproblems = Sequence[Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]]
_PER_SUBPROBLEM = 4  # arrays of each subproblem in resample_readings' flat arguments
_CELL_TYPE = np.min_scalar_type(N_CELLS - 1)  # the cells kept, 2 bytes a row


def _readings(
    groups: Subproblems,
    unlabeled_keys: np.ndarray,
    subtypes: Sequence[np.ndarray],
    readers: Sequence[str],
    config: PUConfig,
    seed: int,
    resample: int | None,
) -> np.ndarray:
    """Alpha per (group, reader), the subproblems' ``(probabilities, labels, positives'
    resample keys, grid cells)`` combined as configured, on the rows (``resample=None``)
    or weighted as one resample of the Poisson bootstrap weighs them (NaN where the
    unlabeled rows, or a subproblem's positives, all weigh 0 in it)."""
    out = np.empty((len(groups), len(readers)))
    w_unl = None if resample is None else weights_of_keys(unlabeled_keys, resample)
    configs = [config.with_(alpha_estimator=reader) for reader in readers]
    for g, group in enumerate(groups):
        weighted = []
        for p, y, positive_keys, cells in group:
            w = None
            if resample is not None:
                w = np.empty(p.size, np.int64)
                w[y == 0] = w_unl
                w[y == 1] = weights_of_keys(positive_keys, resample)
            weighted.append((p, y, w, cells))
        if resample is not None and not (
            w_unl.any() and all(w[y == 1].any() for _, y, w, _ in weighted)
        ):
            out[g] = np.nan  # a label the resample left without rows
            continue
        unlabeled = [cells[y == 0] for _, y, _, cells in weighted]
        scores: dict[tuple[int, bool], Scores] = {}  # each form built once per subproblem
        for r, cfg in enumerate(configs):
            alphas = []
            for s, (p, y, w, cells) in enumerate(weighted):
                form = (s, reads_rows(cfg))
                if form not in scores:
                    scores[form] = scores_for(p, y, cfg, w, cells)
                alphas.append(alpha_of(scores[form], cfg, seed))
            out[g, r] = combined_alpha(unlabeled, alphas, subtypes[g], w_unl)
    return out


def resample_readings(
    resample: int,
    sizes: Sequence[int],
    subtypes: Sequence[np.ndarray],
    readers: Sequence[str],
    config: PUConfig,
    seed: int,
    unlabeled_keys: np.ndarray,
    *arrays: np.ndarray,
) -> np.ndarray:
    """The readings of one bootstrap resample (one task of the interval's fan-out).

    Parameters
    ----------
    resample : int
        The resample's number (:func:`~pulsnar_dask.core.bootstrap.poisson_weights`).
    sizes : sequence of int
        Subproblems per group.
    subtypes, readers, config, seed
        As :func:`_readings`.
    unlabeled_keys : ndarray
        The unlabeled rows' :func:`~pulsnar_dask.core.bootstrap.resample_keys`, in the
        order every subproblem holds them.
    *arrays : ndarray
        Each subproblem's probabilities, labels, positives' keys and grid cells (counted
        once for every resample), group after group (flat, so that a Dask executor sends
        each array to a worker once for every resample).

    Returns
    -------
    ndarray of shape (n_groups, n_readers)
    """
    k = _PER_SUBPROBLEM
    each = list(zip(*(arrays[i::k] for i in range(k)), strict=True))
    bounds = np.cumsum([0, *sizes])
    groups = [each[a:b] for a, b in itertools.pairwise(bounds)]
    return _readings(groups, unlabeled_keys, subtypes, readers, config, seed, resample)


def _spread(resampled: np.ndarray) -> np.ndarray:
    """Standard deviation of each reading over the resamples that could read it (a
    resample that leaves a label without rows reads NaN); infinite where fewer than two
    could, so that the interval then spans [0, 1] rather than pretend to a spread."""
    finite = np.isfinite(resampled).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(resampled, axis=0, ddof=1)
    return np.where(finite >= 2, sd, np.inf)


def _in_turn(fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
    return [fn(*args) for args in calls]


def alpha_interval(
    groups: Mapping[str, Sequence[SubproblemResult]],
    config: PUConfig,
    seed: int = 0,
    alphas: Sequence[float] = (),
    map_resamples: Callable[[Callable[..., Any], Sequence[tuple]], list[Any]] | None = None,
) -> AlphaInterval:
    """Return the 95% interval of alpha from the collected probabilities.

    Parameters
    ----------
    groups : mapping of str to sequences of SubproblemResult
        One entry per labeling assumption computed, by name: ``"pulsnar"``, PULSNAR's
        cluster subproblems (alpha is their :func:`~pulsnar_dask.core.claims.combined_alpha`,
        the groups read once from the collected probabilities); ``"pulscar"``, PULSCAR's
        one subproblem. Every subproblem holds the same unlabeled rows (ascending ids).
    config : PUConfig
        The reading settings (``config.alpha_estimator`` is read beside
        ``INTERVAL_READERS``), ``config.claim_overlap`` and ``config.interval_resamples``,
        the bootstrap resamples.
    seed : int
        Seed of the resamples' weights (and of the readers).
    alphas : sequence of float
        Alpha of each iteration when there were several (the groups are the first
        iteration's): the 95% t-interval of their mean joins the span.
    map_resamples : callable or None
        ``map(fn, calls) -> [fn(*args) for args in calls]``, run where it can (an
        executor's ``map``: the resamples as tasks); ``None``: one after another here.
        A resample's weights come from the row ids, the seed and its number, so the
        result is the same either way.

    Returns
    -------
    AlphaInterval
    """
    n_resamples = config.interval_resamples
    if n_resamples < 2:
        raise ValueError(f"interval_resamples must be at least 2, got {n_resamples}")
    names, subs = list(groups), list(groups.values())
    first = subs[0][0]
    unlabeled_ids = first.row_ids[first.labels == 0]
    for s in (s for group in subs for s in group):
        if not np.array_equal(s.row_ids[s.labels == 0], unlabeled_ids):
            raise ValueError("every subproblem must hold the same unlabeled rows")
    readers = tuple(dict.fromkeys((config.alpha_estimator, *INTERVAL_READERS)))
    # Which clusters count as one subtype is read once, from the collected probabilities.
    subtypes = [group_subproblems(group, config.claim_overlap) for group in subs]
    held = [
        [
            (
                s.probabilities,
                s.labels,
                resample_keys(s.row_ids[s.labels == 1], seed),
                cell_of(s.probabilities).astype(_CELL_TYPE),
            )
            for s in group
        ]
        for group in subs
    ]
    unlabeled_keys = resample_keys(unlabeled_ids, seed)
    del unlabeled_ids
    point = _readings(held, unlabeled_keys, subtypes, readers, config, seed, None)
    arrays = [a for group in held for arrays_of_one in group for a in arrays_of_one]
    sizes = [len(group) for group in subs]
    calls = [
        (resample, sizes, subtypes, readers, config, seed, unlabeled_keys, *arrays)
        for resample in range(n_resamples)
    ]
    resampled = (map_resamples or _in_turn)(resample_readings, calls)
    sd = _spread(np.asarray(resampled))
    low, high = np.min(point - Z_95 * sd), np.max(point + Z_95 * sd)
    if len(alphas) > 1:
        _, mean_low, mean_high = mean_ci(np.asarray(alphas))
        low, high = min(low, mean_low), max(high, mean_high)
    readings = {
        f"{name} {reader}": (float(point[g, r]), float(sd[g, r]))
        for g, name in enumerate(names)
        for r, reader in enumerate(readers)
    }
    return AlphaInterval(float(np.clip(low, 0.0, 1.0)), float(np.clip(high, 0.0, 1.0)), readings)
