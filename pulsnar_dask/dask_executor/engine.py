"""The Dask executor: the pipeline's heavy steps over a Dask cluster.

The table stays on the workers as a persisted Dask dataframe and no step gathers it
onto one worker. The client receives the row ids and labels (to check them and align
results), the labeled positives' clustering features, and probability vectors. What
reaches one task:

- the importance model and each fold model of a scoring (subproblem or retrain): the
  rows the model may train on (the positives and the capped unlabeled rows, at most
  ``max_train_rows``), picked on the workers by a hash of the row id (the same rows the
  in-process executor picks) and put in canonical order; on the ``dask`` engine
  ``xgboost.dask`` trains them over all workers on their own partitions instead;
- the mixture fits: the positives' clustering matrix, one task per mixture size.

Every row is then scored by its fold's model on the worker that holds it, and only ids
and probabilities come back; the workers keep them too, partition by partition, and
count the interval's resamples there (:meth:`DaskExecutor.map_reduce`).
``engine="auto"`` picks ``dask`` when the largest training set is above
``TASK_MEMORY_SHARE`` of the smallest worker's memory limit (with the default cap of
200,000 rows: past about 200 features per GiB of that limit, or with no cap on a table
near a worker's memory), and logs the choice.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.utils import funcname
from distributed import Client, Future, as_completed, progress, wait

from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.folds import (
    NO_COPIES,
    CopyGroups,
    FoldKeys,
    KeysPiece,
    content_hashes,
    folds_from_hashes,
    id_checksum,
    identical_by_chance,
    take_rows,
    trainable_rows,
)
from pulsnar_dask.core.map_reduce import Tally, piece_tally, summed, summed_over
from pulsnar_dask.core.schema import (
    MAX_CATEGORIES,
    FeatureSchema,
    distinct_part,
    schema_from_categories,
)
from pulsnar_dask.core.scoring import (
    booster_params,
    fold_model,
    fold_predictions,
    json_model,
    model_bytes,
)
from pulsnar_dask.core.subproblem import check_counts
from pulsnar_dask.core.subtypes import importance_model_gain
from pulsnar_dask.dask_executor.malloc import with_heap_blocks
from pulsnar_dask.dask_executor.partitions import stored
from pulsnar_dask.dask_executor.sending import share
from pulsnar_dask.errors import PUError
from pulsnar_dask.io import PUFrame
from pulsnar_dask.pipeline.checks import (
    check_labels,
    check_representable,
    refuse_true_labels,
    true_label_values,
    unrepresentable_counts,
)
from pulsnar_dask.pipeline.executor import Scored, ScoreRequest, TableRows, Truth
from pulsnar_dask.pipeline.result import JobResult
from pulsnar_dask.pipeline.stages import run_pipeline

logger = logging.getLogger(__name__)

ENGINES = ("auto", "task", "dask")
# A model trains in one task when its training rows are below this share of the
# smallest worker's memory limit (XGBoost needs a few copies of them).
TASK_MEMORY_SHARE = 0.15
SUM_FAN_IN = 8  # per-partition results summed by one task (map_reduce's tree)


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


def _request_rows(part, request: ScoreRequest, label, id_col) -> tuple[np.ndarray, ...]:
    """A partition's rows of a scoring: (keep, ids, labels) as
    :meth:`~pulsnar_dask.pipeline.executor.ScoreRequest.rows` gives them."""
    ids = part[id_col].to_numpy()
    keep, labels = request.rows(ids, part[label].to_numpy())
    return keep, ids[keep], labels


def _keys_piece(part, request: ScoreRequest, label, id_col) -> KeysPiece:
    """A partition's share of a scoring's :class:`~pulsnar_dask.core.folds.FoldKeys`."""
    _, ids, labels = _request_rows(part, request, label, id_col)
    return FoldKeys.piece(ids, labels, request.seed)


def _merged_keys(request: ScoreRequest, *pieces: KeysPiece) -> FoldKeys:
    """A scoring's keys from every partition's share."""
    config = request.config
    return FoldKeys.of_pieces(pieces, config.max_unlabeled_ratio, config.max_train_rows)


def _summary(keys: FoldKeys) -> FoldKeys:
    """:meth:`~pulsnar_dask.core.folds.FoldKeys.summary`, on the worker that holds the keys."""
    return keys.summary()


def _scoring_rows(
    part, request: ScoreRequest, label, id_col, keys: FoldKeys, copies, training: bool = True
):
    """A partition's rows of a scoring, as
    :func:`~pulsnar_dask.core.subproblem.canonical_subproblem` gives the same rows in
    process (found from the scoring's fold hashes and subsample cut-offs).

    Returns
    -------
    (keep, ids, labels, folds, train)
        ``keep``: the partition's rows the scoring uses (mask); for those rows, their
        ids, the labels the models train on, their folds and whether each may train
        (None where not ``training``).
    """
    keep, ids, labels = _request_rows(part, request, label, id_col)
    config, seed = request.config, request.seed
    folds = folds_from_hashes(ids, labels, keys.sorted_hashes, config.n_folds, seed, copies)
    train = trainable_rows(ids, labels, keys.thresholds, seed) if training else None
    return keep, ids, labels, folds, train


def _scoring_part(part, request: ScoreRequest, label, id_col, keys: FoldKeys, copies):
    """A partition's rows of a scoring as a frame for ``xgboost.dask``: relabeled, with
    each row's fold (``_fold``) and whether it may train (``_train``)."""
    keep, _, labels, folds, train = _scoring_rows(part, request, label, id_col, keys, copies)
    rows = part if keep.all() else part[keep]
    return rows.assign(**{label: labels}, _fold=folds, _train=train)


def _features(part, request: ScoreRequest, rows: np.ndarray) -> np.ndarray:
    """The float32 features of a partition's ``rows`` (positions) that the models see."""
    return part[list(request.features)].iloc[rows].to_numpy(dtype=np.float32)


def _training_piece(part, request: ScoreRequest, label, id_col, keys: FoldKeys, copies):
    """A partition's training rows of a scoring: (ids, labels, folds, features)."""
    keep, ids, labels, folds, train = _scoring_rows(part, request, label, id_col, keys, copies)
    X = _features(part, request, np.flatnonzero(keep)[train])
    return ids[train], labels[train], folds[train], X


def _training_rows(pieces) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A scoring's training rows on one worker, by row id (the order the in-process
    executor trains in): (features, labels, folds)."""
    ids, labels, folds, X = (np.concatenate(column) for column in zip(*pieces, strict=True))
    return take_rows(np.argsort(ids, kind="stable"), X, labels, folds)


def _fold_model_task(training, fold, request: ScoreRequest, widened_to: int = 0, *after) -> bytes:
    """One fold's model; ``widened_to``: XGBoost threads of a fold that waited for
    ``after`` (the other folds) to use the idle threads of its host
    (:func:`tail_fold_threads`)."""
    X, y, folds = training
    config = request.config
    with widened(widened_to, config.n_threads) as n:
        params = booster_params(config.xgb_params, request.seed, n)
        return fold_model(X, y, folds, fold, params, config.n_rounds, None, request.feature_types)


def _predicted_piece(part, request: ScoreRequest, label, id_col, keys: FoldKeys, copies, models):
    """A partition's rows of a scoring, each scored by the model of its fold:
    (probabilities, the labels the models trained on, ids), the rows in the partition's
    order."""
    keep, ids, labels, folds, _ = _scoring_rows(part, request, label, id_col, keys, copies, False)
    X = _features(part, request, np.flatnonzero(keep))
    return fold_predictions(models, X, folds, request.config.n_threads), labels, ids


def _unpacked(per_piece: Callable[..., Any], piece: list, args: tuple) -> Any:
    """``per_piece(piece, *args)``, its arguments sent once for every partition."""
    return per_piece(piece, *args)


def _sum_all(*values: Any) -> Any:
    """The :func:`~pulsnar_dask.core.map_reduce.summed` of per-partition results."""
    return functools.reduce(summed, values)


CONTENT = "__content_hash__"  # each row's content_hashes, beside its id and label


def _checked_rows(
    table: pd.DataFrame, id_col: str, label: str, names: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray, CopyGroups]:
    """The table's ids (ascending) and labels, checked
    (:func:`~pulsnar_dask.pipeline.checks.check_labels`), and its groups of identical
    rows."""
    table = table.sort_values(id_col, kind="stable")
    ids, labels = table[id_col].to_numpy(), table[label].to_numpy()
    check_labels(ids, labels, *names)
    return ids, labels.astype(np.int8), CopyGroups.identical(ids, table[CONTENT].to_numpy())


def _refusal_returned(check: Callable[..., Any], *args: Any) -> Any:
    """``check(*args)``, or the :class:`PUError` it raises as its value: a mistake in the
    input, found on a worker, comes back as one line (:func:`_refused`), not as a failed
    task that the worker logs."""
    try:
        return check(*args)
    except PUError as exc:
        return exc


def _refused(value: Any) -> Any:
    """``value``, unless it is a refusal a worker returned, which is raised here."""
    if isinstance(value, PUError):
        raise value
    return value


def _rows_read(held: tuple | PUError) -> tuple[TableRows, int] | PUError:
    """What the client keeps of :func:`_checked_rows`: the counts and the positives'
    ids (no ``fetch``: the client sets it), and how many rows are identical to another."""
    if isinstance(held, PUError):
        return held
    ids, labels, identical = held
    return replace(TableRows.of(ids, labels), fetch=None), len(identical)


def _item(value: Sequence[Any], index: int) -> Any:
    """``value[index]``, where a worker holds ``value``."""
    return value[index]


def _id_label_part(part: pd.DataFrame, id_col: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    """A partition's ids and labels."""
    return part[id_col].to_numpy(), part[label].to_numpy().astype(np.int8)


