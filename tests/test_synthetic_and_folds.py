import itertools

import numpy as np
import pandas as pd
import pytest

from pulsnar_dask import make_pu_data
from pulsnar_dask.core.folds import assign_folds, take_rows


def test_snar_data_has_the_papers_composition():
    d = make_pu_data("snar", 2000, 6000, 10, 0.3, random_state=1)
    assert d.X.shape == (8000, 10) and d.X.dtype == np.float32
    pos, unl = d.true_label[d.label == 1], d.true_label[d.label == 0]
    assert np.bincount(pos, minlength=6).tolist() == [0, 400, 400, 400, 400, 400]
    counts = np.bincount(unl, minlength=6)
    assert counts[0] == int(6000 * 0.7)
    assert counts[1:].sum() == 1800
    np.testing.assert_allclose(counts[1:] / 1800, 2.0 ** np.arange(5) / 31, atol=1 / 1800)
    assert d.true_alpha == pytest.approx(0.3)


def test_scar_data_counts_and_determinism():
    a = make_pu_data("scar", 500, 1500, 5, 0.2, random_state=3)
    b = make_pu_data("scar", 500, 1500, 5, 0.2, random_state=3)
    np.testing.assert_array_equal(a.X, b.X)
    assert (a.label == 1).sum() == 500 and (a.label == 0).sum() == 1500
    assert (a.true_label[a.label == 1] == 1).all()
    assert a.true_alpha == pytest.approx(0.2)


def test_synthetic_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown scenario"):
        make_pu_data("mar", 10, 10, 2, 0.1)
    with pytest.raises(ValueError, match="alpha must be in"):
        make_pu_data("scar", 10, 10, 2, 1.0)


def test_folds_are_stratified_and_independent_of_row_order():
    rng = np.random.default_rng(0)
    ids = rng.permutation(10_000)[:1003]
    labels = (rng.random(1003) < 0.2).astype(int)
    folds = assign_folds(ids, labels, 5, seed=7)
    for value in (0, 1):
        sizes = np.bincount(folds[labels == value], minlength=5)
        assert sizes.max() - sizes.min() <= 1
    perm = rng.permutation(1003)
    np.testing.assert_array_equal(assign_folds(ids[perm], labels[perm], 5, seed=7), folds[perm])
    assert (assign_folds(ids, labels, 5, seed=8) != folds).mean() > 0.5


def test_folds_need_at_least_two():
    with pytest.raises(ValueError, match="at least 2"):
        assign_folds(np.arange(4), np.zeros(4), 1, 0)


def test_training_subsample_keeps_positives_and_the_ratio():
    from pulsnar_dask.core.folds import training_subsample

    rng = np.random.default_rng(1)
    ids = rng.permutation(100_000)[:5000]
    labels = (np.arange(5000) < 100).astype(int)
    keep = training_subsample(ids, labels, 10, None, seed=3)
    assert keep[labels == 1].all()
    assert keep[labels == 0].sum() == 1000
    perm = rng.permutation(5000)
    np.testing.assert_array_equal(
        training_subsample(ids[perm], labels[perm], 10, None, 3), keep[perm]
    )
    assert training_subsample(ids, labels, None, None, 3) is None
    assert training_subsample(ids, labels, 100, None, 3) is None  # 4900 unlabeled < 100 x 100
    # 100 positives + 1000 unlabeled: a row cap of 1100 does not bind
    np.testing.assert_array_equal(training_subsample(ids, labels, 10, 1100, 3), keep)


def test_training_subsample_row_cap_thins_both_labels_in_proportion():
    from pulsnar_dask.core.folds import training_subsample

    rng = np.random.default_rng(2)
    ids = rng.permutation(10**6)[:20_000]
    labels = (np.arange(20_000) < 5000).astype(int)
    keep = training_subsample(ids, labels, None, 4000, seed=7)
    assert keep[labels == 1].sum() == 1000 and keep[labels == 0].sum() == 3000
    # after the unlabeled cap (2 per positive: 5000 + 10000 rows), thinned to 3000
    keep = training_subsample(ids, labels, 2.0, 3000, seed=7)
    assert keep[labels == 1].sum() == 1000 and keep[labels == 0].sum() == 2000
    # the unlabeled kept under the row cap are among those the ratio cap alone keeps
    ratio_only = training_subsample(ids, labels, 2.0, None, seed=7)
    assert not (keep & ~ratio_only).any()
    perm = rng.permutation(20_000)
    np.testing.assert_array_equal(
        training_subsample(ids[perm], labels[perm], 2.0, 3000, 7), keep[perm]
    )


