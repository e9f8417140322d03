"""method="auto": PULSCAR's alpha, the clusters' reading spanned beside it, and read
where even their tail reading lies above PULSCAR's beyond the noise of both
(pulsnar_dask.pipeline.method_choice)."""

import html
import logging

import numpy as np
import pytest

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.core.interval import AlphaInterval
from pulsnar_dask.pipeline.method_choice import CLUSTERS_PAST_PULSCAR, record_readings
from pulsnar_dask.pipeline.result import OVERLAP_AUC, WIDE_INTERVAL, headline


def _readings(tail: float, tail_sd: float) -> AlphaInterval:
    return AlphaInterval(
        0.0, 1.0, {"pulscar kernel": (0.2, 0.03), "pulscar tail": (0.5, 0.01),
                   "pulsnar kernel": (0.31234, 0.01), "pulsnar tail": (tail, tail_sd)}
    )  # fmt: skip


def test_auto_records_both_readings_and_reads_pulscars_within_the_noise(caplog):
    # the clusters' tail 0.29 lies (0.29 - 0.2) / hypot(0.03, 0.04) = 1.8 spreads above
    evidence = {"n_clusters": 4, "reason": "alpha is PULSCAR's; the 4 clusters ..."}
    with caplog.at_level(logging.INFO, logger="pulsnar_dask"):
        record_readings(_readings(0.29, 0.04), evidence, "kernel")
    # the configured reader's, rounded; PULSCAR's tail reading does not enter
    assert evidence["readings"] == {"pulscar": 0.2, "pulsnar": 0.3123}
    assert evidence["clusters_past_pulscar"] == 1.8 and evidence["read"] == "pulscar"
    assert evidence["reason"] == "alpha is PULSCAR's; the 4 clusters ..."
    assert [r.levelname for r in caplog.records] == ["INFO"]
    assert (
        "method auto: alpha is PULSCAR's; the 4 clusters ... (PULSCAR reads 0.200 and the 4 "
        "clusters 0.312; their tail 0.290, 1.80 spreads past PULSCAR's)"
    ) in caplog.text


def test_auto_reads_the_clusters_where_their_tail_lies_past_pulscar_beyond_the_noise(caplog):
    # (0.305 - 0.2) / 0.05 = 2.1 spreads: past the line, 2
    assert CLUSTERS_PAST_PULSCAR == 2.0
    evidence = {"n_clusters": 4, "reason": "alpha is PULSCAR's; the 4 clusters are read"}
    with caplog.at_level(logging.INFO, logger="pulsnar_dask"):
        record_readings(_readings(0.305, 0.04), evidence, "kernel")
    assert evidence["clusters_past_pulscar"] == 2.1 and evidence["read"] == "pulsnar"
    assert evidence["reason"] == (
        "alpha is PULSNAR's: the 4 clusters are read; even the clusters' tail reading, "
        "0.305, lies 2.10 of the readings' spreads above PULSCAR's 0.200, so the subtypes "
        "are labeled at different rates"
    )
    assert "method auto: alpha is PULSNAR's: the 4 clusters are read; even" in caplog.text
    # the clusters' kernel reading far above PULSCAR's is not enough: their tail decides
    evidence = {"n_clusters": 4, "reason": ""}
    record_readings(_readings(0.25, 0.04), evidence, "kernel")
    assert evidence["read"] == "pulscar"
    # nor is a tail past PULSCAR's by more than its noise allows: the spreads widen it
    record_readings(_readings(0.305, 0.2), evidence, "kernel")
    assert evidence["read"] == "pulscar"
    # nor a tail past the line where the clusters' own reading is not above PULSCAR's
    below = _readings(0.305, 0.04)
    below.readings["pulsnar kernel"] = (0.19, 0.01)
    record_readings(below, evidence, "kernel")
    assert evidence["clusters_past_pulscar"] == 2.1 and evidence["read"] == "pulscar"


