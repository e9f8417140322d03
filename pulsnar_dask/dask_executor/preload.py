"""What the fork server imports before it forks local workers (see :mod:`.forkserver`).

Importing this module imports what every job's workers run (the engine's tasks and
XGBoost, which the client itself does not import; PULSNAR's mixtures import
scikit-learn on their first fit), then freezes those objects for the garbage collector,
as Python's documentation advises before forking (``gc.freeze``): forked workers share
the pages instead of copying them as their collections walk each object, and the server
exits without walking them either. It is the fork server's preload, not a module to
import elsewhere.
"""

import gc

import distributed  # noqa: F401
import xgboost  # noqa: F401

import pulsnar_dask.dask_executor.engine  # noqa: F401

gc.freeze()
