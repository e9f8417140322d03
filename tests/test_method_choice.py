"""method="auto": PULSCAR or PULSNAR from the clusters' subtype mix (pu.choose_method)."""

import numpy as np
import pytest

from pulsnar_dask import PULSCAR, PULSNAR, estimate_alpha, make_pu_data
from pulsnar_dask.core.alpha import valley_cut
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.interval import Z_95, AlphaInterval
from pulsnar_dask.core.scar_or_snar import (
    SCAR_MIX_DISTANCE,
    choose_method,
    scar_mix_noise,
    subtype_mix_distance,
)


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


@pytest.mark.parametrize(
    ("alphas", "sizes", "method"),
    [
        ([0.2], [500], "pulscar"),
        ([0.05, 0.15], [100, 300], "pulscar"),
        ([0.06, 0.14], [100, 300], "pulscar"),  # distance 0.05
        ([0.1, 0.1], [100, 300], "pulsnar"),  # distance 0.25
    ],
)
def test_choose_method_from_the_clusters(alphas, sizes, method):
    chosen, evidence = choose_method(np.array(alphas), np.array(sizes))
    assert chosen == method
    assert evidence["n_clusters"] == len(sizes)
    assert evidence["threshold"] == SCAR_MIX_DISTANCE
    assert (evidence["subtype_mix_distance"] < SCAR_MIX_DISTANCE) == (method == "pulscar")
    assert evidence["reason"]


def test_scar_mix_noise_is_the_binomial_quantile_for_two_clusters():
    from scipy import stats

    # two equal clusters: the distance of a draw is |k/n - 1/2|, k ~ Binomial(n, 1/2)
    for n in (20, 100, 1000):
        k = np.arange(n + 1)
        distance = np.abs(k / n - 0.5)
        order = np.argsort(distance)
        cdf = np.cumsum(stats.binom.pmf(k[order], n, 0.5))
        exact = distance[order][np.searchsorted(cdf, 0.95)]
        assert scar_mix_noise(np.array([300, 300]), n) == pytest.approx(exact, abs=1.5 / n + 0.005)
    # fewer hidden positives, more noise; none at all: no evidence of anything
    sizes = np.array([500, 300, 200, 100])
    assert scar_mix_noise(sizes, 20) > scar_mix_noise(sizes, 200) > scar_mix_noise(sizes, 2000)
    assert scar_mix_noise(sizes, 0.2) == 1.0
    assert scar_mix_noise(np.array([500]), 50) == 0.0
    # clusters under MIX_MIN_SHARE are left out, as in the distance
    assert scar_mix_noise(np.array([300, 300, 5]), 100) == scar_mix_noise(np.array([300, 300]), 100)


def test_a_distance_within_sampling_noise_keeps_pulscar():
    alphas, sizes = np.array([0.1, 0.1]), np.array([100, 300])  # distance 0.25
    # 5 draws at 1/4: |k/5 - 1/4| is 0.35 or more with probability 0.10, 0.55 with 0.016
    few, evidence = choose_method(alphas, sizes, n_hidden=5)
    assert evidence["sampling_noise"] == pytest.approx(0.35)
    assert evidence["subtype_mix_distance"] == 0.25
    assert few == "pulscar" and "no more than sampling 5 hidden positives" in evidence["reason"]
    many, evidence = choose_method(alphas, sizes, n_hidden=1000)
    assert evidence["sampling_noise"] < 0.05 and many == "pulsnar"
    for unknown in (None, float("nan")):  # no count: no test
        assert choose_method(alphas, sizes, n_hidden=unknown) == choose_method(alphas, sizes)
        assert choose_method(alphas, sizes, n_hidden=unknown)[1]["sampling_noise"] is None
    none_read, evidence = choose_method(alphas, sizes, n_hidden=0.3)
    assert none_read == "pulscar" and "no hidden positive is read" in evidence["reason"]
    with pytest.raises(ValueError, match="finite"):
        scar_mix_noise(sizes, float("inf"))


def test_one_cluster_on_part_of_the_features_is_weak_evidence_of_scar():
    method, evidence = choose_method(np.array([0.15]), np.array([500]), 100, 1007)
    assert method == "pulscar" and evidence["subtypes_may_be_unseen"]
    assert "one cluster on the top 100 of the 1007 features" in evidence["reason"]
    assert (evidence["cluster_features"], evidence["model_features"]) == (100, 1007)
    # every feature clustered, or several clusters found, or the counts unknown: no caveat
    for args in [([0.15], [500], 12, 12), ([0.05, 0.15], [100, 300], 100, 1007), ([0.2], [5])]:
        _, evidence = choose_method(*map(np.array, args[:2]), *args[2:])
        assert not evidence["subtypes_may_be_unseen"], args
        assert "may" not in evidence["reason"]
    assert "cluster_features" not in evidence


