"""The report's panel figures: laid out with fixed margins, nothing drawn past their edges."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.report import (
    DPI,
    PANEL_HEIGHT,
    PANEL_WIDTH,
    TITLE,
    densities_plot,
    objective_plot,
)


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"))


def _drawn_to_the_edge(pixels: np.ndarray, band: int = 2) -> bool:
    """Whether anything but the white background lies within ``band`` pixels of an edge
    (a label the fixed margins cut off runs into the edge)."""
    edges = [pixels[:band], pixels[-band:], pixels[:, :band], pixels[:, -band:]]
    return any((edge < 250).any() for edge in edges)


@pytest.fixture(scope="module")
def fitted() -> dict[str, SimpleNamespace]:
    """What the plots read of a run (its estimates, method, auto's evidence and
    subproblems): PULSCAR with each reader, and PULSNAR asked for six clusters (five once
    small ones merge: two rows of panels)."""
    data = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=1.5, n_subtypes=3, random_state=0)
    runs = {
        reader: PULSCAR(alpha_estimator=reader, random_state=0, n_jobs=2)
        for reader in ("kernel", "tail", "valley")
    }
    runs["clusters"] = PULSNAR(n_clusters=6, method="pulsnar", random_state=0, n_jobs=2)
    out = {}
    for name, est in runs.items():
        est.fit(data.X, data.label)
        out[name] = SimpleNamespace(
            estimates=est.cluster_estimates_,
            method=est.method_,
            method_evidence=getattr(est, "method_evidence_", None),
            subproblems=est.subproblems_,
            alpha=est.alpha_,
        )
    return out


@pytest.mark.parametrize("name", ["kernel", "tail", "valley", "clusters"])
@pytest.mark.parametrize("plot", [densities_plot, objective_plot])
def test_panels_keep_their_labels_inside_the_figure(fitted, name, plot):
    result = fitted[name]
    pixels = _pixels(plot(result))
    n = len(result.estimates)
    cols, rows = min(n, 3), -(-n // 3)
    assert rows == (2 if name == "clusters" else 1)
    # the figure's size follows its panels: fixed inches a panel, the title's band above
    expected = (round((PANEL_HEIGHT * rows + TITLE) * DPI), round(PANEL_WIDTH * cols * DPI))
    assert pixels.shape == expected
    assert not _drawn_to_the_edge(pixels)


@pytest.mark.parametrize("name", ["kernel", "tail", "valley"])
def test_the_clusters_alpha_is_drawn_where_auto_reads_it(fitted, name, monkeypatch):
    """Where auto reads the clusters' alpha off PULSCAR's scoring, the plots of PULSCAR's
    subproblem draw that alpha times the positives' density, and mark it where the reader
    reads alpha (a candidate on the x axis, a ratio on the y axis), inside the figure;
    where auto reads PULSCAR's, neither."""
    import pulsnar_dask.report as report

    result = fitted[name]
    est = result.estimates[0]
    evidence = {"read": "pulsnar"}
    read = SimpleNamespace(
        **{
            **vars(result),
            "method": "pulsnar",
            "alpha": est.alpha + 0.1,
            "method_evidence": evidence,
        }
    )
    for plot in (densities_plot, objective_plot):
        assert not _drawn_to_the_edge(_pixels(plot(read)))
    drawn = []
    monkeypatch.setattr(report, "_png", lambda fig: drawn.append(fig.axes[0]) or b"")
    densities_plot(read), objective_plot(read)
    densities, objective = drawn

    def labelled(ax, start):
        return [line for line in ax.get_lines() if line.get_label().startswith(start)]

    (curve,) = labelled(densities, "clusters'")
    np.testing.assert_allclose(curve.get_ydata(), read.alpha * est.density_positive)
    (marker,) = labelled(objective, f"clusters' alpha {read.alpha:.4f}")
    along = marker.get_ydata() if name in ("tail", "valley") else marker.get_xdata()
    assert list(along) == [read.alpha, read.alpha]
    assert labelled(objective, f"PULSCAR's alpha {est.alpha:.4f}")
    drawn.clear()
    as_pulscar = SimpleNamespace(**{**vars(result), "method_evidence": {"read": "pulscar"}})
    densities_plot(as_pulscar), objective_plot(as_pulscar)
    assert not any(labelled(ax, "clusters'") or labelled(ax, "PULSCAR's") for ax in drawn)


def test_a_label_past_the_margin_is_seen(fitted):
    """The check above can fail: a y label far longer than the margin leaves it."""
    import pulsnar_dask.report as report

    result = fitted["kernel"]
    fig, (ax,) = report._panels(1, "How alpha was read off")
    est = result.estimates[0]
    ax.plot(est.candidates, est.objective)
    ax.set_ylabel("a label much longer than the figure is tall, " * 3)
    assert _drawn_to_the_edge(_pixels(report._png(fig)))
