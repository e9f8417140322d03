"""Summaries of benchmark runs (benchmarks.summaries)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.summaries import comparison_table, paper_mae, summarize_runs
from pulsnar_dask.core.stats import mean_ci


def test_mean_ci_is_a_t_interval():
    v = np.array([0.1, 0.2, 0.3, 0.6])
    mean, lo, hi = mean_ci(v)
    half = stats.t.ppf(0.975, 3) * v.std(ddof=1) / 2
    assert (mean, lo, hi) == pytest.approx((0.3, 0.3 - half, 0.3 + half))
    assert mean_ci(np.array([0.4])) == (0.4, 0.4, 0.4)


def test_summarize_runs_takes_errors_against_each_runs_truth():
    runs = pd.DataFrame(
        {
            "dataset": ["d"] * 4,
            "algorithm": ["A", "A", "A", "B"],
            "setting": [0.1, 0.1, 0.2, 0.1],
            "actual_alpha": [0.1, 0.12, 0.2, 0.1],
            "alpha": [0.15, 0.10, 0.25, 0.1],
        }
    )
    out = summarize_runs(runs, ("dataset", "algorithm", "setting"), "actual_alpha")
    first = out.iloc[0]
    assert (first.algorithm, first.setting, first.runs) == ("A", 0.1, 2)
    assert first.mae == pytest.approx((0.05 + 0.02) / 2)
    assert first.true_alpha == pytest.approx(0.11)
    assert first["mean"] == pytest.approx(0.125)
    assert out.mae.iloc[2] == 0.0


def test_comparison_table_puts_the_papers_numbers_beside_ours():
    paper = pd.DataFrame(
        {
            "dataset": ["d", "d", "d"],
            "algorithm": ["PULSNAR", "PULSNAR", "DEDPUL"],
            "true_alpha": [0.1, 0.2, 0.1],
            "runs": [40, 20, 40],
            "mean_est_alpha": [0.11, 0.19, 0.05],
            "std_est_alpha": [0.01, 0.01, 0.0],
            "mean_abs_error": [0.02, 0.05, 0.05],
        }
    )
    runs = pd.DataFrame(
        {
            "dataset": ["d"] * 2,
            "algorithm": ["X"] * 2,
            "true_alpha": [0.1] * 2,
            "alpha": [0.1, 0.12],
        }
    )
    table = comparison_table(summarize_runs(runs), paper, ["PULSNAR", "DEDPUL", "TICE"])
    row = table.splitlines()[2]
    assert row.startswith("| 0.1 | 2 | 0.1100 (")
    assert "| 0.1100 | 0.0200 | 0.0500 | 0.0500 | - | - |" in row
    assert paper_mae(paper, "d", "PULSNAR") == pytest.approx((40 * 0.02 + 20 * 0.05) / 60)
