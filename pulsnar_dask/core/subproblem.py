"""One PULSCAR subproblem on in-memory arrays: out-of-fold XGBoost probabilities,
alpha read from them, calibration with that alpha, and the retrain on recovered
labels."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pulsnar_dask.core.alpha import (
    RATIO_READERS,
    ROW_READERS,
    AlphaEstimate,
    check_scores,
    estimate_alpha,
    read_scores,
)
from pulsnar_dask.core.calibration import fit_map_on_cells, flip_shares
from pulsnar_dask.core.claims import (
    Claim,
    claim_of,
    claim_overlaps,
    group_sum,
    overlap_weights,
    subtype_groups,
    union_weight,
)
from pulsnar_dask.core.combine import Calibration, piece_calibration_sums, piece_flip_members
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.folds import NO_COPIES, CopyGroups, assign_folds, training_subsample
from pulsnar_dask.core.map_reduce import (
    MapReduce,
    Piece,
    Tally,
    identity,
    in_memory,
    tally_of,
    unlabeled_cells,
)
from pulsnar_dask.core.score_counts import ScoreCounts, Scores, ScoreVectors
from pulsnar_dask.core.scoring import (
    booster_params,
    out_of_fold_probabilities,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SubproblemResult:
    """Out-of-fold probabilities and alpha of one PULSCAR problem.

    Attributes
    ----------
    counts : ScoreCounts
        Statistics of its rows' probabilities, each label apart: what alpha, the AUC and
        the claims are read from.
    positive_probabilities : ndarray
        Its labeled positives' probabilities, by ascending id.
    estimate : AlphaEstimate
    features : tuple of str
        The columns the fold models were trained on (empty where not recorded).
    models : tuple of bytes
        The fold models as XGBoost JSON (empty where not recorded).
    pieces : tuple
        Its rows where the executor holds them, partition by partition
        (:mod:`pulsnar_dask.core.map_reduce`): in process one piece of arrays, on a
        cluster each partition's future; empty once released.
    row_ids, labels, probabilities : ndarray or None
        The rows themselves, by ascending id, where they are held in this process (the
        in-process executor, the estimators); None where they stay on a cluster.
    """

    counts: ScoreCounts
    positive_probabilities: np.ndarray
    estimate: AlphaEstimate
    features: tuple[str, ...] = ()
    models: tuple[bytes, ...] = ()
    pieces: tuple = ()
    row_ids: np.ndarray | None = None
    labels: np.ndarray | None = None
    probabilities: np.ndarray | None = None

    @property
    def alpha(self) -> float:
        return self.estimate.alpha

    @property
    def n_positive(self) -> int:
        """Labeled positives in the subproblem (the cluster's size for PULSNAR)."""
        return int(self.positive_probabilities.size)

    @cached_property
    def pu_auc(self) -> float:
        """ROC AUC of the probabilities for labeled positives against unlabeled rows, read
        on the counts' grid (:meth:`~pulsnar_dask.core.score_counts.ScoreCounts.auc`): how
        well the classifier separates them (0.5: not at all)."""
        return self.counts.auc()


def check_subproblem(labels: np.ndarray, config: PUConfig) -> None:
    """Refuse a subproblem with fewer positives or unlabeled rows than folds."""
    n_pos = int(np.sum(labels == 1))
    check_counts(n_pos, int(np.size(labels)) - n_pos, config)


def check_counts(n_pos: int, n_unl: int, config: PUConfig) -> None:
    """Refuse a subproblem of ``n_pos`` positives and ``n_unl`` unlabeled rows, where
    either is fewer than the folds."""
    if n_pos < config.n_folds or n_unl < config.n_folds:
        raise ValueError(
            f"{n_pos} positives and {n_unl} unlabeled rows: each needs at least "
            f"n_folds={config.n_folds}"
        )


def _reading(config: PUConfig, seed: int) -> dict:
    """The reading settings of ``config``, as :func:`~pulsnar_dask.core.alpha.read_scores`
    takes them."""
    return {
        "bin_method": config.bin_method,
        "region": config.alpha_region,
        "bandwidth_search": config.bandwidth_search,
        "bandwidth_error": config.bandwidth_error,
        "bandwidth_bounds": config.bandwidth_bounds,
        "kernel_normalization": config.kernel_normalization,
        "random_state": seed,
        "estimator": config.alpha_estimator,
        "tail_fraction": config.tail_fraction,
    }


def read_alpha(proba: np.ndarray, labels: np.ndarray, config: PUConfig, seed: int) -> AlphaEstimate:
    """Read alpha from out-of-fold probabilities with the settings of ``config``."""
    return estimate_alpha(proba, labels, exact=config.exact_density, **_reading(config, seed))


def reads_rows(config: PUConfig) -> bool:
    """Whether ``config``'s reader reads the probabilities themselves (exact densities,
    or a reader of ``ROW_READERS``) rather than their counts."""
    return config.exact_density or config.alpha_estimator in ROW_READERS


def scores_for(
    proba: np.ndarray,
    labels: np.ndarray,
    config: PUConfig,
    weights: np.ndarray | None = None,
    cells: np.ndarray | None = None,
    keys: np.ndarray | None = None,
) -> Scores:
    """What ``config``'s reader reads of a subproblem: its counts, or its rows
    (:func:`reads_rows`), each row counted as often as its weight (None: once); ``cells``:
    the rows' grid cells, where the caller keeps them; ``keys``: the rows' ids, kept with
    the rows (:class:`~pulsnar_dask.core.score_counts.ScoreVectors`)."""
    if not reads_rows(config):
        return ScoreCounts.from_scores(proba, labels, weights, cells)
    if weights is not None:
        proba, labels = np.repeat(proba, weights), np.repeat(labels, weights)
        keys = None if keys is None else np.repeat(keys, weights)
    return ScoreVectors(proba, labels, keys)


def alpha_of(scores: Scores, config: PUConfig, seed: int) -> float:
    """Alpha alone, as :func:`read_alpha` reads it, without the densities kept for plots
    where the reader does not need them (``tail``, ``bbe``, ``valley``): what resamples
    need."""
    reader = RATIO_READERS.get(config.alpha_estimator)
    if reader is None:
        return read_scores(scores, **_reading(config, seed)).alpha
    return reader(scores, config.tail_fraction, seed).alpha


def alpha_value(
    proba: np.ndarray,
    labels: np.ndarray,
    config: PUConfig,
    seed: int,
    weights: np.ndarray | None = None,
) -> float:
    """:func:`alpha_of` the subproblem's :func:`scores_for`."""
    return alpha_of(scores_for(proba, labels, config, weights), config, seed)


def subproblem_of(
    tally: Tally,
    config: PUConfig,
    seed: int,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    **kept: Any,
) -> SubproblemResult:
    """Read alpha from a scoring's :class:`~pulsnar_dask.core.map_reduce.Tally`.

    Parameters
    ----------
    tally : Tally
    config : PUConfig
    seed : int
    rows : (row_ids, labels, probabilities) or None
        The rows themselves, by ascending id: needed where the reader reads rows
        (:func:`reads_rows`), and kept on the result where given.
    **kept
        The result's ``features``, ``models`` and ``pieces``.

    Raises
    ------
    ValueError
        Where the reader reads rows and none are given.
    """
    vectors = None
    if rows is not None:
        vectors = ScoreVectors(rows[2], rows[1])
    elif reads_rows(config):
        raise ValueError(f"the {config.alpha_estimator!r} reading needs the rows themselves")
    scores = vectors if config.exact_density else tally.counts
    estimate = read_scores(scores, **_reading(config, seed), rows=vectors)
    ids, labels, proba = rows if rows is not None else (None, None, None)
    return SubproblemResult(
        tally.counts, tally.positive_probabilities, estimate, **kept,
        row_ids=ids, labels=labels, probabilities=proba,
    )  # fmt: skip


def estimate_subproblem(
    row_ids: np.ndarray, labels: np.ndarray, proba: np.ndarray, config: PUConfig, seed: int
) -> SubproblemResult:
    """Estimate alpha from a subproblem's out-of-fold probabilities, its rows held here.

    Raises
    ------
    ValueError
        For probabilities outside [0, 1], labels not 0/1, or a label without rows.
    """
    proba, labels = check_scores(proba, labels)
    rows = (np.asarray(row_ids), labels, proba)
    return subproblem_of(
        tally_of(proba, labels, row_ids), config, seed, rows, pieces=((proba, labels, rows[0]),)
    )


def canonical_subproblem(
    X: np.ndarray,
    labels: np.ndarray,
    row_ids: np.ndarray,
    config: PUConfig,
    seed: int,
    copies: CopyGroups = NO_COPIES,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Put a subproblem's rows in canonical order (by row id), check it, and assign folds.

    Returns
    -------
    (X, labels, row_ids, folds, trainable)
        Sorted by row id; ``labels`` as int8, ``folds`` from :func:`assign_folds` (each
        group of ``copies`` in one fold), ``trainable`` from :func:`training_subsample`
        (``None``: every row).
    """
    order = np.argsort(row_ids, kind="stable")
    labels = np.asarray(labels)[order].astype(np.int8)
    check_subproblem(labels, config)
    row_ids = np.asarray(row_ids)[order]
    return (
        X[order],
        labels,
        row_ids,
        assign_folds(row_ids, labels, config.n_folds, seed, copies),
        training_subsample(
            row_ids, labels, config.max_unlabeled_ratio, config.max_train_rows, seed
        ),
    )


def cross_validated_scores(
    X: np.ndarray,
    labels: np.ndarray,
    row_ids: np.ndarray,
    config: PUConfig,
    seed: int,
    feature_types: list[str] | None = None,
    copies: CopyGroups = NO_COPIES,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[bytes]]:
    """Score every row with cross-validated XGBoost, in canonical order (by row id), so
    the result does not depend on the order the rows arrive in.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    labels : ndarray of shape (n,)
        1 positive, 0 unlabeled.
    row_ids : ndarray of shape (n,)
        Unique row ids.
    config : PUConfig
    seed : int
        Seed of the folds, the unlabeled subsample and XGBoost.
    feature_types : list of str or None
        XGBoost's type of each column (:func:`pulsnar_dask.core.scoring.matrix`).
    copies : CopyGroups
        Rows whose features are copies of one another's, each group kept in one fold.

    Returns
    -------
    (row_ids, labels, probabilities, models)
        By ascending row id; the probabilities are out-of-fold; ``models``: the fold
        models as XGBoost JSON.
    """
    X, labels, row_ids, folds, trainable = canonical_subproblem(
        X, labels, row_ids, config, seed, copies
    )
    params = booster_params(config.xgb_params, seed, config.n_threads)
    proba, models = out_of_fold_probabilities(
        X, labels, folds, config.n_folds, params, config.n_rounds, trainable, feature_types
    )
    return row_ids, labels, proba, models


def run_subproblem(
    X: np.ndarray, labels: np.ndarray, row_ids: np.ndarray, config: PUConfig, seed: int
) -> SubproblemResult:
    """One PULSCAR problem: :func:`cross_validated_scores` and alpha read from them."""
    row_ids, labels, proba, _ = cross_validated_scores(X, labels, row_ids, config, seed)
    return estimate_subproblem(row_ids, labels, proba, config, seed)


def subproblems_calibration(
    subproblems: Sequence[SubproblemResult],
    config: PUConfig,
    map_reduce: MapReduce = in_memory,
    alphas: Sequence[float] | None = None,
) -> Calibration:
    """The :class:`~pulsnar_dask.core.combine.Calibration` of subproblems that hold the
    same unlabeled rows, at their alphas (or at ``alphas``), by ``config.calibration_data`` and
    ``config.calibration_method``, fitted on counts summed over the rows' pieces by
    ``map_reduce`` (two passes: the unlabeled rows in Algorithm 3's bins, then the sums
    the maps are fitted on)."""
    pieces = [r.pieces for r in subproblems]
    (members,) = map_reduce(piece_flip_members, identity, pieces, [()])
    alphas = [r.alpha for r in subproblems] if alphas is None else alphas
    shares = [
        flip_shares(r.positive_probabilities, m, a)
        for r, m, a in zip(subproblems, members, alphas, strict=True)
    ]
    per_subproblem = config.calibration_data == "U"
    (sums,) = map_reduce(piece_calibration_sums, identity, pieces, [(shares, per_subproblem)])
    method = config.calibration_method
    if per_subproblem:
        return Calibration(None, [fit_map_on_cells(s, method) for s in sums])
    return Calibration(fit_map_on_cells(sums, method), None)


def piece_overlaps(piece: Piece, claims: Sequence[Claim]) -> np.ndarray:
    """One partition's :func:`~pulsnar_dask.core.claims.overlap_weights` of the
    subproblems' claims."""
    return overlap_weights(unlabeled_cells(piece), claims)


def piece_group_unions(
    piece: Piece, united: Sequence[tuple[Sequence[int], Sequence[Claim]]]
) -> np.ndarray:
    """One partition's :func:`~pulsnar_dask.core.claims.union_weight` of each of
    ``united``: (subproblems, their claims)."""
    cells = unlabeled_cells(piece)
    return np.array([union_weight([cells[s] for s in subs], claims) for subs, claims in united])


def subproblem_claims(
    subproblems: Sequence[SubproblemResult], alphas: Sequence[float] | None = None
) -> list[Claim]:
    """Each subproblem's :func:`~pulsnar_dask.core.claims.claim_of` at its alpha (or at
    ``alphas``), from its counts."""
    alphas = [r.alpha for r in subproblems] if alphas is None else alphas
    return [claim_of(r.counts.cell_weights(0), a) for r, a in zip(subproblems, alphas, strict=True)]


def group_subproblems(
    subproblems: Sequence[SubproblemResult], threshold: float, map_reduce: MapReduce = in_memory
) -> np.ndarray:
    """:func:`~pulsnar_dask.core.claims.subtype_groups` of subproblems that hold the same
    unlabeled rows, from the overlaps of their claims, summed over the rows' pieces by
    ``map_reduce`` (:mod:`pulsnar_dask.core.map_reduce`)."""
    if len(subproblems) == 1:
        return np.zeros(1, dtype=np.int64)
    claims = subproblem_claims(subproblems)
    (shared,) = map_reduce(piece_overlaps, identity, [r.pieces for r in subproblems], [(claims,)])
    return subtype_groups(claim_overlaps(shared), threshold)


def subproblems_alpha(
    subproblems: Sequence[SubproblemResult], threshold: float, map_reduce: MapReduce = in_memory
) -> tuple[float, np.ndarray]:
    """Alpha of subproblems that hold the same unlabeled rows, and their subtype groups
    (:func:`group_subproblems` at ``threshold``): summed over the groups, united within a
    group (:func:`~pulsnar_dask.core.claims.group_sum`), the unions summed over the
    rows' pieces by ``map_reduce``."""
    if len(subproblems) == 1:
        return float(subproblems[0].alpha), np.zeros(1, dtype=np.int64)
    groups = group_subproblems(subproblems, threshold, map_reduce)
    claims = subproblem_claims(subproblems)
    united = [
        (members, [claims[s] for s in members])
        for members in (np.flatnonzero(groups == g).tolist() for g in np.unique(groups))
        if len(members) > 1
    ]
    weights = {}
    if united:
        (unions,) = map_reduce(
            piece_group_unions, identity, [r.pieces for r in subproblems], [(united,)]
        )
        weights = {tuple(members): w for (members, _), w in zip(united, unions, strict=True)}
    total = subproblems[0].counts.count(0)
    alphas = [r.alpha for r in subproblems]
    return group_sum(alphas, groups, lambda members: weights[tuple(members)] / total), groups
