"""Plots and the HTML report of a run (PNG via matplotlib's Agg backend).

The figures are matplotlib's ``Figure`` objects, drawn without ``pyplot``: no global
figure manager to close them in, and a quarter of a second less to import on the run's
start, where the client's imports decide when the cluster is ready.
"""

from __future__ import annotations

import html
import io
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pulsnar_dask.core.calibration import calibration_error, curve_of
from pulsnar_dask.core.interval import Z_95
from pulsnar_dask.core.score_counts import ScoreCounts
from pulsnar_dask.pipeline.method_choice import on_a_sample
from pulsnar_dask.pipeline.result import (
    OVERLAP_AUC,
    WEAK_PU_AUC,
    WIDE_INTERVAL,
    JobResult,
    clusters_alpha_read,
    headline,
)

MAX_PANELS = 6


# The panels' margins in inches, whatever the figure's size: room for the tick labels
# and an axis label on the left and below, a title above each panel and the figure's
# title at the top. Fixed rather than measured: matplotlib's constrained layout measures
# every tick label of every panel (0.03-0.3 s a figure, more with more panels, on the
# run's critical path).
PANEL_WIDTH, PANEL_HEIGHT = 4.2, 3.2
LEFT, RIGHT, BOTTOM, TOP, TITLE = 0.85, 0.15, 0.55, 0.35, 0.4
DPI = 110  # the PNGs' pixels an inch


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)  # a PNG is drawn by the Agg backend
    return buffer.getvalue()


def _panels(n: int, title: str) -> tuple[Figure, list[Axes]]:
    n = min(n, MAX_PANELS)
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    width, height = PANEL_WIDTH * cols, PANEL_HEIGHT * rows + TITLE
    fig = Figure(figsize=(width, height))
    axes = fig.subplots(rows, cols, squeeze=False)
    axes_width = PANEL_WIDTH - LEFT - RIGHT
    axes_height = PANEL_HEIGHT - BOTTOM - TOP
    fig.subplots_adjust(
        left=LEFT / width,
        right=1 - RIGHT / width,
        bottom=BOTTOM / height,
        top=1 - (TOP + TITLE) / height,
        wspace=(LEFT + RIGHT) / axes_width,
        hspace=(BOTTOM + TOP) / axes_height,
    )
    fig.suptitle(title, y=1 - 0.12 / height, va="top")
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:n]


def _clusters_alpha(result: JobResult) -> float | None:
    """The clusters' alpha where auto reads it off PULSCAR's scoring (whose subproblem
    the plots show, at PULSCAR's own alpha); else None."""
    return result.alpha if clusters_alpha_read(result.method_evidence) else None


def densities_plot(result: JobResult) -> bytes:
    """Unlabeled density with alpha times the positive density under it, per subproblem;
    where auto reads the clusters' alpha, that alpha times the density too."""
    fig, axes = _panels(len(result.estimates), "Densities of out-of-fold probabilities")
    clusters = _clusters_alpha(result)
    whose = "" if clusters is None else "PULSCAR's "
    for i, (ax, est) in enumerate(zip(axes, result.estimates, strict=False)):
        ax.plot(est.grid, est.density_unlabeled, label="unlabeled $f_u$", color="tab:blue")
        ax.fill_between(
            est.grid,
            est.alpha * est.density_positive,
            color="tab:orange",
            alpha=0.5,
            label=rf"$\alpha f_p$, {whose}$\alpha$={est.alpha:.4f}",
        )
        if clusters is not None:
            ax.plot(
                est.grid,
                clusters * est.density_positive,
                color="tab:green",
                ls="-.",
                lw=0.8,
                label=rf"clusters' $\alpha$={clusters:.4f}",
            )
        ax.axvline(0.5, color="grey", lw=0.6, ls=":")
        ax.set_yscale("log")
        ax.set_ylim(max(1e-5, float(est.density_unlabeled.min()) / 2), 1.0)
        # auto's scoring is PULSCAR's, whichever alpha it reads
        pulscar = result.method == "pulscar" or result.method_evidence is not None
        name = "PULSCAR" if pulscar else f"cluster {i + 1}"
        ax.set_title(f"{name} (bw {est.bandwidth:.3f}, {est.n_bins} bins)", fontsize=9)
        ax.set_xlabel("probability")
        ax.legend(fontsize=7)
    return _png(fig)


