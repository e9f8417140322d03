"""Reading PU data from Parquet (local or any fsspec URL) into a lazy Dask dataframe.

The client only reads metadata and small reductions (label counts, partition lengths);
the workers read the data.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask.dataframe as dd
import fsspec

from pulsnar_dask.core.model import MODEL_FILE, PUModel
from pulsnar_dask.core.schema import FeatureSchema, is_categorical, is_numeric
from pulsnar_dask.dask_executor.partitions import with_row_ids
from pulsnar_dask.errors import PUError

if TYPE_CHECKING:
    from pulsnar_dask.datasets.synthetic import PUData

logger = logging.getLogger(__name__)

DEFAULT_TRUE_LABEL = "true_label"
DEFAULT_ID = "row_id"
MODEL_DIR = "model"  # a run's model, inside its output location
MODEL_PART = re.compile(r"component\d+-fold\d+\.json")  # PUModel.to_files's fold models
RUN_SUMMARY = "summary.json"  # written last: a location without it holds no finished run


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
        Candidate features (a categorical one with too many categories is left out when
        the table is read: :func:`pulsnar_dask.core.schema.schema_from_categories`).
    label : str
    id : str
    true_label : str or None
    categorical : list of str
        The features taken as categorical.
    explicit : list of str
        Features the user named (as features or categorical).
    skipped : dict
        Columns left out for their type (name -> type), without being named.
    """

    frame: dd.DataFrame
    features: list[str]
    label: str
    id: str
    true_label: str | None
    categorical: list[str] = field(default_factory=list)
    explicit: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def left_out(self, features: Sequence[str]) -> dict[str, str]:
        """The input's columns that are not among ``features`` (the run's final ones), and
        why, as the log warned: ``name -> reason``. The label, id and true-label columns
        are not listed."""
        left_out = {c: f"a type no model can use ({kind})" for c, kind in self.skipped.items()}
        for name in self.features:
            if name not in features:
                left_out[name] = "an identifier or free text (too many distinct values)"
        return left_out


def _data_files(fs: Any, path: str) -> list[str]:
    """The Parquet files of a dataset folder, as Dask reads them (hidden and ``_``-files
    such as ``_metadata`` left out).

    Raises
    ------
    PUError
        For one that is not a plain file (a named pipe would block the reader).
    """
    found = fs.find(path, detail=True)
    files = sorted(
        f
        for f in found
        if f.endswith((".parquet", ".parq", ".pq")) and not Path(f).name.startswith((".", "_"))
    )
    odd = [f for f in files if found[f].get("type", "file") != "file"]
    if odd:
        raise PUError(f"{path} holds {odd[0]}, which is not a plain file")
    return files


def _type_kind(arrow_type: Any) -> str:
    import pyarrow.types as pat

    if pat.is_integer(arrow_type) or pat.is_floating(arrow_type) or pat.is_boolean(arrow_type):
        return "numeric"
    if pat.is_string(arrow_type) or pat.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)


def _is_null(arrow_type: Any) -> bool:
    """Arrow's type of a column that holds no value (pandas writes an all-``None``
    column so)."""
    import pyarrow.types as pat

    return pat.is_null(arrow_type)


# Arrow types whose values no model can use (lists, structs, maps, raw bytes): pandas
# holds them as Python objects, which would otherwise pass for text.
def _is_nested_or_binary(arrow_type: Any) -> bool:
    import pyarrow.types as pat

    return (
        pat.is_nested(arrow_type)
        or pat.is_binary(arrow_type)
        or pat.is_large_binary(arrow_type)
        or pat.is_fixed_size_binary(arrow_type)
    )


