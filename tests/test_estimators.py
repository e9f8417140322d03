import re

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from pulsnar_dask import PULSCAR, PULSNAR, estimate_alpha, make_pu_data
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.metrics import classification_metrics
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.result import OVERLAP_AUC, WIDE_INTERVAL


@pytest.fixture(scope="module")
def snar():
    return make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)


def test_pulscar_on_easy_scar_data_and_sklearn_conventions():
    d = make_pu_data("scar", 800, 4000, 8, 0.25, class_sep=2.0, random_state=1)
    est = PULSCAR(random_state=0, n_jobs=2)
    assert clone(est).get_params() == est.get_params()
    X = pd.DataFrame(d.X, columns=[f"f{i}" for i in range(8)])
    fitted = est.fit(X, pd.Series(d.label))
    assert fitted is est
    assert est.alpha_ == pytest.approx(d.true_alpha, abs=0.05)
    assert est.n_clusters_ == 1 and est.oof_proba_.shape == (4800,)
    assert np.isfinite(est.oof_proba_).all()
    assert est.negative_auc_ > OVERLAP_AUC  # separated classes: no overlap warning
    assert 0 < est.alpha_interval_.low < d.true_alpha < est.alpha_interval_.high


def test_overlapping_classes_warn_that_alpha_may_be_far_too_high(caplog):
    # positives N(0, 1), negatives shifted 0.7 in two of four features (AUC about 0.69
    # between them): the labeled-vs-unlabeled AUC (about 0.65) still identifies alpha,
    # but every reading counts the negatives that resemble positives
    from benchmarks.realdata import scar_pu_data

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2500, 4)).astype(np.float32)
    X[1500:, :2] += 0.7
    d = scar_pu_data(X, np.arange(2500) < 1500, 0.2, 0)
    est = PULSCAR(random_state=0, n_jobs=2).fit(d.X, d.label)
    assert est.subproblems_[0].pu_auc > 0.6
    assert est.negative_auc_ < OVERLAP_AUC
    assert est.alpha_ > d.true_alpha + 0.05
    assert "labeled positives and unlabeled negatives overlap" in caplog.text
    # every reading is an upper bound: the interval starts at 0 and holds the truth
    assert est.alpha_interval_.low == 0.0 < d.true_alpha < est.alpha_interval_.high
    assert "(it starts at 0, as the classes overlap; the summary's interval_readings" in (
        caplog.text
    )


@pytest.mark.parametrize(
    ("n_pos", "n_unlab", "class_sep", "imprecise"),
    [(300, 600, 0.5, True), (400, 2000, 1.0, False)],
)
def test_an_interval_too_wide_to_act_on_warns(n_pos, n_unlab, class_sep, imprecise, caplog):
    # few, weakly separated rows: the reading's bootstrap spread makes the interval wider
    # than the width line; five times the unlabeled rows, better separated: it does not
    d = make_pu_data("scar", n_pos, n_unlab, 4, 0.3, class_sep=class_sep, random_state=0)
    est = PULSCAR(random_state=0, n_jobs=2).fit(d.X, d.label)
    width = est.alpha_interval_.high - est.alpha_interval_.low
    assert (width > WIDE_INTERVAL) is imprecise
    assert ("alpha is imprecise" in caplog.text) is imprecise
    if imprecise:
        assert f"95% interval is {width:.3f} wide" in caplog.text
        assert "interval_readings show which readings widen it" in caplog.text


