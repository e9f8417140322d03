from dataclasses import replace

import numpy as np
import pytest

from pulsnar_dask.core.calibration import (
    _run_starts,
    calibrate,
    expected_calibration_error,
    fit_calibration_map,
    flip_bins,
    flip_labels,
    flip_shares,
    flips_per_bin,
    isotonic_thresholds,
)
from pulsnar_dask.core.combine import piece_outputs
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.map_reduce import identity, in_memory
from pulsnar_dask.core.subproblem import (
    estimate_subproblem,
    subproblem_claims,
    subproblems_calibration,
)


def test_flips_per_bin_sums_exactly_and_follows_the_histogram():
    pos = np.array([0.05] * 1 + [0.55] * 3 + [0.95] * 6)
    wanted = flips_per_bin(pos, 7, n_bins=10)
    assert wanted.sum() == 7
    # shares 0.7, 2.1, 4.2 -> floors 0, 2, 4 and the one left goes to the largest remainder
    assert wanted.tolist() == [1, 0, 0, 0, 0, 2, 0, 0, 0, 4]


@pytest.mark.parametrize("alpha", [0.013, 0.1, 0.25])
def test_flip_labels_flips_round_alpha_u_and_matches_the_positive_histogram(alpha):
    rng = np.random.default_rng(1)
    pos = rng.beta(5, 2, 3000)
    unl = rng.random(100_000)  # every bin has ~1000 rows: no shortfall
    flipped = flip_labels(pos, unl, alpha, n_bins=100, random_state=0)
    n = int(np.round(alpha * unl.size))
    assert flipped.sum() == n
    got = np.bincount(np.minimum((unl[flipped] * 100).astype(int), 99), minlength=100)
    np.testing.assert_array_equal(got, flips_per_bin(pos, n, 100))


def test_flip_labels_carries_a_shortfall_down():
    pos = np.full(100, 0.95)  # all wanted flips are in the top bin
    unl = np.r_[np.full(3, 0.97), np.full(50, 0.42), np.full(50, 0.11)]
    flipped = flip_labels(pos, unl, alpha=0.2, n_bins=10, random_state=0)
    assert flipped.sum() == round(0.2 * unl.size) == 21
    assert flipped[:3].all()  # the whole top bin
    assert flipped[3:53].sum() == 18  # the shortfall lands in the next non-empty bin
    assert not flipped[53:].any()


def test_flip_labels_is_reproducible():
    rng = np.random.default_rng(2)
    pos, unl = rng.random(500), rng.random(2000)
    a = flip_labels(pos, unl, 0.3, random_state=7)
    b = flip_labels(pos, unl, 0.3, random_state=7)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["isotonic", "sigmoid"])
@pytest.mark.parametrize("data", ["PU", "U"])
def test_calibrate_returns_monotone_probabilities_with_the_flipped_mass(method, data):
    rng = np.random.default_rng(3)
    p = np.r_[rng.beta(5, 2, 1000), rng.beta(2, 5, 4000)]
    y = np.r_[np.ones(1000), np.zeros(4000)]
    cal = calibrate(p, y, alpha=0.2, method=method, data=data)
    assert cal.shape == p.shape and cal.min() >= 0 and cal.max() <= 1
    order = np.argsort(p)
    assert np.all(np.diff(cal[order]) >= -1e-12)
    if method == "isotonic":
        # isotonic regression preserves the mean of the labels it was fitted on
        fitted = np.ones(p.size, bool) if data == "PU" else y == 0
        expected = (1000 * (data == "PU") + round(0.2 * 4000)) / fitted.sum()
        assert cal[fitted].mean() == pytest.approx(expected)


def test_calibrate_rejects_unknown_options():
    p, y = np.array([0.2, 0.8]), np.array([0, 1])
    with pytest.raises(ValueError, match="unknown calibration method"):
        calibrate(p, y, 0.1, method="beta")
    with pytest.raises(ValueError, match="unknown calibration data"):
        calibrate(p, y, 0.1, data="P")


def _outputs(row_ids, subs, config, seed, claim_alphas=None):
    """The run's outputs of subproblems held here, on ``row_ids``: calibrated, and the
    rows each subproblem claims at ``claim_alphas`` (None: its own alpha)."""
    calibration = subproblems_calibration(subs, config)
    claims = subproblem_claims(subs, claim_alphas)
    pieces = [s.pieces for s in subs]
    (out,) = in_memory(piece_outputs, identity, pieces, [(calibration, claims, seed)])
    return out.on(row_ids)


