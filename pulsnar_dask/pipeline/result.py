"""What a PU run produces, whichever executor ran it, and the one line that sums it up."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from pulsnar_dask.core.alpha import AlphaEstimate
from pulsnar_dask.core.combine import RowOutputs, piece_reliability, positions
from pulsnar_dask.core.interval import AlphaInterval
from pulsnar_dask.core.map_reduce import summed
from pulsnar_dask.core.model import PUModel
from pulsnar_dask.core.stats import mean_ci
from pulsnar_dask.core.subproblem import SubproblemResult
from pulsnar_dask.core.subtypes import Clustering
from pulsnar_dask.pipeline.executor import TableRows, Truth

# Below this labeled-vs-unlabeled AUC the run warns that alpha is poorly identified.
WEAK_PU_AUC = 0.6
# Below this AUC between labeled positives and the unlabeled negatives (implied by the
# subproblem over all positives at its alpha, :func:`implied_negative_auc`) the run warns
# that the classes overlap and alpha may be far too high; chosen leave-one-family-out
# (docs/decisions/2026-12-04-overlap-line-out-of-sample.md).
OVERLAP_AUC = 0.95
# At or above it in every subproblem, the run warns that a feature may record the label.
PERFECT_PU_AUC = 0.9999
# Wider than this (a fraction of the unlabeled rows) the 95% interval is too wide to act
# on, and the run warns that alpha is imprecise; chosen leave-one-family-out
# (docs/decisions/2026-12-06-wide-interval-line.md).
WIDE_INTERVAL = 0.15
INTERVAL_METHOD = (
    "bootstrap of the out-of-fold probabilities, kernel and tail readings (and the "
    "configured reader), under PULSCAR and PULSNAR's clusters where both were computed "
    "(see interval_readings); from 0 where the classes overlap (alpha_may_be_high)"
)


def clusters_alpha_read(evidence: Mapping[str, Any] | None) -> bool:
    """Whether auto's evidence (``method_evidence``, recorded by
    :func:`~pulsnar_dask.pipeline.method_choice.record_readings`) says it read the
    clusters' alpha rather than PULSCAR's; ``False`` for no evidence (a method asked for)."""
    return (evidence or {}).get("read") == "pulsnar"


def overlaps(negative_auc: float | None) -> bool:
    """Whether an implied AUC between labeled positives and unlabeled negatives is below
    ``OVERLAP_AUC`` (``None``, not checked, is not)."""
    return negative_auc is not None and negative_auc < OVERLAP_AUC


def too_wide(interval: AlphaInterval) -> bool:
    """Whether a 95% interval of alpha is wider than ``WIDE_INTERVAL``."""
    return interval.high - interval.low > WIDE_INTERVAL


@dataclass
class HeldRows:
    """A run's per-row outputs, each partition's kept where the executor computed it: in
    process, here; on a cluster, on the workers (until the result is dropped), where the
    predictions are written from.

    Attributes
    ----------
    parts : list
        Each partition's :class:`~pulsnar_dask.core.combine.RowOutputs`, or its future.
    retrained : list or None
        Each partition's rows of the retrain on recovered labels (probabilities, labels,
        ids), or their futures; None without a retrain.
    table : TableRows
        The table's rows: the order of the vectors :attr:`outputs`,
        :attr:`true_labels` and :attr:`improved_probability` give (its ``row_ids``).
    gather : callable
        Brings held parts here (the executor's ``gather``).
    map_pieces : callable
        Computes on each partition where it is held (the executor's ``map_pieces``).
    has_calibrated : bool
        Whether the outputs hold calibrated probabilities.
    truth : Truth or None
        The true labels, where the input has them.
    """

    parts: list[Any]
    retrained: list[Any] | None
    table: TableRows
    gather: Callable[[list[Any]], list[Any]]
    map_pieces: Callable[..., list[Any]]
    has_calibrated: bool = False
    truth: Truth | None = None

    @cached_property
    def outputs(self) -> RowOutputs:
        """Every row's outputs, in ``row_ids`` order."""
        return functools.reduce(summed, self.gather(self.parts)).on(self.table.row_ids)

    @cached_property
    def true_labels(self) -> np.ndarray | None:
        """Every row's true label, in ``row_ids`` order; None without them."""
        if self.truth is None:
            return None
        ids, _, truth = (
            np.concatenate(c) for c in zip(*self.gather(self.truth.parts), strict=True)
        )
        out = np.zeros(self.table.n_rows, dtype=truth.dtype)
        out[positions(self.table.row_ids, ids)] = truth
        return out

    def reliability(self, n_bins: int = 10) -> np.ndarray:
        """Reliability sums of the uncalibrated and calibrated probabilities against the
        true labels, summed over the partitions where they are held
        (:func:`~pulsnar_dask.core.combine.piece_reliability`: shape (2, 2, 3, n_bins)).

        Raises
        ------
        ValueError
            Without true labels or calibrated probabilities.
        """
        if self.truth is None or not self.has_calibrated:
            raise ValueError("reliability needs true labels and calibrated probabilities")
        held = self.map_pieces(piece_reliability, [self.truth.parts, self.parts], (n_bins,))
        return functools.reduce(np.add, self.gather(held))

    @cached_property
    def improved_probability(self) -> np.ndarray | None:
        """The retrain's probability of every row, in ``row_ids`` order."""
        if self.retrained is None:
            return None
        proba, _, ids = (np.concatenate(c) for c in zip(*self.gather(self.retrained), strict=True))
        out = np.full(self.table.n_rows, np.nan, dtype=proba.dtype)
        out[positions(self.table.row_ids, ids)] = proba
        return out


@dataclass
class JobResult:
    """Everything a run produces (vectors are aligned with ``row_ids``, ascending).

    On a cluster the per-row outputs stay on the workers and ``table`` and ``rows`` hold
    the client's means of bringing them, so a result is used in the process that ran the
    job, while its client is open; it is not for pickling.

    Attributes
    ----------
    method : str
        ``pulscar`` or ``pulsnar`` (for ``auto``, whose alpha it reads).
    alpha : float
        Mean over iterations of alpha: the cluster alphas summed, except that clusters in
        one of ``cluster_groups`` count the unlabeled rows they claim once.
    alphas : list of float
        One per iteration (auto reading the clusters' alpha: their one scoring's).
    cluster_alphas : list of float
        Per cluster, mean over iterations (``[alpha]`` for PULSCAR; auto reading the
        clusters' alpha: their one scoring's).
    n_clusters : int
        Clusters read (1 for PULSCAR).
    table : TableRows
        The table's rows (``row_ids`` and ``labels`` bring them here as vectors).
    rows : HeldRows
        The per-row outputs where the executor holds them (and the true labels, where
        the input has them); ``probability`` (out-of-fold, PULSNAR: ``1 - prod_c (1 -
        p_c)``), ``calibrated``, ``improved`` (with calibration / classification) and
        ``true_labels`` bring them here as vectors.
    estimates : list of AlphaEstimate
        First iteration's densities and objective, per cluster (auto: PULSCAR's,
        whichever alpha it reads).
    subproblems : list of SubproblemResult
        First iteration's subproblems (row ids, labels, out-of-fold probabilities), per
        cluster (auto: PULSCAR's): what calibration works from.
    bic : ndarray
        BIC curve (empty for PULSCAR or a fixed cluster count).
    mixture_components : int
        Components of the mixture the BIC chose (``n_clusters`` once small ones merged).
    metrics : dict or None
        With classification and true labels: metrics with and without PULSNAR.
    engine : str
        ``in-process`` (arrays in this process), ``task`` or ``dask``.
    copied_rows : int
        Rows that copy an earlier row's features exactly where that cannot be chance;
        each group of copies is kept in one fold
        (:class:`~pulsnar_dask.core.folds.CopyGroups`).
    leading_feature : str or None
        The feature the first subproblem's first fold model gains most from, where
        every subproblem's out-of-fold AUC reaches ``PERFECT_PU_AUC`` (labeled and
        unlabeled rows perfectly separated: it may record the label); else ``None``.
    negative_auc : float or None
        The AUC between labeled positives and the unlabeled negatives that the subproblem
        over all positives implies at its alpha
        (:func:`~pulsnar_dask.core.metrics.implied_negative_auc`), first iteration, to
        3 decimals: PULSCAR's subproblem, or the one cluster's; ``None`` where no
        subproblem holds every positive (PULSNAR asked for, several clusters).
    pu_auc : list of float
        Each subproblem's out-of-fold ROC AUC of labeled positives against unlabeled
        rows, first iteration: how well its classifier tells them apart.
    method_evidence : dict or None
        With ``method="auto"``: the clusters and both readings
        (:func:`~pulsnar_dask.pipeline.method_choice.choose_reading`).
    clustering : Clustering or None
        PULSNAR and auto: the BIC curve, each positive's cluster and the features used.
    profiles : list or None
        PULSNAR, and auto where it reads the clusters: what sets each cluster of
        positives apart (:func:`~pulsnar_dask.core.subtypes.profiles_of`); ``None``
        where the run reads PULSCAR.
    cluster_groups : list of list of int or None
        PULSNAR (and auto where it reads the clusters) with more than one cluster: the
        clusters (numbered from 1) that count as one subtype because their claimed
        unlabeled rows overlap by more than ``claim_overlap``
        (:func:`~pulsnar_dask.core.claims.subtype_groups`), first iteration.
    alpha_interval : AlphaInterval or None
        The default 95% interval of alpha and the readings it spans
        (:mod:`pulsnar_dask.core.interval`); ``None`` with ``interval_resamples=0``.
    settings : dict
        What was asked for: method, seed, iterations, calibration, classification, the
        number of feature columns, every :class:`PUConfig` field, and what the caller
        adds (the engine asked for, on Dask).
    seconds : float
        Wall time of the job, from reading to the last result.
    timings : dict
        Seconds since the start at which each stage ended (``input``, ``clustering``,
        ``scoring``, ``classification``).
    model : PUModel or None
        What scores new rows (:mod:`pulsnar_dask.core.model`).
    """

    method: str
    alpha: float
    alphas: list[float]
    cluster_alphas: list[float]
    n_clusters: int
    table: TableRows
    rows: HeldRows
    estimates: list[AlphaEstimate]
    subproblems: list[SubproblemResult]
    bic: np.ndarray
    mixture_components: int
    metrics: dict[str, dict[str, float]] | None
    engine: str
    pu_auc: list[float]
    copied_rows: int = 0
    leading_feature: str | None = None
    negative_auc: float | None = None
    method_evidence: dict[str, Any] | None = None
    clustering: Clustering | None = None
    profiles: list[list[dict[str, Any]]] | None = None
    cluster_groups: list[list[int]] | None = None
    alpha_interval: AlphaInterval | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    model: PUModel | None = None

    @property
    def probability(self) -> np.ndarray:
        """The combined out-of-fold probability of each row (brought here from where the
        executor holds it, the first time it is asked for)."""
        return self.rows.outputs.probability

    @property
    def row_ids(self) -> np.ndarray:
        """Every row's id, ascending (brought here the first time it is asked for)."""
        return self.table.row_ids

    @property
    def labels(self) -> np.ndarray:
        """Every row's 0/1 label, in ``row_ids`` order."""
        return self.table.labels

    @property
    def true_labels(self) -> np.ndarray | None:
        """Every row's true label (brought here the first time it is asked for)."""
        return self.rows.true_labels

    @property
    def calibrated(self) -> np.ndarray | None:
        """Calibrated probabilities (Algorithm 3), where asked for."""
        return self.rows.outputs.calibrated

    @property
    def improved(self) -> np.ndarray | None:
        """The retrain's probabilities (Algorithm 4), where asked for."""
        return self.rows.improved_probability

    @property
    def alpha_identified(self) -> bool:
        """Whether every subproblem's classifier tells labeled positives from unlabeled
        rows (out-of-fold AUC at least ``WEAK_PU_AUC``); below it the probabilities of
        positives and unlabeled rows hardly differ and alpha is not identified."""
        return all(auc >= WEAK_PU_AUC for auc in self.pu_auc)

    @property
    def alpha_may_be_high(self) -> bool:
        """Whether labeled positives and unlabeled negatives overlap (``negative_auc``
        below ``OVERLAP_AUC``): every reading of alpha also counts the negatives that
        resemble positives, so it is an upper bound and may be far above the truth."""
        return overlaps(self.negative_auc)

    @property
    def alpha_imprecise(self) -> bool | None:
        """Whether the 95% interval is wider than ``WIDE_INTERVAL``, too wide for the data
        to pin alpha down (None: no interval)."""
        return None if self.alpha_interval is None else too_wide(self.alpha_interval)

    def subtypes(self) -> list[dict[str, Any]]:
        """Per cluster of positives (PULSNAR, and auto where it reads the clusters):
        its labeled positives, alpha, the hidden positives it means (``alpha x``
        unlabeled rows) and the features that set it apart."""
        if self.profiles is None or self.clustering is None:
            return []
        n_unlabeled = self.table.n_unlabeled
        positives = np.bincount(self.clustering.labels, minlength=self.n_clusters)
        return [
            {
                "positives": int(n),
                "alpha": alpha,
                "hidden_positives": round(alpha * n_unlabeled),
                "distinguishing": profile,
            }
            for n, alpha, profile in zip(positives, self.cluster_alphas, self.profiles, strict=True)
        ]

    def summary(self) -> dict[str, Any]:
        """The run summary (``summary.json``), JSON-serialisable."""
        out: dict[str, Any] = {
            "method": self.method,
            "alpha": self.alpha,
            "n_positive": self.table.n_positive,
            "n_unlabeled": self.table.n_unlabeled,
            "hidden_positives": round(self.alpha * self.table.n_unlabeled),
            "n_clusters": self.n_clusters,
            "cluster_alphas": self.cluster_alphas,
            "seconds": round(self.seconds, 3),
            "stage_seconds": self.timings,
            "engine": self.engine,
            "copied_rows": self.copied_rows,
            "pu_auc": [round(auc, 4) for auc in self.pu_auc],
            "alpha_identified": self.alpha_identified,
            # null where no subproblem held every positive: not checked
            "alpha_may_be_high": None if self.negative_auc is None else self.alpha_may_be_high,
            "alpha_imprecise": self.alpha_imprecise,  # null without an interval
            "settings": self.settings,
        }
        if self.clustering is not None:
            out["mixture_covariance"] = self.clustering.covariance_type
        if self.method_evidence is not None:
            out["method_requested"] = "auto"
            out["method_evidence"] = self.method_evidence
        if self.negative_auc is not None:
            out["negative_auc"] = self.negative_auc
        if self.leading_feature is not None:
            out["perfect_separation"] = {"leading_feature": self.leading_feature}
        if self.alpha_interval is not None:
            out["alpha_interval"] = [self.alpha_interval.low, self.alpha_interval.high]
            out["interval_method"] = INTERVAL_METHOD
            out["interval_readings"] = {
                name: {"alpha": alpha, "sd": sd}
                for name, (alpha, sd) in self.alpha_interval.readings.items()
            }
        if self.profiles is not None:
            out["subtypes"] = self.subtypes()
        if self.cluster_groups is not None:
            out["cluster_groups"] = self.cluster_groups
        if len(self.alphas) > 1:
            _, low, high = mean_ci(np.asarray(self.alphas))
            out["alphas"] = self.alphas
            out["alpha_ci"] = [max(low, 0.0), min(high, 1.0)]
        if self.model is not None:
            out["categorical_features"] = self.model.schema.categorical
        if self.rows.truth is not None:
            out["true_alpha"] = self.rows.truth.alpha
        if self.metrics is not None:
            out["metrics"] = self.metrics
        return out


def headline(summary: dict[str, Any]) -> str:
    """One line that answers the question a run is for: how many hidden positives.

    Returns
    -------
    str
        E.g. ``alpha 0.272: about 2,720 hidden positives among 10,000 unlabeled rows
        (PULSNAR, 5 clusters)`` (auto with several clusters: ``(PULSCAR; 5 clusters
        read 0.301 beside it)``, their reading as PULSNAR reads them, ``(PULSNAR, 5
        clusters; PULSCAR reads 0.210)`` where auto reads theirs, or ``(PULSCAR; 5
        clusters found, not read (interval_resamples=0))``), with the 95%
        interval (``alpha_interval``, else the iterations' ``alpha_ci``) when there is
        one, and a warning when alpha is not identified, when a feature may record the
        label (perfect separation), when alpha may be far too high (positives and
        negatives overlap), when alpha may be read low (one cluster found on part of the
        features), or else when the interval is too wide to act on (``alpha_imprecise``).
    """
    n_unlabeled = summary["n_unlabeled"]
    evidence = summary.get("method_evidence") or {}
    clusters = summary["n_clusters"]
    if clusters_alpha_read(evidence):  # auto, the clusters' alpha: PULSCAR's beside it
        found = f", {clusters} clusters; PULSCAR reads {evidence['readings']['pulscar']:.3f}"
    elif "readings" in evidence:  # auto with several clusters: their reading beside PULSCAR's
        clusters, read = evidence["n_clusters"], evidence["readings"]["pulsnar"]
        found = f"; {clusters} clusters read {read:.3f} beside it"
    elif evidence.get("n_clusters", 1) > 1:  # ... and no interval to span it
        found = f"; {evidence['n_clusters']} clusters found, not read (interval_resamples=0)"
    else:
        found = f", {clusters} cluster{'s' if clusters > 1 else ''}"
    text = (
        f"alpha {summary['alpha']:.3f}: about {summary['hidden_positives']:,} hidden positives "
        f"among {n_unlabeled:,} unlabeled rows ({summary['method'].upper()}{found})"
    )
    if "alpha_interval" in summary:
        low, high = summary["alpha_interval"]
        text += (
            f"; 95% interval {round(low * n_unlabeled):,}-{round(high * n_unlabeled):,} "
            f"(alpha {low:.3f}-{high:.3f})"
        )
    elif "alpha_ci" in summary:  # no default interval: the iterations' still tells something
        low, high = summary["alpha_ci"]
        text += (
            f"; 95% interval of the iterations' mean "
            f"{round(low * n_unlabeled):,}-{round(high * n_unlabeled):,} "
            f"(alpha {low:.3f}-{high:.3f})"
        )
    if not summary["alpha_identified"]:
        text += (
            "; NOT IDENTIFIED: the classifier hardly tells labeled positives from unlabeled rows"
        )
    elif "perfect_separation" in summary:
        text += (
            "; CHECK THE FEATURES: labeled and unlabeled rows are perfectly separated "
            f"(leading feature {summary['perfect_separation']['leading_feature']!r})"
        )
    elif summary.get("alpha_may_be_high"):  # .get: summaries written before it
        text += (
            "; MAY BE HIGH: positives and negatives overlap (implied AUC "
            f"{summary['negative_auc']:.3f} if labeled at random), so every reading also "
            "counts negatives"
        )
    elif evidence.get("subtypes_may_be_unseen"):
        text += "; MAY BE LOW: one cluster found on part of the features, subtypes may be unseen"
    elif summary.get("alpha_imprecise"):  # .get: summaries written before it
        low, high = summary["alpha_interval"]
        text += (
            f"; IMPRECISE: the interval is {high - low:.3f} wide, the data do not pin alpha down"
        )
    return text
