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
iterations), clipped to [0, 1]. Measured on every benchmark family in
benchmarks/results/README.md (items 18 and 19): one reading's bootstrap alone covered the
true alpha in 14-95% of the runs per family, this span in 90-100% on every family but
one whose clustering misses the subtypes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


def _readings(
    groups: Sequence[Sequence[SubproblemResult]],
    subtypes: Sequence[np.ndarray],
    readers: Sequence[str],
    config: PUConfig,
    seed: int,
    picks: Sequence[tuple[np.ndarray, list[np.ndarray]]] | None,
) -> np.ndarray:
    """Alpha per (group, reader), the subproblems combined as configured, on the rows or
    on one resample of them."""
    out = np.empty((len(groups), len(readers)))
    for g, group in enumerate(groups):
        resampled = []
        for s, sub in enumerate(group):
            p, y = sub.probabilities, sub.labels
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


def alpha_interval(
    groups: Mapping[str, Sequence[SubproblemResult]],
    config: PUConfig,
    seed: int = 0,
    alphas: Sequence[float] = (),
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

    Returns
    -------
    AlphaInterval
    """
    n_resamples = config.interval_resamples
    if n_resamples < 2:
        raise ValueError(f"interval_resamples must be at least 2, got {n_resamples}")
    names, subs = list(groups), list(groups.values())
    unlabeled_ids = [s.row_ids[s.labels == 0] for group in subs for s in group]
    if any(not np.array_equal(ids, unlabeled_ids[0]) for ids in unlabeled_ids[1:]):
        raise ValueError("every subproblem must hold the same unlabeled rows")
    n_u = unlabeled_ids[0].size
    readers = list(dict.fromkeys((config.alpha_estimator, *INTERVAL_READERS)))
    # Which clusters count as one subtype is read once, from the collected probabilities.
    subtypes = [group_subproblems(group, config.claim_overlap) for group in subs]
    point = _readings(subs, subtypes, readers, config, seed, None)
    # The unlabeled rows are drawn from one stream, each group's positives from its own:
    # adding an assumption leaves the other groups' resamples, and readings, as they were.
    sequence = np.random.SeedSequence(seed)
    rng_unlabeled, *rng_groups = (np.random.default_rng(s) for s in sequence.spawn(1 + len(subs)))
    resampled = []
    for _ in range(n_resamples):
        unlabeled = rng_unlabeled.integers(0, n_u, n_u)
        picks = [
            (unlabeled, [rng.integers(0, s.n_positive, s.n_positive) for s in group])
            for group, rng in zip(subs, rng_groups, strict=True)
        ]
        resampled.append(_readings(subs, subtypes, readers, config, seed, picks))
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
