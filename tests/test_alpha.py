import numpy as np
import pytest
from conftest import beta_mixture

from pulsnar_dask import estimate_alpha
from pulsnar_dask.core.alpha import (
    CANDIDATES,
    alpha_from_objective,
    alpha_objective,
    region_mask,
)
from pulsnar_dask.core.grid import EDGES, cell_of
from pulsnar_dask.core.score_counts import ScoreVectors


def _agreement(sizes, seed):
    rng = np.random.default_rng(seed)
    for n in sizes:
        p, y, _ = beta_mixture(rng, int(n))
        fast = estimate_alpha(p, y)
        exact = estimate_alpha(p, y, exact=True)
        assert not fast.exact and exact.exact
        assert abs(fast.alpha - exact.alpha) <= 0.002, (n, fast.alpha, exact.alpha)


def test_fast_and_exact_alpha_agree_on_20_mixtures_up_to_100k():
    _agreement(np.geomspace(1e3, 1e5, 20), seed=11)  # to 1e6 in the slow run


@pytest.mark.slow
def test_fast_and_exact_alpha_agree_on_20_mixtures_up_to_1e6():
    _agreement(np.geomspace(1e3, 1e6, 20), seed=12)


@pytest.mark.parametrize("weight", [0.05, 0.2, 0.5, 0.8])
def test_alpha_recovers_the_mixing_weight_of_separated_mixtures(weight):
    rng = np.random.default_rng(int(weight * 100))
    n_pos, n_unl = 5000, 40000
    hidden = rng.random(n_unl) < weight
    unl = np.where(hidden, rng.beta(8, 1, n_unl), rng.beta(1, 8, n_unl))
    p = np.concatenate([rng.beta(8, 1, n_pos), unl])
    y = np.r_[np.ones(n_pos), np.zeros(n_unl)]
    result = estimate_alpha(p, y)
    assert result.alpha == pytest.approx(hidden.mean(), abs=0.015)


def test_objective_kinks_at_the_density_ratio_minimum():
    grid = np.linspace(0, 1, 8)
    f_p = np.array([0.0, 0.02, 0.04, 0.08, 0.12, 0.18, 0.24, 0.32])
    f_n = np.array([0.3, 0.25, 0.2, 0.12, 0.08, 0.05, 0.0, 0.0])
    f_u = 0.3 * f_p + 0.7 * f_n
    f_u /= f_u.sum()
    ratio = (f_u / np.where(f_p > 0, f_p, np.nan))[grid > 0.5]
    objective = alpha_objective(f_p / f_p.sum(), f_u, grid, "upper")
    alpha = alpha_from_objective(objective)
    assert alpha == pytest.approx(np.nanmin(ratio) * f_p.sum(), abs=2e-4)


def test_upper_and_all_regions_differ_when_the_ratio_dips_low():
    grid = np.linspace(0, 1, 6)
    f_p = np.array([0.1, 0.1, 0.2, 0.2, 0.2, 0.2])
    f_u = np.array([0.01, 0.19, 0.2, 0.2, 0.2, 0.2])
    upper = alpha_from_objective(alpha_objective(f_p, f_u, grid, "upper"))
    whole = alpha_from_objective(alpha_objective(f_p, f_u, grid, "all"))
    assert upper == pytest.approx(1.0 - 1e-4, abs=1e-3) or upper > 0.9
    assert whole == pytest.approx(0.1, abs=2e-4)


def _median(positives):
    """The positives' median as the readers take it (``inverted_cdf``)."""
    p = np.asarray(positives, dtype=float)
    return float(ScoreVectors(p, np.ones(p.size, np.int8)).quantiles(1, np.array([0.5]))[0])


def test_positives_region_starts_at_the_positives_median_above_one_half():
    grid = np.linspace(0, 1, 11)
    # median 0.7 (a grid point, kept), mean 0.53: the region starts at the median
    positives = np.array([0.05, 0.1, 0.7, 0.8, 0.99])
    np.testing.assert_array_equal(
        region_mask(grid, "positives", _median(positives)), grid >= grid[7] - 1e-12
    )
    # a median below 0.5: the reference's floor
    below = _median([0.1, 0.2, 0.3, 0.9])
    np.testing.assert_array_equal(region_mask(grid, "positives", below), grid > 0.5)
    # the tail reader's median (inverted_cdf): of 0.6 and 0.9, 0.6, not 0.75, at the
    # lower edge of its grid cell
    assert _median([0.6, 0.9]) == EDGES[cell_of(np.array([0.6]))][0]
    assert 0.6 - 1 / 4096 < _median([0.6, 0.9]) <= 0.6
    np.testing.assert_array_equal(region_mask(grid, "positives", 0.6), grid > 0.55)
    np.testing.assert_array_equal(region_mask(grid, "positives", 1.0), grid == 1)
    np.testing.assert_array_equal(region_mask(grid, "upper"), grid > 0.5)
    with pytest.raises(ValueError, match="needs the positives"):
        region_mask(grid, "positives")


