"""Show that PULSNAR's per-cluster subproblems run side by side on a 2-worker cluster.

Runs PULSNAR through the engine under Dask's task-stream recorder and draws every task
as a bar on its worker's timeline, coloured by subproblem (cluster). Writes
benchmarks/results/pulsnar_task_stream.png and prints how much of the scoring time had
tasks of two different clusters running at once.

    python jobs/task_stream.py [--data /tmp/pulsnar-speed]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from common import RESULTS, synthetic_parquet
from distributed import Client, LocalCluster, get_task_stream

from pulsnar_dask.dask_executor.engine import run_job
from pulsnar_dask.io import read_pu_parquet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-speed"))
    args = parser.parse_args()
    # separable subtypes, so that PULSNAR finds all five clusters
    path = args.data / "snar_5000_50000_20_sep1"
    synthetic_parquet(path, "snar", 5000, 50_000, 20, 0.2, class_sep=1.0)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        puf = read_pu_parquet(str(path), true_label_col="true_label")
        with get_task_stream(client) as stream:
            result = run_job(client, puf, method="pulsnar")
    tasks = []
    for record in stream.data:
        match = re.match(r"(cluster\d+)-it\d+-(fold\d|rows)", str(record["key"]))
        if match:  # compute spans only: a dealt task fetches its input early, then queues
            tasks += [
                (record["worker"], match.group(1), span["start"], span["stop"])
                for span in record["startstops"]
                if span["action"] == "compute"
            ]
    t0 = min(t[2] for t in tasks)
    workers = sorted({t[0] for t in tasks})
    clusters = sorted({t[1] for t in tasks})
    colours = dict(zip(clusters, plt.cm.tab10.colors, strict=False))
    fig, ax = plt.subplots(figsize=(10, 2.5), layout="constrained")
    for worker, name, start, stop in tasks:
        ax.barh(workers.index(worker), stop - start, left=start - t0, color=colours[name])
    ax.set_yticks(range(len(workers)), [f"worker {i + 1}" for i in range(len(workers))])
    ax.set_xlabel("seconds since the first subproblem task")
    ax.set_title(f"PULSNAR subproblem tasks, {len(clusters)} clusters (alpha {result.alpha:.4f})")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[c]) for c in clusters]
    ax.legend(
        handles,
        clusters,
        ncol=len(clusters),
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.3),
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / "pulsnar_task_stream.png", dpi=110)
    # time during which two different clusters had tasks running at once
    events = sorted([(s, 1, n) for _, n, s, _ in tasks] + [(e, -1, n) for _, n, _, e in tasks])
    running: dict[str, int] = {}
    overlap, last = 0.0, None
    for time_, step, name in events:
        if last is not None and sum(1 for v in running.values() if v > 0) >= 2:
            overlap += time_ - last
        running[name] = running.get(name, 0) + step
        last = time_
    span = max(t[3] for t in tasks) - t0
    print(
        f"{len(tasks)} subproblem tasks over {span:.1f} s; two clusters at once for {overlap:.1f} s"
    )


if __name__ == "__main__":
    main()