def objective_plot(result: JobResult) -> bytes:
    """What each subproblem's alpha was read from, with the chosen alpha (and the
    clusters' alpha where auto reads it off PULSCAR's scoring).

    The kernel objective ``log10(|err(a)| + eps)`` over candidates, or, for the tail
    estimator, the tail ratios ``P_U(p >= t) / P_P(p >= t)`` over thresholds.
    """
    fig, axes = _panels(len(result.estimates), "How alpha was read off")
    clusters = _clusters_alpha(result)
    read = "alpha" if clusters is None else "PULSCAR's alpha"
    for ax, est, sub in zip(axes, result.estimates, result.subproblems, strict=False):
        if est.estimator == "valley":
            thresholds, ratios = _tail_curve(sub.counts)
            ax.plot(thresholds, ratios, color="tab:purple", lw=0.8)
            cut = float(est.tail_thresholds[0])
            ax.axvline(max(cut, 1e-6), color="grey", ls=":", label=f"valley cut {cut:.3g}")
            ax.axhline(est.alpha, color="tab:red", ls="--", label=f"{read} {est.alpha:.4f}")
            ax.set_xscale("log")
            top = 3 * max(est.alpha, clusters or 0.0) + 0.05
            ax.set_ylim(0, top if top < 1 else 1.05 * max(1.0, float(ratios.max(initial=1.0))))
            ax.set_xlabel("threshold t (probability)")
            ax.set_ylabel(r"$P_U(p \geq t) / P_P(p \geq t)$")
        elif est.estimator == "tail":
            ax.plot(est.tail_thresholds, est.tail_ratios, marker="o", color="tab:purple", lw=0.8)
            ax.axhline(est.alpha, color="tab:red", ls="--", label=f"{read} {est.alpha:.4f}")
            ax.set_xlabel("threshold t (positives' quantiles)")
            ax.set_ylabel(r"$P_U(p \geq t) / P_P(p \geq t)$")
        else:
            ax.plot(est.candidates, est.objective, color="tab:purple", lw=0.8)
            ax.axvline(est.alpha, color="tab:red", ls="--", label=f"{read} {est.alpha:.4f}")
            ax.set_xlim(0, min(1.0, max(0.05, 3 * est.alpha, 1.5 * (clusters or 0))))
            ax.set_xlabel("candidate alpha")
            ax.set_ylabel(r"$\log_{10}(|err(a)| + \epsilon)$")
        if clusters is not None:
            marker = ax.axhline if est.estimator in ("valley", "tail") else ax.axvline
            marker(clusters, color="tab:green", ls="-.", label=f"clusters' alpha {clusters:.4f}")
        ax.legend(fontsize=7)
    return _png(fig)