def test_the_report_says_when_one_cluster_rests_on_part_of_the_features():
    from pulsnar_dask.report import plain_reading

    evidence = choose_method(np.array([0.15]), np.array([500]), 100, 1007)[1]
    summary = {"n_unlabeled": 1000, "hidden_positives": 150, "alpha": 0.15, "n_positive": 500,
               "method": "pulscar", "settings": {"alpha_estimator": "kernel"},
               "pu_auc": [0.8], "alpha_identified": True, "method_evidence": evidence}  # fmt: skip
    text = plain_reading(summary)
    assert "That rests on the top 100 of the 1,007 features the classifier uses" in text
    summary["method_evidence"] = choose_method(np.array([0.15]), np.array([500]), 12, 12)[1]
    assert "That rests on" not in plain_reading(summary)
    summary.update(alpha_may_be_high=True, negative_auc=0.745)
    assert "unlabeled negatives overlap (AUC between them at most about 0.745, below 0.8)" in (
        plain_reading(summary)
    )


def test_auto_flags_one_cluster_found_on_the_top_features_only():
    """SCAR data, 12 features: clustered on all of them no caveat; on the top 3 the one
    cluster found rests on a quarter of the features, and the evidence says so (without
    the valley reader, whose reading rests on no cluster and clears the flag: below)."""
    scar = make_pu_data("scar", 600, 3000, 12, 0.2, class_sep=2.0, random_state=0)
    full = PULSNAR(random_state=0, n_jobs=2, valley_depth=0).fit(scar.X, scar.label)
    top3 = PULSNAR(random_state=0, n_jobs=2, max_cluster_features=3, valley_depth=0)
    top3.fit(scar.X, scar.label)
    assert full.method_ == top3.method_ == "pulscar"
    assert full.method_evidence_["n_clusters"] == top3.method_evidence_["n_clusters"] == 1
    assert not full.method_evidence_["subtypes_may_be_unseen"]
    assert top3.method_evidence_["subtypes_may_be_unseen"]
    assert top3.method_evidence_["cluster_features"] == 3
    assert top3.method_evidence_["model_features"] == full.method_evidence_["model_features"]
    assert top3.alpha_ == full.alpha_  # PULSCAR either way: only the evidence differs
    valley = PULSNAR(random_state=0, n_jobs=2, max_cluster_features=3).fit(scar.X, scar.label)
    assert valley.method_evidence_["valley"]["credible"]
    assert not valley.method_evidence_["subtypes_may_be_unseen"]


def test_auto_keeps_pulsnar_on_snar_data_and_pulscar_on_scar_data():
    """The clusters' mix decides where the unlabeled rows' scores show no plain valley
    (``valley_depth=0`` here: both tables have one, and the default reads alpha there)."""
    snar = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    auto = PULSNAR(random_state=0, n_jobs=2, valley_depth=0).fit(snar.X, snar.label)
    plain = PULSNAR(random_state=0, n_jobs=2, method="pulsnar").fit(snar.X, snar.label)
    assert auto.method_ == "pulsnar" and plain.method_ == "pulsnar"
    assert auto.method_evidence_["subtype_mix_distance"] >= SCAR_MIX_DISTANCE
    assert plain.method_evidence_ is None
    assert auto.alpha_ == plain.alpha_ and auto.n_clusters_ == plain.n_clusters_ > 1
    # read at the clusters, the interval also spans the count that assumes the classes
    # do not overlap (a second scoring that method="pulsnar" does not run)
    separated = auto.method_evidence_["separated"]
    readings = auto.alpha_interval_.readings
    assert readings["separated count"] == (separated["alpha"], 0.0)
    assert separated["reliable_negatives"] >= 50  # ten per fold at least
    # the classes are apart here: the count reads the truth, within the other readings
    assert separated["alpha"] == pytest.approx(snar.true_alpha, abs=0.03)
    others = [
        (a - Z_95 * sd, a + Z_95 * sd) for k, (a, sd) in readings.items() if k != "separated count"
    ]
    assert min(lo for lo, _ in others) < separated["alpha"] < max(hi for _, hi in others)
    assert separated["extends_interval"] is False
    assert "separated count" not in plain.alpha_interval_.readings
    no_interval = PULSNAR(random_state=0, n_jobs=2, valley_depth=0, interval_resamples=0)
    assert "separated" not in no_interval.fit(snar.X, snar.label).method_evidence_

    scar = two_subtypes_labeled_at_random()
    auto = PULSNAR(random_state=0, n_jobs=2, valley_depth=0).fit(scar.X, scar.label)
    assert auto.method_evidence_["n_clusters"] >= 2  # two subtypes (or pieces), hidden alike
    assert auto.method_evidence_["subtype_mix_distance"] < SCAR_MIX_DISTANCE
    assert auto.method_ == "pulscar" and auto.n_clusters_ == 1
    assert "valley" not in auto.method_evidence_
    # PULSCAR itself, on every feature
    assert auto.alpha_ == PULSCAR(random_state=0, n_jobs=2).fit(scar.X, scar.label).alpha_
    assert auto.alpha_ == pytest.approx(scar.true_alpha, abs=0.03)
    # the default finds the valley of the same probabilities, and reads alpha at that of
    # the second scoring (against the rows below it), as right under SCAR
    valley = PULSNAR(random_state=0, n_jobs=2).fit(scar.X, scar.label)
    evidence = valley.method_evidence_["valley"]
    assert evidence["credible"] and valley.method_ == "pulscar"
    assert evidence["cut"] == valley_cut(auto.oof_proba_, scar.label).as_dict()["cut"]
    assert evidence["rescored"]["credible"]
    assert valley.alpha_ == pytest.approx(evidence["rescored"]["alpha"], abs=5e-5)
    assert valley.alpha_ == pytest.approx(scar.true_alpha, abs=0.03)


