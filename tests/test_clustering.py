import logging

import numpy as np
import pytest

from pulsnar_dask.core.mixture import (
    MIN_CLUSTER_SIZE,
    assigned_components,
    component_ranks,
    fit_mixture,
    important_features,
    kept_components,
    knee_point,
    scaling,
    select_n_clusters,
)
from pulsnar_dask.core.positive_pieces import column_medians, piece_columns, piece_present
from pulsnar_dask.core.schema import FeatureSchema
from pulsnar_dask.core.subtypes import profile_sums, profiles_of


def one_by_one(fn, calls):
    """A map for the fan-outs' ``map_fits``: the calls one after another, here."""
    return [fn(*call) for call in calls]


def test_knee_with_local_minima_takes_the_earliest_signal():
    # local minima at indices 2 and 4; argmin 4; argmax(diff(diff)) = 3 -> 3 + 3 = 6
    bic = np.array([10, 8, 5, 6, 4, 7, 9])
    assert knee_point(bic) == 3


def test_knee_with_local_minima_can_stop_at_the_curvature_term():
    # argmin 5, first local minimum 5, argmax(diff(diff)) = 1 -> 1 + 3 = 4 wins -> c = 5
    bic = np.array([100, 99, 60, 59, 58, 50, 52, 53])
    assert knee_point(bic) == 5


def test_knee_without_local_minima_keeps_the_first_candidate_when_no_angle_beats_it():
    # second differences [-50, 45, -20, 23, -6, 7.5, 0.2]: knees at 3 (D=-20) and 5 (D=-6);
    # by decreasing D: 5 first (angle 1.2315), then 3 (angle 0.5036 < 1.2315) -> 5
    bic = np.array([100, 50, 45, 20, 18, 10, 9.5, 9.2])
    assert knee_point(bic) == 5


def test_knee_without_local_minima_walks_to_a_sharper_angle():
    # second differences [-11, 5, -1, 1, -2, 4, -8]: knees at 3 (D=-1) and 5 (D=-2);
    # 3 comes first (angle atan(1/7) + atan(1/6) = 0.3070), then 5 (atan(1/8) + atan(1/4)
    # = 0.3693), which is sharper -> 5
    bic = np.array([60.0, 49.0, 43.0, 36.0, 30.0, 22.0, 18.0, 6.0])
    assert knee_point(bic) == 5


def test_knee_of_a_straight_line_falls_back_to_the_sharpest_bend():
    # no local minimum of the BIC or of its second differences ([-2, 0, 0, 0]): the
    # sharpest bend, argmax(diff(diff)) + 2, is the first one on a line
    assert knee_point(np.array([10.0, 8.0, 6.0, 4.0, 2.0])) == 2
    # halving steps: second differences [-8, 4, 2, 1] have no interior minimum either,
    # and the bend is sharpest at 2 clusters
    assert knee_point(np.array([16.0, 8.0, 4.0, 2.0, 1.0])) == 2
    assert knee_point(np.array([5.0, 1.0])) == 2


def test_min_bic_selection_and_unknown_method():
    bic = np.array([10, 8, 5, 6, 4, 7, 9])
    assert select_n_clusters(bic, "min") == 5
    with pytest.raises(ValueError, match="unknown cluster selection"):
        select_n_clusters(bic, "elbow")


def test_important_features_sorted_by_gain_and_capped():
    gain = np.array([0.0, 5.0, 1.0, 0.0, 3.0])
    np.testing.assert_array_equal(important_features(gain), [1, 4, 2])
    np.testing.assert_array_equal(important_features(gain, 2), [1, 4])


def cluster_labels(fit, Z, min_size=1):
    """Each row's cluster as a run assigns the positives of one piece: components under
    ``min_size`` rows dissolved, clusters numbered by decreasing size."""
    first = assigned_components(fit, Z)
    kept = kept_components(np.bincount(first, minlength=fit.n_components), min_size)
    raw = assigned_components(fit, Z, kept)
    return component_ranks(np.bincount(raw, minlength=fit.n_components), kept)[raw]


def test_scaling_multiplies_by_gain_imputes_medians_and_drops_constant_columns():
    X = np.array([[1.0, 7.0, np.nan], [3.0, 7.0, 2.0], [5.0, 7.0, 4.0]], dtype=np.float32)
    gain, columns = np.array([2.0, 1.0, 0.5]), ["a", "b", "c"]
    pieces = [(np.arange(3), X)]
    sums = piece_columns(pieces, gain, FeatureSchema(columns), columns)
    assert sums.missing.tolist() == [0, 0, 1]
    medians = np.full(3, np.nan)
    medians[2:] = column_medians(piece_present(pieces, gain, np.array([2])))
    Z = scaling(gain, sums.low, sums.high, medians).apply(X)
    np.testing.assert_allclose(Z, [[2.0, 1.5], [6.0, 1.0], [10.0, 2.0]])