def test_pulsnar_finds_the_subtypes_and_sums_cluster_alphas(snar):
    est = PULSNAR(random_state=0, n_jobs=2, max_clusters=6, method="pulsnar")
    est.fit(snar.X, snar.label)
    # three subtypes: three clusters (a tiny extra component is merged into its neighbour)
    assert est.n_clusters_ == 3 == len(est.cluster_alphas_)
    assert est.alpha_ == pytest.approx(est.cluster_alphas_.sum())
    assert est.alpha_ == pytest.approx(snar.true_alpha, abs=0.06)
    # auto scores PULSCAR's subproblem, with the same clusters scored beside it (each
    # cluster's subproblem has its own AUC and alpha: no implied AUC for PULSNAR's); here
    # the clusters' tail reading lies past PULSCAR's, so alpha is theirs
    pulscar = PULSCAR(random_state=0, n_jobs=2).fit(snar.X, snar.label)
    auto = PULSNAR(random_state=0, n_jobs=2, max_clusters=6).fit(snar.X, snar.label)
    readings = auto.method_evidence_["readings"]
    assert readings["pulscar"] == pulscar.alpha_ and est.negative_auc_ is None
    assert auto.negative_auc_ == pulscar.negative_auc_ > 0.9
    assert readings["pulsnar"] == pytest.approx(est.alpha_, abs=5e-5)
    assert auto.method_ == "pulsnar" and auto.alpha_ == pytest.approx(est.alpha_, abs=5e-5)
    # clusters are pure subtypes
    pos_types = snar.true_label[snar.label == 1]
    for c in range(est.n_clusters_):
        members = pos_types[est.clustering_.labels == c]
        assert np.bincount(members).max() / members.size > 0.95
    assert len(est.clustering_.bic) == 6


def test_pulsnar_takes_claim_overlap(snar):
    """Three subtypes split into six clusters: the halves of a subtype claim the same
    unlabeled rows, which the default counts once and ``claim_overlap=1`` sums."""
    fits = {
        overlap: PULSNAR(
            random_state=0, n_jobs=2, n_clusters=6, method="pulsnar", claim_overlap=overlap
        ).fit(snar.X, snar.label)
        for overlap in (0.3, 1.0)
    }
    assert fits[0.3].get_params()["claim_overlap"] == 0.3 == PULSNAR().claim_overlap
    np.testing.assert_array_equal(fits[0.3].cluster_alphas_, fits[1.0].cluster_alphas_)
    assert fits[1.0].alpha_ == pytest.approx(fits[1.0].cluster_alphas_.sum())
    assert fits[0.3].alpha_ < fits[1.0].alpha_ - 0.02
    assert fits[0.3].alpha_ == pytest.approx(snar.true_alpha, abs=0.02)


def test_pulsnar_is_reproducible_and_seed_sensitive(snar):
    a = PULSNAR(random_state=3, n_clusters=3, n_jobs=2).fit(snar.X, snar.label)
    b = PULSNAR(random_state=3, n_clusters=3, n_jobs=2).fit(snar.X, snar.label)
    assert a.alpha_ == b.alpha_
    np.testing.assert_array_equal(a.oof_proba_, b.oof_proba_)
    assert a.clustering_.bic.size == 0
    # another seed: other folds and models, so other probabilities and another alpha
    c = PULSNAR(random_state=4, n_clusters=3, n_jobs=2).fit(snar.X, snar.label)
    assert np.mean(c.oof_proba_ != a.oof_proba_) > 0.9
    assert c.alpha_ != a.alpha_


def test_calibration_and_classification_improve_on_pu_labels(snar):
    est = PULSNAR(random_state=0, n_clusters=3, classify=True, n_jobs=2).fit(snar.X, snar.label)
    truth = snar.true_label > 0
    assert est.calibrated_proba_.shape == truth.shape
    base = PULSCAR(random_state=0, n_jobs=2).fit(snar.X, snar.label).oof_proba_
    with_pu = classification_metrics(truth, est.improved_proba_)
    without = classification_metrics(truth, base)
    assert with_pu["mcc"] > without["mcc"]
    assert with_pu["average_precision"] > without["average_precision"] - 0.01


