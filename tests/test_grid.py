import numpy as np
import pytest

from pulsnar_dask.core.grid import EDGES, N_CELLS, N_NODES, NODES, cell_of, node_weights
from pulsnar_dask.core.score_counts import ScoreCounts


def _searched(p):
    return np.minimum(np.searchsorted(EDGES, p, side="right") - 1, N_CELLS - 1)


def test_cells_counted_arithmetically_are_the_cells_searched():
    rng = np.random.default_rng(0)
    inner = EDGES[1:-1]
    p = np.r_[
        rng.random(200_000),
        1 / (1 + np.exp(-rng.normal(0, 8, 200_000))),
        EDGES,  # every edge itself, and an ulp either side of every inner one
        np.nextafter(inner, 0.0),
        np.nextafter(inner, 1.0),
        0.0,
        1.0,
    ]
    np.testing.assert_array_equal(cell_of(p), _searched(p))


def test_nodes_are_edges_and_take_each_weight_whole_or_split_between_two():
    assert np.all(np.diff(NODES) > 0) and np.isin(NODES, EDGES).all()
    assert NODES[0] == 0.0 and NODES[-1] == 1.0 and NODES.size == N_NODES
    rng = np.random.default_rng(1)
    p = np.r_[rng.random(5000), 1 / (1 + np.exp(-rng.normal(0, 9, 5000))), NODES, 0.0, 1.0]
    w = rng.poisson(1.0, p.size).astype(float)
    nodes = node_weights(p, weights=w)
    assert np.all(nodes >= 0)
    assert nodes.sum() == pytest.approx(w.sum(), rel=1e-12)
    # linear binning keeps the weighted mean
    assert nodes @ NODES == pytest.approx(p @ w, rel=1e-12)
    # a value on a node puts its whole weight there
    on = node_weights(NODES[[3, 500, N_NODES - 4]])
    np.testing.assert_array_equal(np.flatnonzero(on), [3, 500, N_NODES - 4])


def test_counts_from_kept_cells_are_the_counts():
    rng = np.random.default_rng(2)
    p, y = rng.random(3000), (rng.random(3000) < 0.3).astype(np.int8)
    w = rng.poisson(1.0, p.size)
    kept = ScoreCounts.from_scores(p, y, w, cell_of(p).astype(np.uint16))
    counted = ScoreCounts.from_scores(p, y, w)
    for name in ("cells", "nodes", "sums"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(counted, name))


@pytest.mark.parametrize("bad", [np.nan, -0.1, 1.5])
def test_counts_refuse_probabilities_outside_zero_one(bad):
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        ScoreCounts.from_scores(np.array([0.2, bad]), np.array([1, 0]))
