"""The command line: synth's schema, a local run's outputs, and one clear line per mistake."""

import html
import json
import logging
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import free_port, run_cli, small_snar

from pulsnar_dask.cli import late_imports
from pulsnar_dask.errors import PUError
from pulsnar_dask.pipeline.result import OVERLAP_AUC, WIDE_INTERVAL


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("in") / "snar.parquet"
    small_snar(path, partitions=2)
    return path


def test_synth_writes_the_documented_schema(tmp_path, capsys):
    out = tmp_path / "scar"
    status = run_cli(
        [
            "synth",
            "--scenario",
            "scar",
            "--n-pos",
            "50",
            "--n-unlab",
            "200",
            "--n-features",
            "3",
            "--alpha",
            "0.2",
            "--seed",
            "1",
            "--out",
            str(out),
            "--partitions",
            "3",
        ],
        capsys,
    )[0]
    assert status == 0
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["f0", "f1", "f2", "label", "true_label", "row_id"]
    assert len(list(out.glob("*.parquet"))) == 3
    assert (frame.label == 1).sum() == 50 and frame.row_id.is_unique
    assert frame.f0.dtype == np.float32
    status, _, err = run_cli(
        [
            "synth",
            "--scenario",
            "scar",
            "--n-pos",
            "5",
            "--n-unlab",
            "20",
            "--n-features",
            "2",
            "--alpha",
            "0.2",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert status == 2 and "already exists" in err


def test_synth_replaces_only_a_dataset_it_wrote(tmp_path, capsys):
    """--overwrite replaces synth's own parts; a user's folder, a file and a URL are
    refused in one line, byte for byte as they were, with nothing staged left beside."""
    small = ["synth", "--scenario", "scar", "--n-pos", "5", "--n-unlab", "20",
             "--n-features", "2", "--alpha", "0.2", "--overwrite", "--out"]  # fmt: skip
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("mine")
    (tmp_path / "file").write_text("mine")
    for out, message in [
        (tmp_path / "data", "holds notes.txt, which synthetic data does not"),
        (tmp_path / "file", "exists and is not a folder of Parquet parts"),
        ("s3://bucket/x", "synth writes a local folder, not a URL"),
    ]:
        status, _, err = run_cli([*small, str(out)], capsys)
        assert status == 2 and err.strip().splitlines() == [err.strip()] and message in err, err
    assert (tmp_path / "data" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "file").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "file"]
    for _ in range(2):  # a dataset synth wrote is replaced
        assert run_cli([*small, str(tmp_path / "new")], capsys)[0] == 0
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["part.0.parquet"]


def test_synth_refuses_data_larger_than_the_disk_before_drawing(tmp_path, capsys):
    out = str(tmp_path / "big" / "data")
    huge = ["synth", "--scenario", "snar", "--n-pos", "100000000000", "--n-unlab", "1000",
            "--n-features", "20", "--alpha", "0.2", "--out", out]  # fmt: skip
    status, _, err = run_cli(huge, capsys)
    assert status == 2 and err.strip().splitlines() == [err.strip()], err
    assert f"the data would take at least 14,901.2 GiB and {tmp_path} has" in err
    assert "GiB free; draw fewer rows or features" in err
    assert list(tmp_path.iterdir()) == []


def test_run_writes_summary_predictions_and_report(data, tmp_path, capsys):
    out = tmp_path / "run"
    status, summary, err = run_cli(
        [
            "run",
            "--input",
            str(data),
            "--method",
            "pulsnar",
            "--out",
            str(out),
            "--n-workers",
            "2",
            "--true-label-col",
            "true_label",
            "--calibrate",
            "--classify",
            "--iterations",
            "2",
        ],
        capsys,
    )
    assert status == 0, err
    assert json.loads((out / "summary.json").read_text()) == summary
    assert len(summary["pu_auc"]) == len(summary["cluster_alphas"])
    assert min(summary["pu_auc"]) > 0.6 and "hardly tells" not in err
    assert summary["alpha_identified"] is True
    # PULSNAR asked for: no subproblem holds every positive, so no overlap check
    assert summary["alpha_may_be_high"] is None and "negative_auc" not in summary
    for key in (
        "method",
        "alpha",
        "n_positive",
        "n_unlabeled",
        "n_clusters",
        "cluster_alphas",
        "seconds",
        "alphas",
        "alpha_ci",
        "true_alpha",
        "metrics",
    ):
        assert key in summary
    assert summary["alpha"] == pytest.approx(np.mean(summary["alphas"]))
    # the default interval holds the t-interval of the iterations' mean
    low, high = summary["alpha_interval"]
    assert low <= summary["alpha_ci"][0] <= summary["alpha_ci"][1] <= high
    settings = summary["settings"]
    assert (settings["method"], settings["iterations"], settings["classify"]) == (
        "pulsnar",
        2,
        True,
    )
    assert settings["interval_resamples"] == 30 and settings["n_features"] == 8
    stages = summary["stage_seconds"]
    assert stages["input"] <= stages["clustering"] <= stages["scoring"] <= stages["interval"]
    assert stages["interval"] <= summary["seconds"]
    assert set(summary["metrics"]) == {"with_pu", "without_pu"}
    predictions = pd.read_parquet(out / "predictions")
    assert len(predictions) == summary["n_positive"] + summary["n_unlabeled"]
    assert {
        "row_id",
        "label",
        "probability",
        "calibrated_probability",
        "improved_probability",
    } <= set(predictions)
    # joined to the input rows by id: every row once, results that follow its label
    assert predictions["row_id"].is_unique and predictions.notna().all().all()
    by_label = predictions.groupby("label")["probability"].mean()
    assert by_label[1] > by_label[0] + 0.2
    for name in ("report.html", "densities.png", "objective.png", "bic.png", "calibration.png"):
        assert (out / name).stat().st_size > 0
    assert not list(out.glob("_staging*"))


def test_synth_chunked_generator_writes_the_same_schema(tmp_path, capsys):
    out = tmp_path / "big"
    args = ["synth", "--scenario", "snar", "--n-pos", "300", "--n-unlab", "3000",
            "--n-features", "4", "--alpha", "0.2", "--out", str(out), "--partitions", "4",
            "--generator", "chunked"]  # fmt: skip
    assert run_cli(args, capsys)[0] == 0
    frame = pd.read_parquet(out)
    assert len(list(out.glob("*.parquet"))) == 4
    assert list(frame.columns) == ["f0", "f1", "f2", "f3", "label", "true_label", "row_id"]
    assert sorted(frame.row_id) == list(range(3300))
    assert (frame.true_label[frame.label == 0] > 0).mean() == pytest.approx(0.2)


def _module_synth(out, n_features):
    return subprocess.run(
        [sys.executable, "-m", "pulsnar_dask", "synth", "--scenario", "snar", "--n-pos", "20",
         "--n-unlab", "50", "--n-features", str(n_features), "--alpha", "0.1", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_module_entry_point_runs(tmp_path):
    proc = _module_synth(tmp_path / "d", n_features=3)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 70 rows" in proc.stdout
    proc = _module_synth(tmp_path / "e", n_features=2)  # 6 classes need 3 informative features
    assert proc.returncode == 2 and "cannot generate this data" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_progress_bars_are_drawn_on_a_terminal(data, tmp_path):
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulsnar_dask", "run", "--input", str(data), "--method",
         "pulscar", "--out", str(tmp_path / "out"), "--n-workers", "2",
         "--interval-resamples", "0"],
        stdout=subprocess.PIPE, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the command closed the terminal's other end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    proc.communicate(timeout=300)
    assert proc.returncode == 0
    assert "Completed" in b"".join(chunks).decode(errors="replace")


def test_progress_goes_to_stderr_and_stdout_holds_only_the_summary(data, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pulsnar_dask", "run", "--input", str(data), "--method",
         "pulscar", "--out", str(tmp_path / "out"), "--n-workers", "2",
         "--interval-resamples", "0"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    summary = json.loads(line)
    assert "alpha_interval" not in summary and "interval" not in summary["stage_seconds"]
    assert summary["alpha_imprecise"] is None  # no interval: not judged
    assert summary == json.loads((tmp_path / "out" / "summary.json").read_text())
    # stderr is no terminal here: the stages' lines, no progress bars
    assert "scoring: 1 cross-validated XGBoost run(s)" in proc.stderr
    assert "Completed" not in proc.stderr
    # the headline closes stderr and opens the report
    hidden = summary["hidden_positives"]
    assert hidden == round(summary["alpha"] * summary["n_unlabeled"])
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"alpha {summary['alpha']:.3f}: about {hidden:,} hidden positives")
    report = (tmp_path / "out" / "report.html").read_text()
    assert f"<h1>alpha {summary['alpha']:.3f}: about {hidden:,} hidden positives" in report


@pytest.mark.parametrize(
    ("method", "calibration", "iterations", "expected"),
    [
        ("pulscar", "isotonic", 1, ()),
        ("auto", "isotonic", 1, ("sklearn.mixture",)),
        ("pulsnar", "sigmoid", 1, ("sklearn.mixture", "sklearn.linear_model")),
        ("pulscar", "isotonic", 3, ("scipy.stats",)),
    ],
)
def test_late_imports_are_what_the_run_will_need(method, calibration, iterations, expected):
    assert late_imports(method, calibration, iterations) == expected


def test_a_pulscar_runs_client_imports_no_scikit_learn_nor_scipy_stats(data, tmp_path):
    # their imports (0.6 s, 0.9 s) would compete with the local cluster's start for the
    # cores: the isotonic calibration needs neither (core.calibration.isotonic_thresholds),
    # nor does the bootstrap's Poisson draw
    script = (
        "import sys\n"
        "from pulsnar_dask.cli import main\n"
        f"status = main(['run', '--input', {str(data)!r}, '--method', 'pulscar', '--out', "
        f"{str(tmp_path / 'out')!r}, '--n-workers', '2', '--quiet'])\n"
        "print('sklearn' in sys.modules, 'scipy.stats' in sys.modules, file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "False False"
    # the saved model still carries the isotonic map that scores new rows
    calibration = json.loads((tmp_path / "out" / "model" / "model.json").read_text())["calibration"]
    assert calibration["method"] == "isotonic" and len(calibration["x"]) > 2
    assert np.all(np.diff(calibration["x"]) > 0) and np.all(np.diff(calibration["y"]) >= 0)


def test_headline_reads_the_summary():
    from pulsnar_dask.pipeline.result import headline

    summary = {"alpha": 0.2718, "hidden_positives": 2718, "n_unlabeled": 10000,
               "method": "pulsnar", "n_clusters": 5, "alpha_identified": True}  # fmt: skip
    assert headline(summary) == (
        "alpha 0.272: about 2,718 hidden positives among 10,000 unlabeled rows (PULSNAR, "
        "5 clusters)"
    )
    summary.update(alpha_ci=[0.26, 0.28])  # without the default interval: the iterations'
    assert headline(summary).endswith(
        "; 95% interval of the iterations' mean 2,600-2,800 (alpha 0.260-0.280)"
    )
    summary.update(alpha_interval=[0.25, 0.3], alpha_identified=False, n_clusters=1)
    text = headline(summary)
    assert "(PULSNAR, 1 cluster)" in text
    assert "; 95% interval 2,500-3,000 (alpha 0.250-0.300)" in text
    assert "iterations" not in text
    assert text.endswith(
        "NOT IDENTIFIED: the classifier hardly tells labeled positives from unlabeled rows"
    )
    # identified, but one cluster found on part of the features: alpha may be low
    summary.update(alpha_identified=True, method_evidence={"subtypes_may_be_unseen": True})
    assert headline(summary).endswith(
        "; MAY BE LOW: one cluster found on part of the features, subtypes may be unseen"
    )
    # an interval too wide to act on: said where no other warning is (the others explain
    # their width themselves)
    summary.update(alpha_imprecise=True, alpha_interval=[0.1, 0.3])
    assert "IMPRECISE" not in headline(summary)
    summary["method_evidence"]["subtypes_may_be_unseen"] = False
    assert headline(summary).endswith(
        "(alpha 0.100-0.300); IMPRECISE: the interval is 0.200 wide, the data do not pin alpha down"
    )
    summary.update(alpha_imprecise=False, alpha_interval=[0.25, 0.3])
    assert "MAY BE LOW" not in headline(summary) and "IMPRECISE" not in headline(summary)
    summary.update(alpha_may_be_high=True, negative_auc=0.745)
    high = (
        "; MAY BE HIGH: positives and negatives overlap (implied AUC 0.745 if labeled at "
        "random), so every reading also counts negatives"
    )
    assert headline(summary).endswith(high)
    # auto's two readings beside it: the overlap's warning still, as it holds under
    # PULSCAR's assumption, the estimate's
    summary["method_evidence"].update(n_clusters=3, readings={"pulscar": 0.171, "pulsnar": 0.293})
    assert "; 3 clusters read 0.293 beside it); 95% interval" in headline(summary)
    assert headline(summary).endswith(high)
    # a summary written before 2026-12-07 may carry readings_differ: no longer read
    summary["method_evidence"]["readings_differ"] = True
    assert headline(summary).endswith(high) and "SCAR OR SNAR" not in headline(summary)
    del summary["method_evidence"]["readings_differ"]
    summary["method_evidence"] = {"subtypes_may_be_unseen": False}
    summary["method_evidence"]["subtypes_may_be_unseen"] = True  # the overlap is named first
    assert "MAY BE HIGH" in headline(summary) and "MAY BE LOW" not in headline(summary)
    summary["method_evidence"]["subtypes_may_be_unseen"] = False
    summary["alpha_may_be_high"] = None  # not checked
    summary["perfect_separation"] = {"leading_feature": "visits"}
    assert headline(summary).endswith(
        "; CHECK THE FEATURES: labeled and unlabeled rows are perfectly separated "
        "(leading feature 'visits')"
    )


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("bad")
    frame = pd.DataFrame({"f0": np.arange(40.0), "f1": np.ones(40), "label": [1] * 10 + [0] * 30})
    cases = {}

    def put(name, df):
        path = tmp_path / f"{name}.parquet"
        df.to_parquet(path, index=False)
        return str(path)

    cases["empty dataset"] = (put("empty", frame.iloc[:0]), [], "the input has no rows")
    cases["missing path"] = (str(tmp_path / "nope.parquet"), [], "does not exist")
    (tmp_path / "text.parquet").write_text("not parquet")
    cases["not parquet"] = (str(tmp_path / "text.parquet"), [], "not a readable Parquet")
    cases["no label column"] = (
        put("nolabel", frame.drop(columns="label")),
        [],
        "label column 'label' is not in",
    )
    cases["label 2"] = (
        put("two", frame.assign(label=[2] + [1] * 9 + [0] * 30)),
        [],
        "must hold only the numbers 0 and 1",
    )
    cases["label -1"] = (
        put("neg", frame.assign(label=[-1] + [1] * 9 + [0] * 30)),
        [],
        "-1 (1 row)",
    )
    cases["label missing"] = (
        put("nan", frame.assign(label=[np.nan] + [1.0] * 9 + [0.0] * 30)),
        [],
        "missing (1 row)",
    )
    cases["no positives"] = (put("nopos", frame.assign(label=0)), [], "no labeled positives")
    cases["no unlabeled"] = (put("nounl", frame.assign(label=1)), [], "no unlabeled rows")
    cases["too few positives"] = (
        put("few", frame.assign(label=[1] * 3 + [0] * 37)),
        [],
        "at least n_folds=5",
    )
    cases["infinite"] = (
        put("inf", frame.assign(f1=[np.inf] + [1.0] * 39)),
        [],
        "infinite or beyond float32's range (|x| > 3.4e+38), which the models cannot hold: f1 "
        "(1 row)",
    )
    cases["beyond float32"] = (
        put("big", frame.assign(f0=[1e39, -1e300] + [1.0] * 38)),
        [],
        "cannot hold: f0 (2 rows)",
    )
    cases["duplicate ids"] = (
        put("dup", frame.assign(row_id=[0, 0, *range(2, 40)])),
        [],
        "duplicate value(s), e.g. 0",
    )
    cases["labels as text"] = (
        put("textlabel", frame.assign(label=frame["label"].astype(str))),
        [],
        "found '0' (30 rows), '1' (10 rows) (text, not numbers)",
    )
    cases["missing id"] = (
        put("noid", frame.assign(row_id=[None, *(f"r{i}" for i in range(1, 40))])),
        [],
        "id column 'row_id' has 1 missing value(s)",
    )
    cases["unknown id column"] = (
        put("ok6", frame),
        ["--id-col", "patient"],
        "id column 'patient' is not in",
    )
    (tmp_path / "a_file").write_text("")
    cases["unwritable output"] = (
        put("ok7", frame),
        ["--out", str(tmp_path / "a_file" / "out")],
        "cannot write to output location",
    )
    differ = {
        "columns": (
            frame.assign(f2=1.0),
            "differ in their columns: part.1.parquet has f2, which part.0.parquet has not",
        ),
        "types": (
            frame.assign(f1=frame["f1"].astype(str)),
            "differ in column 'f1': string in part.1.parquet, numeric in part.0.parquet",
        ),
    }
    for name, (second, message) in differ.items():
        folder = tmp_path / f"differ_{name}"
        folder.mkdir()
        frame.to_parquet(folder / "part.0.parquet", index=False)
        second.to_parquet(folder / "part.1.parquet", index=False)
        cases[f"files differ in {name}"] = (str(folder), [], message)
    cases["feature of no usable type"] = (
        put("date_feat", frame.assign(seen=pd.Timestamp("2026-01-01"))),
        ["--features", "f0", "seen"],
        "of a type no model can use (numbers, strings or categories): seen",
    )
    cases["unknown categorical column"] = (
        put("ok8", frame),
        ["--categorical", "plan"],
        "--categorical column(s) that are not features",
    )
    wide = pd.DataFrame({"f0": np.arange(1100.0), "label": [1] * 100 + [0] * 1000})
    cases["too many categories named"] = (
        put("many", wide.assign(note=[f"n{i}" for i in range(1100)])),
        ["--features", "f0", "note"],
        "'note' has more than 1000 distinct values",
    )
    cases["feature is the label"] = (
        put("ok9", frame),
        ["--features", "f0", "label"],
        "column 'label' is the label column and cannot also be a feature",
    )
    cases["feature named twice"] = (
        put("ok10", frame),
        ["--features", "f0", "f1", "f0"],
        "feature column(s) named twice: f0",
    )
    cases["id column is the label"] = (
        put("ok11", frame),
        ["--id-col", "label"],
        "column 'label' is named for two roles",
    )
    cases["list feature named"] = (
        put("lists", frame.assign(visits=[[1, 2]] * 40)),
        ["--features", "f0", "visits"],
        "of a type no model can use (numbers, strings or categories): visits (list<",
    )
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    frame.to_parquet(dataset / "part.0.parquet", index=False)
    cases["output is the input"] = (str(dataset), ["--out", str(dataset)], "overlap; the outputs")
    cases["output inside the input"] = (
        str(dataset),
        ["--out", str(dataset / "runs" / "one")],
        "overlap; the outputs need a location of their own",
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    cases["output holds other files"] = (
        put("ok12", frame),
        ["--out", str(notes)],
        "holds files that are not a run's (todo.txt); choose a new or empty location",
    )
    accounts = pd.DataFrame({"f0": np.arange(200.0), "label": [1] * 50 + [0] * 150})
    cases["identifier named"] = (
        put("emails", accounts.assign(email=[f"u{i}@example.com" for i in range(200)])),
        ["--features", "f0", "email"],
        "'email' has 200 distinct values among 200 rows",
    )
    cases["folds 1"] = (put("ok", frame), ["--folds", "1"], "must be at least 2")
    cases["bin method"] = (
        put("ok2", frame),
        ["--bin-method", "median"],
        "invalid choice: 'median'",
    )
    cases["storage options"] = (put("ok3", frame), ["--storage-options", "{oops"], "not valid JSON")
    cases["cluster fraction"] = (
        put("ok4", frame),
        ["--min-cluster-fraction", "1.5"],
        "must be in [0, 1), got 1.5",
    )
    cases["one resample"] = (
        put("ok5", frame),
        ["--interval-resamples", "1"],
        "must be 0 (no interval) or from 2 to 100000, got 1",
    )
    frame.set_index("f0").to_parquet(tmp_path / "indexed.parquet")  # pandas keeps the index
    cases["column as pandas index"] = (
        str(tmp_path / "indexed.parquet"),
        [],
        "stores f0 as a pandas index, which the Parquet reader does not give back as a column",
    )
    cases["empty scheduler address"] = (
        put("ok5", frame),
        ["--scheduler", " "],
        "--scheduler is given an empty value",
    )
    cases["resamples past any use"] = (
        put("ok5", frame),
        ["--interval-resamples", "99999999999999999999"],
        "must be 0 (no interval) or from 2 to 100000, got 99999999999999999999",
    )
    cases["infinite ratio"] = (
        put("ok5", frame),
        ["--max-unlabeled-ratio", "inf"],
        "max_unlabeled_ratio must be a finite positive number (None or 0: no cap), got inf",
    )
    cases["rounds past any use"] = (
        put("ok5", frame),
        ["--n-rounds", "99999999999999999999"],
        "n_rounds must be at most 100,000, got 99,999,999,999,999,999,999",
    )
    os.mkfifo(tmp_path / "pipe")  # opened as a file, it would block until written
    cases["input is a pipe"] = (str(tmp_path / "pipe"), [], "is neither a file nor a folder")
    (tmp_path / "piped").mkdir()
    os.mkfifo(tmp_path / "piped" / "part.0.parquet")
    cases["dataset part is a pipe"] = (str(tmp_path / "piped"), [], "which is not a plain file")
    cases["one cluster row"] = (
        put("ok5", frame),
        ["--max-cluster-rows", "1"],
        "max_cluster_rows must be at least 2, got 1",
    )
    cases["iterations past the seeds"] = (
        put("ok5", frame),
        ["--iterations", "99999999999999999999"],
        "iterations must be at most 4294967296, got 99999999999999999999",
    )
    cases["misspelt xgboost parameter"] = (
        put("ok6", frame),
        ["--xgb-params", '{"max_dept": 3, "eta": 0.1}'],
        "xgb_params: XGBoost has no parameter(s) max_dept",
    )
    cases["xgboost parameter value"] = (
        put("ok7", frame),
        ["--xgb-params", '{"max_depth": -3}'],
        "xgb_params: value -3 for Parameter max_depth should be greater equal to 0",
    )
    cases["gpu not there"] = (  # XGBoost would warn on every worker and use the CPU
        put("gpu", frame),
        ["--xgb-params", '{"device": "cuda:63"}'],
        "xgb_params asks for device 'cuda:63', but XGBoost ",  # finds none, or refuses it
    )
    learned = {  # what would make the models something other than the method's
        "objective": ('{"objective": "reg:squarederror"}', "objective 'reg:squarederror' would"),
        "num_class": ('{"num_class": 2}', "num_class makes several outputs a row"),
        "booster": ('{"booster": "gblinear"}', "booster 'gblinear' grows no trees"),
        "weight": ('{"scale_pos_weight": 3}', "scale_pos_weight is not yours to set"),
        "seed": ('{"seed": 7, "eta": 0.1}', "seed is not yours to set: XGBoost's seed follows"),
    }
    for i, (name, (params, said)) in enumerate(learned.items()):
        cases[f"xgboost {name}"] = (put(f"ok{20 + i}", frame), ["--xgb-params", params], said)
    cases["true label as text"] = (
        put("truetext", frame.assign(truth=["yes"] * 20 + ["no"] * 20)),
        ["--true-label-col", "truth"],
        "true-label column 'truth' must hold whole numbers from 0 (0 negative, 1 or more a "
        "positive's subtype) in every row; found 'yes' (20 rows), 'no' (20 rows)",
    )
    cases["true label missing"] = (
        put("truenan", frame.assign(truth=[np.nan] + [1.0] * 9 + [0.0] * 30)),
        ["--true-label-col", "truth"],
        "in every row; found missing (1 row)",
    )
    cases["negative seed"] = (
        put("ok9", frame),
        ["--seed", "-5"],
        "argument --seed: the seed must be a whole number from 0 to 4294967295, got -5",
    )
    cases["seed with iterations"] = (
        put("ok10", frame),
        ["--seed", str(2**32 - 2), "--iterations", "3"],
        "--seed with --iterations 3: the seed must be a whole number from 0 to 4294967293, "
        "got 4294967294",
    )
    import pyarrow as pa
    import pyarrow.parquet as pq

    twice = pa.table([frame["f0"], frame["f1"], frame["label"]], names=["f0", "f0", "label"])
    pq.write_table(twice, tmp_path / "twice.parquet")
    cases["column named twice"] = (
        str(tmp_path / "twice.parquet"),
        [],
        "has more than one column named 'f0'; each column needs a name of its own",
    )
    cases["per-feature xgboost parameter"] = (
        put("ok8", frame),
        ["--xgb-params", '{"monotone_constraints": [1, 0, 0]}'],
        "xgb_params: monotone_constraints has 3 values for the table's 2 features",
    )
    return cases


BAD_INPUTS = [
    "empty dataset", "missing path", "not parquet", "no label column", "label 2", "label -1",
    "label missing", "labels as text", "no positives", "no unlabeled", "too few positives",
    "infinite", "beyond float32",
    "duplicate ids", "missing id", "unknown id column", "unwritable output",
    "files differ in columns", "files differ in types",
    "feature of no usable type", "unknown categorical column", "too many categories named",
    "feature is the label", "feature named twice", "id column is the label",
    "list feature named", "identifier named", "output is the input", "output inside the input",
    "output holds other files",
    "folds 1", "bin method", "storage options", "cluster fraction",
    "one resample", "empty scheduler address", "column as pandas index",
    "resamples past any use", "infinite ratio", "rounds past any use", "input is a pipe",
    "dataset part is a pipe",
    "one cluster row", "iterations past the seeds", "misspelt xgboost parameter",
    "xgboost parameter value", "gpu not there",
    "xgboost objective", "xgboost num_class", "xgboost booster", "xgboost weight", "xgboost seed",
    "per-feature xgboost parameter", "true label as text", "true label missing", "negative seed",
    "seed with iterations",
    "column named twice",
]  # fmt: skip


def test_a_performance_report_inside_the_output_location_is_refused(bad_inputs, tmp_path, capsys):
    path = bad_inputs["folds 1"][0]  # a valid table
    out = tmp_path / "out"
    report = out / "dask.html"
    status, _, err = run_cli(
        ["run", "--input", path, "--out", str(out), "--performance-report", str(report)], capsys
    )
    assert status == 2 and err.strip().splitlines() == [
        f"error: --out {out} and the performance report {report} overlap; the outputs need a "
        "location of their own"
    ]
    assert not out.exists()


def test_a_performance_report_replaces_nothing(bad_inputs, tmp_path, capsys):
    """The input, a user's file and a folder are refused byte for byte as they were, and
    a report whose folder is missing is refused before the run rather than after it."""
    path = bad_inputs["folds 1"][0]  # a valid table
    (tmp_path / "notes.html").write_text("mine")
    (tmp_path / "a folder").mkdir()
    before = Path(path).read_bytes()
    for report, message in [
        (path, f"--performance-report {path} exists; name a file that does not"),
        (str(tmp_path / "notes.html"), "notes.html exists; name a file that does not"),
        (str(tmp_path / "a folder"), f"--performance-report {tmp_path / 'a folder'} exists"),
        (str(tmp_path / "no" / "r.html"), f"its folder {tmp_path / 'no'} does not exist"),
    ]:
        out = tmp_path / "out"
        status, _, err = run_cli(
            ["run", "--input", path, "--out", str(out), "--performance-report", report], capsys
        )
        assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, err
        assert not out.exists()
    assert Path(path).read_bytes() == before and (tmp_path / "notes.html").read_text() == "mine"


def test_true_labels_are_whole_numbers_from_zero_and_never_text():
    from pulsnar_dask.pipeline.checks import check_true_labels

    got = check_true_labels(pd.array([0, 2, 1], dtype="Int64").to_numpy(), "t")
    assert got.tolist() == [0, 2, 1] and got.dtype == np.int64
    got = check_true_labels(np.array([0, 2, 1], dtype=np.int8), "t")
    assert got.tolist() == [0, 2, 1] and got.dtype == np.int64
    for values, shown in (
        (np.array(["1", "0"], dtype=object), "'1' (1 row), '0' (1 row)"),
        (pd.array([0, None], dtype="Int64").to_numpy(), "missing (1 row)"),
        (np.array([0.5, 1.0]), "0.5 (1 row)"),
        (np.array([-1, 1]), "-1 (1 row)"),
        (np.array([np.nan, 1.0]), "missing (1 row)"),  # numeric columns take a fast path
        (np.array([1e19, 1.0]), "1e+19 (1 row)"),  # would wrap to a negative int64
    ):
        with pytest.raises(PUError, match=re.escape(f"in every row; found {shown}")):
            check_true_labels(values, "t")


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_every_bad_input_gets_one_clear_line(bad_inputs, name, tmp_path, capsys):
    path, extra, message = bad_inputs[name]
    out = tmp_path / "out"
    status, _, err = run_cli(
        ["run", "--input", path, "--method", "pulscar", "--out", str(out), "--n-workers", "1",
         *extra],
        capsys,
    )  # fmt: skip
    assert status == 2, err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert not out.exists()  # refused before anything is written


@pytest.mark.parametrize("name", ["duplicate ids", "true label as text"])
def test_a_mistake_found_on_the_workers_is_one_line_from_every_process(
    bad_inputs, name, tmp_path, capfd
):
    """Checks that run where the rows are held return the refusal rather than fail their
    task, which the worker would log beside the run's one line (``capfd``: the workers'
    processes write to the same stderr)."""
    path, extra, message = bad_inputs[name]
    status, _, err = run_cli(
        ["run", "--input", path, "--out", str(tmp_path / "out"), "--n-workers", "1", *extra],
        capfd,
    )
    assert status == 2 and message in err
    assert len(err.strip().splitlines()) == 1, err


def test_wrong_true_labels_are_counted_over_the_whole_column(tmp_path, capsys):
    """The true labels are checked partition by partition, and the refusal counts each
    wrong value over every partition."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, truth in enumerate([["yes"] * 5 + ["no"] * 15, ["no"] * 10 + ["2"] * 10]):
        pd.DataFrame(
            {
                "f0": rng.random(20),
                "label": [1] * 6 + [0] * 14,
                "row_id": np.arange(20) + 20 * i,
                "truth": truth,
            }
        ).to_parquet(folder / f"part{i}.parquet", index=False)
    status, _, err = run_cli(
        ["run", "--input", str(folder), "--out", str(tmp_path / "out"), "--n-workers", "1",
         "--true-label-col", "truth"],
        capsys,
    )  # fmt: skip
    assert status == 2
    assert "found 'no' (25 rows), '2' (10 rows), 'yes' (5 rows)" in err, err  # most first


def test_string_ids_key_the_folds_and_the_predictions(tmp_path, capsys):
    """Ids of any type: a row's fold follows its id, so the same rows in another order
    give the same alpha; predictions come back under the input's ids, on both engines."""
    from pulsnar_dask import make_pu_data

    d = make_pu_data("scar", 200, 800, 5, 0.25, random_state=3)
    frame = pd.DataFrame(d.X, columns=[f"f{i}" for i in range(5)]).assign(
        label=d.label, uid=[f"patient-{i:04d}" for i in range(d.label.size)]
    )
    frame.to_parquet(tmp_path / "a.parquet", index=False)
    frame.sample(frac=1.0, random_state=1).to_parquet(tmp_path / "b.parquet", index=False)
    runs = {}
    for name, source, engine in (("a", "a", "task"), ("b", "b", "task"), ("dask", "a", "dask")):
        status, summary, err = run_cli(
            ["run", "--input", str(tmp_path / f"{source}.parquet"), "--id-col", "uid",
             "--method", "pulscar", "--engine", engine, "--out", str(tmp_path / name),
             "--n-workers", "2"],
            capsys,
        )  # fmt: skip
        assert status == 0, err
        runs[name] = summary
        got = pd.read_parquet(tmp_path / name / "predictions").set_index("uid")
        assert sorted(got.index) == sorted(frame["uid"])
        expected = frame.set_index("uid")["label"]
        assert (got["label"] == expected.loc[got.index]).all()
    assert runs["b"]["alpha"] == pytest.approx(runs["a"]["alpha"], abs=1e-9)
    assert runs["dask"]["alpha"] == pytest.approx(runs["a"]["alpha"], abs=0.05)


def test_a_categorical_label_column_reads_and_writes_as_its_numbers(tmp_path, capsys):
    """A label column stored as a pandas category of 0 and 1 gives the run of the same
    labels stored as numbers, and the predictions hold it as the numbers."""
    from pulsnar_dask import make_pu_data

    d = make_pu_data("scar", 200, 800, 5, 0.25, random_state=4)
    frame = pd.DataFrame(d.X, columns=[f"f{i}" for i in range(5)]).assign(label=d.label)
    frame.to_parquet(tmp_path / "numbers.parquet", index=False)
    frame.assign(label=pd.Categorical(d.label)).to_parquet(tmp_path / "category.parquet")
    alphas = {}
    for name in ("numbers", "category"):
        status, summary, err = run_cli(
            ["run", "--input", str(tmp_path / f"{name}.parquet"), "--method", "pulscar",
             "--out", str(tmp_path / name / "run"), "--n-workers", "2"],
            capsys,
        )  # fmt: skip
        assert status == 0, err
        alphas[name] = summary["alpha"]
        got = pd.read_parquet(tmp_path / name / "run" / "predictions").sort_values("row_id")
        assert pd.api.types.is_integer_dtype(got["label"]), got["label"].dtype
        assert (got["label"].to_numpy() == d.label).all()
    assert alphas["category"] == alphas["numbers"]


def test_all_bad_inputs_are_covered(bad_inputs):
    assert sorted(bad_inputs) == sorted(BAD_INPUTS)


def test_row_labels_stored_as_an_index_are_read_as_before(tmp_path):
    """pandas' unnamed index (row labels) and Dask's own (``__null_dask_index__``) are
    stored as index columns too, but hold no feature: they are not refused."""
    import dask.dataframe as dd

    from pulsnar_dask.io import open_parquet

    frame = pd.DataFrame({"f0": np.arange(40.0), "label": [1] * 10 + [0] * 30})
    frame.iloc[::-1].to_parquet(tmp_path / "pandas.parquet")
    dd.from_pandas(frame, npartitions=2).to_parquet(tmp_path / "dask")
    for path in (tmp_path / "pandas.parquet", tmp_path / "dask"):
        opened, _ = open_parquet(str(path))
        assert list(opened.columns) == ["f0", "label"]
        assert sorted(opened.compute()["f0"]) == list(frame["f0"])


def test_text_columns_are_categorical_and_others_skipped_with_a_warning(tmp_path, caplog):
    from pulsnar_dask.io import read_pu_parquet

    frame = pd.DataFrame(
        {
            "f0": [0.1, 0.2],
            "name": ["a", "b"],
            "code": [3, 4],
            "seen": pd.Timestamp(0),
            "visits": [[1, 2], [3]],
            "blob": [b"x", b"y"],
            "empty": None,
            "label": [1, 0],
        }
    )
    frame.to_parquet(tmp_path / "mixed.parquet", index=False)
    with caplog.at_level("WARNING"):
        puf = read_pu_parquet(str(tmp_path / "mixed.parquet"))
    assert puf.features == ["f0", "name", "code"]
    assert puf.categorical == ["name"]  # numeric codes stay numeric unless named
    assert (
        "skipping column(s) of a type no model can use: seen (datetime64[ns]), "
        "visits (list<element: int64>), blob (binary), empty (null: no value in any row)"
    ) in caplog.text
    assert (
        puf.left_out(puf.features)["empty"] == "a type no model can use (null: no value in any row)"
    )
    # a file where a column has no value (Arrow's null type) takes the other files' type,
    # first file or not, and the values of the others are read
    for first in (0, 1):
        folder = tmp_path / f"nulls{first}"
        folder.mkdir()
        halves = [frame.iloc[:1].assign(f0=None), frame.iloc[1:]]
        for i in range(2):
            halves[i].to_parquet(folder / f"part.{i if first == 0 else 1 - i}.parquet", index=False)
        puf = read_pu_parquet(str(folder))
        assert puf.features == ["f0", "name", "code"]
        values = puf.frame.compute().sort_values("label")["f0"]
        assert values.dtype.kind == "f" and values.isna().tolist() == [False, True]
    # an int column cannot hold the missing values: refused, as files that differ
    (tmp_path / "intnull").mkdir()
    frame.iloc[:1].assign(code=None).to_parquet(tmp_path / "intnull" / "part.0.parquet")
    frame.iloc[1:].to_parquet(tmp_path / "intnull" / "part.1.parquet")
    with pytest.raises(
        PUError, match=r"differ in column .code.: no value in part\.0\.parquet, int64"
    ):
        read_pu_parquet(str(tmp_path / "intnull"))
    # a hive partition key (in no file's footer) stays a column
    frame[["f0", "name", "label"]].to_parquet(tmp_path / "hive", partition_cols=["name"])
    puf = read_pu_parquet(str(tmp_path / "hive"))
    assert sorted(puf.features) == ["f0", "name"] and puf.categorical == ["name"]
    puf = read_pu_parquet(str(tmp_path / "mixed.parquet"), categorical=["code"])
    assert puf.categorical == ["name", "code"]
    # a dataset whose files end in .pq, as Dask reads them too
    (tmp_path / "pq").mkdir()
    for i in range(2):
        frame.to_parquet(tmp_path / "pq" / f"part-{i}.pq", index=False)
    assert read_pu_parquet(str(tmp_path / "pq")).features == ["f0", "name", "code"]


def test_features_that_cannot_separate_labels_get_a_warning(tmp_path, capsys, caplog):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(1200, 3)), columns=["f0", "f1", "f2"])
    frame["label"] = (rng.random(1200) < 0.3).astype(int)  # independent of the features
    frame.to_parquet(tmp_path / "noise.parquet", index=False)
    args = ["run", "--input", str(tmp_path / "noise.parquet"), "--method", "pulscar",
            "--out", str(tmp_path / "out"), "--n-workers", "1"]  # fmt: skip
    with caplog.at_level("WARNING"):
        status, summary, err = run_cli(args, capsys)
    assert status == 0, err
    assert summary["pu_auc"][0] < 0.6
    assert summary["alpha_identified"] is False
    assert "hardly tells labeled positives from unlabeled rows" in caplog.text
    assert "Alpha is not identified" in (tmp_path / "out" / "report.html").read_text()


def test_the_columns_left_out_are_in_the_summary_and_the_report(tmp_path, capsys):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"f0": rng.normal(size=400), "f1": rng.normal(size=400)})
    frame["label"] = (frame["f0"] + rng.normal(size=400) > 0.5).astype(int)
    frame["email"] = [f"user{i}@example.com" for i in range(400)]  # one per row
    frame["seen"] = pd.Timestamp("2026-01-01")
    frame.to_parquet(tmp_path / "accounts.parquet", index=False)
    status, summary, err = run_cli(
        ["run", "--input", str(tmp_path / "accounts.parquet"), "--method", "pulscar",
         "--out", str(tmp_path / "out"), "--n-workers", "1"],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    left_out = summary["left_out_columns"]
    assert sorted(left_out) == ["email", "seen"]
    assert left_out["seen"].startswith("a type no model can use (datetime64[")
    assert left_out["email"] == "an identifier or free text (too many distinct values)"
    assert summary["settings"]["n_features"] == 2
    report = (tmp_path / "out" / "report.html").read_text()
    assert "columns left out</th><td>seen: a type no model can use" in report


def test_a_feature_that_records_the_label_is_named(tmp_path, capsys, caplog):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(1200, 3)), columns=["f0", "f1", "f2"])
    frame["label"] = (frame["f0"] + rng.normal(size=1200) > 1).astype(int)
    frame["coded"] = frame["label"] * 3.0  # filled in once a row is labeled
    frame.to_parquet(tmp_path / "leak.parquet", index=False)
    args = ["run", "--input", str(tmp_path / "leak.parquet"), "--method", "pulscar",
            "--out", str(tmp_path / "out"), "--n-workers", "1"]  # fmt: skip
    with caplog.at_level("WARNING"):
        status, summary, err = run_cli(args, capsys)
    assert status == 0, err
    assert min(summary["pu_auc"]) >= 0.9999
    assert summary["perfect_separation"] == {"leading_feature": "coded"}
    assert "perfectly separated" in caplog.text and "lean most on 'coded'" in caplog.text
    assert "CHECK THE FEATURES" in err.strip().splitlines()[-1]
    assert "lean most on &#x27;coded&#x27;" in (tmp_path / "out" / "report.html").read_text()
    # without it the same rows are told apart only as far as f0 allows: no warning
    frame.drop(columns="coded").to_parquet(tmp_path / "plain.parquet", index=False)
    args[2], args[6] = str(tmp_path / "plain.parquet"), str(tmp_path / "plain")
    status, summary, err = run_cli(args, capsys)
    assert status == 0, err
    assert "perfect_separation" not in summary and "CHECK THE FEATURES" not in err