@pytest.mark.parametrize(
    ("X", "y", "message"),
    [
        (np.ones((3, 2)), [0, 1, 2], "y must hold only the numbers 0 and 1; found 2"),
        (np.ones((3, 2)), [0, 1], "has 3 rows but y has 2"),
        (np.array([[1.0, np.inf], [0, 0], [1, 1]]), [0, 1, 0], "cannot hold: x1 \\(1 row\\)"),
        (np.array([[1e39, 1.0], [0, 0], [1, 1]]), [0, 1, 0], "cannot hold: x0 \\(1 row\\)"),
        (np.ones(3), [0, 1, 0], "2-dimensional"),
        (np.ones((3, 2)), pd.array([0, 1, pd.NA], dtype="boolean"), "found missing \\(1 row\\)"),
    ],
)
def test_bad_inputs(X, y, message):
    with pytest.raises(ValueError, match=message):
        PULSCAR().fit(X, y)


def test_a_fixed_cluster_count_that_is_not_kept_is_said(snar, caplog):
    est = PULSNAR(method="pulsnar", n_clusters=40, interval_resamples=0, random_state=0)
    with caplog.at_level("WARNING", logger="pulsnar_dask.pipeline.clusters"):
        est.fit(snar.X, snar.label)
    assert est.n_clusters_ < 40
    assert (
        f"40 clusters were asked for and {est.n_clusters_} kept: the mixture had 40 components, "
        "and those holding fewer than 12 positives (min_cluster_fraction, never under 10) "
        "were merged"
    ) in caplog.text


def test_api_misuse_is_one_clear_error(snar, tmp_path):
    """A string for a list, a list for a dict, repeated column names, sparse or infinite
    rows to score: each a PUError naming it rather than a TypeError from within."""
    import scipy.sparse

    X, y = snar.X[:, :3], snar.label
    for estimator, data, message in [
        (PULSCAR(categorical_features="x0"), X, "a list of column names, got the string 'x0'"),
        (PULSCAR(xgb_params=[1]), X, "xgb_params must be a dict of XGBoost parameters"),
        (PULSCAR(), pd.DataFrame(X, columns=["a", "a", "b"]), "more than one column named 'a'"),
    ]:
        with pytest.raises(PUError, match=re.escape(message)):
            estimator.fit(data, y)
    fitted = PULSCAR(interval_resamples=0).fit(X, y)
    with pytest.raises(PUError, match=re.escape("sparse X is not supported")):
        fitted.predict_proba(scipy.sparse.csr_matrix(X))
    infinite = X.copy()
    infinite[3, 1] = np.inf
    with pytest.raises(PUError, match=re.escape("which the models cannot hold: x1 (1 row)")):
        fitted.predict_proba(infinite)
    # a Dask dataframe: refused as the partition holding the value is computed
    frame = pd.DataFrame(np.roll(infinite, -3, axis=0)[::-1], columns=["x0", "x1", "x2"])
    lazy = fitted.predict_proba(dd.from_pandas(frame, npartitions=2))
    with pytest.raises(PUError, match=re.escape("x1 (1 row) (X's partition 1, counted from 0)")):
        lazy.compute()
    finite = dd.from_pandas(pd.DataFrame(X, columns=["x0", "x1", "x2"]), npartitions=2)
    np.testing.assert_allclose(fitted.predict_proba(finite).compute(), fitted.predict_proba(X))
    fitted.save(str(tmp_path / "m"))
    assert PULSCAR.load(str(tmp_path / "m")).n_features_in_ == 3


def test_a_retrain_without_unlabeled_rows_left_is_refused_in_one_line():
    """Where alpha reads so high that relabeling leaves fewer unlabeled rows than folds,
    the retrain cannot run: a PUError saying so, not an error from a fold."""
    from pulsnar_dask.errors import PUError

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(208, 3)), np.r_[np.ones(200), np.zeros(8)]
    with pytest.raises(PUError, match="cannot retrain on the recovered labels: 208 positives"):
        PULSCAR(classify=True, interval_resamples=0).fit(X, y)