def _pieces(ids, labels, *probabilities):
    """One partition's rows of each subproblem, every one holding ``ids``."""
    return [(np.asarray(p, dtype=float), labels, ids) for p in probabilities]


def test_combination_formula():
    ids, labels = np.arange(4), np.array([0, 0, 0, 0])
    p = np.array([[0.5, 0.2, 0.0, 0.3], [0.5, 0.0, 1.0, 0.3]])
    out = piece_outputs(_pieces(ids, labels, *p), None, None, 0)
    np.testing.assert_allclose(out.probability, [0.75, 0.2, 1.0, 1 - 0.7 * 0.7])
    assert out.calibrated is None and out.claimed is None


def test_outputs_put_each_subproblems_positives_after_the_unlabeled_rows():
    # ids 10 and 13 unlabeled; 12 a positive of the first, 11 of the second
    first = (np.array([0.2, 0.9, 0.5]), np.array([0, 1, 0]), np.array([10, 12, 13]))
    second = (np.array([0.5, 0.6, 0.5]), np.array([0, 1, 0]), np.array([10, 11, 13]))
    out = piece_outputs([first, second], None, None, 0)
    assert out.row_ids.tolist() == [10, 13, 12, 11]
    np.testing.assert_allclose(out.probability, [1 - 0.8 * 0.5, 0.75, 0.9, 0.6])


def test_row_outputs_align_by_id_and_mark_unseen_rows():
    pieces = [_pieces(np.array([13, 10]), np.array([0, 0]), [0.5, 0.2])]
    more = [_pieces(np.array([12]), np.array([0]), [0.4])]
    out = (piece_outputs(pieces[0], None, None, 0) + piece_outputs(more[0], None, None, 0)).on(
        np.array([10, 11, 12, 13])
    )
    np.testing.assert_allclose(out.probability[[0, 2, 3]], [0.2, 0.4, 0.5])
    assert np.isnan(out.probability[1])


def test_every_subproblem_must_hold_the_same_unlabeled_rows():
    first = (np.array([0.2, 0.5]), np.array([0, 0]), np.array([10, 13]))
    second = (np.array([0.2, 0.5]), np.array([0, 0]), np.array([10, 14]))
    with pytest.raises(ValueError, match="same unlabeled rows"):
        piece_outputs([first, second], None, None, 0)


def test_recovered_labels_flip_each_subproblems_share_by_its_own_ranking():
    # rows (ascending ids): 0 and 5 labeled positives, 1-4 unlabeled
    y = np.array([1, 0, 0, 0, 0, 1])
    ids = np.arange(6)
    config = PUConfig()

    def recovered(subs, alphas):
        return np.where(_outputs(ids, subs, config, 0, alphas).claimed, 1, y)

    one = estimate_subproblem(ids, y, np.array([0.9, 0.1, 0.8, 0.3, 0.7, 0.95]), config, 0)
    np.testing.assert_array_equal(recovered([one], [0.5]), [1, 0, 1, 0, 1, 1])
    # two clusters, each with its own positive: the first claims half of U by its
    # ranking (rows 2, 4), the second a quarter by its own (row 1)
    first = estimate_subproblem(ids[:5], y[:5], np.array([0.9, 0.1, 0.8, 0.3, 0.7]), config, 0)
    keep = np.array([1, 2, 3, 4, 5])
    second_p = np.array([0.9, 0.2, 0.1, 0.05, 0.9])
    second = estimate_subproblem(ids[keep], y[keep], second_p, config, 0)
    np.testing.assert_array_equal(recovered([first, second], [0.5, 0.25]), [1, 1, 1, 0, 1, 1])
    # overlapping claims count once: both claim row 2
    second_p = np.array([0.1, 0.9, 0.2, 0.05, 0.9])
    second = estimate_subproblem(ids[keep], y[keep], second_p, config, 0)
    np.testing.assert_array_equal(recovered([first, second], [0.5, 0.25]), [1, 0, 1, 0, 1, 1])
    assert y.tolist() == [1, 0, 0, 0, 0, 1]  # the input is left as it was