def _positive_piece(
    part: pd.DataFrame, id_col: str, label: str, columns: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """A partition's labeled positives: their ids and ``columns`` as float32."""
    positive = (part[label] == 1).to_numpy()
    return part[id_col].to_numpy()[positive], part.loc[positive, columns].to_numpy(np.float32)


def _truth_part(
    part: pd.DataFrame, id_col: str, label: str, true_label: str
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], pd.Series]:
    """A partition's (ids, labels, true labels), and the rows of each true label that is
    not a whole number from 0 (:func:`~pulsnar_dask.pipeline.checks.true_label_values`)."""
    truth, bad = true_label_values(part[true_label].to_numpy())
    return (part[id_col].to_numpy(), part[label].to_numpy().astype(np.int8), truth), bad


def _unlabeled_truth(truth: tuple) -> tuple[int, int]:
    """A partition's unlabeled rows, and how many of them are positive."""
    _, labels, true = truth
    unlabeled = labels == 0
    return int(unlabeled.sum()), int(np.sum(true[unlabeled] > 0))


def _table_part(part: pd.DataFrame, columns: list[str], features: list[str]) -> pd.DataFrame:
    """A partition's ``columns`` and the hash of its features' values (:data:`CONTENT`)."""
    with np.errstate(over="ignore"):  # values float32 cannot hold are refused after
        values = part[features].to_numpy(dtype=np.float32)
    return part[columns].assign(**{CONTENT: content_hashes(values)})


