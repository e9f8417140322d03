"""The feature schema: which columns the models see, which are categorical, their categories.

The models hold every feature as float32. A categorical feature is held as its category's
position in the schema's list (``0, 1, ...``; missing values and categories the schema
has not seen are NaN, which XGBoost treats as missing), and XGBoost is told which columns
are categorical (``feature_types``), so it splits them on sets of categories, not on the
codes' order. The same schema encodes the rows a model is fitted on and the new rows it
scores, and travels with a saved model as plain JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

# A subtype's description names a categorical feature's most frequent categories among
# the positives, at most this many.
ONE_HOT_LEVELS = 10
# A column with more distinct values than this is not taken as categorical by default:
# such columns are usually identifiers or free text, and a category each row has alone
# tells the models nothing.
MAX_CATEGORIES = 1000
# Nor is one with distinct values for more than this share of the rows (900 e-mail
# addresses among 900 rows), once it has more than IDENTIFIER_MIN_VALUES of them.
IDENTIFIER_SHARE = 0.5
IDENTIFIER_MIN_VALUES = 50


def too_many_categories(n_values: int, n_rows: int | None) -> bool:
    """Whether a column with ``n_values`` distinct values among ``n_rows`` rows is more
    likely an identifier or free text than a categorical feature."""
    if n_values > MAX_CATEGORIES:
        return True
    return (
        n_rows is not None
        and n_values > IDENTIFIER_MIN_VALUES
        and n_values > IDENTIFIER_SHARE * n_rows
    )


def is_numeric(dtype: Any) -> bool:
    """Numbers and booleans (not pandas ``category``, which may hold numbers)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return False
    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def is_categorical(dtype: Any) -> bool:
    """pandas ``category``, strings and Python objects (taken as strings)."""
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_object_dtype(dtype)
    )


def _plain(value: Any) -> Any:
    """A category as a JSON value: numpy scalars as Python ones."""
    return value.item() if isinstance(value, np.generic) else value


def sorted_categories(values: Iterable[Any]) -> list[Any]:
    """Distinct non-missing values, sorted (by their text when they mix types)."""
    distinct = {_plain(v) for v in values if not pd.isna(v)}
    try:
        return sorted(distinct)
    except TypeError:
        return sorted(distinct, key=str)


