"""method="auto": PULSCAR or PULSNAR from the clusters' subtype mix, weighed against
their own noise (pulsnar_dask.core.subtypes.scar_mix_test and choose_method)."""

import logging

import numpy as np
import pytest

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.core.subtypes import (
    MIX_Z,
    MIX_Z_BAND,
    MixTest,
    choose_method,
    scar_mix_test,
    subtype_mix_distance,
)
from pulsnar_dask.pipeline.result import headline

NO_TEST = MixTest(0.0, 0.0, 0.0, 0.0)


def test_subtype_mix_distance_known_answers():
    # hidden shares 0.5 / 0.5 against labeled shares 0.25 / 0.75
    assert subtype_mix_distance([0.1, 0.1], [100, 300]) == pytest.approx(0.25)
    # in proportion: SCAR
    assert subtype_mix_distance([0.05, 0.15], [100, 300]) == pytest.approx(0.0)
    # every hidden positive in the cluster holding a tenth of the labeled ones
    assert subtype_mix_distance([0.3, 0.0, 0.0], [100, 450, 450]) == pytest.approx(0.9)
    assert subtype_mix_distance([0.2], [100]) == 0.0
    # a cluster under 2% of the positives is left out
    assert subtype_mix_distance([0.1, 0.1, 0.05], [100, 300, 5]) == pytest.approx(0.25)
    assert subtype_mix_distance([0.0, 0.0], [5, 5]) == 0.0


def test_the_null_is_the_scar_mix_plus_each_resample_s_noise():
    """The oracle: the distance of (SCAR's mix + each resample's deviation from the
    resamples' mean), by hand, for three clusters."""
    alphas, sizes = np.array([0.10, 0.02, 0.08]), np.array([500, 300, 200])
    rng = np.random.default_rng(0)
    draws = alphas + rng.normal(0, 0.01, (40, 3))
    test = scar_mix_test(alphas, sizes, draws)
    shares = sizes / sizes.sum()
    null = []
    for row in alphas.sum() * shares + draws - draws.mean(axis=0):
        row = np.clip(row, 0, None)
        null.append(0.5 * np.abs(row / row.sum() - shares).sum())
    assert test.distance == pytest.approx(subtype_mix_distance(alphas, sizes))
    assert test.null_mean == pytest.approx(np.mean(null), abs=1e-12)
    assert test.null_sd == pytest.approx(np.std(null, ddof=1), abs=1e-12)
    assert test.z == pytest.approx((test.distance - np.mean(null)) / np.std(null, ddof=1))
    assert test.z > MIX_Z + MIX_Z_BAND  # far from SCAR, little noise
    # the same distance under ten times the noise is no evidence of SNAR
    noisy = scar_mix_test(alphas, sizes, alphas + rng.normal(0, 0.1, (40, 3)))
    assert noisy.distance == test.distance and noisy.z < MIX_Z
    # in proportion: no distance, and a z at or below the null's mean
    scar = np.array([0.10, 0.06, 0.04])
    at_scar = scar_mix_test(scar, sizes, scar + rng.normal(0, 0.01, (40, 3)))
    assert at_scar.distance == pytest.approx(0.0) and at_scar.z < 0


def test_the_mix_test_weighs_only_what_it_can():
    alphas, sizes = np.array([0.1, 0.1]), np.array([100, 300])
    rng = np.random.default_rng(1)
    draws = alphas + rng.normal(0, 0.01, (20, 2))
    # a resample with a missing reading is left out
    with_nan = np.vstack([draws, [[np.nan, 0.1]]])
    assert scar_mix_test(alphas, sizes, with_nan) == scar_mix_test(alphas, sizes, draws)
    # a cluster under 2% of the positives is weighed neither in the distance nor the null
    small = scar_mix_test(np.r_[alphas, 0.3], np.r_[sizes, 5], np.c_[draws, np.full(20, 0.3)])
    assert small == scar_mix_test(alphas, sizes, draws)
    # nothing to weigh: one cluster, no resample, nothing hidden
    assert scar_mix_test([0.2], [500], np.full((20, 1), 0.2)).z == 0.0
    assert scar_mix_test(alphas, sizes, draws[:1]).z == 0.0
    assert scar_mix_test([0.0, 0.0], sizes, np.zeros((20, 2))).z == 0.0
    # noiseless resamples: any distance at all is past the null
    assert scar_mix_test(alphas, sizes, np.tile(alphas, (20, 1))).z == np.inf