def _auto_summary(read: str) -> dict:
    """A summary of auto beside 3 clusters (PULSCAR 0.21, the clusters 0.3), reading
    ``read``'s alpha."""
    evidence = {"n_clusters": 3, "readings": {"pulscar": 0.21, "pulsnar": 0.3}, "reason": "",
                "subtypes_may_be_unseen": False, "read": read}  # fmt: skip
    alpha = evidence["readings"][read]
    return {"alpha": alpha, "hidden_positives": round(alpha * 1000), "n_unlabeled": 1000,
            "method": read, "n_clusters": 3 if read == "pulsnar" else 1,
            "alpha_identified": True, "alpha_interval": [0.19, 0.32],
            "method_evidence": evidence}  # fmt: skip


def test_the_headline_names_pulscars_reading_beside_the_clusters():
    assert headline(_auto_summary("pulsnar")) == (
        "alpha 0.300: about 300 hidden positives among 1,000 unlabeled rows (PULSNAR, 3 "
        "clusters; PULSCAR reads 0.210); 95% interval 190-320 (alpha 0.190-0.320)"
    )


def test_the_headline_names_the_clusters_reading_beside_pulscars():
    summary = _auto_summary("pulscar")
    # PULSCAR's alpha read, the clusters' reading beside it: the interval spans both
    assert headline(summary) == (
        "alpha 0.210: about 210 hidden positives among 1,000 unlabeled rows (PULSCAR; 3 "
        "clusters read 0.300 beside it); 95% interval 190-320 (alpha 0.190-0.320)"
    )
    summary.update(alpha_imprecise=True, alpha_interval=[0.17, 0.34])
    assert headline(summary).endswith(
        "(PULSCAR; 3 clusters read 0.300 beside it); 95% interval 170-340 (alpha 0.170-0.340); "
        "IMPRECISE: the interval is 0.170 wide, the data do not pin alpha down"
    )


def test_auto_reads_the_clusters_where_subtypes_are_labeled_apart():
    """SNAR data whose three subtypes separate: the clusters read near the truth, PULSCAR
    low, and even the clusters' tail reading lies far above PULSCAR's; auto reads the
    clusters' alpha, calibrates PULSCAR's scores to it, and its interval spans both."""
    snar = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    auto = PULSNAR(random_state=0, n_jobs=2, calibration="isotonic").fit(snar.X, snar.label)
    plain = PULSNAR(random_state=0, n_jobs=2, method="pulsnar").fit(snar.X, snar.label)
    pulscar = PULSCAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    evidence = auto.method_evidence_
    assert auto.method_ == plain.method_ == "pulsnar" and evidence["read"] == "pulsnar"
    assert evidence["clusters_past_pulscar"] > CLUSTERS_PAST_PULSCAR
    assert auto.n_clusters_ == evidence["n_clusters"] == plain.n_clusters_ > 1
    assert plain.method_evidence_ is None
    # the clusters as method="pulsnar" reads them, each cluster's alpha too
    assert auto.alpha_ == pytest.approx(plain.alpha_, abs=5e-5)
    assert auto.alphas_.tolist() == [auto.alpha_]
    np.testing.assert_allclose(auto.cluster_alphas_, plain.cluster_alphas_, atol=5e-5)
    assert evidence["readings"]["pulsnar"] == pytest.approx(auto.alpha_, abs=5e-5)
    assert evidence["readings"]["pulscar"] == pytest.approx(pulscar.alpha_, abs=5e-5)
    assert pulscar.alpha_ < snar.true_alpha - 0.05
    assert auto.alpha_ == pytest.approx(snar.true_alpha, abs=0.03)
    # the rows' probabilities are PULSCAR's, calibrated at the clusters' alpha
    np.testing.assert_array_equal(auto.oof_proba_, pulscar.oof_proba_)
    unlabeled = snar.label == 0
    at_pulscar = PULSCAR(random_state=0, n_jobs=2, calibration="isotonic").fit(snar.X, snar.label)
    raised = (auto.calibrated_proba_ - at_pulscar.calibrated_proba_)[unlabeled].mean()
    assert raised > 0.5 * (auto.alpha_ - pulscar.alpha_) > 0.03
    interval = auto.alpha_interval_
    assert {"pulscar kernel", "pulscar tail", "pulsnar kernel", "pulsnar tail"} == set(
        interval.readings
    )
    assert interval.low <= pulscar.alpha_ and plain.alpha_ <= interval.high
    assert interval.low <= snar.true_alpha <= interval.high
    assert set(plain.alpha_interval_.readings) == {"pulsnar kernel", "pulsnar tail"}


