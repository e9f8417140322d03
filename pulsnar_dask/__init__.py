"""pulsnar-dask: PULSCAR and PULSNAR positive-unlabeled learning, in memory or on Dask.

The public names load their modules on first use, so that ``python -m pulsnar_dask``
can start a local cluster's fork server before the heavy imports (see
:mod:`pulsnar_dask.dask_executor.forkserver`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pulsnar_dask.core.alpha import AlphaEstimate, estimate_alpha
    from pulsnar_dask.datasets.synthetic import PUData, make_pu_data
    from pulsnar_dask.estimators import PULSCAR, PULSNAR

_HOMES = {
    "PULSCAR": "estimators",
    "PULSNAR": "estimators",
    "AlphaEstimate": "core.alpha",
    "estimate_alpha": "core.alpha",
    "PUData": "datasets.synthetic",
    "make_pu_data": "datasets.synthetic",
}
__all__ = ["PULSCAR", "PULSNAR", "AlphaEstimate", "PUData", "estimate_alpha", "make_pu_data"]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # one declaration: pyproject.toml's, as installed
        from pulsnar_dask.core.model import package_version

        return package_version()
    if name not in _HOMES:
        raise AttributeError(f"module 'pulsnar_dask' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
