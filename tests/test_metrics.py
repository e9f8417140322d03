import numpy as np
import pytest
from sklearn import metrics as skm

from pulsnar_dask.core.metrics import classification_metrics, implied_negative_auc, roc_auc


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.random(500) < 0.3
    # coarse scores: many ties, which AUC and AP must handle as sklearn does
    p = np.round(np.clip(0.3 * y + rng.random(500) * 0.7, 0, 1), 1)
    got = classification_metrics(y, p)
    predicted = p >= 0.5
    expected = {
        "accuracy": skm.accuracy_score(y, predicted),
        "roc_auc": skm.roc_auc_score(y, p),
        "brier": skm.brier_score_loss(y, p),
        "f1": skm.f1_score(y, predicted),
        "mcc": skm.matthews_corrcoef(y, predicted),
        "average_precision": skm.average_precision_score(y, p),
    }
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name


@pytest.mark.parametrize("share", [0.02, 0.5, 0.95])
def test_roc_auc_matches_sklearn_whichever_class_is_larger(share):
    # the larger class is sorted and the smaller searched in it: both branches, with ties
    rng = np.random.default_rng(1)
    y = rng.random(3000) < share
    p = np.round(rng.random(3000) + 0.3 * y, 2)
    assert roc_auc(y, p) == pytest.approx(skm.roc_auc_score(y, p), abs=1e-12)
    assert roc_auc(y, np.zeros(3000)) == 0.5  # every pair level
    assert np.isnan(roc_auc(y, np.where(np.arange(3000) == 7, np.nan, p)))
    assert np.isnan(roc_auc(np.ones(5, bool), np.arange(5.0)))


def test_metrics_on_a_fixed_small_input():
    y = np.array([1, 0, 1, 0])
    p = np.array([0.9, 0.6, 0.4, 0.1])
    m = classification_metrics(y, p)
    assert m["accuracy"] == 0.5
    assert m["roc_auc"] == 0.75
    assert m["f1"] == 0.5
    assert m["mcc"] == 0.0
    assert m["brier"] == pytest.approx((0.01 + 0.36 + 0.36 + 0.01) / 4)
    assert m["average_precision"] == pytest.approx((1 + 2 / 3) / 2)


def test_implied_negative_auc_recovers_the_negatives_auc_of_a_scar_mixture():
    rng = np.random.default_rng(0)
    positives = rng.normal(size=4000)
    negatives = rng.normal(0.8, 1.0, size=6000)  # below the positives: AUC about 0.71
    hidden = positives.copy()  # scored exactly like the labeled positives: AUC 0.5
    alpha = hidden.size / (hidden.size + negatives.size)

    def auc(others):  # of labeled positives against others, by a score falling with x
        scores = -np.r_[positives, others]
        return roc_auc(np.r_[np.ones(positives.size), np.zeros(others.size)], scores)

    implied = implied_negative_auc(auc(np.r_[hidden, negatives]), alpha)
    assert implied == pytest.approx(auc(negatives), abs=1e-12)
    assert 0.68 < implied < 0.74
    # read at a higher alpha (an upper bound) it is higher: it bounds the truth from above
    assert implied_negative_auc(auc(np.r_[hidden, negatives]), alpha + 0.1) > implied
    assert implied_negative_auc(0.75, 0.5) == 1.0  # clipped
    assert np.isnan(implied_negative_auc(0.9, 1.0))