def test_auto_reading_the_clusters_reads_their_one_scoring_whatever_the_iterations():
    """The clusters are scored once beside PULSCAR, and the gate reads PULSCAR's first
    iteration: with iterations, auto reading the clusters gives the run of one iteration,
    its alpha, cluster alphas and calibrated rows. Its interval also spans the t-interval
    of PULSCAR's repeats' mean, which here lies inside it: the same interval."""
    snar = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    one = PULSNAR(random_state=0, n_jobs=2, calibration="isotonic").fit(snar.X, snar.label)
    two = PULSNAR(random_state=0, n_jobs=2, calibration="isotonic", n_iterations=2)
    two.fit(snar.X, snar.label)
    assert one.method_evidence_["read"] == two.method_evidence_["read"] == "pulsnar"
    assert two.method_evidence_ == one.method_evidence_
    assert two.alphas_.tolist() == [two.alpha_] == [one.alpha_]
    np.testing.assert_array_equal(two.cluster_alphas_, one.cluster_alphas_)
    assert (two.alpha_interval_.low, two.alpha_interval_.high) == (
        one.alpha_interval_.low,
        one.alpha_interval_.high,
    )
    np.testing.assert_array_equal(two.calibrated_proba_, one.calibrated_proba_)


def test_without_an_interval_auto_scores_no_cluster_and_says_so(caplog):
    """With no interval to span them, auto's clusters are found but not scored: PULSCAR's
    alpha (which the clusters' reading, past it here, replaces with an interval), no
    clusters' reading, and a headline that says why."""
    snar = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    with caplog.at_level(logging.INFO, logger="pulsnar_dask"):
        bare = PULSNAR(random_state=0, n_jobs=2, interval_resamples=0).fit(snar.X, snar.label)
    auto = PULSNAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    assert bare.alpha_interval_ is None and auto.method_evidence_["read"] == "pulsnar"
    assert bare.method_ == "pulscar" and bare.alpha_ == pytest.approx(
        auto.method_evidence_["readings"]["pulscar"], abs=5e-5
    )
    evidence = bare.method_evidence_
    assert evidence["n_clusters"] == auto.method_evidence_["n_clusters"] > 1
    assert "readings" not in evidence and "not read" in evidence["reason"]
    assert "cluster subproblem" not in caplog.text  # no cluster was scored
    assert "the 3 clusters are not read (interval_resamples=0)" in caplog.text
    summary = {"alpha": bare.alpha_, "hidden_positives": 600, "n_unlabeled": 3000,
               "method": "pulscar", "n_clusters": 1, "alpha_identified": True,
               "method_evidence": evidence}  # fmt: skip
    assert headline(summary).endswith(
        "(PULSCAR; 3 clusters found, not read (interval_resamples=0))"
    )


