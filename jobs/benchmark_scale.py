"""PULSNAR at growing size on a separately started 2-worker cluster.

P = U/20, 100 features (``--features``), SNAR, drawn by the chunked generator (the
paper's would need 12 x 1M x 100 values at once). A scheduler and single-threaded worker
processes are started first (as a user's cluster would be), then ``pulsnar-dask run
--scheduler`` runs as its own client process under /usr/bin/time, so its peak RSS is the
client's alone. The workers' RSS is sampled every 0.2 s and split by the run's stages
(from its log), giving the memory each stage needs per worker as rows grow, and a linear
projection to ten times the largest size on ten workers. The largest run also saves
Dask's performance report.

    python jobs/benchmark_scale.py [--sizes 100000 300000 1000000]
    python jobs/benchmark_scale.py --sizes 500000 1000000 2000000 --memory-limit 2GiB \\
        --nanny --calibrate --classify --name memory
    python jobs/benchmark_scale.py --sizes 1000000 --calibrate --classify --without-truth \\
        --no-performance-report --name scale_1m_user   # the job as a user runs it
"""

from __future__ import annotations

import argparse
import shlex
import shutil
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow.parquet as pq
from common import RESULTS, synthetic_parquet, timed_run, write_result

from pulsnar_dask.dask_executor.connect import ProcessCluster
from pulsnar_dask.io import DEFAULT_TRUE_LABEL

# The run's stages, by the first words of the log line that starts each.
STAGES = {
    "reading and checking": "input",
    "PULSNAR: importance": "importance and clustering",
    "scoring:": "subproblems",
    "95% interval": "interval",
    "calibrating": "calibration",
    "classification:": "retrain",  # with true labels, the metrics' PULSCAR baseline beside it
    "writing the predictions": "outputs",
}


def stage_spans(summary: dict) -> list[tuple[str, float, float]]:
    """Each stage of a run with its start and end (``time.time()``; the last stage ends
    with the run), from the run's log."""
    starts = []
    for line in summary["stderr"].splitlines():
        for words, stage in STAGES.items():
            if f": {words}" in line:
                moment = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                starts.append((moment, stage))
    starts.sort()
    ends = [t for t, _ in starts[1:]] + [summary["finished"]]
    return [(stage, begin, end) for (begin, stage), end in zip(starts, ends, strict=True)]


def stage_peaks(summary: dict) -> dict[str, float]:
    """Largest worker RSS (MiB) sampled during each stage of a run (over every span of a
    stage that runs more than once, as the default method's scorings do)."""
    inside: dict[str, list[float]] = {}
    for stage, begin, end in stage_spans(summary):
        rss = [max(rss) for t, rss in summary["samples"] if begin <= t < end]
        inside.setdefault(stage, []).extend(rss)
    return {stage: max(rss, default=float("nan")) for stage, rss in inside.items()}


