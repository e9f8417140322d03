"""The shuttle benchmark's PU construction (the paper's SNAR shuttle data)."""

import numpy as np
import pytest

from benchmarks.shuttle import read_shuttle, shuttle_pu_data

# The class sizes of shuttle.trn.
SIZES = {1: 34108, 2: 37, 3: 132, 4: 6748, 5: 2458, 6: 6, 7: 11}


@pytest.fixture(scope="module")
def shuttle_like():
    classes = np.concatenate([np.full(n, c) for c, n in SIZES.items()])
    classes = np.random.default_rng(0).permutation(classes)
    X = np.arange(classes.size * 9, dtype=np.float32).reshape(-1, 9)
    return X, classes


@pytest.mark.parametrize("fraction", [0.01, 0.05, 0.10, 0.15])
def test_unlabeled_hold_the_fraction_with_a_skewed_subtype_mix(shuttle_like, fraction):
    X, classes = shuttle_like
    d = shuttle_pu_data(X, classes, fraction, random_state=3)
    unl = d.label == 0
    assert d.true_alpha == pytest.approx(fraction, abs=1 / unl.sum())
    assert (d.true_label[classes == 1] == 0).all() and (d.label[classes == 1] == 0).all()
    hidden = np.bincount(d.true_label[unl], minlength=8)
    for c in (2, 3, 6, 7):
        assert int(SIZES[c] * fraction) <= hidden[c] < SIZES[c]
    kept = np.bincount(d.true_label[~unl], minlength=8)
    # Equal numbers of classes 4 and 5 stay labeled, or (when class 5 is too small for
    # that) equal numbers of them are hidden.
    assert abs(kept[4] - kept[5]) <= 1 or abs(hidden[4] - hidden[5]) <= 1
    np.testing.assert_array_equal(d.X, X)
    again = shuttle_pu_data(X, classes, fraction, random_state=3)
    np.testing.assert_array_equal(again.label, d.label)
    assert (shuttle_pu_data(X, classes, fraction, random_state=4).label != d.label).any()


def test_too_large_a_fraction_is_refused(shuttle_like):
    X, classes = shuttle_like
    with pytest.raises(ValueError, match="large classes hold"):
        shuttle_pu_data(X, classes, 0.5)
    with pytest.raises(ValueError, match="fraction must be in"):
        shuttle_pu_data(X, classes, 1.0)


def test_read_shuttle(tmp_path):
    rows = np.array([[50, 21, 77, 0, 28, 0, 27, 48, 22, 2], [55, 0, 92, 0, 0, 26, 36, 92, 56, 4]])
    np.savetxt(tmp_path / "s.trn", rows, fmt="%d")
    X, classes = read_shuttle(tmp_path / "s.trn")
    assert X.shape == (2, 9) and X.dtype == np.float32 and classes.tolist() == [2, 4]
    np.savetxt(tmp_path / "bad.trn", rows[:, :8], fmt="%d")
    with pytest.raises(ValueError, match="expected 10 columns"):
        read_shuttle(tmp_path / "bad.trn")
