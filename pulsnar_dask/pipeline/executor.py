"""The executor seam: what the pipeline asks for (a scoring), what comes back, and the
protocol an executor follows where the feature table lives (in this process,
:class:`~pulsnar_dask.pipeline.in_process.InProcessExecutor`, or on a Dask cluster,
:class:`~pulsnar_dask.dask_executor.engine.DaskExecutor`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.folds import CopyGroups, sampled_rows
from pulsnar_dask.core.map_reduce import Tally
from pulsnar_dask.core.schema import FeatureSchema


@dataclass(frozen=True)
class ScoreRequest:
    """One cross-validated XGBoost scoring: a PULSCAR subproblem, or the retrain on
    recovered labels (Algorithm 4).

    Attributes
    ----------
    features : list of str
        Columns the models see.
    positive_ids : ndarray or None
        The labeled positives kept beside every unlabeled row; ``None``: every row.
    flipped_ids : ndarray or None
        Unlabeled rows relabeled positive before training; ``None``: none.
    config : PUConfig
    seed : int
        Seed of the folds, the unlabeled subsample and XGBoost.
    name : str
        Names the work in task keys and logs (``cluster2-it0``).
    feature_types : list of str or None
        XGBoost's type of each of ``features`` (``c`` categorical, ``q`` numeric);
        ``None``: all numeric.
    unlabeled_share : float
        Share of the unlabeled rows scored, a sample drawn from the ids and the seed
        (:func:`~pulsnar_dask.core.folds.sampled_rows`); 1: every row.
    """

    features: list[str]
    positive_ids: np.ndarray | None
    flipped_ids: np.ndarray | None
    config: PUConfig
    seed: int
    name: str
    feature_types: list[str] | None = None
    unlabeled_share: float = 1.0

    def rows(self, row_ids: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of the table's rows the scoring uses, and the labels it trains on.

        Returns
        -------
        (keep, labels)
            ``keep``: bool mask over ``row_ids``; ``labels``: the labels of the kept rows
            after relabeling, int8.
        """
        keep = np.ones(len(labels), dtype=bool)
        if self.positive_ids is not None:
            keep = (labels == 0) | np.isin(row_ids, self.positive_ids)
        if self.unlabeled_share < 1:
            keep &= (labels != 0) | sampled_rows(row_ids, self.unlabeled_share, self.seed)
        new = np.asarray(labels, dtype=np.int8)[keep]
        if self.flipped_ids is not None:
            new[np.isin(row_ids[keep], self.flipped_ids)] = 1
        return keep, new


@dataclass
class TableRows:
    """The table's rows as a run knows them: how many of each label and the labeled
    positives' ids (few) here; every row's id and label where the executor holds them,
    brought here only when asked for (:attr:`row_ids`, :attr:`labels`).

    Attributes
    ----------
    n_positive, n_unlabeled : int
    positive_ids : ndarray
        The labeled positives' ids, ascending.
    fetch : callable or None
        Returns every row's (ids ascending, 0/1 labels as int8); set by the executor
        that holds them.
    """

    n_positive: int
    n_unlabeled: int
    positive_ids: np.ndarray
    fetch: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None

    @classmethod
    def of(cls, row_ids: np.ndarray, labels: np.ndarray) -> TableRows:
        """Rows held here: ids ascending, 0/1 labels."""
        labels = np.asarray(labels, dtype=np.int8)
        n_positive = int(np.sum(labels == 1))
        positives = np.asarray(row_ids)[labels == 1]
        return cls(n_positive, labels.size - n_positive, positives, lambda: (row_ids, labels))

    @property
    def n_rows(self) -> int:
        return self.n_positive + self.n_unlabeled

    @cached_property
    def _vectors(self) -> tuple[np.ndarray, np.ndarray]:
        return self.fetch()

    @property
    def row_ids(self) -> np.ndarray:
        """Every row's id, ascending (brought here the first time it is asked for)."""
        return self._vectors[0]

    @property
    def labels(self) -> np.ndarray:
        """Every row's 0/1 label, in :attr:`row_ids` order."""
        return self._vectors[1]


@dataclass(frozen=True)
class Truth:
    """A true-label column (benchmarks), where the executor holds it.

    Attributes
    ----------
    parts : list
        Each partition's (ids, labels, true labels), or its future: a true label is 0
        for a negative, 1 or more for a positive (its subtype).
    alpha : float
        The share of the unlabeled rows that are positive.
    """

    parts: list[Any]
    alpha: float


