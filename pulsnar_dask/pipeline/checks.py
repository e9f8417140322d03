"""Checks of the input table that every executor applies: labels, ids, true labels and
feature values the models can hold. Each refuses with one :class:`PUError` line."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pulsnar_dask.errors import PUError

FLOAT32_MAX = float(np.finfo(np.float32).max)


def unrepresentable_counts(features: pd.DataFrame) -> pd.DataFrame:
    """Per feature column, the values the models' float32 cannot hold: infinite ones and
    finite ones beyond its range (one row: partitions' counts add up). Column by column:
    a float64 copy of a whole partition would be its largest temporary."""
    counts = [  # NaN compares false: missing values are allowed
        np.count_nonzero(np.abs(column.to_numpy(dtype=float)) > FLOAT32_MAX)
        for _, column in features.items()
    ]
    return pd.DataFrame([counts], columns=features.columns, dtype="int64")


def check_representable(counts: pd.Series) -> None:
    """Refuse feature values float32 cannot hold (:func:`unrepresentable_counts`).

    Raises
    ------
    PUError
        Naming the columns and their counts.
    """
    bad = counts[counts > 0]
    if len(bad):
        shown = ", ".join(f"{name} ({n_rows(int(n))})" for name, n in bad.head(5).items())
        raise PUError(
            f"feature values that are infinite or beyond float32's range (|x| > "
            f"{FLOAT32_MAX:.3g}), which the models cannot hold: {shown}"
        )


def n_rows(n: int) -> str:
    """``1 row``, ``2 rows``."""
    return f"{n} row{'' if n == 1 else 's'}"


def _shown(counts: pd.Series) -> str:
    """The first five values of a ``value_counts`` and their rows: ``2 (1 row), missing
    (4 rows)``."""
    return ", ".join(
        f"{'missing' if pd.isna(v) else repr(v)} ({n_rows(n)})" for v, n in counts.head(5).items()
    )


def check_labels(row_ids: np.ndarray, labels: np.ndarray, id_name: str, label_name: str) -> None:
    """Refuse labels other than 0/1, missing or duplicate ids, and a table without
    positives or without unlabeled rows.

    Raises
    ------
    PUError
    """
    if len(labels) == 0:
        raise PUError("the input has no rows")
    values = pd.Series(labels, dtype=object)  # any dtype, missing values included
    bad = ~values.isin([0, 1]).to_numpy(dtype=bool)
    if bad.any():
        counts = values[bad].value_counts(dropna=False)
        text = " (text, not numbers)" if any(isinstance(v, str) for v in counts.index) else ""
        raise PUError(
            f"{label_name} must hold only the numbers 0 and 1; found {_shown(counts)}{text}"
        )
    duplicated = pd.Series(row_ids).duplicated().to_numpy()
    check_id_counts(
        id_name,
        int(pd.isna(pd.Series(row_ids)).sum()),
        int(duplicated.sum()),
        pd.Series(row_ids[duplicated][:1]).tolist(),
    )
    if not (labels == 1).any():
        raise PUError(f"no labeled positives ({label_name} = 1) in the input: one class only")
    if not (labels == 0).any():
        raise PUError(f"no unlabeled rows ({label_name} = 0) in the input: one class only")


def check_true_labels(values: np.ndarray, name: str) -> np.ndarray:
    """Refuse ground truth that is not whole numbers from 0 (0 negative, 1 or more a
    positive's subtype), missing values included: a missing one would count as a
    negative in ``true_alpha`` and the metrics.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    PUError
    """
    labels, bad = true_label_values(values)
    refuse_true_labels(bad, name)
    return labels


def refuse_true_labels(bad: pd.Series, name: str) -> None:
    """Refuse true labels where any value is not a whole number from 0
    (:func:`true_label_values`; counts of several parts of the column may be summed).

    Raises
    ------
    PUError
    """
    if len(bad):
        raise PUError(
            f"{name} must hold whole numbers from 0 (0 negative, 1 or more a "
            f"positive's subtype) in every row; found {_shown(bad)}"
        )


def true_label_values(values: np.ndarray) -> tuple[np.ndarray, pd.Series]:
    """True labels as whole numbers, and what is wrong with them.

    Returns
    -------
    (labels, bad)
        ``labels``: int64 (0 where a value is wrong); ``bad``: the rows of each value that
        is not a whole number from 0 (missing included), most first; empty where none is.
    """
    values = np.asarray(values)
    if values.dtype.kind in "biuf":  # no text; one pass (a million rows as objects: 1.5 s)
        numeric, text = values.astype(float), np.zeros(values.shape, dtype=bool)
    else:
        series = pd.Series(values, dtype=object)
        numeric = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
        text = series.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):  # NaN (missing) fails every test below
        # past 2**53 floats skip whole numbers (and past 2**63 int64 wraps negative)
        bad = text | ~((numeric >= 0) & (numeric % 1 == 0) & (numeric <= 2**53))
    counts = pd.Series(values, dtype=object)[bad].value_counts(dropna=False)
    return np.where(bad, 0, numeric).astype(np.int64), counts


def check_id_counts(id_name: str, missing: int, duplicates: int, examples: list = ()) -> None:
    """Refuse missing or repeated ids (counted by the caller; ``examples``: repeated ones
    to name), which could not join results back to the rows.

    Raises
    ------
    PUError
    """
    if missing:
        raise PUError(f"{id_name} has {missing} missing value(s)")
    if duplicates:
        shown = f", e.g. {examples[0]!r}" if examples else ""
        raise PUError(
            f"{id_name} has {duplicates} duplicate value(s){shown}; each row needs its own id"
        )
