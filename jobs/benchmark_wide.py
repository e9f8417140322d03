"""PULSNAR on wide data: 20,000 rows x 5,000 features (SNAR synthetic) on a local cluster.

P=5000, U=15000, alpha 0.2, class_sep 0.3, drawn by the chunked generator (the paper's
would hold 15000 x 12 x 5000 values at once, 7.2 GB). ``pulsnar-dask run`` runs as its own
process with the default local cluster (2 workers); reported: wall time, the largest
single process's peak RSS, the peak of all its processes together, alpha and its error.
Writes benchmarks/results/wide.{csv,md}.

    python jobs/benchmark_wide.py [--rows 20000] [--features 5000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from common import RESULTS, synthetic_parquet, timed_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--features", type=int, default=5000)
    parser.add_argument("--alpha", type=float, default=0.2)
    parser.add_argument("--data", type=Path, default=Path("/tmp/pulsnar-wide"))
    args = parser.parse_args()
    n_pos = args.rows // 4
    path = args.data / f"snar_{args.rows}_{args.features}"
    true_alpha = synthetic_parquet(
        path, "snar", n_pos, args.rows - n_pos, args.features, args.alpha, partitions=8,
        chunked=True,
    )  # fmt: skip
    summary = timed_run(
        ["--input", str(path), "--method", "pulsnar", "--out", str(args.data / "out")]
    )
    row = {
        "rows": args.rows,
        "features": args.features,
        "wall_s": summary["wall_s"],
        "job_s": summary["seconds"],
        "peak_process_rss_mib": summary["peak_rss_mib"],
        "peak_all_processes_rss_mib": summary["peak_tree_rss_mib"],
        "alpha": summary["alpha"],
        "true_alpha": true_alpha,
        "abs_error": abs(summary["alpha"] - true_alpha),
        "n_clusters": summary["n_clusters"],
        "engine": summary["engine"],
    }
    print(row, flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([row]).to_csv(RESULTS / "wide.csv", index=False)
    lines = [
        f"# PULSNAR on wide data: {args.rows:,} rows x {args.features:,} features (SNAR)",
        "",
        "`pulsnar-dask run` with defaults on the local cluster (2 worker processes), this "
        "machine (2 cores, 24 GiB).",
        "",
        "| rows | features | wall (s) | job (s) | peak RSS, largest process (MiB) "
        "| peak RSS, all processes (MiB) | alpha | true alpha | abs error | clusters |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {row['rows']:,} | {row['features']:,} | {row['wall_s']:.1f} | {row['job_s']:.1f} | "
        f"{row['peak_process_rss_mib']:.0f} | {row['peak_all_processes_rss_mib']:.0f} | "
        f"{row['alpha']:.4f} | {row['true_alpha']:.4f} | {row['abs_error']:.4f} | "
        f"{row['n_clusters']} |",
    ]
    (RESULTS / "wide.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
