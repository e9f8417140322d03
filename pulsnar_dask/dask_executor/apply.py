"""A saved model applied to new rows on the workers, partition by partition.

The model goes to the cluster once (each worker loads its XGBoost models once, at its
first partition); the rows never reach the client: each partition's probabilities are
written where they are computed, and only small counts come back.
"""

from __future__ import annotations

from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client

from pulsnar_dask.core.model import PUModel
from pulsnar_dask.dask_executor.engine import share

PROBABILITY = "probability"
CALIBRATED = "calibrated_probability"


def _score_part(part: pd.DataFrame, model: PUModel, id_col: str) -> pd.DataFrame:
    probability, calibrated = model.predict_frame(part)
    return pd.DataFrame(
        {id_col: part[id_col].to_numpy(), PROBABILITY: probability, CALIBRATED: calibrated}
    )


def scored_rows(
    client: Client, frame: dd.DataFrame, id_col: str, model: PUModel
) -> tuple[dd.DataFrame, dict[str, Any]]:
    """Lazy scores of ``frame``'s rows, and what the run's summary tells of them.

    Parameters
    ----------
    client : distributed.Client
    frame : dask.dataframe.DataFrame
        The model's feature columns and ``id_col`` (:func:`pulsnar_dask.io.read_rows_to_score`).
    id_col : str
    model : PUModel

    Returns
    -------
    (scores, totals)
        ``scores``: ``id_col``, ``probability`` and ``calibrated_probability`` per row;
        ``totals``: lazy ``n_rows``, ``expected_positives`` (the calibrated
        probabilities' sum) and ``unseen`` (per categorical feature, the rows whose
        category the model has not seen, scored as missing).
    """
    shared = share(client, model)  # on the cluster once; each worker loads it once
    meta = pd.DataFrame(
        {
            id_col: frame._meta[id_col],
            PROBABILITY: np.array([], dtype=float),
            CALIBRATED: np.array([], dtype=float),
        }
    )
    scores = frame.map_partitions(_score_part, shared, id_col, meta=meta)
    schema = model.schema
    unseen_meta = pd.DataFrame({c: pd.Series(dtype="int64") for c in schema.categorical})
    totals = {
        "n_rows": scores.map_partitions(len).sum(),
        "expected_positives": scores[CALIBRATED].sum(),
        "unseen": frame.map_partitions(schema.unseen_counts, meta=unseen_meta).sum(),
    }
    return scores, totals