def test_calibration_at_given_alphas_is_that_of_the_subproblems_read_so():
    """``alphas`` calibrates a subproblem as though its alpha had been read so (what
    auto does where it reads the clusters' alpha off PULSCAR's scoring, and every method
    with iterations: their mean)."""
    rng = np.random.default_rng(0)
    y = (rng.random(400) < 0.3).astype(np.int8)
    p = np.clip(0.25 + 0.5 * y + rng.normal(0, 0.2, y.size), 0.001, 0.999)
    ids, config = np.arange(y.size), PUConfig()
    sub = estimate_subproblem(ids, y, p, config, 0)
    other = round(sub.alpha + 0.15, 4)
    read_so = replace(sub, estimate=replace(sub.estimate, alpha=other))

    def calibrated(subs, alphas=None):
        calibration = subproblems_calibration(subs, config, in_memory, alphas)
        (out,) = in_memory(
            piece_outputs, identity, [s.pieces for s in subs], [(calibration, None, 0)]
        )
        return out.on(ids).calibrated

    np.testing.assert_array_equal(calibrated([sub], [other]), calibrated([read_so]))
    np.testing.assert_array_equal(calibrated([sub], [sub.alpha]), calibrated([sub]))
    unlabeled = y == 0
    assert calibrated([sub], [other])[unlabeled].mean() > calibrated([sub])[unlabeled].mean()


def test_with_iterations_the_rows_are_calibrated_at_the_mean_alpha():
    """The rows' probabilities are the first iteration's; with iterations they are
    calibrated at alpha, the iterations' mean, not at the first iteration's own alpha."""
    from pulsnar_dask import PULSCAR, make_pu_data

    d = make_pu_data("scar", 600, 3000, 8, 0.3, random_state=0)
    three = PULSCAR(random_state=0, n_jobs=2, n_iterations=3, calibration="isotonic")
    three.fit(d.X, d.label)
    one = PULSCAR(random_state=0, n_jobs=2, calibration="isotonic").fit(d.X, d.label)
    np.testing.assert_array_equal(three.oof_proba_, one.oof_proba_)
    assert three.alphas_[0] == one.alpha_ and three.alpha_ == pytest.approx(three.alphas_.mean())
    assert abs(three.alpha_ - one.alpha_) > 0.01  # the two calibrations differ
    ids, config = np.arange(d.label.size), PUConfig()
    first = estimate_subproblem(ids, d.label, one.oof_proba_, config, 0)
    assert first.alpha == one.alpha_

    def calibrated(alpha):
        calibration = subproblems_calibration([first], config, in_memory, [alpha])
        (out,) = in_memory(piece_outputs, identity, [first.pieces], [(calibration, None, 0)])
        return out.on(ids).calibrated

    np.testing.assert_array_equal(three.calibrated_proba_, calibrated(three.alpha_))
    np.testing.assert_array_equal(one.calibrated_proba_, calibrated(one.alpha_))


def test_expected_calibration_error_known_value():
    y = np.array([0, 0, 1, 1])
    p = np.array([0.05, 0.15, 0.85, 0.95])
    # two bins: |0 - 0.1| and |1 - 0.9|, each half the rows
    assert expected_calibration_error(y, p, n_bins=2) == pytest.approx(0.1)


def test_reliability_curve_known_bins():
    from pulsnar_dask.core.calibration import curve_of, reliability_sums

    y = np.array([0, 1, 1, 1, 0])
    p = np.array([0.1, 0.3, 0.9, 1.0, 0.8])
    mean_p, mean_y, count = curve_of(reliability_sums(y, p, n_bins=4))
    assert count.tolist() == [1, 1, 0, 3]
    np.testing.assert_allclose(mean_p[[0, 1, 3]], [0.1, 0.3, 0.9])
    np.testing.assert_allclose(mean_y[[0, 1, 3]], [0, 1, 2 / 3])
    assert np.isnan(mean_p[2]) and np.isnan(mean_y[2])


