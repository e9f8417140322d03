"""The package's metadata: a Python floor that the locked dependencies install on."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
MINORS = [Version(f"3.{minor}") for minor in range(8, 20)]


def _locked() -> list[str]:
    """The distributions the lock pins (``make demo`` and ``make test`` install them)."""
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return [re.split(r"[=<>~!\[ ]", line)[0] for line in lines if line and line[0] != "#"]


def test_requires_python_is_the_floor_the_lock_installs_on():
    """``requires-python``'s lowest Python is the lowest that every locked package
    installs on: a lower floor would let pip try a Python the lock cannot install on.
    (No ceiling is declared, as is usual: a locked package's own cap is the lock's.)"""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = SpecifierSet(project["requires-python"])
    needed = SpecifierSet()
    for name in _locked():
        try:
            needed &= SpecifierSet(importlib.metadata.metadata(name).get("Requires-Python") or "")
        except importlib.metadata.PackageNotFoundError:
            continue  # an extra's package that this environment does not install
    lowest = next(v for v in MINORS if v in needed)
    assert next(v for v in MINORS if v in declared) == lowest, (declared, needed)
