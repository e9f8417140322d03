"""Where a run's time goes: one ``pulsnar-dask run`` on a separately started 2-worker
cluster, its tasks' compute time from the scheduler's task stream, summed by name.

    python jobs/task_stream.py [--rows 1000000] [--nanny] [--one-thread-env] \\
        [-- --method auto --calibrate --classify]

Arguments after ``--`` go to ``pulsnar-dask run`` (default: the scale benchmark's
default-method job, ``--method auto --calibrate --classify``). The synthetic SNAR table
(P = U/20, 100 features, alpha 0.2, no true-label column) is the one
``benchmark_scale.py`` writes under ``--data``. ``--one-thread-env`` starts the cluster
and the run with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` set
to 1, as a nanny starts its worker. Prints the run's stage seconds, each task name's
count, compute seconds and span, and each worker's busy seconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import time
from pathlib import Path

from benchmark_scale import without_truth
from common import CLI, provenance, synthetic_parquet
from distributed import Client

from pulsnar_dask.dask_executor.connect import ProcessCluster

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="unlabeled rows")
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-scale"))
    parser.add_argument("--nanny", action="store_true", help="workers under a nanny")
    parser.add_argument("--one-thread-env", action="store_true")
    parser.add_argument(
        "--timeline",
        type=Path,
        help="also write each compute step (worker, task, start, stop) as CSV",
    )
    parser.add_argument("run_args", nargs="*", help="after --: options of the run")
    args = parser.parse_args()
    if args.one_thread_env:
        os.environ.update({name: "1" for name in THREAD_VARIABLES})
    args.data.mkdir(parents=True, exist_ok=True)
    n = args.rows
    path = args.data / f"snar_{n}"
    synthetic_parquet(path, "snar", n // 20, n, 100, 0.2, partitions=max(2, n // 50_000),
                      chunked=True)  # fmt: skip
    path = without_truth(path)
    run_args = args.run_args or ["--method", "auto", "--calibrate", "--classify"]
    with ProcessCluster(args.data, n_workers=2, memory_limit="10GiB", nanny=args.nanny) as cluster:
        with Client(cluster.address) as client:
            client.get_task_stream(start=time.time())  # the scheduler starts recording
        start = time.time()
        done = subprocess.run(
            [*CLI, "run", "--input", str(path), "--out", str(args.data / "out"),
             "--scheduler", cluster.address, "--overwrite", "--quiet", *run_args],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        with Client(cluster.address) as client:
            stream = client.get_task_stream(start=start)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"job {summary['seconds']:.1f} s; stages ended at {summary['stage_seconds']}")
    print(f"alpha {summary['alpha']}, interval {summary['alpha_interval']}")
    report(stream, start)
    if args.timeline:
        write_timeline(stream, start, args.timeline)
    print(provenance())


def task_name(task: dict) -> str:
    """A task's key without its token, fold number or cluster number."""
    key = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
    name = re.sub(r"(-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|-[0-9a-f]{32}|-[0-9a-f]{8})$",
                  "", str(key))  # fmt: skip
    return re.sub(r"fold\d+", "fold", re.sub(r"^cluster\d+", "cluster", name))


def compute_steps(stream: list[dict]):
    """Each task's compute steps, as (task, name, step)."""
    for task in stream:
        for step in task["startstops"]:
            if step["action"] == "compute":
                yield task, task_name(task), step


def write_timeline(stream: list[dict], start: float, path: Path) -> None:
    """Every compute step as a CSV row: worker, task name, start and stop (s from the run's
    start)."""
    with path.open("w") as f:
        f.write("worker,task,start,stop\n")
        for task, name, step in sorted(compute_steps(stream), key=lambda t: t[2]["start"]):
            f.write(f"{task['worker']},{name},{step['start'] - start:.3f},"
                    f"{step['stop'] - start:.3f}\n")  # fmt: skip


def report(stream: list[dict], start: float) -> None:
    """Compute seconds and span of each task name, and each worker's busy seconds."""
    names: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, float("inf"), 0.0])
    busy: dict[str, float] = collections.Counter()
    for task, name, step in compute_steps(stream):
        row = names[name]
        row[0] += 1
        row[1] += step["stop"] - step["start"]
        row[2] = min(row[2], step["start"] - start)
        row[3] = max(row[3], step["stop"] - start)
        busy[task["worker"]] += step["stop"] - step["start"]
    print("| task | count | compute (s) | span (s) |")
    print("|---|---|---|---|")
    for name, (count, seconds, first, last) in sorted(names.items(), key=lambda kv: kv[1][2]):
        if seconds >= 0.1:
            print(f"| {name} | {count} | {seconds:.2f} | {first:.1f}-{last:.1f} |")
    for worker, seconds in sorted(busy.items()):
        print(f"worker {worker}: busy {seconds:.1f} s")


if __name__ == "__main__":
    main()
