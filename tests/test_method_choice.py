"""method="auto": PULSCAR's alpha, the clusters' reading spanned and weighed beside it
(pulsnar_dask.pipeline.method_choice)."""

import logging

import numpy as np
import pytest

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.core.interval import Z_95, AlphaInterval
from pulsnar_dask.pipeline.method_choice import readings_differ
from pulsnar_dask.pipeline.result import OVERLAP_AUC, headline


def _weighed(pulscar: tuple[float, float], pulsnar: tuple[float, float]) -> dict:
    interval = AlphaInterval(
        0.0, 1.0, {"pulscar kernel": pulscar, "pulsnar kernel": pulsnar, "pulsnar tail": (0.9, 0.1)}
    )
    evidence = {"n_clusters": 4}
    readings_differ(interval, evidence, "kernel")
    return evidence


def test_the_readings_differ_past_1_96_of_their_combined_spread(caplog):
    # |0.30 - 0.20| = 0.1 against 1.96 * hypot(0.03, 0.04) = 0.098
    with caplog.at_level(logging.WARNING, logger="pulsnar_dask"):
        evidence = _weighed((0.2, 0.03), (0.3, 0.04))
    assert evidence["readings_differ"] is True
    assert evidence["readings"] == {"pulscar": 0.2, "pulsnar": 0.3}
    assert "cannot tell SCAR from SNAR: PULSCAR reads 0.200 and the 4 clusters 0.300" in (
        caplog.text
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pulsnar_dask"):
        evidence = _weighed((0.2, 0.03), (0.297, 0.04))  # 0.097: within the noise
    assert evidence["readings_differ"] is False and not caplog.text
    assert 0.097 < Z_95 * np.hypot(0.03, 0.04) < 0.1
    # either way round: the clusters may read lower
    assert _weighed((0.3, 0.01), (0.1, 0.01))["readings_differ"] is True


def test_the_headline_says_scar_or_snar_where_the_readings_differ():
    evidence = {"n_clusters": 3, "readings": {"pulscar": 0.21, "pulsnar": 0.3},
                "readings_differ": True, "reason": "", "subtypes_may_be_unseen": False}  # fmt: skip
    summary = {"alpha": 0.21, "hidden_positives": 210, "n_unlabeled": 1000, "method": "pulscar",
               "n_clusters": 1, "alpha_identified": True, "alpha_interval": [0.17, 0.34],
               "method_evidence": evidence}  # fmt: skip
    line = headline(summary)
    assert "unlabeled rows (PULSCAR; 3 clusters read beside it); 95% interval" in line
    assert line.endswith(
        "; SCAR OR SNAR: PULSCAR reads 0.210, the 3 clusters 0.300, further apart than "
        "their noise; the interval spans both"
    )
    evidence["readings_differ"] = False
    assert "SCAR OR SNAR" not in headline(summary)


def test_auto_reads_pulscar_and_spans_the_clusters_where_subtypes_are_labeled_apart():
    """SNAR data whose three subtypes separate: the clusters read near the truth, PULSCAR
    low; auto reports PULSCAR's alpha, says the two differ, and its interval spans both."""
    snar = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    auto = PULSNAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    plain = PULSNAR(random_state=0, n_jobs=2, method="pulsnar").fit(snar.X, snar.label)
    pulscar = PULSCAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    assert auto.method_ == "pulscar" and auto.n_clusters_ == 1 and plain.method_ == "pulsnar"
    assert auto.alpha_ == pulscar.alpha_  # PULSCAR itself, on every feature
    evidence = auto.method_evidence_
    assert evidence["n_clusters"] == plain.n_clusters_ > 1 and plain.method_evidence_ is None
    # the clusters as method="pulsnar" reads them
    assert evidence["readings"]["pulsnar"] == pytest.approx(plain.alpha_, abs=5e-5)
    assert evidence["readings"]["pulscar"] == pytest.approx(auto.alpha_, abs=5e-5)
    assert evidence["readings_differ"] and auto.alpha_ < snar.true_alpha - 0.05
    interval = auto.alpha_interval_
    assert {"pulscar kernel", "pulscar tail", "pulsnar kernel", "pulsnar tail"} == set(
        interval.readings
    )
    assert interval.low <= auto.alpha_ and plain.alpha_ <= interval.high
    assert interval.low <= snar.true_alpha <= interval.high
    assert set(plain.alpha_interval_.readings) == {"pulsnar kernel", "pulsnar tail"}


def test_auto_does_not_warn_where_subtypes_hidden_alike_read_alike():
    """SCAR: two separated blobs of positives, 30% of each hidden at random. The clusters
    read what PULSCAR reads, within their noise: no warning, PULSCAR's alpha."""
    from benchmarks.realdata import scar_pu_data

    rng = np.random.default_rng(4)
    centres = np.array([[3.0, 3.0, 0, 0], [-3.0, 3.0, 0, 0], [0.0, -3.0, 0, 0]])
    group = np.repeat([0, 1, 2], [1500, 1500, 3000])
    X = centres[group] + rng.normal(size=(group.size, 4))
    scar = scar_pu_data(X, group < 2, 0.3, random_state=0)
    auto = PULSNAR(random_state=0, n_jobs=2).fit(scar.X, scar.label)
    assert auto.method_evidence_["n_clusters"] >= 2
    assert auto.method_evidence_["readings_differ"] is False
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
    assert top3.method_evidence_["readings_differ"] is None
    assert top3.alpha_ == full.alpha_  # PULSCAR either way: only the evidence differs


def test_the_report_says_when_one_cluster_rests_on_part_of_the_features():
    from pulsnar_dask.report import plain_reading

    evidence = {"n_clusters": 1, "cluster_features": 100, "model_features": 1007,
                "subtypes_may_be_unseen": True, "readings_differ": False, "reason": ""}  # fmt: skip
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


def test_the_report_says_what_the_clusters_read_and_whether_it_differs():
    from pulsnar_dask.report import plain_reading

    evidence = {"n_clusters": 5, "readings": {"pulscar": 0.2, "pulsnar": 0.31},
                "readings_differ": True, "subtypes_may_be_unseen": False, "reason": ""}  # fmt: skip
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
    assert "further apart than their noise" in text
    evidence["readings_differ"] = False
    assert "further apart" not in plain_reading(summary)


def test_pulsnar_refuses_a_method_it_does_not_run_before_any_work():
    d = make_pu_data("scar", 50, 200, 3, 0.2, random_state=0)
    with pytest.raises(ValueError, match="unknown PULSNAR method 'pulscar'; choose one of auto"):
        PULSNAR(method="pulscar").fit(d.X, d.label)
