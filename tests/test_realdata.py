"""PU constructions of the real-data benchmarks (benchmarks.realdata)."""

import numpy as np
import pytest

from benchmarks.realdata import (
    MAX_HIDDEN_SHARE,
    REAL_SETS,
    hidden_counts,
    scar_pu_data,
    snar_pu_data,
)


def test_hidden_counts_follow_powers_of_two_from_the_rarest_class():
    counts = hidden_counts(np.array([5000, 1000, 3000]), 700)
    # ranked by size: 1000 -> 1/7, 3000 -> 2/7, 5000 -> 4/7
    np.testing.assert_array_equal(counts, [400, 100, 200])


def test_hidden_counts_move_what_a_class_cannot_hide_to_the_others():
    sizes = np.array([100, 2000, 5000])
    counts = hidden_counts(sizes, 3000)
    assert counts.sum() == 3000
    assert (counts <= np.floor(sizes * MAX_HIDDEN_SHARE)).all()
    assert counts[0] == 90  # capped at 90% of its 100 rows
    with pytest.raises(ValueError, match="can hide only"):
        hidden_counts(sizes, 6400)


@pytest.mark.parametrize("fraction", [0.01, 0.2, 0.5])
def test_snar_construction_hides_the_fraction_with_a_skewed_subtype_mix(fraction):
    classes = np.repeat([7, 1, 2, 3], [4000, 600, 1500, 2500])
    classes = np.random.default_rng(0).permutation(classes)
    X = np.arange(classes.size, dtype=np.float32)[:, None]
    d = snar_pu_data(X, classes, negative=7, fraction=fraction, random_state=1)
    unl = d.label == 0
    assert (d.true_label[classes == 7] == 0).all() and unl[classes == 7].all()
    m = int(4000 * fraction / (1 - fraction))
    assert int((d.true_label[unl] > 0).sum()) == m
    assert d.true_alpha == pytest.approx(m / (4000 + m))
    hidden = np.bincount(d.true_label[unl], minlength=4)[1:]
    np.testing.assert_array_equal(hidden, hidden_counts(np.array([600, 1500, 2500]), m))
    assert hidden[0] <= hidden[1] <= hidden[2]
    # the same seed gives the same rows
    again = snar_pu_data(X, classes, negative=7, fraction=fraction, random_state=1)
    np.testing.assert_array_equal(again.label, d.label)


def test_scar_construction_hides_positives_at_random():
    positive = np.r_[np.ones(3000, bool), np.zeros(2000, bool)]
    X = np.zeros((positive.size, 2), np.float32)
    d = scar_pu_data(X, positive, 0.3, random_state=0)
    assert d.true_alpha == pytest.approx(857 / 2857)
    assert (d.label[~positive] == 0).all()
    with pytest.raises(ValueError, match="can hide only"):
        scar_pu_data(X, positive, 0.6)


def test_registry_names_each_set_once_with_a_scenario():
    assert set(REAL_SETS) == {
        "SNAR_shuttle", "SNAR_avila", "SNAR_gas", "SNAR_digits", "SNAR_segment", "SCAR_grid",
        "SCAR_bank", "SCAR_mushroom",
    }  # fmt: skip
    for name, spec in REAL_SETS.items():
        assert name.lower().startswith(spec.scenario)


def test_readers_parse_each_file_format(tmp_path):
    from benchmarks.realdata import (
        read_avila,
        read_bank,
        read_digits,
        read_gas,
        read_grid,
        read_mushroom,
        read_segment,
    )

    (tmp_path / "avila-tr.txt").write_text("0.1,0.2,A\n0.3,-0.4,F\n")
    (tmp_path / "avila-ts.txt").write_text("0.5,0.6,B\n")
    X, classes = read_avila(tmp_path)
    np.testing.assert_allclose(X, [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], rtol=1e-6)
    np.testing.assert_array_equal(classes, [0, 2, 1])  # A, F, B in alphabetical codes

    (tmp_path / "batch1.dat").write_text("2 1:1.5 3:-2.0\n")
    (tmp_path / "batch2.dat").write_text("5;50.00 128:7.0\n\n")
    X, classes = read_gas(tmp_path)
    assert X.shape == (2, 128) and list(classes) == [2, 5]
    assert X[0, 0] == 1.5 and X[0, 2] == -2.0 and X[1, 127] == 7.0 and X[0, 1] == 0

    (tmp_path / "stable.csv").write_text("1.0,2.0,0\n3.0,4.0,1\n")
    X, classes = read_grid(tmp_path)
    assert X.shape == (2, 2) and list(classes) == [0, 1]

    (tmp_path / "bank-additional.csv").write_text(
        '"age";"job";"y"\n30;"admin.";"no"\n41;"services";"yes"\n50;"admin.";"no"\n'
    )
    X, classes = read_bank(tmp_path)
    np.testing.assert_array_equal(X, [[30, 0], [41, 1], [50, 0]])
    assert list(classes) == [0, 1, 0]

    (tmp_path / "agaricus-lepiota.data").write_text("p,x,s\ne,b,s\np,x,y\n")
    X, classes = read_mushroom(tmp_path)
    np.testing.assert_array_equal(X, [[0, 0], [1, 0], [0, 1]])
    assert list(classes) == [1, 0, 1]

    X, classes = read_digits()  # scikit-learn's copy
    assert X.shape == (1797, 64) and X.dtype == np.float32 and X.max() == 16
    assert np.bincount(classes).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]

    X, classes = read_segment()  # the package's copy
    assert X.shape == (2310, 18) and X.dtype == np.float32
    assert np.bincount(classes).tolist() == [330] * 7
    # intensity-mean is the mean of the raw red, green and blue means
    np.testing.assert_allclose(X[:, 8], X[:, 9:12].mean(axis=1), atol=1e-3)


def test_held_out_panel_reads_its_bundled_tables_and_builds_both_constructions():
    from benchmarks.realdata import HELD_OUT_SETS, read_bundled

    assert set(HELD_OUT_SETS).isdisjoint(REAL_SETS)
    X, classes = read_bundled("vehicle")
    assert X.shape == (846, 18) and X.dtype == np.float32
    assert np.bincount(classes).tolist() == [218, 212, 217, 199]  # bus, opel, saab, van
    X, classes = read_bundled("german")  # text columns as codes in order of appearance
    assert X.shape == (1000, 20) and np.bincount(classes).tolist() == [700, 300]
    assert X[:3, 0].tolist() == [0, 1, 2]  # A11, A12, A14
    for name, spec in HELD_OUT_SETS.items():
        d = spec.pu_data("", 0.3, random_state=5)  # bundled: no data folder is read
        assert name.lower().startswith(spec.scenario)
        assert abs(d.true_alpha - 0.3) < 0.002, name
        assert all(np.unique(d.X[:, c]).size < 20 for c in spec.categorical), name
