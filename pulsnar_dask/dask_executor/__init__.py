"""The Dask side: the distributed engine, connecting to clusters, worker start-up."""
