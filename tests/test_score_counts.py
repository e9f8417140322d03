"""The fixed-size counts of probabilities against the probabilities themselves (the oracle)."""

import itertools

import numpy as np
import pytest
from conftest import beta_mixture

from pulsnar_dask import estimate_alpha
from pulsnar_dask.core.alpha import tail_ratios
from pulsnar_dask.core.score_counts import EDGES, ScoreCounts, ScoreVectors


def _separated(rng, n_pos=2000, n_unl=20000, alpha=0.3):
    """Scores piled up near 1 for the positives (a well-separated problem): the tail
    quantiles all fall within 0.001 of 1."""
    hidden = int(alpha * n_unl)
    logits = np.r_[rng.normal(8, 1.5, n_pos + hidden), rng.normal(-4, 1.5, n_unl - hidden)]
    p = 1 / (1 + np.exp(-logits))
    y = np.r_[np.ones(n_pos, np.int8), np.zeros(n_unl, np.int8)]
    return p, y


@pytest.mark.parametrize("make", ["mixture", "separated"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_from_counts_equals_alpha_from_the_vectors(make, seed):
    rng = np.random.default_rng(seed)
    p, y = beta_mixture(rng, 30000)[:2] if make == "mixture" else _separated(rng)
    for estimator in ("kernel", "tail"):
        for region in ("upper", "positives"):
            counts = estimate_alpha(p, y, estimator=estimator, region=region).alpha
            exact = estimate_alpha(p, y, estimator=estimator, region=region, exact=True).alpha
            assert counts == pytest.approx(exact, abs=0.002), (estimator, region)


def test_tail_ratios_from_counts_follow_the_vectors_where_scores_pile_up_near_one():
    p, y = _separated(np.random.default_rng(4))
    assert np.quantile(p[y == 1], 0.5) > 0.999  # every threshold within 0.001 of 1
    t_counts, r_counts = tail_ratios(ScoreCounts.from_scores(p, y), 0.1)
    t_exact, r_exact = tail_ratios(ScoreVectors(p, y), 0.1)
    # in both forms a threshold is the lower edge of the cell its quantile falls in
    raw = np.quantile(p[y == 1], np.linspace(0.5, 0.9, t_exact.size), method="inverted_cdf")
    np.testing.assert_array_equal(t_exact, EDGES[np.searchsorted(EDGES, raw, side="right") - 1])
    np.testing.assert_array_equal(t_counts, t_exact)
    assert np.unique(t_counts).size == np.unique(raw).size
    np.testing.assert_allclose(r_counts, r_exact, rtol=1e-12)


def test_tail_reader_reads_the_same_rows_in_both_forms_on_a_few_hundred_rows():
    # one of 300 unlabeled rows moves a tail ratio by about 0.007: a threshold inside a
    # cell, splitting its rows, read 0.006-0.009 off on tables this small
    for seed in range(5):
        rng = np.random.default_rng(seed)
        p, y, _ = beta_mixture(rng, 450)
        counts = estimate_alpha(p, y, estimator="tail").alpha
        assert counts == pytest.approx(
            estimate_alpha(p, y, estimator="tail", exact=True).alpha, abs=1e-12
        )


def test_counts_of_partitions_add_up_to_the_counts_of_the_whole():
    rng = np.random.default_rng(5)
    p, y, _ = beta_mixture(rng, 5000)
    w = rng.poisson(1.0, p.size).astype(float)
    whole = ScoreCounts.from_scores(p, y, w)
    cuts = [0, 1234, 1235, 4000, p.size]
    parts = [ScoreCounts.from_scores(p[a:b], y[a:b], w[a:b]) for a, b in itertools.pairwise(cuts)]
    merged = parts[0] + parts[1] + parts[2] + parts[3]
    np.testing.assert_allclose(merged.cells, whole.cells, rtol=1e-12)
    np.testing.assert_allclose(merged.nodes, whole.nodes, rtol=1e-12)
    np.testing.assert_allclose(merged.sums, whole.sums, rtol=1e-12)
    assert (merged.low, merged.high) == (whole.low, whole.high)
    # an empty partition adds nothing
    empty = ScoreCounts.from_scores(p[:0], y[:0])
    assert (empty.low, empty.high) == (np.inf, -np.inf)
    assert (empty + whole).count(None) == whole.count(None) == w.sum()


def test_weights_count_a_row_as_often_as_it_is_repeated():
    rng = np.random.default_rng(6)
    p, y, _ = beta_mixture(rng, 3000)
    w = rng.poisson(1.0, p.size)
    weighted = ScoreCounts.from_scores(p, y, w)
    repeated = ScoreCounts.from_scores(np.repeat(p, w), np.repeat(y, w))
    np.testing.assert_allclose(weighted.cells, repeated.cells)
    np.testing.assert_allclose(weighted.nodes, repeated.nodes, rtol=1e-9)
    np.testing.assert_allclose(weighted.sums, repeated.sums, rtol=1e-12)
    assert weighted.high == repeated.high and weighted.low == repeated.low


@pytest.mark.parametrize("method", ["square_root", "sturges", "rice", "scott", "fd"])
def test_counts_answer_the_readers_questions_as_the_vectors_do(method):
    rng = np.random.default_rng(7)
    p, y, _ = beta_mixture(rng, 20000)
    counts, vectors = ScoreCounts.from_scores(p, y), ScoreVectors(p, y)
    for label in (0, 1, None):
        assert counts.count(label) == vectors.count(label)
    assert counts.bin_count(method) == vectors.bin_count(method)
    k = counts.bin_count(method)
    if k & (k - 1) == 0:  # a power of two: every bin edge is a cell edge
        np.testing.assert_allclose(counts.histogram(k), vectors.histogram(k), atol=1e-15)
    else:  # Sturges: a cell that straddles a bin edge counts in the lower bin
        np.testing.assert_allclose(counts.histogram(k), vectors.histogram(k), atol=2e-3)
    levels = np.linspace(0.05, 0.95, 19)
    for label in (0, 1):
        got, want = counts.quantiles(label, levels), vectors.quantiles(label, levels)
        np.testing.assert_array_equal(got, want)
        raw = np.quantile(p[y == label], levels, method="inverted_cdf")
        assert np.all(got <= raw) and np.all(raw - got < 1 / 4096)
        # at a cell's lower edge the counts and the vectors agree exactly
        np.testing.assert_allclose(
            counts.share_at_least(label, got), vectors.share_at_least(label, got), atol=1e-15
        )


def test_row_readers_need_the_rows():
    rng = np.random.default_rng(8)
    p, y, _ = beta_mixture(rng, 2000)
    from pulsnar_dask.core.alpha import read_scores

    with pytest.raises(ValueError, match="read the probabilities themselves"):
        read_scores(ScoreCounts.from_scores(p, y), estimator="bbe")
    # estimate_alpha gives them the rows while the kernel reads the counts
    assert estimate_alpha(p, y, estimator="valley").alpha == pytest.approx(
        estimate_alpha(p, y, estimator="valley", exact=True).alpha
    )
    with pytest.raises(ValueError, match="both labeled positives"):
        read_scores(ScoreCounts.from_scores(p[y == 1], y[y == 1]))


def test_shares_between_edges_count_from_the_cell_and_constant_scores_bin_alike():
    rng = np.random.default_rng(9)
    p, y, _ = beta_mixture(rng, 4000)
    counts, vectors = ScoreCounts.from_scores(p, y), ScoreVectors(p, y)
    inside = (EDGES[2000] + EDGES[2001]) / 2  # within one cell: off by that cell at most
    for label in (0, 1):
        cell = np.sum((p[y == label] >= EDGES[2000]) & (p[y == label] < EDGES[2001]))
        got = counts.share_at_least(label, np.array([inside, 1.0]))
        want = vectors.share_at_least(label, np.array([inside, 1.0]))
        assert abs(got[0] - want[0]) <= cell / np.sum(y == label)
        assert got[1] >= want[1]  # the last cell, [1 - 1e-7, 1]
    flat = np.full(50, 0.3)
    labels = np.r_[np.ones(25, np.int8), np.zeros(25, np.int8)]
    for method in ("scott", "fd"):  # no spread: the widest grid, whatever the rounding
        assert ScoreCounts.from_scores(flat, labels).bin_count(method) == 512
        assert ScoreVectors(flat, labels).bin_count(method) == 512


def test_auc_on_the_grid_is_the_exact_auc_where_rows_fall_in_cells_of_their_own():
    from pulsnar_dask.core.grid import EDGES, N_CELLS, cell_of
    from pulsnar_dask.core.metrics import roc_auc

    rng = np.random.default_rng(4)
    cells = np.sort(rng.choice(N_CELLS, 900, replace=False))
    p = EDGES[cells] + 1e-12  # one row a cell
    y = (rng.random(900) < 0.2 + 0.6 * (cells > N_CELLS / 2)).astype(np.int8)
    assert np.array_equal(cell_of(p), cells)
    counts = ScoreCounts.from_scores(p, y)
    assert counts.auc() == pytest.approx(roc_auc(y == 1, p), abs=1e-12)
    # on scores that share cells, within the cells' width
    q = rng.beta(2, 3, 20_000)
    z = (rng.random(20_000) < 0.4).astype(np.int8)
    q[z == 1] = rng.beta(3, 2, int(z.sum()))
    assert ScoreCounts.from_scores(q, z).auc() == pytest.approx(roc_auc(z == 1, q), abs=1e-3)
    assert np.isnan(ScoreCounts.from_scores(q[z == 0], z[z == 0]).auc())
