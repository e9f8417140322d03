"""PULSNAR at growing size on a separately started 2-worker cluster.

U = 100k, 300k and 1M rows (P = U/20, 100 features, SNAR, drawn by the chunked
generator: the paper's would need 12 x 1M x 100 values at once). A scheduler and two
single-threaded worker processes are started first (as a user's cluster would be), then
``pulsnar-dask run --scheduler`` runs as its own client process under /usr/bin/time, so
its peak RSS is the client's alone. The largest run also saves Dask's performance report
(task stream) next to the results. Writes benchmarks/results/scale.{csv,md}.

    python jobs/benchmark_scale.py [--sizes 100000 300000 1000000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from common import RESULTS, synthetic_parquet, timed_run

from pulsnar_dask.dask_executor.connect import ProcessCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-scale"))
    parser.add_argument("--method", default="pulsnar")
    parser.add_argument(
        "--n-clusters", type=int, default=None, help="fix PULSNAR's cluster count (fan-out size)"
    )
    parser.add_argument("--name", default="scale", help="results file name")
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    rows = []
    with ProcessCluster(args.data, n_workers=2, memory_limit="10GiB") as cluster:
        address = cluster.address
        for n_unlab in args.sizes:
            path = args.data / f"snar_{n_unlab}"
            partitions = max(2, n_unlab // 50_000)
            true_alpha = synthetic_parquet(
                path, "snar", n_unlab // 20, n_unlab, 100, 0.2, partitions=partitions, chunked=True
            )
            extra = ["--n-clusters", str(args.n_clusters)] if args.n_clusters else []
            if n_unlab == max(args.sizes):
                extra += [
                    "--performance-report",
                    str(RESULTS / f"{args.name}_performance_report.html"),
                ]
            summary = timed_run(
                [
                    "--input",
                    str(path),
                    "--method",
                    args.method,
                    "--out",
                    str(args.data / "out"),
                    "--scheduler",
                    address,
                    *extra,
                ]
            )
            rows.append(
                {
                    "n_unlabeled": n_unlab,
                    "n_rows": n_unlab + n_unlab // 20,
                    "wall_s": summary["wall_s"],
                    "job_s": summary["seconds"],
                    "us_per_row": 1e6 * summary["wall_s"] / (n_unlab + n_unlab // 20),
                    "client_peak_rss_mib": summary["peak_rss_mib"],
                    "alpha": summary["alpha"],
                    "true_alpha": true_alpha,
                    "n_clusters": summary["n_clusters"],
                    "engine": summary["engine"],
                }
            )
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / f"{args.name}.csv", index=False)
    lines = [
        f"# {args.method.upper()} scale run: 2 separately started workers, P = U/20, 100 "
        f"features{f', --n-clusters {args.n_clusters}' if args.n_clusters else ''}",
        "",
        "| U | rows | wall (s) | job (s) | us per row | client peak RSS (MiB) | alpha "
        "| true alpha | clusters | engine |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n_unlabeled']:,} | {r['n_rows']:,} | {r['wall_s']:.1f} | {r['job_s']:.1f} | "
            f"{r['us_per_row']:.1f} | {r['client_peak_rss_mib']:.0f} | {r['alpha']:.4f} | "
            f"{r['true_alpha']:.4f} | {r['n_clusters']} | {r['engine']} |"
        )
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