@pytest.mark.parametrize(
    "max_ratio, max_rows", [(None, None), (2.0, None), (None, 500), (5.0, 300)]
)
def test_fold_keys_merged_from_any_split_are_those_of_all_rows(max_ratio, max_rows):
    from pulsnar_dask.core.folds import (
        FoldKeys,
        id_checksum,
        sorted_label_hashes,
        subsample_thresholds,
    )

    rng = np.random.default_rng(4)
    ids = rng.permutation(50_000)[:2_000]
    labels = (rng.random(ids.size) < 0.15).astype(np.int8)
    cuts = [0, 7, 700, 701, 1_500, ids.size]  # one part of a single row, one empty
    order = rng.permutation(ids.size)
    parts = [order[a:b] for a, b in itertools.pairwise(cuts)] + [order[:0]]
    keys = FoldKeys.of_pieces(
        [FoldKeys.piece(ids[p], labels[p], 3) for p in parts], max_ratio, max_rows
    )
    whole = sorted_label_hashes(ids, labels, 3)
    assert sorted(keys.sorted_hashes) == [0, 1]
    for v in (0, 1):
        np.testing.assert_array_equal(keys.sorted_hashes[v], whole[v])
        assert keys.counts[v] == int(np.sum(labels == v))
        assert keys.checksums[v] == id_checksum(ids[labels == v])
    assert keys.thresholds == subsample_thresholds(ids, labels, max_ratio, max_rows, 3)
    assert keys.summary().sorted_hashes == {} and keys.summary().counts == keys.counts


def test_trainable_rows_are_those_under_their_labels_cut_off():
    from pulsnar_dask.core.folds import trainable_rows

    few, zeros = np.arange(200), np.zeros(200, np.int8)
    under = trainable_rows(few, zeros, {0: np.uint64(2**63)}, 0)
    assert 0 < under.sum() < 200  # about half the hashes lie under 2^63
    assert trainable_rows(np.array([1, 2]), zeros[:2], None, 0).all()


def _class_counts(chunks):
    label = np.concatenate([c.label for c in chunks])
    true = np.concatenate([c.true_label for c in chunks])
    return [np.bincount(true[label == v], minlength=6).tolist() for v in (1, 0)]


@pytest.mark.parametrize("scenario,alpha", [("snar", 0.3), ("snar", 0.05), ("scar", 0.2)])
def test_chunked_generator_has_the_papers_composition(scenario, alpha):
    from pulsnar_dask.datasets.synthetic import iter_pu_chunks

    paper = make_pu_data(scenario, 1000, 3000, 6, alpha, random_state=2)
    chunks = list(iter_pu_chunks(scenario, 1000, 3000, 6, alpha, chunk_rows=900, random_state=2))
    sizes = [c.label.size for c in chunks]
    assert len(sizes) == 5 and sum(sizes) == 4000 and max(sizes) <= 900
    assert _class_counts(chunks) == _class_counts([paper])
    again = list(iter_pu_chunks(scenario, 1000, 3000, 6, alpha, chunk_rows=900, random_state=2))
    np.testing.assert_array_equal(chunks[3].X, again[3].X)
    other = next(iter_pu_chunks(scenario, 1000, 3000, 6, alpha, chunk_rows=900, random_state=3))
    assert not np.array_equal(chunks[0].X, other.X)


def test_chunked_generator_draws_make_classifications_distribution():
    """Class means on distinct hypercube vertices (+-class_sep); covariance factors' A^T A."""
    from pulsnar_dask.datasets.synthetic import ClassModel

    rng = np.random.default_rng(0)
    model = ClassModel.create(6, 4, 0.7, rng)
    assert np.all(np.abs(model.centroids) == 0.7)
    assert len({tuple(c) for c in model.centroids}) == 6
    x = model.sample(2, 200_000, rng).astype(float)
    np.testing.assert_allclose(x.mean(axis=0), model.centroids[2], atol=0.02)
    a = model.factors[2]
    np.testing.assert_allclose(np.cov(x.T), a.T @ a, atol=0.05)
    with pytest.raises(ValueError, match="cannot hold 6 distinct classes"):
        ClassModel.create(6, 2, 0.3, rng)