def test_finished_run_is_not_overwritten_without_the_flag(data, tmp_path, capsys):
    out = tmp_path / "twice"
    args = [
        "run",
        "--input",
        str(data),
        "--method",
        "pulscar",
        "--out",
        str(out),
        "--n-workers",
        "1",
    ]
    assert run_cli(args, capsys)[0] == 0
    finished = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    summary = (out / "summary.json").read_text()
    status, _, err = run_cli(args, capsys)
    assert status == 2 and "already holds a finished run" in err
    status, _, err = run_cli(["demo", "--out", str(out), "--n-workers", "1"], capsys)
    assert status == 2 and "already holds a finished run" in err  # the demo's run, as any
    # a replacement that fails leaves the finished run as it was
    bad = tmp_path / "bad.parquet"
    pd.read_parquet(data).assign(label=2).to_parquet(bad, index=False)
    bad_args = [a if a != str(data) else str(bad) for a in args]
    status, _, err = run_cli([*bad_args, "--overwrite"], capsys)
    assert status == 2 and "must hold only the numbers 0 and 1" in err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == finished
    assert (out / "summary.json").read_text() == summary
    assert run_cli([*args, "--overwrite"], capsys)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(finished)  # no staging left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE as on Linux")
def test_a_full_disk_ends_in_one_line_and_keeps_the_finished_run(tmp_path, capsys):
    """Writes past a file-size limit fail as on a full disk (EFBIG instead of ENOSPC): the
    model's files are larger than the limit. (Tables large enough for the workers'
    shuffle to spill to disk fail there first, and Dask's worker logs that error.)"""
    import resource
    import signal

    from pulsnar_dask import make_pu_data
    from pulsnar_dask.io import write_pu_parquet

    data = tmp_path / "small.parquet"
    write_pu_parquet(make_pu_data("scar", 300, 1200, 5, 0.25, random_state=1).split(2), data)
    out = tmp_path / "run"
    args = ["run", "--input", str(data), "--method", "pulscar", "--out", str(out),
            "--n-workers", "1", "--quiet"]  # fmt: skip
    assert run_cli(args, capsys)[0] == 0
    finished = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    for target, extra in ((tmp_path / "new", []), (out, ["--overwrite"])):
        proc = subprocess.run(
            [sys.executable, "-m", "pulsnar_dask", *args[:6], str(target), *args[7:], *extra],
            preexec_fn=small_files, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert last == f"error: cannot write the outputs to {target}: File too large"
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "new").exists()
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == finished


