"""What the PU classifiers' separation says about the reading: alpha poorly identified, a
feature that may record the label, and positives that overlap the negatives."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from pulsnar_dask.core.metrics import implied_negative_auc
from pulsnar_dask.core.model import Component
from pulsnar_dask.pipeline.job import Reading
from pulsnar_dask.pipeline.result import OVERLAP_AUC, PERFECT_PU_AUC, WEAK_PU_AUC, overlaps

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Diagnostics:
    """The checks of a reading's classifiers.

    Attributes
    ----------
    pu_auc : list of float
        The out-of-fold AUC of each PU classifier the checks read (the first
        iteration's subproblems).
    leading_feature : str or None
        The feature the models lean on most, where every classifier separates labeled
        from unlabeled rows perfectly.
    negative_auc : float or None
        The AUC between labeled positives and unlabeled negatives that the subproblem over
        every positive implies at its alpha, to 3 decimals; None without one.
    """

    pu_auc: list[float]
    leading_feature: str | None
    negative_auc: float | None


def diagnose(reading: Reading) -> Diagnostics:
    """Check the reading's classifiers, warning where alpha is poorly identified, where a
    feature may record the label and where positives and negatives overlap."""
    checked = reading.first
    for i, r in enumerate(checked):
        if r.pu_auc < WEAK_PU_AUC:
            logger.warning(
                "subproblem %d: the classifier hardly tells labeled positives from unlabeled "
                "rows (out-of-fold AUC %.3f); alpha is poorly identified from these features",
                i + 1,
                r.pu_auc,
            )
    leading_feature = None
    if all(r.pu_auc >= PERFECT_PU_AUC for r in checked) and checked[0].models:
        top = checked[0]
        leading_feature = Component(list(top.features), list(top.models)).leading_feature()
        logger.warning(
            "labeled positives and unlabeled rows are perfectly separated (out-of-fold AUC "
            "%.4f): if a feature records the label (the models lean most on %r), leave it "
            "out; otherwise no unlabeled row resembles a labeled positive",
            min(r.pu_auc for r in checked),
            leading_feature,
        )
    # the subproblem over every positive: PULSCAR's, or the one cluster's
    over_all = reading.first[0] if len(reading.first) == 1 else None
    negative_auc = None
    if over_all is not None:  # to 3 decimals: what is printed is what is compared
        implied = implied_negative_auc(over_all.pu_auc, over_all.alpha)
        negative_auc = None if np.isnan(implied) else round(implied, 3)
    if overlaps(negative_auc):
        logger.warning(
            "labeled positives and unlabeled negatives overlap (implied AUC %.3f, below "
            "%g): if positives were labeled at random, every reading of alpha also counts "
            "the negatives that resemble positives, so alpha is an upper bound and may be "
            "far too high",
            negative_auc,
            OVERLAP_AUC,
        )
    return Diagnostics([r.pu_auc for r in checked], leading_feature, negative_auc)
