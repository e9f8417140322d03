"""Whole-process wall time, ours and the authors' code timed in the same run.

P=5000, U=100000, 100 features: SCAR data with PULSCAR and SNAR data with PULSNAR, each
forced, and the default method (``auto``) on both. Ours runs as ``pulsnar-dask run`` in its
own process (start-up, reading, scoring, report and all), two ways: on the local cluster
the run starts for itself (the default), and attached with ``--scheduler`` to a 2-worker
cluster started beforehand, whose workers have imported what a job's tasks run, as those
of a cluster that has run a job before have (the first job on a new cluster pays those
imports, about 2 s a worker, and would be the only row to). With ``--reference``, the
authors' implementation runs on the same tables, each run its own process too
(:mod:`reference`: their synthetic examples' settings, XGBoost on every core), and the
table gives our speed-up over it; without it, no speed-up is printed: a ratio is only ever
taken against a run timed here. The runs go in rounds, every side once a round, so that a
drift in the machine's speed reaches both sides.
Writes benchmarks/results/speed.{csv,md}.

    python jobs/benchmark_speed.py [--repeats 5] [--reference CHECKOUT]
                                   [--reference-repeats 2] [--data /tmp/pulsnar-speed]
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import RESULTS, synthetic_parquet, timed_run, write_result
from distributed import Client

from pulsnar_dask.dask_executor.connect import ProcessCluster

SETUPS = {
    "local": "local cluster started by the run (2 workers)",
    "existing": "existing 2-worker cluster (--scheduler)",
}
# what a job's tasks import on a worker
WORKER_MODULES = ("xgboost", "pulsnar_dask.dask_executor.engine")
# each data set's forced method, and the default beside it
DATA = {"scar": ("pulscar", "auto"), "snar": ("pulsnar", "auto")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reference", type=Path, help="checkout of unmtransinfo/PULSNAR")
    parser.add_argument("--reference-repeats", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-speed"))
    parser.add_argument("--alpha", type=float, default=0.2)
    args = parser.parse_args()
    if args.reference and not (args.reference / "PULSNAR" / "PULSNAR.py").is_file():
        parser.error(f"{args.reference}: no PULSNAR/PULSNAR.py there (the reference's checkout)")
    data = {}
    for scenario in DATA:
        path = args.data / f"{scenario}_5000_100000_100"
        data[scenario] = path, synthetic_parquet(path, scenario, 5000, 100_000, 100, args.alpha)
    # In rounds, each round every side once: this machine's speed drifts by a quarter
    # over minutes, and a side timed only early or only late would carry that drift into
    # the ratio. Within a round the local runs come first, with no other cluster alive
    # (an idle separately started one, its scheduler's and workers' event loops, slows a
    # run on 2 cores); the separately started cluster lives for its round's runs alone.
    rows: list[dict] = []
    for repeat in range(max(args.repeats, args.reference_repeats if args.reference else 0)):
        if repeat < args.repeats:
            rows += runs(data, "local", [], args, repeat)
        if args.reference and repeat < args.reference_repeats:
            rows += reference_runs(data, args, repeat)
        if repeat < args.repeats:
            with tempfile.TemporaryDirectory() as tmp, ProcessCluster(tmp, n_workers=2) as cluster:
                warm(cluster.address)
                rows += runs(data, "existing", ["--scheduler", cluster.address], args, repeat)
    write(pd.DataFrame(rows))


def warm(address: str) -> None:
    """Have the workers of the cluster at ``address`` import XGBoost and the engine's
    tasks, as a cluster's workers have once they have run a job."""
    with Client(address) as client:
        for module in WORKER_MODULES:
            client.run(importlib.import_module, module)


def runs(
    data: dict, setup: str, where: list[str], args: argparse.Namespace, repeat: int
) -> list[dict]:
    """One run of each method on its data, on one setup (round ``repeat``): their figures."""
    rows = []
    for scenario, (path, true_alpha) in data.items():
        for method in DATA[scenario]:
            out = args.data / f"out_{scenario}_{method}_{setup}"
            summary = timed_run(
                ["--input", str(path), "--method", method, "--out", str(out), *where]
            )
            rows.append(
                {
                    "code": "pulsnar-dask",
                    "method": method,
                    "data": scenario,
                    "setup": setup,
                    "repeat": repeat,
                    "wall_s": summary["wall_s"],
                    "job_s": summary["seconds"],
                    "alpha": summary["alpha"],
                    "true_alpha": true_alpha,
                    "n_clusters": summary["n_clusters"],
                }
            )
            print(rows[-1], flush=True)
    return rows


