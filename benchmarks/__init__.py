"""The benchmark harness: the real data sets as PU problems and the runs' summaries.

Not part of the package: it reads the data sets kept beside the repository
(``../shared/data``) and the paper's published figures. The jobs in ``jobs/`` and the
tests import it from the repository root.
"""
