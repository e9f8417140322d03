"""Clusters that claim the same unlabeled rows count once (pulsnar_dask.core.claims)."""

import numpy as np
import pytest

from pulsnar_dask.core.claims import (
    Claim,
    cell_weights,
    claim_of,
    claim_overlaps,
    claimed_flags,
    claims_of,
    combined_alpha,
    overlap_weights,
    subtype_groups,
    union_weight,
)
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.grid import EDGES, N_CELLS, cell_of


def ranked_claims(proba: list[np.ndarray], alphas: list[float]) -> np.ndarray:
    """The oracle: each subproblem's round(alpha n) most probable rows."""
    claims = np.zeros((len(proba), proba[0].size), dtype=bool)
    for c, (p, a) in enumerate(zip(proba, alphas, strict=True)):
        claims[c, np.argsort(-p, kind="stable")[: int(np.round(a * p.size))]] = True
    return claims


def distinct_cells(rng: np.random.Generator, n: int) -> np.ndarray:
    """Probabilities of ``n`` rows, each in a cell of its own."""
    return EDGES[np.sort(rng.choice(N_CELLS, n, replace=False))] + 1e-9


def shares(cells: list[np.ndarray], alphas: list[float]) -> np.ndarray:
    return np.array([c.of_rows(k) for k, c in zip(cells, claims_of(cells, alphas), strict=True)])


def test_each_subproblem_claims_its_most_probable_unlabeled_rows():
    proba = [np.array([0.9, 0.1, 0.8, 0.2, 0.7]), np.array([0.1, 0.9, 0.2, 0.8, 0.3])]
    cells = [cell_of(p) for p in proba]
    assert shares(cells, [0.4, 0.2]).tolist() == [[1, 0, 1, 0, 0], [0, 1, 0, 0, 0]]
    assert shares(cells, [0.0, 1.0]).sum(axis=1).tolist() == [0, 5]
    rng = np.random.default_rng(1)
    proba = [rng.permutation(distinct_cells(rng, 500)) for _ in range(3)]
    alphas = [0.13, 0.3, 0.071]
    # a cell a row: the claims are exactly the top-ranked rows
    got = shares([cell_of(p) for p in proba], alphas)
    np.testing.assert_array_equal(got, ranked_claims(proba, alphas))


def test_rows_tied_in_the_boundary_cell_share_the_claim():
    cells = np.array([7, 5, 5, 5, 5, 2])
    claim = claim_of(cell_weights(cells), 0.5)  # 3 of 6: the top row and 2 of the 4 tied
    assert claim == Claim(5, 0.5)
    assert claim.of_rows(cells).tolist() == [1, 0.5, 0.5, 0.5, 0.5, 0]
    assert claim_of(cell_weights(cells), 1.0) == Claim(-1, 1.0)
    assert claim_of(cell_weights(cells), 0.0).of_rows(cells).sum() == 0
    assert claim_of(cell_weights(cells), float("nan")).of_rows(cells).sum() == 0
    w = np.array([0, 1, 2, 0, 1, 3.0])  # weights: the target is of their total, 7 -> 4
    claim = claim_of(cell_weights(cells, w), 4 / 7)
    assert claim.of_rows(cells) @ w == pytest.approx(4.0)


def test_overlap_is_shared_weight_over_the_smaller_claim():
    cells = [np.arange(6)[::-1], np.array([9, 9, 0, 0, 9, 9]), np.zeros(6, dtype=int)]
    claims = [Claim(1, 1.0), Claim(0, 0.5), Claim(N_CELLS, 0.0)]
    # claim 0: rows 0-4 (cells 5..1), claim 1: rows 0, 1, 4, 5 whole and half of 2 and 3
    shared = overlap_weights(cells, claims)
    np.testing.assert_allclose(np.diag(shared), [5, 5, 0])
    assert shared[0, 1] == pytest.approx(1 + 1 + 0.5 + 0.5 + 1)
    overlaps = claim_overlaps(shared)
    assert overlaps[0, 1] == pytest.approx(4 / 5)
    assert overlaps[2].tolist() == [0.0, 0.0, 0.0]  # an empty claim overlaps nothing
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
    twin = np.clip(a + rng.normal(0, 0.01, n_u), 0, 1)
    cells = [cell_of(p) for p in (a, twin, b)]
    alphas = [0.2, 0.2, 0.1]
    assert combined_alpha(cells, alphas, np.array([0, 1, 2])) == pytest.approx(0.5)
    united = combined_alpha(cells, alphas, np.array([0, 0, 1]))
    assert 0.3 <= united <= 0.32  # 0.2 once (give or take the twin's reordering) + 0.1
    everything = combined_alpha(cells, alphas, np.array([0, 0, 0]))
    oracle = np.any(ranked_claims([a, twin, b], alphas), axis=0).mean()
    assert everything == pytest.approx(oracle, abs=3 / n_u)  # ties within a cell aside