def reference_runs(data: dict, args: argparse.Namespace, repeat: int) -> list[dict]:
    """The authors' code on each table, as its own process, timed whole (round
    ``repeat``)."""
    rows = []
    here = Path(__file__).with_name("reference.py")
    for scenario, (path, true_alpha) in data.items():
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(here), str(args.reference.resolve()), scenario, str(path)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
        rows.append(
            {
                "code": "reference",
                "method": DATA[scenario][0],
                "data": scenario,
                "setup": "one process",
                "repeat": repeat,
                "wall_s": round(wall, 2),
                "job_s": np.nan,
                "alpha": json.loads(done.stdout.strip().splitlines()[-1])["alpha"],
                "true_alpha": true_alpha,
                "n_clusters": np.nan,
            }
        )
        print(rows[-1], flush=True)
    return rows


def write(runs: pd.DataFrame) -> None:
    """speed.csv, and speed.md: medians per code, method and setup, and our speed-up over
    the authors' code timed in the same run."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / "speed.csv", index=False)
    lines = [
        "# Whole-process wall time, P=5000, U=100000, 100 features",
        "",
        "Each run its own process, 2 cores: median (min-max) over the repeats, run in "
        "rounds (each round every row once, the authors' code between the two clusters). "
        "The separately started cluster is new each round, its workers made to import "
        "XGBoost and the job's tasks before the round's runs, as a cluster's workers have "
        "once they have run a job.",
        "",
        "| code | method | data | cluster | runs | wall (s) | job (s) | alpha | true alpha |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    groups = runs.groupby(["code", "data", "method", "setup"], sort=False)
    for (code, scenario, method, setup), sel in groups:
        job = f"{np.median(sel.job_s):.2f}" if sel.job_s.notna().any() else "-"
        lines.append(
            f"| {code} | {method.upper()} | {scenario.upper()} | {SETUPS.get(setup, setup)} "
            f"| {len(sel)} | {np.median(sel.wall_s):.2f} ({sel.wall_s.min():.2f}-"
            f"{sel.wall_s.max():.2f}) | {job} | {np.median(sel.alpha):.4f} "
            f"| {sel.true_alpha.iloc[0]:.4f} |"
        )
    reference = runs[runs.code == "reference"]
    lines.append("")
    if reference.empty:
        lines.append("The authors' code was not run (`--reference`): no speed-up is given.")
    else:
        lines += [
            "Speed-up over the authors' code on the same table, timed in this run (its "
            "median wall time over ours; per round, its time in that round over ours):",
            "",
            "| data | authors' method (s) | ours | cluster | speed-up | per round |",
            "|---|---|---|---|---|---|",
        ]
        ours = runs[runs.code == "pulsnar-dask"]
        for scenario, theirs in reference.groupby("data", sort=False):
            base = float(np.median(theirs.wall_s))
            theirs_by_round = theirs.set_index("repeat").wall_s
            for (method, setup), sel in ours[ours.data == scenario].groupby(
                ["method", "setup"], sort=False
            ):
                # each round's ratio, where the authors' code ran in that round
                rounds = sel[sel.repeat.isin(theirs_by_round.index)]
                per_round = theirs_by_round[rounds.repeat].to_numpy() / rounds.wall_s.to_numpy()
                lines.append(
                    f"| {scenario.upper()} | {theirs.method.iloc[0].upper()} {base:.1f} "
                    f"| {method.upper()} {np.median(sel.wall_s):.2f} | {SETUPS[setup]} "
                    f"| {base / np.median(sel.wall_s):.2f}x "
                    f"| {', '.join(f'{r:.2f}x' for r in per_round)} |"
                )
    write_result(RESULTS / "speed.md", "\n".join(lines))


if __name__ == "__main__":
    main()