def test_unreachable_scheduler_fails_in_bounded_time(data, tmp_path, capsys, monkeypatch):
    from pulsnar_dask.dask_executor import connect

    monkeypatch.setattr(connect, "CONNECT_TIMEOUT_S", 3)  # 20 s by default
    out = tmp_path / "unreachable"
    status, _, err = run_cli(
        ["run", "--input", str(data), "--method", "pulscar", "--out", str(out),
         "--scheduler", f"tcp://127.0.0.1:{free_port()}"],
        capsys,
    )  # fmt: skip
    assert status == 2
    assert "cannot reach the Dask scheduler" in err and "within 3 s" in err
    assert "Traceback" not in err and not out.exists()


@pytest.fixture
def not_a_scheduler():
    """Servers on loopback that are not Dask schedulers: a web server (waits for a
    request) and one that greets in its own protocol, as SSH does."""
    import http.server
    import socket
    import threading

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    banner = socket.create_server(("127.0.0.1", 0))

    def greet():
        while True:
            try:
                conn, _ = banner.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    threads = [threading.Thread(target=f, daemon=True) for f in (web.serve_forever, greet)]
    for t in threads:
        t.start()
    yield {"web": web.server_address[1], "banner": banner.getsockname()[1]}
    web.shutdown()
    web.server_close()
    banner.close()


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("tcp://127.0.0.1:{web}", "accepts connections but sent no Dask handshake within 2 s"),
        ("127.0.0.1:{web}", "accepts connections but sent no Dask handshake within 2 s"),
        ("tcp://127.0.0.1:{banner}", "answers, but not as a Dask scheduler (it sent b'SSH-2.0-'"),
        ("http://127.0.0.1:{web}", "Dask speaks inproc, tcp, tls, ucx, ws, wss, not http"),
        ("tls://127.0.0.1:{web}", "cannot connect to the Dask scheduler at tls://"),
        ("tcp://127.0.0.1:port", "is not a scheduler address: invalid literal"),
    ],
)
def test_an_address_that_is_not_a_dask_scheduler_gets_one_line(
    data, tmp_path, capsys, monkeypatch, not_a_scheduler, address, message
):
    """A web server, another protocol's greeting, a scheme Dask does not speak, TLS
    without its settings, a malformed port: one line within the connect timeout, never
    a hang (a web server held distributed's client for ever) or a traceback."""
    from pulsnar_dask.dask_executor import connect

    monkeypatch.setattr(connect, "CONNECT_TIMEOUT_S", 2)
    out = tmp_path / "out"
    status, _, err = run_cli(
        ["run", "--input", str(data), "--out", str(out),
         "--scheduler", address.format(**not_a_scheduler)],
        capsys,
    )  # fmt: skip
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()
    from distributed import default_client

    with pytest.raises(ValueError):  # no half-started client left as the default
        default_client()


