"""The authors' reference implementation, run from a checkout of ``unmtransinfo/PULSNAR``.

Not part of this project: point the jobs at a checkout (the folder that holds its
``PULSNAR`` package). It imports ``catboost`` and ``rpy2`` at the top of two modules; only
its CatBoost classifier and its R bandwidth rules use them, and neither runs here
(``classifier="xgboost"``, ``bw_method="hist"``), so a missing ``catboost`` is stood in for
by an empty module, and ``rpy2`` has to be imported in a ``try`` in its
``puestimator/AlphaEstimate.py``.

As a command, one run of its synthetic examples' settings on a table of this project's
format (``label``, ``true_label``, ``row_id`` and features), timed whole by the caller:

    python jobs/reference.py CHECKOUT scar|snar TABLE.parquet   # prints {"alpha": ...}
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np

# Their synthetic examples' settings (examples/pulscar_syn_alpha_estimation_1.py and
# pulsnar_syn_alpha_estimation.py, with testparams/pulscar_synthetic_alpha.yaml and
# pulsnar_synthetic_alpha.yaml), XGBoost on this machine's cores.
SYNTHETIC = {
    "scar": {
        "scar": True, "bin_method": "rice", "bw_method": "hist", "lowerbw": 0.05,
        "upperbw": 0.5, "optim": "local",
    },
    "snar": {
        "scar": False, "n_clusters": 0, "max_clusters": 10, "covar_type": "full",
        "top50p_covars": False, "bin_method": "rice", "bw_method": "hist", "lowerbw": 0.015,
        "upperbw": 0.5, "optim": "local",
    },
}  # fmt: skip
SYNTHETIC_GMM = {"n_components": 1, "random_state": 101}
SYNTHETIC_XGB = {
    "scar": {"max_depth": 4, "eval_metric": "logloss", "random_state": 101},
    "snar": {"max_depth": 4, "eval_metric": "logloss", "random_state": 101, "learning_rate": 0.2},
}


def load(checkout: Path) -> Any:
    """The reference's ``PULSNAR`` module, imported from ``checkout``."""
    sys.modules.setdefault("catboost", types.ModuleType("catboost"))  # unused with xgboost
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    from PULSNAR import PULSNAR

    return PULSNAR


def reference_alpha(
    classifier: type,
    settings: dict[str, Any],
    xgb: dict[str, Any],
    gmm: dict[str, Any],
    X: np.ndarray,
    labels: np.ndarray,
    true_labels: np.ndarray,
) -> tuple[float, Any]:
    """One run of the reference's ``pulsnar()`` (one iteration, 5 folds, no calibration),
    in a folder of its own (it writes result files, some into the working directory).

    Returns
    -------
    (alpha, model)
        Its estimate and the fitted ``classifier`` instance.
    """
    import yaml

    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        params = Path(tmp) / "params.yaml"
        io_params = {
            "result_file": f"{tmp}/predictions.tsv",
            "alpha_file": f"{tmp}/alpha_estimates.tsv",
            "imp_feature_file": f"{tmp}/imp_features.pkl",
            "bic_plot_file": f"{tmp}/bic.png",
        }
        params.write_text(
            yaml.safe_dump({"XGB_params": xgb, "GMM_params": gmm, "IO_params": io_params})
        )
        model = classifier(
            **settings, csrdata=False, classifier="xgboost", calibration=False,
            classification_metrics=False, n_iterations=1, kfold=5, kflips=1,
            pulsnar_params_file=str(params),
        )  # fmt: skip
        cwd = os.getcwd()
        try:
            os.chdir(tmp)
            with contextlib.redirect_stdout(io.StringIO()):
                result = model.pulsnar(
                    X.astype(np.float64), labels, tru_label=true_labels,
                    rec_list=np.arange(labels.size),
                )  # fmt: skip
        finally:
            os.chdir(cwd)
    return float(result["estimated_alpha"]), model


def main() -> None:
    import pandas as pd

    checkout, scenario, table = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    pulsnar = load(checkout)
    frame = pd.read_parquet(table)
    labels = frame["label"].to_numpy(dtype=int)
    true_labels = (frame["true_label"].to_numpy() > 0).astype(int)
    X = frame.drop(columns=["label", "true_label", "row_id"]).to_numpy(dtype=np.float64)
    xgb = {**SYNTHETIC_XGB[scenario], "n_jobs": os.cpu_count()}
    alpha, _ = reference_alpha(
        pulsnar.PULSNARClassifier,
        SYNTHETIC[scenario],
        xgb,
        SYNTHETIC_GMM,
        X,
        labels,
        true_labels,
    )
    print(json.dumps({"alpha": alpha}))


if __name__ == "__main__":
    main()
