"""The client's memory by stage: one ``pulsnar-dask run`` in this process against a
separately started 2-worker cluster, this process's RSS sampled every 0.05 s and split by
the run's stages (from its log lines). ``benchmark_scale.py`` gives the whole run's peak;
this says which stage holds it.

    python jobs/profile_client.py [--rows 1000000] [--features 20] [-- --calibrate ...]

Arguments after ``--`` go to ``pulsnar-dask run``. The synthetic SNAR table (P = U/20,
alpha 0.2) is written under ``--data`` once.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from pathlib import Path

import psutil
from common import synthetic_parquet

from pulsnar_dask import cli
from pulsnar_dask.dask_executor.connect import ProcessCluster

# the run's stages, by the first words of the log line that starts each
STAGES = (
    "reading and checking",
    "PULSNAR: importance",
    "scoring:",
    "95% interval",
    "calibrating",
    "classification:",
    "writing the predictions",
)


class _StageOf(logging.Handler):
    """Keeps the stage the run's log last announced."""

    def __init__(self) -> None:
        super().__init__()
        self.stage = "before the run"

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.stage = next((s for s in STAGES if message.startswith(s)), self.stage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="unlabeled rows")
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-profile"))
    parser.add_argument("run_args", nargs="*", help="after --: passed to pulsnar-dask run")
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    path = args.data / f"snar_{args.rows}_{args.features}f"
    synthetic_parquet(
        path, "snar", args.rows // 20, args.rows, args.features, 0.2,
        partitions=max(2, args.rows // 50_000), chunked=True,
    )  # fmt: skip
    process, stage, peaks = psutil.Process(), _StageOf(), {}

    def sample() -> None:
        while True:
            rss = process.memory_info().rss / 2**20
            peaks[stage.stage] = max(peaks.get(stage.stage, 0.0), rss)
            time.sleep(0.05)

    logging.getLogger().addHandler(stage)
    logging.getLogger().setLevel(logging.INFO)
    threading.Thread(target=sample, daemon=True).start()
    with ProcessCluster(args.data, n_workers=2, memory_limit="10GiB") as cluster:
        start = time.perf_counter()
        code = cli.main(
            ["run", "--input", str(path), "--out", str(args.data / "out"), "--overwrite",
             "--scheduler", cluster.address, "--quiet", *args.run_args]
        )  # fmt: skip
        seconds = time.perf_counter() - start
    print(f"exit {code}, {seconds:.1f} s; client RSS by stage (MiB):")
    for name, peak in peaks.items():
        print(f"  {name:28s} {peak:7.0f}")


if __name__ == "__main__":
    main()