def read_schema(fs: Any, files: list[str], url: str) -> tuple[Any, dict[str, Any]]:
    """The Arrow schema of a Parquet file or dataset, from its files' footers, after
    refusing a file with two columns of one name, and files that differ in their columns
    or in a column's type beyond numeric width (an int in one file and a float in another
    is read as one numeric column).

    Returns
    -------
    (schema, filled)
        The first file's schema, where a column with no value (Arrow's ``null`` type)
        takes the type the other files give it; ``filled``: the columns (float or text)
        that have no value in some files and a type in others, and their pandas dtype.

    Raises
    ------
    PUError
        Naming the first file that differs from the dataset's first file, and how.
    """
    import pyarrow.parquet as pq

    def schema(file: str) -> Any:
        with fs.open(file) as handle:
            return pq.read_schema(handle)

    with ThreadPoolExecutor(8) as pool:  # footers of object storage: latency-bound
        schemas = list(pool.map(schema, files))
    for file, schema in zip(files, schemas, strict=True):
        counts = Counter(schema.names)
        twice = sorted(n for n, k in counts.items() if k > 1)
        if twice:
            raise PUError(
                f"{Path(file).name} of {url} has more than one column named "
                f"{', '.join(repr(n) for n in twice)}; each column needs a name of its own"
            )
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
            if "null" in (kind, first[name]):
                continue
            if kind != first[name]:
                raise PUError(
                    f"the files of {url} differ in column '{name}': {kind} in {shown}, "
                    f"{first[name]} in {reference}"
                )
    merged, filled = schemas[0], {}
    for i, f in enumerate(merged):
        types = [s.field(f.name).type for s in schemas]
        typed = [(file, t) for file, t in zip(files, types, strict=True) if not _is_null(t)]
        if typed and len(typed) < len(types):
            file, kind = typed[0]
            fill = _fill_dtype(kind)
            if fill is None:
                empty = next(name for name, t in zip(files, types, strict=True) if _is_null(t))
                raise PUError(
                    f"the files of {url} differ in column '{f.name}': no value in "
                    f"{Path(empty).name}, {kind} in {Path(file).name} (only float and text "
                    "columns may have no value in some files)"
                )
            filled[f.name] = fill
            merged = merged.set(i, f.with_type(kind))
    return merged, filled


def _fill_dtype(arrow_type: Any) -> Any:
    """The pandas dtype that holds a column of this type where some files have no value
    in it (NaN in a float column, None in a text one); ``None``: no dtype does (missing
    ints, bools, categories)."""
    import pyarrow.types as pat

    if pat.is_floating(arrow_type):
        return arrow_type.to_pandas_dtype()
    if pat.is_string(arrow_type) or pat.is_large_string(arrow_type):
        return object
    return None


def open_parquet(
    path: str, storage_options: dict[str, Any] | None = None
) -> tuple[dd.DataFrame, Any]:
    """Open a Parquet file or dataset lazily, after checking it is there and its files
    agree (:func:`read_schema`).

    Returns
    -------
    (frame, schema)
        The table, and its Arrow schema (:func:`read_schema`): a column with no value in
        any file has Arrow's ``null`` type, and pandas' ``object`` in the frame.

    Raises
    ------
    PUError
        For storage that cannot be reached, a missing path, files that differ, or input
        that is not Parquet.
    """
    storage_options = storage_options or {}
    try:
        fs, fs_path = fsspec.core.url_to_fs(path, **storage_options)
    except (ImportError, ValueError) as exc:
        raise PUError(f"cannot open {path}: {exc}") from None
    try:
        exists = fs.exists(fs_path)
        is_dir = exists and fs.isdir(fs_path)
        # a named pipe or a device would block the reader
        neither = exists and not is_dir and not fs.isfile(fs_path)
    except Exception as exc:  # storage that cannot be reached or refuses the credentials
        raise PUError(f"cannot reach {path}: {type(exc).__name__}: {exc}") from None
    if not exists:
        raise PUError(f"input {path} does not exist")
    if neither:
        raise PUError(f"input {path} is neither a file nor a folder")
    try:
        files = _data_files(fs, fs_path) if is_dir else [fs_path]
        if not files:
            return dd.read_parquet(path, storage_options=storage_options), None
        schema, filled = read_schema(fs, files, path)
        index = named_index(schema)
        if index:  # Dask reads such a column as no column, or fails on it
            raise PUError(
                f"{path} stores {', '.join(index)} as a pandas index, which the Parquet "
                "reader does not give back as a column; write it as a column "
                "(frame.reset_index().to_parquet(...))"
            )
        frame = dd.read_parquet(path, storage_options=storage_options)
        if filled:  # files with no value in a column give pandas objects there
            frame = frame.astype(filled)
        return frame, schema
    except PUError:
        raise
    except Exception as exc:  # pyarrow raises several types for non-Parquet input
        raise PUError(f"input {path} is not a readable Parquet file or dataset: {exc}") from None