def _distinct_counts(part: pd.DataFrame) -> pd.DataFrame:
    """Each column's number of distinct values in one partition (one row; the largest over
    the partitions is a lower bound of the table's)."""
    return part.nunique(dropna=False).to_frame().T.astype("int64")


@contextlib.contextmanager
def widened(threads: int, otherwise: int | None = None) -> Iterator[int | None]:
    """Let a task's XGBoost model use ``threads`` threads of its host, no more than its
    worker's process may run on: yield that count (``threads`` 0: not widened, yield
    ``otherwise`` and leave the limit as it is).

    A local cluster's workers start with ``OMP_NUM_THREADS=1`` (Dask's nanny sets it,
    and so one worker's NumPy does not take every core), and XGBoost caps its threads by
    OpenMP's limit whatever its ``nthread``: the limit is lifted while the task runs.
    XGBoost is imported first: a limit can only be lifted in an OpenMP runtime already
    loaded, and a worker not forked from the preloaded server may not have loaded one.
    """
    if not threads:
        yield otherwise
        return
    import xgboost  # noqa: F401 - loads the OpenMP runtime whose limit is lifted
    from threadpoolctl import threadpool_limits

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    threads = min(threads, cores or os.cpu_count() or 1)
    with threadpool_limits(threads, user_api="openmp"):
        yield threads


def _gain_task(parts, schema: FeatureSchema, label, id_col, config, seed, widened_to: int):
    X, y, ids = _rows(parts, schema.names, label, id_col)
    with widened(widened_to, config.n_threads) as n:
        return importance_model_gain(
            X, y, ids, config.with_(n_threads=n), seed, schema.feature_types()
        )


def _trainable_part(part, id_col, label, thresholds, seed):
    """The rows of one partition a model may train on (see ``trainable_rows``)."""
    ids, labels = part[id_col].to_numpy(), part[label].to_numpy()
    return part[trainable_rows(ids, labels, thresholds, seed)]


# ---------------------------------------------------------------------------------------
# Placement and waiting


def largest_host(workers: dict[str, dict[str, Any]]) -> tuple[int, list[str]]:
    """The host whose workers hold the most threads (``scheduler_info``'s workers):
    those threads and the workers' addresses; ``(1, [])`` without workers.

    A model trained while nothing else runs (the importance model) may use them all.
    """
    hosts: dict[str, dict[str, int]] = {}
    for address, info in workers.items():
        hosts.setdefault(info.get("host", address), {})[address] = int(info.get("nthreads", 1))
    if not hosts:
        return 1, []
    host = max(sorted(hosts), key=lambda h: sum(hosts[h].values()))
    return sum(hosts[host].values()), sorted(hosts[host])


