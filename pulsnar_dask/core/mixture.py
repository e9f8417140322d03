"""Choosing the number of positive subtypes and clustering the positives (PULSNAR).

The positives' important features, each multiplied by its XGBoost gain, are clustered
with a Gaussian mixture. The number of clusters comes from the BIC curve over
``1..max_clusters`` components, by the reference's knee procedure (Zhao, Hautamaki and
Franti 2008) or simply by the minimum BIC.

Real tables (repeated values, constant columns, tiny subtypes) can make a full-covariance
fit fail with an ill-defined covariance; every fit here is guarded: constant columns are
dropped, the covariance is regularised, and a failed fit falls back to a simpler
covariance type, with a warning in the log.

scikit-learn (and scipy.signal) are imported where they are used, not when the
distributed job's client starts.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from threadpoolctl import threadpool_limits

from pulsnar_dask.core.choices import check_choice
from pulsnar_dask.core.config import CLUSTER_SELECTIONS

if TYPE_CHECKING:
    from sklearn.mixture import GaussianMixture

logger = logging.getLogger(__name__)

COVARIANCE_FALLBACK = ("full", "diag", "spherical")
MIN_CLUSTER_SIZE = 10
REG_COVAR = 1e-6


def knee_point(bic: np.ndarray) -> int:
    """Return the number of clusters at the knee of a BIC curve, as the reference does.

    If the curve has interior local minima, ``c = 1 + min(argmin BIC, first local minimum,
    argmax(diff(diff(BIC))) + 3)``. Otherwise the second differences
    ``D_m = BIC[m-1] + BIC[m+1] - 2 BIC[m]`` (with ``D_0 = BIC[1] - BIC[0]``) are
    computed, their local minima taken as candidate knees in decreasing order of ``D``,
    and the candidates walked comparing the angle
    ``atan(1/|BIC[c] - BIC[c-1]|) + atan(1/|BIC[c+1] - BIC[c]|)``; the first candidate
    whose angle exceeds the first candidate's wins, else the first candidate.

    Parameters
    ----------
    bic : ndarray of shape (M,)
        BIC for 1..M components.

    Returns
    -------
    int
        The number of clusters, in ``1..M``.
    """
    from scipy.signal import argrelmin  # here: scipy.signal is slow to import at start-up

    vals = np.asarray(bic, dtype=float)
    if vals.size < 3:
        return int(np.argmin(vals)) + 1
    minima = argrelmin(vals)[0]
    if minima.size:
        curvature = int(np.argmax(np.diff(np.diff(vals)))) + 3
        return int(min(int(np.argmin(vals)), int(minima[0]), curvature)) + 1
    second = np.empty(vals.size - 1)
    second[0] = vals[1] - vals[0]
    second[1:] = vals[:-2] + vals[2:] - 2 * vals[1:-1]
    knees = argrelmin(second)[0] + 1
    if knees.size == 0:
        # No knee at all (a straight or strictly convex curve): the sharpest bend.
        return int(np.argmax(np.diff(np.diff(vals)))) + 2
    knees = knees[np.argsort(-second[knees - 1], kind="stable")]
    with np.errstate(divide="ignore"):

        def angle(c: int) -> float:
            return float(
                np.arctan(1 / abs(vals[c] - vals[c - 1]))
                + np.arctan(1 / abs(vals[c + 1] - vals[c]))
            )

        first = angle(int(knees[0]))
        for c in knees[1:]:
            if angle(int(c)) > first:
                return int(c)
    return int(knees[0])


def select_n_clusters(bic: np.ndarray, method: str = "knee") -> int:
    """Return the number of clusters from a BIC curve.

    Parameters
    ----------
    bic : ndarray of shape (M,)
        BIC for 1..M components.
    method : {"knee", "min"}
        The reference's knee procedure, or the number of components with the lowest BIC.

    Returns
    -------
    int
        Number of clusters in ``1..M``.
    """
    check_choice("cluster selection", method, CLUSTER_SELECTIONS)
    return knee_point(bic) if method == "knee" else int(np.argmin(bic)) + 1


def important_features(gain: np.ndarray, max_features: int | None = None) -> np.ndarray:
    """Return the indices of features with non-zero gain, by decreasing gain.

    Parameters
    ----------
    gain : ndarray of shape (n_features,)
        XGBoost ``gain`` importance per feature (0 for unused features).
    max_features : int or None
        Keep at most this many (the top ones by gain).

    Returns
    -------
    ndarray of int
        Feature indices.
    """
    gain = np.asarray(gain, dtype=float)
    order = np.argsort(-gain, kind="stable")
    order = order[gain[order] > 0]
    return order if max_features is None else order[:max_features]


@dataclass(frozen=True)
class Scaling:
    """How the positives' values become the clustering matrix: each column times its
    gain, missing values imputed with the scaled column's median, constant columns
    dropped (at least one column is kept).

    Attributes
    ----------
    gain : ndarray of shape (n_selected,)
        Gain of each selected feature.
    medians : ndarray of shape (n_selected,)
        Median of each scaled column over the positives (0 where every value is missing;
        only used where a value is).
    varying : ndarray of bool of shape (n_selected,)
        Columns whose values differ over the positives.
    """

    gain: np.ndarray
    medians: np.ndarray
    varying: np.ndarray

    def apply(self, X_features: np.ndarray) -> np.ndarray:
        """The clustering matrix of positives' values ``X_features`` (n, n_selected):
        float64 of shape (n, columns kept)."""
        Z = np.array(X_features, dtype=float) * np.asarray(self.gain, dtype=float)[None, :]
        rows, cols = np.nonzero(np.isnan(Z))
        Z[rows, cols] = self.medians[cols]
        return Z[:, self.varying] if self.varying.any() else Z[:, :1]


def column_range(X_features: np.ndarray, gain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each scaled column's (lowest, highest) value over the rows, missing values left out
    (``inf``, ``-inf`` where every one is): ranges that combine over the rows' partitions
    by ``fmin`` and ``fmax``."""
    Z = np.asarray(X_features, dtype=float) * np.asarray(gain, dtype=float)[None, :]
    return np.fmin.reduce(Z, axis=0, initial=np.inf), np.fmax.reduce(Z, axis=0, initial=-np.inf)


