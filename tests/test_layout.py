"""The package's layers: the numerical core stands alone, without Dask or the edges."""

import ast
import subprocess
import sys
from pathlib import Path

import pulsnar_dask

PACKAGE = Path(pulsnar_dask.__file__).parent
CORE = sorted((PACKAGE / "core").glob("*.py"))


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            names.add(node.module)
    return names


def test_core_imports_only_core_and_array_libraries():
    assert len(CORE) > 10
    for path in CORE:
        for name in _imported_modules(path):
            top = name.split(".")[0]
            assert top not in ("dask", "distributed", "dask_ml"), f"core/{path.name} imports {name}"
            if top == "pulsnar_dask":
                assert name.startswith("pulsnar_dask.core"), f"core/{path.name} imports {name}"


def test_importing_the_core_loads_no_dask():
    modules = ", ".join(f"pulsnar_dask.core.{p.stem}" for p in CORE if p.stem != "__init__")
    code = (
        f"import sys, importlib\n"
        f"for m in '{modules}'.split(', '): importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')\n"
        "             or m in ('pulsnar_dask.cli', 'pulsnar_dask.io', 'pulsnar_dask.report'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
