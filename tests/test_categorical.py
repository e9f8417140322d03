"""Categorical features: the schema, XGBoost's categorical splits, and real categorical
data (mushroom: all categorical; bank: mixed) through the CLI and the estimators."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import run_cli

from pulsnar_dask.core.schema import (
    MAX_CATEGORIES,
    FeatureSchema,
    frame_schema,
    schema_from_categories,
)

DATA = Path(__file__).resolve().parent / "data"  # samples of UCI sets: data/README.md


def test_schema_codes_categories_by_position_and_unseen_ones_as_missing():
    schema = FeatureSchema(["size", "colour"], {"colour": ["blue", "green", "red"]})
    part = pd.DataFrame({"size": [1.5, 2.0, 3.0, 4.0], "colour": ["red", None, "pink", "blue"]})
    X = schema.encode(part)
    assert X.dtype == np.float32
    np.testing.assert_array_equal(X[:, 0], [1.5, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(X[:, 1], [2.0, np.nan, np.nan, 0.0])
    assert schema.unseen_counts(part).to_dict("records") == [{"colour": 1}]  # pink, not None
    assert schema.feature_types() == ["q", "c"]
    assert FeatureSchema(["size"]).feature_types() is None  # XGBoost's default, untouched
    assert FeatureSchema.from_dict(json.loads(json.dumps(schema.to_dict()))) == schema
    # a pandas category column with other categories is coded by the schema's list
    as_category = part.assign(colour=part["colour"].astype("category"))
    np.testing.assert_array_equal(schema.encode(as_category), X)


def test_frame_schema_finds_categories_and_keeps_numeric_codes_numeric_unless_declared():
    frame = pd.DataFrame(
        {
            "x": [0.5, 1.5, 2.5],
            "region": ["n", "s", "n"],
            "plan": [3, 1, 3],
            "ok": [True, False, True],
        }
    )
    schema, left_out = frame_schema(frame)
    assert schema.names == ["x", "region", "plan", "ok"] and left_out == []
    assert schema.categories == {"region": ["n", "s"]}
    schema, _ = frame_schema(frame, declared=["plan"])
    assert schema.categories == {"region": ["n", "s"], "plan": [1, 3]}
    with pytest.raises(ValueError, match="not features: nope"):
        frame_schema(frame, declared=["nope"])
    with pytest.raises(ValueError, match=r"type no model can use.*when"):
        frame_schema(frame.assign(when=pd.Timestamp("2026-01-01")))


def test_columns_with_too_many_categories_are_left_out_unless_named():
    many = [f"id{i}" for i in range(MAX_CATEGORIES + 1)]
    schema, left_out = schema_from_categories(["x", "uid"], {"uid": many})
    assert schema.names == ["x"] and left_out == ["uid"]
    with pytest.raises(ValueError, match=f"'uid' has more than {MAX_CATEGORIES} distinct values"):
        schema_from_categories(["x", "uid"], {"uid": many}, explicit=["uid"])


def test_a_text_column_with_a_value_for_most_rows_is_taken_for_an_identifier():
    """900 e-mail addresses among 900 rows are an identifier, whatever the cap; 60 regions
    among 900 rows, or a handful of values in a handful of rows, are categories."""
    emails = [f"user{i}@example.com" for i in range(900)]
    regions = [f"r{i % 60}" for i in range(900)]
    cats = {"email": emails, "region": regions}
    schema, left_out = schema_from_categories(["x", "email", "region"], cats, n_rows=900)
    assert schema.names == ["x", "region"] and left_out == ["email"]
    with pytest.raises(ValueError, match="'email' has 900 distinct values among 900 rows"):
        schema_from_categories(["x", "email"], cats, explicit=["email"], n_rows=900)
    schema, left_out = schema_from_categories(["x", "email"], cats, n_rows=1800)  # half
    assert left_out == []
    frame = pd.DataFrame({"x": [0.1, 0.2], "name": ["a", "b"]})  # two values, two rows
    assert frame_schema(frame)[0].categories == {"name": ["a", "b"]}


def test_indicators_of_the_top_levels_describe_categories():
    schema = FeatureSchema(["x", "c"], {"c": ["a", "b", "z"]})
    X = np.array([[0.1, 0], [0.2, 2], [0.3, 2], [0.4, np.nan]], dtype=np.float32)
    tops = schema.top_levels(schema.code_counts(X, ["x", "c"]))
    assert schema.is_indicator(["x", "c"], tops).tolist() == [False, True, True]
    matrix, names = schema.indicators(X, ["x", "c"], tops)
    assert names == ["x", "c=z", "c=a"]  # most frequent category first; b never seen
    np.testing.assert_allclose(matrix[:, 0], X[:, 0])
    np.testing.assert_array_equal(matrix[:, 1:], [[0, 1], [1, 0], [1, 0], [0, 0]])


def test_a_categorical_column_of_noise_does_not_split_the_positives():
    """The clustering takes categories as codes: as indicators, a random five-category
    column split the positives of this data into 7 clusters (alpha 0.362 for 0.300)."""
    from pulsnar_dask import PULSNAR, make_pu_data

    d = make_pu_data("snar", 1000, 4000, 8, 0.3, class_sep=1.0, n_subtypes=3, random_state=0)
    X = pd.DataFrame(d.X, columns=[f"f{i}" for i in range(8)])
    noise = np.random.default_rng(0).choice(list("abcde"), len(X))
    fits = {
        name: PULSNAR(method="pulsnar", random_state=0, interval_resamples=0).fit(frame, d.label)
        for name, frame in (("plain", X), ("noise", X.assign(region=noise)))
    }
    assert fits["noise"].n_clusters_ == fits["plain"].n_clusters_ == 3
    truth = np.mean(d.true_label[d.label == 0] > 0)
    assert abs(fits["noise"].alpha_ - truth) < 0.03


def test_categorical_splits_find_a_set_the_codes_order_hides():
    """Positives are the categories {a, d, g}: one categorical split separates them,
    while the codes' order needs several; with one round of stumps only the categorical
    model ranks every positive first, and the saved model says the column is categorical."""
    from pulsnar_dask.core.metrics import roc_auc
    from pulsnar_dask.core.scoring import booster_params, out_of_fold_probabilities

    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefgh"))
    values = letters[rng.integers(0, 8, 4000)]
    y = np.isin(values, ["a", "d", "g"]).astype(np.int8)
    schema, _ = frame_schema(pd.DataFrame({"c": values}))
    X = schema.encode(pd.DataFrame({"c": values}))
    folds = np.arange(y.size) % 2
    params = booster_params({"max_depth": 1}, 0)
    aucs = {}
    for name, types in (("categorical", schema.feature_types()), ("codes", None)):
        proba, models = out_of_fold_probabilities(X, y, folds, 2, params, 1, None, types)
        aucs[name] = roc_auc(y, proba)
        stored = json.loads(models[0])["learner"]["feature_types"]
        assert stored == (["c"] if types else [])
    assert aucs["categorical"] == 1.0  # one split on the set {a, d, g}
    assert aucs["codes"] < 0.8


def _read_mushroom() -> tuple[pd.DataFrame, np.ndarray]:
    table = pd.read_csv(DATA / "mushroom.csv", header=None, dtype=str)
    poisonous = (table.pop(0) == "p").to_numpy()
    return table.set_axis([f"c{i}" for i in table.columns], axis=1), poisonous


def _read_bank() -> tuple[pd.DataFrame, np.ndarray]:
    table = pd.read_csv(DATA / "bank.csv", sep=";")
    no = (table.pop("y") == "no").to_numpy()  # the large class positive, as SCAR_bank
    return table, no


def _scar(positive: np.ndarray, alpha: float, seed: int = 0) -> np.ndarray:
    """PU labels hiding positives at random so that alpha of the unlabeled are positive."""
    rng = np.random.default_rng(seed)
    n_negative = int((~positive).sum())
    hidden = rng.choice(np.flatnonzero(positive), int(n_negative * alpha / (1 - alpha)), False)
    labels = positive.astype(np.int8)
    labels[hidden] = 0
    return labels


@pytest.fixture(scope="module", params=["mushroom", "bank"])
def real_categorical(request, tmp_path_factory):
    """A real data set with text columns, as Parquet in two files with string ids."""
    table, positive = _read_mushroom() if request.param == "mushroom" else _read_bank()
    labels = _scar(positive, 0.2)
    frame = table.assign(
        label=labels,
        true_label=positive.astype(np.int8),
        uid=[f"r{i:05d}" for i in range(len(table))],
    )
    folder = tmp_path_factory.mktemp(request.param) / "data"
    folder.mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(folder / "part.0.parquet", index=False)
    frame.iloc[half:].to_parquet(folder / "part.1.parquet", index=False)
    text = [c for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])]
    return request.param, folder, frame, text


@pytest.mark.parametrize("engine", ["task", "dask"])
def test_real_categorical_data_through_the_cli(real_categorical, engine, tmp_path, capsys):
    name, folder, frame, text = real_categorical
    out = tmp_path / "run"
    status, summary, err = run_cli(
        ["run", "--input", str(folder), "--id-col", "uid", "--method", "pulscar",
         "--engine", engine, "--out", str(out), "--n-workers", "2", "--calibrate"],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    assert summary["categorical_features"] == text
    assert summary["settings"]["n_features"] == frame.shape[1] - 3
    # bank's classes overlap: PULSCAR over-counts there (benchmarks/results/paper)
    tolerance = {"mushroom": 0.03, "bank": 0.1}[name]
    assert abs(summary["alpha"] - summary["true_alpha"]) < tolerance, summary["alpha"]
    model = json.loads((out / "model" / "model.json").read_text())
    kinds = {f["name"]: f["type"] for f in model["schema"]["features"]}
    assert [c for c, k in kinds.items() if k == "categorical"] == text
    got = pd.read_parquet(out / "predictions").set_index("uid")
    assert sorted(got.index) == sorted(frame["uid"])
    assert got["calibrated_probability"].between(0, 1).all()


@pytest.mark.parametrize("where", ["memory", "dask"])
def test_real_categorical_data_through_the_estimators(real_categorical, where, fresh_client):
    from pulsnar_dask import PULSCAR, PULSNAR

    name, _, frame, text = real_categorical
    X = frame.drop(columns=["label", "true_label", "uid"])
    y = frame["label"]
    if where == "dask":
        import dask.dataframe as dd

        X, y = dd.from_pandas(X, npartitions=2), dd.from_pandas(y, npartitions=2)
    # mushroom: the positives' clustering on indicators of categories; bank: PULSCAR, as
    # PULSNAR over-counts on bank's overlapping classes (an open accuracy issue)
    if name == "mushroom":
        est = PULSNAR(random_state=0, max_clusters=4, interval_resamples=0)
    else:
        est = PULSCAR(random_state=0, interval_resamples=0)
    est.fit(X, y, client=fresh_client if where == "dask" else None)
    assert est.model_.schema.categorical == text
    truth = frame["true_label"].to_numpy()[frame["label"].to_numpy() == 0].mean()
    assert abs(est.alpha_ - truth) < 0.1, est.alpha_
    proba = est.predict_proba(X)
    proba = proba.compute() if where == "dask" else proba
    assert proba.shape == (len(frame), 2)
    positive = frame["true_label"].to_numpy() == 1
    assert proba[positive, 1].mean() > proba[~positive, 1].mean() + 0.3