@pytest.mark.parametrize(
    ("z", "method", "decided"),
    [
        (MIX_Z + MIX_Z_BAND + 0.1, "pulsnar", True),
        (MIX_Z + MIX_Z_BAND / 2, "pulsnar", False),
        (MIX_Z - MIX_Z_BAND / 2, "pulscar", False),
        (MIX_Z - MIX_Z_BAND - 0.1, "pulscar", True),
        (np.inf, "pulsnar", True),
    ],
)
def test_choose_method_from_the_mix_test(z, method, decided):
    chosen, evidence = choose_method(MixTest(0.3, 0.1, 0.05, z), 4)
    assert chosen == method and evidence["decided"] is decided
    assert evidence["n_clusters"] == 4 and evidence["threshold"] == MIX_Z
    assert evidence["mix_z"] == (round(z, 3) if np.isfinite(z) else None)
    assert ("too close" in evidence["reason"]) is not decided


def test_one_cluster_on_part_of_the_features_is_weak_evidence_of_scar():
    method, evidence = choose_method(NO_TEST, 1, 100, 1007)
    assert method == "pulscar" and evidence["subtypes_may_be_unseen"] and evidence["decided"]
    assert "one cluster on the top 100 of the 1007 features" in evidence["reason"]
    assert (evidence["cluster_features"], evidence["model_features"]) == (100, 1007)
    # every feature clustered, or several clusters found, or the counts unknown: no caveat
    for args in [(NO_TEST, 1, 12, 12), (MixTest(0.3, 0.1, 0.05, 9.0), 2, 100, 1007), (NO_TEST, 1)]:
        _, evidence = choose_method(*args)
        assert not evidence["subtypes_may_be_unseen"], args
        assert "may" not in evidence["reason"]
    assert "cluster_features" not in evidence


def test_the_report_says_when_one_cluster_rests_on_part_of_the_features():
    from pulsnar_dask.report import plain_reading

    evidence = choose_method(NO_TEST, 1, 100, 1007)[1]
    summary = {"n_unlabeled": 1000, "hidden_positives": 150, "alpha": 0.15, "n_positive": 500,
               "method": "pulscar", "settings": {"alpha_estimator": "kernel"},
               "pu_auc": [0.8], "alpha_identified": True, "method_evidence": evidence}  # fmt: skip
    text = plain_reading(summary)
    assert "That rests on the top 100 of the 1,007 features the classifier uses" in text
    summary["method_evidence"] = choose_method(NO_TEST, 1, 12, 12)[1]
    assert "That rests on" not in plain_reading(summary)
    summary.update(alpha_may_be_high=True, negative_auc=0.745)
    assert "unlabeled negatives overlap (AUC between them at most about 0.745, below 0.8)" in (
        plain_reading(summary)
    )


def test_auto_flags_one_cluster_found_on_the_top_features_only():
    """SCAR data, 12 features: clustered on all of them no caveat; on the top 3 the one
    cluster found rests on a quarter of the features, and the evidence says so."""
    scar = make_pu_data("scar", 600, 3000, 12, 0.2, class_sep=2.0, random_state=0)
    full = PULSNAR(random_state=0, n_jobs=2).fit(scar.X, scar.label)
    top3 = PULSNAR(random_state=0, n_jobs=2, max_cluster_features=3).fit(scar.X, scar.label)
    assert full.method_ == top3.method_ == "pulscar"
    assert full.method_evidence_["n_clusters"] == top3.method_evidence_["n_clusters"] == 1
    assert not full.method_evidence_["subtypes_may_be_unseen"]
    assert top3.method_evidence_["subtypes_may_be_unseen"]
    assert top3.method_evidence_["cluster_features"] == 3
    assert top3.method_evidence_["model_features"] == full.method_evidence_["model_features"]
    assert top3.alpha_ == full.alpha_  # PULSCAR either way: only the evidence differs


