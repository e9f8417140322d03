"""The saved model: its fold models reproduce the run's out-of-fold probabilities, it
round-trips bit for bit, the estimators predict with it, and ``score`` applies it to new
rows on the workers."""

import json

import numpy as np
import pandas as pd
import pytest
from helpers import run_cli
from sklearn.exceptions import NotFittedError

from pulsnar_dask import PULSCAR, PULSNAR, make_pu_data
from pulsnar_dask.cli import main
from pulsnar_dask.core.folds import assign_folds
from pulsnar_dask.errors import PUError
from pulsnar_dask.io import read_model


@pytest.fixture(scope="module")
def snar():
    return make_pu_data("snar", 400, 1600, 6, 0.3, class_sep=1.5, n_subtypes=3, random_state=2)


@pytest.fixture(scope="module")
def fitted(snar):
    return PULSNAR(method="pulsnar", random_state=1, interval_resamples=0).fit(snar.X, snar.label)


@pytest.mark.parametrize("types", [None, ["c", "q", "q"]])
def test_a_model_trained_from_the_histogram_index_is_the_dmatrix_model(types):
    """Oracle: the fold models train on a QuantileDMatrix (no copy of the rows); the
    model is XGBoost's DMatrix model byte for byte, missing values and categories too."""
    import xgboost as xgb

    from pulsnar_dask.core.scoring import _fit, booster_params

    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 9, 3000), rng.normal(size=(3000, 2))].astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = ((np.nan_to_num(X[:, 0]) % 3 == 0) ^ (rng.random(3000) < 0.2)).astype(np.float32)
    params = booster_params(None, 5, 1)
    ours = _fit(X, y, params, 30, types)
    weight = (y == 0).sum() / (y == 1).sum()
    plain = xgb.DMatrix(X, label=y, feature_types=types, enable_categorical=types is not None)
    theirs = xgb.train({**params, "scale_pos_weight": weight}, plain, num_boost_round=30)
    assert bytes(ours.save_raw("json")) == bytes(theirs.save_raw("json"))


@pytest.mark.parametrize("threads", [{"nthread": None}, {"n_jobs": 2}, {"nthread": 2}])
def test_the_matrix_threads_follow_the_models_and_leave_it_unchanged(threads):
    """The training matrices are built with the model's threads, in either of XGBoost's
    spellings (None: its default); the model is the one-thread model byte for byte."""
    from pulsnar_dask.core.scoring import _fit, booster_params

    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 3)).astype(np.float32)
    y = ((X[:, 0] + rng.normal(size=4000)) > 1).astype(np.float32)
    one = _fit(X, y, booster_params(None, 5, 1), 20)
    other = _fit(X, y, {**booster_params(None, 5), **threads}, 20)
    assert bytes(other.save_raw("ubj")) == bytes(one.save_raw("ubj"))


