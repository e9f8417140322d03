"""scikit-learn's estimator checks, for the ones that apply to a PU estimator.

A PU estimator's labels carry meaning: 1 is a labeled positive, 0 an unlabeled row, and
anything else is refused. The checks draw their own labels (several classes, or numbers),
so :class:`PULabels` maps each check's labels onto 0 and 1 before fitting; every other part
of the contract (parameters, fitted attributes, input validation, invariances) is checked
on the estimators as they are.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import make_scorer, roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.errors import PUError


def pu_labels(y):
    """A check's labels as PU labels: of two classes, the larger value labeled positive;
    of more, the upper half of the rows ranked by label (ties in row order), so that
    either label has enough rows for the folds."""
    if y is None:
        return y
    y = np.asarray(y)
    shape, y = y.shape, y.ravel()
    values = np.unique(y)
    if len(values) <= 2:
        return (y == values[-1]).astype(np.int8).reshape(shape) if y.size else y
    labels = np.zeros(y.size, dtype=np.int8)
    labels[np.argsort(y, kind="stable")[y.size // 2 :]] = 1
    return labels.reshape(shape)


class PULabels:
    def fit(self, X, y, client=None):
        return super().fit(X, pu_labels(y), client)


class CheckedPULSCAR(PULabels, PULSCAR):
    pass


class CheckedPULSNAR(PULabels, PULSNAR):
    pass


# Checks that cannot apply, and why.
REFUSED = (
    "labels other than 0 and 1 are refused by name, not read as classes "
    "(test_labels_other_than_0_and_1_are_refused); the adapter maps the check's labels, so "
    "the refusal the check looks for cannot happen here"
)
NOT_APPLICABLE = {
    "check_classifiers_classes": (
        "checks that classes_ are the check's own labels ('one', 'two', ...): a PU "
        "estimator's classes are always 0 (unlabeled) and 1 (labeled positive)"
    ),
    "check_classifiers_regression_target": REFUSED,
    "check_classifier_not_supporting_multiclass": REFUSED,
    "check_fit2d_1feature": (
        "fits 10 rows whose labels leave 3 in one class, and 5-fold cross-validation needs "
        "at least 5 rows of each label: refused with that message, not the one the check "
        "expects for a single feature (one feature with enough rows fits: "
        "test_one_feature_fits)"
    ),
}

FAST = {"n_rounds": 10, "interval_resamples": 0}


@parametrize_with_checks(
    [CheckedPULSCAR(**FAST), CheckedPULSNAR(max_clusters=3, **FAST)],
    expected_failed_checks=lambda est: NOT_APPLICABLE,
)
def test_sklearn_estimator_check(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "y", [np.arange(40) % 3, np.linspace(0, 1, 40), np.where(np.arange(40) % 2, "a", "b")]
)
def test_labels_other_than_0_and_1_are_refused(y):
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(PUError, match="y must hold only the numbers 0 and 1; found"):
        PULSCAR(**FAST).fit(X, y)


def test_one_feature_fits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    y = (X[:, 0] + rng.normal(size=200) > 0.5).astype(int)
    est = PULSCAR(**FAST).fit(X, y)
    assert est.n_features_in_ == 1
    assert est.predict_proba(X).shape == (200, 2)


def test_in_a_pipeline_under_grid_search_and_cloned():
    """Model selection on PU labels: the PU AUC (labeled positives against unlabeled
    rows) ranks the settings, and the refitted estimator reads alpha."""
    data = make_pu_data("scar", 300, 900, 5, 0.2, random_state=0)
    pipe = make_pipeline(StandardScaler(), PULSCAR(**FAST))
    scorer = make_scorer(roc_auc_score, response_method="predict_proba")
    search = GridSearchCV(pipe, {"pulscar__n_rounds": [5, 10]}, scoring=scorer, cv=3)
    search.fit(data.X, data.label)
    assert search.best_params_["pulscar__n_rounds"] in (5, 10)
    assert 0.5 < search.best_score_ <= 1
    fitted = search.best_estimator_[-1]
    assert 0.1 < fitted.alpha_ < 0.3
    again = clone(fitted)
    assert again.get_params() == fitted.get_params() and not hasattr(again, "alpha_")
    assert again.set_params(n_rounds=7).n_rounds == 7
