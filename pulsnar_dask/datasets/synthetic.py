"""The paper's synthetic PU data (Kumar & Lambert, arXiv 2303.08269).

SCAR: two classes; the labeled positives are a random sample of the positive class.
SNAR: one negative class and ``n_subtypes`` positive subtypes; the labeled positives hold
every subtype equally while the unlabeled positives are skewed towards the later subtypes
(weights 1, 2, 4, ... over ``2**n_subtypes - 1``), so labeling is not at random.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification

from pulsnar_dask.core.choices import check_choice

SCENARIOS = ("scar", "snar")


@dataclass(frozen=True)
class PUData:
    """A positive-unlabeled data set with its ground truth.

    Attributes
    ----------
    X : ndarray of float32, shape (n, n_features)
    label : ndarray of int8, shape (n,)
        1 labeled positive, 0 unlabeled.
    true_label : ndarray of int8, shape (n,)
        0 negative, >= 1 positive (the subtype for SNAR data).
    """

    X: np.ndarray
    label: np.ndarray
    true_label: np.ndarray

    @property
    def true_alpha(self) -> float:
        """Fraction of positives among the unlabeled rows."""
        return float(np.mean(self.true_label[self.label == 0] > 0))

    def split(self, parts: int) -> list[PUData]:
        """Split the rows, in order, into ``parts`` nearly equal pieces."""
        return [
            PUData(self.X[idx], self.label[idx], self.true_label[idx])
            for idx in np.array_split(np.arange(self.label.size), parts)
        ]


def _split_counts(total: int, weights: np.ndarray) -> np.ndarray:
    """Split ``total`` into integer counts proportional to ``weights`` (largest remainder)."""
    share = total * weights / weights.sum()
    counts = np.floor(share).astype(np.int64)
    order = np.argsort(-(share - counts), kind="stable")
    counts[order[: total - int(counts.sum())]] += 1
    return counts


def _check(scenario: str, alpha: float) -> None:
    check_choice("scenario", scenario, SCENARIOS)
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")


def pu_composition(
    scenario: str, n_pos: int, n_unlab: int, alpha: float, n_subtypes: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """Rows per class among the labeled positives and among the unlabeled (the paper's).

    Returns
    -------
    (positive_counts, unlabeled_counts) : ndarray of int, shape (n_classes,)
        Class 0 is negative; SCAR has classes 0-1, SNAR 0..n_subtypes.
    """
    _check(scenario, alpha)
    if scenario == "scar":
        hidden = round(n_unlab * alpha)
        return np.array([0, n_pos]), np.array([round(n_unlab * (1 - alpha)), hidden])
    hidden = int(n_unlab * alpha)
    pos = np.r_[0, _split_counts(n_pos, np.ones(n_subtypes))]
    unl = np.r_[int(n_unlab * (1 - alpha)), _split_counts(hidden, 2.0 ** np.arange(n_subtypes))]
    return pos, unl


def paper_generator_bytes(
    scenario: str, n_pos: int, n_unlab: int, n_features: int, n_subtypes: int = 5
) -> int:
    """Bytes of the matrix :func:`make_pu_data` draws before picking its rows."""
    n_classes = 2 if scenario == "scar" else n_subtypes + 1
    return max(n_pos, n_unlab) * n_classes * 2 * n_features * 8


def make_pu_data(
    scenario: str,
    n_pos: int,
    n_unlab: int,
    n_features: int,
    alpha: float,
    class_sep: float = 0.3,
    n_subtypes: int = 5,
    random_state: int = 0,
) -> PUData:
    """Generate the paper's synthetic PU data with ``sklearn``'s ``make_classification``.

    Exactly the paper's construction; it draws ``max(n_pos, n_unlab) * n_classes * 2`` rows
    first, so it needs that much memory (see :func:`iter_pu_chunks` for large data).

    Parameters
    ----------
    scenario : {"scar", "snar"}
        Selection of the labeled positives.
    n_pos : int
        Number of labeled positives.
    n_unlab : int
        Number of unlabeled rows.
    n_features : int
        Number of (all informative) features.
    alpha : float
        Fraction of positives among the unlabeled, in [0, 1).
    class_sep : float
        ``make_classification``'s class separation.
    n_subtypes : int
        Number of positive subtypes (SNAR only).
    random_state : int
        Seed of the generator and of the final row shuffle.

    Returns
    -------
    PUData
        Rows in random order.
    """
    pos_counts, unl_counts = pu_composition(scenario, n_pos, n_unlab, alpha, n_subtypes)
    n_classes = pos_counts.size
    X, cls = make_classification(
        n_samples=max(n_pos, n_unlab) * n_classes * 2,
        n_features=n_features,
        n_informative=n_features,
        n_redundant=0,
        n_repeated=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        flip_y=0,
        class_sep=class_sep,
        random_state=random_state,
    )
    members = [np.flatnonzero(cls == c) for c in range(n_classes)]
    # SCAR takes the hidden positives first, SNAR the labeled ones (the reference's order).
    first_u = scenario == "scar"
    pos, unl = [], []
    for c in range(n_classes):
        head, tail = (unl_counts[c], pos_counts[c]) if first_u else (pos_counts[c], unl_counts[c])
        a, b = members[c][:head], members[c][head : head + tail]
        pos.append(b if first_u else a)
        unl.append(a if first_u else b)
    if first_u:
        unl.reverse()  # hidden positives before negatives, as the reference lists them
    pos_idx, unl_idx = np.concatenate(pos), np.concatenate(unl)
    rows = np.concatenate([pos_idx, unl_idx])
    label = np.r_[np.ones(pos_idx.size), np.zeros(unl_idx.size)].astype(np.int8)
    order = np.random.default_rng(random_state).permutation(rows.size)
    return PUData(
        X=X[rows][order].astype(np.float32),
        label=label[order],
        true_label=cls[rows][order].astype(np.int8),
    )


@dataclass(frozen=True)
class ClassModel:
    """The distribution ``make_classification`` draws from, sampled a chunk at a time.

    Class ``c`` is ``N(0, I) @ factors[c] + centroids[c]``: centroids on distinct vertices
    of the hypercube with half-side ``class_sep``, factors uniform in [-1, 1], as
    ``make_classification`` does with every feature informative and one cluster per class.
    """

    centroids: np.ndarray
    factors: np.ndarray

    @classmethod
    def create(
        cls, n_classes: int, n_features: int, class_sep: float, rng: np.random.Generator
    ) -> ClassModel:
        if n_features < 63 and 2**n_features < n_classes:
            raise ValueError(f"{n_features} features cannot hold {n_classes} distinct classes")
        vertices: set[tuple[int, ...]] = set()
        while len(vertices) < n_classes:
            vertices.add(tuple(rng.integers(0, 2, n_features).tolist()))
        centroids = (np.array(sorted(vertices), dtype=float) * 2 - 1) * class_sep
        centroids = centroids[rng.permutation(n_classes)]
        factors = 2 * rng.random((n_classes, n_features, n_features)) - 1
        return cls(centroids, factors)

    def sample(self, c: int, n: int, rng: np.random.Generator) -> np.ndarray:
        """Return ``n`` rows of class ``c`` as float32, shape (n, n_features)."""
        z = rng.standard_normal((n, self.centroids.shape[1]))
        return (z @ self.factors[c] + self.centroids[c]).astype(np.float32)


def iter_pu_chunks(
    scenario: str,
    n_pos: int,
    n_unlab: int,
    n_features: int,
    alpha: float,
    chunk_rows: int = 50_000,
    class_sep: float = 0.3,
    n_subtypes: int = 5,
    random_state: int = 0,
) -> Iterator[PUData]:
    """Generate the paper's synthetic PU data in chunks, for data too large to build whole.

    The same composition as :func:`make_pu_data` (:func:`pu_composition`) and the same
    distribution (:class:`ClassModel`), but drawn chunk by chunk, so memory is bounded by
    ``chunk_rows`` rather than by ``max(n_pos, n_unlab) * n_classes * 2`` rows. Each chunk
    holds its share of every (label, class) group, in random order; chunks together
    hold exactly the composition. The rows differ from :func:`make_pu_data`'s.

    Yields
    ------
    PUData
        ``ceil((n_pos + n_unlab) / chunk_rows)`` chunks, deterministic in ``random_state``;
        chunk ``i`` is :func:`pu_chunk` with ``index=i`` (so chunks can be drawn apart,
        e.g. one per Dask partition on the workers).
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows}")
    n_chunks = max(1, -(-(n_pos + n_unlab) // chunk_rows))
    for i in range(n_chunks):
        yield pu_chunk(
            scenario, n_pos, n_unlab, n_features, alpha, chunk_rows, i, class_sep, n_subtypes,
            random_state,
        )  # fmt: skip


def pu_chunk(
    scenario: str,
    n_pos: int,
    n_unlab: int,
    n_features: int,
    alpha: float,
    chunk_rows: int,
    index: int,
    class_sep: float = 0.3,
    n_subtypes: int = 5,
    random_state: int = 0,
) -> PUData:
    """Chunk ``index`` of :func:`iter_pu_chunks` with the same arguments.

    Returns
    -------
    PUData
        About ``chunk_rows`` rows.
    """
    pos_counts, unl_counts = pu_composition(scenario, n_pos, n_unlab, alpha, n_subtypes)
    model = ClassModel.create(
        pos_counts.size, n_features, class_sep, np.random.default_rng([random_state, 0])
    )
    n_chunks = max(1, -(-(n_pos + n_unlab) // chunk_rows))
    groups = [(1, c, n) for c, n in enumerate(pos_counts)] + [
        (0, c, n) for c, n in enumerate(unl_counts)
    ]
    shares = np.array([_split_counts(int(n), np.ones(n_chunks)) for _, _, n in groups])
    rng = np.random.default_rng([random_state, index + 1])
    parts = [
        (model.sample(c, int(n), rng), lab, c)
        for (lab, c, _), n in zip(groups, shares[:, index], strict=True)
        if n
    ]
    order = rng.permutation(sum(len(x) for x, _, _ in parts))
    return PUData(
        X=np.concatenate([x for x, _, _ in parts])[order],
        label=np.concatenate([np.full(len(x), lab, np.int8) for x, lab, _ in parts])[order],
        true_label=np.concatenate([np.full(len(x), c, np.int8) for x, _, c in parts])[order],
    )


def pu_frame(data: PUData, first_row_id: int = 0) -> pd.DataFrame:
    """PU data as a table: ``f0..f{d-1}``, ``label``, ``true_label`` and ``row_id``
    (``first_row_id``, ``first_row_id + 1``, ...)."""
    frame = pd.DataFrame(data.X, columns=[f"f{j}" for j in range(data.X.shape[1])])
    frame["label"] = data.label
    frame["true_label"] = data.true_label
    frame["row_id"] = np.arange(first_row_id, first_row_id + data.label.size, dtype=np.int64)
    return frame


def _chunk_frame(index: int, args: tuple, chunk_rows: int) -> pd.DataFrame:
    return pu_frame(pu_chunk(*args[:5], chunk_rows, index, *args[5:]), index * 2 * chunk_rows)


def synthetic_dask_frame(
    scenario: str,
    n_pos: int,
    n_unlab: int,
    n_features: int,
    alpha: float,
    chunk_rows: int = 50_000,
    class_sep: float = 0.3,
    n_subtypes: int = 5,
    random_state: int = 0,
) -> Any:
    """:func:`iter_pu_chunks`'s data as a Dask dataframe whose partitions (one chunk each)
    are drawn on the workers: a table of any size without files or client memory.

    Returns
    -------
    dask.dataframe.DataFrame
        :func:`pu_frame` columns; chunk ``i``'s row ids start at ``2 i chunk_rows``.
    """
    import dask.dataframe as dd

    n_chunks = max(1, -(-(n_pos + n_unlab) // chunk_rows))
    args = (scenario, n_pos, n_unlab, n_features, alpha, class_sep, n_subtypes, random_state)
    empty = PUData(
        X=np.empty((0, n_features), np.float32),
        label=np.empty(0, np.int8),
        true_label=np.empty(0, np.int8),
    )
    return dd.from_map(
        _chunk_frame, list(range(n_chunks)), args=(args, chunk_rows), meta=pu_frame(empty)
    )
