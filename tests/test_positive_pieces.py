"""PULSNAR's clustering reduced over the partitions that hold the positives, against the
clustering as it ran on the whole arrays before (the oracle, written out here)."""

import itertools

import numpy as np
import pandas as pd
import pytest

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.schema import ONE_HOT_LEVELS
from pulsnar_dask.core.subtypes import (
    SUBTYPE_FEATURES,
    choose_mixture,
    fit_bic_curve,
    min_cluster_size,
    select_features,
)
from pulsnar_dask.pipeline.clusters import cluster_positives
from pulsnar_dask.pipeline.in_process import InProcessExecutor


def one_by_one(fn, calls):
    return [fn(*args) for args in calls]


class Partitioned(InProcessExecutor):
    """The positives in four pieces of random sizes, each in its own shuffled order,
    one empty."""

    seed = 0

    def positive_pieces(self, columns):
        ((ids, X),) = super().positive_pieces(columns)
        rng = np.random.default_rng(self.seed)
        order = rng.permutation(ids.size)
        cuts = np.sort(rng.integers(0, ids.size, 2))
        bounds = [0, cuts[0], cuts[0], cuts[1], ids.size]
        return [(ids[order[a:b]], X[order[a:b]]) for a, b in itertools.pairwise(bounds)]


def _table(n_positives=1800, n_unlabeled=3000, seed=0):
    """Three subtypes of positives; a column with missing values; one constant over the
    positives (some of them missing) but not over the unlabeled rows; a three-category
    and a two-category column."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0], [4, 0, 1], [0, 4, -1]], dtype=float)
    kind = rng.integers(0, 3, n_positives)
    positive = centres[kind] + rng.normal(0, 0.7, (n_positives, 3))
    unlabeled = rng.normal(1, 2.5, (n_unlabeled, 3))
    values = np.r_[positive, unlabeled]
    values[rng.random(len(values)) < 0.05, 1] = np.nan
    frame = pd.DataFrame(values, columns=["a", "b", "c"])
    flat = np.r_[np.full(n_positives, 1.5), rng.normal(0, 1, n_unlabeled)]
    flat[:n_positives:7] = np.nan
    frame["flat"] = flat
    colour = np.where(np.r_[kind, rng.integers(0, 3, n_unlabeled)] == 1, "red", "blue")
    frame["colour"] = np.where(rng.random(len(frame)) < 0.1, "green", colour)
    female = (
        rng.random(len(frame)) < np.r_[np.where(kind == 0, 0.9, 0.5), np.full(n_unlabeled, 0.1)]
    )
    frame["sex"] = np.where(female, "f", "m")
    y = np.r_[np.ones(n_positives, int), np.zeros(n_unlabeled, int)]
    return frame, y


def _before(executor, config, seed):
    """The clustering as it ran on every positive's values at once before the positives
    stayed where they are held: gain-scaled columns, missing values imputed with the
    column's median, constant columns dropped; the mixture's components, small ones
    dissolved into the most probable remaining one, ranked by size; the profiles from
    nanmean and nanstd over indicators of each category column's most frequent
    categories, ordered as ``profiles_of`` orders them (rounded |d|, ties to the earlier
    column)."""
    gain = executor.importance(config, seed)
    _, cluster_idx = select_features(gain, config)
    columns = [executor.features[i] for i in cluster_idx]
    ((_, X),) = InProcessExecutor.positive_pieces(executor, columns)
    Z = X.astype(float) * gain[cluster_idx]
    medians = np.nanmedian(Z, axis=0)
    rows, cols = np.nonzero(np.isnan(Z))
    Z[rows, cols] = medians[cols]
    Z = Z[:, np.ptp(Z, axis=0) > 0]
    chosen, bic, _ = choose_mixture(fit_bic_curve(one_by_one, Z, config, seed), config)
    proba = chosen.model.predict_proba(Z)
    counts = np.bincount(proba.argmax(axis=1), minlength=chosen.n_components)
    kept = counts >= min_cluster_size(config, len(Z))
    kept[np.argmax(counts)] = True
    raw = np.where(kept, proba, -1.0).argmax(axis=1)
    ranked = np.argsort(-np.bincount(raw, minlength=kept.size), kind="stable")[: kept.sum()]
    rank = np.full(kept.size, -1)
    rank[ranked] = np.arange(ranked.size)
    labels = rank[raw]
    blocks, names = [], []
    for j, name in enumerate(columns):
        if name not in executor.schema.categories:
            blocks.append(X[:, j : j + 1].astype(float))
            names.append(name)
            continue
        codes = X[:, j]
        seen = np.bincount(codes[np.isfinite(codes)].astype(int))
        top = np.argsort(-seen, kind="stable")[: min(ONE_HOT_LEVELS, int((seen > 0).sum()))]
        blocks.append((codes[:, None] == top[None, :]).astype(float))
        names += [f"{name}={executor.schema.categories[name][k]}" for k in top]
    described = np.hstack(blocks)
    mean, sd = np.nanmean(described, axis=0), np.nanstd(described, axis=0)
    profiles = []
    for c in range(ranked.size):
        with np.errstate(invalid="ignore", divide="ignore"):  # the constant column
            d = (np.nanmean(described[labels == c], axis=0) - mean) / sd
        d[~(sd > 0)] = np.nan
        size = np.round(np.nan_to_num(np.abs(d), nan=-1.0), 2)
        order = np.lexsort((np.arange(d.size), -size))[:SUBTYPE_FEATURES]
        profiles.append(
            [
                {"feature": names[i], "difference_sd": round(float(d[i]), 2)}
                for i in order
                if np.isfinite(d[i])
            ]
        )
    return chosen, bic, labels, profiles, columns


@pytest.mark.parametrize("cap", [None, 500])
def test_the_clustering_over_pieces_reads_what_the_whole_arrays_read(cap):
    """Each positive's cluster, the BIC curve, the mixture and the clusters' profiles,
    reduced over three random partitionings of the positives, equal the whole arrays'
    (fewer positives than the mixtures' cap, and more, so that the mixtures fit a seeded
    sample); small components are merged, and the constant column is never named."""
    frame, y = _table()
    config = PUConfig(max_cluster_rows=cap, max_clusters=6, min_cluster_fraction=0.05)
    executor = Partitioned(frame, y)
    executor.read()
    chosen, bic, labels, profiles, columns = _before(executor, config, 3)
    assert {"flat", "colour", "sex"} <= set(columns)
    assert chosen.n_components > labels.max() + 1 >= 2  # a component merged
    named = {p["feature"] for cluster in profiles for p in cluster}
    assert "flat" not in named and {"colour=red", "sex=f"} <= named
    for seed in (5, 6, 7):
        executor.seed = seed
        reduced = cluster_positives(executor, config, 3, np.flatnonzero(y == 1))
        np.testing.assert_array_equal(reduced.labels, labels)
        np.testing.assert_array_equal(reduced.bic, bic)
        assert reduced.mixture_components == chosen.n_components
        assert reduced.profiles == profiles
