"""Deterministic, stratified cross-validation folds from row ids and a seed.

A row's fold depends only on its id, its label, the seed and the set of rows of its label,
never on row order, partitioning or the number of workers: within each label the rows are
ordered by a 64-bit hash of (id, seed) and dealt to folds in turn.

Copies (rows whose features are identical where that cannot be chance) share one fold,
whatever their labels (:class:`CopyGroups`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _id_keys(row_ids: np.ndarray) -> np.ndarray:
    """64-bit keys of row ids: integer ids as they are, any other type (strings, floats,
    dates) by pandas' stable 64-bit hash of the value."""
    ids = np.asarray(row_ids)
    if ids.dtype.kind in "iub":
        return ids.astype(np.uint64)
    return pd.util.hash_array(ids.astype(object))


def row_hash(row_ids: np.ndarray, seed: int) -> np.ndarray:
    """Return a 64-bit SplitMix64 hash of each row id mixed with the seed.

    Integer ids enter as their value (a bijection, so no two rows tie); ids of any other
    type as a stable 64-bit hash of the value (ties between different ids have a chance
    of about ``n^2 / 2^65``, and only put two rows in the same fold).

    Returns
    -------
    ndarray of uint64
    """
    with np.errstate(over="ignore"):
        z = _id_keys(row_ids) + np.uint64(seed) * _GOLDEN + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def row_uniform(row_ids: np.ndarray, seed: int) -> np.ndarray:
    """A uniform number in [0, 1) for each row, from :func:`row_hash` (its top 53 bits):
    the same for a row on any partitioning.

    Returns
    -------
    ndarray of float64
    """
    return (row_hash(row_ids, seed) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def id_checksum(ids: np.ndarray) -> int:
    """The sum modulo 2**64 of the ids' hashes: the same for the same rows in any order or
    pieces, and another for other rows (a row missing and another counted twice included)
    but by a chance of 2**-64."""
    return int(np.sum(row_hash(np.asarray(ids), 0), dtype=np.uint64))


def label_hashes(row_ids: np.ndarray, labels: np.ndarray, seed: int) -> dict[int, np.ndarray]:
    """Return, per label value, the :func:`row_hash` of that label's rows, in the rows'
    order."""
    hashes = row_hash(row_ids, seed)
    labels = np.asarray(labels)
    return {int(v): hashes[labels == v] for v in np.unique(labels)}


def sorted_label_hashes(
    row_ids: np.ndarray, labels: np.ndarray, seed: int
) -> dict[int, np.ndarray]:
    """Return, per label value, the sorted hashes of that label's rows.

    This is all a worker needs to find any row's fold (see :func:`folds_from_hashes`), so
    the distributed engine sends it once instead of the fold column.
    """
    return {v: np.sort(h) for v, h in label_hashes(row_ids, labels, seed).items()}


def folds_from_hashes(
    row_ids: np.ndarray,
    labels: np.ndarray,
    sorted_hashes: dict[int, np.ndarray],
    n_folds: int,
    seed: int,
    copies: CopyGroups | None = None,
) -> np.ndarray:
    """Return the folds of some rows, given every row's sorted hashes per label.

    A row's fold is its rank among the hashes of its label, modulo ``n_folds``
    (:func:`row_hash`: integer ids never tie); a row in one of the groups of ``copies``
    takes its group's fold instead (:meth:`CopyGroups.share_folds`).

    Returns
    -------
    ndarray of int8
    """
    hashes = row_hash(row_ids, seed)
    labels = np.asarray(labels)
    folds = np.empty(hashes.size, dtype=np.int8)
    for value, ordered in sorted_hashes.items():
        members = np.flatnonzero(labels == value)
        keys = hashes[members]
        # sorted, the keys are searched about twice as fast (each search's path through
        # ``ordered`` is mostly in cache from the one before)
        by_key = np.argsort(keys)
        folds[members[by_key]] = np.searchsorted(ordered, keys[by_key]) % n_folds
    return folds if copies is None else copies.share_folds(row_ids, folds, n_folds, seed)


def assign_folds(
    row_ids: np.ndarray,
    labels: np.ndarray,
    n_folds: int,
    seed: int,
    copies: CopyGroups | None = None,
) -> np.ndarray:
    """Return each row's fold in ``0..n_folds-1``, stratified by label (copies: their
    group's fold, :meth:`CopyGroups.share_folds`).

    Parameters
    ----------
    row_ids : ndarray of int, shape (n,)
        Unique row ids.
    labels : ndarray of shape (n,)
        Class labels to stratify by.
    n_folds : int
        Number of folds (>= 2).
    seed : int
        Seed; a different seed gives a different split.
    copies : CopyGroups or None
        Groups of copies, each kept in one fold.

    Returns
    -------
    ndarray of int8 of shape (n,)
    """
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    return folds_from_hashes(
        row_ids, labels, sorted_label_hashes(row_ids, labels, seed), n_folds, seed, copies
    )


def content_hashes(X: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's values as the models see them (float32; missing values
    hash alike), so identical rows hash alike.

    Returns
    -------
    ndarray of uint64 of shape (n,)
    """
    values = pd.DataFrame(np.asarray(X, dtype=np.float32))
    return pd.util.hash_pandas_object(values, index=False).to_numpy()


# Identical rows are taken for copies only where fewer than this many pairs of rows would
# be identical by chance (a birthday bound over the features' distinct values).
CHANCE_PAIRS = 0.01


def identical_by_chance(n_rows: int, distinct_per_feature: np.ndarray) -> bool:
    """Whether ``n_rows`` rows may well share their features by chance: the expected
    number of identical pairs, ``n^2 / (2 M)`` with ``M`` the product of the features'
    distinct value counts (independent features: the most combinations there can be), is
    at least :data:`CHANCE_PAIRS`. Tables of a few discrete features (``M`` small) hold
    many identical rows that are different records; tables with a continuous feature do
    not, and there identical rows are copies."""
    log_space = float(np.sum(np.log(np.maximum(np.asarray(distinct_per_feature), 1))))
    return 2 * np.log(max(n_rows, 1)) - np.log(2) - log_space >= np.log(CHANCE_PAIRS)


@dataclass(frozen=True)
class CopyGroups:
    """Groups of copies: rows whose features are identical where that cannot be chance
    (:func:`identical_by_chance`). Every row of a group takes one fold, drawn from the
    group's first id (by id order), whatever its label (:meth:`share_folds`): a copy in a
    training fold would give a held-out row's label away (copies of unlabeled rows in
    different folds read them as negatives: a table with every row three times read alpha
    0.016 for 0.25), and a copy with the other label would teach the model the opposite.

    Attributes
    ----------
    ids : ndarray
        The ids of every row in a group of copies, the first included.
    keys : ndarray
        The first id of each one's group.
    """

    ids: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))
    keys: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))

    @classmethod
    def of_rows(
        cls,
        row_ids: np.ndarray,
        hashes: np.ndarray,
        distinct_per_feature: np.ndarray | Callable[[], np.ndarray],
    ) -> CopyGroups:
        """The groups of copies among rows given by ascending ``row_ids``, their
        :func:`content_hashes` and each feature's number of distinct values (a lower
        bound will do; or a function that counts them, called only where some rows are
        identical: counting is a pass over every value); none where identical rows may
        be chance."""
        identical = cls.identical(row_ids, hashes)
        if not len(identical):
            return identical
        if callable(distinct_per_feature):
            distinct_per_feature = distinct_per_feature()
        return cls() if identical_by_chance(len(row_ids), distinct_per_feature) else identical

    @classmethod
    def identical(cls, row_ids: np.ndarray, hashes: np.ndarray) -> CopyGroups:
        """The groups of identical rows among rows given by ascending ``row_ids`` and
        their :func:`content_hashes`, copies or not."""
        row_ids = np.asarray(row_ids)
        _, first, inverse, counts = np.unique(
            hashes, return_index=True, return_inverse=True, return_counts=True
        )
        if counts.max(initial=0) < 2:
            return cls()
        inverse = inverse.ravel()
        members = np.flatnonzero(counts[inverse] > 1)
        return cls(row_ids[members], row_ids[first[inverse[members]]])

    def __len__(self) -> int:
        return int(self.ids.size)

    @property
    def n_copies(self) -> int:
        """Rows that copy an earlier row (the groups' first rows not counted)."""
        return len(self) - int(pd.unique(self.keys).size) if len(self) else 0

    def share_folds(
        self, row_ids: np.ndarray, folds: np.ndarray, n_folds: int, seed: int
    ) -> np.ndarray:
        """``folds`` of ``row_ids``, with each group's rows in the fold its first id
        draws (``row_hash(first id, seed) % n_folds``); other rows keep theirs."""
        if not len(self):
            return folds
        position = pd.Index(self.ids).get_indexer(np.asarray(row_ids))
        grouped = position >= 0
        if not grouped.any():
            return folds
        folds = np.array(folds, copy=True)
        drawn = row_hash(self.keys[position[grouped]], seed) % np.uint64(n_folds)
        folds[grouped] = drawn.astype(folds.dtype)
        return folds


NO_COPIES = CopyGroups()


_SUBSAMPLE_SALT = 0x5EED


def _kept_counts(
    n_pos: int, n_unl: int, max_ratio: float | None, max_rows: int | None
) -> tuple[int, int]:
    """How many positives and unlabeled rows a model may train on."""
    keep_unl = min(n_unl, int(max_ratio * n_pos)) if max_ratio is not None else n_unl
    keep_pos = n_pos
    if max_rows is not None and keep_pos + keep_unl > max_rows:
        scale = max_rows / (keep_pos + keep_unl)
        keep_pos, keep_unl = max(1, int(keep_pos * scale)), int(keep_unl * scale)
    return keep_pos, keep_unl


def subsample_thresholds(
    row_ids: np.ndarray,
    labels: np.ndarray,
    max_ratio: float | None,
    max_rows: int | None,
    seed: int,
) -> dict[int, np.uint64] | None:
    """Return, per label, the hash cut-off of the rows a model may train on.

    At most ``max_ratio`` unlabeled rows per positive are kept; then, if more than
    ``max_rows`` rows remain, both labels are thinned in proportion.

    Returns
    -------
    dict or None
        ``{label: cut-off}``: rows of that label whose subsample hash is at most the
        cut-off are kept (a label absent keeps every row); ``None``: keep every row.
    """
    return thresholds_of(subsample_hashes(row_ids, labels, seed), max_ratio, max_rows)


def subsample_hashes(row_ids: np.ndarray, labels: np.ndarray, seed: int) -> dict[int, np.ndarray]:
    """Per label, the hashes the training subsample keeps its rows by (the smallest), a
    stream apart from the folds'."""
    return label_hashes(row_ids, labels, seed + _SUBSAMPLE_SALT)


def thresholds_of(
    hashes: dict[int, np.ndarray], max_ratio: float | None, max_rows: int | None
) -> dict[int, np.uint64] | None:
    """:func:`subsample_thresholds` from every row's :func:`subsample_hashes`."""
    none = np.array([], dtype=np.uint64)
    n_pos, n_unl = hashes.get(1, none).size, hashes.get(0, none).size
    keep_pos, keep_unl = _kept_counts(n_pos, n_unl, max_ratio, max_rows)
    thresholds = {}
    for value, n_keep in ((1, keep_pos), (0, keep_unl)):
        members = hashes.get(value, none)
        if n_keep >= members.size:
            continue
        cut = np.partition(members, n_keep - 1)[n_keep - 1] if n_keep else np.uint64(0)
        thresholds[value] = cut
    return thresholds or None


@dataclass(frozen=True)
class KeysPiece:
    """Some rows' share of a scoring's :class:`FoldKeys` (:meth:`FoldKeys.piece`).

    Attributes
    ----------
    fold, subsample : dict of int to ndarray of uint64
        Per label, the rows' fold hashes and subsample hashes, in the rows' order.
    checksums : dict of int to int
        Per label, the rows' ids' :func:`id_checksum`.
    """

    fold: dict[int, np.ndarray]
    subsample: dict[int, np.ndarray]
    checksums: dict[int, int]


@dataclass(frozen=True)
class FoldKeys:
    """A scoring's rows reduced to what places any one of them, so that the rows' ids and
    labels need not be in one place: each label's sorted fold hashes
    (:func:`folds_from_hashes`), the training subsample's cut-offs (:func:`trainable_rows`),
    and each label's count of rows and :func:`id_checksum`.

    Attributes
    ----------
    sorted_hashes : dict of int to ndarray of uint64
        As :func:`sorted_label_hashes`; empty in a :meth:`summary`.
    thresholds : dict or None
        As :func:`subsample_thresholds`.
    counts, checksums : dict of int to int
        Per label: its rows and their ids' :func:`id_checksum`.
    """

    sorted_hashes: dict[int, np.ndarray]
    thresholds: dict[int, np.uint64] | None
    counts: dict[int, int]
    checksums: dict[int, int]

    @staticmethod
    def piece(row_ids: np.ndarray, labels: np.ndarray, seed: int) -> KeysPiece:
        """Some rows' share of the keys, to be merged by :meth:`of_pieces`."""
        labels = np.asarray(labels)
        return KeysPiece(
            label_hashes(row_ids, labels, seed),
            subsample_hashes(row_ids, labels, seed),
            {int(v): id_checksum(row_ids[labels == v]) for v in np.unique(labels)},
        )

    @classmethod
    def of_pieces(
        cls, pieces: Sequence[KeysPiece], max_ratio: float | None, max_rows: int | None
    ) -> FoldKeys:
        """The keys of all the rows of ``pieces`` (:meth:`piece`), whatever their order."""

        def joined(of: Callable[[KeysPiece], dict[int, np.ndarray]]) -> dict[int, np.ndarray]:
            values = sorted({v for p in pieces for v in of(p)})
            return {v: np.concatenate([of(p)[v] for p in pieces if v in of(p)]) for v in values}

        hashes = {v: np.sort(h) for v, h in joined(lambda p: p.fold).items()}
        checksums = {
            v: sum(p.checksums[v] for p in pieces if v in p.checksums) % 2**64 for v in hashes
        }
        return cls(
            hashes,
            thresholds_of(joined(lambda p: p.subsample), max_ratio, max_rows),
            {v: int(h.size) for v, h in hashes.items()},
            checksums,
        )

    def summary(self) -> FoldKeys:
        """The keys without the hashes: what the rows' owner checks."""
        return replace(self, sorted_hashes={})


_SCORED_SALT = 0x5C0ED


def sampled_rows(row_ids: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Which rows a sampled scoring keeps: each with probability ``share``, by a hash of
    its id and the seed (a stream apart from the folds' and the training subsample's),
    so every scoring with that seed keeps the same rows, on any partitioning.

    Returns
    -------
    ndarray of bool
    """
    return row_uniform(row_ids, seed + _SCORED_SALT) < share


def trainable_rows(
    row_ids: np.ndarray,
    labels: np.ndarray,
    thresholds: dict[int, np.uint64] | None,
    seed: int,
) -> np.ndarray:
    """Return which rows may train a model: those under their label's cut-off
    (:func:`subsample_thresholds`; ``None``: no cut-off)."""
    keep = np.ones(len(row_ids), dtype=bool)
    if thresholds:
        hashes = row_hash(row_ids, seed + _SUBSAMPLE_SALT)
        labels = np.asarray(labels)
        for value, cut in thresholds.items():
            members = labels == value
            keep[members] &= hashes[members] <= cut
    return keep


def training_subsample(
    row_ids: np.ndarray,
    labels: np.ndarray,
    max_ratio: float | None,
    max_rows: int | None,
    seed: int,
) -> np.ndarray | None:
    """Choose the rows a classifier may train on: every positive and at most
    ``max_ratio`` unlabeled rows per positive, both thinned in proportion to at most
    ``max_rows`` rows.

    The rows kept are those with the smallest hashes (a different stream from the
    folds'), so the choice does not depend on row order or partitioning.

    Returns
    -------
    ndarray of bool or None
        Rows allowed in training; ``None`` when every row is (no cap, or under it).
    """
    thresholds = subsample_thresholds(row_ids, labels, max_ratio, max_rows, seed)
    if thresholds is None:
        return None
    return trainable_rows(row_ids, labels, thresholds, seed)


def take_rows(rows: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` at positions ``rows`` (integers, not a mask); the arrays themselves,
    not copies, where ``rows`` is every position in order (a training set of hundreds of
    MB copied for nothing).

    Returns
    -------
    tuple of ndarray
        One per array, in the order given.
    """
    if rows.size == len(arrays[0]) and np.array_equal(rows, np.arange(rows.size)):
        return arrays
    return tuple(a[rows] for a in arrays)
