import numpy as np
import pytest
from sklearn import metrics as skm

from pulsnar_dask.core.metrics import classification_metrics


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
