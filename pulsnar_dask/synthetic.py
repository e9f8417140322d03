"""The paper's synthetic PU data (DESIGN.md section 6).

SCAR: two classes; the labeled positives are a random sample of the positive class.
SNAR: one negative class and ``n_subtypes`` positive subtypes; the labeled positives hold
every subtype equally while the unlabeled positives are skewed towards the later subtypes
(weights 1, 2, 4, ... over ``2**n_subtypes - 1``), so labeling is not at random.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.datasets import make_classification

SCENARIOS = ("scar", "snar")


@dataclass(frozen=True)
class PUData:
    """A positive-unlabeled data set with its ground truth.

    Attributes
    ----------
    X : ndarray of float32, shape (n, n_features)
    label : ndarray of int8, shape (n,)
        1 labeled positive, 0 unlabeled.
    true_label : ndarray of int8, shape (n,)
        0 negative, >= 1 positive (the subtype for SNAR data).
    """

    X: np.ndarray
    label: np.ndarray
    true_label: np.ndarray

    @property
    def true_alpha(self) -> float:
        """Fraction of positives among the unlabeled rows."""
        return float(np.mean(self.true_label[self.label == 0] > 0))


def _split_counts(total: int, weights: np.ndarray) -> np.ndarray:
    share = total * weights / weights.sum()
    counts = np.floor(share).astype(np.int64)
    order = np.argsort(-(share - counts), kind="stable")
    counts[order[: total - int(counts.sum())]] += 1
    return counts


def make_pu_data(
    scenario: str,
    n_pos: int,
    n_unlab: int,
    n_features: int,
    alpha: float,
    class_sep: float = 0.3,
    n_subtypes: int = 5,
    random_state: int = 0,
) -> PUData:
    """Generate the paper's synthetic PU data.

    Parameters
    ----------
    scenario : {"scar", "snar"}
        Selection of the labeled positives.
    n_pos : int
        Number of labeled positives.
    n_unlab : int
        Number of unlabeled rows.
    n_features : int
        Number of (all informative) features.
    alpha : float
        Fraction of positives among the unlabeled, in [0, 1).
    class_sep : float
        ``make_classification``'s class separation.
    n_subtypes : int
        Number of positive subtypes (SNAR only).
    random_state : int
        Seed of the generator and of the final row shuffle.

    Returns
    -------
    PUData
        Rows in random order.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")
    n_classes = 2 if scenario == "scar" else n_subtypes + 1
    X, cls = make_classification(
        n_samples=max(n_pos, n_unlab) * n_classes * 2,
        n_features=n_features,
        n_informative=n_features,
        n_redundant=0,
        n_repeated=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        flip_y=0,
        class_sep=class_sep,
        random_state=random_state,
    )
    members = [np.flatnonzero(cls == c) for c in range(n_classes)]
    if scenario == "scar":
        n_u_pos = round(n_unlab * alpha)
        unl = [members[1][:n_u_pos], members[0][: round(n_unlab * (1 - alpha))]]
        pos = [members[1][n_u_pos : n_u_pos + n_pos]]
    else:
        p_counts = _split_counts(n_pos, np.ones(n_subtypes))
        u_counts = _split_counts(int(n_unlab * alpha), 2.0 ** np.arange(n_subtypes))
        pos = [members[s + 1][: p_counts[s]] for s in range(n_subtypes)]
        unl = [members[0][: int(n_unlab * (1 - alpha))]]
        unl += [members[s + 1][p_counts[s] : p_counts[s] + u_counts[s]] for s in range(n_subtypes)]
    pos_idx, unl_idx = np.concatenate(pos), np.concatenate(unl)
    rows = np.concatenate([pos_idx, unl_idx])
    label = np.r_[np.ones(pos_idx.size), np.zeros(unl_idx.size)].astype(np.int8)
    order = np.random.default_rng(random_state).permutation(rows.size)
    return PUData(
        X=X[rows][order].astype(np.float32),
        label=label[order],
        true_label=cls[rows][order].astype(np.int8),
    )