def test_bad_options():
    d = make_pu_data("scar", 50, 200, 3, 0.2, random_state=0)
    with pytest.raises(ValueError, match="unknown bin_method 'x'; choose one of square_root"):
        PULSCAR(bin_method="x").fit(d.X, d.label)
    with pytest.raises(ValueError, match="n_folds must be at least 2"):
        PULSCAR(n_folds=1).fit(d.X, d.label)
    with pytest.raises(ValueError, match="bandwidth bounds"):
        PULSCAR(bandwidth_bounds=(0.5, 0.1)).fit(d.X, d.label)
    with pytest.raises(ValueError, match="the seed must be a whole number from 0 to 4294967295"):
        PULSCAR(random_state=-1).fit(d.X, d.label)
    with pytest.raises(ValueError, match="from 0 to 4294967293, got 4294967294"):
        PULSCAR(random_state=2**32 - 2, n_iterations=3).fit(d.X, d.label)
    with pytest.raises(ValueError, match=r"the seed must be a whole number .* got 'x'"):
        PULSCAR(random_state="x").fit(d.X, d.label)
    with pytest.raises(ValueError, match="n_rounds must be at most 100,000, got 1,000,000"):
        PULSCAR(n_rounds=10**6).fit(d.X, d.label)
    # a model other than a tree classifier of one probability, before any model trains
    with pytest.raises(ValueError, match="objective 'binary:logitraw' would not learn"):
        PULSNAR(xgb_params={"objective": "binary:logitraw"}).fit(d.X, d.label)
    with pytest.raises(ValueError, match="num_target makes several outputs a row"):
        PULSCAR(xgb_params={"num_target": 2}).fit(d.X, d.label)
    with pytest.raises(ValueError, match="random_state is not yours to set"):  # seed's alias
        PULSCAR(xgb_params={"random_state": 7}).fit(d.X, d.label)
    dart = {"objective": "binary:logistic", "booster": "dart", "eval_metric": "auc"}
    assert 0 < PULSCAR(xgb_params=dart, interval_resamples=0).fit(d.X, d.label).alpha_ < 1
    # a numpy seed is a seed (the mixtures' seeds are made from it without overflow)
    same = [
        PULSNAR(random_state=s, max_clusters=2, interval_resamples=0).fit(d.X, d.label).alpha_
        for s in (np.int32(7), 7)
    ]
    assert same[0] == same[1]
    # a value of the wrong type is refused naming the setting and its type, not met later
    # by a comparison's TypeError or a failed unpacking
    for params, message in [
        ({"claim_overlap": None}, "claim_overlap must be float, got None"),
        ({"bandwidth_bounds": (0.1,)}, r"bandwidth_bounds must be \(float, float\), got \(0.1,\)"),
        ({"bandwidth_bounds": (0.1, [0.5])}, r"bandwidth_bounds must be .*, got \(0.1, \[0.5\]\)"),
        ({"n_folds": "5"}, "n_folds must be int, got '5'"),
        ({"n_folds": True}, "n_folds must be int, got True"),
        ({"max_train_rows": 1e6}, "max_train_rows must be int or None, got 1000000.0"),
    ]:
        with pytest.raises(ValueError, match=f"^{message}$"):
            PULSNAR(**params).fit(d.X, d.label)
    with pytest.raises(ValueError, match=r"^exact_density must be bool, got 'yes'$"):
        PUConfig(exact_density="yes")
    # numpy scalars and arrays are what they hold
    config = PUConfig(
        n_folds=np.int64(3),
        claim_overlap=np.float32(0.25),
        exact_density=np.bool_(False),
        bandwidth_bounds=np.array([0.05, 0.5]),
    )
    assert config.n_folds == 3 and config.bandwidth_bounds == (0.05, 0.5)
    # a misspelt XGBoost parameter is refused, not dropped with a warning on a worker
    with pytest.raises(ValueError, match=r"XGBoost has no parameter\(s\) colsample_bytre$"):
        PULSCAR(xgb_params={"colsample_bytre": 0.5, "max_depth": 3}).fit(d.X, d.label)
    # a GPU XGBoost cannot use: refused, not trained on the CPU with a warning a model (no
    # GPU), nor on another GPU (fail_on_invalid_gpu_id)
    with pytest.raises(ValueError, match=r"'cuda:63', but XGBoost (finds no GPU|refuses it) on"):
        PULSCAR(xgb_params={"device": "cuda:63"}).fit(d.X, d.label)
    with pytest.raises(ValueError, match=r"refuses it on this machine: .*Got: `gpu:x`.$"):
        PULSCAR(xgb_params={"device": "gpu:x"}).fit(d.X, d.label)