def test_claim_statistics_of_partitions_add_up_to_the_whole():
    rng = np.random.default_rng(2)
    cells = [cell_of(rng.beta(a, 2, 3000)) for a in (1, 3, 5)]
    w = rng.poisson(1.0, 3000).astype(float)
    claims = claims_of(cells, [0.2, 0.3, 0.1], w)
    cut = [slice(0, 1000), slice(1000, 3000)]
    # the claims from the partitions' summed cell weights are the whole's
    summed = [sum(cell_weights(k[part], w[part]) for part in cut) for k in cells]
    assert [claim_of(s, a) for s, a in zip(summed, [0.2, 0.3, 0.1], strict=True)] == claims
    parts = [([k[part] for k in cells], w[part]) for part in cut]
    np.testing.assert_allclose(
        sum(overlap_weights(k, claims, wp) for k, wp in parts), overlap_weights(cells, claims, w)
    )
    assert sum(union_weight(k, claims, wp) for k, wp in parts) == pytest.approx(
        union_weight(cells, claims, w)
    )


def test_relabeling_takes_the_same_rows_on_any_partitioning():
    rng = np.random.default_rng(4)
    cells = rng.integers(100, 104, 4000)  # four cells: many rows tied in each
    ids = rng.permutation(10**6)[:4000]
    claim = claim_of(cell_weights(cells), 0.4)
    taken = claimed_flags(cells, claim, ids, 7)
    halves = np.r_[claimed_flags(cells[:1500], claim, ids[:1500], 7),
                   claimed_flags(cells[1500:], claim, ids[1500:], 7)]  # fmt: skip
    np.testing.assert_array_equal(taken, halves)
    assert np.all(taken[cells > claim.cell]) and not np.any(taken[cells < claim.cell])
    assert taken.sum() == pytest.approx(1600, abs=4 * np.sqrt(1600))
    assert not np.array_equal(taken, claimed_flags(cells, claim, ids, 8))  # seeded


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
    a, b = cell_of(rng.random(400)), cell_of(rng.random(400))
    w = rng.poisson(1.0, 400)
    groups = np.array([0, 0])
    weighted = combined_alpha([a, b], [0.3, 0.2], groups, w)
    repeated = combined_alpha([np.repeat(a, w), np.repeat(b, w)], [0.3, 0.2], groups)
    assert weighted == pytest.approx(repeated)
    claim = claims_of([a], [0.5], w)[0]
    assert claim.of_rows(a) @ w == pytest.approx(np.round(0.5 * w.sum()))


def test_claims_ending_in_one_tied_cell_take_the_same_rows():
    """Two clusters of one subtype whose scores tie: their claims share the tied cell's
    rows (as relabeling takes them, by one hash a row), so they overlap whole and their
    union is one claim."""
    p = np.r_[np.full(500, 0.9), np.linspace(0.01, 0.5, 500)]  # half the rows tied
    cells = [cell_of(p)] * 2
    ids = np.arange(p.size)
    for alpha in (0.1, 0.2, 0.4):
        claims = claims_of(cells, [alpha, alpha])
        assert claim_overlaps(overlap_weights(cells, claims))[0, 1] == pytest.approx(1.0)
        assert combined_alpha(cells, [alpha, alpha], np.array([0, 0])) == pytest.approx(alpha)
        taken = [claimed_flags(k, c, ids, 3) for k, c in zip(cells, claims, strict=True)]
        np.testing.assert_array_equal(taken[0], taken[1])
    # a smaller claim in the same cell lies inside the larger one
    small, large = claims_of(cells, [0.1, 0.3])
    assert overlap_weights(cells, [small, large])[0, 1] == pytest.approx(100)
    assert union_weight(cells, [small, large]) == pytest.approx(300)


def test_subproblems_alpha_summed_over_partitions_is_the_whole_rows():
    """Groups and united claims counted partition by partition (a cluster's pieces, cut by
    id) read what the rows held in one piece read, with a subtype cut in two."""
    from pulsnar_dask.core.map_reduce import in_memory
    from pulsnar_dask.core.subproblem import estimate_subproblem, subproblems_alpha

    rng = np.random.default_rng(5)
    n_u, config = 3000, PUConfig()
    p_unl = rng.beta(2, 5, n_u)
    subs = []
    for c, shift in enumerate((0.0, 0.0, 0.3)):  # the first two: one subtype, its scores tied
        p_pos = np.clip(rng.beta(5, 2, 200) - shift, 0, 1)
        ids = np.r_[np.arange(n_u), 10**6 + 1000 * c + np.arange(200)]
        labels = np.r_[np.zeros(n_u, np.int8), np.ones(200, np.int8)]
        subs.append(estimate_subproblem(ids, labels, np.r_[p_unl, p_pos], config, 0))

    def in_parts(per_piece, finish, pieces, calls):
        cut = [
            tuple((p[ids % 3 == k], y[ids % 3 == k], ids[ids % 3 == k]) for k in range(3))
            for ((p, y, ids),) in pieces
        ]
        return in_memory(per_piece, finish, cut, calls)

    whole, groups = subproblems_alpha(subs, config.claim_overlap)
    parted, parted_groups = subproblems_alpha(subs, config.claim_overlap, in_parts)
    assert groups.tolist() == parted_groups.tolist() and groups[0] == groups[1]
    assert parted == pytest.approx(whole, abs=1e-12)
    # the two tied clusters count once: less than the three alphas summed
    assert whole < sum(s.alpha for s in subs) - 0.5 * min(s.alpha for s in subs[:2])