def test_mixture_finds_separated_blobs_and_labels_by_size():
    rng = np.random.default_rng(0)
    blobs = [rng.normal(c, 0.3, size=(n, 3)) for c, n in ((0, 50), (5, 120), (10, 80))]
    Z = np.vstack(blobs)
    bic = [fit_mixture(Z, k, random_state=100 + k).bic for k in range(1, 7)]
    assert select_n_clusters(np.array(bic), "min") == 3
    labels = cluster_labels(fit_mixture(Z, 3, random_state=103), Z)
    assert np.bincount(labels).tolist() == [120, 80, 50]
    assert len(set(labels[50:170])) == 1


def test_small_components_merge_into_their_most_probable_neighbour():
    rng = np.random.default_rng(1)
    Z = np.vstack(
        [
            rng.normal(0.0, 0.3, (150, 2)),
            rng.normal(6.0, 0.3, (150, 2)),
            rng.normal(4.5, 0.2, (12, 2)),  # a handful near the second blob
        ]
    )
    fit = fit_mixture(Z, 3, random_state=5)
    assert np.bincount(cluster_labels(fit, Z)).tolist() == [150, 150, 12]
    merged = cluster_labels(fit, Z, min_size=20)
    assert np.bincount(merged).tolist() == [162, 150]
    assert len(set(merged[150:])) == 1 and merged[0] != merged[150]
    # the largest component stays even when nothing reaches the floor
    assert set(cluster_labels(fit, Z, min_size=1000)) == {0}


def test_mixture_survives_repeated_values_without_a_fallback(caplog):
    # Discrete, repeated rows and more components than distinct points: full covariance
    # is singular without regularisation, which reg_covar mends; no fallback needed.
    Z = np.repeat(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), 20, axis=0)
    with caplog.at_level(logging.WARNING):
        fit = fit_mixture(Z, 5, random_state=1)
    assert np.isfinite(fit.bic)
    assert fit.n_components == 5 and fit.covariance_type == "full"
    assert "failed" not in caplog.text


def test_mixture_falls_back_to_a_simpler_covariance_and_logs_it(caplog):
    # Points on a line at a scale where reg_covar is below the floating-point resolution of
    # the covariances: every full fit is singular, the diagonal one is not.
    t = np.repeat(np.arange(6.0), 10)
    Z = np.c_[t, 2 * t] * 1e12
    with caplog.at_level(logging.WARNING):
        fit = fit_mixture(Z, 3, random_state=1)
    assert fit.covariance_type == "diag" and np.isfinite(fit.bic)
    assert "full covariance failed; used diag with reg_covar=1e-06" in caplog.text


def test_mixtures_fit_on_a_seeded_sample_of_many_positives():
    from pulsnar_dask.core.config import PUConfig
    from pulsnar_dask.core.subtypes import fit_mixture_size

    rng = np.random.default_rng(0)
    Z = np.r_[rng.normal(0, 1, (3000, 2)), rng.normal(8, 1, (3000, 2))]
    capped = PUConfig(max_cluster_rows=500, covariance_type="full")
    fit = fit_mixture_size(Z, 2, capped, seed=1)
    again = fit_mixture_size(Z, 2, capped, seed=1)
    assert fit.bic == again.bic
    full = fit_mixture_size(Z, 2, capped.with_(max_cluster_rows=None), seed=1)
    with pytest.raises(ValueError, match="one covariance type"):
        fit_mixture_size(Z, 2, PUConfig(), seed=1)
    # BIC of 500 rows is about 500/6000 of the BIC of all rows; the means are the same.
    assert abs(fit.bic) < abs(full.bic) / 5
    np.testing.assert_allclose(
        np.sort(fit.model.means_[:, 0]), np.sort(full.model.means_[:, 0]), atol=0.2
    )


def test_min_cluster_size_is_a_share_of_the_positives_with_a_floor():
    from pulsnar_dask.core.config import PUConfig
    from pulsnar_dask.core.subtypes import min_cluster_size

    assert min_cluster_size(PUConfig(min_cluster_fraction=0.02), 5000) == 100
    assert min_cluster_size(PUConfig(min_cluster_fraction=0.02), 60) == MIN_CLUSTER_SIZE
    assert min_cluster_size(PUConfig(), 5000) == 100  # the default share is 2%
    assert min_cluster_size(PUConfig(min_cluster_fraction=0.0), 5000) == MIN_CLUSTER_SIZE
    with pytest.raises(ValueError, match="min_cluster_fraction"):
        PUConfig(min_cluster_fraction=1.0)


def subtype_profiles(X, labels, names, top):
    """Profiles of one piece's clusters, its sums shifted by the column means."""
    shift = np.nan_to_num(np.nanmean(X, axis=0))
    return profiles_of(profile_sums(X, labels, int(labels.max()) + 1, shift), names, top)


