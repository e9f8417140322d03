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
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from pulsnar_dask.core.bootstrap import resample_keys, weights_of_keys
from pulsnar_dask.core.claims import Claim, claim_of, union_weight
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.grid import cell_of
from pulsnar_dask.core.map_reduce import (
    MapReduce,
    Piece,
    identity,
    in_memory,
    unlabeled_cells,
    unlabeled_ids,
)
from pulsnar_dask.core.score_counts import RowsToCount, Scores, ScoreVectors
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
    subtypes : dict
        ``"<assumption>"`` -> the subtype group of each of its subproblems
        (:func:`~pulsnar_dask.core.subproblem.group_subproblems`), as every reading took
        them.
    """

    low: float
    high: float
    readings: dict[str, tuple[float, float]]
    subtypes: dict[str, list[int]] = field(default_factory=dict)


# resamples counted in one pass over a partition's rows: at most 25, and at most
# _BATCH_COUNTS statistics (about 215 KB each) in one partition's result; one where a
# reader reads the rows themselves
_BATCH = 25
_BATCH_COUNTS = 75


def _label_weights(
    piece: Piece, seed: int
) -> Callable[[int | None], list[tuple[np.ndarray, np.ndarray] | None]]:
    """Each subproblem's weights in a resample, its unlabeled rows' and its positives'
    apart, in the rows' order (None: the rows as collected); the unlabeled rows' are drawn
    once, as every subproblem holds them, in the same order
    (:func:`~pulsnar_dask.core.map_reduce.unlabeled_ids`)."""
    unlabeled_keys = resample_keys(unlabeled_ids(piece), seed)
    positive_keys = [resample_keys(ids[y == 1], seed) for _, y, ids in piece]

    def weights(b: int | None) -> list[tuple[np.ndarray, np.ndarray] | None]:
        if b is None:
            return [None] * len(piece)
        w_unl = weights_of_keys(unlabeled_keys, b)
        return [(w_unl, weights_of_keys(keys, b)) for keys in positive_keys]

    return weights


def _row_weights(labels: np.ndarray, by_label: tuple[np.ndarray, np.ndarray] | None):
    """The weights of :func:`_label_weights` in the rows' order (None: None)."""
    if by_label is None:
        return None
    w = np.empty(labels.size, np.int64)
    w[labels == 0], w[labels == 1] = by_label
    return w


def piece_scores(
    piece: Piece, resamples: Sequence[int | None], forms: Sequence[PUConfig], seed: int
) -> list[list[list[Scores]]]:
    """One partition's :func:`~pulsnar_dask.core.subproblem.scores_for` of each resample
    (None: the rows as collected), subproblem and form (``forms``: configs whose readers
    read counts or rows), each row weighed as the resample weighs its id; the rows are
    made ready to count once (:class:`~pulsnar_dask.core.score_counts.RowsToCount`)."""
    weights = _label_weights(piece, seed)  # checks the unlabeled rows first
    cells = [cell_of(p) for p, _, _ in piece]
    counted = [
        RowsToCount(p, y, c) if not all(map(reads_rows, forms)) else None
        for (p, y, _), c in zip(piece, cells, strict=True)
    ]
    out = []
    for b in resamples:
        row = []
        for (p, y, ids), c, rows, w in zip(piece, cells, counted, weights(b), strict=True):
            row.append(
                [scores_for(p, y, form, _row_weights(y, w), c, ids) if reads_rows(form)
                 else rows.counts_by_label(*(w or (None, None)))
                 for form in forms]
            )  # fmt: skip
        out.append(row)
    return out


@dataclass(frozen=True)
class _Plan:
    """What the readings of one assumption's batch of resamples need besides the counts.

    Attributes
    ----------
    subtypes : ndarray
        The subtype group of each of the assumption's subproblems
        (:func:`~pulsnar_dask.core.subproblem.group_subproblems`).
    readers : tuple of str
    forms : list of PUConfig
        One config per form read (counts, rows).
    config : PUConfig
    seed : int
    """

    subtypes: np.ndarray
    readers: tuple[str, ...]
    forms: list[PUConfig]
    config: PUConfig
    seed: int

    def subtype_members(self) -> list[tuple[int, list[int]]]:
        """The subtype groups: (group, its subproblems' positions)."""
        return [
            (int(sg), np.flatnonzero(self.subtypes == sg).tolist())
            for sg in np.unique(self.subtypes)
        ]

    def form_of(self, reader: str) -> int:
        return [reads_rows(f) for f in self.forms].index(
            reads_rows(self.config.with_(alpha_estimator=reader))
        )


# (resample in the batch, reader, subtype group) -> the claims of its members
Claims = dict[tuple[int, int, int], list[Claim]]


