"""PULSNAR's clustering reduced over the partitions that hold the positives, against the
same clustering on the whole arrays (the oracle)."""

import itertools

import numpy as np
import pandas as pd

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.mixture import cluster_labels, clustering_matrix
from pulsnar_dask.core.subtypes import (
    choose_mixture,
    fit_bic_curve,
    min_cluster_size,
    select_features,
    subtype_profiles,
)
from pulsnar_dask.pipeline.clusters import cluster_positives
from pulsnar_dask.pipeline.in_process import InProcessExecutor


def one_by_one(fn, calls):
    return [fn(*args) for args in calls]


class Partitioned(InProcessExecutor):
    """The positives in four pieces, each in its own shuffled order, one empty."""

    def positive_pieces(self, columns):
        ((ids, X),) = super().positive_pieces(columns)
        order = np.random.default_rng(5).permutation(ids.size)
        bounds = [0, ids.size // 5, ids.size // 5, ids.size // 2, ids.size]
        return [(ids[order[a:b]], X[order[a:b]]) for a, b in itertools.pairwise(bounds)]


def _table(n_positives=1800, n_unlabeled=3000, seed=0):
    """Three subtypes of positives, a column with missing values, one constant over the
    positives (but not the unlabeled rows) and a categorical column."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0], [4, 0, 1], [0, 4, -1]], dtype=float)
    kind = rng.integers(0, 3, n_positives)
    positive = centres[kind] + rng.normal(0, 0.7, (n_positives, 3))
    unlabeled = rng.normal(1, 2.5, (n_unlabeled, 3))
    values = np.r_[positive, unlabeled]
    values[rng.random(len(values)) < 0.05, 1] = np.nan
    frame = pd.DataFrame(values, columns=["a", "b", "c"])
    frame["flat"] = np.r_[np.full(n_positives, 1.5), rng.normal(0, 1, n_unlabeled)]
    colour = np.where(np.r_[kind, rng.integers(0, 3, n_unlabeled)] == 1, "red", "blue")
    frame["colour"] = np.where(rng.random(len(frame)) < 0.1, "green", colour)
    y = np.r_[np.ones(n_positives, int), np.zeros(n_unlabeled, int)]
    return frame, y


def _whole(executor, config, seed):
    """The clustering on every positive's values at once: the path before the
    positives' features stayed where they are held."""
    gain = executor.importance(config, seed)
    _, cluster_idx = select_features(gain, config)
    columns = [executor.features[i] for i in cluster_idx]
    ((_, X),) = InProcessExecutor.positive_pieces(executor, columns)
    Z = clustering_matrix(X, gain[cluster_idx])
    chosen, bic, _ = choose_mixture(fit_bic_curve(one_by_one, Z, config, seed), config)
    labels = cluster_labels(chosen, Z, min_cluster_size(config, len(Z)))
    described, names = executor.schema.one_hot(X, columns)
    return chosen, bic, labels, subtype_profiles(described, labels, names)


def test_the_clustering_over_pieces_reads_what_the_whole_arrays_read():
    """Scaling (missing values imputed with medians, the constant column dropped), the
    mixtures' sample, each positive's cluster and the clusters' profiles, reduced over
    four partitions in no order, equal the whole arrays' (fewer rows than the mixtures'
    cap, and more, so that the mixtures fit a seeded sample; small components merged)."""
    frame, y = _table()
    merged = 0
    for cap in (None, 500):
        config = PUConfig(max_cluster_rows=cap, max_clusters=6, min_cluster_fraction=0.03)
        executor = Partitioned(frame, y)
        executor.read()
        positive_ids = np.flatnonzero(y == 1)
        reduced = cluster_positives(executor, config, 3, positive_ids)
        chosen, bic, labels, profiles = _whole(executor, config, 3)
        assert reduced.n_clusters == labels.max() + 1 >= 2
        np.testing.assert_array_equal(reduced.labels, labels)
        np.testing.assert_array_equal(reduced.bic, bic)
        assert reduced.mixture_components == chosen.n_components
        assert reduced.profiles == profiles
        named = {p["feature"] for cluster in profiles for p in cluster}
        assert "flat" not in named and "colour=red" in named
        assert executor.features[reduced.cluster_features[0]] == "flat"  # dropped
        merged += reduced.mixture_components > reduced.n_clusters
    assert merged