def test_subtype_profiles_name_the_features_that_set_each_cluster_apart():
    # a: cluster 0 at 0, cluster 1 at 2 (mean 1, sd 1: -1 and +1 sd); b: constant (never
    # named); c: cluster 1 is [0, 0] and cluster 0 [3, 1] (mean 1, sd sqrt(1.5)); d: one
    # missing value, left out of the means.
    X = np.array(
        [
            [0.0, 5.0, 3.0, 1.0],
            [0.0, 5.0, 1.0, np.nan],
            [2.0, 5.0, 0.0, 1.0],
            [2.0, 5.0, 0.0, 1.0],
        ]
    )
    labels = np.array([0, 0, 1, 1])
    profiles = subtype_profiles(X, labels, ["a", "b", "c", "d"], top=3)
    c0 = (2.0 - 1.0) / np.sqrt(1.5)
    assert profiles[0] == [
        {"feature": "a", "difference_sd": -1.0},
        {"feature": "c", "difference_sd": round(c0, 2)},
    ]
    assert profiles[1] == [
        {"feature": "a", "difference_sd": 1.0},
        {"feature": "c", "difference_sd": round(-c0, 2)},
    ]
    assert subtype_profiles(X, labels, ["a", "b", "c", "d"], top=1)[1] == [
        {"feature": "a", "difference_sd": 1.0}
    ]


def test_mixture_sizes_come_in_rounds_of_ten_for_the_lowest_bic():
    from pulsnar_dask.core.config import PUConfig
    from pulsnar_dask.core.subtypes import mixture_sizes

    rounds = mixture_sizes(PUConfig(max_clusters=25), 1000)
    assert rounds == [list(range(1, 11)), list(range(11, 21)), list(range(21, 26))]
    assert mixture_sizes(PUConfig(max_clusters=25), 30) == [
        list(range(1, 11)),
        [11, 12, 13, 14, 15],
    ]
    assert mixture_sizes(PUConfig(max_clusters=25, cluster_selection="knee"), 1000) == [
        list(range(1, 26))
    ]  # the knee reads the whole curve
    assert mixture_sizes(PUConfig(n_clusters=3), 1000) == [[3]]


def test_more_sizes_are_fitted_only_while_the_lowest_bic_lies_at_the_end():
    from pulsnar_dask.core.config import PUConfig
    from pulsnar_dask.core.subtypes import fit_bic_curve

    rng = np.random.default_rng(3)
    centres = rng.normal(0, 40, (14, 2))
    many = np.vstack([rng.normal(c, 1, (60, 2)) for c in centres])  # 14 separated blobs
    few = np.vstack([rng.normal(c, 1, (200, 2)) for c in centres[:3]])
    config = PUConfig(max_clusters=25, max_cluster_rows=None)

    fitted = {
        name: fit_bic_curve(one_by_one, Z, config, 0)["full"]
        for name, Z in (("many", many), ("few", few))
    }
    assert len(fitted["few"]) == 10  # the minimum (3) lies inside the first round
    assert int(np.argmin([f.bic for f in fitted["few"]])) + 1 == 3
    assert len(fitted["many"]) >= 20  # ten were not enough: the next round was fitted
    assert int(np.argmin([f.bic for f in fitted["many"]])) + 1 == 14


def test_the_covariance_type_is_the_one_with_the_lower_bic():
    from pulsnar_dask.core.config import PUConfig
    from pulsnar_dask.core.subtypes import choose_mixture, fit_bic_curve

    rng = np.random.default_rng(0)
    config = PUConfig(max_clusters=12, max_cluster_rows=None)
    # three subtypes whose two features go together (correlation 0.95 within each): a
    # diagonal mixture needs several components for each slanted subtype
    slant = [[1, 0.95], [0.95, 1]]
    joint = np.vstack([rng.multivariate_normal(c, slant, 400) for c in ([0, 0], [8, 0], [0, 8])])
    # eight subtypes in 40 features, each feature independent within a subtype, on 400
    # rows: a full covariance costs 820 parameters per component, more than the data carry
    centres = rng.normal(0, 3, (8, 40))
    axis = np.vstack([rng.normal(c, 1, (50, 40)) for c in centres])
    chosen = {}
    for name, Z in (("joint", joint), ("axis", axis)):
        curves = fit_bic_curve(one_by_one, Z, config, 0)
        assert set(curves) == {"full", "diag"}
        fit, bic, kind = choose_mixture(curves, config)
        assert bic.tolist() == [f.bic for f in curves[kind]]
        assert min(bic) == min(f.bic for c in curves.values() for f in c)
        chosen[name] = (kind, fit.n_components)
    assert chosen == {"joint": ("full", 3), "axis": ("diag", 8)}
    # asked for one type, only that type is fitted
    curves = fit_bic_curve(one_by_one, axis, config.with_(covariance_type="full"), 0)
    assert set(curves) == {"full"} and choose_mixture(curves, config)[2] == "full"


def test_the_bic_plot_says_how_the_chosen_mixture_became_the_clusters():
    from pulsnar_dask.report import chosen_label

    assert chosen_label(5, 5) == "chosen: 5"
    assert chosen_label(13, 9) == "chosen: 13, 9 after merging small ones"