def stage_seconds(summary: dict) -> dict[str, float]:
    """Seconds in each stage of a run, summed over its spans."""
    seconds: dict[str, float] = {}
    for stage, begin, end in stage_spans(summary):
        seconds[stage] = seconds.get(stage, 0.0) + end - begin
    return {stage: round(value, 1) for stage, value in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-scale"))
    parser.add_argument("--method", default="pulsnar")
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="10GiB", help="each worker's")
    parser.add_argument("--nanny", action="store_true", help="workers restarted past 95%%")
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--classify", action="store_true")
    parser.add_argument(
        "--n-clusters", type=int, default=None, help="fix PULSNAR's cluster count (fan-out size)"
    )
    parser.add_argument(
        "--score",
        action="store_true",
        help="then score the largest input with the largest run's saved model",
    )
    parser.add_argument("--xgb-params", default=None, help="passed on to each run (a JSON object)")
    parser.add_argument(
        "--without-truth",
        action="store_true",
        help="run on a copy of the data without its true-label column, as a user's data is "
        "(no metrics, so no PULSCAR baseline beside the retrain); alpha is still checked "
        "against the data's true alpha",
    )
    parser.add_argument(
        "--no-performance-report",
        action="store_true",
        help="do not have the largest run save Dask's performance report (which the run "
        "renders before it ends)",
    )
    parser.add_argument("--name", default="scale", help="results file name")
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    report = RESULTS / f"{args.name}_performance_report.html"
    report.unlink(missing_ok=True)  # this job's own, from a run before: the CLI replaces none
    rows, stages, seconds = [], [], []
    with ProcessCluster(
        args.data, n_workers=args.workers, memory_limit=args.memory_limit, nanny=args.nanny
    ) as cluster:
        workers = [psutil.Process(p.pid) for p in cluster.workers]
        for n_unlab in args.sizes:
            shape = "" if args.features == 100 else f"_{args.features}f"
            path = args.data / f"snar_{n_unlab}{shape}"
            partitions = max(2, n_unlab // 50_000)
            true_alpha = synthetic_parquet(
                path, "snar", n_unlab // 20, n_unlab, args.features, 0.2,
                partitions=partitions, chunked=True,
            )  # fmt: skip
            if args.without_truth:
                path = without_truth(path)
            extra = ["--n-clusters", str(args.n_clusters)] if args.n_clusters else []
            extra += ["--calibrate"] * args.calibrate + ["--classify"] * args.classify
            extra += ["--xgb-params", args.xgb_params] if args.xgb_params else []
            if n_unlab == max(args.sizes) and not args.no_performance_report:
                extra += ["--performance-report", str(report)]
            summary = timed_run(
                [
                    "--input", str(path), "--method", args.method, "--out",
                    str(args.data / "out"), "--scheduler", cluster.address, *extra,
                ],
                watch=workers,
                quiet=False,
            )  # fmt: skip
            n_rows = n_unlab + n_unlab // 20
            rows.append(
                {
                    "n_unlabeled": n_unlab,
                    "n_rows": n_rows,
                    "wall_s": summary["wall_s"],
                    "job_s": summary["seconds"],
                    "us_per_row": 1e6 * summary["wall_s"] / n_rows,
                    "client_peak_rss_mib": summary["peak_rss_mib"],
                    "worker_peak_rss_mib": max(
                        (max(rss) for _, rss in summary["samples"]), default=float("nan")
                    ),
                    "alpha": summary["alpha"],
                    "true_alpha": true_alpha,
                    "n_clusters": summary["n_clusters"],
                    "engine": summary["engine"],
                }
            )
            stages.append({"n_rows": n_rows, **stage_peaks(summary)})
            seconds.append({"n_rows": n_rows, **stage_seconds(summary)})
            print(rows[-1], stages[-1], seconds[-1], flush=True)
        scoring = score_run(args, cluster.address, workers, path) if args.score else None
    write(args, pd.DataFrame(rows), pd.DataFrame(stages), pd.DataFrame(seconds), scoring)


def without_truth(path: Path) -> Path:
    """A copy of the dataset at ``path`` without its true-label column, beside it (made
    again where the dataset was written after it; its ``_true_alpha``, copied last, marks
    a whole copy)."""
    copy = path.with_name(f"{path.name}_without_truth")
    marker = copy / "_true_alpha"
    if not marker.exists() or marker.stat().st_mtime < (path / "_true_alpha").stat().st_mtime:
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir()
        for part in sorted(path.glob("*.parquet")):
            table = pq.read_table(part)
            pq.write_table(table.drop_columns([DEFAULT_TRUE_LABEL]), copy / part.name)
        shutil.copy(path / "_true_alpha", copy / "_true_alpha")
    return copy


def score_run(args: argparse.Namespace, address: str, workers, path: Path) -> dict:
    """``pulsnar-dask score`` of the largest input (at ``path``, the last run's) with the
    model its run saved."""
    summary = timed_run(
        ["--model", str(args.data / "out"), "--input", str(path), "--out",
         str(args.data / "scored"), "--scheduler", address],
        watch=workers,
        command="score",
    )  # fmt: skip
    row = {
        "n_rows": summary["n_rows"],
        "wall_s": summary["wall_s"],
        "job_s": summary["seconds"],
        "client_peak_rss_mib": summary["peak_rss_mib"],
        "worker_peak_rss_mib": max((max(r) for _, r in summary["samples"]), default=float("nan")),
        "model_kind": summary["model_kind"],
        "expected_positives": summary["expected_positives"],
    }
    print(row, flush=True)
    return row


def write(
    args: argparse.Namespace,
    table: pd.DataFrame,
    stages: pd.DataFrame,
    seconds: pd.DataFrame,
    scoring: dict | None = None,
) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / f"{args.name}.csv", index=False)
    stages.to_csv(RESULTS / f"{args.name}_stages.csv", index=False)
    seconds.to_csv(RESULTS / f"{args.name}_stage_seconds.csv", index=False)
    options = " ".join(
        f"--{k.replace('_', '-')}" + ("" if v is True else f" {shlex.quote(str(v))}")
        for k, v in vars(args).items()
        if k
        in (
            "memory_limit", "nanny", "calibrate", "classify", "n_clusters", "xgb_params",
            "without_truth", "no_performance_report",
        )
        and v
    )  # fmt: skip
    lines = [
        f"# {args.method.upper()} scale run: {args.workers} separately started workers, "
        f"P = U/20, {args.features} features ({options})",
        "",
        "| U | rows | wall (s) | job (s) | us per row | client peak RSS (MiB) | worker peak "
        "RSS (MiB) | alpha | true alpha | clusters | engine |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.to_dict("records"):
        lines.append(
            f"| {r['n_unlabeled']:,} | {r['n_rows']:,} | {r['wall_s']:.1f} | {r['job_s']:.1f} | "
            f"{r['us_per_row']:.1f} | {r['client_peak_rss_mib']:.0f} | "
            f"{r['worker_peak_rss_mib']:.0f} | {r['alpha']:.4f} | {r['true_alpha']:.4f} | "
            f"{r['n_clusters']} | {r['engine']} |"
        )
    names = [c for c in seconds.columns if c != "n_rows"]
    lines += [
        "",
        "Seconds in each stage (from the run's log; the outputs run to the end of the process; "
        "with true labels the retrain's stage also scores PULSCAR, the baseline of its metrics).",
        "",
        "| rows | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for r in seconds.to_dict("records"):
        lines.append(f"| {r['n_rows']:,} | " + " | ".join(f"{r[n]:.1f}" for n in names) + " |")
    if scoring:
        pd.DataFrame([scoring]).to_csv(RESULTS / f"{args.name}_score.csv", index=False)
        lines += [
            "",
            f"`pulsnar-dask score` of the same {scoring['n_rows']:,} rows with the saved "
            f"model ({scoring['model_kind']}), on the same workers: whole process "
            f"{scoring['wall_s']:.1f} s (job {scoring['job_s']:.1f} s), client peak RSS "
            f"{scoring['client_peak_rss_mib']:.0f} MiB, worker peak RSS "
            f"{scoring['worker_peak_rss_mib']:.0f} MiB; "
            f"{scoring['expected_positives']:,.0f} positives expected.",
        ]
    if len(stages) >= 2:
        lines += projection(args, table, stages)
    write_result(RESULTS / f"{args.name}.md", "\n".join(lines))


def projection(args: argparse.Namespace, table: pd.DataFrame, stages: pd.DataFrame) -> list:
    """Per-stage worker peaks, with a least-squares line taken to ten times the largest
    size on ten workers: against rows per worker for the stages (every task holds its own
    partitions, the interval's included), against the whole table's rows for the
    client's peak."""
    per_worker = stages["n_rows"] / args.workers
    target_rows = 10 * stages["n_rows"].max()
    target = target_rows / 10
    names = [c for c in stages.columns if c != "n_rows"]
    lines = [
        "",
        f"Largest RSS of a worker process during each stage (MiB), by rows per worker; last "
        f"column: the least-squares line at {target_rows:,.0f} rows on 10 workers "
        f"({target:,.0f} rows per worker); the client's against the whole table's rows.",
        "",
        "| stage | " + " | ".join(f"{r:,.0f} rows/worker" for r in per_worker)
        + " | projected |",
        "|---|" + "---|" * (len(per_worker) + 1),
    ]  # fmt: skip
    for name in names:
        values = stages[name].to_numpy(float)
        ok = np.isfinite(values)
        projected = "-"  # a stage too short to be sampled at some size: no line
        if ok.sum() >= 2:
            slope, intercept = np.polyfit(per_worker[ok], values[ok], 1)
            projected = f"{intercept + slope * target:.0f}"
        lines.append(f"| {name} | " + " | ".join(f"{v:.0f}" for v in values) + f" | {projected} |")
    slope, intercept = np.polyfit(table["n_rows"], table["client_peak_rss_mib"], 1)
    lines.append(
        "| client (whole run) | "
        + " | ".join(f"{v:.0f}" for v in table["client_peak_rss_mib"])
        + f" | {intercept + slope * target_rows:.0f} |"
    )  # fmt: skip
    return lines


if __name__ == "__main__":
    main()
