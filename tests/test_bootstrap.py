"""The Poisson bootstrap's weights (pulsnar_dask.core.bootstrap)."""

import numpy as np
import pytest

from pulsnar_dask.core.bootstrap import poisson_weights
from pulsnar_dask.core.folds import row_hash


def test_weights_are_poisson_one_and_depend_only_on_the_row():
    ids = np.arange(200_000, dtype=np.int64) * 7 + 3
    w = poisson_weights(ids, 11, 4)
    assert w.dtype == np.int64 and w.min() == 0
    assert w.mean() == pytest.approx(1.0, abs=0.01) and w.var() == pytest.approx(1.0, abs=0.02)
    assert np.mean(w == 0) == pytest.approx(np.exp(-1), abs=0.005)
    # a row's weight is its own, whatever rows are beside it and in what order
    order = np.random.default_rng(0).permutation(ids.size)
    np.testing.assert_array_equal(poisson_weights(ids[order], 11, 4), w[order])
    np.testing.assert_array_equal(poisson_weights(ids[:10], 11, 4), w[:10])
    # resamples and seeds draw apart
    for other in (poisson_weights(ids, 11, 5), poisson_weights(ids, 12, 4)):
        assert np.corrcoef(w, other)[0, 1] == pytest.approx(0.0, abs=0.01)
    # and apart from the folds, which hash the same (id, seed)
    assert np.corrcoef(w, (row_hash(ids, 11) % np.uint64(5)).astype(float))[0, 1] == (
        pytest.approx(0.0, abs=0.01)
    )


def test_ids_of_any_type_are_weighed_and_bad_resamples_refused():
    names = np.array([f"patient-{i}" for i in range(5000)])
    w = poisson_weights(names, 0, 0)
    assert w.mean() == pytest.approx(1.0, abs=0.05)
    np.testing.assert_array_equal(poisson_weights(names[::-1], 0, 0), w[::-1])
    with pytest.raises(ValueError, match="resample must be non-negative"):
        poisson_weights(names, 0, -1)
