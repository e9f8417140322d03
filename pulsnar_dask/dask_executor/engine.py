"""The Dask executor: the pipeline's heavy steps over a Dask cluster.

The table stays on the workers as a persisted Dask dataframe and no step gathers it
whole onto one worker unless it fits there. The client receives the row ids and labels
(to check them and align results), the labeled positives' clustering features, and
probability vectors. What reaches one task:

- the importance model: the positives and the capped unlabeled rows, picked on the
  workers by a hash of the row id (the same rows the in-process executor picks);
- the mixture fits: the positives' clustering matrix, one task per mixture size;
- a scoring (subproblem or retrain): on the ``task`` engine its rows gathered to one
  worker in canonical order, then one task per fold; on the ``dask`` engine
  ``xgboost.dask`` trains each fold over all workers on their own partitions.

``engine="auto"`` picks ``dask`` when the feature table is above
``TASK_MEMORY_SHARE`` of the smallest worker's memory limit, and logs the choice.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, Future, progress, wait

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.folds import (
    CopyGroups,
    assign_folds,
    content_hashes,
    folds_from_hashes,
    sorted_label_hashes,
    subsample_thresholds,
    trainable_rows,
)
from pulsnar_dask.core.schema import (
    MAX_CATEGORIES,
    FeatureSchema,
    distinct_part,
    schema_from_categories,
)
from pulsnar_dask.core.scoring import booster_params, fold_probabilities
from pulsnar_dask.core.subproblem import canonical_subproblem
from pulsnar_dask.core.subtypes import importance_gain
from pulsnar_dask.errors import PUError
from pulsnar_dask.io import PUFrame
from pulsnar_dask.pipeline.result import JobResult
from pulsnar_dask.pipeline.stages import (
    Scored,
    ScoreRequest,
    check_labels,
    check_representable,
    run_pipeline,
    unrepresentable_counts,
)

logger = logging.getLogger(__name__)

ENGINES = ("auto", "task", "dask")
# A scoring runs as one task when the feature table is below this share of the
# smallest worker's memory limit (XGBoost needs a few copies of it).
TASK_MEMORY_SHARE = 0.15


# dask-expr caches expression properties with ``functools.cached_property``, whose lock on
# Python 3.11 is one per property shared by every instance (python/cpython#87634): jobs
# building expressions in two threads at once can each hold one and wait for the other
# for ever. Executors build and submit every expression under this lock and wait for
# results outside it, so jobs in threads of one process still overlap their work.
EXPRESSIONS = threading.RLock()


# ---------------------------------------------------------------------------------------
# Tasks (run on workers; module-level so they pickle by reference)


def _rows(
    parts: Sequence[pd.DataFrame], features: Sequence[str], label: str, id_col: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenate partitions into (X, labels, ids)."""
    frame = pd.concat(parts, ignore_index=True)
    X = frame[list(features)].to_numpy(dtype=np.float32)
    return X, frame[label].to_numpy().astype(np.int8), frame[id_col].to_numpy()


def _request_part(part: pd.DataFrame, request: ScoreRequest, label: str, id_col: str):
    """A partition's rows of a scoring, with the labels it trains on (``request.rows``)."""
    keep, labels = request.rows(part[id_col].to_numpy(), part[label].to_numpy())
    return (part if keep.all() else part[keep]).assign(**{label: labels})


def _scoring_rows_task(parts, request: ScoreRequest, label, id_col, copies: CopyGroups):
    """A scoring's rows on one worker, relabeled and in canonical order."""
    frame = _request_part(pd.concat(parts, ignore_index=True), request, label, id_col)
    X = frame[list(request.features)].to_numpy(dtype=np.float32)
    y, ids = frame[label].to_numpy(), frame[id_col].to_numpy()
    return canonical_subproblem(X, y, ids, request.config, request.seed, copies)


def _fold_task(data, fold, request: ScoreRequest):
    X, y, _, folds, trainable = data
    config = request.config
    params = booster_params(config.xgb_params, request.seed, config.n_threads)
    return fold_probabilities(
        X, y, folds, fold, params, config.n_rounds, trainable, request.feature_types
    )


CONTENT = "__content_hash__"  # each row's content_hashes, beside its id and label


