"""The package's layers: the numerical core and the pipeline stand without Dask, the
command line or the other edges."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import pulsnar_dask

PACKAGE = Path(pulsnar_dask.__file__).parent
# layer: the package modules it may import (besides itself)
ALLOWED = {
    "core": ("pulsnar_dask.core",),
    "pipeline": ("pulsnar_dask.core", "pulsnar_dask.pipeline", "pulsnar_dask.errors"),
}


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it_and_no_dask(layer):
    files = sorted((PACKAGE / layer).glob("*.py"))
    assert len(files) > 2
    for path in files:
        for name in _imported_modules(path):
            top = name.split(".")[0]
            assert top not in ("dask", "distributed", "dask_ml"), f"{layer}/{path.name}: {name}"
            if top == "pulsnar_dask":
                assert name.startswith(ALLOWED[layer]), f"{layer}/{path.name} imports {name}"


def test_importing_core_and_pipeline_loads_no_dask():
    modules = [
        f"pulsnar_dask.{layer}.{p.stem}"
        for layer in ALLOWED
        for p in sorted((PACKAGE / layer).glob("*.py"))
    ]
    assert all(importlib.util.find_spec(m) for m in modules)
    code = (
        "import sys, importlib\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')\n"
        "             or m in ('pulsnar_dask.cli', 'pulsnar_dask.io', 'pulsnar_dask.report'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_package_stands_alone_without_the_benchmark_harness_or_shared_data():
    """A user's install has neither ``benchmarks/`` nor ``../shared`` beside it."""
    for path in sorted(PACKAGE.rglob("*.py")):
        names = _imported_modules(path)
        assert not any(n.split(".")[0] == "benchmarks" for n in names), path.name
        text = path.read_text()
        assert "../shared" not in text and '"shared"' not in text, path.name
