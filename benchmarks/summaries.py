"""Summaries of benchmark runs next to the paper's published numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pulsnar_dask.core.stats import mean_ci

PAPER_RESULTS = (
    Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "paper_alpha_results.csv"
)


def load_paper_results(path: str | Path | None = None) -> pd.DataFrame:
    """Return the paper's published estimates (dataset, algorithm, true_alpha, ...).

    Raises
    ------
    FileNotFoundError
        When the reference file is not beside the checkout.
    """
    return pd.read_csv(path or PAPER_RESULTS)


def summarize_runs(
    runs: pd.DataFrame,
    by: tuple[str, ...] = ("dataset", "algorithm", "true_alpha"),
    truth: str = "true_alpha",
) -> pd.DataFrame:
    """Summarise runs per group (by default per dataset, algorithm and true alpha).

    Parameters
    ----------
    runs : DataFrame
        Columns ``by``, ``truth`` and ``alpha`` (one row per run).
    by : tuple of str
        Grouping columns.
    truth : str
        Column holding each run's true alpha, the errors are taken against it.

    Returns
    -------
    DataFrame
        The ``by`` columns, ``true_alpha`` (mean of ``truth``), ``runs``, ``mean``,
        ``ci_low``, ``ci_high`` (95% t interval of the mean estimate) and ``mae``.
    """
    rows = []
    for keys, group in runs.groupby(list(by), sort=True):
        mean, lo, hi = mean_ci(group["alpha"].to_numpy())
        rows.append(
            {
                **dict(zip(by, keys, strict=True)),
                "true_alpha": float(group[truth].mean()),
                "runs": len(group),
                "mean": mean,
                "ci_low": lo,
                "ci_high": hi,
                "mae": float(np.mean(np.abs(group["alpha"] - group[truth]))),
            }
        )
    return pd.DataFrame(rows)


def paper_mae(paper: pd.DataFrame, dataset: str, algorithm: str) -> float:
    """Per-run mean absolute error of a published algorithm over all fractions."""
    sel = paper[(paper.dataset == dataset) & (paper.algorithm == algorithm)]
    return float(np.average(sel.mean_abs_error, weights=sel.runs)) if len(sel) else float("nan")


def comparison_table(
    summary: pd.DataFrame, paper: pd.DataFrame, paper_algorithms: list[str]
) -> str:
    """Return a markdown table of our estimates beside the paper's, one row per fraction.

    Parameters
    ----------
    summary : DataFrame
        Output of :func:`summarize_runs` for one dataset and one of our algorithms.
    paper : DataFrame
        Output of :func:`load_paper_results`.
    paper_algorithms : list of str
        Published algorithms to show beside ours.

    Returns
    -------
    str
        Markdown.
    """
    dataset = summary.dataset.iloc[0]
    head = "| true alpha | runs | mean (95% CI) | MAE |"
    rule = "|---|---|---|---|"
    for name in paper_algorithms:
        head += f" paper {name} mean | paper {name} MAE |"
        rule += "---|---|"
    lines = [head, rule]
    for _, row in summary.iterrows():
        line = (
            f"| {row.true_alpha:g} | {row.runs} | {row['mean']:.4f} "
            f"({row.ci_low:.4f}-{row.ci_high:.4f}) | {row.mae:.4f} |"
        )
        for name in paper_algorithms:
            sel = paper[
                (paper.dataset == dataset)
                & (paper.algorithm == name)
                & np.isclose(paper.true_alpha, row.true_alpha)
            ]
            if len(sel):
                line += f" {sel.mean_est_alpha.iloc[0]:.4f} | {sel.mean_abs_error.iloc[0]:.4f} |"
            else:
                line += " - | - |"
        lines.append(line)
    return "\n".join(lines)