@dataclass(frozen=True)
class _BatchReading:
    """A batch's alphas before the subtypes' claims are united.

    Attributes
    ----------
    alphas : ndarray of shape (n_resamples, n_subproblems, n_readers)
    readable : ndarray of bool of shape (n_resamples,)
        False where the resample left the unlabeled rows, or a subproblem's positives,
        without weight.
    unlabeled : ndarray of shape (n_resamples,)
        The unlabeled rows' total weight.
    claims : Claims
        The claims of subtype groups of several clusters.
    """

    alphas: np.ndarray
    readable: np.ndarray
    unlabeled: np.ndarray
    claims: Claims


def read_batch(scores: list[list[list[Scores]]], plan: _Plan) -> _BatchReading:
    """Each resample's alphas from its summed counts, and the claims to unite."""
    scores = [[[_in_one_order(form) for form in sub] for sub in row] for row in scores]
    n_b, n_s = len(scores), plan.subtypes.size
    alphas = np.full((n_b, n_s, len(plan.readers)), np.nan)
    unlabeled = np.array([row[0][0].count(0) for row in scores])
    # False where the resample left a label without rows
    readable = np.array(
        [
            u > 0 and all(sub[0].count(1) > 0 for sub in row)
            for u, row in zip(unlabeled, scores, strict=True)
        ]
    )
    claims: Claims = {}
    configs = [plan.config.with_(alpha_estimator=r) for r in plan.readers]
    for b in np.flatnonzero(readable):
        row = scores[b]
        for r, cfg in enumerate(configs):
            form = plan.form_of(cfg.alpha_estimator)
            for s in range(n_s):
                alphas[b, s, r] = alpha_of(row[s][form], cfg, plan.seed)
            for sg, subs in plan.subtype_members():
                if len(subs) > 1:
                    claims[int(b), r, sg] = [
                        claim_of(row[s][form].cell_weights(0), alphas[b, s, r]) for s in subs
                    ]
    return _BatchReading(alphas, readable, unlabeled, claims)


def _in_one_order(scores: Scores) -> Scores:
    """Rows (:class:`~pulsnar_dask.core.score_counts.ScoreVectors`) by id, whatever pieces
    they were summed from; counts as they are."""
    return scores.in_key_order() if isinstance(scores, ScoreVectors) else scores


def piece_unions(
    piece: Piece, resamples: Sequence[int | None], claims: Claims, plan: _Plan
) -> dict[tuple[int, int, int], float]:
    """One partition's weight of the unlabeled rows each subtype group's claims take
    together (:func:`~pulsnar_dask.core.claims.union_weight`)."""
    cells = unlabeled_cells(piece)
    keys = resample_keys(unlabeled_ids(piece), plan.seed)
    members = dict(plan.subtype_members())
    out = {}
    for b, b_claims in itertools.groupby(sorted(claims.items()), key=lambda kv: kv[0][0]):
        w = None if resamples[b] is None else weights_of_keys(keys, resamples[b])
        for (_, r, sg), member_claims in b_claims:
            out[b, r, sg] = union_weight([cells[s] for s in members[sg]], member_claims, w)
    return out