def test_a_large_training_set_is_binned_by_a_sample_that_holds_its_values(monkeypatch):
    """Oracle: past twice ``SKETCH_ROWS`` training rows the bins are the sample's
    quantiles; in columns of few values (missing ones among them) the sample is topped up
    with a row of each value it missed, a rare one too, so its bins are every row's, and
    so is the model, byte for byte."""
    from pulsnar_dask.core import scoring

    rng = np.random.default_rng(3)
    X = rng.integers(0, 9, size=(3000, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    drawn = np.random.default_rng(5).choice(3000, 500, replace=False)  # the sample's draw
    rare = np.setdiff1d(np.arange(3000), drawn)[:2]
    X[rare, 2] = 50.0  # a flag on two rows the draw misses
    y = ((np.nan_to_num(X[:, 0]) + X[:, 1] > 9) ^ (rng.random(3000) < 0.2)).astype(np.float32)
    y[rare] = 1
    params = scoring.booster_params(None, 5, 1)
    monkeypatch.setattr(scoring, "SKETCH_ROWS", 500)
    sample = scoring.sketch_rows(X, 5, 64)
    assert sample.size == 501 and np.isin(sample, drawn).sum() == 500  # one row topped up
    for column, values in zip(X[sample].T, X.T, strict=True):  # the oracle's premise
        assert set(np.unique(column[~np.isnan(column)])) == set(
            np.unique(values[~np.isnan(values)])
        )
        assert np.isnan(column).any()
    sampled = scoring._fit(X, y, params, 30)
    monkeypatch.setattr(scoring, "SKETCH_ROWS", 10**9)  # every row's sketch
    assert scoring.sketch_rows(X, 5, 64) is None
    exact = scoring._fit(X, y, params, 30)
    assert bytes(sampled.save_raw("json")) == bytes(exact.save_raw("json"))


def test_the_sketch_sample_is_seeded_and_left_out_for_small_or_categorical_data():
    from pulsnar_dask.core.scoring import SKETCH_ROWS, sketch_rows

    n = 2 * SKETCH_ROWS + 1
    X = np.random.default_rng(0).normal(size=(n, 2))
    assert sketch_rows(X[:-1], 0, 64) is None
    rows = sketch_rows(X, 0, 64)
    assert rows.size == SKETCH_ROWS == np.unique(rows).size  # continuous: nothing to top up
    assert np.all(np.diff(rows) > 0) and rows[0] >= 0 and rows[-1] < n
    np.testing.assert_array_equal(rows, sketch_rows(X, 0, 64))
    assert not np.array_equal(rows, sketch_rows(X, 1, 64))
    assert sketch_rows(X, 0, 64, ["q", "q"]) is not None
    assert sketch_rows(X, 0, 64, ["q", "c"]) is None  # a category could go unbinned


def test_a_sampled_sketch_on_continuous_features_ranks_as_well(monkeypatch):
    """Where the sample's quantiles differ from every row's, the model differs but
    ranks held-out rows as well (AUC within 0.01)."""
    from pulsnar_dask.core import scoring
    from pulsnar_dask.core.metrics import roc_auc

    data = make_pu_data("scar", 1000, 5000, 10, 0.2, random_state=0)
    X, y = data.X.astype(np.float32), data.label.astype(np.float32)
    folds = np.arange(len(y)) % 5
    params = scoring.booster_params(None, 0, 1)
    aucs, models = [], []
    for rows in (1000, 10**9):
        monkeypatch.setattr(scoring, "SKETCH_ROWS", rows)
        models.append(scoring.fold_model(X, y, folds, 0, params, 50))
        booster = xgb_booster(models[-1])
        truth = np.asarray(data.true_label)[folds == 0] == 1
        aucs.append(roc_auc(truth, booster.inplace_predict(X[folds == 0])))
    assert models[0] != models[1]
    assert abs(aucs[0] - aucs[1]) < 0.01, aucs


def xgb_booster(model: bytes):
    import xgboost as xgb

    return xgb.Booster(model_file=bytearray(model))


def test_fold_predictions_score_each_row_by_its_folds_model_in_either_layout():
    """Oracle: every row's probability is its own fold model's on that row alone, for a
    frame's column-major values as for a row-major copy."""
    from pulsnar_dask.core.scoring import _fit, booster_params, fold_predictions, model_bytes

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 4)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=600) > 0.5).astype(np.float32)
    folds = rng.integers(0, 3, 600).astype(np.int8)
    models = [
        model_bytes(_fit(X[folds != k], y[folds != k], booster_params(None, k, 1), 10))
        for k in range(3)
    ]
    by_column = np.asfortranarray(X)
    got = fold_predictions(models, by_column, folds, 1)
    np.testing.assert_array_equal(got, fold_predictions(models, X, folds, 1))
    for i in rng.choice(600, 20, replace=False):
        alone = xgb_booster(models[folds[i]]).inplace_predict(X[i : i + 1])
        assert got[i] == np.float64(alone[0])


def test_each_fold_model_gives_the_out_of_fold_probabilities_of_its_fold(snar):
    """Oracle: the saved fold models are the ones that scored the run's held-out rows
    (the scoring loaded them as UBJSON; the run keeps them as XGBoost JSON)."""
    est = PULSCAR(random_state=4, interval_resamples=0).fit(snar.X, snar.label)
    (component,) = est.model_.components
    assert all(json.loads(model)["learner"] for model in component.models)
    ids = np.arange(snar.label.size)
    folds = assign_folds(ids, snar.label.astype(np.int8), 5, 4)
    for k, booster in enumerate(component.boosters()):
        held_out = folds == k
        got = booster.inplace_predict(snar.X[held_out].astype(np.float32))
        np.testing.assert_array_equal(got.astype(float), est.oof_proba_[held_out])