def test_the_report_says_which_way_the_separated_count_lies_and_why():
    from pulsnar_dask.report import plain_reading

    separated = {"alpha": 0.41, "reliable_negatives": 900, "extends_interval": True}
    summary = {"n_unlabeled": 1000, "hidden_positives": 200, "alpha": 0.2, "n_positive": 500,
               "method": "pulsnar", "settings": {"alpha_estimator": "kernel"},
               "pu_auc": [0.9], "alpha_identified": True, "alpha_interval": [0.15, 0.41],
               "interval_readings": {"pulsnar kernel": {"alpha": 0.2, "sd": 0.02},
                                     "separated count": {"alpha": 0.41, "sd": 0.0}},
               "method_evidence": {"separated": separated}}  # fmt: skip
    text = plain_reading(summary)
    assert "did not overlap (0.410): a second classifier" in text
    assert "against the 900 unlabeled rows least like them" in text
    assert "It lies above every other reading" in text and "miss positives of kinds" in text
    summary.update(alpha_may_be_high=True, negative_auc=0.75)  # the run found the overlap
    text = plain_reading(summary)
    assert "the classes overlap here (below), which makes this count high too" in text
    assert "cannot tell which" not in text
    separated["alpha"] = 0.05  # below the clusters' reading: it set the lower end
    summary.update(alpha_interval=[0.05, 0.24])
    summary["interval_readings"]["separated count"]["alpha"] = 0.05
    text = plain_reading(summary)
    assert "It lies below every other reading" in text and "counts negatives" in text
    assert "makes this count high" not in text
    separated["extends_interval"] = False  # within the others: described, nothing more
    text = plain_reading(summary)
    assert "did not overlap (0.050)" in text and "every other reading" not in text


def test_the_separated_reading_joins_the_interval_and_says_whether_it_widened_it():
    from pulsnar_dask.pipeline.method_choice import spanning_separated

    interval = AlphaInterval(0.2, 0.3, {"pulsnar kernel": (0.25, 0.02)})
    for alpha, span, extends in [
        (0.26, (0.2, 0.3), False),
        (0.3, (0.2, 0.3), False),  # at the end: not outside it
        (0.41, (0.2, 0.41), True),
        (0.05, (0.05, 0.3), True),
    ]:
        separated = {"alpha": alpha, "reliable_negatives": 900}
        wide = spanning_separated(interval, separated)
        assert (wide.low, wide.high) == span and separated["extends_interval"] is extends
        assert wide.readings == {"pulsnar kernel": (0.25, 0.02), "separated count": (alpha, 0.0)}
    assert interval.readings == {"pulsnar kernel": (0.25, 0.02)}  # not changed in place
    # a low end clipped to 0: a count of 0 lies within it
    separated = {"alpha": 0.0, "reliable_negatives": 900}
    spanning_separated(AlphaInterval(0.0, 0.1, {}), separated)
    assert separated["extends_interval"] is False


def two_subtypes_labeled_at_random():
    """Positives in two separated blobs, 30% of each hidden at random; negatives apart."""
    from benchmarks.realdata import scar_pu_data

    rng = np.random.default_rng(4)
    centres = np.array([[3.0, 3.0, 0, 0], [-3.0, 3.0, 0, 0], [0.0, -3.0, 0, 0]])
    group = np.repeat([0, 1, 2], [1500, 1500, 3000])
    X = centres[group] + rng.normal(size=(group.size, 4))
    return scar_pu_data(X, group < 2, 0.3, random_state=0)