def test_importance_gain_is_row_order_free_and_caps_the_unlabeled():
    from pulsnar_dask.core.subtypes import importance_model_gain

    d = make_pu_data("scar", 100, 2000, 5, 0.2, class_sep=1.0, random_state=0)
    ids = np.arange(d.label.size) * 7 + 3
    perm = np.random.default_rng(1).permutation(d.label.size)
    config = PUConfig(n_threads=1, max_unlabeled_ratio=2.0)
    gain = importance_model_gain(d.X, d.label, ids, config, seed=0)
    np.testing.assert_array_equal(
        importance_model_gain(d.X[perm], d.label[perm], ids[perm], config, 0), gain
    )
    uncapped = importance_model_gain(d.X, d.label, ids, config.with_(max_unlabeled_ratio=None), 0)
    assert (gain > 0).any() and not np.array_equal(gain, uncapped)


def test_each_alpha_reader_is_used_for_every_cluster_and_kernel_is_the_default(snar):
    model = PULSNAR(random_state=0, n_jobs=1, method="pulsnar").fit(snar.X, snar.label)
    assert {e.estimator for e in model.cluster_estimates_} == {"kernel"}
    assert PULSCAR(random_state=0, n_jobs=1).fit(snar.X, snar.label).alpha_estimate_.estimator == (
        "kernel"
    )
    for reader in ("tail", "bbe"):
        other = PULSNAR(random_state=0, n_jobs=1, alpha_estimator=reader, method="pulsnar")
        other.fit(snar.X, snar.label)
        assert {e.estimator for e in other.cluster_estimates_} == {reader}
        reread = [
            estimate_alpha(r.probabilities, r.labels, estimator=reader, random_state=0).alpha
            for r in other.subproblems_
        ]
        np.testing.assert_allclose(reread, other.cluster_alphas_)
    assert abs(model.alpha_ - snar.true_alpha) < 0.05


def test_per_feature_xgboost_parameters_follow_the_features_into_every_subproblem(snar):
    from pulsnar_dask.core.scoring import column_params

    table = [f"f{i}" for i in range(8)]
    # the list (by table position), XGBoost's string and the mapping by name are one setting,
    # and a model on some of the features in another order gets its own positions
    for given in ([0] * 7 + [-1], "(0,0,0,0,0,0,0,-1)", {"f7": -1}):
        params = column_params({"monotone_constraints": given, "eta": 0.1}, table, table)
        assert params == {"monotone_constraints": "(0,0,0,0,0,0,0,-1)", "eta": 0.1}
        sub = column_params({"monotone_constraints": given}, table, ["f7", "f2", "f0"])
        assert sub == {"monotone_constraints": "(-1,0,0)"}
    sets = {"interaction_constraints": [["f7", 0], [2, "f3"]]}
    assert column_params(sets, table, ["f3", "f0", "f7"]) == {
        "interaction_constraints": "[[2, 1], [0]]"
    }

    # PULSNAR's subproblems see the features by decreasing gain: the constraint, given by
    # table position, must still hold on f7 in every subproblem's models
    X = pd.DataFrame(snar.X, columns=table)
    est = PULSNAR(
        random_state=0,
        n_jobs=2,
        max_clusters=4,
        xgb_params={"monotone_constraints": "(0,0,0,0,0,0,0,-1)"},
        method="pulsnar",
    ).fit(X, snar.label)
    components = est.model_.components
    assert len(components) == est.n_clusters_ > 1
    assert any(c.features.index("f7") != 7 for c in components)  # the positions do move
    rows = snar.X[:40].astype(np.float32)
    grid = np.linspace(snar.X[:, 7].min(), snar.X[:, 7].max(), 25)
    for c in components:
        where = c.features.index("f7")
        columns = [table.index(f) for f in c.features]
        curves = []
        for value in grid:
            varied = rows[:, columns].copy()
            varied[:, where] = value
            curves.append(c.probability(varied))
        steps = np.diff(np.array(curves), axis=0)
        assert steps.max() <= 1e-6, c.features


