"""The Python examples of the README and the user guide, run as written.

Each ```python block runs in a fresh namespace. Only what an example leaves to the reader
is filled in, by the substitutions named in ``PLACES``: the cluster's address, where the
data and the models live, and the rows the life-of-a-model example fits and scores.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from distributed import Client

from pulsnar_dask import make_pu_data

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, int, str]]:
    """Every ```python block: (page, its number on the page, its code)."""
    found = []
    for page in PAGES:
        for i, code in enumerate(BLOCK.findall(page.read_text())):
            found.append((page.relative_to(ROOT).as_posix(), i, code))
    return found


def test_the_pages_hold_the_examples_this_module_expects():
    pages = {page for page, _, _ in blocks()}
    assert {"README.md", "docs/guide/python.md", "docs/guide/model.md"} <= pages


@pytest.fixture(scope="module")
def synth_parquet(tmp_path_factory):
    """The README's own ``pulsnar-dask synth`` command, written where the examples read."""
    out = tmp_path_factory.mktemp("synth") / "synth.parquet"
    subprocess.run(
        [sys.executable, "-m", "pulsnar_dask", "synth", "--scenario", "snar", "--n-pos", "2000",
         "--n-unlab", "6000", "--n-features", "50", "--alpha", "0.2", "--seed", "0",
         "--out", str(out), "--partitions", "4"],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def fill_in(code: str, places: dict[str, str]) -> str:
    for placeholder, value in places.items():
        code = code.replace(placeholder, value)
    return code


@pytest.mark.cluster
@pytest.mark.parametrize(("page", "number", "code"), blocks(), ids=lambda v: str(v)[:40])
def test_example_runs(page, number, code, client, synth_parquet, tmp_path):
    places = {
        '"tcp://scheduler:8786"': repr(client.scheduler.address),
        '"s3://bucket/pu/data/"': repr(str(synth_parquet)),
        '"models/pu-2026-11"': repr(str(tmp_path / "model")),
        '"runs/x"': repr(str(tmp_path / "model")),
    }
    namespace: dict = {}
    if "X_train" in code:  # the life of a model leaves its rows to the reader
        data = make_pu_data("snar", n_pos=500, n_unlab=1500, n_features=10, alpha=0.2)
        namespace.update(X_train=data.X[:1800], y_train=data.label[:1800], X_new=data.X[1800:])
        from pulsnar_dask import PULSNAR

        namespace["PULSNAR"] = PULSNAR
    try:
        exec(compile(fill_in(code, places), f"{page}[{number}]", "exec"), namespace)
    finally:  # an example's own client, closed before the cluster it reached goes
        for value in namespace.values():
            if isinstance(value, Client) and value is not client:
                value.close()
    fitted = [v for v in namespace.values() if hasattr(v, "alpha_")]
    assert fitted, "the example fits nothing"
    for model in fitted:
        assert 0 <= model.alpha_ <= 1
        assert np.isfinite(model.alpha_)
