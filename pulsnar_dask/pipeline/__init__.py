"""The PU pipeline, written once (:mod:`~pulsnar_dask.pipeline.stages`), its result, and the
in-process executor; the Dask executor is in :mod:`pulsnar_dask.dask_executor`."""
