"""Reading PU data from Parquet (local or any fsspec URL) into a lazy Dask dataframe.

The client only reads metadata and small reductions (label counts, partition lengths);
the workers read the data.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd

from pulsnar_dask.errors import PUError

if TYPE_CHECKING:
    from pulsnar_dask.datasets.synthetic import PUData

logger = logging.getLogger(__name__)

DEFAULT_TRUE_LABEL = "true_label"
DEFAULT_ID = "row_id"


def parse_storage_options(text: str | None) -> dict[str, Any]:
    """Parse ``--storage-options`` JSON into a dict (empty when not given)."""
    if not text:
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PUError(f"--storage-options is not valid JSON: {exc}") from None
    if not isinstance(options, dict):
        raise PUError("--storage-options must be a JSON object, e.g. '{\"anon\": true}'")
    return options


@dataclass(frozen=True)
class PUFrame:
    """A lazy PU table and the roles of its columns.

    Attributes
    ----------
    frame : dask.dataframe.DataFrame
        Feature, label, id (and true-label) columns only.
    features : list of str
    label : str
    id : str
    true_label : str or None
    """

    frame: dd.DataFrame
    features: list[str]
    label: str
    id: str
    true_label: str | None


def _is_numeric(dtype: Any) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def with_row_ids(frame: dd.DataFrame, id_col: str, client: Any = None) -> dd.DataFrame:
    """Add ``id_col`` as the global row position (partition offset + position); the
    partition lengths are counted on ``client`` (default: the default scheduler)."""
    counts = frame.map_partitions(len)
    lengths = client.compute(counts).result() if client is not None else counts.compute()
    offsets = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64)

    def add_ids(part: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
        start = offsets[partition_info["number"]] if partition_info else 0
        return part.assign(**{id_col: np.arange(start, start + len(part), dtype=np.int64)})

    meta = frame._meta.assign(**{id_col: np.array([], dtype=np.int64)})
    return frame.map_partitions(add_ids, meta=meta)


def _data_files(fs: Any, path: str) -> list[str]:
    """The Parquet files of a dataset folder, as Dask reads them (hidden and ``_``-files
    such as ``_metadata`` left out)."""
    return sorted(
        f
        for f in fs.find(path)
        if f.endswith(".parquet") and not Path(f).name.startswith((".", "_"))
    )


def _type_kind(arrow_type: Any) -> str:
    import pyarrow.types as pat

    if pat.is_integer(arrow_type) or pat.is_floating(arrow_type) or pat.is_boolean(arrow_type):
        return "numeric"
    if pat.is_string(arrow_type) or pat.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)


def check_same_schema(fs: Any, path: str, url: str) -> None:
    """Refuse a dataset whose files differ in their columns, or in a column's type beyond
    numeric width (an int in one file and a float in another is read as one numeric
    column); only the files' footers are read.

    Raises
    ------
    PUError
        Naming the first file that differs from the dataset's first file, and how.
    """
    import pyarrow.parquet as pq

    files = _data_files(fs, path)
    if len(files) < 2:
        return

    def schema(file: str) -> Any:
        with fs.open(file) as handle:
            return pq.read_schema(handle)

    with ThreadPoolExecutor(8) as pool:  # footers of object storage: latency-bound
        schemas = list(pool.map(schema, files))
    first = {name: _type_kind(schemas[0].field(name).type) for name in schemas[0].names}
    for file, schema in zip(files[1:], schemas[1:], strict=True):
        here = {name: _type_kind(schema.field(name).type) for name in schema.names}
        shown, reference = Path(file).name, Path(files[0]).name
        extra, lacking = sorted(set(here) - set(first)), sorted(set(first) - set(here))
        if extra or lacking:
            what = "; ".join(
                text
                for text in (
                    extra and f"has {', '.join(extra)}, which {reference} has not",
                    lacking and f"lacks {', '.join(lacking)}",
                )
                if text
            )
            raise PUError(f"the files of {url} differ in their columns: {shown} {what}")
        for name, kind in here.items():
            if kind != first[name]:
                raise PUError(
                    f"the files of {url} differ in column '{name}': {kind} in {shown}, "
                    f"{first[name]} in {reference}"
                )


def read_pu_parquet(
    path: str,
    label_col: str = "label",
    id_col: str | None = None,
    true_label_col: str | None = None,
    features: list[str] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> PUFrame:
    """Open a Parquet file or dataset as a :class:`PUFrame` and check its schema.

    Parameters
    ----------
    path : str
        Local path or fsspec URL (``s3://bucket/data/``).
    label_col : str
        1 = labeled positive, 0 = unlabeled.
    id_col : str or None
        Unique row id, any type; it must be in the input. ``None``: a column named
        ``row_id`` where there is one, else ids generated from the row position.
    true_label_col : str or None
        Benchmark ground truth (0 negative, >= 1 positive); never used for estimation.
        When ``None``, a column named ``true_label`` is taken as it (with a warning) unless
        it is listed in ``features``.
    features : list of str or None
        Feature columns; by default every numeric column but the three above.
    storage_options : dict or None
        fsspec options of the filesystem.

    Returns
    -------
    PUFrame

    Raises
    ------
    PUError
        For a missing path, a non-Parquet input, an empty dataset or missing columns.
    """
    storage_options = storage_options or {}
    try:
        fs, fs_path = fsspec.core.url_to_fs(path, **storage_options)
    except (ImportError, ValueError) as exc:
        raise PUError(f"cannot open {path}: {exc}") from None
    try:
        exists = fs.exists(fs_path)
    except Exception as exc:  # storage that cannot be reached or refuses the credentials
        raise PUError(f"cannot reach {path}: {type(exc).__name__}: {exc}") from None
    if not exists:
        raise PUError(f"input {path} does not exist")
    try:
        if fs.isdir(fs_path):
            check_same_schema(fs, fs_path, path)
        frame = dd.read_parquet(path, storage_options=storage_options)
    except PUError:
        raise
    except Exception as exc:  # pyarrow raises several types for non-Parquet input
        raise PUError(f"input {path} is not a readable Parquet file or dataset: {exc}") from None
    columns = list(frame.columns)
    if (
        true_label_col is None
        and DEFAULT_TRUE_LABEL in columns
        and DEFAULT_TRUE_LABEL not in (features or [])
    ):
        # Ground truth must never become a feature by accident.
        logger.warning(
            "column '%s' is taken as the true-label column (benchmarks only, never a feature)",
            DEFAULT_TRUE_LABEL,
        )
        true_label_col = DEFAULT_TRUE_LABEL
    for role, name in (("label", label_col), ("true-label", true_label_col), ("id", id_col)):
        if name is not None and name not in columns:
            raise PUError(
                f"{role} column '{name}' is not in {path} (columns: {', '.join(columns)})"
            )
    id_col = id_col or DEFAULT_ID
    reserved = {label_col, id_col, true_label_col}
    if features is None:
        features = [c for c in columns if c not in reserved and _is_numeric(frame.dtypes[c])]
        skipped = [c for c in columns if c not in reserved and c not in features]
        if skipped:
            logger.warning("skipping non-numeric column(s): %s", ", ".join(skipped))
    else:
        missing = [c for c in features if c not in columns]
        if missing:
            raise PUError(f"feature column(s) not in {path}: {', '.join(missing)}")
        bad = [c for c in features if not _is_numeric(frame.dtypes[c])]
        if bad:
            raise PUError(
                "feature column(s) are not numeric: "
                + ", ".join(f"{c} ({frame.dtypes[c]})" for c in bad)
            )
    if not features:
        raise PUError(f"{path} has no numeric feature columns")
    keep = [*features, label_col] + ([id_col] if id_col in columns else [])
    keep += [true_label_col] if true_label_col else []
    frame = frame[keep]
    if id_col not in columns:
        frame = with_row_ids(frame, id_col)
    return PUFrame(frame, list(features), label_col, id_col, true_label_col)


def write_pu_parquet(chunks: Iterable[PUData], out: Path) -> tuple[int, float]:
    """Write PU data as a local Parquet dataset, one part file per chunk, atomically.

    Columns ``f0..f{d-1}``, ``label``, ``true_label`` and ``row_id`` (0, 1, ... across the
    chunks in order). The parts are written to a hidden sibling directory that replaces
    ``out`` only when all of them are written.

    Returns
    -------
    (n_rows, true_alpha)
        Rows written and the fraction of positives among the unlabeled ones.
    """
    out = Path(out)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    n_rows = n_unlabeled = n_hidden = 0
    from pulsnar_dask.datasets.synthetic import pu_frame  # sklearn: not at start-up

    try:
        for i, data in enumerate(chunks):
            pu_frame(data, n_rows).to_parquet(staging / f"part.{i}.parquet", index=False)
            n_rows += data.label.size
            unlabeled = data.label == 0
            n_unlabeled += int(unlabeled.sum())
            n_hidden += int((data.true_label[unlabeled] > 0).sum())
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return n_rows, n_hidden / max(n_unlabeled, 1)