def test_a_true_label_column_never_becomes_a_feature(tmp_path, caplog):
    from pulsnar_dask.io import read_pu_parquet

    frame = pd.DataFrame({"f0": [0.1, 0.2], "true_label": [2, 0], "label": [1, 0]})
    frame.to_parquet(tmp_path / "truth.parquet", index=False)
    with caplog.at_level("WARNING"):
        puf = read_pu_parquet(str(tmp_path / "truth.parquet"))
    assert puf.features == ["f0"] and puf.true_label == "true_label"
    assert "taken as the true-label column" in caplog.text


def test_every_setting_is_declared_once_and_the_cli_and_estimators_follow_it():
    """PUConfig declares each setting; the CLI's options and the estimators' parameters
    come from it (defaults, choices), and the CLI reads its values back into a PUConfig."""
    import inspect
    from dataclasses import fields

    from pulsnar_dask import PULSCAR, PULSNAR
    from pulsnar_dask.cli import build_parser, config_from_args
    from pulsnar_dask.core.config import PUConfig, default_of

    run = build_parser()._subparsers._group_actions[0].choices["run"]
    actions = {a.dest: a for a in run._actions}
    flagged = [f for f in fields(PUConfig) if f.metadata["flag"]]
    assert len(flagged) >= 20
    for f in flagged:
        action = actions[f.name]
        assert action.option_strings == [f.metadata["flag"]]
        assert action.default == default_of(f), f.name
        assert tuple(action.choices or ()) == tuple(f.metadata["choices"] or ()), f.name
    base = ["run", "--input", "in", "--out", "out"]
    assert config_from_args(build_parser().parse_args(base)) == PUConfig()
    given = config_from_args(
        build_parser().parse_args(
            [*base, "--max-unlabeled-ratio", "0", "--n-clusters", "3", "--bandwidth-bounds",
             "0.1", "0.4", "--xgb-params", '{"max_depth": 3}', "--alpha-estimator", "bbe"]
        )
    )  # fmt: skip
    assert given == PUConfig(
        max_unlabeled_ratio=None, n_clusters=3, bandwidth_bounds=(0.1, 0.4),
        xgb_params={"max_depth": 3}, alpha_estimator="bbe",
    )  # fmt: skip
    with pytest.raises(PUError, match="tail_fraction must be in"):
        config_from_args(build_parser().parse_args([*base, "--tail-fraction", "0.7"]))
    with pytest.raises(PUError, match=r"claim_overlap must be in \[0, 1\], got 2.0"):
        config_from_args(build_parser().parse_args([*base, "--claim-overlap", "2"]))
    summed = config_from_args(build_parser().parse_args([*base, "--claim-overlap", "1"]))
    assert summed == PUConfig(claim_overlap=1.0)
    # each estimator parameter that is a setting defaults to it; its _config() is PUConfig()
    rename = {"n_jobs": "n_threads"}
    for estimator in (PULSCAR, PULSNAR):
        params = inspect.signature(estimator.__init__).parameters
        settings = {f.name: f for f in fields(PUConfig)}
        shared = [p for p in params if rename.get(p, p) in settings and p != "xgb_params"]
        assert len(shared) >= 14
        for name in shared:
            assert params[name].default == default_of(settings[rename.get(name, name)]), name
            assert f"    {name} : " in estimator.__doc__, name
        assert estimator()._config() == PUConfig()
    # every setting the CLI offers is a PULSNAR parameter (the calibration method is its
    # ``calibration``, which also switches calibration on, as --calibrate does)
    pulsnar = {rename.get(p, p) for p in inspect.signature(PULSNAR.__init__).parameters}
    missing = {f.name for f in flagged} - pulsnar - {"calibration_method"}
    assert not missing, f"CLI settings that PULSNAR does not take: {sorted(missing)}"


