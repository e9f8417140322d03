"""``python -m pulsnar_dask`` runs the command line."""

from .cli import console

console()
