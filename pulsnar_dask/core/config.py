"""Every setting of a PU run, declared once: its default, its allowed values and its help.

:class:`PUConfig` is the one declaration. The command line builds its options from the
fields that name a ``flag`` (:func:`pulsnar_dask.cli.build_parser`), the estimators
document their parameters from the same help (:func:`parameter_docs`), and a test checks
their defaults against it. This module imports nothing heavy, so the command line can
read it at start-up.
"""

from __future__ import annotations

import json
import math
import numbers
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import Any

import numpy as np

from pulsnar_dask.core.choices import check_choice

BIN_METHODS = ("square_root", "sturges", "rice", "scott", "fd")
ALPHA_REGIONS = ("upper", "all", "positives")
ALPHA_ESTIMATORS = ("kernel", "tail", "bbe", "valley")
BANDWIDTH_SEARCHES = ("local", "global")
BANDWIDTH_ERRORS = ("mse", "js")
BANDWIDTH_BOUNDS = (0.05, 0.5)
KERNEL_NORMALIZATIONS = ("grid", "point")
CLUSTER_SELECTIONS = ("knee", "min")
COVARIANCE_TYPES = ("auto", "full", "diag", "spherical")
# what covariance_type="auto" fits; the lower BIC decides
AUTO_COVARIANCE_TYPES = ("full", "diag")
CALIBRATION_METHODS = ("isotonic", "sigmoid")
CALIBRATION_DATA = ("PU", "U")
DEFAULT_TAIL_FRACTION = 0.1
DEFAULT_N_ROUNDS = 100
# Seeds run from 0 to this (numpy's and scikit-learn's range of random states).
MAX_SEED = 2**32 - 1
MAX_RESAMPLES = 100_000  # the interval's bootstrap: 30 by default; more only costs time
MAX_ROUNDS = 100_000  # XGBoost's boosting rounds a fold: 100 by default


def is_whole(value: Any) -> bool:
    """Whether ``value`` is a whole number (Python's or NumPy's integers), not a bool."""
    return _is_number(value, numbers.Integral)


def check_seed(seed: Any, iterations: int = 1) -> None:
    """Refuse a seed that is not a whole number from 0 to :data:`MAX_SEED` (with
    ``iterations`` repeats, seeds ``seed .. seed + iterations - 1`` must all be).

    Raises
    ------
    ValueError
    """
    if iterations > MAX_SEED + 1:
        raise ValueError(f"iterations must be at most {MAX_SEED + 1}, got {iterations}")
    top = MAX_SEED - max(iterations, 1) + 1
    if not is_whole(seed) or not 0 <= seed <= top:
        raise ValueError(f"the seed must be a whole number from 0 to {top}, got {seed!r}")


def _optional(parse: Callable[[str], Any]):
    """A command-line parser that reads ``none`` as ``None``."""

    def read(text: str) -> Any:
        return None if text.strip().lower() == "none" else parse(text)

    read.__name__ = parse.__name__  # argparse names the type in its error message
    return read


def _json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


_json_object.__name__ = "JSON object"  # argparse: "invalid JSON object value: ..."


def check_learned_params(xgb_params: Mapping[str, Any]) -> None:
    """Refuse XGBoost parameters that would make a model other than the one the method
    needs: a tree model of one probability a row, labeled against unlabeled, weighted
    and seeded by the method itself. Every other parameter passes through to XGBoost.

    Raises
    ------
    ValueError
        Naming the parameter.
    """
    objective = xgb_params.get("objective", "binary:logistic")
    if objective != "binary:logistic":
        raise ValueError(
            f"xgb_params: objective {objective!r} would not learn the probability of being "
            "labeled that every reading of alpha takes; leave it binary:logistic"
        )
    for name in ("num_class", "num_target"):
        if name in xgb_params:
            raise ValueError(
                f"xgb_params: {name} makes several outputs a row; the method needs one"
            )
    booster = xgb_params.get("booster", "gbtree")
    if booster not in ("gbtree", "dart"):
        raise ValueError(
            f"xgb_params: booster {booster!r} grows no trees, which the clustering's gain "
            "importance and categorical splits need; use gbtree or dart"
        )
    set_by_method = {
        "scale_pos_weight": "the method weights each model's positives by its own rows",
        "seed": "XGBoost's seed follows --seed (random_state)",
        "random_state": "XGBoost's seed follows --seed (random_state)",  # seed's alias
    }
    for name, reason in set_by_method.items():
        if name in xgb_params:
            raise ValueError(f"xgb_params: {name} is not yours to set: {reason}")


def _ratio_or_none(text: str) -> float | None:
    """A ratio; ``none`` or zero (no cap) read as ``None``."""
    if text.strip().lower() == "none":
        return None
    value = float(text)
    return None if value == 0 else value


