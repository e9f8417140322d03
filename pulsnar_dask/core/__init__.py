"""The numerical core: PU learning on in-memory arrays (numpy, scipy, scikit-learn,
XGBoost), no Dask."""
