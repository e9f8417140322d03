"""The PU pipeline, written once: check the input, score the subproblems (PULSCAR's, or
PULSNAR's clusters and auto's choice), check the classifiers, read alpha and its
interval, calibrate, retrain, and keep the model.

An executor runs the steps that touch the feature table where the table is: in this
process on arrays (:class:`~pulsnar_dask.pipeline.in_process.InProcessExecutor`, what the
estimators use on numpy and pandas data) or over a Dask cluster
(:class:`~pulsnar_dask.dask_executor.engine.DaskExecutor`). What reaches the pipeline is
small: the rows' counts and the labeled positives' ids
(:class:`~pulsnar_dask.pipeline.executor.TableRows`), the positives' clustering features,
and each scoring's counts (:class:`~pulsnar_dask.core.map_reduce.Tally`); what alpha, the
claims, the interval and the calibration need of the rows is counted where the executor
holds them (``map_reduce``), and each partition's outputs are computed there
(``map_pieces``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import PUConfig, check_seed, config_dict
from pulsnar_dask.core.interval import AlphaInterval
from pulsnar_dask.core.model import PUModel, package_version
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.clusters import score_clusters
from pulsnar_dask.pipeline.diagnostics import Diagnostics, diagnose
from pulsnar_dask.pipeline.executor import Executor
from pulsnar_dask.pipeline.finish import (
    Alphas,
    Outputs,
    clusters_read,
    interval_of,
    outputs_of,
    read_alphas,
)
from pulsnar_dask.pipeline.job import Job, Reading, read_input
from pulsnar_dask.pipeline.method_choice import choose_reading
from pulsnar_dask.pipeline.result import JobResult, clusters_alpha_read

METHODS = ("auto", "pulscar", "pulsnar")


def run_pipeline(
    executor: Executor,
    method: str = "auto",
    config: PUConfig | None = None,
    seed: int = 0,
    iterations: int = 1,
    calibrate_probabilities: bool = False,
    classify: bool = False,
    on_stage: Callable[[str], None] | None = None,
    settings: dict[str, Any] | None = None,
) -> JobResult:
    """Run PULSCAR or PULSNAR on the table an executor holds.

    Parameters
    ----------
    executor : Executor
    method : {"auto", "pulscar", "pulsnar"}
        ``auto`` reads PULSCAR's alpha, with the positives' clusters scored beside it as
        PULSNAR scores them for the interval to span, and their alpha where even their
        tail reading lies past PULSCAR's beyond the noise
        (:mod:`~pulsnar_dask.pipeline.method_choice`).
    config : PUConfig or None
        Settings; ``None``: the defaults.
    seed : int
        Iteration ``i`` uses seed ``seed + i`` for folds and XGBoost.
    iterations : int
        Repeats; ``alpha`` is their mean.
    calibrate_probabilities, classify : bool
        Calibrate with the estimated alpha (Algorithm 3); retrain on recovered labels
        (Algorithm 4), which calibrates first.
    on_stage : callable or None
        Called with a short description as each stage starts, before its log line.
    settings : dict or None
        Entries added to the result's ``settings`` (what the caller was asked for).

    Returns
    -------
    JobResult
        Vectors aligned with the row ids in ascending order.

    Raises
    ------
    PUError
        For an unknown method, fewer than one iteration, or a table the steps cannot use.
    """
    check_choice("method", method, METHODS, PUError)
    if iterations < 1:
        raise PUError(f"iterations must be at least 1, got {iterations}")
    try:
        check_seed(seed, iterations)
    except ValueError as exc:
        raise PUError(str(exc)) from None
    asked = config or PUConfig()
    models_config = asked
    if asked.n_threads is None and executor.threads is not None:
        models_config = asked.with_(n_threads=executor.threads)
    # seed as int: a numpy integer would overflow in the seeds made from it
    job = Job(executor, models_config, asked, int(seed), iterations, on_stage)
    read_input(job)
    if method == "pulscar":
        job.stage(f"scoring: {iterations} cross-validated XGBoost run(s)")
        requests = [job.request(job.features, None, it) for it in range(iterations)]
        reading = Reading("pulscar", [[r] for r in job.subproblems(requests)], 1, 1)
    else:
        reading, pulscar = score_clusters(job, beside_pulscar=method == "auto")
        if method == "auto":
            choose_reading(reading, pulscar, job.table.n_unlabeled, job.table.n_positive)
        del pulscar  # what the reading keeps of it is released with the reading's rows
    job.mark("scoring")
    checks = diagnose(reading)
    alphas = read_alphas(job, reading)
    interval = interval_of(job, reading, alphas.alphas, checks.negative_auc)
    alphas = clusters_read(job, reading, alphas, interval)
    out = outputs_of(job, reading, alphas.subproblem_alphas, calibrate_probabilities, classify)
    return _result(
        job, reading, method, calibrate_probabilities, classify, settings, checks, alphas,
        interval, out,
    )  # fmt: skip


def _result(
    job: Job,
    reading: Reading,
    method: str,
    calibrate: bool,
    classify: bool,
    settings: dict[str, Any] | None,
    checks: Diagnostics,
    alphas: Alphas,
    interval: AlphaInterval | None,
    out: Outputs,
) -> JobResult:
    """The run's result and the model it keeps, with the settings it ran with."""
    executor = job.executor
    # auto reading the clusters' alpha off PULSCAR's scoring reports PULSNAR and its clusters
    read, n_clusters = reading.method, reading.n_clusters
    if clusters_alpha_read(reading.evidence):
        read, n_clusters = "pulsnar", reading.evidence["n_clusters"]
    run_settings = {
        "method": method,
        "seed": job.seed,
        "iterations": job.iterations,
        "calibrate": calibrate,
        "classify": classify,
        "n_features": len(job.features),
        **(settings or {}),
        **config_dict(job.asked),
    }
    model = PUModel(
        executor.schema, out.components, out.model_map,
        "retrain" if classify else "subproblems", alphas.alpha,
        (interval.low, interval.high) if interval else None, read, run_settings,
        package_version(),
    )  # fmt: skip
    clustering = reading.clustering
    return JobResult(
        method=read,
        alpha=alphas.alpha,
        alphas=alphas.alphas,
        cluster_alphas=alphas.cluster_alphas,
        n_clusters=n_clusters,
        table=job.table,
        rows=out.rows,
        estimates=[r.estimate for r in reading.first],
        subproblems=reading.first,
        bic=clustering.bic if clustering is not None else np.array([]),
        mixture_components=reading.mixture_components,
        method_evidence=reading.evidence,
        clustering=clustering,
        profiles=clustering.profiles if read == "pulsnar" else None,
        cluster_groups=alphas.cluster_groups,
        alpha_interval=interval,
        settings=run_settings,
        metrics=out.metrics,
        engine=executor.engine,
        copied_rows=executor.copies.n_copies,
        leading_feature=checks.leading_feature,
        negative_auc=checks.negative_auc,
        pu_auc=checks.pu_auc,
        seconds=time.perf_counter() - job.start,
        timings=job.timings,
        model=model,
    )