def even_batches(items: Sequence[Any], most: int) -> list[list[Any]]:
    """``items`` in order, in as few batches of at most ``most`` as they fit, but an even
    number of them where there are enough items, their sizes differing by at most one:
    the executor reads two batches at a time, each on a worker, and the slower of the
    two sets the pace (an odd last batch would be read alone)."""
    n_batches = max(min(2, len(items)), -(-len(items) // most))
    if n_batches % 2 and n_batches < len(items):
        n_batches += 1
    bounds = np.linspace(0, len(items), n_batches + 1).round().astype(int)
    return [list(items[a:b]) for a, b in itertools.pairwise(bounds)]


def _batch_readings(
    subproblems: Sequence[SubproblemResult],
    resamples: Sequence[int | None],
    plan: _Plan,
    map_reduce: MapReduce,
) -> np.ndarray:
    """Alpha per (resample, reader) of one assumption: its subproblems' readings of each
    resample, combined as configured (NaN where a resample cannot be read)."""
    most = max(1, min(_BATCH, _BATCH_COUNTS // (len(subproblems) * len(plan.forms))))
    if any(map(reads_rows, plan.forms)):
        most = 1  # a reading of the rows holds all of them: one resample at a time
    batches = even_batches(resamples, most)
    pieces = [s.pieces for s in subproblems]
    read = map_reduce(
        piece_scores,
        partial(read_batch, plan=plan),
        pieces,
        [(batch, plan.forms, plan.seed) for batch in batches],
    )
    unions = [{}] * len(batches)
    if any(r.claims for r in read):
        unions = map_reduce(
            piece_unions,
            identity,
            pieces,
            [(batch, r.claims, plan) for batch, r in zip(batches, read, strict=True)],
        )
    out = []
    for reading, united in zip(read, unions, strict=True):
        for b in range(len(reading.unlabeled)):
            values = np.full(len(plan.readers), np.nan)
            if reading.readable[b]:
                for r in range(len(plan.readers)):
                    values[r] = sum(
                        reading.alphas[b, subs[0], r]
                        if len(subs) == 1
                        else united[b, r, sg] / reading.unlabeled[b]
                        for sg, subs in plan.subtype_members()
                    )
            out.append(values)
    return np.asarray(out)


def _spread(resampled: np.ndarray) -> np.ndarray:
    """Standard deviation of each reading over the resamples that could read it (a
    resample that leaves a label without rows reads NaN); infinite where fewer than two
    could, so that the interval then spans [0, 1] rather than pretend to a spread."""
    finite = np.isfinite(resampled).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(resampled, axis=0, ddof=1)
    return np.where(finite >= 2, sd, np.inf)


def alpha_interval(
    groups: Mapping[str, Sequence[SubproblemResult]],
    config: PUConfig,
    seed: int = 0,
    alphas: Sequence[float] = (),
    map_reduce: MapReduce | None = None,
) -> AlphaInterval:
    """Return the 95% interval of alpha from the collected probabilities.

    Parameters
    ----------
    groups : mapping of str to sequences of SubproblemResult
        One entry per labeling assumption computed, by name: ``"pulsnar"``, PULSNAR's
        cluster subproblems (alpha is their :func:`~pulsnar_dask.core.claims.combined_alpha`,
        the groups read once from the collected probabilities); ``"pulscar"``, PULSCAR's
        one subproblem. The subproblems of an assumption hold the same unlabeled rows
        (ascending ids); another assumption's may be a sample of them (auto's clusters,
        ``max_reading_rows``): a row weighs the same in a resample wherever it is held.
    config : PUConfig
        The reading settings (``config.alpha_estimator`` is read beside
        ``INTERVAL_READERS``), ``config.claim_overlap`` and ``config.interval_resamples``,
        the bootstrap resamples.
    seed : int
        Seed of the resamples' weights (and of the readers).
    alphas : sequence of float
        Alpha of each iteration when there were several (the groups are the first
        iteration's): the 95% t-interval of their mean joins the span.
    map_reduce : callable or None
        :data:`~pulsnar_dask.core.map_reduce.MapReduce`: each partition's rows counted
        where they are (an executor's ``map_reduce``); ``None``:
        :func:`~pulsnar_dask.core.map_reduce.in_memory`, on pieces held here. A
        resample's weights come from the row ids, the seed and its number, and counts
        add up, so the result is the same either way.

    Returns
    -------
    AlphaInterval
    """
    n_resamples = config.interval_resamples
    if n_resamples < 2:
        raise ValueError(f"interval_resamples must be at least 2, got {n_resamples}")
    names, subs = list(groups), list(groups.values())
    map_reduce = map_reduce or in_memory
    if any(len({s.counts.count(0) for s in group}) > 1 for group in subs):  # else found counting
        raise ValueError("every subproblem of an assumption must hold the same unlabeled rows")
    readers = tuple(dict.fromkeys((config.alpha_estimator, *INTERVAL_READERS)))
    configs = [config.with_(alpha_estimator=r) for r in readers]
    forms = list({reads_rows(c): c for c in configs}.values())
    # which clusters count as one subtype is read once, from the collected probabilities
    subtypes = [group_subproblems(group, config.claim_overlap, map_reduce) for group in subs]
    # (resample, assumption, reader)
    read = np.stack(
        [
            _batch_readings(
                group,
                [None, *range(n_resamples)],
                _Plan(grouped, readers, forms, config, seed),
                map_reduce,
            )
            for group, grouped in zip(subs, subtypes, strict=True)
        ],
        axis=1,
    )
    point, resampled = read[0], read[1:]
    sd = _spread(resampled)
    low, high = np.min(point - Z_95 * sd), np.max(point + Z_95 * sd)
    if len(alphas) > 1:
        _, mean_low, mean_high = mean_ci(np.asarray(alphas))
        low, high = min(low, mean_low), max(high, mean_high)
    readings = {
        f"{name} {reader}": (float(point[g, r]), float(sd[g, r]))
        for g, name in enumerate(names)
        for r, reader in enumerate(readers)
    }
    return AlphaInterval(
        float(np.clip(low, 0.0, 1.0)),
        float(np.clip(high, 0.0, 1.0)),
        readings,
        {name: grouped.tolist() for name, grouped in zip(names, subtypes, strict=True)},
    )