def lone_task_threads(
    asked: int | None, host_threads: int, busy: bool, per_task: int
) -> tuple[int, bool]:
    """XGBoost threads for a model its job trains while running nothing else (the
    importance model).

    Parameters
    ----------
    asked : int or None
        The user's ``n_threads``; ``None``: not set.
    host_threads : int
        The threads of the workers on the host the task goes to (:func:`largest_host`).
    busy : bool
        Whether the cluster is running other tasks (another job's) as the task is sent.
    per_task : int
        Threads of a task that runs beside others.

    Returns
    -------
    (threads, widened)
        ``asked`` where set (XGBoost's own meaning, 0 or less all cores included);
        otherwise the host's threads where the cluster is idle (``widened``: the task
        caps them by the cores its process may run on), ``per_task`` where it is busy.
        The model is the same whatever the count: XGBoost's histogram method sums in a
        fixed order.
    """
    if asked is not None:
        return asked, False
    if busy or host_threads <= per_task:
        return per_task, False
    return host_threads, True


def tail_fold_threads(
    n_folds: int, asked: int | None, threads: int, one_host: bool, busy: bool
) -> tuple[int, int]:
    """How a scoring's last round of folds uses the threads the other folds leave idle.

    Five folds on two single-threaded workers run in three rounds, the last of them one
    fold beside an idle worker. Such folds wait for the others and then train with the
    idle threads too: XGBoost's model is the same whatever its thread count (its
    histogram method sums in a fixed order).

    Parameters
    ----------
    n_folds : int
        The scoring's fold models (the only models of their fan-out).
    asked : int or None
        The user's ``n_threads``; set, nothing is widened.
    threads : int
        The workers' threads.
    one_host : bool
        Whether the workers all run on one host (a fold's threads cannot span hosts).
    busy : bool
        Whether the cluster runs other tasks (another job's) as the folds are sent.

    Returns
    -------
    (waiting, widened_to)
        The last ``waiting`` folds wait for the others and train with ``widened_to``
        threads each; ``(0, 0)``: none.
    """
    last_round = n_folds % threads
    if asked is not None or busy or not one_host or not last_round:
        return 0, 0
    widened_to = threads // last_round
    return (last_round, widened_to) if widened_to > 1 else (0, 0)


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
    workers: dict[str, dict[str, Any]], n_train_rows: int, n_features: int, engine: str
) -> str:
    """The engine for ``engine="auto"``, from the workers' memory limits
    (``scheduler_info``) and the most rows a model trains on."""
    if engine != "auto":
        return engine
    limits = [w.get("memory_limit") or 0 for w in workers.values()]
    smallest = min((m for m in limits if m), default=0)
    size = n_train_rows * n_features * 4
    return "dask" if smallest and size > TASK_MEMORY_SHARE * smallest else "task"


