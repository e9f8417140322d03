"""The default 95% interval of alpha: how far the collected probabilities let it move.

Three things the probabilities cannot settle by themselves move alpha, and the interval
spans all three:

1. sampling: which rows happened to be collected. A bootstrap of the out-of-fold
   probabilities (``PUConfig.interval_resamples`` resamples; the unlabeled rows drawn
   once per resample and shared by every subproblem, as they are in the data; each
   subproblem's labeled positives drawn within it) gives each reading a standard
   deviation ``sd``;
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.stats import mean_ci
from pulsnar_dask.core.subproblem import (
    SubproblemResult,
    alpha_value,
    combined_alpha,
    group_subproblems,
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


Pairs = Sequence[Sequence[tuple[np.ndarray, np.ndarray]]]


def _readings(
    groups: Pairs,
    subtypes: Sequence[np.ndarray],
    readers: Sequence[str],
    config: PUConfig,
    seed: int,
    picks: Sequence[tuple[np.ndarray, list[np.ndarray]]] | None,
) -> np.ndarray:
    """Alpha per (group, reader), the subproblems' ``(probabilities, labels)`` combined as
    configured, on the rows or on one resample of them."""
    out = np.empty((len(groups), len(readers)))
    for g, group in enumerate(groups):
        resampled = []
        for s, (p, y) in enumerate(group):
            unl = p[y == 0]
            if picks is not None:
                unlabeled, positives = picks[g]
                pos = p[y == 1][positives[s]]
                unl = unl[unlabeled]
                p = np.concatenate([pos, unl])
                y = np.concatenate([np.ones(pos.size, np.int8), np.zeros(unl.size, np.int8)])
            resampled.append((p, y, unl))
        for r, reader in enumerate(readers):
            cfg = config.with_(alpha_estimator=reader)
            alphas = [alpha_value(p, y, cfg, seed) for p, y, _ in resampled]
            out[g, r] = combined_alpha([unl for *_, unl in resampled], alphas, subtypes[g])
    return out


def resample_readings(
    resample: np.random.SeedSequence,
    sizes: Sequence[int],
    subtypes: Sequence[np.ndarray],
    readers: Sequence[str],
    config: PUConfig,
    seed: int,
    *arrays: np.ndarray,
) -> np.ndarray:
    """The readings of one bootstrap resample (one task of the interval's fan-out).

    The unlabeled rows are drawn from the resample's first stream, shared by every
    subproblem as they are in the data; each group's positives from a stream of its own,
    so adding an assumption leaves the other groups' readings as they were.

    Parameters
    ----------
    resample : numpy.random.SeedSequence
        The resample's seed.
    sizes : sequence of int
        Subproblems per group.
    subtypes, readers, config, seed
        As :func:`_readings`.
    *arrays : ndarray
        Each subproblem's probabilities and labels, group after group (flat, so that a
        Dask executor sends each array to a worker once for every resample).

    Returns
    -------
    ndarray of shape (n_groups, n_readers)
    """
    pairs = list(zip(arrays[::2], arrays[1::2], strict=True))
    bounds = np.cumsum([0, *sizes])
    groups = [pairs[a:b] for a, b in itertools.pairwise(bounds)]
    rng_unlabeled, *rng_groups = (np.random.default_rng(s) for s in resample.spawn(1 + len(sizes)))
    n_u = int(np.sum(groups[0][0][1] == 0))
    unlabeled = rng_unlabeled.integers(0, n_u, n_u)
    picks = []
    for group, rng in zip(groups, rng_groups, strict=True):
        n_positive = [int(np.sum(y == 1)) for _, y in group]
        picks.append((unlabeled, [rng.integers(0, n, n) for n in n_positive]))
    return _readings(groups, subtypes, readers, config, seed, picks)


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
        cluster subproblems (alpha is their :func:`~pulsnar_dask.core.subproblem.combined_alpha`,
        the groups read once from the collected probabilities); ``"pulscar"``, PULSCAR's
        one subproblem. Every subproblem holds the same unlabeled rows (ascending ids).
    config : PUConfig
        The reading settings (``config.alpha_estimator`` is read beside
        ``INTERVAL_READERS``), ``config.claim_overlap`` and ``config.interval_resamples``,
        the bootstrap resamples.
    seed : int
        Seed of the resamples.
    alphas : sequence of float
        Alpha of each iteration when there were several (the groups are the first
        iteration's): the 95% t-interval of their mean joins the span.
    map_resamples : callable or None
        ``map(fn, calls) -> [fn(*args) for args in calls]``, run where it can (an
        executor's ``map``: the resamples as tasks); ``None``: one after another here.
        Each resample has its own seed, so the result is the same either way.

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
    for s in (s for group in subs for s in group):  # one copy of the ids at a time
        if not np.array_equal(s.row_ids[s.labels == 0], unlabeled_ids):
            raise ValueError("every subproblem must hold the same unlabeled rows")
    del unlabeled_ids
    readers = tuple(dict.fromkeys((config.alpha_estimator, *INTERVAL_READERS)))
    # Which clusters count as one subtype is read once, from the collected probabilities.
    subtypes = [group_subproblems(group, config.claim_overlap) for group in subs]
    pairs = [[(s.probabilities, s.labels) for s in group] for group in subs]
    point = _readings(pairs, subtypes, readers, config, seed, None)
    arrays = [a for group in pairs for pair in group for a in pair]
    sizes = [len(group) for group in subs]
    calls = [
        (resample, sizes, subtypes, readers, config, seed, *arrays)
        for resample in np.random.SeedSequence(seed).spawn(n_resamples)
    ]
    resampled = (map_resamples or _in_turn)(resample_readings, calls)
    sd = np.std(resampled, axis=0, ddof=1)
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