@pytest.mark.parametrize(
    ("argv", "before", "after"),
    [
        (["run"], None, ""),  # XGBoost on the CPU: the GPUs hidden
        (["score"], None, ""),
        (["run", "--xgb-params", '{"device": "cpu", "eta": 0.1}'], None, ""),
        (["run", "--xgb-params", '{"device": "cuda"}'], None, None),  # asked for: untouched
        (["run", "--xgb-params", '{"device": "cuda:1"}'], None, None),
        (["run", "--xgb-params", '{"device": "gpu"}'], None, None),
        (["run"], "1", "1"),  # the user's own setting stays
    ],
)
def test_cpu_runs_hide_the_gpus_unless_xgboost_is_asked_to_use_them(
    monkeypatch, tmp_path, argv, before, after
):
    """A CUDA build of XGBoost takes GPU memory in every process even on the CPU, so a
    CPU run hides the GPUs from the command and its local workers (the variable they
    inherit); one that asks for a GPU, or a variable the user set, is left alone."""
    from pulsnar_dask.cli import _hide_gpus_from_cpu_runs, build_parser

    if before is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", before)
    paths = ["--input", str(tmp_path / "in"), "--out", str(tmp_path / "out")]
    if argv[0] == "score":
        paths += ["--model", str(tmp_path / "model")]
    _hide_gpus_from_cpu_runs(build_parser().parse_args(argv + paths))
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == after


