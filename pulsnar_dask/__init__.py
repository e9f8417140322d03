"""pulsnar-dask: PULSCAR and PULSNAR positive-unlabeled learning, in memory or on Dask."""

from .alpha import AlphaEstimate, estimate_alpha
from .estimators import PULSCAR, PULSNAR
from .synthetic import PUData, make_pu_data

__all__ = ["PULSCAR", "PULSNAR", "AlphaEstimate", "PUData", "estimate_alpha", "make_pu_data"]
__version__ = "0.1.0"