def test_write_pu_parquet_round_trip_and_nothing_left_on_failure(tmp_path):
    from pulsnar_dask.io import write_pu_parquet

    data = make_pu_data("snar", 200, 600, 5, 0.3, random_state=0)
    n_rows, true_alpha = write_pu_parquet(data.split(3), tmp_path / "d")
    frame = pd.read_parquet(tmp_path / "d").sort_values("row_id")
    assert n_rows == 800 and true_alpha == pytest.approx(data.true_alpha)
    assert frame.row_id.tolist() == list(range(800))
    np.testing.assert_array_equal(frame[[f"f{i}" for i in range(5)]].to_numpy(), data.X)
    np.testing.assert_array_equal(frame.true_label.to_numpy(), data.true_label)

    def failing():
        yield data
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_pu_parquet(failing(), tmp_path / "e")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_copies_share_one_fold_whatever_their_labels():
    from pulsnar_dask.core.folds import CopyGroups, content_hashes, identical_by_chance

    rng = np.random.default_rng(0)
    rows = rng.normal(size=(100, 5))  # continuous: identical rows are copies
    X = np.vstack([rows, rows, rows[:40]])
    ids = np.array([f"r{i:03d}" for i in range(240)], dtype=object)
    labels = (rng.random(240) < 0.3).astype(int)  # copies with either label
    distinct = pd.DataFrame(X).nunique().to_numpy()
    assert not identical_by_chance(240, distinct)
    copies = CopyGroups.of_rows(ids, content_hashes(X), distinct)
    assert len(copies) == 240 and copies.n_copies == 140
    assert copies.keys[copies.ids.tolist().index("r150")] == "r050"
    plain = assign_folds(ids, labels, 5, seed=3)
    folds = assign_folds(ids, labels, 5, seed=3, copies=copies)
    assert (folds[:100] == folds[100:200]).all() and (folds[:40] == folds[200:]).all()
    assert (folds != plain).any() and np.bincount(folds, minlength=5).min() > 20
    # rows with no copy keep the fold they are dealt
    alone = CopyGroups.of_rows(ids[:120], content_hashes(X[:120]), distinct)
    assert alone.n_copies == 20
    kept = np.setdiff1d(np.arange(120), np.r_[0:20, 100:120])
    np.testing.assert_array_equal(
        assign_folds(ids[:120], labels[:120], 5, 3, alone)[kept],
        assign_folds(ids[:120], labels[:120], 5, 3)[kept],
    )


def test_distinct_values_are_counted_only_where_some_rows_are_identical():
    """Counting each feature's distinct values is a pass over every value: where no two
    rows hash alike there can be no copies, and the count is never asked for."""
    from pulsnar_dask.core.folds import CopyGroups, content_hashes

    rng = np.random.default_rng(2)
    rows = rng.normal(size=(50, 4))
    asked = []

    def distinct(X):
        return lambda: asked.append(len(X)) or pd.DataFrame(X).nunique().to_numpy()

    assert len(CopyGroups.of_rows(np.arange(50), content_hashes(rows), distinct(rows))) == 0
    assert asked == []
    twice = np.vstack([rows, rows[:5]])
    copies = CopyGroups.of_rows(np.arange(55), content_hashes(twice), distinct(twice))
    assert asked == [55] and copies.n_copies == 5
    # counted, and identical by chance: three binary features hold 8 distinct rows
    few = rng.integers(0, 2, size=(40, 3)).astype(float)
    assert len(CopyGroups.of_rows(np.arange(40), content_hashes(few), distinct(few))) == 0
    assert asked == [55, 40]


def test_identical_rows_of_few_discrete_features_are_not_taken_for_copies():
    """Three ternary features hold 27 distinct rows: 2,000 rows repeat them by chance, as
    different records; grouping them would hold whole cells out of training (a review
    measured alpha 0.94 for 0.26 that way)."""
    from pulsnar_dask.core.folds import CopyGroups, content_hashes, identical_by_chance

    X = np.random.default_rng(1).integers(0, 3, size=(2000, 3)).astype(np.float32)
    distinct = pd.DataFrame(X).nunique().to_numpy()
    assert identical_by_chance(2000, distinct)
    assert len(CopyGroups.of_rows(np.arange(2000), content_hashes(X), distinct)) == 0
    # the bound: n^2 / (2 M) pairs expected by chance, against 0.01
    assert identical_by_chance(100, [100, 50])  # 10,000 / 10,000 = 1 pair
    assert not identical_by_chance(100, [1000, 1000])  # 0.005 pairs