def test_positives_region_skips_the_ratio_below_the_positives_median():
    grid = np.linspace(0, 1, 6)  # 0, 0.2, ..., 1
    positives = np.array([0.65, 0.9, 0.95, 0.97, 0.99])  # median 0.95
    # a thin density ratio of 0.02 at z = 0.6 (few positives and fewer hidden ones score
    # there); where the positives' upper half lies, at z = 1, it is 0.3
    f_p = np.array([0.0, 0.0, 0.0, 0.05, 0.05, 0.9])
    f_u = np.array([0.5, 0.2, 0.0, 0.001, 0.029, 0.27])
    upper = alpha_from_objective(alpha_objective(f_p, f_u, grid, "upper"))
    at_top = alpha_from_objective(alpha_objective(f_p, f_u, grid, "positives", _median(positives)))
    assert upper == pytest.approx(0.02, abs=2e-4)
    assert at_top == pytest.approx(0.3, abs=2e-4)


def test_estimate_alpha_takes_the_region_from_the_positives_probabilities():
    rng = np.random.default_rng(3)
    # positives' median about 0.92, all rows' about 0.2: the regions differ
    p = np.r_[rng.beta(9, 1, 400), rng.beta(9, 1, 400), rng.beta(1, 6, 3600)]
    y = np.r_[np.ones(400), np.zeros(4000)].astype(int)
    r = estimate_alpha(p, y, region="positives")
    assert r.region == "positives"
    expected = alpha_objective(
        r.density_positive, r.density_unlabeled, r.grid, "positives", _median(p[y == 1])
    )
    np.testing.assert_array_equal(r.objective, expected)
    pooled = alpha_objective(
        r.density_positive, r.density_unlabeled, r.grid, "positives", _median(p)
    )
    assert not np.array_equal(r.objective, pooled)


def test_result_keeps_what_plots_need():
    rng = np.random.default_rng(0)
    p, y, _ = beta_mixture(rng, 5000)
    r = estimate_alpha(p, y, bin_method="scott")
    assert isinstance(r.alpha, float)
    assert r.grid.shape == r.density_positive.shape == r.density_unlabeled.shape == (r.n_bins,)
    assert r.density_positive.sum() == pytest.approx(
        1
    ) and r.density_unlabeled.sum() == pytest.approx(1)
    assert r.objective.shape == CANDIDATES.shape
    assert 0.01 <= r.bandwidth <= 0.5


@pytest.mark.parametrize(
    ("p", "y", "message"),
    [
        ([0.1, 0.2], [1, 2], "labels must be 0"),
        ([0.1, 1.2], [1, 0], "within \\[0, 1\\]"),
        ([0.1, np.nan], [1, 0], "finite"),
        ([0.1, 0.2], [1, 1], "both labeled positives"),
        ([0.1, 0.2, 0.3], [1, 0], "differ in length"),
    ],
)
def test_bad_inputs_are_refused(p, y, message):
    with pytest.raises(ValueError, match=message):
        estimate_alpha(np.array(p), np.array(y))


def test_bad_options_are_refused():
    p, y = np.array([0.1, 0.9, 0.5]), np.array([0, 1, 0])
    with pytest.raises(ValueError, match="unknown bin method"):
        estimate_alpha(p, y, bin_method="x")
    with pytest.raises(ValueError, match="unknown alpha region"):
        estimate_alpha(p, y, region="x")
    # a setting is refused before the probabilities are looked at
    with pytest.raises(ValueError, match="unknown bin method 'x'"):
        estimate_alpha(np.array([0.2, 0.9]), np.array([0, 0]), bin_method="x")


