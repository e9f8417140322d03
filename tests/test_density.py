import numpy as np
import pytest
from scipy import stats

from pulsnar_dask.core.density import (
    KernelSample,
    beta_kernel_density,
    histogram_density,
    select_bandwidth,
)


def test_histogram_density_sums_to_one_and_counts_bins():
    p = np.array([0.0, 0.1, 0.26, 0.5, 0.99, 1.0])
    h = histogram_density(p, 4)
    assert h.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(h, np.array([2, 1, 1, 2]) / 6)


def test_exact_kernel_matches_scipy_beta_pdf():
    rng = np.random.default_rng(3)
    p = rng.beta(2, 5, 300)
    grid = np.linspace(0, 1, 33)
    bw = 0.07
    expected = np.array([stats.beta.pdf(p, 1 + z / bw, 1 + (1 - z) / bw).mean() for z in grid])
    got = beta_kernel_density(KernelSample.from_probabilities(p, exact=True), grid, bw)
    assert got.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(got, expected / expected.sum(), rtol=1e-9)


@pytest.mark.parametrize("bw", [0.01, 0.05, 0.3])
def test_binned_kernel_is_close_to_exact(bw):
    p = np.random.default_rng(4).beta(2, 5, 20000)
    grid = np.linspace(0, 1, 64)
    exact = beta_kernel_density(KernelSample.from_probabilities(p, exact=True), grid, bw)
    fast = beta_kernel_density(KernelSample.from_probabilities(p), grid, bw)
    assert np.max(np.abs(fast - exact)) < 1e-3 * exact.max()


@pytest.mark.parametrize("side", ["near 0", "near 1"])
def test_binned_kernel_follows_scores_piled_within_a_thousandth_of_an_end(side):
    # 1024 equally spaced nodes read these 12-37% off the exact kernel's peak; the
    # nodes' logit steps near 0 and 1 keep them within 0.2%
    d = 10 ** np.random.default_rng(10).uniform(-5, -3, 5000)
    p = d if side == "near 0" else 1 - d
    grid = np.linspace(0, 1, 64)
    for bw in (0.02, 0.05, 0.1):
        for norm in ("point", "grid"):
            exact = beta_kernel_density(
                KernelSample.from_probabilities(p, exact=True), grid, bw, norm
            )
            fast = beta_kernel_density(KernelSample.from_probabilities(p), grid, bw, norm)
            assert np.max(np.abs(fast - exact)) < 2e-3 * exact.max(), (bw, norm)


def test_linear_binning_keeps_total_weight_and_mean():
    p = np.random.default_rng(5).random(1000)
    sample = KernelSample.from_probabilities(p)
    assert sample.weights.sum() == pytest.approx(1000)
    points = np.exp(sample.log_p)
    assert np.sum(points * sample.weights) / 1000 == pytest.approx(p.mean(), rel=1e-9)


def test_node_weights_of_two_samples_add_up_to_the_pooled_sample():
    from pulsnar_dask.core.grid import node_weights

    rng = np.random.default_rng(7)
    a, b = rng.beta(5, 2, 3000), rng.beta(2, 5, 20000)
    pooled = node_weights(np.r_[a, b])
    np.testing.assert_allclose(node_weights(a) + node_weights(b), pooled, rtol=1e-12)
    grid = np.linspace(0, 1, 40)
    summed = KernelSample.from_node_weights(node_weights(a) + node_weights(b))
    np.testing.assert_allclose(
        beta_kernel_density(summed, grid, 0.05, "point"),
        beta_kernel_density(KernelSample.from_probabilities(np.r_[a, b]), grid, 0.05, "point"),
        rtol=1e-10,
    )


def test_bandwidth_search_recovers_a_smooth_density_better_than_the_bounds():
    rng = np.random.default_rng(6)
    p = rng.beta(2, 6, 5000)
    grid = np.linspace(0, 1, 32)
    sample = KernelSample.from_probabilities(p)
    target = histogram_density(p, 32)
    bounds = (0.01, 0.5)
    local = select_bandwidth(sample, target, grid, search="local", bounds=bounds)
    glob = select_bandwidth(sample, target, grid, search="global", bounds=bounds, random_state=0)
    assert 0.01 < local < 0.5
    assert local == pytest.approx(glob, abs=2e-3)

    def err(bw):
        return np.mean((beta_kernel_density(sample, grid, bw) - target) ** 2)

    assert err(local) <= min(err(0.01), err(0.5))


def test_bandwidth_options_are_checked():
    sample = KernelSample.from_probabilities(np.array([0.1, 0.9]))
    with pytest.raises(ValueError, match="unknown bandwidth search"):
        select_bandwidth(sample, np.ones(4) / 4, np.linspace(0, 1, 4), search="x")
    with pytest.raises(ValueError, match="unknown bandwidth error"):
        select_bandwidth(sample, np.ones(4) / 4, np.linspace(0, 1, 4), error="x")


def test_point_normalisation_keeps_mixtures_mixtures():
    rng = np.random.default_rng(7)
    spike, spread = rng.beta(0.3, 20, 3000), rng.beta(5, 2, 1000)
    grid = np.linspace(0, 1, 32)
    for norm, exact in (("point", True), ("grid", False)):
        parts = [
            beta_kernel_density(KernelSample.from_probabilities(s), grid, 0.05, norm)
            for s in (spike, spread)
        ]
        mixed = beta_kernel_density(
            KernelSample.from_probabilities(np.r_[spike, spread]), grid, 0.05, norm
        )
        ok = np.allclose(mixed, 0.75 * parts[0] + 0.25 * parts[1], rtol=1e-9)
        assert ok == exact, norm


def test_unknown_kernel_normalisation():
    with pytest.raises(ValueError, match="unknown kernel normalization"):
        beta_kernel_density(
            KernelSample.from_probabilities(np.array([0.5])), np.linspace(0, 1, 4), 0.1, "x"
        )