def test_the_gpus_are_hidden_before_the_workers_fork_server_starts(monkeypatch, tmp_path):
    """The command hides the GPUs before anything that forks workers starts, so that
    they inherit it."""
    import pulsnar_dask.cli as cli

    seen = []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(
        cli, "start_fork_server", lambda: seen.append(os.environ.get("CUDA_VISIBLE_DEVICES"))
    )
    argv = ["run", "--input", str(tmp_path / "in"), "--out", str(tmp_path / "out")]
    # the last seed with two iterations: refused by the run itself, before a cluster
    assert cli.main([*argv, "--seed", "4294967295", "--iterations", "2", "--quiet"]) == 2
    assert seen == [""]


def test_every_option_of_every_command_has_a_help_text():
    from pulsnar_dask.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    assert set(commands) == {"synth", "run", "score", "demo"}
    for name, command in commands.items():
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings} has no help text"


def test_a_run_that_reads_the_clusters_says_why_and_spans_pulscars(tmp_path, capsys, caplog):
    """Well separated subtypes labeled at different rates: PULSCAR reads alpha low, the
    clusters near the truth, and even their tail reading lies past PULSCAR's beyond the
    noise. Auto reports the clusters' alpha; the headline and the report name both, the
    interval spans both, and the warning that it is too wide to act on says so."""
    from pulsnar_dask import make_pu_data
    from pulsnar_dask.io import write_pu_parquet
    from pulsnar_dask.pipeline.result import WIDE_INTERVAL, headline

    data = make_pu_data("snar", 600, 3000, 8, 0.3, class_sep=2.0, n_subtypes=3, random_state=0)
    write_pu_parquet(data.split(2), tmp_path / "in.parquet")
    out = tmp_path / "differ"
    with caplog.at_level(logging.WARNING, logger="pulsnar_dask"):
        status, summary, err = run_cli(
            ["run", "--input", str(tmp_path / "in.parquet"), "--out", str(out),
             "--n-workers", "2"],
            capsys,
        )  # fmt: skip
    assert status == 0, err
    evidence = summary["method_evidence"]
    assert summary["method"] == evidence["read"] == "pulsnar"
    assert summary["n_clusters"] == evidence["n_clusters"] > 1
    pulscar, pulsnar = evidence["readings"]["pulscar"], evidence["readings"]["pulsnar"]
    assert summary["alpha"] == pytest.approx(pulsnar, abs=5e-5)
    assert pulscar < summary["true_alpha"] - 0.05 and abs(pulsnar - summary["true_alpha"]) < 0.05
    low, high = summary["alpha_interval"]
    assert low <= summary["true_alpha"] <= high and low <= pulscar and pulsnar <= high
    assert high - low > WIDE_INTERVAL and summary["alpha_imprecise"] is True
    assert "SCAR from SNAR" not in caplog.text  # no warning of its own
    assert (
        f"it spans PULSCAR's reading, {pulscar:.3f} (positives labeled at random), and the "
        f"{evidence['n_clusters']} clusters', {pulsnar:.3f} (each subtype at its own rate)"
    ) in caplog.text
    line = headline(summary)
    assert (
        f"alpha {pulsnar:.3f}: about {summary['hidden_positives']:,} hidden positives among "
        f"3,000 unlabeled rows (PULSNAR, {evidence['n_clusters']} clusters; PULSCAR reads "
        f"{pulscar:.3f}); 95% interval"
    ) in line
    report = html.unescape((out / "report.html").read_text())
    assert line in report
    assert "auto reads <strong>PULSNAR</strong>: alpha is PULSNAR's:" in report
    assert f"read as PULSNAR reads them, give {pulsnar:.3f}, the estimate)." in report
    assert "(PULSCAR reads alpha" in report
    assert report.count("<figure>") == report.count("<figcaption>") >= 3
    # the clusters it reads, as a PULSNAR run lists them: every labeled positive in one
    subtypes = summary["subtypes"]
    assert len(subtypes) == summary["n_clusters"]
    assert sum(s["positives"] for s in subtypes) == summary["n_positive"] == 600
    if not any(len(g) > 1 for g in summary["cluster_groups"]):  # none counted once
        assert sum(s["alpha"] for s in subtypes) == pytest.approx(summary["alpha"], abs=5e-4)
    assert all(s["hidden_positives"] == round(s["alpha"] * 3000) for s in subtypes)
    assert "<h2>Subtypes of the positives</h2>" in report
    assert "the estimate is the sum over them" in report
    assert "Auto reads them as PULSNAR does, as though each kind was labeled" in report
    table = report.split("<table id='subtypes'>")[1].split("</table>")[0]
    assert table.count("<tr><td>") == len(subtypes)


