"""The distributed engine: PULSCAR and PULSNAR over a Dask cluster.

The data stay on the workers as a persisted Dask dataframe. The client collects only the
row ids and labels (to validate them and to align results) and, at the end, the
probability vectors. Every independent piece of work is a future submitted at once:
the importance model, the mixture fits of every size for the BIC curve, and every
(cluster, iteration) PULSCAR subproblem, so the cluster runs them side by side.

A subproblem that fits one worker runs as one task (its rows gathered to that worker in
canonical order, so the model is the same whatever the cluster's shape). A larger one
runs on ``xgboost.dask``, fold by fold, over all workers.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, Future, progress, wait

from pulsnar_dask.core.alpha import AlphaEstimate
from pulsnar_dask.core.config import PUConfig, config_dict
from pulsnar_dask.core.folds import (
    assign_folds,
    folds_from_hashes,
    sorted_label_hashes,
    subsample_threshold,
    trainable_rows,
)
from pulsnar_dask.core.interval import AlphaInterval, alpha_interval
from pulsnar_dask.core.metrics import classification_metrics
from pulsnar_dask.core.mixture import cluster_labels, clustering_matrix
from pulsnar_dask.core.scoring import booster_params, fold_probabilities
from pulsnar_dask.core.stats import mean_ci
from pulsnar_dask.core.subproblem import (
    SubproblemResult,
    calibrated_on_rows,
    canonical_subproblem,
    check_subproblem,
    combine_on_rows,
    estimate_subproblem,
    improved_probabilities,
)
from pulsnar_dask.core.subtypes import (
    choose_method,
    choose_mixture,
    fit_mixture_size,
    importance_gain,
    make_clustering,
    min_cluster_size,
    mixture_sizes,
    select_features,
    subtype_profiles,
)
from pulsnar_dask.errors import UserError
from pulsnar_dask.io import PUFrame

logger = logging.getLogger(__name__)

METHODS = ("auto", "pulscar", "pulsnar")
ENGINES = ("auto", "task", "dask")
# A subproblem runs as one task when its feature matrix is below this share of the
# smallest worker's memory limit (XGBoost needs a few copies of it).
TASK_MEMORY_SHARE = 0.15
# Below this labeled-vs-unlabeled AUC the run warns that alpha is poorly identified.
WEAK_PU_AUC = 0.6
INTERVAL_METHOD = (
    "bootstrap of the out-of-fold probabilities, kernel and tail readings (and the "
    "configured reader), under PULSNAR and PULSCAR where both were computed"
)


@dataclass
class JobResult:
    """Everything a run produces (vectors are aligned with ``row_ids``, ascending).

    Attributes
    ----------
    method : str
        ``pulscar`` or ``pulsnar`` (for ``auto``, the one chosen).
    alpha : float
        Mean over iterations of the (summed) alpha.
    alphas : list of float
        One per iteration.
    cluster_alphas : list of float
        Per cluster, mean over iterations (``[alpha]`` for PULSCAR).
    n_clusters : int
    row_ids, labels : ndarray
    probability : ndarray
        Out-of-fold probability (PULSNAR: ``1 - prod_c (1 - p_c)``).
    calibrated, improved : ndarray or None
        With calibration / classification.
    true_labels : ndarray or None
    estimates : list of AlphaEstimate
        First iteration's densities and objective, per cluster.
    subproblems : list of SubproblemResult
        First iteration's subproblems (row ids, labels, out-of-fold probabilities), per
        cluster: what calibration works from.
    bic : ndarray
        BIC curve (empty for PULSCAR or a fixed cluster count).
    mixture_components : int
        Components of the mixture the BIC chose (``n_clusters`` once small ones merged).
    metrics : dict or None
        With classification and true labels: metrics with and without PULSNAR.
    engine : str
        ``task`` or ``dask``.
    method_evidence : dict or None
        With ``method="auto"``: why ``method`` was chosen (:func:`choose_method`).
    profiles : list or None
        PULSNAR: what sets each cluster of positives apart
        (:func:`~pulsnar_dask.core.subtypes.subtype_profiles`); ``None`` for PULSCAR.
    alpha_interval : AlphaInterval or None
        The default 95% interval of alpha and the readings it spans
        (:mod:`pulsnar_dask.core.interval`); ``None`` with ``interval_resamples=0``.
    settings : dict
        What was asked for: method, seed, iterations, calibration, classification,
        engine, the number of feature columns, and every :class:`PUConfig` field.
    seconds : float
        Wall time of the job, from reading to the last result.
    timings : dict
        Seconds since the start at which each stage ended (``input``, ``clustering``,
        ``scoring``, ``classification``).
    """

    method: str
    alpha: float
    alphas: list[float]
    cluster_alphas: list[float]
    n_clusters: int
    row_ids: np.ndarray
    labels: np.ndarray
    probability: np.ndarray
    calibrated: np.ndarray | None
    improved: np.ndarray | None
    true_labels: np.ndarray | None
    estimates: list[AlphaEstimate]
    subproblems: list[SubproblemResult]
    bic: np.ndarray
    mixture_components: int
    metrics: dict[str, dict[str, float]] | None
    engine: str
    method_evidence: dict[str, Any] | None = None
    profiles: list[list[dict[str, Any]]] | None = None
    alpha_interval: AlphaInterval | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def alpha_identified(self) -> bool:
        """Whether every subproblem's classifier tells labeled positives from unlabeled
        rows (out-of-fold AUC at least ``WEAK_PU_AUC``); below it the probabilities of
        positives and unlabeled rows hardly differ and alpha is not identified."""
        return all(r.pu_auc >= WEAK_PU_AUC for r in self.subproblems)

    def subtypes(self) -> list[dict[str, Any]]:
        """Per cluster of positives (PULSNAR): labeled positives, alpha, the hidden
        positives it means (``alpha x`` unlabeled rows) and the features that set it apart."""
        if self.profiles is None:
            return []
        n_unlabeled = int(np.sum(self.labels == 0))
        return [
            {
                "positives": r.n_positive,
                "alpha": alpha,
                "hidden_positives": round(alpha * n_unlabeled),
                "distinguishing": profile,
            }
            for r, alpha, profile in zip(
                self.subproblems, self.cluster_alphas, self.profiles, strict=True
            )
        ]

    def summary(self) -> dict[str, Any]:
        """The run summary (DESIGN.md section 4), JSON-serialisable."""
        out: dict[str, Any] = {
            "method": self.method,
            "alpha": self.alpha,
            "n_positive": int(np.sum(self.labels == 1)),
            "n_unlabeled": int(np.sum(self.labels == 0)),
            "hidden_positives": round(self.alpha * int(np.sum(self.labels == 0))),
            "n_clusters": self.n_clusters,
            "cluster_alphas": self.cluster_alphas,
            "seconds": round(self.seconds, 3),
            "stage_seconds": self.timings,
            "engine": self.engine,
            "pu_auc": [round(r.pu_auc, 4) for r in self.subproblems],
            "alpha_identified": self.alpha_identified,
            "settings": self.settings,
        }
        if self.method_evidence is not None:
            out["method_requested"] = "auto"
            out["method_evidence"] = self.method_evidence
        if self.alpha_interval is not None:
            out["alpha_interval"] = [self.alpha_interval.low, self.alpha_interval.high]
            out["interval_method"] = INTERVAL_METHOD
            out["interval_readings"] = {
                name: {"alpha": alpha, "sd": sd}
                for name, (alpha, sd) in self.alpha_interval.readings.items()
            }
        if self.profiles is not None:
            out["subtypes"] = self.subtypes()
        if len(self.alphas) > 1:
            _, low, high = mean_ci(np.asarray(self.alphas))
            out["alphas"] = self.alphas
            out["alpha_ci"] = [max(low, 0.0), min(high, 1.0)]
        if self.true_labels is not None:
            out["true_alpha"] = float(np.mean(self.true_labels[self.labels == 0] > 0))
        if self.metrics is not None:
            out["metrics"] = self.metrics
        return out


def headline(summary: dict[str, Any]) -> str:
    """One line that answers the question a run is for: how many hidden positives.

    Returns
    -------
    str
        E.g. ``alpha 0.272: about 2,720 hidden positives among 10,000 unlabeled rows
        (PULSNAR, 5 clusters)``, with the 95% interval (``alpha_interval``, else the
        iterations' ``alpha_ci``) when there is one, and a warning when alpha is not
        identified.
    """
    n_unlabeled = summary["n_unlabeled"]
    text = (
        f"alpha {summary['alpha']:.3f}: about {summary['hidden_positives']:,} hidden positives "
        f"among {n_unlabeled:,} unlabeled rows ({summary['method'].upper()}, "
        f"{summary['n_clusters']} cluster{'s' if summary['n_clusters'] > 1 else ''})"
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
    return text


# ---------------------------------------------------------------------------------------
# Tasks (run on workers; module-level so they pickle by reference)


def _rows(
    parts: Sequence[pd.DataFrame],
    features: Sequence[str],
    label: str,
    id_col: str,
    positive_ids: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenate partitions into (X, labels, ids), keeping the unlabeled rows and either
    all positives or only ``positive_ids``."""
    frame = pd.concat(parts, ignore_index=True)
    if positive_ids is not None:
        keep = (frame[label].to_numpy() == 0) | frame[id_col].isin(positive_ids).to_numpy()
        frame = frame[keep]
    X = frame[list(features)].to_numpy(dtype=np.float32)
    return X, frame[label].to_numpy().astype(np.int8), frame[id_col].to_numpy()


def _subproblem_data_task(parts, features, label, id_col, positive_ids, config, seed):
    """A subproblem's rows on one worker, in canonical order (see canonical_subproblem)."""
    X, y, ids = _rows(parts, features, label, id_col, positive_ids)
    return canonical_subproblem(X, y, ids, config, seed)


def _fold_task(data, fold, config, seed):
    X, y, _, folds, trainable = data
    params = booster_params(config.xgb_params, seed, config.n_threads)
    return fold_probabilities(X, y, folds, fold, params, config.n_rounds, trainable)


def _gain_task(parts, features, label, id_col, config, seed):
    X, y, ids = _rows(parts, features, label, id_col)
    return importance_gain(X, y, ids, config, seed)


def _positives_task(parts, features, label, id_col):
    """Return (the positives' values of ``features``, their ids), in id order."""
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[frame[label].to_numpy() == 1].sort_values(id_col)
    return frame[list(features)].to_numpy(dtype=float), frame[id_col].to_numpy()


def _first(pair):
    return pair[0]


def _improve_task(parts, features, label, id_col, calibrated, alpha, config, seed):
    X, y, ids = _rows(parts, features, label, id_col)
    order = np.argsort(ids, kind="stable")
    return improved_probabilities(X[order], y[order], ids[order], calibrated, alpha, config, seed)


@dataclass
class _PendingSubproblem:
    """A subproblem submitted as fold tasks; ``collect`` assembles it on the client."""

    row_ids: np.ndarray
    labels: np.ndarray
    folds: np.ndarray
    fold_futures: list[Future]
    config: PUConfig
    seed: int

    def collect(self, fold_probas: list[np.ndarray]) -> SubproblemResult:
        proba = np.empty(self.labels.size)
        for fold, values in enumerate(fold_probas):
            proba[self.folds == fold] = values
        return estimate_subproblem(self.row_ids, self.labels, proba, self.config, self.seed)


# ---------------------------------------------------------------------------------------
# Distributed (xgboost.dask) subproblem


def _keep_rows(part, label, id_col, positive_ids):
    return part[(part[label] == 0) | part[id_col].isin(positive_ids)]


def _add_folds(part, id_col, label, hashes, n_folds, seed, threshold):
    """Add each row's fold and whether it may train (the unlabeled subsample)."""
    ids, labels = part[id_col].to_numpy(), part[label].to_numpy()
    folds = folds_from_hashes(ids, labels, hashes, n_folds, seed)
    train = (
        np.ones(len(part), dtype=bool)
        if threshold is None
        else trainable_rows(ids, labels, threshold, seed)
    )
    return part.assign(_fold=folds, _train=train)


def _subproblem_dask(
    client: Client,
    frame: dd.DataFrame,
    puf: PUFrame,
    features: Sequence[str],
    row_ids: np.ndarray,
    labels: np.ndarray,
    positive_ids: np.ndarray | None,
    config: PUConfig,
    seed: int,
) -> SubproblemResult:
    """One PULSCAR problem on ``xgboost.dask``: each fold's model trained on all workers.

    ``row_ids`` and ``labels`` are the subproblem's own rows (already checked).
    """
    import xgboost.dask as dxgb

    if positive_ids is not None:
        frame = frame.map_partitions(_keep_rows, puf.label, puf.id, positive_ids, meta=frame._meta)
    hashes = sorted_label_hashes(row_ids, labels, seed)
    threshold = subsample_threshold(row_ids, labels, config.max_unlabeled_ratio, seed)
    meta = frame._meta.assign(_fold=np.array([], dtype=np.int8), _train=np.array([], dtype=bool))
    frame = frame.map_partitions(
        _add_folds, puf.id, puf.label, hashes, config.n_folds, seed, threshold, meta=meta
    ).persist()
    params = booster_params(config.xgb_params, seed, config.n_threads)
    columns = list(features)
    id_parts, proba_parts = [], []
    for fold in range(config.n_folds):
        train = frame[(frame["_fold"] != fold) & frame["_train"]]
        held_out = frame[frame["_fold"] == fold]
        n_pos, n_all = dask.compute((train[puf.label] == 1).sum(), train.shape[0])
        dtrain = dxgb.DaskDMatrix(client, train[columns], train[puf.label])
        booster = dxgb.train(
            client,
            {**params, "scale_pos_weight": (n_all - n_pos) / max(n_pos, 1)},
            dtrain,
            num_boost_round=config.n_rounds,
        )["booster"]
        # Both follow held_out's partition order, so they line up row for row.
        id_parts.append(held_out[puf.id].compute().to_numpy())
        proba_parts.append(
            np.asarray(dxgb.predict(client, booster, held_out[columns]).compute(), dtype=float)
        )
    ids, proba = np.concatenate(id_parts), np.concatenate(proba_parts)
    order = np.argsort(ids, kind="stable")
    ids, proba = ids[order], proba[order]
    sub_labels = labels[np.searchsorted(row_ids, ids)]
    return estimate_subproblem(ids, sub_labels, proba, config, seed)


# ---------------------------------------------------------------------------------------
# The job


def collect_labels(puf: PUFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Bring ids, labels (and true labels) to the client, sorted by id, and check them.

    Raises
    ------
    UserError
        For label values other than 0/1, duplicate ids, or no positives / unlabeled rows.
    """
    columns = [puf.id, puf.label] + ([puf.true_label] if puf.true_label else [])
    table = puf.frame[columns].compute()
    if len(table) == 0:
        raise UserError("the input has no rows")
    label = table[puf.label]
    bad = ~label.isin([0, 1])
    if bad.any():
        values = label[bad].value_counts(dropna=False)
        shown = ", ".join(f"{v!r} ({n} rows)" for v, n in values.head(5).items())
        raise UserError(f"label column '{puf.label}' must hold only 0 and 1; found {shown}")
    duplicated = table[puf.id].duplicated()
    if duplicated.any():
        first = table[puf.id][duplicated].iloc[0]
        raise UserError(
            f"id column '{puf.id}' has {int(duplicated.sum())} duplicate value(s), e.g. {first!r}"
        )
    table = table.sort_values(puf.id)
    labels = table[puf.label].to_numpy().astype(np.int8)
    if not (labels == 1).any():
        raise UserError(f"no labeled positives ({puf.label} = 1) in the input")
    if not (labels == 0).any():
        raise UserError(f"no unlabeled rows ({puf.label} = 0) in the input")
    true = table[puf.true_label].to_numpy() if puf.true_label else None
    return table[puf.id].to_numpy(), labels, true


def _choose_engine(
    workers: dict[str, dict[str, Any]], n_rows: int, n_features: int, engine: str
) -> str:
    """The engine for ``engine="auto"``, from the workers' memory limits (``scheduler_info``)."""
    if engine != "auto":
        return engine
    limits = [w.get("memory_limit") or 0 for w in workers.values()]
    smallest = min((m for m in limits if m), default=0)
    size = n_rows * n_features * 4
    return "dask" if smallest and size > TASK_MEMORY_SHARE * smallest else "task"


def _round_robin(workers: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Yield ``submit`` placements that deal tasks to the workers in turn.

    A subproblem's fold tasks all depend on its rows, which sit on one worker; left to
    itself the scheduler queues every fold there and only work stealing moves some away,
    late. Dealt out (loosely: stealing may still move them) they start at once.
    """
    if not workers:
        return itertools.repeat({})
    return ({"workers": [w], "allow_other_workers": True} for w in itertools.cycle(sorted(workers)))


def _gather(client: Client, futures: list[Future], show_progress: bool) -> list[Any]:
    if show_progress:
        with contextlib.redirect_stdout(sys.stderr):  # Dask draws its bar on stdout
            progress(futures, notebook=False)
    else:
        wait(futures)
    return client.gather(futures)


def run_job(
    client: Client,
    puf: PUFrame,
    method: str = "auto",
    config: PUConfig | None = None,
    seed: int = 0,
    iterations: int = 1,
    calibrate_probabilities: bool = False,
    classify: bool = False,
    engine: str = "auto",
    show_progress: bool = False,
    on_stage: Callable[[str], None] | None = None,
) -> JobResult:
    """Run PULSCAR or PULSNAR on a Dask dataframe.

    Parameters
    ----------
    client : distributed.Client
    puf : PUFrame
        The lazy input (see :func:`pulsnar_dask.io.read_pu_parquet`).
    method : {"auto", "pulscar", "pulsnar"}
        ``auto`` clusters the positives as PULSNAR does, runs PULSCAR beside the cluster
        subproblems, and keeps one of the two by :func:`~pulsnar_dask.core.subtypes.choose_method`.
    config : PUConfig or None
        Settings; ``None`` uses the method's defaults.
    seed : int
        Iteration ``i`` uses seed ``seed + i`` for folds and XGBoost.
    iterations : int
        Repeats, submitted concurrently; ``alpha`` is their mean.
    calibrate_probabilities : bool
        Calibrate with the estimated alpha (Algorithm 3).
    classify : bool
        Retrain on recovered labels (Algorithm 4); calibrates first.
    engine : {"auto", "task", "dask"}
        One task per subproblem, ``xgboost.dask`` over all workers, or by size.
    show_progress : bool
        Progress bars on stderr for the fan-outs.
    on_stage : callable or None
        Called with a short description as each stage starts.

    Returns
    -------
    JobResult
    """
    if method not in METHODS:
        raise UserError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if engine not in ENGINES:
        raise UserError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if iterations < 1:
        raise UserError(f"--iterations must be at least 1, got {iterations}")
    config = config or PUConfig()
    requested, asked = method, config
    if config.n_threads is None:
        # Parallelism comes from concurrent tasks: one XGBoost thread per task.
        config = config.with_(n_threads=1)
    stage = on_stage or (lambda text: logger.info(text))
    start = time.perf_counter()
    timings: dict[str, float] = {}

    def mark(name: str) -> None:
        timings[name] = round(time.perf_counter() - start, 3)

    stage("reading and checking the input")
    frame = puf.frame.persist()
    puf = replace(puf, frame=frame)
    n_inf = int(
        frame[puf.features]
        .map_partitions(lambda p: pd.Series([np.isinf(p.to_numpy(dtype=float)).sum()]))
        .sum()
        .compute()
    )
    if n_inf:
        raise UserError(f"the feature columns hold {n_inf} infinite value(s)")
    row_ids, labels, true_labels = collect_labels(puf)
    try:
        check_subproblem(labels, config)
    except ValueError as exc:
        raise UserError(f"too few rows for {config.n_folds} folds: {exc}") from None
    parts = client.compute(frame.to_delayed())
    mark("input")
    workers = client.scheduler_info()["workers"]
    chosen_engine = _choose_engine(workers, len(labels), len(puf.features), engine)
    logger.info(
        "%d rows (%d positive), %d features, engine %s",
        len(labels),
        int(labels.sum()),
        len(puf.features),
        chosen_engine,
    )

    placements = _round_robin(workers)

    def subproblem(
        features: Sequence[str], positive_ids: np.ndarray | None, it: int, name: str = "all"
    ):
        """Submit one subproblem; task keys name it (``cluster2-it0-fold3-<id>``) so the
        dashboard's task stream shows which subproblems run side by side."""
        keep = (
            np.ones(labels.size, bool)
            if positive_ids is None
            else ((labels == 0) | np.isin(row_ids, positive_ids))
        )
        sub_ids, sub_labels = row_ids[keep], labels[keep]
        try:
            check_subproblem(sub_labels, config)
        except ValueError as exc:
            raise UserError(f"a subproblem is too small: {exc}") from None
        if chosen_engine == "dask":
            return _subproblem_dask(
                client, frame, puf, features, sub_ids, sub_labels, positive_ids, config, seed + it
            )
        tag = f"{name}-it{it}"
        data = client.submit(
            _subproblem_data_task,
            parts,
            list(features),
            puf.label,
            puf.id,
            positive_ids,
            config,
            seed + it,
            key=f"{tag}-rows-{uuid.uuid4().hex[:8]}",
        )
        futures = [
            client.submit(
                _fold_task, data, fold, config, seed + it,
                key=f"{tag}-fold{fold}-{uuid.uuid4().hex[:8]}", **next(placements),
            )
            for fold in range(config.n_folds)
        ]  # fmt: skip
        folds = assign_folds(sub_ids, sub_labels, config.n_folds, seed + it)
        return _PendingSubproblem(sub_ids, sub_labels, folds, futures, config, seed + it)

    bic = np.array([])
    evidence = profiles = None
    alternative: list[SubproblemResult] = []  # the other assumption's subproblems (auto)
    pulscar_first: SubproblemResult | None = None  # PULSCAR beside PULSNAR (auto)
    if method == "pulscar":
        stage(f"scoring: {iterations} cross-validated XGBoost run(s)")
        results = _results(
            client, [subproblem(puf.features, None, it) for it in range(iterations)], show_progress
        )
        per_iteration = [[r] for r in results]
        n_clusters = mixture_components = 1
    else:
        stage("PULSNAR: importance model and clustering of the positives")
        gain = client.submit(
            _gain_task, parts, puf.features, puf.label, puf.id, config, seed, pure=False
        ).result()
        try:
            model_idx, cluster_idx = select_features(gain, config)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        cluster_cols = [puf.features[i] for i in cluster_idx]
        x_and_ids = client.submit(_positives_task, parts, cluster_cols, puf.label, puf.id)
        X_positive = client.submit(_first, x_and_ids)
        Z = client.submit(clustering_matrix, X_positive, gain[cluster_idx])
        sizes = mixture_sizes(config, int(labels.sum()))
        fits = _gather(
            client,
            [client.submit(fit_mixture_size, Z, n, config, seed) for n in sizes],
            show_progress,
        )
        chosen, bic = choose_mixture(fits, config)
        min_size = min_cluster_size(config, int(labels.sum()))
        positive_labels = client.submit(cluster_labels, chosen, Z, min_size).result()
        positive_ids = x_and_ids.result()[1]
        profiles = client.submit(
            subtype_profiles, X_positive, positive_labels, cluster_cols
        ).result()
        clustering = make_clustering(
            chosen, bic, positive_labels, gain, model_idx, cluster_idx, profiles
        )
        mark("clustering")
        n_clusters = clustering.n_clusters
        model_cols = [puf.features[i] for i in model_idx]
        stage(f"scoring: {n_clusters} cluster subproblem(s) x {iterations} iteration(s)")
        pending = [
            subproblem(model_cols, positive_ids[positive_labels == c], it, f"cluster{c + 1}")
            for it in range(iterations)
            for c in range(n_clusters)
        ]
        # auto weighs PULSCAR against the clusters: its subproblems run alongside them.
        compare = method == "auto" and n_clusters > 1
        if compare:
            pending += [subproblem(puf.features, None, it) for it in range(iterations)]
        results = _results(client, pending, show_progress)
        per_iteration = [results[i * n_clusters : (i + 1) * n_clusters] for i in range(iterations)]
        mixture_components = clustering.mixture_components
        if compare:
            pulscar_first = results[iterations * n_clusters]
        if method == "auto":
            first = per_iteration[0]
            method, evidence = choose_method(
                [r.alpha for r in first], [r.n_positive for r in first]
            )
            logger.info("method auto: %s (%s)", method, evidence["reason"])
            if method == "pulscar":
                if compare:
                    alternative = results[:n_clusters]
                    per_iteration = [[r] for r in results[iterations * n_clusters :]]
                n_clusters = 1
            elif compare:
                alternative = [pulscar_first]
    mark("scoring")
    for i, r in enumerate(per_iteration[0]):
        if r.pu_auc < WEAK_PU_AUC:
            logger.warning(
                "subproblem %d: the classifier hardly tells labeled positives from unlabeled "
                "rows (out-of-fold AUC %.3f); alpha is poorly identified from these features",
                i + 1,
                r.pu_auc,
            )
    alphas = [float(sum(r.alpha for r in it)) for it in per_iteration]
    alpha = float(np.mean(alphas))
    first = per_iteration[0]
    interval = None
    if config.interval_resamples:
        stage(f"95% interval: {config.interval_resamples} resamples of the probabilities")
        groups = {method: first}
        if alternative:
            groups["pulscar" if method == "pulsnar" else "pulsnar"] = alternative
        interval = alpha_interval(groups, config, seed, alphas)
        mark("interval")
    probability = combine_on_rows(row_ids, [(r.row_ids, r.probabilities) for r in first])
    calibrated = improved = metrics = None
    if calibrate_probabilities or classify:
        stage("calibrating probabilities")
        calibrated = calibrated_on_rows(row_ids, first, config, seed)
    if classify:
        stage("classification: retraining on recovered labels")
        improved = client.submit(
            _improve_task,
            parts,
            puf.features,
            puf.label,
            puf.id,
            calibrated,
            alpha,
            config,
            seed,
            pure=False,
        ).result()
        if true_labels is not None:
            if method == "pulscar":
                baseline = probability
            else:
                pulscar_first = (
                    pulscar_first or _results(client, [subproblem(puf.features, None, 0)], False)[0]
                )
                baseline = pulscar_first.probabilities
            metrics = {
                "without_pu": classification_metrics(true_labels > 0, baseline),
                "with_pu": classification_metrics(true_labels > 0, improved),
            }
        mark("classification")
    return JobResult(
        method=method,
        alpha=alpha,
        alphas=alphas,
        cluster_alphas=[
            float(np.mean([it[c].alpha for it in per_iteration])) for c in range(len(first))
        ],
        n_clusters=n_clusters,
        row_ids=row_ids,
        labels=labels,
        probability=probability,
        calibrated=calibrated,
        improved=improved,
        true_labels=true_labels,
        estimates=[r.estimate for r in first],
        subproblems=first,
        bic=bic,
        mixture_components=mixture_components,
        method_evidence=evidence,
        profiles=profiles if method == "pulsnar" else None,
        alpha_interval=interval,
        settings={
            "method": requested,
            "seed": seed,
            "iterations": iterations,
            "calibrate": calibrate_probabilities,
            "classify": classify,
            "engine": engine,
            "n_features": len(puf.features),
            **config_dict(asked),
        },
        metrics=metrics,
        engine=chosen_engine,
        seconds=time.perf_counter() - start,
        timings=timings,
    )


def _results(
    client: Client, pending: list[_PendingSubproblem | SubproblemResult], show_progress: bool
) -> list[SubproblemResult]:
    """Wait for every submitted fold task at once, then assemble each subproblem."""
    futures = [f for p in pending if isinstance(p, _PendingSubproblem) for f in p.fold_futures]
    done = iter(_gather(client, futures, show_progress)) if futures else iter(())
    out = []
    for p in pending:
        if isinstance(p, _PendingSubproblem):
            out.append(p.collect([next(done) for _ in p.fold_futures]))
        else:
            out.append(p)
    return out