def test_the_importance_model_gets_the_users_threads_and_each_scoring_the_executors():
    """A set n_threads reaches every model; left open, the scorings run with the
    executor's per-task threads and the importance model gets None, for the executor to
    choose (a Dask executor widens it to its host where nothing else runs)."""
    from pulsnar_dask.pipeline.in_process import InProcessExecutor
    from pulsnar_dask.pipeline.stages import run_pipeline

    class Recording(InProcessExecutor):
        threads = 1

        def __init__(self, X, y):
            super().__init__(X, y)
            self.seen = {"importance": [], "score": []}

        def importance(self, config, seed):
            self.seen["importance"].append(config.n_threads)
            return super().importance(config, seed)

        def score(self, requests):
            self.seen["score"] += [r.config.n_threads for r in requests]
            return super().score(requests)

    d = make_pu_data("snar", 300, 900, 5, 0.3, random_state=0)
    for asked, importance, scoring in ((None, None, 1), (2, 2, 2)):
        executor = Recording(d.X, d.label)
        config = PUConfig(n_threads=asked, interval_resamples=0)
        run_pipeline(executor, method="pulsnar", config=config)
        assert executor.seen["importance"] == [importance]
        assert executor.seen["score"] and set(executor.seen["score"]) == {scoring}


def test_random_state_none_or_a_numpy_state_draws_a_seed_the_fit_keeps():
    """As scikit-learn takes them: None draws a fresh seed, a RandomState or Generator
    draws one from itself; seed_ says which, and reproduces the fit."""
    d = make_pu_data("scar", 60, 240, 3, 0.2, random_state=0)
    quick = {"interval_resamples": 0, "n_rounds": 10}
    drawn = PULSCAR(random_state=None, **quick).fit(d.X, d.label)
    again = PULSCAR(random_state=drawn.seed_, **quick).fit(d.X, d.label)
    assert again.seed_ == drawn.seed_ and again.alpha_ == drawn.alpha_
    assert drawn.get_params()["random_state"] is None  # the parameter is left as given
    one, other = (
        PULSCAR(random_state=np.random.RandomState(3), **quick).fit(d.X, d.label).seed_
        for _ in range(2)
    )
    assert one == other and 0 <= one < 2**32
    np.random.seed(5)  # noqa: NPY002 (None reads the global state, as scikit-learn does)
    first = PULSCAR(random_state=None, **quick).fit(d.X, d.label).seed_
    np.random.seed(5)  # noqa: NPY002
    assert PULSCAR(random_state=None, **quick).fit(d.X, d.label).seed_ == first
    assert PULSCAR(random_state=np.int64(7), **quick).fit(d.X, d.label).seed_ == 7
    assert type(PULSCAR(random_state=np.int64(7), **quick).fit(d.X, d.label).seed_) is int


def test_a_drawn_seed_leaves_room_for_the_iterations_seeds():
    from pulsnar_dask.core.config import MAX_SEED
    from pulsnar_dask.estimators import _seed_of

    # seeds seed .. seed + iterations - 1 must all be at most MAX_SEED: the draw's top
    assert _seed_of(np.random.default_rng(0), MAX_SEED + 1) == 0
    assert _seed_of(np.random.RandomState(0), MAX_SEED) in (0, 1)
    assert _seed_of(np.random.default_rng(0), np.int64(MAX_SEED + 1)) == 0
    # more iterations than seeds: 0, which the job then refuses in its own words
    assert _seed_of(None, MAX_SEED + 5) == 0
    assert _seed_of("x", 1) == "x" and _seed_of(True, 1) is True  # refused by the job
