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
from pulsnar_dask.dask_executor.sending import share
from pulsnar_dask.pipeline.checks import (
    check_id_counts,
    check_representable,
    unrepresentable_counts,
)

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
        probabilities' sum), ``unseen`` (per categorical feature, the rows whose
        category the model has not seen, scored as missing), and what
        :func:`check_scored` refuses: ``unrepresentable`` (per numeric feature, values
        float32 cannot hold), ``distinct_ids`` and ``missing_ids``.
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
        "distinct_ids": frame[id_col].nunique(),
        "missing_ids": frame[id_col].isna().sum(),
    }
    numeric = schema.numeric
    if numeric:
        totals["unrepresentable"] = (
            frame[numeric]
            .map_partitions(
                unrepresentable_counts,
                meta=pd.DataFrame({c: pd.Series(dtype="int64") for c in numeric}),
            )
            .sum()
        )
    return scores, totals


def check_scored(totals: dict[str, Any], id_col: str) -> None:
    """Refuse, after the fact, what ``run`` refuses up front (the scores are computed in
    the same pass as these counts and are not kept): feature values float32 cannot hold,
    and missing or repeated ids, which could not join the scores back to the rows.

    Raises
    ------
    PUError
    """
    if "unrepresentable" in totals:
        check_representable(totals["unrepresentable"])
    missing = int(totals["missing_ids"])
    repeated = int(totals["n_rows"]) - missing - int(totals["distinct_ids"])
    check_id_counts(f"id column '{id_col}'", missing, repeated)