def test_tail_ratios_known_answer():
    from pulsnar_dask.core.alpha import tail_ratios

    pos = np.arange(1, 11) / 10
    unl = np.array([0.55, 0.65, 0.95] + [0.05] * 7)
    p = np.r_[pos, unl]
    y = np.r_[np.ones(10), np.zeros(10)].astype(int)
    thresholds, ratios = tail_ratios(ScoreVectors(p, y), tail_fraction=0.1)
    # ten quantiles of the positives from the median to the 0.9 quantile, each at the
    # lower edge of its grid cell
    quantiles = np.array([0.5, 0.6, 0.6, 0.7, 0.7, 0.8, 0.8, 0.9, 0.9, 0.9])
    np.testing.assert_array_equal(thresholds, EDGES[cell_of(quantiles)])
    # P_U(p >= t) / P_P(p >= t) at 0.5 .. 0.9: 0.3/0.6, 0.2/0.5, 0.1/0.4, 0.1/0.3, 0.1/0.2
    expected = {0.5: 0.5, 0.6: 0.4, 0.7: 0.25, 0.8: 1 / 3, 0.9: 0.5}
    np.testing.assert_allclose(ratios, [expected[round(t, 1)] for t in thresholds])
    assert estimate_alpha(p, y, estimator="tail").alpha == pytest.approx(0.25)
    with pytest.raises(ValueError, match="tail_fraction"):
        tail_ratios(ScoreVectors(p, y), tail_fraction=0.5)


def test_tail_estimator_reads_the_share_at_the_top():
    """Hidden positives score like the labeled ones; negatives and another subtype stay
    below the positives' top decile: the tail sees the share, the kernel need not."""
    pos = np.linspace(0.3, 1.0, 1000)
    hidden = pos[::5]  # 200 rows, the positives' distribution
    rng = np.random.default_rng(0)
    others = np.r_[rng.uniform(0, 0.3, 500), rng.uniform(0.4, 0.7, 300)]
    p = np.r_[pos, hidden, others]
    y = np.r_[np.ones(1000), np.zeros(1000)].astype(int)
    est = estimate_alpha(p, y, estimator="tail")
    assert est.estimator == "tail" and est.alpha == pytest.approx(0.2, abs=0.01)
    assert est.tail_ratios.min() == pytest.approx(est.alpha)
    assert estimate_alpha(p, y).tail_ratios.size == 0
    with pytest.raises(ValueError, match="unknown alpha estimator"):
        estimate_alpha(p, y, estimator="median")


def test_best_bin_known_answer():
    """Ten positives, ten unlabeled: the bound (q_u + c) / (q_p - c) is smallest at the
    threshold 0.7, and BBE reads q_u / q_p there."""
    from pulsnar_dask.core.alpha import best_bin_ratios

    pos = np.arange(1, 11) / 10
    unl = np.array([0.55, 0.65, 0.95] + [0.05] * 7)
    p, y = np.r_[pos, unl], np.r_[np.ones(10), np.zeros(10)].astype(int)
    thresholds, ratios, best = best_bin_ratios(p, y, delta=0.9)
    c = np.sqrt(np.log(4 / 0.9) / 20)
    q_p = np.array([(pos >= t).mean() for t in thresholds])
    q_u = np.array([(unl >= t).mean() for t in thresholds])
    bound = np.where(q_p > c, (q_u + c) / (q_p - c), np.inf)
    assert best == int(np.argmin(bound))
    np.testing.assert_allclose(ratios, q_u / q_p)
    assert thresholds[best] == pytest.approx(0.1)  # c = 0.27: only wide bins are vouched for
    with pytest.raises(ValueError, match="delta"):
        best_bin_ratios(p, y, delta=1.5)


@pytest.mark.parametrize("weight", [0.02, 0.1, 0.3, 0.5])
def test_best_bin_is_unbiased_where_picking_a_bin_on_the_same_rows_is_not(weight):
    """Hidden positives score like the labeled ones; the negatives and a second subtype
    stay below 0.7. Over 16 draws cross-fitted BBE is within 0.025 of the share every
    time and its mean error within 0.004; read on the rows that chose the bin, the
    ratio is low on average (the bin is chosen where the positives' tail share is high
    by chance)."""
    from pulsnar_dask.core.alpha import best_bin_ratios

    errors = {"bbe": [], "same_rows": []}
    for seed in range(16):
        rng = np.random.default_rng(seed)
        n_pos, n_unl = 1000, 8000
        hidden = rng.random(n_unl) < weight
        other = rng.random(n_unl) < 0.2
        unl = np.where(
            hidden,
            rng.beta(6, 1.5, n_unl),
            np.where(other, rng.uniform(0.3, 0.7, n_unl), rng.beta(1, 6, n_unl)),
        )
        p = np.r_[rng.beta(6, 1.5, n_pos), unl]
        y = np.r_[np.ones(n_pos), np.zeros(n_unl)].astype(int)
        errors["bbe"].append(estimate_alpha(p, y, estimator="bbe").alpha - hidden.mean())
        _, ratios, best = best_bin_ratios(p, y)
        errors["same_rows"].append(ratios[best] - hidden.mean())
    bbe, same_rows = np.array(errors["bbe"]), np.array(errors["same_rows"])
    assert np.abs(bbe).max() <= 0.025, bbe
    assert abs(bbe.mean()) <= 0.004, bbe
    if weight >= 0.3:
        assert same_rows.mean() < -0.004 and same_rows.mean() < bbe.mean(), same_rows