def test_auto_reads_pulscar_where_subtypes_hidden_alike_read_alike():
    """SCAR: two separated blobs of positives, 30% of each hidden at random. The clusters
    read what PULSCAR reads, within their noise: PULSCAR's alpha, a narrow interval."""
    from benchmarks.realdata import scar_pu_data

    rng = np.random.default_rng(4)
    centres = np.array([[3.0, 3.0, 0, 0], [-3.0, 3.0, 0, 0], [0.0, -3.0, 0, 0]])
    group = np.repeat([0, 1, 2], [1500, 1500, 3000])
    X = centres[group] + rng.normal(size=(group.size, 4))
    scar = scar_pu_data(X, group < 2, 0.3, random_state=0)
    auto = PULSNAR(random_state=0, n_jobs=2).fit(scar.X, scar.label)
    assert auto.method_evidence_["n_clusters"] >= 2
    readings = auto.method_evidence_["readings"]
    assert readings["pulsnar"] == pytest.approx(readings["pulscar"], abs=0.03)
    assert auto.alpha_interval_.high - auto.alpha_interval_.low <= WIDE_INTERVAL
    assert auto.alpha_ == PULSCAR(random_state=0, n_jobs=2).fit(scar.X, scar.label).alpha_
    assert auto.alpha_ == pytest.approx(scar.true_alpha, abs=0.03)


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
    assert "on the top 3 of the 12 features" in top3.method_evidence_["reason"]
    assert top3.method_evidence_["cluster_features"] == 3
    assert top3.method_evidence_["model_features"] == full.method_evidence_["model_features"]
    # one cluster: nothing to weigh
    assert "readings" not in top3.method_evidence_
    assert top3.alpha_ == full.alpha_  # PULSCAR either way: only the evidence differs


def test_the_report_says_when_one_cluster_rests_on_part_of_the_features():
    from pulsnar_dask.report import plain_reading

    evidence = {"n_clusters": 1, "cluster_features": 100, "model_features": 1007,
                "subtypes_may_be_unseen": True, "reason": ""}  # fmt: skip
    summary = {"n_unlabeled": 1000, "hidden_positives": 150, "alpha": 0.15, "n_positive": 500,
               "method": "pulscar", "settings": {"alpha_estimator": "kernel"},
               "pu_auc": [0.8], "alpha_identified": True, "method_evidence": evidence}  # fmt: skip
    text = plain_reading(summary)
    assert "The 500 labeled positives were read as one group: as likely to be labeled" in text
    assert "That rests on the top 100 of the 1,007 features the classifier uses" in text
    evidence["subtypes_may_be_unseen"] = False
    assert "That rests on" not in plain_reading(summary)
    summary.update(alpha_may_be_high=True, negative_auc=0.745)
    assert (
        f"unlabeled negatives overlap (AUC between them at most about 0.745, below {OVERLAP_AUC})"
        in plain_reading(summary)
    )
    # the interval taken to 0 as the classes overlap: said, and named as why it is wide
    summary.update(alpha_interval=[0.0, 0.3], alpha_imprecise=True)
    text = plain_reading(summary)
    assert "several times the truth; the interval therefore starts at 0." in text
    assert "act on the interval, not on the point (it starts at 0, as the classes overlap)" in text
    # a summary written before the floor: the overlap flag, an interval above 0
    summary["alpha_interval"] = [0.1, 0.3]
    text = plain_reading(summary)
    assert "several times the truth." in text and "starts at 0" not in text
    assert "(the diagnostics below show which readings widen it)" in text


