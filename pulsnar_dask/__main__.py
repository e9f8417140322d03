"""``python -m pulsnar_dask`` runs the command line."""

from pulsnar_dask.cli import console

console()