def scaling(gain: np.ndarray, low: np.ndarray, high: np.ndarray, medians: np.ndarray) -> Scaling:
    """The :class:`Scaling` of columns whose scaled values span ``low``-``high``
    (:func:`column_range`), with their scaled medians (NaN where every value is
    missing)."""
    varying = high > low
    if not varying.all():
        logger.info("clustering: dropping %d constant feature(s)", int((~varying).sum()))
    return Scaling(np.asarray(gain, dtype=float), np.nan_to_num(medians), varying)


@dataclass(frozen=True)
class MixtureFit:
    """A fitted mixture and its BIC.

    Attributes
    ----------
    n_components : int
    bic : float
    covariance_type : str
        The covariance type that finally fitted (may be simpler than asked for).
    model : GaussianMixture
    """

    n_components: int
    bic: float
    covariance_type: str
    model: GaussianMixture


def fit_mixture(
    Z: np.ndarray,
    n_components: int,
    covariance_type: str = "full",
    random_state: int = 100,
    max_iter: int = 250,
) -> MixtureFit:
    """Fit a Gaussian mixture, falling back to simpler covariances if a fit fails.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        The clustering matrix.
    n_components : int
        Number of mixture components (capped at ``n``).
    covariance_type : {"full", "diag", "spherical"}
        First covariance type tried; the simpler ones follow on failure.
    random_state : int
        Seed of the mixture's initialisation.
    max_iter : int
        EM iterations.

    Returns
    -------
    MixtureFit
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    n_components = max(1, min(n_components, Z.shape[0]))
    tried = COVARIANCE_FALLBACK[COVARIANCE_FALLBACK.index(covariance_type) :]
    last_error: Exception | None = None
    for cov in tried:
        for reg in (REG_COVAR, 1e-3):
            model = GaussianMixture(
                n_components=n_components,
                covariance_type=cov,
                max_iter=max_iter,
                reg_covar=reg,
                random_state=random_state,
            )
            try:
                # Small dense algebra: extra BLAS threads only spin (8x slower measured with
                # 2 threads on 2 busy cores); parallelism comes from fitting sizes at once.
                with warnings.catch_warnings(), threadpool_limits(1):
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.fit(Z)
                    bic = float(model.bic(Z))
            except (ValueError, np.linalg.LinAlgError) as exc:
                last_error = exc
                continue
            if np.isfinite(bic):
                if cov != covariance_type:
                    logger.warning(
                        "mixture with %d components: %s covariance failed; used %s with "
                        "reg_covar=%g",
                        n_components,
                        covariance_type,
                        cov,
                        reg,
                    )
                elif reg != REG_COVAR:  # a routine mend of near-singular covariances
                    logger.info(
                        "mixture with %d components: %s covariance fitted with reg_covar=%g",
                        n_components,
                        cov,
                        reg,
                    )
                return MixtureFit(n_components, bic, cov, model)
    raise RuntimeError(
        f"no Gaussian mixture with {n_components} components could be fitted: {last_error}"
    )


# Positives assigned this many at a time (their components' probabilities, a row each)
LABEL_CHUNK = 32_768


def assigned_components(fit: MixtureFit, Z: np.ndarray, kept: np.ndarray | None = None):
    """Each row's most probable component of ``fit``, among the ``kept`` ones (all where
    ``None``), computed ``LABEL_CHUNK`` rows at a time."""
    chunks = [slice(a, a + LABEL_CHUNK) for a in range(0, len(Z), LABEL_CHUNK)]
    if not chunks:
        return np.empty(0, dtype=np.int64)
    allowed = np.ones(fit.n_components, dtype=bool) if kept is None else kept
    with threadpool_limits(1):  # a task's share of its worker, as the fits
        return np.concatenate(
            [np.where(allowed, fit.model.predict_proba(Z[c]), -1.0).argmax(axis=1) for c in chunks]
        )


def kept_components(counts: np.ndarray, min_size: int) -> np.ndarray:
    """Components that keep their rows: those most probable for at least ``min_size``
    rows (``counts``, :func:`assigned_components`' counts), and always the largest."""
    kept = counts >= min_size
    kept[np.argmax(counts)] = True
    return kept


def component_ranks(counts: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Each component's cluster, ``0..c-1`` by decreasing ``counts`` (rows assigned among
    the ``kept`` components), -1 for the components dissolved."""
    order = np.argsort(-counts, kind="stable")[: int(kept.sum())]
    rank = np.full(counts.size, -1)
    rank[order] = np.arange(order.size)
    return rank