_ratio_or_none.__name__ = "float"


def option(
    default: Any = MISSING,
    help: str = "",
    *,
    type: str,
    choices: tuple | None = None,
    flag: str | None = None,
    parse: Callable[[str], Any] | None = None,
    nargs: int | None = None,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A :class:`PUConfig` field with its documentation.

    Parameters
    ----------
    default
        The default value (or ``factory`` for a mutable one).
    help : str
        One or two sentences for the docstrings and the command line's ``--help``.
    type : str
        The type as the docstrings show it.
    choices : tuple or None
        The allowed values, checked by :class:`PUConfig`.
    flag : str or None
        The command-line option (``--folds``); ``None``: not on the command line.
    parse : callable or None
        Reads the option's text (default: the type of ``default``).
    nargs : int or None
        Values the option takes (``--bandwidth-bounds 0.05 0.5``).
    """
    if flag and parse is None and (default is None or isinstance(default, bool)):
        raise TypeError(f"{flag}: give parse= (the default's type cannot read the text)")
    metadata = {
        "help": help,
        "type": type,
        "choices": choices,
        "flag": flag,
        "parse": parse or default.__class__,
        "nargs": nargs,
        "metavar": ("LOW", "HIGH") if nargs == 2 else None,
    }
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class PUConfig:
    # The docstring is written from the fields' help below (see the end of this module).
    n_folds: int = option(
        5, "Cross-validation folds of each classifier.", type="int", flag="--folds"
    )
    bin_method: str = option(
        "rice",
        "Bin-count rule of the probability histograms the densities are fitted to.",
        type="str",
        choices=BIN_METHODS,
        flag="--bin-method",
    )
    alpha_region: str = option(
        "upper",
        "Grid points the alpha objective's minimum is taken over: z > 0.5 (the "
        "reference's), all, or z > 0.5 at or above the labeled positives' median probability.",
        type="str",
        choices=ALPHA_REGIONS,
        flag="--alpha-region",
    )
    alpha_estimator: str = option(
        "kernel",
        "How each subproblem's alpha is read from its probabilities: the beta-kernel "
        "objective, the smallest tail ratio, Best Bin Estimation (cross-fitted), or the "
        "tail ratio at the dip of the unlabeled rows' scores below the labeled positives "
        "(the valley reader, for data with such a dip).",
        type="str",
        choices=ALPHA_ESTIMATORS,
        flag="--alpha-estimator",
    )
    tail_fraction: float = option(
        DEFAULT_TAIL_FRACTION,
        "Share of the positives the tail reader keeps above its thresholds, in (0, 0.5).",
        type="float",
        flag="--tail-fraction",
    )
    bandwidth_search: str = option(
        "local",
        "Bandwidth search of the beta kernels.",
        type="str",
        choices=BANDWIDTH_SEARCHES,
        flag="--bandwidth-search",
    )
    bandwidth_error: str = option(
        "mse",
        "Error the bandwidth search minimises against the histogram.",
        type="str",
        choices=BANDWIDTH_ERRORS,
        flag="--bandwidth-error",
    )
    bandwidth_bounds: tuple[float, float] = option(
        BANDWIDTH_BOUNDS,
        "Interval of the bandwidth search (the reference's is 0.01 0.5).",
        type="(float, float)",
        flag="--bandwidth-bounds",
        parse=float,
        nargs=2,
    )
    kernel_normalization: str = option(
        "point",
        "Beta-kernel normalisation: each probability's kernel sums to 1 over the grid, "
        "or the reference's single normalisation over the grid.",
        type="str",
        choices=KERNEL_NORMALIZATIONS,
        flag="--kernel-normalization",
    )
    exact_density: bool = option(
        False,
        "Use the exact (oracle) kernel density instead of the binned one.",
        type="bool",
    )
    xgb_params: Mapping[str, Any] = option(
        help="XGBoost parameter overrides (defaults: max_depth=4, eta=0.2, hist trees, "
        "64 bins); on the command line a JSON object. monotone_constraints and "
        "interaction_constraints are given for the table's features, by position or by name "
        '({"age": 1}), and rewritten for each model\'s own features. The method keeps '
        "its own objective (binary:logistic), one output, a tree booster (gbtree or dart), "
        "scale_pos_weight and seed: settings that change them are refused.",
        type="mapping",
        factory=dict,
        flag="--xgb-params",
        parse=_json_object,
    )
    n_rounds: int = option(
        DEFAULT_N_ROUNDS, "Boosting rounds of each classifier.", type="int", flag="--n-rounds"
    )
    max_unlabeled_ratio: float | None = option(
        5.0,
        "Train each fold's model on every positive and at most this many unlabeled rows "
        "per positive (every row is still scored); none (or 0 on the command line) trains "
        "on all rows. Several times faster on imbalanced data, and as accurate or more in "
        "every benchmark.",
        type="float or None",
        flag="--max-unlabeled-ratio",
        parse=_ratio_or_none,
    )
    max_train_rows: int | None = option(
        200_000,
        "Train each fold's model on at most this many of a scoring's rows, positives and "
        "unlabeled thinned in proportion after the unlabeled cap (every row is still "
        "scored); none: no cap. Binds past a few hundred thousand rows (the retrain on "
        "recovered labels, large subproblems), where more rows barely change the model.",
        type="int or None",
        flag="--max-train-rows",
        parse=_optional(int),
    )
    max_reading_rows: int | None = option(
        200_000,
        "Under method auto, the clusters' reading beside PULSCAR's (which the interval also "
        "spans) scores at most about this many unlabeled rows, a seeded sample the clusters "
        "share, and the same share of each cluster's labeled positives (about 1,000 at least); "
        "PULSCAR's scoring, and every row's probability, still covers every row; none: "
        "every row. Binds only on large tables, where each cluster would otherwise score "
        "and train on every row again; a smaller sample reads the clusters more noisily, "
        "which widens the interval and, where auto reads their alpha, moves it.",
        type="int or None",
        flag="--max-reading-rows",
        parse=_optional(int),
    )
    n_threads: int | None = option(
        None,
        "XGBoost threads per model; none: one per task on a Dask cluster (on the task "
        "engine the importance model, which its job trains alone, takes every thread of "
        "its host while no other job's tasks run, and so does the last round of folds of "
        "a scoring that runs alone), XGBoost's default in process.",
        type="int or None",
    )
    max_clusters: int = option(
        25,
        "Largest mixture of the positives tried for the cluster count (as the paper); "
        "with the lowest-BIC rule, sizes past each round of 10 are fitted only while the "
        "lowest BIC lies at the end of the sizes fitted so far.",
        type="int",
        flag="--max-clusters",
    )
    n_clusters: int | None = option(
        None,
        "Fixed number of clusters of positives (skips the BIC curve); none: chosen.",
        type="int or None",
        flag="--n-clusters",
        parse=_optional(int),
    )
    cluster_selection: str = option(
        "min",
        "Cluster count from the lowest BIC, or from the reference's knee procedure.",
        type="str",
        choices=CLUSTER_SELECTIONS,
        flag="--cluster-selection",
    )
    claim_overlap: float = option(
        0.3,
        "PULSNAR clusters whose claimed unlabeled rows (each cluster's top alpha_c * n_unlabeled) "
        "overlap by more than this share of the smaller claim count as one subtype: "
        "their claims are united, not summed. 1: always summed (the paper); 0: united "
        "wherever they share a row.",
        type="float",
        flag="--claim-overlap",
    )
    covariance_type: str = option(
        "auto",
        "Covariance of the mixtures' components: auto fits full and diagonal covariances "
        "and keeps the type with the lower BIC; a fit that fails falls back to simpler ones.",
        type="str",
        choices=COVARIANCE_TYPES,
        flag="--covariance-type",
    )
    max_cluster_features: int | None = option(
        100,
        "Cluster the positives on at most this many top-gain features (100 finds "
        "subtypes that differ only jointly over many features); none: all.",
        type="int or None",
        flag="--max-cluster-features",
        parse=_optional(int),
    )
    max_cluster_rows: int | None = option(
        5000,
        "Fit the mixtures on at most this many positives (a seeded sample); every "
        "positive is then assigned to a cluster; none: all.",
        type="int or None",
        flag="--max-cluster-rows",
        parse=_optional(int),
    )
    min_cluster_fraction: float = option(
        0.02,
        "Merge mixture components holding less than this share of the positives into "
        "their most probable neighbours (components under 10 positives always are).",
        type="float",
        flag="--min-cluster-fraction",
    )
    calibration_method: str = option(
        "isotonic",
        "Regression that calibrates the probabilities with the estimated alpha (Algorithm 3).",
        type="str",
        choices=CALIBRATION_METHODS,
        flag="--calibration-method",
    )
    calibration_data: str = option(
        "PU",
        "Rows the calibration is fitted on: positives and unlabeled, or unlabeled only.",
        type="str",
        choices=CALIBRATION_DATA,
        flag="--calibration-data",
    )
    interval_resamples: int = option(
        30,
        "Bootstrap resamples of the probabilities behind the 95% interval of alpha; 0: "
        "no interval (and under method auto, the clusters are found but not scored).",
        type="int",
        flag="--interval-resamples",
    )

    def __post_init__(self) -> None:
        """Check every value; raise ValueError naming the setting."""
        for f in fields(self):
            value = getattr(self, f.name)
            if not _has_type(value, f.metadata["type"]):
                raise ValueError(f"{f.name} must be {f.metadata['type']}, got {value!r}")
            if f.metadata["choices"]:
                check_choice(f.name, value, f.metadata["choices"])
        object.__setattr__(self, "bandwidth_bounds", tuple(self.bandwidth_bounds))
        check_learned_params(self.xgb_params)
        low, high = self.bandwidth_bounds
        if not 0 < low < high:
            raise ValueError(f"bandwidth bounds must satisfy 0 < low < high, got {low}, {high}")
        if not 0 < self.tail_fraction < 0.5:
            raise ValueError(f"tail_fraction must be in (0, 0.5), got {self.tail_fraction}")
        at_least = {"n_folds": 2, "n_rounds": 1, "max_clusters": 1}
        at_least_or_none = {
            "n_clusters": 1,
            "max_cluster_features": 1,
            "max_cluster_rows": 2,
            "max_train_rows": 100,
            "max_reading_rows": 100,
        }
        for name, low in [*at_least.items(), *at_least_or_none.items()]:
            value = getattr(self, name)
            if (value is not None or name in at_least) and not value >= low:
                raise ValueError(f"{name} must be at least {low}, got {value}")
        if self.max_unlabeled_ratio is not None and not 0 < self.max_unlabeled_ratio < math.inf:
            raise ValueError(
                "max_unlabeled_ratio must be a finite positive number (None or 0: no cap), got "
                f"{self.max_unlabeled_ratio}"
            )
        if not self.n_rounds <= MAX_ROUNDS:
            raise ValueError(f"n_rounds must be at most {MAX_ROUNDS:,}, got {self.n_rounds:,}")
        if not 0 <= self.min_cluster_fraction < 1:
            raise ValueError(
                f"min_cluster_fraction must be in [0, 1), got {self.min_cluster_fraction}"
            )
        if not 0 <= self.claim_overlap <= 1:
            raise ValueError(f"claim_overlap must be in [0, 1], got {self.claim_overlap}")
        if not (self.interval_resamples == 0 or 2 <= self.interval_resamples <= MAX_RESAMPLES):
            raise ValueError(
                f"interval_resamples must be 0 (no interval) or from 2 to {MAX_RESAMPLES}, got "
                f"{self.interval_resamples}"
            )

    def with_(self, **changes: Any) -> PUConfig:
        """Return a copy with some settings changed."""
        return replace(self, **changes)


def _is_number(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "int": is_whole,
    "float": lambda v: _is_number(v, numbers.Real),
    "bool": lambda v: isinstance(v, bool | np.bool_),
    "str": lambda v: isinstance(v, str),
    "mapping": lambda v: isinstance(v, Mapping),
    "(float, float)": lambda v: (
        isinstance(v, tuple | list | np.ndarray)
        and len(v) == 2
        and all(_is_number(x, numbers.Real) for x in v)
    ),
}


def _has_type(value: Any, declared: str) -> bool:
    """Whether ``value`` is of a setting's declared type (``"int or None"`` and the like)."""
    kind, _, or_none = declared.partition(" or ")
    return (or_none == "None" and value is None) or _TYPE_CHECKS[kind](value)


def default_of(f: Field) -> Any:
    """A field's default value."""
    return f.default_factory() if f.default is MISSING else f.default


def parameter_docs(names: list[str] | None = None, rename: Mapping[str, str] | None = None) -> str:
    """numpy-style entries for some settings (``None``: all), from their declarations.

    ``rename`` maps a setting to the name it has where it is documented (an estimator's
    ``n_jobs`` for ``n_threads``).
    """
    rename = rename or {}
    by_name = {f.name: f for f in fields(PUConfig)}
    out = []
    for name in names if names is not None else list(by_name):
        f = by_name[name]
        kind = f.metadata["type"]
        if f.metadata["choices"]:
            kind = "{" + ", ".join(repr(c) for c in f.metadata["choices"]) + "}"
        help_text = textwrap.fill(
            f.metadata["help"], width=88, initial_indent=" " * 8, subsequent_indent=" " * 8
        )
        out.append(f"    {rename.get(name, name)} : {kind}, default {default_of(f)!r}\n{help_text}")
    return "\n".join(out) + "\n"


def config_dict(config: PUConfig) -> dict[str, Any]:
    """The settings as plain JSON values (tuples as lists, the XGBoost overrides as a dict)."""
    out = {}
    for name in config.__dataclass_fields__:
        value = getattr(config, name)
        out[name] = (
            list(value)
            if isinstance(value, tuple)
            else (dict(value) if isinstance(value, Mapping) else value)
        )
    return out


PUConfig.__doc__ = (
    "Settings of a PULSCAR/PULSNAR run (each checked when the config is made).\n\n"
    "    Attributes\n    ----------\n" + parameter_docs()
)
