"""PUConfig: every setting of a PU run, its default and its allowed values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pulsnar_dask.core.alpha import (
    ALPHA_ESTIMATORS,
    DEFAULT_TAIL_FRACTION,
)
from pulsnar_dask.core.binning import BIN_METHODS
from pulsnar_dask.core.calibration import (
    CALIBRATION_DATA,
    CALIBRATION_METHODS,
)
from pulsnar_dask.core.density import (
    BANDWIDTH_BOUNDS,
    BANDWIDTH_ERRORS,
    BANDWIDTH_SEARCHES,
    KERNEL_NORMALIZATIONS,
)
from pulsnar_dask.core.mixture import (
    CLUSTER_SELECTIONS,
)
from pulsnar_dask.core.scoring import (
    DEFAULT_N_ROUNDS,
)


@dataclass(frozen=True)
class PUConfig:
    """Settings of a PULSCAR/PULSNAR run.

    Attributes
    ----------
    n_folds : int
        Cross-validation folds of the classifier.
    bin_method : str
        Bin-count rule of the densities.
    alpha_region : {"upper", "all"}
        Grid points the alpha objective's minimum is taken over.
    alpha_estimator : {"kernel", "tail", "bbe"}
        How a subproblem's alpha is read from its probabilities (see
        :mod:`pulsnar_dask.core.alpha`): the kernel objective (default, for PULSCAR and for
        PULSNAR's clusters), the smallest tail ratio, or Best Bin Estimation; measured on
        every benchmark family (benchmarks/results/README.md, item 14).
    tail_fraction : float
        Share of the positives the tail estimator keeps above its thresholds.
    bandwidth_search : {"local", "global"}
    bandwidth_error : {"mse", "js"}
    bandwidth_bounds : (float, float)
        Interval of the bandwidth search.
    kernel_normalization : {"point", "grid"}
        Beta-kernel normalisation (see :class:`pulsnar_dask.core.density.BetaKernel`).
    exact_density : bool
        Use the exact (oracle) kernel density instead of the binned one.
    xgb_params : mapping
        XGBoost parameter overrides.
    n_rounds : int
        Boosting rounds.
    max_unlabeled_ratio : float or None
        Train each fold's model on every positive and at most this many unlabeled rows
        per positive (all rows are still scored); ``None`` trains on all rows. The
        default 5 trains imbalanced subproblems several times faster and was as accurate
        or more in every benchmark (benchmarks/results/README.md).
    n_threads : int or None
        XGBoost threads per model.
    max_clusters : int
        Largest mixture size tried for the cluster count.
    n_clusters : int or None
        Fixed number of clusters (skips the BIC curve).
    cluster_selection : {"min", "knee"}
        Lowest BIC, or the reference's knee procedure.
    covariance_type : str
        First covariance type of the mixtures.
    max_cluster_features : int or None
        Cap on the number of top-gain features the positives are clustered on (100:
        subtypes that differ only jointly over many features are found; decision record
        items 17-19).
    max_cluster_rows : int or None
        Cap on the positives the mixtures are fitted on (a seeded sample); all positives
        are then assigned to the chosen mixture's components.
    min_cluster_fraction : float
        Components holding fewer than this share of the positives (or fewer than
        ``MIN_CLUSTER_SIZE``) are merged into their most probable neighbours.
    calibration_method : {"isotonic", "sigmoid"}
    calibration_data : {"PU", "U"}
    interval_resamples : int
        Bootstrap resamples of the collected probabilities behind the default 95%
        interval of alpha (:mod:`pulsnar_dask.core.interval`); 0: no interval.
    """

    n_folds: int = 5
    bin_method: str = "rice"
    alpha_region: str = "upper"
    alpha_estimator: str = "kernel"
    tail_fraction: float = DEFAULT_TAIL_FRACTION
    bandwidth_search: str = "local"
    bandwidth_error: str = "mse"
    bandwidth_bounds: tuple[float, float] = BANDWIDTH_BOUNDS
    kernel_normalization: str = "point"
    exact_density: bool = False
    xgb_params: Mapping[str, Any] = field(default_factory=dict)
    n_rounds: int = DEFAULT_N_ROUNDS
    max_unlabeled_ratio: float | None = 5.0
    n_threads: int | None = None
    max_clusters: int = 10
    n_clusters: int | None = None
    cluster_selection: str = "min"
    covariance_type: str = "full"
    max_cluster_features: int | None = 100
    max_cluster_rows: int | None = 5000
    min_cluster_fraction: float = 0.02
    calibration_method: str = "isotonic"
    calibration_data: str = "PU"
    interval_resamples: int = 30

    def __post_init__(self) -> None:
        choices = {
            "bin_method": BIN_METHODS,
            "alpha_region": ("upper", "all"),
            "alpha_estimator": ALPHA_ESTIMATORS,
            "bandwidth_search": BANDWIDTH_SEARCHES,
            "bandwidth_error": BANDWIDTH_ERRORS,
            "kernel_normalization": KERNEL_NORMALIZATIONS,
            "cluster_selection": CLUSTER_SELECTIONS,
            "covariance_type": ("full", "diag", "spherical"),
            "calibration_method": CALIBRATION_METHODS,
            "calibration_data": CALIBRATION_DATA,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"invalid {name} {getattr(self, name)!r}; choose one of {', '.join(allowed)}"
                )
        low, high = self.bandwidth_bounds
        if not 0 < low < high:
            raise ValueError(f"bandwidth bounds must satisfy 0 < low < high, got {low}, {high}")
        if not 0 < self.tail_fraction < 0.5:
            raise ValueError(f"tail_fraction must be in (0, 0.5), got {self.tail_fraction}")
        if self.n_folds < 2:
            raise ValueError(f"n_folds must be at least 2, got {self.n_folds}")
        if self.max_clusters < 1:
            raise ValueError(f"max_clusters must be at least 1, got {self.max_clusters}")
        if self.n_clusters is not None and self.n_clusters < 1:
            raise ValueError(f"n_clusters must be at least 1, got {self.n_clusters}")
        if not 0 <= self.min_cluster_fraction < 1:
            raise ValueError(
                f"min_cluster_fraction must be in [0, 1), got {self.min_cluster_fraction}"
            )
        if self.interval_resamples < 0 or self.interval_resamples == 1:
            raise ValueError(
                f"interval_resamples must be 0 (no interval) or at least 2, got "
                f"{self.interval_resamples}"
            )

    def with_(self, **changes: Any) -> PUConfig:
        """Return a copy with some settings changed."""
        return replace(self, **changes)


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