def _tail_curve(counts: ScoreCounts, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """``P_U(p >= t) / P_P(p >= t)`` at ``n`` quantiles of all the probabilities (floored
    at 1e-6 for a log axis), read on the counts' grid, where some labeled positive lies at
    or above ``t``."""
    t = np.unique(np.maximum(counts.quantiles(None, np.linspace(0.0, 0.999, n)), 1e-6))
    above_p, above_u = counts.share_at_least(1, t), counts.share_at_least(0, t)
    keep = above_p > 0
    return t[keep], above_u[keep] / above_p[keep]


def chosen_label(components: int, n_clusters: int) -> str:
    """The BIC plot's legend for the chosen mixture: its components and the clusters
    left after small ones merged."""
    label = f"chosen: {components}"
    if n_clusters < components:
        label += f", {n_clusters} after merging small ones"
    return label


def bic_plot(result: JobResult) -> bytes:
    """BIC against the number of mixture components, with the chosen count."""
    fig = Figure(figsize=(5, 3.2), layout="constrained")
    ax = fig.subplots()
    ks = np.arange(1, result.bic.size + 1)
    kind = result.clustering.covariance_type if result.clustering is not None else ""
    ax.plot(ks, result.bic, marker="o", label=f"{kind} covariance".strip())
    chosen = result.mixture_components
    clusters = result.n_clusters
    if result.clustering is not None:  # the clustering's own count, whatever auto chose
        clusters = result.clustering.n_clusters
    ax.axvline(chosen, color="tab:red", ls="--", label=chosen_label(chosen, clusters))
    ax.set_xlabel("number of clusters")
    ax.set_ylabel("BIC")
    ax.set_title("Clustering of the labeled positives")
    ax.legend()
    return _png(fig)


def plot_reliability(ax: Axes, curves: dict[str, np.ndarray]) -> None:
    """Draw reliability curves (fraction positive against mean probability per bin).

    ``curves`` maps a legend label to its
    :func:`~pulsnar_dask.core.calibration.reliability_sums`. The legend shows each
    curve's ECE.
    """
    ax.plot([0, 1], [0, 1], color="grey", lw=0.6)
    for label, sums in curves.items():
        mean_p, mean_y, count = curve_of(sums)
        ece = calibration_error(sums)
        filled = count > 0
        ax.plot(mean_p[filled], mean_y[filled], marker="o", label=f"{label} (ECE {ece:.3f})")
    ax.set_xlabel("predicted probability")
    ax.set_ylabel("fraction positive")
    ax.legend(fontsize=8)


def calibration_plot(result: JobResult, n_bins: int = 10) -> bytes:
    """Reliability curves of uncalibrated and calibrated probabilities against true labels
    (summed where the rows are held, :meth:`~pulsnar_dask.pipeline.result.HeldRows.reliability`)."""
    sums = result.rows.reliability(n_bins)
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, name, of_rows in zip(axes, ("P + U", "U only"), sums, strict=True):
        plot_reliability(ax, dict(zip(("uncalibrated", "calibrated"), of_rows, strict=True)))
        ax.set_title(name)
    return _png(fig)


NOT_IDENTIFIED = (
    "<p class='warning'><strong>Alpha is not identified from these features.</strong> The "
    "classifier hardly tells labeled positives from unlabeled rows (out-of-fold AUC below "
    f"{WEAK_PU_AUC}: see the diagnostics), so the probabilities of the two groups barely "
    "differ and the number above is not a measurement of the hidden positives.</p>"
)

CAPTIONS = {
    "densities.png": (
        "Each panel is one subproblem (PULSCAR: every labeled positive; PULSNAR: one subtype) "
        "against every unlabeled row. Blue: density of the unlabeled rows' out-of-fold "
        "probabilities; orange: alpha times the labeled positives' density. Alpha is the "
        "largest share of the positives' density that still fits under the unlabeled one "
        "(log scale). Dash-dotted, where auto reads the clusters' alpha: that alpha times "
        "the same density."
    ),
    "objective.png": (
        "How each subproblem's alpha was read: the objective over candidate alphas jumps "
        "where alpha times the positives' density starts to exceed the unlabeled density "
        "(for the tail reader: the tail ratios over thresholds; for the valley reader, the "
        "share of unlabeled rows above each threshold over the labeled positives' share, "
        "read at the dip, dotted). Dashed: the alpha read (under method auto, PULSCAR's); "
        "dash-dotted, where auto reads the clusters' alpha instead, that alpha."
    ),
    "bic.png": (
        "How many subtypes: BIC (lower fits better for its size) of Gaussian mixtures of the "
        "labeled positives with 1 to M components, on the covariance type (full or "
        "diagonal) that reached the lower BIC. Dashed: the count used."
    ),
    "calibration.png": (
        "Only with a true-label column: fraction truly positive against the predicted "
        "probability, per bin. On the grey diagonal a probability means what it says; ECE "
        "(expected calibration error) in the legend, lower is better."
    ),
}

STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.45}"
    "h1{font-size:1.6em}table{border-collapse:collapse;margin:.5em 0 1.2em}"
    "th,td{text-align:left;padding:.25em .9em .25em 0;vertical-align:top}"
    "thead th{border-bottom:1px solid #999}td.n{text-align:right}"
    "img{max-width:100%}figcaption{color:#444;font-size:.92em;max-width:900px}"
    ".lead{font-size:1.1em}"
    ".warning{background:#fff3cd;border-left:4px solid #d39e00;padding:.6em}"
)