def named_index(schema: Any) -> list[str]:
    """The columns pandas stored as its frame's index (``to_parquet`` of a frame after
    ``set_index``, as a column or, for consecutive numbers, as a range), which Dask
    2026.8 reads as no column, or fails on as it computes. An unnamed index (row labels)
    is not listed: it holds no feature.

    Parameters
    ----------
    schema : pyarrow.Schema
        A file's schema, with the metadata pandas wrote.

    Returns
    -------
    list of str
    """
    meta = (schema.metadata or {}).get(b"pandas")
    if not meta:
        return []
    names = [  # a column's name, or a range index's (kept as numbers, no column)
        c if isinstance(c, str) else c.get("name")
        for c in json.loads(meta).get("index_columns", [])
    ]
    unnamed = r"__index_level_\d+__|__null_dask_index__"  # pandas' and Dask's row labels
    return [n for n in names if n and not re.fullmatch(unnamed, n)]


def _require_named(frame: dd.DataFrame, path: str, roles: list[tuple[str, str | None]]) -> None:
    """Refuse a column the user named (``(role, name)``; ``None``: not named) that the
    input lacks: never a silent fall-back to a default."""
    columns = list(frame.columns)
    for role, name in roles:
        if name is not None and name not in columns:
            raise PUError(
                f"{role} column '{name}' is not in {path} (columns: {', '.join(columns)})"
            )


def _with_ids(
    frame: dd.DataFrame, keep: list[str], id_col: str, client: Any = None
) -> dd.DataFrame:
    """``frame``'s ``keep`` columns and ``id_col``, which is generated from the row
    position (:func:`~pulsnar_dask.dask_executor.partitions.with_row_ids`) where the
    input has no such column."""
    if id_col in frame.columns:
        return frame[[*keep, id_col]]
    return with_row_ids(frame[keep], id_col, client)


def read_rows_to_score(
    path: str,
    schema: FeatureSchema,
    id_col: str | None = None,
    storage_options: dict[str, Any] | None = None,
    client: Any = None,
) -> tuple[dd.DataFrame, str]:
    """Open new rows for a saved model: its feature columns and an id column.

    Parameters
    ----------
    path : str
        Parquet file or dataset, local or fsspec URL.
    schema : FeatureSchema
        The model's features.
    id_col : str or None
        As :func:`read_pu_parquet`: ``None`` takes ``row_id`` where present, else
        generates ids from the row position (partition lengths counted on ``client``).

    Returns
    -------
    (frame, id_col)
        The features and the id column, lazily.

    Raises
    ------
    PUError
        For a feature the input lacks, or one whose type cannot hold the model's values
        (text where the model has numbers, numbers where its categories are text).
    """
    frame, arrow = open_parquet(path, storage_options)
    _require_named(frame, path, [("id", id_col)])
    missing = schema.missing(frame.columns)
    if missing:
        raise PUError(f"{path} lacks feature column(s) the model needs: {', '.join(missing)}")
    # (a hive partition key is in no file's footer)
    nulls = {f.name for f in (arrow or []) if _is_null(f.type)}
    empty = [n for n in schema.names if n in nulls]
    if empty:
        # missing in every row, which the models take as they take any missing value
        logger.warning(
            "column(s) with no value in %s, scored as missing: %s", path, ", ".join(empty)
        )
        numeric = [n for n in empty if n not in schema.categories]
        frame = frame.astype(dict.fromkeys(numeric, "float32"))
    for name in schema.names:
        if name in nulls:
            continue
        dtype = frame.dtypes[name]
        categories = schema.categories.get(name)
        text = categories is not None and any(isinstance(v, str) for v in categories)
        if categories is None and not is_numeric(dtype):
            raise PUError(f"column '{name}' of {path} is {dtype}; the model has it numeric")
        if text and is_numeric(dtype):
            raise PUError(f"column '{name}' of {path} is {dtype}; the model's categories are text")
    id_col = id_col or DEFAULT_ID
    if id_col in schema.names:  # and so in the input, checked above
        raise PUError(
            f"column '{id_col}' of {path} is one of the model's features, so it cannot be "
            "the rows' ids too: name another id column with --id-col"
        )
    return _with_ids(frame, schema.names, id_col, client), id_col