class DaskExecutor:
    """A PU table as a Dask dataframe on a cluster.

    Parameters
    ----------
    client : distributed.Client
    puf : PUFrame
        The lazy input (see :func:`pulsnar_dask.io.read_pu_parquet`).
    engine : {"auto", "task", "dask"}
        How a model trains: one task on its training rows gathered to one worker, or
        ``xgboost.dask`` over all workers; ``auto`` by size.
    show_progress : bool
        Progress bars on stderr for the fan-outs.
    max_train_rows : int or None
        The most rows a model trains on, which sizes ``engine="auto"``'s choice: the
        ``max_train_rows`` of the settings the pipeline runs with (as :func:`run_job`
        and the estimators pass it); ``None``: all.
    n_threads : int or None
        The user's ``n_threads`` of those settings; set, no model is widened to the
        threads of its host (:func:`tail_fold_threads`; the importance model is told
        by the pipeline).
    """

    threads = 1  # parallelism comes from concurrent tasks: one XGBoost thread each

    def __init__(
        self,
        client: Client,
        puf: PUFrame,
        engine: str = "auto",
        show_progress: bool = False,
        max_train_rows: int | None = PUConfig.max_train_rows,
        n_threads: int | None = PUConfig.n_threads,
    ):
        check_choice("engine", engine, ENGINES, PUError)
        self.client = client
        self.puf = puf
        self.features = list(puf.features)
        self.requested_engine = self.engine = engine
        self.show_progress = show_progress
        self.max_train_rows = max_train_rows
        self.asked_threads = n_threads

    def read(self) -> tuple[TableRows, Truth | None]:
        """Settle the schema (the categorical features' categories are counted on the
        workers), store the table on the workers with categories as codes and check it
        there: only counts, the labeled positives' ids and any copies come here."""
        puf = self.puf
        self.schema = self._schema()
        columns = [puf.id, puf.label]
        keep = [*self.schema.names, *columns, *([puf.true_label] if puf.true_label else [])]
        with EXPRESSIONS:
            frame = puf.frame[keep]
            if self.schema.categories:
                meta = self.schema.encode_part(frame._meta)
                frame = frame.map_partitions(self.schema.encode_part, meta=meta)
            frame, self.parts = stored(self.client, frame)
            self.puf = puf = replace(puf, frame=frame, features=self.schema.names)
            self.features = self.schema.names
            features = frame[puf.features]
            counts_meta = pd.DataFrame({c: pd.Series(dtype="int64") for c in puf.features})
            unrepresentable = self.client.compute(
                features.map_partitions(unrepresentable_counts, meta=counts_meta).sum()
            )
            distinct = features.map_partitions(_distinct_counts, meta=counts_meta).max()
            meta = frame._meta[columns].assign(**{CONTENT: np.array([], dtype=np.uint64)})
            table = self.client.compute(
                frame.map_partitions(_table_part, columns, puf.features, meta=meta)
            )
        check_representable(unrepresentable.result())
        names = (f"id column '{puf.id}'", f"label column '{puf.label}'")
        held = self.client.submit(_refusal_returned, _checked_rows, table, puf.id, puf.label, names)
        rows, n_identical = _refused(self.client.submit(_rows_read, held).result())
        # the distinct values are counted, and the groups brought here, only where some
        # rows are identical; the checked columns then go from the worker
        self.copies = NO_COPIES
        if n_identical and not identical_by_chance(rows.n_rows, self._get(distinct).to_numpy()):
            self.copies = self.client.submit(_item, held, 2).result()
        del held, table
        rows.fetch = self._ids_and_labels
        self._shared_copies = share(self.client, self.copies)
        # settled here (milliseconds: the partitions are held already), so that the
        # checks for other jobs' tasks before a widened model see none of this one's
        wait([self._shared_copies, *self.parts])
        workers = self.client.scheduler_info()["workers"]
        n_train = min(rows.n_rows, self.max_train_rows or rows.n_rows)
        self.engine = choose_engine(workers, n_train, len(self.features), self.requested_engine)
        self._placements = _round_robin(workers)
        self._largest_host = largest_host(workers)
        self._one_host = len(self._largest_host[1]) == len(workers)
        return rows, self._truth() if puf.true_label else None

    def _truth(self) -> Truth:
        """The true-label column, checked and kept on the workers partition by
        partition, and the true alpha.

        Raises
        ------
        PUError
            Naming the wrong values and their rows in the whole column.
        """
        puf = self.puf
        checked = [
            self.client.submit(_truth_part, part, puf.id, puf.label, puf.true_label)
            for part in self.parts
        ]
        bad = pd.concat(self._gather([self.client.submit(_item, c, 1) for c in checked]))
        if len(bad):
            bad = bad.groupby(level=0, dropna=False, sort=False).sum()
            bad = bad.sort_values(ascending=False, kind="stable")
        refuse_true_labels(bad, f"true-label column '{puf.true_label}'")
        parts = [self.client.submit(_item, c, 0) for c in checked]
        counts = self._gather([self.client.submit(_unlabeled_truth, p) for p in parts])
        n_unlabeled, n_positive = np.sum(counts, axis=0)
        return Truth(parts, float(n_positive / n_unlabeled))

    def _ids_and_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row's id (ascending) and label, brought from the partitions: the vectors
        of the Python API (:class:`~pulsnar_dask.pipeline.executor.TableRows`)."""
        puf = self.puf
        parts = [self.client.submit(_id_label_part, p, puf.id, puf.label) for p in self.parts]
        ids, labels = (np.concatenate(c) for c in zip(*self._gather(parts), strict=True))
        order = np.argsort(ids, kind="stable")
        return ids[order], labels[order]

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

    def _busy(self) -> bool:
        """Whether any task runs on the cluster: another job's, as this one settles its
        own before it widens a model (:meth:`read`)."""
        return any(self.client.processing().values())

    def _get(self, collection: Any) -> Any:
        """Compute a collection on this executor's client (never a default one); the
        caller builds it under :data:`EXPRESSIONS`, as this submits it, and the wait
        is outside the lock."""
        with EXPRESSIONS:
            future = self.client.compute(collection)
        return future.result()

    def _wait(self, futures: list[Future]) -> None:
        """Wait for ``futures``, with a progress bar on stderr if asked for."""
        if self.show_progress:
            with contextlib.redirect_stdout(sys.stderr):  # Dask draws its bar on stdout
                progress(futures, notebook=False, scheduler=self.client.scheduler.address)
        else:
            wait(futures)

    def _gather(self, futures: list[Future]) -> list[Any]:
        self._wait(futures)
        return self.client.gather(futures)

    def importance(self, config: PUConfig, seed: int) -> np.ndarray:
        """Gain importance on the positives and the capped unlabeled rows, which the
        workers pick: one task on the ``task`` engine (the same model as in process),
        placed on the host with the most worker threads and using them all where the
        cluster runs nothing else (:func:`lone_task_threads`); ``xgboost.dask`` over the
        workers on the ``dask`` engine."""
        puf = self.puf
        everything = ScoreRequest(self.features, None, None, config, seed, "importance")
        _, summary = self._fold_keys(share(self.client, everything), "importance")
        thresholds = summary.result().thresholds
        with EXPRESSIONS:
            frame = puf.frame
            if thresholds is not None:
                frame = frame.map_partitions(
                    _trainable_part, puf.id, puf.label, thresholds, seed, meta=frame._meta
                )
        if self.engine == "dask":
            threads = self.threads if config.n_threads is None else config.n_threads
            params = booster_params(config.xgb_params, seed, threads)
            booster = self._train(frame, self.features, params, config.n_rounds, self.schema)
            scores = booster.get_score(importance_type="gain")
            return np.array([scores.get(c, 0.0) for c in self.features])
        busy = self._busy()  # before this job sends its tasks
        with EXPRESSIONS:
            parts = self.client.compute(frame.to_delayed())
        host_threads, addresses = self._largest_host
        threads, widen = lone_task_threads(config.n_threads, host_threads, busy, self.threads)
        return self.client.submit(
            _gain_task,
            parts,
            self.schema,
            puf.label,
            puf.id,
            config.with_(n_threads=threads),
            seed,
            threads if widen else 0,
            pure=False,
            **({"workers": addresses, "allow_other_workers": True} if addresses else {}),
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

    def positive_pieces(self, columns: Sequence[str]) -> list[Future]:
        """Each stored partition's labeled positives, kept on its worker."""
        puf, columns = self.puf, list(columns)
        pieces = [
            self.client.submit(_positive_piece, part, puf.id, puf.label, columns)
            for part in self.parts
        ]
        wait(pieces)
        return pieces

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        """Submit every call at once; each array they share goes to the cluster once
        (:func:`share`). The calls (the mixtures) make many few-MiB arrays: each runs
        with those served from the heap
        (:func:`~pulsnar_dask.dask_executor.malloc.heap_blocks`)."""
        sent: dict[int, Future] = {}
        for args in calls:
            for a in args:
                if isinstance(a, np.ndarray) and id(a) not in sent:
                    sent[id(a)] = share(self.client, a)
        futures = [
            self.client.submit(
                with_heap_blocks,
                fn,
                *[sent.get(id(a), a) for a in args],
                key=f"{funcname(fn)}-{uuid.uuid4().hex}",
            )
            for args in calls
        ]
        return self._gather(futures)

    def on_every_worker(self, fn: Callable[[], Any]) -> dict[str, Any]:
        """``fn()`` on every worker, outside its tasks (``Client.run``); where a worker
        cannot run it (it left, or restarted), the exception."""
        return self.client.run(fn, on_error="return")

    def _fold_keys(self, request: Future, name: str) -> tuple[Future, Future]:
        """A request's :class:`~pulsnar_dask.core.folds.FoldKeys` (the request shared),
        merged on a worker from every partition's share, so that the rows' ids and labels
        stay where they are held; the futures of the keys and of their
        :meth:`~pulsnar_dask.core.folds.FoldKeys.summary`."""
        pieces = [
            self.client.submit(_keys_piece, part, request, self.puf.label, self.puf.id)
            for part in self.parts
        ]
        keys = self.client.submit(
            _merged_keys, request, *pieces, key=f"{name}-keys-{uuid.uuid4().hex[:8]}"
        )
        return keys, self.client.submit(_summary, keys)

    def score(self, requests: Sequence[ScoreRequest]) -> list[Scored]:
        """Each request's fold models, trained on its training rows gathered to one task
        per fold (``task``) or on ``xgboost.dask`` (``dask``), then every row scored on
        the worker that holds it. The workers keep each row's probability, label and id
        partition by partition (``Scored.pieces``); only their counts and the labeled
        positives' probabilities come here (``Scored.tally``)."""
        puf, pending = self.puf, []
        tail = (0, 0)
        if len(requests) == 1 and self.engine == "task":  # its folds are the whole fan-out
            tail = tail_fold_threads(
                requests[0].config.n_folds,
                self.asked_threads,
                self._largest_host[0],
                self._one_host,
                self._busy(),  # before this scoring's tasks
            )
            if tail[0]:
                logger.debug(
                    "%s: the last %d fold(s) wait for the others and train on %d threads",
                    requests[0].name,
                    *tail,
                )
        shared = [share(self.client, r) for r in requests]  # their id arrays, sent once
        keyed = [self._fold_keys(s, r.name) for s, r in zip(shared, requests, strict=True)]
        for r, s, (held_keys, summary) in zip(requests, shared, keyed, strict=True):
            keys = summary.result()
            check_counts(keys.counts.get(1, 0), keys.counts.get(0, 0), r.config)
            rows = (s, puf.label, puf.id, held_keys)
            # the prediction tasks load the fold models as UBJSON; the client keeps them
            # as JSON (what a saved model holds), converted where they are
            if self.engine == "dask":
                fitted = self._dask_models(r, rows)
                models = [json_model(m) for m in fitted]
                fitted = share(self.client, fitted)  # sent once, not with every partition
            else:
                fitted = self._task_models(r, rows, tail)
                models = [
                    self.client.submit(json_model, m, key=f"{r.name}-json-{uuid.uuid4().hex[:8]}")
                    for m in fitted
                ]
            predicted = [
                self.client.submit(
                    _predicted_piece,
                    part,
                    *rows,
                    self._shared_copies,
                    fitted,
                    key=f"{r.name}-predict-{uuid.uuid4().hex[:8]}",
                )
                for part in self.parts
            ]
            pending.append((keys, models, predicted))
        futures = [f for *_, models, predicted in pending for f in [*models, *predicted]]
        self._wait([f for f in futures if isinstance(f, Future)])
        out = []
        for keys, models, predicted in pending:
            models = [m.result() if isinstance(m, Future) else m for m in models]
            (tally,) = self.map_reduce(piece_tally, Tally.in_id_order, [predicted], [()])
            if not (
                tally.positive_ids.size == keys.counts.get(1, 0)
                and id_checksum(tally.positive_ids) == keys.checksums.get(1, 0)
                and tally.counts.count(0) == keys.counts.get(0, 0)
                and tally.unlabeled_checksum == keys.checksums.get(0, 0)
            ):
                raise RuntimeError("a scoring's predictions do not cover its rows")
            out.append(Scored(tally, models, tuple(predicted)))
        return out

    def map_reduce(
        self,
        per_piece: Callable[..., Any],
        finish: Callable[[Any], Any],
        pieces: Sequence[Sequence[Future]],
        calls: Sequence[tuple],
    ) -> list[Any]:
        """Each call: ``per_piece`` on every partition's rows where a worker holds them
        (the scorings' ``pieces``, :mod:`pulsnar_dask.core.map_reduce`), each worker's
        partitions dealt into as many runs as it has threads, each run summing its
        partitions' results as they come
        (:func:`~pulsnar_dask.core.map_reduce.summed_over`), the runs
        summed on the workers (:data:`SUM_FAN_IN` at a time) and ``finish`` on a worker;
        only what ``finish`` returns comes here. Two calls are in flight at a time, so
        that a worker holds a few runs' results, whatever the partitions."""
        if not all(pieces):
            raise ValueError("the rows were released or not scored on this cluster")
        by_partition = [list(p) for p in zip(*pieces, strict=True)]
        runs = self._runs_by_worker(by_partition)
        name = funcname(per_piece)

        def start(args: tuple) -> Future:
            level = [
                self.client.submit(
                    with_heap_blocks,
                    summed_over,
                    per_piece,
                    pieces,
                    *args,
                    key=f"{name}-{uuid.uuid4().hex}",
                    **({"workers": [worker], "allow_other_workers": True} if worker else {}),
                )
                for worker, pieces in runs
            ]
            while len(level) > 1:
                level = [
                    self.client.submit(_sum_all, *level[i : i + SUM_FAN_IN], pure=False)
                    for i in range(0, len(level), SUM_FAN_IN)
                ]
            return self.client.submit(with_heap_blocks, finish, level[0], pure=False)

        results: list[Any] = [None] * len(calls)
        todo = iter(enumerate(calls))
        index: dict[str, int] = {}
        running = as_completed()
        for i, args in itertools.islice(todo, 2):
            future = start(args)
            index[future.key] = i
            running.add(future)
        for future in running:
            results[index.pop(future.key)] = future.result()
            for i, args in itertools.islice(todo, 1):
                follow = start(args)
                index[follow.key] = i
                running.add(follow)
        return results

    def map_pieces(
        self, per_piece: Callable[..., Any], pieces: Sequence[Sequence[Future]], args: tuple
    ) -> list[Future]:
        """``per_piece(piece, *args)`` on each partition's rows, on the worker that holds
        its first scoring's piece; ``args`` go to the cluster once. Returns the results'
        futures once every one is computed."""
        if not all(pieces):
            raise ValueError("the rows were released or not scored on this cluster")
        by_partition = [list(p) for p in zip(*pieces, strict=True)]
        held = self.client.who_has([p[0] for p in by_partition])
        shared = share(self.client, args)
        name = funcname(per_piece)
        futures = [
            self.client.submit(
                _unpacked,
                per_piece,
                piece,
                shared,
                key=f"{name}-{uuid.uuid4().hex}",
                **(
                    {"workers": sorted(held[piece[0].key])[:1], "allow_other_workers": True}
                    if held.get(piece[0].key)
                    else {}
                ),
            )
            for piece in by_partition
        ]
        self._wait(futures)
        return futures

    def gather(self, held: Sequence[Future]) -> list[Any]:
        return self._gather(list(held))

    def release(self, pieces: Sequence[Future]) -> None:
        """Drop pieces held on the workers (a scoring's rows, the labeled positives'),
        whatever references to their futures remain."""
        if pieces:
            self.client.cancel(list(pieces))

    def collect(self, pieces: Sequence[Future]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A scoring's rows gathered from the workers: (row ids, labels, probabilities),
        by ascending id."""
        proba, labels, ids = (
            np.concatenate(c) for c in zip(*self._gather(list(pieces)), strict=True)
        )
        order = np.argsort(ids, kind="stable")
        return ids[order], labels[order], proba[order]

    def _runs_by_worker(self, by_partition: list[list[Future]]) -> list[tuple[str | None, list]]:
        """The partitions' pieces dealt into runs: each worker's partitions (by where the
        first piece of each is held) into as many runs as the worker has threads."""
        held = self.client.who_has([pieces[0] for pieces in by_partition])
        threads = self.client.nthreads()  # every worker's (scheduler_info may list a few)
        on: dict[str | None, list] = {}
        for pieces in by_partition:
            where = held.get(pieces[0].key) or [None]
            on.setdefault(sorted(where)[0], []).append(pieces)
        return [
            (worker, mine[k :: threads.get(worker, 1)])
            for worker, mine in sorted(on.items(), key=lambda item: str(item[0]))
            for k in range(min(threads.get(worker, 1), len(mine)))
        ]

    def _task_models(
        self, request: ScoreRequest, rows: tuple, tail: tuple[int, int]
    ) -> list[Future]:
        """Fold models as tasks: the training rows (bounded by the training subsample)
        gathered to one worker, then one task per fold, dealt to the workers in turn so
        the folds (and the subproblems of a fan-out) train side by side. ``tail``: how
        the last round of folds widens (:func:`tail_fold_threads`)."""
        n_folds = request.config.n_folds
        waiting, widened_to = tail
        pieces = [
            self.client.submit(_training_piece, part, *rows, self._shared_copies)
            for part in self.parts
        ]
        training = self.client.submit(
            _training_rows, pieces, key=f"{request.name}-rows-{uuid.uuid4().hex[:8]}"
        )
        # task keys name the work (``cluster2-it0-fold3-<id>``), so the dashboard's task
        # stream shows which subproblems run side by side
        models = []
        for fold in range(n_folds):
            widen = fold >= n_folds - waiting
            models.append(
                self.client.submit(
                    _fold_model_task,
                    training,
                    fold,
                    rows[0],  # the request, shared: its id arrays are not sent once per fold
                    widened_to if widen else 0,
                    *(models[: n_folds - waiting] if widen else []),
                    key=f"{request.name}-fold{fold}-{uuid.uuid4().hex[:8]}",
                    **next(self._placements),
                )
            )
        return models

    def _dask_models(self, request: ScoreRequest, rows: tuple) -> list[bytes]:
        """Fold models on ``xgboost.dask``, each trained over all workers on their own
        partitions."""
        config, seed = request.config, request.seed
        with EXPRESSIONS:
            frame = self.puf.frame
            meta = frame._meta.assign(
                **{self.puf.label: np.array([], dtype=np.int8)},
                _fold=np.array([], dtype=np.int8),
                _train=np.array([], dtype=bool),
            )
            # not persisted: a second copy of the table would double the workers' memory
            frame = frame.map_partitions(_scoring_part, *rows, self._shared_copies, meta=meta)
        params = booster_params(config.xgb_params, seed, config.n_threads)
        models = []
        for fold in range(config.n_folds):
            logger.info("%s: fold %d of %d on xgboost.dask", request.name, fold + 1, config.n_folds)
            with EXPRESSIONS:
                train = frame[(frame["_fold"] != fold) & frame["_train"]]
            booster = self._train(
                train, list(request.features), params, config.n_rounds, self.schema
            )
            models.append(model_bytes(booster))
        return models


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
        Each model trained in one task, or on ``xgboost.dask`` over all workers, or by
        size.
    show_progress : bool
        Progress bars on stderr for the fan-outs.

    Returns
    -------
    JobResult
    """
    config = config or PUConfig()
    executor = DaskExecutor(
        client, puf, engine, show_progress, config.max_train_rows, config.n_threads
    )
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