def _table_part(part: pd.DataFrame, columns: list[str], features: list[str]) -> pd.DataFrame:
    """A partition's ``columns`` and the hash of its features' values (:data:`CONTENT`)."""
    with np.errstate(over="ignore"):  # values float32 cannot hold are refused after
        values = part[features].to_numpy(dtype=np.float32)
    return part[columns].assign(**{CONTENT: content_hashes(values)})


def _distinct_counts(part: pd.DataFrame) -> pd.DataFrame:
    """Each column's number of distinct values in one partition (one row; the largest over
    the partitions is a lower bound of the table's)."""
    return part.nunique(dropna=False).to_frame().T.astype("int64")


def _identity(value: Any) -> Any:
    return value


def share(client: Client, value: Any) -> Future:
    """Put a value many tasks need on the cluster once, as a task that returns it (a
    graph would carry it again with each computation). Tasks fetch it from the worker
    that holds it, and if that worker is lost the scheduler computes it again from the
    task: scattered data would be gone, and a broadcast scatter waited for ever on a
    killed worker (``tests/test_reliability.py``)."""
    return client.submit(_identity, value, pure=False)


def _gain_task(parts, schema: FeatureSchema, label, id_col, config, seed):
    X, y, ids = _rows(parts, schema.names, label, id_col)
    return importance_gain(X, y, ids, config, seed, schema.feature_types())


def _trainable_part(part, id_col, label, thresholds, seed):
    """The rows of one partition a model may train on (see ``trainable_rows``)."""
    ids, labels = part[id_col].to_numpy(), part[label].to_numpy()
    return part[trainable_rows(ids, labels, thresholds, seed)]


def _prediction_meta(id_meta: pd.Series) -> pd.DataFrame:
    """The empty frame :func:`_predict_part` returns: ids of the input's type."""
    return pd.DataFrame({"id": id_meta.reset_index(drop=True), "p": np.array([], "f4")})


def _predict_part(part, booster, columns, id_col):
    """A model's probabilities for one partition's rows, with their ids."""
    X = part[columns].to_numpy(dtype=np.float32)
    proba = booster.inplace_predict(X) if len(part) else np.array([], "f4")
    return pd.DataFrame({"id": part[id_col].to_numpy(), "p": proba})


def _add_folds(part, id_col, label, hashes, n_folds, seed, thresholds, copies):
    """Add each row's fold and whether it may train (the training subsample)."""
    ids, labels = part[id_col].to_numpy(), part[label].to_numpy()
    folds = folds_from_hashes(ids, labels, hashes, n_folds, seed, copies)
    train = (
        np.ones(len(part), dtype=bool)
        if thresholds is None
        else trainable_rows(ids, labels, thresholds, seed)
    )
    return part.assign(_fold=folds, _train=train)


# ---------------------------------------------------------------------------------------
# Placement and waiting