@dataclass(frozen=True)
class FeatureSchema:
    """The feature columns, in model order, and the categories of the categorical ones.

    Attributes
    ----------
    names : list of str
        Feature columns in the order the models see them.
    categories : dict of str to list
        For each categorical feature, its categories; a value's code is its position.
    """

    names: list[str]
    categories: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def categorical(self) -> list[str]:
        """The categorical features, in model order."""
        return [n for n in self.names if n in self.categories]

    @property
    def numeric(self) -> list[str]:
        """The numeric features, in model order."""
        return [n for n in self.names if n not in self.categories]

    def feature_types(self, columns: Sequence[str] | None = None) -> list[str] | None:
        """XGBoost's ``feature_types`` of ``columns`` (default: all): ``c`` categorical,
        ``q`` numeric; ``None`` when none is categorical (XGBoost's default)."""
        columns = self.names if columns is None else columns
        if not any(c in self.categories for c in columns):
            return None
        return ["c" if c in self.categories else "q" for c in columns]

    def missing(self, columns: Iterable[Any]) -> list[str]:
        """The schema's features that are not among ``columns`` (compared as text)."""
        present = {str(c) for c in columns}
        return [n for n in self.names if n not in present]

    def positions(self, columns: Sequence[str]) -> list[int]:
        """Where ``columns`` are in :attr:`names`."""
        position = {name: i for i, name in enumerate(self.names)}
        return [position[c] for c in columns]

    def encode_part(self, part: pd.DataFrame) -> pd.DataFrame:
        """``part`` with every categorical feature replaced by its float32 codes (NaN for
        missing values and unseen categories); other columns untouched."""
        if not self.categories:
            return part
        return part.assign(**{name: self._codes(part[name]) for name in self.categorical})

    def _codes(self, column: pd.Series) -> np.ndarray:
        index = pd.Index(self.categories[column.name], dtype=object)
        codes = index.get_indexer(column.astype(object)).astype(np.float32)
        codes[codes < 0] = np.nan  # missing, or a category the schema has not seen
        return codes

    def unseen_counts(self, part: pd.DataFrame) -> pd.DataFrame:
        """Per categorical feature, the rows of ``part`` whose value (not missing) is not
        among the schema's categories (one row: partitions' counts add up)."""
        counts = {}
        for name in self.categorical:
            column = part[name]
            known = column.isin(self.categories[name]) | column.isna()
            counts[name] = [int((~known).sum())]
        return pd.DataFrame(counts, dtype="int64")

    def encode(self, X: pd.DataFrame) -> np.ndarray:
        """The model matrix of a frame holding the schema's columns: float32, model order."""
        return self.encode_part(X[self.names]).to_numpy(dtype=np.float32)

    def code_counts(self, X: np.ndarray, columns: Sequence[str]) -> dict[str, np.ndarray]:
        """Rows of ``X`` (encoded values of ``columns``) per category, for each
        categorical column: counts that add up over the rows' partitions."""
        out = {}
        for j, name in enumerate(columns):
            if name in self.categories:
                codes = np.asarray(X[:, j], dtype=float)
                seen = codes[np.isfinite(codes)].astype(np.int64)
                out[name] = np.bincount(seen, minlength=len(self.categories[name]))
        return out

    @staticmethod
    def top_levels(
        counts: dict[str, np.ndarray], levels: int = ONE_HOT_LEVELS
    ) -> dict[str, np.ndarray]:
        """Each categorical column's ``levels`` most frequent categories seen (codes, most
        frequent first) from :meth:`code_counts`."""
        return {
            name: np.argsort(-c, kind="stable")[: min(levels, int((c > 0).sum()))]
            for name, c in counts.items()
        }

    def is_indicator(self, columns: Sequence[str], tops: dict[str, np.ndarray]) -> np.ndarray:
        """Which columns of :meth:`indicators`' matrix are indicators (bool, one each)."""
        return np.array(
            [
                flag
                for name in columns
                for flag in ([True] * len(tops[name]) if name in self.categories else [False])
            ],
            dtype=bool,
        )

    def indicators(
        self, X: np.ndarray, columns: Sequence[str], tops: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, list[str]]:
        """Columns of encoded features with each categorical one as indicators of the
        categories ``tops`` names (:meth:`top_levels`).

        Parameters
        ----------
        X : ndarray of shape (n, len(columns))
            Encoded values of ``columns``.
        columns : sequence of str
        tops : dict
            Categorical column -> the codes it is described by.

        Returns
        -------
        (matrix, names)
            ``matrix`` float64 of shape ``(n, m)``; ``names``: ``column`` for a numeric
            feature and ``column=category`` for an indicator.
        """
        X = np.asarray(X, dtype=float)
        if not any(name in self.categories for name in columns):
            return X, list(columns)  # every column as it is: no copy of the matrix
        blocks, names = [], []
        for j, name in enumerate(columns):
            if name not in self.categories:
                blocks.append(X[:, j : j + 1])
                names.append(name)
                continue
            top = tops[name]
            blocks.append((X[:, j : j + 1] == top[None, :]).astype(float))
            names += [f"{name}={self.categories[name][k]}" for k in top]
        matrix = np.hstack(blocks) if blocks else np.empty((len(X), 0))
        return matrix, names

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``{"features": [{"name", "type", "categories"?}, ...]}``."""
        return {
            "features": [
                {"name": n, "type": "categorical", "categories": self.categories[n]}
                if n in self.categories
                else {"name": n, "type": "numeric"}
                for n in self.names
            ]
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSchema:
        features = data["features"]
        return cls(
            [f["name"] for f in features],
            {f["name"]: list(f["categories"]) for f in features if f["type"] == "categorical"},
        )


def categorical_columns(
    dtypes: pd.Series, candidates: Sequence[str], declared: Sequence[str] = ()
) -> list[str]:
    """The columns among ``candidates`` to treat as categorical: those of a categorical
    type (:func:`is_categorical`) and the numeric ones ``declared``.

    Raises
    ------
    ValueError
        For a column in ``declared`` that is not a candidate.
    """
    unknown = [str(c) for c in declared if c not in candidates]
    if unknown:
        raise ValueError(f"categorical column(s) that are not features: {', '.join(unknown)}")
    return [c for c in candidates if c in declared or is_categorical(dtypes[c])]


def schema_from_categories(
    names: Sequence[str],
    categories: dict[str, list[Any]],
    explicit: Sequence[str] = (),
    n_rows: int | None = None,
) -> tuple[FeatureSchema, list[str]]:
    """A schema from each categorical column's distinct values, leaving out columns with
    too many of them (:func:`too_many_categories`).

    Parameters
    ----------
    names : sequence of str
        Candidate features, in order.
    categories : dict
        Distinct values of each categorical candidate (any order).
    explicit : sequence of str
        Columns the user named as features or categorical: too many categories is an
        error for them, not a reason to leave them out.
    n_rows : int or None
        Rows of the table (``None``: only :data:`MAX_CATEGORIES` applies).

    Returns
    -------
    (schema, left_out)
        ``left_out``: the columns left out for their number of categories.

    Raises
    ------
    ValueError
        For a column in ``explicit`` with too many categories, or no feature left.
    """
    kept, left_out, cats = [], [], {}
    for name in names:
        if name in categories:
            values = sorted_categories(categories[name])
            if too_many_categories(len(values), n_rows):
                if name in explicit and len(values) > MAX_CATEGORIES:
                    raise ValueError(
                        f"categorical feature '{name}' has more than {MAX_CATEGORIES} distinct "
                        "values, the most a categorical feature may have"
                    )
                if name in explicit:
                    raise ValueError(
                        f"categorical feature '{name}' has {len(values)} distinct values "
                        f"among {n_rows} rows: a category most rows have alone tells the "
                        "models nothing (an identifier or free text?)"
                    )
                left_out.append(name)
                continue
            cats[name] = values
        kept.append(name)
    if not kept:
        raise ValueError("no feature columns are left")
    return FeatureSchema(kept, cats), left_out


def distinct_part(part: pd.DataFrame, columns: Sequence[str], limit: int) -> pd.DataFrame:
    """Up to ``limit`` distinct non-missing values of each column of ``part``, in long form
    (columns ``column``, ``value``): what one partition reports for a schema."""
    pieces = [pd.DataFrame({"column": pd.Series(dtype=object), "value": pd.Series(dtype=object)})]
    for name in columns:
        values = pd.unique(part[name].dropna().astype(object))[:limit]
        pieces.append(pd.DataFrame({"column": name, "value": pd.Series(values, dtype=object)}))
    return pd.concat(pieces, ignore_index=True)


def frame_schema(
    X: pd.DataFrame, declared: Sequence[str] = (), explicit: Sequence[str] = ()
) -> tuple[FeatureSchema, list[str]]:
    """The schema of an in-memory frame whose columns are all candidate features
    (:func:`schema_from_categories`); ``declared``: numeric columns to take as categorical.

    Raises
    ------
    ValueError
        For a column of a type no model can use, or one named in ``declared`` that is
        not in ``X``.
    """
    names = [str(c) for c in X.columns]
    X = X.set_axis(names, axis=1)
    bad = [
        f"{c} ({X.dtypes[c]})"
        for c in names
        if not (is_numeric(X.dtypes[c]) or is_categorical(X.dtypes[c]))
    ]
    if bad:
        raise ValueError(
            "feature column(s) of a type no model can use (numbers, strings or categories): "
            + ", ".join(bad)
        )
    columns = categorical_columns(X.dtypes, names, declared)
    table = distinct_part(X, columns, MAX_CATEGORIES + 1)
    distinct = {c: table["value"][table["column"] == c].tolist() for c in columns}
    return schema_from_categories(names, distinct, [*declared, *explicit], len(X))