def test_the_report_says_what_the_clusters_read():
    from pulsnar_dask.report import plain_reading

    evidence = {"n_clusters": 5, "readings": {"pulscar": 0.2, "pulsnar": 0.31},
                "subtypes_may_be_unseen": False, "reason": ""}  # fmt: skip
    summary = {"n_unlabeled": 1000, "hidden_positives": 200, "alpha": 0.2, "n_positive": 500,
               "method": "pulscar", "settings": {"alpha_estimator": "kernel"},
               "pu_auc": [0.9], "alpha_identified": True, "alpha_interval": [0.15, 0.36],
               "interval_readings": {"pulscar kernel": {"alpha": 0.2, "sd": 0.02},
                                     "pulsnar kernel": {"alpha": 0.31, "sd": 0.02}},
               "method_evidence": evidence}  # fmt: skip
    text = plain_reading(summary)
    # one of two assumptions, not a finding: the clusters are read beside it
    assert "reads the 500 labeled positives as one group, as PULSCAR does: as though" in text
    assert "as likely to be labeled whatever their kind" not in text
    assert "PULSCAR reads alpha 0.200, the estimate" in text
    assert "the 5 clusters, read as PULSNAR reads them, give 0.310" in text
    assert "at rates that depend on the subtype (the 5 clusters" in text
    # clusters scored on a sample of the unlabeled rows (max_reading_rows) say so
    evidence["clusters_unlabeled_rows"] = 400
    assert (
        "read as PULSNAR reads them on a sample of 400 of the 1,000 unlabeled rows, give 0.310"
        in plain_reading(summary)
    )
    # and of the positives, where there were enough to sample them too
    evidence["clusters_positive_rows"] = 200
    assert (
        "on a sample of 400 of the 1,000 unlabeled rows and 200 of the 500 labeled "
        "positives, give 0.310" in plain_reading(summary)
    )
    # where auto reads the clusters' alpha, theirs is the estimate
    del evidence["clusters_unlabeled_rows"], evidence["clusters_positive_rows"]
    evidence["read"], summary["method"], summary["alpha"] = "pulsnar", "pulsnar", 0.31
    summary["subtypes"] = [{"positives": 100, "alpha": 0.062}] * 5
    text = html.unescape(plain_reading(summary))
    assert (
        "The 500 labeled positives fall into 5 subtypes that hide positives at different rates "
        "(table below); the estimate is the sum over them. Auto reads them as PULSNAR does, "
        "as though each kind was labeled at its own rate, since even the clusters' more "
        "cautious tail reading lies above PULSCAR's beyond the noise of both."
    ) in text
    assert "(PULSCAR reads alpha 0.200) or at rates" in text
    assert "read as PULSNAR reads them, give 0.310, the estimate)" in text


def test_the_report_reads_one_cluster_of_positives_as_one_group():
    from pulsnar_dask.report import plain_reading

    summary = {"n_unlabeled": 1000, "hidden_positives": 200, "alpha": 0.2, "n_positive": 500,
               "method": "pulsnar", "settings": {"alpha_estimator": "kernel"},
               "pu_auc": [0.9], "alpha_identified": True, "alpha_interval": [0.15, 0.25],
               "subtypes": [{"positives": 500, "alpha": 0.2}]}  # fmt: skip
    text = plain_reading(summary)
    assert "The 500 labeled positives form one cluster (table below), read as one group." in text
    assert "different rates" not in text
    summary["subtypes"] = summary["subtypes"] * 2
    assert "fall into 2 subtypes that hide positives at different rates" in plain_reading(summary)


def test_the_subtypes_count_every_labeled_positive_of_each_cluster():
    """A cluster's labeled positives are those the clustering put in it, in the whole
    table, not those its subproblem scored (auto reads the clusters on a sample of the
    positives past max_reading_rows)."""
    from types import SimpleNamespace

    from pulsnar_dask.pipeline.result import JobResult

    labels = np.repeat([0, 1, 2], [50, 30, 20])
    sampled = [SimpleNamespace(n_positive=n) for n in (10, 6, 4)]  # what a sample scored
    run = SimpleNamespace(
        profiles=[[{"feature": "x", "difference_sd": 1.0}], [], []],
        clustering=SimpleNamespace(labels=labels),
        n_clusters=3,
        cluster_alphas=[0.1, 0.05, 0.02],
        subproblems=sampled,
        table=SimpleNamespace(n_unlabeled=1000),
    )
    subtypes = JobResult.subtypes(run)
    assert [s["positives"] for s in subtypes] == [50, 30, 20]
    assert [s["hidden_positives"] for s in subtypes] == [100, 50, 20]
    assert subtypes[0]["distinguishing"] == [{"feature": "x", "difference_sd": 1.0}]
    assert JobResult.subtypes(SimpleNamespace(**{**vars(run), "profiles": None})) == []


def test_pulsnar_refuses_a_method_it_does_not_run_before_any_work():
    d = make_pu_data("scar", 50, 200, 3, 0.2, random_state=0)
    with pytest.raises(ValueError, match="unknown PULSNAR method 'pulscar'; choose one of auto"):
        PULSNAR(method="pulscar").fit(d.X, d.label)