def _round_robin(workers: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Yield ``submit`` placements that deal tasks to the workers in turn.

    A subproblem's fold tasks all depend on its rows, which sit on one worker; left to
    itself the scheduler queues every fold there and only work stealing moves some away,
    late. Dealt out (loosely: stealing may still move them) they start at once.
    """
    if not workers:
        return itertools.repeat({})
    return ({"workers": [w], "allow_other_workers": True} for w in itertools.cycle(sorted(workers)))


def choose_engine(
    workers: dict[str, dict[str, Any]], n_rows: int, n_features: int, engine: str
) -> str:
    """The engine for ``engine="auto"``, from the workers' memory limits (``scheduler_info``)."""
    if engine != "auto":
        return engine
    limits = [w.get("memory_limit") or 0 for w in workers.values()]
    smallest = min((m for m in limits if m), default=0)
    size = n_rows * n_features * 4
    return "dask" if smallest and size > TASK_MEMORY_SHARE * smallest else "task"


class DaskExecutor:
    """A PU table as a Dask dataframe on a cluster.

    Parameters
    ----------
    client : distributed.Client
    puf : PUFrame
        The lazy input (see :func:`pulsnar_dask.io.read_pu_parquet`).
    engine : {"auto", "task", "dask"}
        How a scoring runs: one task per fold on rows gathered to one worker, or
        ``xgboost.dask`` over all workers; ``auto`` by size.
    show_progress : bool
        Progress bars on stderr for the fan-outs.
    """

    threads = 1  # parallelism comes from concurrent tasks: one XGBoost thread each

    def __init__(self, client: Client, puf: PUFrame, engine: str = "auto", show_progress=False):
        if engine not in ENGINES:
            raise PUError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        self.client = client
        self.puf = puf
        self.features = list(puf.features)
        self.requested_engine = self.engine = engine
        self.show_progress = show_progress

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Settle the schema (the categorical features' categories are counted on the
        workers), persist the table on the workers with categories as codes, check it,
        and bring ids and labels here."""
        puf = self.puf
        self.schema = self._schema()
        columns = [puf.id, puf.label] + ([puf.true_label] if puf.true_label else [])
        keep = [*self.schema.names, *columns]
        with EXPRESSIONS:
            frame = puf.frame[keep]
            if self.schema.categories:
                meta = self.schema.encode_part(frame._meta)
                frame = frame.map_partitions(self.schema.encode_part, meta=meta)
            frame = self.client.persist(frame)
            self.puf = puf = replace(puf, frame=frame, features=self.schema.names)
            self.features = self.schema.names
            features = frame[puf.features]
            counts_meta = pd.DataFrame({c: pd.Series(dtype="int64") for c in puf.features})
            unrepresentable = self.client.compute(
                features.map_partitions(unrepresentable_counts, meta=counts_meta).sum()
            )
            distinct = self.client.compute(
                features.map_partitions(_distinct_counts, meta=counts_meta).max()
            )
            meta = frame._meta[columns].assign(**{CONTENT: np.array([], dtype=np.uint64)})
            table = self.client.compute(
                frame.map_partitions(_table_part, columns, puf.features, meta=meta)
            )
            self.parts = self.client.compute(frame.to_delayed())
        check_representable(unrepresentable.result())
        table = table.result().sort_values(puf.id, kind="stable")
        ids, labels = table[puf.id].to_numpy(), table[puf.label].to_numpy()
        check_labels(ids, labels, f"id column '{puf.id}'", f"label column '{puf.label}'")
        self.row_ids, self.labels = ids, labels.astype(np.int8)
        self.copies = CopyGroups.of_rows(
            ids, table[CONTENT].to_numpy(), distinct.result().to_numpy()
        )
        self._shared_copies = share(self.client, self.copies)
        workers = self.client.scheduler_info()["workers"]
        self.engine = choose_engine(workers, ids.size, len(self.features), self.requested_engine)
        self._placements = _round_robin(workers)
        true = table[puf.true_label].to_numpy() if puf.true_label else None
        return self.row_ids, self.labels, true

    def _schema(self) -> FeatureSchema:
        """The features' schema; categorical columns with too many categories are left
        out with a warning, or refused when the user named them."""
        puf = self.puf
        distinct: dict[str, list] = {}
        n_rows = None
        if puf.categorical:
            meta = distinct_part(puf.frame._meta, puf.categorical, 0)
            with EXPRESSIONS:
                parts = puf.frame[puf.categorical].map_partitions(
                    distinct_part, puf.categorical, MAX_CATEGORIES + 1, meta=meta
                )
                lengths = puf.frame[puf.categorical[:1]].map_partitions(len).sum()
                futures = self.client.compute([parts, lengths])
            table, n_rows = (f.result() for f in futures)
            distinct = {c: table["value"][table["column"] == c].tolist() for c in puf.categorical}
        try:
            schema, left_out = schema_from_categories(puf.features, distinct, puf.explicit, n_rows)
        except ValueError as exc:
            raise PUError(str(exc)) from None
        if left_out:
            logger.warning(
                "leaving out categorical column(s) with more than %d distinct values, or "
                "one for most rows (identifiers or free text?): %s; name them with "
                "--features to be told why",
                MAX_CATEGORIES,
                ", ".join(left_out),
            )
        if schema.categories:
            logger.info("categorical features: %s", ", ".join(schema.categorical))
        return schema

    def _get(self, collection: Any) -> Any:
        """Compute a collection on this executor's client (never a default one); the
        caller builds it under :data:`EXPRESSIONS`, as this submits it, and the wait
        is outside the lock."""
        with EXPRESSIONS:
            future = self.client.compute(collection)
        return future.result()

    def _gather(self, futures: list[Future]) -> list[Any]:
        if self.show_progress:
            with contextlib.redirect_stdout(sys.stderr):  # Dask draws its bar on stdout
                progress(futures, notebook=False, scheduler=self.client.scheduler.address)
        else:
            wait(futures)
        return self.client.gather(futures)

    def importance(self, config: PUConfig, seed: int) -> np.ndarray:
        """Gain importance on the positives and the capped unlabeled rows, which the
        workers pick: one task on the ``task`` engine (the same model as in process),
        ``xgboost.dask`` over the workers on the ``dask`` engine."""
        puf = self.puf
        thresholds = subsample_thresholds(
            self.row_ids, self.labels, config.max_unlabeled_ratio, config.max_train_rows, seed
        )
        with EXPRESSIONS:
            frame = puf.frame
            if thresholds is not None:
                frame = frame.map_partitions(
                    _trainable_part, puf.id, puf.label, thresholds, seed, meta=frame._meta
                )
        if self.engine == "dask":
            params = booster_params(config.xgb_params, seed, config.n_threads)
            booster = self._train(frame, self.features, params, config.n_rounds, self.schema)
            scores = booster.get_score(importance_type="gain")
            return np.array([scores.get(c, 0.0) for c in self.features])
        with EXPRESSIONS:
            parts = self.client.compute(frame.to_delayed())
        return self.client.submit(
            _gain_task, parts, self.schema, puf.label, puf.id, config, seed, pure=False
        ).result()

    def _train(
        self,
        frame: dd.DataFrame,
        columns: list[str],
        params: dict,
        n_rounds: int,
        schema: FeatureSchema,
    ):
        """An XGBoost model trained on ``xgboost.dask``, each worker on its partitions,
        positives weighted as in process (``scale_pos_weight``)."""
        import xgboost.dask as dxgb

        label = self.puf.label
        types = schema.feature_types(columns)
        with EXPRESSIONS:
            counts = self.client.compute([(frame[label] == 1).sum(), frame.shape[0]])
            dtrain = dxgb.DaskQuantileDMatrix(
                self.client,
                frame[columns],
                frame[label],
                max_bin=params.get("max_bin", 256),
                feature_types=types,
                enable_categorical=types is not None,
            )
        n_pos, n_all = self.client.gather(counts)
        return dxgb.train(
            self.client,
            {**params, "scale_pos_weight": (n_all - n_pos) / max(n_pos, 1)},
            dtrain,
            num_boost_round=n_rounds,
        )["booster"]

    def positives(self, columns: Sequence[str]) -> np.ndarray:
        puf = self.puf
        with EXPRESSIONS:
            frame = puf.frame
            positive = frame[frame[puf.label] == 1][[puf.id, *columns]]
        rows = self._get(positive)
        return rows.sort_values(puf.id, kind="stable")[list(columns)].to_numpy(np.float32)

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        """Submit every call at once; each array they share goes to the cluster once
        (:func:`share`)."""
        sent: dict[int, Future] = {}
        for args in calls:
            for a in args:
                if isinstance(a, np.ndarray) and id(a) not in sent:
                    sent[id(a)] = share(self.client, a)
        futures = [
            self.client.submit(fn, *[sent.get(id(a), a) for a in args], pure=False)
            for args in calls
        ]
        return self._gather(futures)

    def _request_rows(self, request: ScoreRequest) -> tuple[np.ndarray, np.ndarray]:
        """A request's row ids and labels (after relabeling), by ascending id."""
        keep, labels = request.rows(self.row_ids, self.labels)
        return self.row_ids[keep], labels

    def score(self, requests: Sequence[ScoreRequest]) -> list[Scored]:
        if self.engine == "dask":
            return [self._score_dask(r) for r in requests]
        pending = []
        for r in requests:
            data = self.client.submit(
                _scoring_rows_task, self.parts, r, self.puf.label, self.puf.id,
                self._shared_copies, key=f"{r.name}-rows-{uuid.uuid4().hex[:8]}",
            )  # fmt: skip
            # task keys name the work (``cluster2-it0-fold3-<id>``), so the dashboard's
            # task stream shows which subproblems run side by side
            pending.append(
                [
                    self.client.submit(
                        _fold_task,
                        data,
                        fold,
                        r,
                        key=f"{r.name}-fold{fold}-{uuid.uuid4().hex[:8]}",
                        **next(self._placements),
                    )
                    for fold in range(r.config.n_folds)
                ]
            )
        done = iter(self._gather([f for futures in pending for f in futures]))
        out = []
        for r, futures in zip(requests, pending, strict=True):
            ids, labels = self._request_rows(r)
            folds = assign_folds(ids, labels, r.config.n_folds, r.seed, self.copies)
            proba = np.empty(labels.size)
            models = []
            for fold in range(len(futures)):
                proba[folds == fold], model = next(done)
                models.append(model)
            out.append(Scored(ids, labels, proba, models))
        return out

    def _score_dask(self, request: ScoreRequest) -> Scored:
        """One scoring on ``xgboost.dask``: each fold's model trained on all workers,
        then every row scored where it lies (only ids and probabilities come back)."""
        puf, config, seed = self.puf, request.config, request.seed
        row_ids, labels = self._request_rows(request)
        hashes = share(self.client, sorted_label_hashes(row_ids, labels, seed))
        thresholds = subsample_thresholds(
            row_ids, labels, config.max_unlabeled_ratio, config.max_train_rows, seed
        )
        relabel = request.positive_ids is not None or request.flipped_ids is not None
        shared = share(self.client, request) if relabel else None  # its id arrays, sent once
        with EXPRESSIONS:
            frame = puf.frame
            if relabel:
                frame = frame.map_partitions(
                    _request_part,
                    shared,
                    puf.label,
                    puf.id,
                    meta=frame._meta.assign(**{puf.label: np.array([], dtype=np.int8)}),
                )
            meta = frame._meta.assign(
                _fold=np.array([], dtype=np.int8), _train=np.array([], dtype=bool)
            )
            # not persisted: a second copy of the table would double the workers' memory
            frame = frame.map_partitions(
                _add_folds,
                puf.id,
                puf.label,
                hashes,
                config.n_folds,
                seed,
                thresholds,
                self._shared_copies,
                meta=meta,
            )
        params = booster_params(config.xgb_params, seed, config.n_threads)
        columns = list(request.features)
        scored, models = [], []
        for fold in range(config.n_folds):
            logger.info("%s: fold %d of %d on xgboost.dask", request.name, fold + 1, config.n_folds)
            with EXPRESSIONS:
                train = frame[(frame["_fold"] != fold) & frame["_train"]]
            booster = self._train(train, columns, params, config.n_rounds, self.schema)
            models.append(bytes(booster.save_raw(raw_format="json")))
            with EXPRESSIONS:
                held_out = frame[frame["_fold"] == fold]
                predicted = held_out.map_partitions(
                    _predict_part, booster, columns, puf.id, meta=_prediction_meta(meta[puf.id])
                )
            scored.append(self._get(predicted))
        table = pd.concat(scored, ignore_index=True).sort_values("id", kind="stable")
        ids = table["id"].to_numpy()
        probabilities = table["p"].to_numpy(float)
        return Scored(ids, labels[np.searchsorted(row_ids, ids)], probabilities, models)


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
    """Run PULSCAR or PULSNAR on a Dask dataframe: the pipeline
    (:func:`~pulsnar_dask.pipeline.stages.run_pipeline`) on a :class:`DaskExecutor`.

    Parameters
    ----------
    client : distributed.Client
    puf : PUFrame
        The lazy input (see :func:`pulsnar_dask.io.read_pu_parquet`).
    method, config, seed, iterations, calibrate_probabilities, classify, on_stage
        As :func:`~pulsnar_dask.pipeline.stages.run_pipeline`.
    engine : {"auto", "task", "dask"}
        One task per scoring, ``xgboost.dask`` over all workers, or by size.
    show_progress : bool
        Progress bars on stderr for the fan-outs.

    Returns
    -------
    JobResult
    """
    executor = DaskExecutor(client, puf, engine, show_progress)
    return run_pipeline(
        executor,
        method=method,
        config=config,
        seed=seed,
        iterations=iterations,
        calibrate_probabilities=calibrate_probabilities,
        classify=classify,
        on_stage=on_stage,
        settings={"engine": engine},
    )
