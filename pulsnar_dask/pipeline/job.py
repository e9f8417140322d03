"""What the stages of one run share: the table's executor, the settings, the rows read,
and how a stage asks for a scoring; and the reading the scoring stages hand on."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.scoring import (
    asks_for_gpu,
    check_booster_params,
    column_params,
    trained_device,
)
from pulsnar_dask.core.subproblem import (
    SubproblemResult,
    check_counts,
    reads_rows,
    subproblem_of,
)
from pulsnar_dask.core.subtypes import Clustering
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.executor import Executor, ScoreRequest, TableRows, Truth

logger = logging.getLogger(__name__)


@dataclass
class Job:
    """One run's shared state.

    Attributes
    ----------
    executor : Executor
    config : PUConfig
        The settings the models run with (XGBoost's threads filled in from the executor
        where the settings leave them open).
    asked : PUConfig
        The settings as asked for (what the result records).
    seed : int
        Iteration ``i`` scores with ``seed + i``.
    iterations : int
    on_stage : callable or None
        Called with each stage's description, before its log line.
    table : TableRows
        Set by :func:`read_input`: the table's rows.
    truth : Truth or None
        Set by :func:`read_input`: the true labels where the input has them.
    """

    executor: Executor
    config: PUConfig
    asked: PUConfig
    seed: int
    iterations: int
    on_stage: Callable[[str], None] | None = None
    table: TableRows | None = None
    truth: Truth | None = None
    start: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def features(self) -> list[str]:
        return self.executor.features

    def stage(self, text: str) -> None:
        """Announce a stage: the caller's hook first, then the log."""
        if self.on_stage is not None:
            self.on_stage(text)
        logger.info(text)

    def mark(self, name: str) -> None:
        """Record the seconds since the start at which a stage ended."""
        self.timings[name] = round(time.perf_counter() - self.start, 3)

    def for_columns(self, columns: Sequence[str], **changes: Any) -> PUConfig:
        """A model's settings: per-feature XGBoost parameters rewritten for its columns."""
        return self.config.with_(
            xgb_params=column_params(self.config.xgb_params, self.features, columns), **changes
        )

    def request(
        self,
        columns: Sequence[str],
        positive_ids: np.ndarray | None,
        it: int,
        name: str = "all",
        unlabeled_share: float = 1.0,
    ) -> ScoreRequest:
        """A subproblem's scoring in iteration ``it``: the given positives (``None``: all)
        against every unlabeled row (``unlabeled_share`` < 1: a sample of them, the same
        for every request of the iteration), on ``columns``.

        Raises
        ------
        PUError
            Where the subproblem has too few rows for its folds.
        """
        made = ScoreRequest(
            list(columns),
            positive_ids,
            None,
            self.for_columns(columns),
            self.seed + it,
            f"{name}-it{it}",
            self.executor.schema.feature_types(columns),
            unlabeled_share,
        )
        if positive_ids is not None:  # labeled positives, against the unlabeled rows
            try:
                n_unlabeled = round(self.table.n_unlabeled * unlabeled_share)
                check_counts(positive_ids.size, n_unlabeled, self.config)
            except ValueError as exc:
                raise PUError(f"a subproblem is too small: {exc}") from None
        return made

    def subproblems(self, requests: list[ScoreRequest]) -> list[SubproblemResult]:
        """Score the requests where the table is and read each one's alpha here, from
        the counts (the rows brought here only for a reader of rows)."""
        out = []
        for r, s in zip(requests, self.executor.score(requests), strict=True):
            rows = s.rows
            if rows is None and reads_rows(r.config):
                rows = self.executor.collect(s.pieces)
            kept = {"features": tuple(r.features), "models": tuple(s.models), "pieces": s.pieces}
            out.append(subproblem_of(s.tally, r.config, r.seed, rows, **kept))
        return out


