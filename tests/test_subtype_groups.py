"""Clusters that claim the same unlabeled rows count once (pulsnar_dask.core.subproblem)."""

import numpy as np
import pytest

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.subproblem import (
    claim_overlaps,
    claimed_rows,
    combined_alpha,
    subtype_groups,
)


def test_each_subproblem_claims_its_most_probable_unlabeled_rows():
    proba = [np.array([0.9, 0.1, 0.8, 0.2, 0.7]), np.array([0.1, 0.9, 0.2, 0.8, 0.3])]
    claims = claimed_rows(proba, [0.4, 0.2])
    assert claims.tolist() == [
        [True, False, True, False, False],
        [False, True, False, False, False],
    ]
    assert claimed_rows(proba, [0.0, 1.0]).sum(axis=1).tolist() == [0, 5]


def test_overlap_is_shared_rows_over_the_smaller_claim():
    claims = np.array(
        [[1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0]], bool
    )
    overlaps = claim_overlaps(claims)
    assert overlaps[0, 1] == 1.0  # the second claim lies inside the first
    assert overlaps[0, 2] == pytest.approx(1 / 3)
    assert overlaps[1, 2] == pytest.approx(1 / 2)
    assert overlaps[3].tolist() == [0.0, 0.0, 0.0, 0.0]  # an empty claim overlaps nothing
    assert np.array_equal(overlaps, overlaps.T)


def test_groups_are_the_connected_clusters_above_the_threshold():
    overlaps = np.array(
        [
            [1.0, 0.6, 0.0, 0.0],
            [0.6, 1.0, 0.0, 0.7],
            [0.0, 0.0, 1.0, 0.1],
            [0.0, 0.7, 0.1, 1.0],
        ]
    )
    assert subtype_groups(overlaps, 0.5).tolist() == [0, 0, 1, 0]  # 0-1-3 chained
    assert subtype_groups(overlaps, 0.65).tolist() == [0, 1, 2, 1]
    assert subtype_groups(overlaps, 1.0).tolist() == [0, 1, 2, 3]
    assert subtype_groups(overlaps, 0.0).tolist() == [0, 0, 0, 0]  # 2-3 share a row


def test_combined_alpha_sums_groups_and_unites_claims_within_one():
    rng = np.random.default_rng(0)
    n_u = 1000
    a, b = rng.random(n_u), rng.random(n_u)
    # two clusters of one subtype rank the rows alike: their union is about one claim
    twin = a + rng.normal(0, 0.01, n_u)
    alphas = [0.2, 0.2, 0.1]
    assert combined_alpha([a, twin, b], alphas, np.array([0, 1, 2])) == pytest.approx(0.5)
    united = combined_alpha([a, twin, b], alphas, np.array([0, 0, 1]))
    assert 0.3 <= united <= 0.32  # 0.2 once (give or take the twin's reordering) + 0.1
    everything = combined_alpha([a, twin, b], alphas, np.array([0, 0, 0]))
    assert everything == np.any(claimed_rows([a, twin, b], alphas), axis=0).mean()


def test_claim_overlap_is_validated():
    with pytest.raises(ValueError, match="claim_overlap"):
        PUConfig(claim_overlap=1.5)


def test_the_report_says_which_subtypes_count_their_claims_once():
    from pulsnar_dask.report import plain_reading

    summary = {
        "n_unlabeled": 1000,
        "hidden_positives": 200,
        "alpha": 0.2,
        "n_positive": 500,
        "method": "pulsnar",
        "subtypes": [{}] * 4,
        "cluster_groups": [[1, 4], [2], [3]],
        "settings": {"alpha_estimator": "kernel"},
        "pu_auc": [0.9] * 4,
        "alpha_identified": True,
    }
    text = plain_reading(summary)
    assert "the estimate is the sum over them; subtypes 1 and 4 claim the same" in text
    summary["cluster_groups"] = [[1], [2], [3], [4]]
    assert "the estimate is the sum over them. " in plain_reading(summary)


def test_weighted_claims_count_each_row_as_often_as_its_weight():
    rng = np.random.default_rng(3)
    a, b = rng.random(400), rng.random(400)  # distinct values: no ties at a boundary
    w = rng.poisson(1.0, 400)
    groups = np.array([0, 0])
    weighted = combined_alpha([a, b], [0.3, 0.2], groups, w)
    repeated = combined_alpha([np.repeat(a, w), np.repeat(b, w)], [0.3, 0.2], groups)
    # a row whose weight would carry a claim past its share stays out: the two differ by
    # at most that row's weight for each claim
    assert weighted == pytest.approx(repeated, abs=2 * w.max() / w.sum())
    claims = claimed_rows([a], [0.5], w)[0]
    target = np.round(0.5 * w.sum())
    assert target - w.max() < w[claims].sum() <= target
    # the claim is the most probable rows
    assert a[claims].min() > a[~claims & (w > 0)].max()