def test_reliability_summed_over_partitions_is_that_of_every_row():
    from pulsnar_dask.core.calibration import reliability_sums
    from pulsnar_dask.core.combine import RowOutputs, piece_reliability

    rng = np.random.default_rng(2)
    ids = rng.permutation(3_000)
    labels = (rng.random(ids.size) < 0.2).astype(np.int8)
    truth = np.where(labels == 1, 2, (rng.random(ids.size) < 0.3).astype(int))  # subtypes
    p, c = rng.random(ids.size), rng.random(ids.size)
    p[:40] = np.nan  # rows without a probability are left out
    whole = [
        [reliability_sums(truth[r & np.isfinite(v)] > 0, v[r & np.isfinite(v)], 7) for v in (p, c)]
        for r in (np.ones(ids.size, dtype=bool), labels == 0)
    ]
    summed = np.zeros((2, 2, 3, 7))
    for part in np.array_split(np.arange(ids.size), 5):
        shuffled = rng.permutation(part)  # the outputs hold the rows in another order
        outputs = RowOutputs(ids[shuffled], p[shuffled], c[shuffled], None)
        summed += piece_reliability([(ids[part], labels[part], truth[part]), outputs], 7)
    np.testing.assert_allclose(summed, whole)
    assert summed[1, 0, 0].sum() == np.sum((labels == 0) & np.isfinite(p))


def _subproblem(ids, labels, proba, alpha):
    sub = estimate_subproblem(ids, labels, proba, PUConfig(), 0)
    return replace(sub, estimate=replace(sub.estimate, alpha=alpha))


def _expected_labels(sub):
    """Algorithm 3's new labels of a subproblem's rows as expected values: 1 for a
    positive, the share of its bin's unlabeled rows flipped for an unlabeled row."""
    p, y = sub.probabilities, sub.labels
    unlabeled = y == 0
    members = np.bincount(flip_bins(p[unlabeled]), minlength=100)
    shares = flip_shares(p[y == 1], members, sub.alpha)
    return np.where(unlabeled, shares[flip_bins(p)], 1.0)


def test_flip_shares_are_the_draws_per_bin():
    rng = np.random.default_rng(4)
    pos, unl = rng.beta(5, 2, 800), rng.beta(2, 4, 5000)
    members = np.bincount(flip_bins(unl), minlength=100)
    shares = flip_shares(pos, members, 0.25)
    flipped = flip_labels(pos, unl, 0.25, random_state=1)
    np.testing.assert_allclose(
        shares * members, np.bincount(flip_bins(unl[flipped]), minlength=100)
    )
    assert (shares * members).sum() == pytest.approx(round(0.25 * unl.size))


@pytest.mark.parametrize("method", ["isotonic", "sigmoid"])
@pytest.mark.parametrize("data", ["PU", "U"])
def test_calibration_on_counts_is_the_fit_on_the_rows(method, data):
    """The map fitted on the grid's counts against the same regression on every row with
    its expected new label (the oracle): they differ only inside a grid cell. One draw of
    the flips (Algorithm 3 as the paper runs it) lands close to both."""
    rng = np.random.default_rng(0)
    labels = (rng.random(6000) < 0.3).astype(np.int8)
    proba = np.clip(rng.beta(2, 5, 6000) + 0.4 * labels, 0, 1)
    ids = np.arange(6000)
    sub = _subproblem(ids, labels, proba, 0.2)
    config = PUConfig(calibration_data=data, calibration_method=method)
    got = _outputs(ids, [sub], config, 3).calibrated
    rows = labels == 0 if data == "U" else np.ones(labels.size, dtype=bool)
    oracle = _fit_on_rows(proba[rows], _expected_labels(sub)[rows], method)(proba)
    assert np.abs(got - oracle).mean() < 1e-3
    drawn = calibrate(proba, labels, 0.2, method=method, data=data, random_state=3)
    assert np.abs(got - drawn).mean() < 0.01


def _fit_on_rows(p, expected, method):
    """The regression of expected labels on every row: isotonic on the rows as they are,
    logistic on each row as its positive and its negative share (scikit-learn)."""
    if method == "isotonic":
        return fit_calibration_map(p, expected, None, method)
    from sklearn.linear_model import LogisticRegression

    both = np.r_[expected, 1 - expected]
    model = LogisticRegression().fit(
        np.r_[p, p].reshape(-1, 1), np.r_[np.ones(p.size), np.zeros(p.size)], sample_weight=both
    )
    return lambda q: model.predict_proba(np.asarray(q).reshape(-1, 1))[:, 1]


