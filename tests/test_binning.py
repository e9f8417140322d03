import numpy as np
import pytest

from pulsnar_dask.core.binning import MAX_BINS, bin_count, nearest_power_of_two, raw_bin_count


@pytest.mark.parametrize(
    ("value", "expected"), [(1, 1), (3, 4), (5, 4), (6, 8), (24, 32), (20, 16), (700, 512)]
)
def test_nearest_power_of_two(value, expected):
    assert nearest_power_of_two(value) == expected


# p = linspace(0, 1, 1000): sd = 0.28896, IQR = 0.5, n^(1/3) = 10
@pytest.mark.parametrize(
    ("method", "raw", "k"),
    [
        ("square_root", np.sqrt(1000), 32),
        ("sturges", 11.0, 11),
        ("rice", 20.0, 16),
        ("scott", 1 / (3.5 * np.std(np.linspace(0, 1, 1000)) / 10), 8),
        ("fd", 10.0, 8),
    ],
)
def test_bin_rules_on_fixed_input(method, raw, k):
    p = np.linspace(0, 1, 1000)
    assert raw_bin_count(p, method) == pytest.approx(raw, rel=1e-9)
    assert bin_count(p, method) == k


def test_bin_count_is_capped_and_floored():
    assert bin_count(np.random.default_rng(0).random(10**6), "square_root") == MAX_BINS
    assert bin_count(np.full(100, 0.5), "scott") == MAX_BINS  # zero spread: no finite width
    assert bin_count(np.linspace(0, 1, 8), "sturges") == 4


def test_unknown_bin_method_is_refused():
    with pytest.raises(ValueError, match="unknown bin method 'nope'"):
        bin_count(np.linspace(0, 1, 10), "nope")
