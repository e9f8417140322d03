"""A fitted PU model that scores new rows: XGBoost models, a calibration map, the schema.

What a run learned, kept to apply to rows it never saw:

- without ``classify``: the subproblems' fold models (one subproblem for PULSCAR, one
  per cluster for PULSNAR). A new row's probability of being positive is
  ``1 - prod_c (1 - p_c)``, ``p_c`` the mean of subproblem ``c``'s fold models, as the
  run combines its out-of-fold probabilities; its calibrated probability comes from the
  run's Algorithm 3 calibration (one map of the combined probability, or with
  ``calibration_data="U"`` one map per subproblem before combining);
- with ``classify``: the fold models of the retrain on recovered labels (Algorithm 4),
  and a map fitted from their out-of-fold probabilities to the recovered labels.

Saved as plain files: ``model.json`` (schema, calibration, alpha, settings, version)
and one XGBoost JSON file per fold model. No pickles.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pulsnar_dask.core.calibration import CalibrationMap
from pulsnar_dask.core.schema import FeatureSchema
from pulsnar_dask.core.subproblem import SubproblemResult

MODEL_FILE = "model.json"
FORMAT = 1


@dataclass
class Component:
    """The fold models of one scoring and the features they see.

    Attributes
    ----------
    features : list of str
        Columns of the schema the models take, in their order.
    models : list of bytes
        XGBoost JSON, one per fold.
    calibration : CalibrationMap or None
        This component's own map (``calibration_data="U"``).
    """

    features: list[str]
    models: list[bytes]
    calibration: CalibrationMap | None = None
    _boosters: list[Any] | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_boosters": None}  # loaded again where it lands

    def load(self, names: list[str]) -> None:
        """Load the fold models now (``names``: their files), refusing one XGBoost
        cannot read or that takes another number of features.

        Raises
        ------
        ValueError
            Naming the file.
        """
        import xgboost as xgb

        boosters = []
        for name, model in zip(names, self.models, strict=True):
            if not model.strip():  # XGBoost aborts the process on an empty buffer
                raise ValueError(f"{name} is empty, not an XGBoost model")
            try:
                booster = xgb.Booster(model_file=bytearray(model))
            except xgb.core.XGBoostError as exc:  # its message ends in a C++ backtrace
                reason = str(exc).strip().splitlines()[0]
                raise ValueError(
                    f"{name} is not an XGBoost model XGBoost can read: {reason}"
                ) from None
            learner = json.loads(booster.save_config())["learner"]
            objective = learner["objective"]["name"]
            outputs = int(learner["learner_model_param"].get("num_target", 1))
            if objective != "binary:logistic" or outputs != 1:
                raise ValueError(
                    f"{name} is a model of {objective} with {outputs} output(s), not the "
                    "binary:logistic model of one output a run trains"
                )
            if booster.num_features() != len(self.features):
                raise ValueError(
                    f"{name} takes {booster.num_features()} features, its component "
                    f"{len(self.features)}: the folder mixes files of different models"
                )
            boosters.append(booster)
        self._boosters = boosters

    def boosters(self) -> list[Any]:
        """The fold models, loaded once."""
        if self._boosters is None:
            import xgboost as xgb

            self._boosters = [xgb.Booster(model_file=bytearray(m)) for m in self.models]
        return self._boosters

    def leading_feature(self) -> str:
        """The feature the first fold model gains most from (XGBoost ``gain``)."""
        from pulsnar_dask.core.scoring import gain_vector

        gain = gain_vector(self.boosters()[0], len(self.features))
        return self.features[int(np.argmax(gain))]

    def probability(self, X: np.ndarray) -> np.ndarray:
        """Mean of the fold models' probabilities (float64) for float32 rows of
        ``features``."""
        if len(X) == 0:
            return np.empty(0)
        total = np.zeros(len(X))
        for booster in self.boosters():
            total += booster.inplace_predict(X)
        return total / len(self.models)


@dataclass
class PUModel:
    """A fitted PU model (see the module's description).

    Attributes
    ----------
    schema : FeatureSchema
        The features and categories the models were fitted with.
    components : list of Component
        The subproblems' models, or the retrain's (``kind == "retrain"``).
    calibration : CalibrationMap or None
        Map of the combined probability (None when every component has its own).
    kind : {"subproblems", "retrain"}
    alpha : float
    alpha_interval : tuple of float or None
    method : str
        ``pulscar`` or ``pulsnar``.
    settings : dict
        The run's settings.
    version : str
        The package version that fitted it.
    """

    schema: FeatureSchema
    components: list[Component]
    calibration: CalibrationMap | None
    kind: str
    alpha: float
    alpha_interval: tuple[float, float] | None
    method: str
    settings: dict[str, Any]
    version: str

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score encoded rows.

        Parameters
        ----------
        X : ndarray of shape (n, len(schema.names))
            Features in schema order, categories as codes (:meth:`FeatureSchema.encode`).

        Returns
        -------
        (probability, calibrated)
            float64 arrays of shape ``(n,)``: the models' combined probability of being
            positive, and the calibrated probability.
        """
        X = np.asarray(X, dtype=np.float32)
        complement = np.ones(len(X))
        calibrated_complement = np.ones(len(X))
        for component in self.components:
            same = component.features == self.schema.names
            p = component.probability(
                X if same else X[:, self.schema.positions(component.features)]
            )
            complement *= 1.0 - p
            if component.calibration is not None:
                calibrated_complement *= 1.0 - component.calibration(p)
        probability = 1.0 - complement
        if self.calibration is not None:
            return probability, self.calibration(probability)
        return probability, 1.0 - calibrated_complement

    def predict_frame(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict` on a frame holding the schema's columns (categories as
        values; unseen ones are missing)."""
        return self.predict(self.schema.encode(frame))

    def to_files(self) -> dict[str, bytes]:
        """The model as files: ``model.json`` and ``component{c}-fold{k}.json``."""
        files: dict[str, bytes] = {}
        components = []
        for c, component in enumerate(self.components):
            names = []
            for k, model in enumerate(component.models):
                names.append(f"component{c}-fold{k}.json")
                files[names[-1]] = bytes(model)
            components.append(
                {
                    "features": component.features,
                    "models": names,
                    "calibration": component.calibration and component.calibration.to_dict(),
                }
            )
        description = {
            "format": FORMAT,
            "version": self.version,
            "kind": self.kind,
            "method": self.method,
            "alpha": self.alpha,
            "alpha_interval": list(self.alpha_interval) if self.alpha_interval else None,
            "schema": self.schema.to_dict(),
            "components": components,
            "calibration": self.calibration and self.calibration.to_dict(),
            "settings": self.settings,
        }
        files[MODEL_FILE] = json.dumps(description, indent=1, default=_json_default).encode()
        return files

    @classmethod
    def from_files(cls, read: Callable[[str], bytes]) -> PUModel:
        """Load a model from its files; ``read(name)`` returns a file's bytes.

        Raises
        ------
        ValueError
            If ``model.json`` is not a model of a format this version reads, or a fold
            model is not one XGBoost can read for its features.
        """
        try:
            data = json.loads(read(MODEL_FILE))
            fmt = data["format"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{MODEL_FILE} is not a pulsnar-dask model: {exc}") from None
        if fmt != FORMAT:
            raise ValueError(f"model format {fmt} is not one this version reads ({FORMAT})")
        _check_description(data)
        components = [
            Component(c["features"], [read(name) for name in c["models"]], _map(c["calibration"]))
            for c in data["components"]
        ]
        for spec, component in zip(data["components"], components, strict=True):
            component.load(spec["models"])
        interval = data["alpha_interval"]
        return cls(
            FeatureSchema.from_dict(data["schema"]),
            components,
            _map(data["calibration"]),
            data["kind"],
            data["alpha"],
            tuple(interval) if interval else None,
            data["method"],
            data["settings"],
            data["version"],
        )


_DESCRIPTION_KEYS = (
    "schema", "components", "calibration", "kind", "alpha", "alpha_interval", "method",
    "settings", "version",
)  # fmt: skip


def _check_description(data: Any) -> None:
    """Refuse a ``model.json`` that :meth:`PUModel.to_files` cannot have written: a key
    missing, a kind or method it does not know, no component, a component without fold
    models or with features the schema lacks, a calibration map it cannot apply.

    Raises
    ------
    ValueError
        Naming what is wrong.
    """
    missing = [k for k in _DESCRIPTION_KEYS if k not in data]
    if missing:
        raise ValueError(f"{MODEL_FILE} lacks {', '.join(missing)}")
    if data["kind"] not in ("subproblems", "retrain") or data["method"] not in (
        "pulscar", "pulsnar"
    ):  # fmt: skip
        raise ValueError(
            f"{MODEL_FILE}: unknown kind {data['kind']!r} or method {data['method']!r}"
        )
    try:
        features = data["schema"]["features"]
        names = [f["name"] for f in features]
        types = {f["type"] for f in features}
    except (KeyError, TypeError):
        raise ValueError(f"{MODEL_FILE}: its schema lists no features by name and type") from None
    if not names or len(set(names)) != len(names) or not types <= {"numeric", "categorical"}:
        raise ValueError(
            f"{MODEL_FILE}: its schema's features are none, named twice or of an unknown type"
        )
    components = data["components"]
    if not isinstance(components, list) or not components:
        raise ValueError(f"{MODEL_FILE} lists no components")
    for c, component in enumerate(components):
        try:
            own, models = component["features"], component["models"]
            _check_map(component["calibration"])
        except (KeyError, TypeError):
            raise ValueError(
                f"{MODEL_FILE}: component {c} is not a component's description"
            ) from None
        if not isinstance(models, list) or not models or not isinstance(own, list) or not own:
            raise ValueError(f"{MODEL_FILE}: component {c} has no fold models or no features")
        unknown = sorted(set(map(str, own)) - set(names))
        if unknown:
            raise ValueError(
                f"{MODEL_FILE}: component {c} takes features its schema lacks: {', '.join(unknown)}"
            )
    _check_map(data["calibration"])


def _check_map(data: Any) -> None:
    """Refuse a calibration map's description this version cannot apply: an unknown
    method, knots missing or not numbers, numbers not finite (``None``: no map)."""
    if data is None:
        return
    try:
        method = data["method"]
        if method == "isotonic":
            x, y = np.asarray(data["x"], dtype=float), np.asarray(data["y"], dtype=float)
            fine = (
                x.ndim == 1 and x.size > 0 and x.shape == y.shape and bool(np.all(np.diff(x) >= 0))
            )
        else:
            x = y = np.asarray([data["coef"], data["intercept"]], dtype=float)
            fine = method == "sigmoid"
        fine = fine and bool(np.isfinite(x).all() and np.isfinite(y).all())
    except (KeyError, TypeError, ValueError):
        fine = False
    if not fine:
        raise ValueError(f"{MODEL_FILE}: not a calibration map this version reads: {data!r:.80}")


def package_version() -> str:
    """The installed pulsnar-dask's version (``unknown`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pulsnar-dask")
    except PackageNotFoundError:
        return "unknown"


def _map(data: dict[str, Any] | None) -> CalibrationMap | None:
    return CalibrationMap.from_dict(data) if data else None


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def subproblem_components(
    subproblems: Sequence[SubproblemResult], calibrations: Sequence[CalibrationMap] | None
) -> list[Component]:
    """One :class:`Component` per subproblem, from its features, fold models and (for
    ``calibration_data="U"``) its own map."""
    maps = calibrations or [None] * len(subproblems)
    return [
        Component(list(r.features), list(r.models), c)
        for r, c in zip(subproblems, maps, strict=True)
    ]