def test_auto_keeps_pulscar_where_few_hidden_positives_make_any_mix_look_snar():
    """SCAR on the digits (nine subtypes, 9 positives hidden among 192 unlabeled rows): the
    clusters' hidden shares are 0.37 from their labeled ones, far past the fixed 0.1, but
    sampling the 18 that PULSNAR reads over some twenty clusters reaches 0.54; PULSCAR is
    kept and reads the truth (PULSNAR, chosen before, summed the clusters' noise to 0.093
    for 0.047)."""
    from pathlib import Path

    from benchmarks.realdata import REAL_SETS, scar_pu_data

    X, classes = REAL_SETS["SNAR_digits"].read(Path("."))
    values, sizes = np.unique(classes, return_counts=True)
    d = scar_pu_data(X, classes != values[np.argmax(sizes)], 0.05, 0)
    est = PULSNAR(random_state=0, n_jobs=2, interval_resamples=0).fit(d.X, d.label)
    evidence = est.method_evidence_
    assert evidence["n_clusters"] > 1
    assert evidence["threshold"] < evidence["subtype_mix_distance"] <= evidence["sampling_noise"]
    assert est.method_ == "pulscar"
    assert est.alpha_ == pytest.approx(d.true_alpha, abs=0.01)


def test_pulsnar_refuses_a_method_it_does_not_run_before_any_work():
    d = make_pu_data("scar", 50, 200, 3, 0.2, random_state=0)
    with pytest.raises(ValueError, match="unknown PULSNAR method 'pulscar'; choose one of auto"):
        PULSNAR(method="pulscar").fit(d.X, d.label)


def _scored(p: np.ndarray, y: np.ndarray, ids: np.ndarray):
    from pulsnar_dask.core.subproblem import SubproblemResult

    return SubproblemResult(ids, y, p, estimate_alpha(p, y), features=("f0", "f1"))


def test_the_valley_is_read_on_the_second_scoring_where_its_dip_is_plain_too():
    """valley_readings: where PULSCAR's dip is plain, each iteration is scored again
    without training on its unlabeled rows above the labeled positives' 5% quantile, and
    alpha is read at the second scoring's dip where that one is plain, else at the first;
    too few reliable negatives, or no plain first dip, and there is no second scoring."""
    from test_alpha import _separated_subtypes

    from pulsnar_dask.core.alpha import reliable_negatives, separated_count
    from pulsnar_dask.pipeline.method_choice import MIN_RELIABLE_NEGATIVES_PER_FOLD, valley_readings

    p, y, _ = _separated_subtypes()
    ids = np.arange(p.size) * 3
    first = [_scored(p, y, ids), _scored(p, y, ids)]  # two iterations
    asked: list = []
    second_p = p.copy()
    second_p[:4000] /= 10  # the negatives (the first rows) scored lower: a deeper dip

    def rescore(pairs):
        asked.append([untrained for _, untrained in pairs])
        assert [r for r, _ in pairs] == first
        return [_scored(second_p, y, ids) for _ in pairs]

    config = PUConfig()
    evidence: dict = {}
    runs = valley_readings(first, evidence, config, 0, rescore)
    above = ids[(y == 0) & ~reliable_negatives(p, y)]
    assert len(asked) == 1 and all(np.array_equal(u, above) for u in asked[0])
    second = valley_cut(second_p, y)
    assert evidence["valley"]["rescored"] == {
        **second.as_dict(),
        "reliable_negatives": int(reliable_negatives(p, y).sum()),
        "credible": True,
    }
    assert [r.alpha for r in runs] == [second.alpha, second.alpha]
    assert all(np.array_equal(r.probabilities, second_p) for r in runs)
    assert "scored against the" in evidence["reason"]
    # the second scoring's count of the rows that look positive, recorded beside
    count = separated_count(second_p, y, reliable_negatives(p, y))
    assert evidence["separated"] == {
        "alpha": round(count, 4),
        "reliable_negatives": int(reliable_negatives(p, y).sum()),
    }
    # a second scoring without a plain dip: read at the first
    flat = np.where(y == 1, p, np.full_like(p, np.median(p[y == 1])))
    evidence = {}
    runs = valley_readings(first, evidence, config, 0, lambda _: [_scored(flat, y, ids)] * 2)
    assert evidence["valley"]["rescored"]["credible"] is False
    assert [r.alpha for r in runs] == [valley_cut(p, y).alpha] * 2
    assert all(r.probabilities is p for r in runs)
    # too few reliable negatives to learn from: no second scoring
    n_folds = int(reliable_negatives(p, y).sum()) // MIN_RELIABLE_NEGATIVES_PER_FOLD + 1
    evidence, asked = {}, []
    runs = valley_readings(first, evidence, config.with_(n_folds=n_folds), 0, rescore)
    assert not asked and "rescored" not in evidence["valley"] and "separated" not in evidence
    assert [r.alpha for r in runs] == [valley_cut(p, y).alpha] * 2
    # no plain first dip: neither reading
    assert valley_readings(first, {}, config.with_(valley_depth=0.001), 0, rescore) is None
    assert not asked
