"""Faults at scale: what a 1M-row job does when a worker, the scheduler or the object
store fails under it, against the same job undisturbed.

On a separately started cluster (a scheduler and two worker processes, each under a
nanny that restarts it, as a cluster manager would), ``pulsnar-dask run --classify`` of
1.05M SNAR rows (P = U/20, chunked generator) runs undisturbed, then with a worker
SIGKILLed while the subproblems are scored, then while the retrain runs, then with the
scheduler SIGKILLed. On moto's S3 server behind a fault-injecting proxy
(``benchmarks/faults.py``), a 105,000-row table is run from and to object storage with
one request in ten failed, one in ten delayed 2 s, the store down from the first write
of the outputs, and the store down from the start. Each row of the table says where the
fault was injected, how the run ended, its alpha against the undisturbed run's, what
the output location holds afterwards, and what the log said.

    python jobs/benchmark_faults.py [--rows 1000000] [--s3-rows 100000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import psutil
from common import CLI, RESULTS, synthetic_parquet, write_result

from benchmarks.faults import FaultProxy
from pulsnar_dask.dask_executor.connect import ProcessCluster

LOST_WORKER = re.compile(
    r"worker \S+ lost: its (\d+) assigned task\(s\).* go back to the scheduler, and (\d+) result"
)


@dataclass
class Outcome:
    """One run of the table."""

    fault: str
    injected: str
    exit: int
    seconds: float
    alpha: float | None
    same_alpha: str
    location: str
    log: str


def start(args: list[str], log: Path) -> subprocess.Popen:
    """``pulsnar-dask run`` with ``args``, its stderr to ``log``."""
    with open(log, "w") as err:
        return subprocess.Popen([*CLI, "run", *args], stdout=subprocess.PIPE, stderr=err, text=True)


def wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 900) -> None:
    deadline = time.time() + timeout
    while text not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"{text!r} never appeared in {log}")
        time.sleep(0.1)


def loaded_worker(address: str) -> psutil.Process:
    """The worker process with the most tasks assigned to it, asked of the scheduler."""
    from distributed import Client

    with Client(address, timeout=20) as client:
        pids = client.run(os.getpid)
        assigned = client.processing()
    return psutil.Process(pids[max(pids, key=lambda a: len(assigned.get(a, ())))])


def predictions_digest(folder: Path) -> str:
    """A hash of the predictions as rows (sorted by id), whatever their partitioning."""
    rows = pd.read_parquet(folder / "predictions").sort_values("row_id", ignore_index=True)
    return hashlib.sha256(pd.util.hash_pandas_object(rows, index=False).values).hexdigest()


def ended(proc: subprocess.Popen, log: Path, began: float) -> tuple[int, float, dict | None, str]:
    """Exit status, seconds, the summary (or None), and the log of a finished run."""
    out, _ = proc.communicate(timeout=1800)
    seconds = time.perf_counter() - began
    text = log.read_text(errors="replace")
    summary = json.loads(out.strip().splitlines()[-1]) if proc.returncode == 0 else None
    return proc.returncode, seconds, summary, text


def told(text: str, status: int) -> str:
    """What the log said: the lost workers it logged with what they made rerun, and a
    failed run's last line."""
    said = [
        f"worker lost: {assigned} assigned task(s) back to the scheduler, {held} result(s) "
        "recomputed"
        for assigned, held in LOST_WORKER.findall(text)
    ]
    if status != 0:
        lines = text.strip().splitlines()
        said.append(f"last line `{lines[-1]}`" if lines else "nothing")
        said.append("a traceback" if "Traceback" in text else "no traceback")
    return "; ".join(said) or "-"


def finished(digest: str, baseline: str | None) -> str:
    """A finished run's predictions (their digest) against the reference's."""
    if baseline is None:
        return "a finished run (the reference)"
    return "a finished run; predictions " + ("identical" if digest == baseline else "DIFFER")


