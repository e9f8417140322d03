"""Dask dataframes whose partitions stay the ones that were computed.

dask-expr's optimizer lays a lazy frame's partitions out afresh for each computation: a
Parquet read that keeps a small share of its files' columns is fused, several files to
a partition (``FusedIO``), and the share depends on which columns the computation uses.
Two computations of one frame can so see different partitions, and ``Client.persist``
of such a read returns a frame that counts the unfused partitions while holding the
fused ones' futures: its first computation is cancelled for "lost dependencies"
(dask/dask#12488). The functions here fix a frame's partitions once, as the optimizer
lays them out for the frame itself, and rebuild the frame on them: a frame made by
``from_delayed`` is never fused or split again, so every later computation sees the same
partitions, and a partition's number means the same rows in each.
"""

from __future__ import annotations

from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, Future


def _rebuilt(parts: list[Any], meta: pd.DataFrame) -> dd.DataFrame:
    """A frame on ``parts`` (delayed objects or futures, one a partition, in order)."""
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def stored(client: Client, frame: dd.DataFrame) -> tuple[dd.DataFrame, list[Future]]:
    """Compute ``frame``'s partitions on ``client``'s workers and keep them there.

    Returns
    -------
    (frame, futures)
        The frame on the stored partitions, and their futures (one a partition, in
        order): what ``client.persist`` should return, but with as many partitions as
        were computed whatever the optimizer fused.
    """
    futures = client.compute(frame.to_delayed())
    return _rebuilt(futures, frame._meta), futures


def _numbered(part: pd.DataFrame, id_col: str, start: int) -> pd.DataFrame:
    return part.assign(**{id_col: np.arange(start, start + len(part), dtype=np.int64)})


def with_row_ids(frame: dd.DataFrame, id_col: str, client: Client | None = None) -> dd.DataFrame:
    """``frame`` with ``id_col``: each row's position in the table (0, 1, ... in the
    order of its partitions), as int64.

    The partitions are fixed first, so the lengths counted (on ``client``, default: the
    default scheduler) and the ids assigned are of the same partitions; fusing keeps the
    rows' order, so the ids are the same whatever the files' layout and the columns kept.

    Returns
    -------
    dask.dataframe.DataFrame
        Lazy: the partitions are read again when it is computed.
    """
    parts = frame.to_delayed()
    lengths = [dask.delayed(len)(part) for part in parts]
    if client is not None:
        counts = client.gather(client.compute(lengths))
    else:
        counts = dask.compute(*lengths)
    starts = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)
    numbered = dask.delayed(_numbered)
    meta = _numbered(frame._meta, id_col, 0)
    return _rebuilt(
        [numbered(part, id_col, int(start)) for part, start in zip(parts, starts, strict=True)],
        meta,
    )