def test_pulsnar_model_combines_its_clusters_and_maps_like_the_run(fitted, snar):
    model = fitted.model_
    assert model.kind == "subproblems" and len(model.components) == fitted.n_clusters_ > 1
    probability, calibrated = model.predict(snar.X)
    each = [c.probability(snar.X[:, model.schema.positions(c.features)]) for c in model.components]
    np.testing.assert_allclose(probability, 1 - np.prod([1 - p for p in each], axis=0))
    np.testing.assert_array_equal(calibrated, model.calibration(probability))
    # the map is the run's calibration: applied to the run's probabilities it gives them
    refit = PULSNAR(method="pulsnar", random_state=1, interval_resamples=0, calibration="isotonic")
    refit.fit(snar.X, snar.label)
    np.testing.assert_array_equal(
        refit.model_.calibration(refit.oof_proba_), refit.calibrated_proba_
    )


def test_saved_model_round_trips_bit_for_bit_and_loads_as_an_estimator(fitted, snar, tmp_path):
    fitted.save(str(tmp_path / "m"))
    files = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert "model.json" in files and all(f.endswith(".json") for f in files)  # no pickles
    description = json.loads((tmp_path / "m" / "model.json").read_text())
    assert description["alpha"] == fitted.alpha_ and description["version"]
    loaded = PULSNAR.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.predict_proba(snar.X), fitted.predict_proba(snar.X))
    assert loaded.alpha_ == fitted.alpha_ and loaded.method_ == "pulsnar"
    assert loaded.random_state == 1 and loaded.interval_resamples == 0
    # saving a smaller model over it leaves none of the old fold files behind
    PULSCAR(interval_resamples=0).fit(snar.X, snar.label).save(str(tmp_path / "m"))
    assert len(list((tmp_path / "m").glob("component*"))) == 5


def test_a_model_is_saved_over_nothing_but_a_model(fitted, tmp_path):
    """A folder holding other files (a run's outputs, a user's notes, one at any depth)
    and a file are refused, byte for byte as they were."""
    project = tmp_path / "project"
    (project / "notes").mkdir(parents=True)
    (project / "notes" / "model.json").write_text("mine")
    (project / "components.txt").write_text("mine too")
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    with pytest.raises(PUError, match=r"holds components.txt, notes, which a saved model does not"):
        fitted.save(str(project))
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    (tmp_path / "file").write_text("mine")
    with pytest.raises(PUError, match="is a file; a model is saved as a folder"):
        fitted.save(str(tmp_path / "file"))
    assert (tmp_path / "file").read_text() == "mine"
    # a file browser's hidden file is neither a model's nor in the way, and stays
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / ".DS_Store").write_text("finder")
    fitted.save(str(tmp_path / "m"))
    assert (tmp_path / "m" / ".DS_Store").read_text() == "finder"
    assert (tmp_path / "m" / "model.json").exists()