def test_method_auto_is_the_default_and_reports_its_choice(data, tmp_path, capsys):
    out = tmp_path / "auto"
    status, summary, err = run_cli(
        ["run", "--input", str(data), "--out", str(out), "--n-workers", "2"], capsys
    )
    assert status == 0, err
    assert summary["method_requested"] == "auto"
    evidence = summary["method_evidence"]
    assert set(evidence) == {
        "n_clusters", "reason", "subtypes_may_be_unseen", "cluster_features", "model_features",
        "readings", "clusters_past_pulscar", "read",
    }  # fmt: skip
    assert evidence["n_clusters"] > 1  # the clusters, scored beside PULSCAR
    assert evidence["subtypes_may_be_unseen"] is False  # 8 features, all clustered
    # SNAR data whose clusters' tail reading lies past PULSCAR's: the clusters' alpha
    assert evidence["clusters_past_pulscar"] > 2 and evidence["read"] == "pulsnar"
    assert summary["method"] == "pulsnar" and summary["n_clusters"] == evidence["n_clusters"]
    assert summary["alpha"] == pytest.approx(evidence["readings"]["pulsnar"], abs=5e-5)
    readings = summary["interval_readings"]
    assert readings["pulsnar kernel"]["alpha"] == pytest.approx(
        evidence["readings"]["pulsnar"], abs=5e-5
    )
    report = (out / "report.html").read_text()
    assert "auto reads <strong>PULSNAR</strong>" in report
    # the overlap check reads PULSCAR's subproblem, scored beside the clusters
    assert summary["alpha_may_be_high"] is (summary["negative_auc"] < OVERLAP_AUC)
    assert f"{summary['negative_auc']:.3f} (alpha may be far too high below {OVERLAP_AUC};" in (
        report
    )
    assert ("overlap (AUC between them" in report) is summary["alpha_may_be_high"]
    # the report reads the run: the interval in the headline and the plain paragraph,
    # the subtypes table of a PULSNAR run, every plot captioned
    low, high = summary["alpha_interval"]
    assert low <= summary["alpha"] <= high
    assert summary["alpha_imprecise"] is (high - low > WIDE_INTERVAL)
    assert ("do not pin alpha down; act on the interval" in report) is summary["alpha_imprecise"]
    n_u = summary["n_unlabeled"]
    assert f"95% interval {round(low * n_u):,}-{round(high * n_u):,}" in report
    assert f"(95% interval {round(low * n_u):,} to {round(high * n_u):,})" in report
    assert report.count("<figure>") == report.count("<figcaption>") >= 3