def _number(value: Any) -> str:
    """A number as people read it: thousands separated, three decimals at most."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return html.escape(str(value))
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def _table(rows: list[tuple[str, Any]]) -> str:
    return (
        "<table>"
        + "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
        + "</table>"
    )


def _separation(auc: float) -> str:
    if auc >= 0.9:
        return "clearly"
    if auc >= 0.75:
        return "moderately well"
    if auc >= WEAK_PU_AUC:
        return "weakly"
    return "hardly"


def _starts_at_0(summary: dict[str, Any]) -> bool:
    """Whether the run's interval was taken to 0 because the classes overlap (a summary
    written before that rule has the overlap flag without it)."""
    return bool(summary.get("alpha_may_be_high")) and summary.get("alpha_interval", [None])[0] == 0


def plain_reading(summary: dict[str, Any]) -> str:
    """One paragraph, in plain words, of what the run found (from the summary alone)."""
    n_u, hidden = summary["n_unlabeled"], summary["hidden_positives"]
    text = (
        f"Among the {n_u:,} unlabeled rows, about {hidden:,} are estimated to be positives "
        "that were never labeled"
    )
    if "alpha_interval" in summary:
        low, high = summary["alpha_interval"]
        text += f" (95% interval {round(low * n_u):,} to {round(high * n_u):,})"
    text += f": alpha = {summary['alpha']:.3f} of the unlabeled rows. "
    if summary.get("alpha_imprecise"):
        low, high = summary["alpha_interval"]
        why = (
            "it starts at 0, as the classes overlap"
            if _starts_at_0(summary)
            else "the diagnostics below show which readings widen it"
        )
        text += (
            f"That interval is {high - low:.3f} wide, more than {WIDE_INTERVAL} of the "
            "unlabeled rows: the data do not pin alpha down; act on the interval, not on the "
            f"point ({why}). "
        )
    evidence = summary.get("method_evidence") or {}
    subtypes = summary.get("subtypes")
    if subtypes:
        text += (
            f"The {summary['n_positive']:,} labeled positives fall into {len(subtypes)} "
            "subtypes that hide positives at different rates (table below); the estimate is "
            "the sum over them"
            if len(subtypes) > 1
            else f"The {summary['n_positive']:,} labeled positives form one cluster (table "
            "below), read as one group"
        )
        shared = [g for g in summary.get("cluster_groups") or [] if len(g) > 1]
        for group in shared:
            names = ", ".join(map(str, group[:-1])) + f" and {group[-1]}"
            text += f"; subtypes {names} claim the same unlabeled rows, counted once"
        text += ". "
        if clusters_alpha_read(evidence):  # auto, the clusters' alpha
            text += (
                "Auto reads them as PULSNAR does, as though each kind was labeled at its own "
                "rate, since even the clusters' more cautious tail reading lies above "
                "PULSCAR's beyond the noise of both. "
            )
    else:
        if "readings" in evidence:  # auto beside several clusters: one of two assumptions
            text += (
                f"The estimate reads the {summary['n_positive']:,} labeled positives as one "
                "group, as PULSCAR does: as though every kind was labeled at the same rate. "
            )
        else:
            text += (
                f"The {summary['n_positive']:,} labeled positives were read as one group: as "
                "likely to be labeled whatever their kind. "
            )
        if evidence.get("subtypes_may_be_unseen"):
            text += (
                f"That rests on the top {evidence['cluster_features']:,} of the "
                f"{evidence['model_features']:,} features the classifier uses: subtypes "
                "that differ a little in many features can go unseen there, and then "
                "alpha is read too low. "
            )
    readings = summary.get("interval_readings", {})
    reader = summary["settings"]["alpha_estimator"]
    if f"pulscar {reader}" in readings and f"pulsnar {reader}" in readings:
        estimate = {summary["method"]: ", the estimate"}
        text += (
            "The interval spans both ways positives may have been labeled: at random "
            f"(PULSCAR reads alpha {readings[f'pulscar {reader}']['alpha']:.3f}"
            f"{estimate.get('pulscar', '')}) or at rates that depend on the subtype (the "
            f"{summary['method_evidence']['n_clusters']} clusters, read as PULSNAR reads them"
            + on_a_sample(evidence, summary["n_unlabeled"], summary["n_positive"])
            + f", give {readings[f'pulsnar {reader}']['alpha']:.3f}"
            f"{estimate.get('pulsnar', '')}). "
        )
    auc = min(summary["pu_auc"])
    text += (
        f"The classifier told labeled positives from unlabeled rows {_separation(auc)} "
        f"(out-of-fold AUC {auc:.2f}"
        + (", lowest over the subtypes)" if len(summary["pu_auc"]) > 1 else ")")
    )
    text += "." if summary["alpha_identified"] else ", too little to identify alpha."
    if summary.get("alpha_may_be_high"):
        text += (
            " If positives were labeled at random, the labeled positives and the unlabeled "
            f"negatives overlap (AUC between them at most about {summary['negative_auc']:.3f}, "
            f"below {OVERLAP_AUC}): every reading of alpha also counts the negatives that "
            "resemble positives, so alpha is an upper bound, and where many do it can be "
            "several times the truth"
            + ("; the interval therefore starts at 0." if _starts_at_0(summary) else ".")
        )
    if "perfect_separation" in summary:
        text += (
            " It separated them perfectly, which real data rarely allow: if a feature "
            "records the label, or is filled in only once a row is labeled (the models "
            f"lean most on {summary['perfect_separation']['leading_feature']!r}), leave it "
            "out and run again; if not, no unlabeled row resembles a labeled positive."
        )
    if "true_alpha" in summary:
        error = summary["alpha"] - summary["true_alpha"]
        text += (
            f" The input carries true labels: the true alpha is {summary['true_alpha']:.3f} "
            f"(this run's error {error:+.3f})."
        )
    return f"<p class='lead'>{html.escape(text)}</p>"


def _subtypes_section(summary: dict[str, Any]) -> str:
    subtypes = summary.get("subtypes")
    if not subtypes:
        return ""
    body = ""
    for i, sub in enumerate(subtypes, start=1):
        apart = ", ".join(
            f"{html.escape(d['feature'])} {'higher' if d['difference_sd'] > 0 else 'lower'} "
            f"({d['difference_sd']:+.1f} sd)"
            for d in sub["distinguishing"]
        )
        body += (
            f"<tr><td>{i}</td><td class='n'>{sub['positives']:,}</td>"
            f"<td class='n'>{sub['alpha']:.3f}</td><td class='n'>{sub['hidden_positives']:,}</td>"
            f"<td>{apart or '-'}</td></tr>"
        )
    return (
        "<h2>Subtypes of the positives</h2><table id='subtypes'><thead><tr><th>subtype</th>"
        "<th>labeled positives</th><th>alpha</th><th>hidden positives</th>"
        "<th>what sets it apart (mean against all positives, in standard deviations)</th>"
        f"</tr></thead><tbody>{body}</tbody></table>"
    )


def _diagnostics(summary: dict[str, Any]) -> str:
    auc = ", ".join(f"{a:.3f}" for a in summary["pu_auc"])
    rows: list[tuple[str, Any]] = [
        ("labeled vs unlabeled AUC", f"{auc} (alpha identified: "
         f"{'yes' if summary['alpha_identified'] else 'no'}, needs at least {WEAK_PU_AUC})"),
    ]  # fmt: skip
    if "negative_auc" in summary:
        rows.append(
            (
                "positives vs unlabeled negatives AUC (implied)",
                f"{summary['negative_auc']:.3f} (alpha may be far too high below {OVERLAP_AUC}; "
                "read from the subproblem over every positive, at its alpha)",
            )
        )
    evidence = summary.get("method_evidence")
    if evidence:
        rows.append(
            (
                "method",
                f"auto reads <strong>{summary['method'].upper()}</strong>: "
                f"{html.escape(evidence['reason'])} ({evidence['n_clusters']} cluster(s) of "
                "positives)",
            )
        )
    else:
        rows.append(("method", f"{summary['method'].upper()} (as asked)"))
    if "alpha_interval" in summary:
        low, high = summary["alpha_interval"]
        spans = ", ".join(
            f"{name} {r['alpha']:.3f} &plusmn; {Z_95 * r['sd']:.3f}"
            for name, r in summary["interval_readings"].items()
        )
        rows.append(
            (
                "95% interval of alpha",
                f"{low:.3f} to {high:.3f}: the span of {spans}"
                + (", from 0 as the classes overlap" if _starts_at_0(summary) else "")
                + f" ({html.escape(summary['interval_method'])})",
            )
        )
    if "alphas" in summary:
        low, high = summary["alpha_ci"]
        rows.append(
            (
                "alpha per iteration",
                f"{', '.join(f'{a:.3f}' for a in summary['alphas'])} (95% interval of their "
                f"mean {low:.3f} to {high:.3f})",
            )
        )
    if "true_alpha" in summary:
        rows.append(("true alpha (from the true labels)", f"{summary['true_alpha']:.3f}"))
    for name, values in (summary.get("metrics") or {}).items():
        shown = ", ".join(f"{k} {v:.3f}" for k, v in values.items())
        rows.append((f"classification {name.replace('_', ' ')}", shown))
    return "<h2>Diagnostics</h2>" + _table(rows)


def _settings(summary: dict[str, Any]) -> str:
    rows: list[tuple[str, Any]] = []
    if "input" in summary:
        rows.append(("input", html.escape(summary["input"])))
    rows += [
        ("rows", _number(summary["n_positive"] + summary["n_unlabeled"])),
        ("labeled positives", _number(summary["n_positive"])),
        ("unlabeled rows", _number(summary["n_unlabeled"])),
        ("engine", html.escape(summary["engine"])),
    ]
    if summary.get("categorical_features"):
        rows.append(
            ("categorical features", html.escape(", ".join(summary["categorical_features"])))
        )
    if summary.get("left_out_columns"):
        rows.append(
            (
                "columns left out",
                html.escape("; ".join(f"{k}: {v}" for k, v in summary["left_out_columns"].items())),
            )
        )
    if "model" in summary:
        rows.append(
            (
                "saved model",
                f"{html.escape(summary['model'])}: score new rows with <code>pulsnar-dask "
                "score --model RUN --input NEW --out SCORED</code>",
            )
        )
    rows += [
        (name.replace("_", " "), html.escape(json.dumps(value)) if isinstance(value, dict | list)
         else _number(value))
        for name, value in summary.get("settings", {}).items()
    ]  # fmt: skip
    timings = ", ".join(f"{k} {v:.1f} s" for k, v in summary["stage_seconds"].items())
    rows.append(("time", f"{summary['seconds']:.1f} s in all (stages ended at: {timings})"))
    return "<h2>Input and settings</h2>" + _table(rows)


def build_report(result: JobResult, summary: dict) -> tuple[str, dict[str, bytes]]:
    """Return the HTML report and its PNG files (name -> bytes).

    The page answers the question first (the headline: hidden positives and their
    interval), reads it in a plain paragraph, then shows the subtypes, the diagnostics,
    the input and settings, the captioned plots and, folded, the full JSON summary.
    """
    images = {"densities.png": densities_plot(result), "objective.png": objective_plot(result)}
    if result.bic.size:
        images["bic.png"] = bic_plot(result)
    if result.rows.truth is not None and result.rows.has_calibrated:
        images["calibration.png"] = calibration_plot(result)
    figures = "".join(
        f'<figure><img src="{name}" alt="{name}"><figcaption>{html.escape(CAPTIONS[name])}'
        "</figcaption></figure>"
        for name in images
    )
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>pulsnar-dask: {html.escape(result.method)} run</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(headline(summary))}</h1>"
        f"{plain_reading(summary)}{'' if result.alpha_identified else NOT_IDENTIFIED}"
        f"{_subtypes_section(summary)}{_diagnostics(summary)}{_settings(summary)}"
        f"<h2>Plots</h2>{figures}"
        "<details><summary>Full summary (JSON)</summary><pre>"
        f"{html.escape(json.dumps(summary, indent=1, sort_keys=True))}</pre></details>"
        "</body></html>"
    )
    return page, images


# Chromium flags for a headless render on a machine without a screen or outside network.
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def screenshot(
    page: str | Path, out: str | Path, width: int = 1280, height: int = 900, timeout: float = 60
) -> Path:
    """Render an HTML file in headless Chromium and save what its first screen shows.

    Parameters
    ----------
    page : path
        The HTML file (a run's ``report.html``; its PNGs beside it).
    out : path
        Where the PNG goes.
    width, height : int
        The browser window, in CSS pixels.
    timeout : float
        Seconds before giving up on the browser.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    RuntimeError
        Without a ``chromium`` executable, or when it fails.
    """
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise RuntimeError("no chromium executable (Debian: apt-get install chromium)")
    out = Path(out).resolve()
    out.unlink(missing_ok=True)  # a failed render must not pass for an old picture
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [browser, *HEADLESS_FLAGS, f"--user-data-dir={profile}",
             f"--window-size={width},{height}", f"--screenshot={out}",
             Path(page).resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"chromium could not render {page}: {proc.stderr.strip()[-300:]}")
    return out
