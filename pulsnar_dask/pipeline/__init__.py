"""The PU pipeline, written once, in the order a run goes: :mod:`~.stages` (the
orchestrator, :func:`~.stages.run_pipeline`), :mod:`~.job` (what the stages share and the
input stage), :mod:`~.clusters` (PULSNAR's clusters), :mod:`~.method_choice` (auto),
:mod:`~.diagnostics`, :mod:`~.finish` (alpha, interval, calibration, retrain), and
:mod:`~.result`. :mod:`~.executor` is the seam to where the table lives; :mod:`~.checks`
are the input checks every executor applies; :mod:`~.in_process` is the executor on
arrays here. The Dask executor is in :mod:`pulsnar_dask.dask_executor`."""