def test_tail_ratios_count_the_unlabeled_tails_as_sorting_does():
    """The unlabeled tails are counted against the thresholds without sorting the rows:
    bit-identical to the sorted search, ties with the thresholds included."""
    from pulsnar_dask.core.alpha import tail_ratios

    rng = np.random.default_rng(11)
    for decimals in (1, 2, 3):  # rounded values tie with the thresholds
        p = np.round(np.r_[rng.beta(5, 2, 700), rng.beta(2, 5, 9000)], decimals)
        y = np.r_[np.ones(700, np.int8), np.zeros(9000, np.int8)]
        thresholds, ratios = tail_ratios(ScoreVectors(p, y), 0.1)
        pos, unl = np.sort(p[y == 1]), np.sort(p[y == 0])
        tail_p = 1.0 - np.searchsorted(pos, thresholds, side="left") / pos.size
        tail_u = 1.0 - np.searchsorted(unl, thresholds, side="left") / unl.size
        np.testing.assert_array_equal(ratios, tail_u / tail_p)


def _separated_subtypes(seed=0):
    """Scores on the logit scale: negatives far below three positive subtypes labeled at
    80%, 30% and 5% (the rarest labeled scores lowest, as a classifier scores them), each
    subtype's hidden rows scored like its labeled ones. Returns (p, y, true alpha)."""
    rng = np.random.default_rng(seed)
    sizes, labeled_share, centres = (1000, 1000, 1000), (0.8, 0.3, 0.05), (2.5, 0.5, -1.0)
    logits, labels = [rng.normal(-6.0, 0.8, 4000)], [np.zeros(4000, np.int8)]
    hidden = 0
    for n, share, centre in zip(sizes, labeled_share, centres, strict=True):
        n_labeled = round(n * share)
        logits.append(rng.normal(centre, 0.6, n))
        labels.append(np.r_[np.ones(n_labeled, np.int8), np.zeros(n - n_labeled, np.int8)])
        hidden += n - n_labeled
    x, y = np.concatenate(logits), np.concatenate(labels)
    return 1 / (1 + np.exp(-x)), y, hidden / np.sum(y == 0)


def test_valley_reads_every_subtype_where_the_kernel_reads_the_best_labeled():
    from pulsnar_dask.core.alpha import valley_cut

    p, y, truth = _separated_subtypes()
    cut = valley_cut(p, y)
    assert cut.depth < 0.05 and cut.labeled_below < 0.01
    # the dip lies in the gap: above nearly every negative, below nearly every positive
    assert 1 / (1 + np.exp(6.0 - 3 * 0.8)) < cut.cut < 1 / (1 + np.exp(1.0 + 3 * 0.6))
    assert cut.alpha == pytest.approx(truth, abs=0.01)
    # the same through estimate_alpha, which keeps the cut as its one threshold
    est = estimate_alpha(p, y, estimator="valley")
    assert est.estimator == "valley" and est.alpha == cut.alpha
    np.testing.assert_array_equal(est.tail_thresholds, [cut.cut])
    # one labeling rate for all: the readers of the ratio at the top read it far lower
    for reader in ("kernel", "tail"):
        assert estimate_alpha(p, y, estimator=reader).alpha < truth - 0.2, reader


def test_valley_counts_the_labeled_share_below_the_cut():
    """P_U(p > cut) / P_P(p > cut) by hand: hidden positives below the cut are counted in
    the share the labeled ones have there."""
    from pulsnar_dask.core.alpha import valley_cut

    p, y, _ = _separated_subtypes(seed=1)
    cut = valley_cut(p, y)
    above_u, above_p = np.mean(p[y == 0] > cut.cut), np.mean(p[y == 1] > cut.cut)
    assert cut.alpha == pytest.approx(above_u / above_p, rel=1e-12)
    assert cut.labeled_below == np.mean(p[y == 1] <= cut.cut)  # counted, not 1 - above