def test_auto_keeps_pulsnar_on_snar_data_and_pulscar_on_scar_data():
    snar = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    auto = PULSNAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    plain = PULSNAR(random_state=0, n_jobs=2, method="pulsnar").fit(snar.X, snar.label)
    evidence = auto.method_evidence_
    assert auto.method_ == "pulsnar" and evidence["decided"]
    assert evidence["mix_z"] is None or evidence["mix_z"] > MIX_Z + MIX_Z_BAND
    assert plain.method_evidence_ is None
    assert auto.alpha_ == plain.alpha_ and auto.n_clusters_ == plain.n_clusters_ > 1
    assert evidence["readings"]["pulsnar"] == pytest.approx(auto.alpha_, abs=5e-5)
    assert evidence["readings"]["pulscar"] < auto.alpha_  # PULSCAR reads SNAR data low
    # decided: the interval spans PULSNAR's readings alone, as method="pulsnar" does
    assert auto.alpha_interval_ == plain.alpha_interval_
    assert auto.alpha_interval_.spanned == ("pulsnar",)
    assert set(evidence["bootstrap"]) == {f"{a} {r}" for a in ("pulsnar", "pulscar")
                                          for r in ("kernel", "tail")}  # fmt: skip
    # no interval asked for: auto still draws the resamples it weighs the clusters by
    bare = PULSNAR(random_state=0, n_jobs=2, interval_resamples=0).fit(snar.X, snar.label)
    assert bare.alpha_interval_ is None and bare.method_evidence_["mix_z"] == evidence["mix_z"]

    scar = two_subtypes_labeled_at_random()
    auto = PULSNAR(random_state=0, n_jobs=2).fit(scar.X, scar.label)
    assert auto.method_evidence_["n_clusters"] >= 2  # two subtypes (or pieces), hidden alike
    assert auto.method_evidence_["mix_z"] < MIX_Z
    assert auto.method_ == "pulscar" and auto.n_clusters_ == 1
    # PULSCAR itself, on every feature
    assert auto.alpha_ == PULSCAR(random_state=0, n_jobs=2).fit(scar.X, scar.label).alpha_
    assert auto.alpha_ == pytest.approx(scar.true_alpha, abs=0.03)


def test_an_undecided_call_spans_both_readings_and_says_so_where_they_differ(monkeypatch, caplog):
    """Where the mix test lies within the band, the interval spans PULSCAR's and PULSNAR's
    readings; where those differ beyond their noise, the run warns and the headline says
    so. (The band is moved onto the run's own z, so the same fit is read both ways.)"""
    import pulsnar_dask.core.subtypes as subtypes

    snar = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    decided = PULSNAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    z = decided.method_evidence_["mix_z"]
    monkeypatch.setattr(subtypes, "MIX_Z", z - 0.01)
    monkeypatch.setattr(subtypes, "MIX_Z_BAND", 1.0)
    with caplog.at_level(logging.WARNING, logger="pulsnar_dask"):
        est = PULSNAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    evidence = est.method_evidence_
    assert est.method_ == "pulsnar" and not evidence["decided"]
    assert est.alpha_ == decided.alpha_
    assert est.alpha_interval_.spanned == ("pulsnar", "pulscar")
    both = decided.alpha_interval_  # its own interval spans PULSNAR's readings
    assert est.alpha_interval_.high == both.high
    assert est.alpha_interval_.low < both.low  # PULSCAR reads this SNAR table lower
    assert evidence["readings_differ"]
    assert "cannot tell SCAR from SNAR" in caplog.text
    summary = {"n_unlabeled": 3000, "hidden_positives": 900, "alpha": 0.3, "method": "pulsnar",
               "n_clusters": 3, "alpha_identified": True, "method_evidence": evidence}  # fmt: skip
    assert "SCAR OR SNAR: the clusters cannot tell, and PULSCAR reads" in headline(summary)


def two_subtypes_labeled_at_random():
    """Positives in two separated blobs, 30% of each hidden at random; negatives apart."""
    from pulsnar_dask.datasets.realdata import scar_pu_data

    rng = np.random.default_rng(4)
    centres = np.array([[3.0, 3.0, 0, 0], [-3.0, 3.0, 0, 0], [0.0, -3.0, 0, 0]])
    group = np.repeat([0, 1, 2], [1500, 1500, 3000])
    X = centres[group] + rng.normal(size=(group.size, 4))
    return scar_pu_data(X, group < 2, 0.3, random_state=0)


def test_pulsnar_refuses_a_method_it_does_not_run_before_any_work():
    d = make_pu_data("scar", 50, 200, 3, 0.2, random_state=0)
    with pytest.raises(ValueError, match="unknown PULSNAR method 'pulscar'; choose one of auto"):
        PULSNAR(method="pulscar").fit(d.X, d.label)
