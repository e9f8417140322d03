"""Time estimate_alpha's fast (counts) and exact (oracle) paths at 1e4, 1e5 and 1e6 rows.

Writes benchmarks/results/alpha_speed.{csv,md}: median seconds over repeats, the speed-up
of the fast path, and the difference between the two alphas.

    python jobs/benchmark_alpha.py [--repeats 5] [--exact-max 1000000]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import pandas as pd
from common import RESULTS, write_result

from pulsnar_dask import estimate_alpha


def mixture(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_pos = n // 5
    hidden = rng.random(n - n_pos) < 0.3
    unl = np.where(hidden, rng.beta(6, 1.5, hidden.size), rng.beta(1.5, 6, hidden.size))
    return np.r_[rng.beta(6, 1.5, n_pos), unl], np.r_[np.ones(n_pos), np.zeros(hidden.size)]


def timed(p: np.ndarray, y: np.ndarray, exact: bool, repeats: int) -> tuple[float, float]:
    times, alpha = [], float("nan")
    for _ in range(repeats):
        start = time.perf_counter()
        alpha = estimate_alpha(p, y, exact=exact).alpha
        times.append(time.perf_counter() - start)
    return float(np.median(times)), alpha


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--exact-repeats", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5, 10**6])
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        p, y = mixture(n, seed=n)
        estimate_alpha(p, y)  # warm-up
        fast_s, fast_alpha = timed(p, y, False, args.repeats)
        exact_s, exact_alpha = timed(p, y, True, args.exact_repeats)
        rows.append(
            {
                "n": n,
                "fast_median_s": fast_s,
                "exact_median_s": exact_s,
                "speedup": exact_s / fast_s,
                "fast_alpha": fast_alpha,
                "exact_alpha": exact_alpha,
                "alpha_difference": abs(fast_alpha - exact_alpha),
            }
        )
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / "alpha_speed.csv", index=False)
    lines = [
        "# estimate_alpha: fast (counts, 1,024 kernel nodes) vs exact (every probability)",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}; "
        f"fast median of {args.repeats}, exact median of {args.exact_repeats}. "
        "Beta mixture, 20% positives, true weight 0.3.",
        "",
        "| n | fast (s) | exact (s) | speed-up | fast alpha | exact alpha | difference |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['fast_median_s']:.4f} | {r['exact_median_s']:.2f} | "
            f"{r['speedup']:.0f}x | {r['fast_alpha']:.4f} | {r['exact_alpha']:.4f} | "
            f"{r['alpha_difference']:.4f} |"
        )
    write_result(RESULTS / "alpha_speed.md", "\n".join(lines))


if __name__ == "__main__":
    main()
