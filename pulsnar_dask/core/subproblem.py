"""One PULSCAR subproblem on in-memory arrays: out-of-fold XGBoost probabilities,
alpha read from them, calibration with that alpha, and the retrain on recovered
labels."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pulsnar_dask.core.alpha import (
    RATIO_READERS,
    ROW_READERS,
    AlphaEstimate,
    estimate_alpha,
    read_scores,
)
from pulsnar_dask.core.calibration import (
    CalibrationMap,
    calibrate,
    fit_calibration_map,
    relabeled,
)
from pulsnar_dask.core.claims import (
    claim_overlaps,
    claimed_flags,
    claims_of,
    combined_alpha,
    overlap_weights,
    subtype_groups,
)
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.folds import NO_COPIES, CopyGroups, assign_folds, training_subsample
from pulsnar_dask.core.grid import cell_of
from pulsnar_dask.core.metrics import roc_auc
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
    row_ids : ndarray of shape (n,)
        Row ids, in canonical (ascending) order.
    labels : ndarray of int8 of shape (n,)
    probabilities : ndarray of shape (n,)
        Out-of-fold probabilities, aligned with ``row_ids``.
    estimate : AlphaEstimate
    features : tuple of str
        The columns the fold models were trained on (empty where not recorded).
    models : tuple of bytes
        The fold models as XGBoost JSON (empty where not recorded).
    pieces : tuple
        Where an executor holds the same rows partition by partition, for the steps it
        runs there (the Dask executor: each partition's future of (probabilities,
        labels, ids)); empty in process.
    """

    row_ids: np.ndarray
    labels: np.ndarray
    probabilities: np.ndarray
    estimate: AlphaEstimate
    features: tuple[str, ...] = ()
    models: tuple[bytes, ...] = ()
    pieces: tuple = ()

    @property
    def alpha(self) -> float:
        return self.estimate.alpha

    @property
    def n_positive(self) -> int:
        """Labeled positives in the subproblem (the cluster's size for PULSNAR)."""
        return int(np.sum(self.labels == 1))

    @cached_property
    def pu_auc(self) -> float:
        """ROC AUC of the probabilities for labeled positives against unlabeled rows: how
        well the classifier separates them (0.5: not at all); computed once, as the
        checks, the summary and the report each read it."""
        return roc_auc(self.labels == 1, self.probabilities)


def check_subproblem(labels: np.ndarray, config: PUConfig) -> None:
    """Refuse a subproblem with fewer positives or unlabeled rows than folds."""
    n_pos = int(np.sum(labels == 1))
    n_unl = int(np.size(labels)) - n_pos
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


def estimate_subproblem(
    row_ids: np.ndarray, labels: np.ndarray, proba: np.ndarray, config: PUConfig, seed: int
) -> SubproblemResult:
    """Estimate alpha from a subproblem's out-of-fold probabilities."""
    return SubproblemResult(row_ids, labels, proba, read_alpha(proba, labels, config, seed))


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


def calibrate_subproblem(result: SubproblemResult, config: PUConfig, seed: int) -> np.ndarray:
    """Return calibrated probabilities of a subproblem's rows (Algorithm 3)."""
    return calibrate(
        result.probabilities,
        result.labels,
        result.alpha,
        method=config.calibration_method,
        data=config.calibration_data,
        random_state=seed,
    )


def calibration_maps(
    row_ids: np.ndarray, subproblems: list[SubproblemResult], config: PUConfig, seed: int
) -> tuple[CalibrationMap | None, list[CalibrationMap] | None]:
    """The calibration of one or more subproblems (Algorithm 3), as maps.

    ``U`` data: one map per subproblem, fitted on its unlabeled rows with its alpha; the
    calibrated probabilities are then combined as ``1 - prod_c (1 - p_c)`` (the paper).
    ``PU`` data: each subproblem flips its unlabeled rows with its alpha, and one map
    regresses the union of the new labels on the combined probabilities over all rows.
    For a single subproblem the two readings coincide; for PULSNAR's clusters the
    per-cluster P+U fits rate labeled positives against their own cluster's small share
    of the rows, and the single fit halves the expected calibration error on the paper's
    SNAR data (docs/decisions/).

    Returns
    -------
    (combined, per_subproblem)
        ``PU``: ``(map, None)``, the map applies to the combined probability; ``U``:
        ``(None, maps)``, one per subproblem.
    """
    method = config.calibration_method
    if config.calibration_data == "U":
        return None, [
            fit_calibration_map(
                r.probabilities,
                relabeled(r.probabilities, r.labels, r.alpha, random_state=seed),
                r.labels == 0,
                method,
            )
            for r in subproblems
        ]
    raw = combine_on_rows(row_ids, [(r.row_ids, r.probabilities) for r in subproblems])
    new_labels = combine_on_rows(
        row_ids,
        [
            (r.row_ids, relabeled(r.probabilities, r.labels, r.alpha, random_state=seed))
            for r in subproblems
        ],
    )  # 1 - prod(1 - l) of 0/1 labels: the union
    seen = np.isfinite(raw)
    return fit_calibration_map(raw[seen], new_labels[seen], None, method), None