def test_take_rows_returns_the_arrays_themselves_only_for_every_row_in_order():
    X, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    same = take_rows(np.arange(6), X, y)
    assert same[0] is X and same[1] is y  # no copy of a training set for nothing
    taken = take_rows(np.array([5, 0, 3]), X, y)
    np.testing.assert_array_equal(taken[0], X[[5, 0, 3]])
    np.testing.assert_array_equal(taken[1], [5, 0, 3])
    # the first rows in order are a subset, not every row
    np.testing.assert_array_equal(take_rows(np.arange(3), X)[0], X[:3])
    # every row, out of order: a copy in that order
    shuffled = take_rows(np.array([1, 0, 2, 3, 4, 5]), X)[0]
    assert shuffled is not X
    np.testing.assert_array_equal(shuffled, X[[1, 0, 2, 3, 4, 5]])


def test_a_sampled_scoring_keeps_every_positive_and_the_same_unlabeled_rows_anywhere():
    """A scoring on a share of the unlabeled rows: every labeled positive it asks for,
    about that share of the unlabeled rows, the same rows for every request of a seed
    and on any split of the table, other rows for another seed."""
    from pulsnar_dask.core.config import PUConfig
    from pulsnar_dask.pipeline.executor import ScoreRequest

    rng = np.random.default_rng(0)
    ids = rng.permutation(40_000) * 7 + 3
    labels = (rng.random(ids.size) < 0.1).astype(np.int8)
    positives = ids[labels == 1][::2]

    def request(seed, share, chosen=positives):
        return ScoreRequest(["f0"], chosen, None, PUConfig(), seed, "c", None, share)

    keep, kept_labels = request(4, 0.25).rows(ids, labels)
    assert set(ids[keep & (labels == 1)]) == set(positives)
    assert (kept_labels == labels[keep]).all()
    n_unlabeled = int(np.sum(labels == 0))
    assert abs(np.sum(keep & (labels == 0)) - 0.25 * n_unlabeled) < 4 * np.sqrt(n_unlabeled)
    unlabeled_kept = set(ids[keep & (labels == 0)])
    other_cluster, _ = request(4, 0.25, positives[:10]).rows(ids, labels)
    assert set(ids[other_cluster & (labels == 0)]) == unlabeled_kept
    halves = [
        request(4, 0.25).rows(ids[part], labels[part])[0]
        for part in (slice(0, 15_000), slice(15_000, None))
    ]
    assert np.array_equal(np.concatenate(halves), keep)
    another_seed, _ = request(5, 0.25).rows(ids, labels)
    assert set(ids[another_seed & (labels == 0)]) != unlabeled_kept
    everything, _ = request(4, 1.0, None).rows(ids, labels)
    assert everything.all()


def test_a_clusters_reading_on_a_sample_keeps_the_share_of_its_positives_or_a_floor():
    """Where the clusters are read on a share of the unlabeled rows, each keeps that share
    of its positives, drawn from the ids as the unlabeled rows are (the same on any order
    of them), but about the floor at least, and all of a small cluster's."""
    from pulsnar_dask.core.folds import sampled_rows
    from pulsnar_dask.pipeline.clusters import MIN_READING_POSITIVES, reading_positives

    ids = np.random.default_rng(1).permutation(100_000)[:40_000] * 3
    kept = reading_positives(ids, 0.1, 7)
    assert abs(kept.size - 4_000) < 4 * np.sqrt(4_000)
    assert np.array_equal(kept, ids[sampled_rows(ids, 0.1, 7)])  # the unlabeled rows' draw
    assert set(reading_positives(ids[::-1], 0.1, 7)) == set(kept)
    assert set(reading_positives(ids, 0.1, 8)) != set(kept)
    assert reading_positives(ids, 1.0, 7) is ids
    floor = reading_positives(ids[:5_000], 0.1, 7)  # 500 by the share: the floor's instead
    assert abs(floor.size - MIN_READING_POSITIVES) < 4 * np.sqrt(MIN_READING_POSITIVES)
    small = ids[: MIN_READING_POSITIVES - 1]
    assert reading_positives(small, 0.1, 7) is small
