"""Plots and the HTML report of a run (PNG via matplotlib's Agg backend)."""

from __future__ import annotations

import html
import io
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from .calibration import expected_calibration_error, reliability_curve
from .engine import WEAK_PU_AUC, JobResult, headline

MAX_PANELS = 6


def _png(fig: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)  # laid out by "constrained"
    plt.close(fig)
    return buffer.getvalue()


def _panels(n: int, title: str) -> tuple[plt.Figure, list[plt.Axes]]:
    n = min(n, MAX_PANELS)
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False, layout="constrained"
    )
    fig.suptitle(title)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:n]


def densities_plot(result: JobResult) -> bytes:
    """Unlabeled density with alpha times the positive density under it, per subproblem."""
    fig, axes = _panels(len(result.estimates), "Densities of out-of-fold probabilities")
    for i, (ax, est) in enumerate(zip(axes, result.estimates, strict=False)):
        ax.plot(est.grid, est.density_unlabeled, label="unlabeled $f_u$", color="tab:blue")
        ax.fill_between(
            est.grid,
            est.alpha * est.density_positive,
            color="tab:orange",
            alpha=0.5,
            label=rf"$\alpha f_p$, $\alpha$={est.alpha:.4f}",
        )
        ax.axvline(0.5, color="grey", lw=0.6, ls=":")
        ax.set_yscale("log")
        ax.set_ylim(max(1e-5, float(est.density_unlabeled.min()) / 2), 1.0)
        name = "PULSCAR" if result.method == "pulscar" else f"cluster {i + 1}"
        ax.set_title(f"{name} (bw {est.bandwidth:.3f}, {est.n_bins} bins)", fontsize=9)
        ax.set_xlabel("probability")
        ax.legend(fontsize=7)
    return _png(fig)


def objective_plot(result: JobResult) -> bytes:
    """What each subproblem's alpha was read from, with the chosen alpha.

    The kernel objective ``log10(|err(a)| + eps)`` over candidates, or, for the tail
    estimator, the tail ratios ``P_U(p >= t) / P_P(p >= t)`` over thresholds.
    """
    fig, axes = _panels(len(result.estimates), "How alpha was read off")
    for ax, est in zip(axes, result.estimates, strict=False):
        if est.estimator == "tail":
            ax.plot(est.tail_thresholds, est.tail_ratios, marker="o", color="tab:purple", lw=0.8)
            ax.axhline(est.alpha, color="tab:red", ls="--", label=f"alpha {est.alpha:.4f}")
            ax.set_xlabel("threshold t (positives' quantiles)")
            ax.set_ylabel(r"$P_U(p \geq t) / P_P(p \geq t)$")
        else:
            ax.plot(est.candidates, est.objective, color="tab:purple", lw=0.8)
            ax.axvline(est.alpha, color="tab:red", ls="--", label=f"alpha {est.alpha:.4f}")
            ax.set_xlim(0, min(1.0, max(0.05, 3 * est.alpha)))
            ax.set_xlabel("candidate alpha")
            ax.set_ylabel(r"$\log_{10}(|err(a)| + \epsilon)$")
        ax.legend(fontsize=7)
    return _png(fig)


def bic_plot(result: JobResult) -> bytes:
    """BIC against the number of mixture components, with the chosen count."""
    fig, ax = plt.subplots(figsize=(5, 3.2), layout="constrained")
    ks = np.arange(1, result.bic.size + 1)
    ax.plot(ks, result.bic, marker="o")
    chosen = result.mixture_components
    merged = f", {result.n_clusters} after merging small ones" if result.n_clusters < chosen else ""
    ax.axvline(chosen, color="tab:red", ls="--", label=f"chosen: {chosen}{merged}")
    ax.set_xlabel("number of clusters")
    ax.set_ylabel("BIC")
    ax.set_title("Clustering of the labeled positives")
    ax.legend()
    return _png(fig)


def plot_reliability(
    ax: plt.Axes, truth: np.ndarray, curves: dict[str, np.ndarray], n_bins: int = 10
) -> None:
    """Draw reliability curves (fraction positive against mean probability per bin).

    ``curves`` maps a legend label to probabilities aligned with the 0/1 ``truth``; rows
    with a NaN probability are left out. The legend shows each curve's ECE.
    """
    ax.plot([0, 1], [0, 1], color="grey", lw=0.6)
    for label, proba in curves.items():
        ok = np.isfinite(proba)
        mean_p, mean_y, count = reliability_curve(truth[ok], proba[ok], n_bins)
        ece = expected_calibration_error(truth[ok], proba[ok], n_bins)
        filled = count > 0
        ax.plot(mean_p[filled], mean_y[filled], marker="o", label=f"{label} (ECE {ece:.3f})")
    ax.set_xlabel("predicted probability")
    ax.set_ylabel("fraction positive")
    ax.legend(fontsize=8)


def calibration_plot(result: JobResult, n_bins: int = 10) -> bytes:
    """Reliability curves of uncalibrated and calibrated probabilities against true labels."""
    truth = (result.true_labels > 0).astype(float)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
    for ax, (name, rows) in zip(
        axes, (("P + U", np.ones(truth.size, bool)), ("U only", result.labels == 0)), strict=True
    ):
        curves = {"uncalibrated": result.probability[rows], "calibrated": result.calibrated[rows]}
        plot_reliability(ax, truth[rows], curves, n_bins)
        ax.set_title(name)
    return _png(fig)


NOT_IDENTIFIED = (
    "<p class='warning'><strong>Alpha is not identified from these features.</strong> The "
    "classifier hardly tells labeled positives from unlabeled rows (out-of-fold AUC below "
    f"{WEAK_PU_AUC}: see pu_auc), so the probabilities of the two groups barely differ and "
    "the number above is not a measurement of the hidden positives.</p>"
)


def _method_choice(result: JobResult) -> str:
    """One paragraph on why ``--method auto`` chose the method (empty otherwise)."""
    evidence = result.method_evidence
    if evidence is None:
        return ""
    return (
        f"<p>Method auto chose <strong>{result.method.upper()}</strong>: "
        f"{html.escape(evidence['reason'])} ({evidence['n_clusters']} cluster(s) of "
        f"positives; subtype-mix distance {evidence['subtype_mix_distance']:.3f}, "
        f"PULSCAR below {evidence['threshold']:g}).</p>"
    )


def build_report(result: JobResult, summary: dict) -> tuple[str, dict[str, bytes]]:
    """Return the HTML report and its PNG files (name -> bytes)."""
    images = {"densities.png": densities_plot(result), "objective.png": objective_plot(result)}
    if result.bic.size:
        images["bic.png"] = bic_plot(result)
    if result.true_labels is not None and result.calibrated is not None:
        images["calibration.png"] = calibration_plot(result)
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(json.dumps(v))}</td></tr>"
        for k, v in summary.items()
    )
    figures = "".join(f'<figure><img src="{name}" alt="{name}"></figure>' for name in images)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>pulsnar-dask: {html.escape(result.method)} run</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "th{text-align:left;padding-right:1em}img{max-width:100%}"
        ".warning{background:#fff3cd;border-left:4px solid #d39e00;padding:.6em}</style>"
        "</head><body>"
        f"<h1>{html.escape(headline(summary))}</h1>"
        f"{'' if result.alpha_identified else NOT_IDENTIFIED}{_method_choice(result)}"
        f"<table>{rows}</table>{figures}</body></html>"
    )
    return page, images