def calibrated_on_rows(
    row_ids: np.ndarray,
    subproblems: list[SubproblemResult],
    config: PUConfig,
    seed: int,
    maps: tuple[CalibrationMap | None, list[CalibrationMap] | None] | None = None,
) -> np.ndarray:
    """Calibrated probabilities of every row from one or more subproblems
    (:func:`calibration_maps` applied to their probabilities; ``maps``: those already
    fitted).

    Returns
    -------
    ndarray of shape (n,)
        Calibrated probabilities aligned with ``row_ids``; NaN for rows in no subproblem.
    """
    combined, per_subproblem = maps or calibration_maps(row_ids, subproblems, config, seed)
    if per_subproblem is not None:
        pairs = zip(subproblems, per_subproblem, strict=True)
        return combine_on_rows(row_ids, [(r.row_ids, m(r.probabilities)) for r, m in pairs])
    raw = combine_on_rows(row_ids, [(r.row_ids, r.probabilities) for r in subproblems])
    return np.where(np.isfinite(raw), combined(np.nan_to_num(raw)), np.nan)


def combine_on_rows(row_ids: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Combine per-subproblem probabilities onto all rows: ``1 - prod_c (1 - p_c)``.

    Parameters
    ----------
    row_ids : ndarray of shape (n,)
        The rows to report, in the order wanted.
    parts : list of (ids, probabilities)
        Each subproblem's row ids and probabilities.

    Returns
    -------
    ndarray of shape (n,)
        Combined probability; NaN for rows in no subproblem.
    """
    complement = np.ones(len(row_ids))
    seen = np.zeros(len(row_ids), dtype=bool)
    sorter = np.argsort(row_ids, kind="stable")
    for ids, proba in parts:
        idx = sorter[np.searchsorted(row_ids, ids, sorter=sorter)]
        complement[idx] *= 1.0 - proba
        seen[idx] = True
    out = 1.0 - complement
    out[~seen] = np.nan
    return out


def unlabeled_cells(subproblems: list[SubproblemResult]) -> list[np.ndarray]:
    """Each subproblem's grid cells (:func:`~pulsnar_dask.core.grid.cell_of`) of its
    unlabeled rows, which every subproblem holds in the same order."""
    return [cell_of(r.probabilities[r.labels == 0]) for r in subproblems]


def group_subproblems(subproblems: list[SubproblemResult], threshold: float) -> np.ndarray:
    """:func:`~pulsnar_dask.core.claims.subtype_groups` of subproblems that hold the same
    unlabeled rows, from the overlaps of their claims."""
    if len(subproblems) == 1:
        return np.zeros(1, dtype=np.int64)
    return _groups(unlabeled_cells(subproblems), [r.alpha for r in subproblems], threshold)


def _groups(cells: list[np.ndarray], alphas: list[float], threshold: float) -> np.ndarray:
    """:func:`~pulsnar_dask.core.claims.subtype_groups` of claims on the grid cells."""
    claims = claims_of(cells, alphas)
    return subtype_groups(claim_overlaps(overlap_weights(cells, claims)), threshold)


def subproblems_alpha(
    subproblems: list[SubproblemResult], threshold: float
) -> tuple[float, np.ndarray]:
    """Alpha of subproblems that hold the same unlabeled rows, and their subtype groups
    (:func:`group_subproblems` at ``threshold``, then
    :func:`~pulsnar_dask.core.claims.combined_alpha`)."""
    if len(subproblems) == 1:
        return float(subproblems[0].alpha), np.zeros(1, dtype=np.int64)
    cells = unlabeled_cells(subproblems)
    alphas = [r.alpha for r in subproblems]
    groups = _groups(cells, alphas, threshold)
    return combined_alpha(cells, alphas, groups), groups


def relabel_claimed(
    labels: np.ndarray,
    row_ids: np.ndarray,
    subproblems: list[SubproblemResult],
    alphas: list[float],
    seed: int,
) -> np.ndarray:
    """Relabel positive the unlabeled rows the subproblems claim (Algorithm 4).

    Each subproblem claims its ``round(alpha_c |U|)`` most probable unlabeled rows, ranked
    on the probability grid (:mod:`pulsnar_dask.core.claims`): every row above the claim's
    boundary cell, and in that cell the rows a hash of their id and ``seed`` picks, each
    with the claim's share as its chance (so the count there is that share of the cell's
    rows in expectation); every row one of them claims becomes positive. With one
    subproblem (PULSCAR) these are the rows it ranks highest. With PULSNAR's clusters each
    cluster's own ranking picks its share, which recovers the hidden positives better than
    one ranking of the combined probabilities.

    Parameters
    ----------
    labels : ndarray of shape (n,)
        0/1 labels, rows in ascending id order.
    row_ids : ndarray of shape (n,)
        The rows' ids, ascending.
    subproblems : list of SubproblemResult
        Each holds every unlabeled row, in ascending id order.
    alphas : list of float
        Each subproblem's alpha.
    seed : int

    Returns
    -------
    ndarray of int8
        New 0/1 labels.
    """
    y = np.asarray(labels).astype(np.int8).copy()
    unlabeled = np.flatnonzero(y == 0)
    cells = unlabeled_cells(subproblems)
    claimed = np.zeros(unlabeled.size, dtype=bool)
    for k, claim in zip(cells, claims_of(cells, alphas), strict=True):
        claimed |= claimed_flags(k, claim, row_ids[unlabeled], seed)
    y[unlabeled[claimed]] = 1
    return y