def local_holds(out: Path, baseline: str | None) -> tuple[str, str | None]:
    """What a local output folder holds after a run, and its predictions' digest where
    the run finished."""
    if not out.exists():
        return "nothing (no folder)", None
    if (out / "summary.json").exists():
        digest = predictions_digest(out)
        return finished(digest, baseline), digest
    return f"no finished run: {sorted(p.name for p in out.iterdir())}", None


def cluster_faults(args: argparse.Namespace, rows: list[Outcome]) -> dict:
    """The cluster's faults, into ``rows``; returns the undisturbed run's summary."""
    n_unlab = args.rows
    data = args.data / f"snar_{n_unlab}"
    true_alpha = synthetic_parquet(
        data, "snar", n_unlab // 20, n_unlab, args.features, 0.2,
        partitions=max(2, n_unlab // 50_000), chunked=True,
    )  # fmt: skip
    print(f"data: {data} (true alpha {true_alpha:.4f})", flush=True)
    base_alpha, base_digest = None, None
    cases = [
        ("none", "-", None),
        ("worker SIGKILL", "subproblems (3 s into scoring)", "scoring:"),
        ("worker SIGKILL", "retrain (3 s into it)", "classification:"),
        ("scheduler SIGKILL", "subproblems (3 s into scoring)", "scoring:"),
    ]
    with ProcessCluster(args.data, n_workers=2, memory_limit="8GiB", nanny=True) as cluster:
        for n, (fault, where, stage) in enumerate(cases):
            out, log = args.data / "out", args.data / f"run_{n}.log"
            subprocess.run(["rm", "-rf", str(out)], check=True)
            proc = start(
                ["--input", str(data), "--out", str(out), "--classify", "--seed", "0",
                 "--scheduler", cluster.address],
                log,
            )  # fmt: skip
            began = time.perf_counter()
            if stage is not None:
                wait_for(log, stage, proc)
                time.sleep(3)
                if proc.poll() is not None:
                    where += ": the run had ended before it"
                victim = (
                    psutil.Process(cluster.procs[0].pid)
                    if fault.startswith("scheduler")
                    else loaded_worker(cluster.address)
                )
                victim.send_signal(signal.SIGKILL)
            status, seconds, summary, text = ended(proc, log, began)
            holds, digest = local_holds(out, base_digest)
            if fault == "none" and summary is None:
                raise RuntimeError(f"the undisturbed run failed: {text[-2000:]}")
            if fault == "none":
                base, base_alpha, base_digest = summary, summary["alpha"], digest
            rows.append(outcome(fault, where, status, seconds, summary, base_alpha, text, holds))
            print(rows[-1], flush=True)
    return base


def outcome(
    fault: str,
    where: str,
    status: int,
    seconds: float,
    summary: dict | None,
    base_alpha: float | None,
    text: str,
    holds: str,
) -> Outcome:
    """One row of the table: a run's ending against the undisturbed run's alpha."""
    alpha = None if summary is None else summary["alpha"]
    if fault == "none":
        same = "(the reference)"
    elif alpha is None:
        same = "-"
    else:
        same = "yes" if alpha == base_alpha else f"NO ({alpha - base_alpha:+.2g})"
    return Outcome(fault, where, status, round(seconds, 1), alpha, same, holds, told(text, status))


def store_faults(args: argparse.Namespace, rows: list[Outcome]) -> None:
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's line per request

    n_unlab = args.s3_rows
    data = args.data / f"snar_{n_unlab}"
    synthetic_parquet(data, "snar", n_unlab // 20, n_unlab, args.features, 0.2, partitions=4)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    os.environ.update(env)
    s3 = boto3.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket="pu-faults")
    for part in sorted(data.glob("*.parquet")):
        s3.upload_file(str(part), "pu-faults", f"input/{part.name}")
    cases = [
        ("none", "-", {}),
        ("503 SlowDown", "1 request in 10, all along", {"fail_share": 0.1}),
        ("2 s delay", "1 request in 10, all along", {"delay_share": 0.1, "delay_s": 2.0}),
        ("store down", "from the first write of the predictions", {"outage_from": "/predictions/"}),
        ("store down", "from the start", {"fail_share": 1.0}),
    ]
    base_alpha, base_digest = None, None
    try:
        for n, (fault, where, faults) in enumerate(cases):
            prefix = f"runs/{n}"
            with FaultProxy(endpoint, **faults) as proxy:
                options = json.dumps({"client_kwargs": {"endpoint_url": proxy.url}})
                log = args.data / f"s3_{n}.log"
                began = time.perf_counter()
                proc = start(
                    ["--input", "s3://pu-faults/input", "--out", f"s3://pu-faults/{prefix}",
                     "--storage-options", options, "--seed", "0", "--n-workers", "2"],
                    log,
                )  # fmt: skip
                status, seconds, summary, text = ended(proc, log, began)
            keys = [
                o["Key"][len(prefix) + 1 :]
                for o in s3.list_objects_v2(Bucket="pu-faults", Prefix=prefix + "/").get(
                    "Contents", []
                )
            ]
            if "summary.json" in keys:
                local = args.data / "s3copy"
                subprocess.run(["rm", "-rf", str(local)], check=True)
                for key in keys:
                    if key.startswith("predictions/"):
                        (local / "predictions").mkdir(parents=True, exist_ok=True)
                        s3.download_file("pu-faults", f"{prefix}/{key}", str(local / key))
                digest = predictions_digest(local)
                holds = finished(digest, base_digest)
                base_digest = base_digest or digest
            else:
                staged = [k for k in keys if not k.startswith("_running")]
                holds = (
                    f"no finished run (no summary.json); {len(staged)} staged object(s)"
                    f"{' and the lock' if len(staged) < len(keys) else ''} left"
                    if keys
                    else "nothing"
                )
            if fault == "none" and summary is None:
                raise RuntimeError(f"the undisturbed run failed: {text[-2000:]}")
            if fault == "none":
                base_alpha = summary["alpha"]
            rows.append(outcome(fault, where, status, seconds, summary, base_alpha, text, holds))
            rows[-1].log = (
                f"{proxy.failed} of {proxy.requests} requests failed, {proxy.delayed} delayed; "
                + rows[-1].log
            )
            print(rows[-1], flush=True)
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="unlabeled rows (P = U/20)")
    parser.add_argument("--s3-rows", type=int, default=100_000, help="the object-store table's")
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-faults"))
    parser.add_argument("--name", default="faults", help="results file name")
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    rows: list[Outcome] = []
    base = cluster_faults(args, rows)
    n_cluster = len(rows)
    store_faults(args, rows)
    table = pd.DataFrame([asdict(r) for r in rows])
    table.to_csv(RESULTS / f"{args.name}.csv", index=False)
    n_big = args.rows + args.rows // 20
    n_small = args.s3_rows + args.s3_rows // 20
    text = [
        "# Faults at scale",
        "",
        f"The first {n_cluster} rows: `pulsnar-dask run --classify` (default method, seed 0) "
        f"of {n_big:,} SNAR rows x {args.features} features on a separately started "
        "cluster of two workers, each under a nanny that restarts it "
        f"(undisturbed: {base['method']} with {base['n_clusters']} cluster(s), engine "
        f"{base['engine']}, true alpha {base.get('true_alpha', float('nan')):.4f}). The others: "
        f"{n_small:,} rows from and to moto's S3 server through the fault-injecting "
        "proxy of `benchmarks/faults.py`, on a local cluster of two workers. "
        "*Same alpha* compares with the undisturbed run above it; *location* is what the "
        "output location holds after the run.",
        "",
        "| fault | injected | exit | seconds | alpha | same alpha | location | log |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        alpha = "-" if r.alpha is None else f"{r.alpha:.4f}"
        text.append(
            f"| {r.fault} | {r.injected} | {r.exit} | {r.seconds} | {alpha} | {r.same_alpha} | "
            f"{r.location} | {r.log.replace('|', '/')} |"
        )
    write_result(RESULTS / f"{args.name}.md", "\n".join(text))


if __name__ == "__main__":
    main()