@dataclass
class Reading:
    """What the scoring stages found, and how alpha is to be read from it.

    Attributes
    ----------
    method : str
        ``pulscar`` or ``pulsnar``: the method the run reports.
    per_iteration : list of list of SubproblemResult
        Each iteration's subproblems under that method.
    n_clusters, mixture_components : int
        Clusters read (1 for PULSCAR) and the mixture's components before merging.
    clustering : Clustering or None
        PULSNAR's clustering of the positives, where it ran.
    evidence : dict or None
        Auto's evidence (``method_evidence``).
    alternative : list of SubproblemResult
        The first iteration's cluster subproblems, scored beside PULSCAR's (auto), which
        the interval also spans.
    """

    method: str
    per_iteration: list[list[SubproblemResult]]
    n_clusters: int
    mixture_components: int
    clustering: Clustering | None = None
    evidence: dict[str, Any] | None = None
    alternative: list[SubproblemResult] = field(default_factory=list)

    @property
    def first(self) -> list[SubproblemResult]:
        return self.per_iteration[0]

    def release_pieces(self, executor: Executor, but_first: bool = False) -> None:
        """Have the executor let go of the rows it holds for the subproblems (their
        :attr:`~pulsnar_dask.core.subproblem.SubproblemResult.pieces`), once the steps
        that count them where they are have run, and drop every reference to them here.

        ``but_first``: the first iteration's rows are only dropped here, not released:
        what was computed from them where they are held stays (a cluster keeps the rows
        while anything depends on them, and releases them after)."""
        kept = {id(r) for r in self.first} if but_first else set()
        for r in [*(r for it in self.per_iteration for r in it), *self.alternative]:
            if id(r) not in kept:
                executor.release(r.pieces)
        self.per_iteration = [[replace(r, pieces=()) for r in it] for it in self.per_iteration]
        self.alternative = [replace(r, pieces=()) for r in self.alternative]


def read_input(job: Job) -> None:
    """Read and check the table (``job.table``, ``job.truth``), and the
    settings against its features.

    Raises
    ------
    PUError
        For a table the folds cannot split, XGBoost settings it refuses, or a GPU the
        workers do not have (asked before the table is read, which it does not need).
    """
    job.stage("reading and checking the input")
    executor, config = job.executor, job.config
    if asks_for_gpu(config.xgb_params):
        check_gpus(executor, config.xgb_params)
    job.table, job.truth = executor.read()
    table = job.table
    if len(executor.copies):
        logger.warning(
            "%d of %d rows copy another row's features exactly (not by chance: the table has "
            "features with too many values for that); each group of copies is kept in one "
            "fold (a copy in the training folds would give the held-out row's label away)",
            executor.copies.n_copies,
            table.n_rows,
        )
    try:
        check_counts(table.n_positive, table.n_unlabeled, config)
    except ValueError as exc:
        raise PUError(f"too few rows for {config.n_folds} folds: {exc}") from None
    job.mark("input")
    features = job.features
    if config.xgb_params:
        try:
            check_booster_params(
                column_params(config.xgb_params, features, features),
                executor.schema.feature_types(),
                len(features),
            )
        except ValueError as exc:
            raise PUError(f"invalid settings: {exc}") from None
    logger.info(
        "%d rows (%d positive), %d features, engine %s",
        table.n_rows,
        table.n_positive,
        len(features),
        executor.engine,
    )


def check_gpus(executor: Executor, overrides: Mapping[str, Any]) -> None:
    """Refuse a ``device`` that names a GPU where XGBoost cannot use it: with no GPU it
    would train on the CPU, warning once a model on every worker. The workers present
    now are asked; one that joins later is not.

    Parameters
    ----------
    executor : Executor
    overrides : mapping
        The user's XGBoost parameters, whose ``device`` names a GPU.

    Raises
    ------
    PUError
        Naming the workers (or this machine) that cannot use it.
    """
    device = overrides["device"]
    found = executor.on_every_worker(partial(trained_device, device))
    lost = {name: said for name, said in found.items() if isinstance(said, Exception)}
    if lost:  # a worker that left or restarted while asked
        name, exc = next(iter(lost.items()))
        raise PUError(f"cannot ask {name} for device {device!r}: {type(exc).__name__}: {exc}")
    asked = f"invalid settings: xgb_params asks for device {device!r}, but XGBoost"
    failed = {name: said for name, said in found.items() if said.startswith("error: ")}
    if failed:
        name, said = next(iter(failed.items()))
        raise PUError(f"{asked} refuses it on {name}: {said.removeprefix('error: ')}")
    without = sorted(name for name, said in found.items() if not said.startswith("cuda"))
    if without:
        shown = ", ".join(without[:3]) + (" and more" if len(without) > 3 else "")
        where = shown if len(found) == 1 else f"{len(without)} of {len(found)} workers ({shown})"
        raise PUError(
            f"{asked} finds no GPU on {where} and would train on the CPU; leave device out "
            "to train on the CPU"
        )