def test_predict_proba_follows_scikit_learns_conventions(fitted, snar):
    proba = fitted.predict_proba(snar.X)
    assert proba.shape == (snar.label.size, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(fitted.predict(snar.X), (proba[:, 1] >= 0.5).astype(np.int8))
    frame = pd.DataFrame(snar.X, columns=[f"x{i}" for i in range(6)])
    np.testing.assert_array_equal(fitted.predict_proba(frame.iloc[:, ::-1]), proba)  # by name
    with pytest.raises(ValueError, match=r"lacks feature column.*x5"):
        fitted.predict_proba(frame.drop(columns="x5"))
    with pytest.raises(ValueError, match=r"X has 5 features, but PULSNAR is expecting 6 features"):
        fitted.predict_proba(snar.X[:, :5])
    with pytest.raises(NotFittedError):
        PULSNAR().predict_proba(snar.X)


def test_classify_saves_the_retrain_and_refit_clears_the_old_model(snar):
    est = PULSNAR(classify=True, random_state=0, interval_resamples=0).fit(snar.X, snar.label)
    assert est.model_.kind == "retrain" and len(est.model_.components) == 1
    first = est.model_
    truth = snar.true_label > 0
    from pulsnar_dask.core.metrics import roc_auc

    assert roc_auc(truth, est.predict_proba(snar.X)[:, 1]) > 0.9
    est.set_params(classify=False).fit(snar.X, snar.label)
    assert est.model_ is not first and est.model_.kind == "subproblems"
    assert not hasattr(est, "improved_proba_")


def test_dask_collections_are_scored_partition_by_partition(fitted, snar, fresh_client):
    import dask.dataframe as dd

    frame = pd.DataFrame(snar.X, columns=[f"x{i}" for i in range(6)])
    lazy = dd.from_pandas(frame, npartitions=3)
    got = fresh_client.compute(fitted.predict_proba(lazy)).result()
    np.testing.assert_array_equal(got, fitted.predict_proba(frame))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished CLI run (calibrate, classify) on string-id data with a text column,
    and its input."""
    tmp = tmp_path_factory.mktemp("scored")
    data = make_pu_data("snar", 300, 1200, 4, 0.3, class_sep=1.5, n_subtypes=2, random_state=5)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(data.X, columns=[f"f{i}" for i in range(4)]).assign(
        region=rng.choice(["north", "south", "east"], data.label.size),
        label=data.label,
        uid=[f"u{i}" for i in range(data.label.size)],
    )
    frame.to_parquet(tmp / "train.parquet", index=False)
    status = main(
        ["run", "--input", str(tmp / "train.parquet"), "--id-col", "uid", "--out",
         str(tmp / "run"), "--n-workers", "2", "--calibrate", "--classify", "--quiet"]
    )  # fmt: skip
    assert status == 0
    return tmp, frame


def test_run_saves_a_model_and_score_applies_it_on_the_workers(run_dir, capsys, caplog):
    tmp, frame = run_dir
    summary = json.loads((tmp / "run" / "summary.json").read_text())
    assert summary["model"].endswith("model") and summary["categorical_features"] == ["region"]
    report = (tmp / "run" / "report.html").read_text()
    assert "pulsnar-dask score --model" in report and "categorical features" in report
    model = read_model(str(tmp / "run"))
    assert model.kind == "retrain" and model.schema.categories["region"] == [
        "east", "north", "south",
    ]  # fmt: skip
    new = frame.drop(columns="label").iloc[::3].copy()
    new.loc[new.index[:4], "region"] = "west"  # a category the model has not seen
    new.to_parquet(tmp / "new.parquet", index=False)
    status, scored, err = run_cli(
        ["score", "--model", str(tmp / "run"), "--input", str(tmp / "new.parquet"), "--id-col",
         "uid", "--out", str(tmp / "scored"), "--n-workers", "2"],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    assert scored["n_rows"] == len(new) and scored["unseen_categories"] == {"region": 4}
    got = pd.read_parquet(tmp / "scored" / "predictions").set_index("uid").loc[new["uid"]]
    probability, calibrated = model.predict_frame(new)  # unseen: scored as missing
    np.testing.assert_array_equal(got["probability"].to_numpy(), probability)
    np.testing.assert_array_equal(got["calibrated_probability"].to_numpy(), calibrated)
    assert scored["expected_positives"] == pytest.approx(calibrated.sum(), abs=0.05)
    missing = model.predict_frame(new.iloc[:4].assign(region=None))[0]
    np.testing.assert_array_equal(probability[:4], missing)
    # a batch where a feature has no value at all (written as Arrow's null type): scored
    # as missing, as NaN would be, with a warning
    empty = new.assign(f1=None, region=None)
    empty.to_parquet(tmp / "empty.parquet", index=False)
    with caplog.at_level("WARNING", logger="pulsnar_dask.io"):
        status, _, err = run_cli(
            ["score", "--model", str(tmp / "run"), "--input", str(tmp / "empty.parquet"),
             "--id-col", "uid", "--out", str(tmp / "scored_empty"), "--n-workers", "1"],
            capsys,
        )  # fmt: skip
    assert status == 0, err
    assert "with no value in" in caplog.text and "scored as missing: f1, region" in caplog.text
    got = pd.read_parquet(tmp / "scored_empty" / "predictions").set_index("uid").loc[new["uid"]]
    expected = model.predict_frame(new.assign(f1=np.nan, region=None))[0]
    np.testing.assert_array_equal(got["probability"].to_numpy(), expected)


N_SCORED = 1500  # the rows of run_dir's data: 300 positives and 1,200 unlabeled

SCORE_MISTAKES = {
    "missing column": (
        lambda f: f.drop(columns="f2"),
        [],
        "lacks feature column(s) the model needs: f2",
    ),
    "text for numbers": (lambda f: f.assign(f1="x"), [], "column 'f1' of"),
    "numbers for text": (lambda f: f.assign(region=1.0), [], "the model's categories are text"),
    "unknown id column": (lambda f: f, ["--id-col", "patient"], "id column 'patient' is not in"),
    "no model": (lambda f: f, ["--model", "/nonexistent/run"], "no model at /nonexistent/run"),
    "infinite value": (
        lambda f: f.assign(f0=[np.inf] + [0.0] * (len(f) - 1)),
        [],
        "beyond float32's range (|x| > 3.4e+38), which the models cannot hold: f0 (1 row)",
    ),
    "repeated ids": (
        lambda f: f.assign(uid=7),
        ["--id-col", "uid"],
        f"id column 'uid' has {N_SCORED - 1} duplicate value(s); each row needs its own id",
    ),
    "id column is a feature": (
        lambda f: f,
        ["--id-col", "f0"],
        "column 'f0' of INPUT is one of the model's features, so it cannot be the rows' ids",
    ),
    "out is the run": (lambda f: f, ["--out", "RUN"], "and the model RUN overlap"),
    "out is the model": (lambda f: f, ["--out", "RUN/model"], "and the model RUN overlap"),
    "out is the input": (lambda f: f, ["--out", "INPUT"], "and the input INPUT overlap"),
}


@pytest.mark.parametrize("mistake", SCORE_MISTAKES)
def test_score_mistakes_get_one_line_and_leave_nothing(run_dir, mistake, tmp_path, capsys):
    tmp, frame = run_dir
    change, extra, message = SCORE_MISTAKES[mistake]
    change(frame.drop(columns="label")).to_parquet(tmp_path / "new.parquet", index=False)
    out = tmp_path / "out"
    paths = {"RUN": str(tmp / "run"), "INPUT": str(tmp_path / "new.parquet")}
    extra = [a.replace("RUN", paths["RUN"]).replace("INPUT", paths["INPUT"]) for a in extra]
    message = message.replace("RUN", paths["RUN"]).replace("INPUT", paths["INPUT"])
    args = ["score", "--model", str(tmp / "run"), "--input", str(tmp_path / "new.parquet"),
            "--out", str(out), "--n-workers", "1", *extra]  # fmt: skip
    status, _, err = run_cli(args, capsys)
    assert status == 2, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    assert (tmp / "run" / "summary.json").exists()  # the run is untouched


def _other_features_fold() -> bytes:
    """A fold model of another table (two features), as a copied-over file would be."""
    import xgboost as xgb

    X = np.random.default_rng(0).normal(size=(50, 2))
    booster = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(X, X[:, 0] > 0), 2)
    return bytes(booster.save_raw(raw_format="json"))


def _fold_of(params: dict) -> bytes:
    """A fold model of five features trained with ``params``: another kind of model."""
    import xgboost as xgb

    X = np.random.default_rng(0).normal(size=(60, 5))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    booster = xgb.train(params, xgb.DMatrix(X, y), 2)
    return bytes(booster.save_raw(raw_format="json"))


def _edited(change):
    """A change to ``model.json``: ``change(description)`` edits the parsed JSON."""

    def edit(m):
        description = json.loads((m / "model.json").read_text())
        change(description)
        (m / "model.json").write_text(json.dumps(description))

    return edit


def _first_map(d: dict) -> dict:
    return d["calibration"] or d["components"][0]["calibration"]


CORRUPT_MODELS = {  # what is done to a copy of the run's model folder -> the one line
    "empty fold": (
        lambda m: (m / "component0-fold4.json").write_bytes(b""),
        "component0-fold4.json is empty, not an XGBoost model",
    ),
    "multiclass fold": (
        lambda m: (m / "component0-fold0.json").write_bytes(
            _fold_of({"objective": "multi:softprob", "num_class": 3})
        ),
        "component0-fold0.json is a model of multi:softprob",
    ),
    "regression fold": (
        lambda m: (m / "component0-fold0.json").write_bytes(
            _fold_of({"objective": "reg:squarederror"})
        ),
        "component0-fold0.json is a model of reg:squarederror",
    ),
    "no kind": (_edited(lambda d: d.pop("kind")), "model.json lacks kind"),
    "unknown kind": (_edited(lambda d: d.update(kind="weird")), "unknown kind 'weird'"),
    "no components": (_edited(lambda d: d.update(components=[])), "lists no components"),
    "no fold models": (
        _edited(lambda d: d["components"][0].update(models=[])),
        "component 0 has no fold models or no features",
    ),
    "a feature renamed": (
        _edited(lambda d: d["components"][0]["features"].__setitem__(0, "zzz")),
        "component 0 takes features its schema lacks: zzz",
    ),
    "no schema features": (
        _edited(lambda d: d["schema"].update(features=[])),
        "its schema's features are none, named twice or of an unknown type",
    ),
    "calibration cut short": (
        _edited(lambda d: _first_map(d).update(x=_first_map(d)["x"][:-1])),
        "not a calibration map this version reads",
    ),
    "calibration of text": (
        _edited(lambda d: _first_map(d).update(x="abc")),
        "not a calibration map this version reads",
    ),
    "calibration method unknown": (
        _edited(lambda d: _first_map(d).update(method="magic")),
        "not a calibration map this version reads",
    ),
    "truncated fold": (
        lambda m: (m / "component0-fold0.json").write_bytes(
            (m / "component0-fold0.json").read_bytes()[:300]
        ),
        "component0-fold0.json is not an XGBoost model XGBoost can read: ",
    ),
    "garbage fold": (
        lambda m: (m / "component0-fold3.json").write_bytes(b"\x00\xff not a model"),
        "component0-fold3.json is not an XGBoost model XGBoost can read: ",
    ),
    "another model's fold": (
        lambda m: (m / "component0-fold1.json").write_bytes(_other_features_fold()),
        "component0-fold1.json takes 2 features, its component 5",
    ),
    "missing fold": (
        lambda m: (m / "component0-fold2.json").unlink(),
        "FileNotFoundError",
    ),
    "later format": (
        lambda m: (m / "model.json").write_text(
            json.dumps({**json.loads((m / "model.json").read_text()), "format": 99})
        ),
        "model format 99 is not one this version reads (1)",
    ),
    "foreign json": (
        lambda m: (m / "model.json").write_text('{"name": "some other tool"}'),
        "model.json is not a pulsnar-dask model",
    ),
    "not json": (
        lambda m: (m / "model.json").write_text("<html></html>"),
        "model.json is not a pulsnar-dask model",
    ),
}


@pytest.mark.parametrize("damage", CORRUPT_MODELS)
def test_a_corrupt_or_foreign_model_folder_gets_one_line(run_dir, damage, tmp_path, capsys):
    """Checked as the model is read, on the client: a fold file XGBoost cannot read had
    ended, on a worker, in XGBoost's C++ backtrace. The folder is left as it was."""
    import shutil

    tmp, frame = run_dir
    model = tmp_path / "model"
    shutil.copytree(tmp / "run" / "model", model)
    change, message = CORRUPT_MODELS[damage]
    change(model)
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    frame.drop(columns="label").to_parquet(tmp_path / "new.parquet", index=False)
    out = tmp_path / "out"
    status, _, err = run_cli(
        ["score", "--model", str(model), "--input", str(tmp_path / "new.parquet"),
         "--id-col", "uid", "--out", str(out), "--n-workers", "1"],
        capsys,
    )  # fmt: skip
    assert status == 2, err
    assert f"cannot read the model at {model}: " in err and message in err, err
    assert len(err.strip().splitlines()) == 1 and "[bt]" not in err, err
    assert not out.exists()
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