@dataclass
class Scored:
    """A request's out-of-fold probabilities, as the pipeline keeps them.

    Attributes
    ----------
    tally : Tally
        The rows' statistics and the positives' probabilities (the labels are those the
        models trained on, after the request's relabeling).
    models : list of bytes
        The fold models as XGBoost JSON, fold 0 first.
    pieces : tuple
        The rows where the executor holds them, partition by partition
        (:mod:`pulsnar_dask.core.map_reduce`).
    rows : (row_ids, labels, probabilities) or None
        The rows by ascending id, where the executor holds them in this process; None
        where they stay on a cluster (:meth:`Executor.collect` brings them).
    """

    tally: Tally
    models: list[bytes]
    pieces: tuple
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


class Executor(Protocol):
    """Where the feature table lives and how the heavy steps run there.

    Attributes
    ----------
    engine : str
        ``in-process``, ``task`` (each fold model one task on its gathered training
        rows) or ``dask`` (``xgboost.dask``).
    features : list of str
        The feature columns (after :meth:`read`: those of ``schema``).
    schema : FeatureSchema
        The features' types and categories (set by :meth:`read`).
    threads : int or None
        XGBoost threads per model when the settings leave it open.
    copies : CopyGroups
        Rows whose features are copies of one another's, each group kept in one fold
        (set by :meth:`read`; :mod:`pulsnar_dask.core.folds`).
    """

    engine: str
    features: list[str]
    schema: FeatureSchema
    threads: int | None
    copies: CopyGroups

    def read(self) -> tuple[TableRows, Truth | None]:
        """Check the table and settle its schema; return its rows and the true labels
        where the input has them."""

    def importance(self, config: PUConfig, seed: int) -> np.ndarray:
        """Gain importance per feature (:func:`~pulsnar_dask.core.subtypes.importance_model_gain`);
        ``config.n_threads`` is the user's setting, ``None`` leaving the threads to the
        executor (the model trains while nothing else runs)."""

    def positive_pieces(self, columns: Sequence[str]) -> list[Any]:
        """The labeled positives partition by partition, where the rows are held: each
        piece their (row ids, float32 values of ``columns``)
        (:mod:`~pulsnar_dask.core.positive_pieces`), for :meth:`map_reduce` until
        :meth:`release`."""

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        """``[fn(*args) for args in calls]``, side by side where it can."""

    def on_every_worker(self, fn: Callable[[], Any]) -> dict[str, Any]:
        """``fn()`` in every process that trains models, by its name (a worker's
        address); where one could not run it, the exception instead."""

    def score(self, requests: Sequence[ScoreRequest]) -> list[Scored]:
        """Run every request (side by side where it can); results in request order."""

    def map_reduce(
        self,
        per_piece: Callable[..., Any],
        finish: Callable[[Any], Any],
        pieces: Sequence[Sequence[Any]],
        calls: Sequence[tuple],
    ) -> list[Any]:
        """``[finish(sum of per_piece(piece, *args) over the partitions) for args in
        calls]``: each partition's rows of the scorings whose ``pieces`` are given (a list
        of (probabilities, labels, ids), one per scoring, every scoring's unlabeled rows
        in the same order) reduced where they are
        (:data:`~pulsnar_dask.core.map_reduce.MapReduce`); the results add up by
        :func:`~pulsnar_dask.core.map_reduce.summed`."""

    def map_pieces(
        self, per_piece: Callable[..., Any], pieces: Sequence[Sequence[Any]], args: tuple
    ) -> list[Any]:
        """``per_piece(piece, *args)`` on each partition's rows of the scorings whose
        ``pieces`` are given, each result kept where its rows are (in process, the
        result; on a cluster, its future, held until released); returns once every one
        is computed."""

    def gather(self, held: Sequence[Any]) -> list[Any]:
        """What :meth:`map_pieces` (or a scoring's ``pieces``) holds, brought here."""

    def release(self, pieces: Sequence[Any]) -> None:
        """Let go of a scoring's rows where the executor holds them apart (nothing to
        do where they are this process's arrays)."""

    def collect(self, pieces: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A scoring's rows brought here from its ``pieces``: (row ids, labels,
        probabilities), by ascending id."""