def test_calibrated_outputs_pu_fits_the_union_of_cluster_flips():
    """Two clusters share the unlabeled rows: the P+U fit keeps the mean of the union of
    the new labels, an unlabeled row counting as the chance that either cluster flips it;
    rows in no subproblem stay NaN."""
    rng = np.random.default_rng(1)
    unl = np.arange(100, 2100)
    subs = []
    for c, pos in enumerate((np.arange(0, 50), np.arange(50, 100))):
        ids = np.r_[pos, unl]
        labels = np.r_[np.ones(50), np.zeros(unl.size)].astype(np.int8)
        proba = np.clip(rng.beta(2, 6, ids.size) + 0.5 * labels, 0, 1)
        subs.append(_subproblem(ids, labels, proba, 0.1 + 0.05 * c))
    all_ids = np.arange(2101)  # 2100 is in no subproblem
    out = _outputs(all_ids, subs, PUConfig(), seed=0).calibrated
    assert np.isnan(out[2100]) and np.isfinite(out[:2100]).all()
    kept = np.ones(2100)
    for s in subs:
        kept[s.row_ids] *= 1.0 - _expected_labels(s)
    union = 1.0 - kept
    # isotonic regression keeps the mean of its points, each cell's rows at their mean
    # probability; the map read at the rows' own probabilities moves it by a little
    assert out[:2100].mean() == pytest.approx(union.mean(), abs=1e-4)
    assert union[unl].sum() > round(0.15 * unl.size)  # more than either cluster's flips


def _sklearn_thresholds(x, y):
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(x, y)
    return model.X_thresholds_, model.y_thresholds_


def _probabilities_with_ties(rng, n):
    # float32 probabilities, as XGBoost gives them, many repeated
    p = rng.beta(0.6, 1.5, n).astype(np.float32)
    p[rng.random(n) < 0.3] = p[0]  # one value on a third of the rows
    rounded = rng.random(n) < 0.2
    p[rounded] = np.round(p[rounded], 2)  # and short runs of equal values
    return p.astype(float)


@pytest.mark.parametrize("seed", range(4))
def test_isotonic_thresholds_are_scikit_learns(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    x = _probabilities_with_ties(rng, n)
    y = (rng.random(n) < x).astype(float)  # labels that follow the probabilities
    got_x, got_y = isotonic_thresholds(x, y)
    want_x, want_y = _sklearn_thresholds(x, y)
    assert np.array_equal(got_x, want_x) and np.array_equal(got_y, want_y)
    assert 2 < got_x.size < np.unique(x).size  # flat stretches were trimmed


def test_isotonic_thresholds_merge_near_ties_as_scikit_learn_does():
    # chains of values closer than 1e-15 to their neighbour but not all within 1e-15 of
    # the chain's first: scikit-learn compares with the first, so a chain splits
    rng = np.random.default_rng(7)
    chain = 1e-9 + np.arange(12) * 4e-16
    # 0 and 1e-15 differ by exactly the resolution: scikit-learn starts a new run there
    x = np.concatenate([chain, chain + 5e-9, [0.0, 1e-15, 2e-15], rng.random(200)])
    y = (rng.random(x.size) < 0.5).astype(float)
    got = isotonic_thresholds(x, y)
    want = _sklearn_thresholds(x, y)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # the chains were split, not merged whole nor kept value by value
    assert 2 < _run_starts(np.sort(chain)).size < chain.size


@pytest.mark.parametrize("labels", ["zeros", "ones", "one row"])
def test_isotonic_thresholds_edge_cases_are_scikit_learns(labels):
    x = np.array([0.2]) if labels == "one row" else np.linspace(0.1, 0.9, 9)
    y = np.ones(x.size) if labels == "ones" else np.zeros(x.size)
    got, want = isotonic_thresholds(x, y), _sklearn_thresholds(x, y)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_isotonic_calibration_map_on_fit_rows_matches_scikit_learn():
    rng = np.random.default_rng(3)
    p = _probabilities_with_ties(rng, 2000)
    labels = (rng.random(p.size) < p).astype(np.int8)
    rows = rng.random(p.size) < 0.6
    fitted = fit_calibration_map(p, labels, rows, "isotonic")
    want_x, want_y = _sklearn_thresholds(p[rows], labels[rows].astype(float))
    assert fitted.x == tuple(want_x.tolist()) and fitted.y == tuple(want_y.tolist())


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_isotonic_thresholds_refuse_what_scikit_learn_refuses(bad):
    with pytest.raises(ValueError, match="finite probabilities"):
        isotonic_thresholds(np.array([0.1, bad, 0.3]), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="at least one row"):
        isotonic_thresholds(np.array([]), np.array([]))