def test_no_valley_where_the_scores_run_into_the_positives():
    """Overlapping scores (SCAR, no gap): the unlabeled rows' density falls without a dip
    until the positives' median, so the cut is not plain."""
    from pulsnar_dask.core.alpha import valley_cut

    rng = np.random.default_rng(2)
    x = np.r_[rng.normal(1.0, 1.0, 2000), rng.normal(1.0, 1.0, 500), rng.normal(0.0, 1.0, 4000)]
    y = np.r_[np.ones(2000, np.int8), np.zeros(4500, np.int8)]
    cut = valley_cut(1 / (1 + np.exp(-x)), y)
    assert cut.labeled_below > 0.2 or cut.depth > 0.5
    # every unlabeled row above the positives' median: no mode below it, no dip at all
    p = np.r_[np.full(10, 0.2), np.full(10, 0.9)]
    y = np.r_[np.ones(10, np.int8), np.zeros(10, np.int8)]
    flat = valley_cut(p, y)
    assert flat.depth == 1.0
    with pytest.raises(ValueError, match="finite"):
        valley_cut(np.array([0.1, np.nan]), np.array([1, 0]))


def test_binned_density_matches_the_gaussian_kernel_sum():
    """The valley's density is a binned kernel sum: on the grid it matches the exact sum of
    Gaussians with the same (Scott) bandwidth to within the binning's error."""
    from pulsnar_dask.core.alpha import _smoothed_counts

    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(-4, 1, 3000), rng.normal(2, 0.5, 1000)]
    grid = np.linspace(-7, 4, 512)
    binned = _smoothed_counts(x, grid)
    bandwidth = np.std(x) * x.size ** (-1 / 5)
    exact = np.exp(-0.5 * ((grid[:, None] - x[None, :]) / bandwidth) ** 2).sum(axis=1)
    np.testing.assert_allclose(binned, exact, rtol=0.02, atol=0.01 * exact.max())


def test_valley_holds_at_its_limits_and_where_positives_saturate():
    """Few rows spread far (a kernel wider than the grid), exactly 5% of the labeled
    positives below the cut, and positives at the clipped top of the logit scale."""
    from pulsnar_dask.core.alpha import VALLEY_GRID, _smoothed_counts, valley_cut

    rng = np.random.default_rng(4)
    spread = np.r_[rng.normal(-5, 0.3, 50), rng.normal(6, 0.3, 50)]
    short = np.linspace(-0.5, 0.5, VALLEY_GRID)  # the kernel reaches far past both ends
    binned = _smoothed_counts(spread, short)
    step = short[1] - short[0]
    cells = np.histogram(spread, np.append(short - step / 2, short[-1] + step / 2))[0]
    bandwidth = np.std(spread) * spread.size ** (-1 / 5)
    direct = cells[None, :] * np.exp(-0.5 * ((short[:, None] - short[None, :]) / bandwidth) ** 2)
    np.testing.assert_allclose(binned, direct.sum(axis=1), rtol=1e-9, atol=1e-12)
    # 600 labeled positives, 30 of them (5% exactly) among the negatives' scores
    x = np.r_[rng.normal(3, 0.5, 570), rng.normal(-5, 0.5, 30), rng.normal(-5, 0.5, 3000)]
    x = np.r_[x, rng.normal(3, 0.5, 1000)]
    y = np.r_[np.ones(600, np.int8), np.zeros(4000, np.int8)]
    cut = valley_cut(1 / (1 + np.exp(-x)), y)
    assert cut.labeled_below == 0.05 and cut.depth < 0.3
    # 1000 of 4000 unlabeled rows above, over the 95% of the labeled positives above
    assert cut.alpha == pytest.approx(0.25 / 0.95)
    # positives all at 1.0 (their logit clipped): the dip below them is still found
    p = np.r_[np.ones(200), np.ones(50), rng.uniform(0, 0.05, 150)]
    y = np.r_[np.ones(200, np.int8), np.zeros(200, np.int8)]
    saturated = valley_cut(p, y)
    assert saturated.depth < 0.3 and saturated.alpha == pytest.approx(0.25)