def read_pu_parquet(
    path: str,
    label_col: str = "label",
    id_col: str | None = None,
    true_label_col: str | None = None,
    features: list[str] | None = None,
    categorical: list[str] | None = None,
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
        Feature columns; by default every numeric, string and ``category`` column but the
        three above.
    categorical : list of str or None
        Numeric columns to take as categorical (codes); string and ``category`` columns
        always are.
    storage_options : dict or None
        fsspec options of the filesystem.

    Returns
    -------
    PUFrame

    Raises
    ------
    PUError
        For a missing path, a non-Parquet input, an empty dataset, missing columns or
        columns of a type no model can use.
    """
    frame, arrow = open_parquet(path, storage_options)
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
    _require_named(
        frame, path, [("label", label_col), ("true-label", true_label_col), ("id", id_col)]
    )
    id_col = id_col or DEFAULT_ID
    roles = {"label": label_col, "id": id_col, "true-label": true_label_col}
    shared = sorted({c for c in roles.values() if c and list(roles.values()).count(c) > 1})
    if shared:
        raise PUError(
            f"column '{shared[0]}' is named for two roles (label, id, true label): "
            "each needs a column of its own"
        )
    reserved = {label_col, id_col, true_label_col}
    named = features is not None
    # lists, structs, maps, bytes and columns with no value: no model can use them
    unusable = {
        f.name: "null: no value in any row" if _is_null(f.type) else str(f.type)
        for f in (arrow or [])
        if _is_nested_or_binary(f.type) or _is_null(f.type)
    }

    def type_of(column: str) -> str:
        return unusable.get(column, str(frame.dtypes[column]))

    def usable(column: str) -> bool:
        dtype = frame.dtypes[column]
        return column not in unusable and (is_numeric(dtype) or is_categorical(dtype))

    skipped: dict[str, str] = {}
    if features is None:
        features = [c for c in columns if c not in reserved and usable(c)]
        skipped = {c: type_of(c) for c in columns if c not in reserved and c not in features}
        if skipped:
            logger.warning(
                "skipping column(s) of a type no model can use: %s",
                ", ".join(f"{c} ({kind})" for c, kind in skipped.items()),
            )
    else:
        missing = [c for c in features if c not in columns]
        if missing:
            raise PUError(f"feature column(s) not in {path}: {', '.join(missing)}")
        repeated = sorted({c for c in features if features.count(c) > 1})
        if repeated:
            raise PUError(f"feature column(s) named twice: {', '.join(repeated)}")
        roled = [c for c in features if c in reserved]
        if roled:
            role = next(r for r, c in roles.items() if c == roled[0])
            raise PUError(f"column '{roled[0]}' is the {role} column and cannot also be a feature")
        bad = [c for c in features if not usable(c)]
        if bad:
            raise PUError(
                "feature column(s) of a type no model can use (numbers, strings or "
                "categories): " + ", ".join(f"{c} ({type_of(c)})" for c in bad)
            )
    declared = list(categorical or [])
    missing = [c for c in declared if c not in features]
    if missing:
        raise PUError(
            f"--categorical column(s) that are not features of {path}: {', '.join(missing)}"
        )
    if not features:
        raise PUError(f"{path} has no feature columns")
    categorical = [c for c in features if c in declared or is_categorical(frame.dtypes[c])]
    keep = [*features, label_col] + ([true_label_col] if true_label_col else [])
    frame = _with_ids(frame, keep, id_col)
    explicit = sorted(set(declared) | (set(features) if named else set()))
    return PUFrame(
        frame, list(features), label_col, id_col, true_label_col, categorical, explicit, skipped
    )


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
    check_replaceable_dataset(out)
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


def check_replaceable_dataset(out: Path) -> None:
    """Refuse to replace anything at ``out`` but a dataset :func:`write_pu_parquet` wrote
    (a folder of ``part.N.parquet`` files).

    Raises
    ------
    PUError
        Naming what is there.
    """
    if not (out.exists() or out.is_symlink()):
        return
    if not out.is_dir() or out.is_symlink():
        raise PUError(f"{out} exists and is not a folder of Parquet parts; nothing was replaced")
    other = [p.name for p in out.iterdir() if not re.fullmatch(r"part\.\d+\.parquet", p.name)]
    if other:
        raise PUError(
            f"{out} holds {first_names(other)}, which synthetic data does not: only a "
            "dataset written here before (part.N.parquet files) is replaced"
        )


def read_model(url: str, storage_options: dict[str, Any] | None = None) -> PUModel:
    """Load a saved model: a finished run's output location (its ``model/`` folder is
    used) or a model folder, local or any fsspec URL.

    Raises
    ------
    PUError
        If there is no model there, the run there is not finished (no ``summary.json``:
        it was interrupted, and its model may be another run's or partial), or the model
        cannot be read.
    """
    try:
        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        path = path.rstrip("/")
        if not fs.exists(f"{path}/{MODEL_FILE}") and fs.exists(f"{path}/{MODEL_DIR}/{MODEL_FILE}"):
            if not fs.exists(f"{path}/{RUN_SUMMARY}"):
                raise PUError(
                    f"{url} holds no finished run (no {RUN_SUMMARY}: a run there was "
                    "interrupted), so its model may be partial; use a finished run"
                )
            path = f"{path}/{MODEL_DIR}"
        if not fs.exists(f"{path}/{MODEL_FILE}"):
            raise PUError(f"no model at {url} (no {MODEL_FILE} there or in {MODEL_DIR}/)")
        return PUModel.from_files(lambda name: fs.cat_file(f"{path}/{name}"))
    except PUError:
        raise
    except Exception as exc:  # unreachable storage, missing fold files, bad JSON
        raise PUError(f"cannot read the model at {url}: {type(exc).__name__}: {exc}") from None


def write_model(model: PUModel, url: str, storage_options: dict[str, Any] | None = None) -> None:
    """Save a model as a folder of plain files (:meth:`PUModel.to_files`), ``model.json``
    last, so a folder without it is visibly incomplete.

    The folder is new, empty, or holds a model saved before, whose files are replaced;
    nothing else in it is touched.

    Raises
    ------
    PUError
        If ``url`` is a file, or a folder holding anything but a saved model's files.
    """
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    path = path.rstrip("/")
    files = model.to_files()
    old = _saved_model_files(fs, path, url)
    fs.makedirs(path, exist_ok=True)
    for name in old:  # a model saved there before: none of its files may stay
        fs.rm(f"{path}/{name}")
    for name, data in files.items():
        if name != MODEL_FILE:
            fs.pipe_file(f"{path}/{name}", data)
    fs.pipe_file(f"{path}/{MODEL_FILE}", files[MODEL_FILE])


def _saved_model_files(fs: Any, path: str, url: str) -> list[str]:
    """The names of the files of a model saved at ``path`` before (none where nothing is
    there); refuses a file, and a folder holding anything else but hidden files (a file
    browser's ``.DS_Store``)."""
    fs.invalidate_cache()
    if not fs.exists(path):
        return []
    if not fs.isdir(path):
        raise PUError(f"{url} is a file; a model is saved as a folder")
    names = [n for n in folder_names(fs, path) if not n.startswith(".")]
    other = [n for n in names if not (n == MODEL_FILE or MODEL_PART.fullmatch(n))]
    if other:
        raise PUError(
            f"{url} holds {first_names(other)}, which a saved model does not: save a model to "
            "a new folder, or over a model saved before"
        )
    return names


def folder_names(fs: Any, folder: str) -> list[str]:
    """The names directly under an existing ``folder`` of ``fs`` (an object store's marker
    of the folder itself is not one)."""
    folder = folder.rstrip("/")
    paths = (p.rstrip("/") for p in fs.ls(folder, detail=False))
    return [p.rsplit("/", 1)[-1] for p in paths if p != folder]


def first_names(names: Sequence[str], k: int = 5) -> str:
    """``a, b, c``: the first ``k`` of ``names`` sorted, and how many more there are."""
    names = sorted(names)
    return ", ".join(names[:k]) + (f" and {len(names) - k} more" if len(names) > k else "")
