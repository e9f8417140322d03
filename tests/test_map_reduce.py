"""A scoring's rows reduced piece by piece (pulsnar_dask.core.map_reduce)."""

import numpy as np
import pytest

from pulsnar_dask.core.folds import id_checksum
from pulsnar_dask.core.map_reduce import in_memory, piece_tally, tally_of


def test_tally_of_pieces_is_the_tally_of_the_whole_rows():
    rng = np.random.default_rng(2)
    ids = rng.permutation(5000) * 7
    y = (rng.random(5000) < 0.2).astype(np.int8)
    p = rng.random(5000)
    whole = tally_of(p, y, ids)
    cuts = [ids % 4 == k for k in range(4)]
    pieces = tuple((p[c], y[c], ids[c]) for c in cuts)
    (parted,) = in_memory(piece_tally, lambda t: t.in_id_order(), [pieces], [()])
    np.testing.assert_array_equal(parted.positive_ids, np.sort(ids[y == 1]))
    np.testing.assert_array_equal(parted.positive_probabilities, whole.positive_probabilities)
    np.testing.assert_array_equal(parted.counts.cells, whole.counts.cells)
    assert parted.counts.sums == pytest.approx(whole.counts.sums, rel=1e-12)
    assert parted.unlabeled_checksum == whole.unlabeled_checksum == id_checksum(ids[y == 0])


def test_id_checksum_tells_other_rows_apart_in_any_order():
    ids = np.arange(1000, 2000)
    assert id_checksum(ids[::-1]) == id_checksum(ids)
    twice = ids.copy()
    twice[0] = twice[1]  # one row missing, another counted twice
    assert id_checksum(twice) != id_checksum(ids)
    assert id_checksum(ids + 1) != id_checksum(ids)
