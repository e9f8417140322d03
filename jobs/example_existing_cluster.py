"""Run PULSNAR on an existing Dask cluster from Python, the way a user's job would.

    dask scheduler --port 8786 &  dask worker tcp://127.0.0.1:8786 --nthreads 1 &
    python jobs/example_existing_cluster.py tcp://127.0.0.1:8786 s3://bucket/pu/data/ [out]

The client attaches with ``distributed.Client``, reads the Parquet lazily (the workers do
the reading), runs the engine and writes the same outputs as ``pulsnar-dask run``. The
cluster is left running.
"""

from __future__ import annotations

import argparse
import json
import logging

from distributed import Client

from pulsnar_dask.dask_executor.engine import run_job
from pulsnar_dask.io import read_pu_parquet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scheduler")
    parser.add_argument("input")
    parser.add_argument("--method", default="pulsnar", choices=("pulscar", "pulsnar"))
    parser.add_argument("--true-label-col", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    with Client(args.scheduler, timeout=20) as client:
        data = read_pu_parquet(args.input, true_label_col=args.true_label_col)
        result = run_job(client, data, method=args.method, show_progress=True)
    print(json.dumps(result.summary(), indent=2))


if __name__ == "__main__":
    main()
