"""The default 95% interval of alpha (pulsnar_dask.core.interval)."""

import numpy as np
import pytest

from pulsnar_dask.core.bootstrap import poisson_weights
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.core.interval import INTERVAL_READERS, Z_95, alpha_interval
from pulsnar_dask.core.map_reduce import in_memory
from pulsnar_dask.core.subproblem import (
    alpha_value,
    estimate_subproblem,
    group_subproblems,
    read_alpha,
)


def beta_mixture(alpha: float, n_pos: int, n_unl: int, seed: int, pos_ids=None):
    """A subproblem whose unlabeled rows hold a share ``alpha`` of positives (Beta(6, 2)
    scores) among negatives (Beta(2, 6)): the true alpha is known."""
    rng = np.random.default_rng(seed)
    hidden = rng.random(n_unl) < alpha
    p_unl = np.where(hidden, rng.beta(6, 2, n_unl), rng.beta(2, 6, n_unl))
    p_pos = rng.beta(6, 2, n_pos)
    return p_pos, p_unl


def subproblem(p_pos, p_unl, config, first_id=0):
    """Positives get ids from ``first_id``; the unlabeled rows always 0..n_u-1 + offset."""
    n_u = p_unl.size
    ids = np.concatenate([np.arange(n_u), 10**6 + first_id + np.arange(p_pos.size)])
    labels = np.r_[np.zeros(n_u, np.int8), np.ones(p_pos.size, np.int8)]
    proba = np.concatenate([p_unl, p_pos])
    return estimate_subproblem(ids, labels, proba, config, 0)


def in_parts(per_piece, finish, pieces, calls, n_parts=3):
    """A map_reduce over partitions: each scoring's rows cut by id, as a cluster's
    partitions hold them (every scoring's unlabeled rows in the same order in each)."""
    cut = [
        tuple(
            (p[ids % n_parts == k], y[ids % n_parts == k], ids[ids % n_parts == k])
            for k in range(n_parts)
        )
        for ((p, y, ids),) in pieces
    ]
    return in_memory(per_piece, finish, cut, calls)


def test_interval_is_the_span_of_each_reading_plus_minus_its_bootstrap_spread():
    config = PUConfig(interval_resamples=8)
    p_pos, p_unl = beta_mixture(0.3, 400, 2000, seed=1)
    sub = subproblem(p_pos, p_unl, config)
    # the oracle: the same resamples weighed by hand, every reader read on each; in
    # resample i each row counts as often as its Poisson weight for (id, seed 5, i)
    point = np.array(
        [read_alpha(sub.probabilities, sub.labels, config.with_(alpha_estimator=r), 5).alpha
         for r in INTERVAL_READERS]
    )  # fmt: skip
    draws = []
    for i in range(8):
        w = poisson_weights(sub.row_ids, 5, i)
        draws.append(
            [alpha_value(sub.probabilities, sub.labels, config.with_(alpha_estimator=r), 5, w)
             for r in INTERVAL_READERS]
        )  # fmt: skip
    sd = np.std(draws, axis=0, ddof=1)
    expected = (np.min(point - Z_95 * sd), np.max(point + Z_95 * sd))
    interval = alpha_interval({"pulscar": [sub]}, config, seed=5)
    assert (interval.low, interval.high) == pytest.approx(expected, abs=1e-12)
    # counted partition by partition, the rows read the same (each has its own weights)
    parted = alpha_interval({"pulscar": [sub]}, config, 5, (), in_parts)
    assert (parted.low, parted.high) == pytest.approx((interval.low, interval.high), abs=1e-12)
    assert list(interval.readings) == [f"pulscar {r}" for r in INTERVAL_READERS]
    for i, values in enumerate(interval.readings.values()):
        assert values == pytest.approx((point[i], sd[i]), abs=1e-12)


def test_interval_covers_known_alphas_and_narrows_with_more_rows():
    config = PUConfig(interval_resamples=20)
    covered, widths = 0, {}
    for alpha in (0.05, 0.2, 0.4):
        for n in (1000, 8000):
            p_pos, p_unl = beta_mixture(alpha, n // 4, n, seed=int(alpha * 100) + n)
            interval = alpha_interval({"pulscar": [subproblem(p_pos, p_unl, config)]}, config)
            low, high = interval.low, interval.high
            covered += low <= alpha <= high
            widths.setdefault(n, []).append(high - low)
    assert covered == 6
    assert np.mean(widths[8000]) < 0.6 * np.mean(widths[1000])


def test_cluster_sums_share_the_unlabeled_rows_and_the_span_takes_every_assumption():
    config = PUConfig(interval_resamples=6, claim_overlap=1.0)  # the plain sum
    p_a, p_unl = beta_mixture(0.3, 300, 1500, seed=2)
    p_b = np.random.default_rng(9).beta(6, 2, 200)
    clusters = [subproblem(p_a, p_unl, config), subproblem(p_b, p_unl, config, 300)]
    pulscar = [subproblem(np.r_[p_a, p_b], p_unl, config)]
    both = alpha_interval({"pulsnar": clusters, "pulscar": pulscar}, config)
    alone = alpha_interval({"pulsnar": clusters}, config)
    # another assumption leaves the first one's resamples as they were: the span only grows
    for reader in INTERVAL_READERS:
        assert both.readings[f"pulsnar {reader}"] == alone.readings[f"pulsnar {reader}"]
    assert both.low <= alone.low and both.high >= alone.high
    cluster_sum = sum(c.alpha for c in clusters)
    assert alone.low <= cluster_sum <= alone.high
    assert both.readings["pulsnar kernel"][0] == pytest.approx(cluster_sum)
    assert both.readings["pulscar kernel"][0] == pytest.approx(pulscar[0].alpha)
    assert both.low == pytest.approx(
        max(0.0, min(a - Z_95 * sd for a, sd in both.readings.values()))
    )
    # several iterations: the t-interval of their mean joins the span
    wide = alpha_interval({"pulsnar": clusters}, config, alphas=[0.0, 0.95])
    assert wide.low == 0.0 and wide.high > 0.95


def test_assumptions_on_other_unlabeled_rows_are_each_read_as_alone():
    """Auto's clusters on a sample of the unlabeled rows (max_reading_rows), PULSCAR on
    every row: each assumption reads as it would alone, on one table or its partitions."""
    config = PUConfig(interval_resamples=6, claim_overlap=0.3)
    p_a, p_unl = beta_mixture(0.3, 300, 1500, seed=4)
    p_b = np.random.default_rng(8).beta(6, 2, 200)
    sample = p_unl[:600]  # the unlabeled rows of ids 0..599
    clusters = [subproblem(p_a, sample, config), subproblem(p_b, sample, config, 300)]
    pulscar = [subproblem(np.r_[p_a, p_b], p_unl, config)]
    both = alpha_interval({"pulscar": pulscar, "pulsnar": clusters}, config, seed=3)
    parted = alpha_interval(
        {"pulscar": pulscar, "pulsnar": clusters}, config, seed=3, map_reduce=in_parts
    )
    for name, group in (("pulscar", pulscar), ("pulsnar", clusters)):
        alone = alpha_interval({name: group}, config, seed=3)
        for reader in INTERVAL_READERS:
            key = f"{name} {reader}"
            assert both.readings[key] == alone.readings[key]
            assert parted.readings[key] == pytest.approx(alone.readings[key], abs=1e-12)
    assert both.readings["pulsnar kernel"][1] > both.readings["pulscar kernel"][1]  # fewer rows
    # the subtype groups each assumption was read with, as auto reports the clusters'
    assert (
        both.subtypes
        == parted.subtypes
        == {
            "pulscar": [0],
            "pulsnar": group_subproblems(clusters, config.claim_overlap).tolist(),
        }
    )
    assert both.low == pytest.approx(
        max(0.0, min(a - Z_95 * sd for a, sd in both.readings.values()))
    )


def test_interval_refuses_mismatched_unlabeled_rows_and_too_few_resamples():
    config = PUConfig(interval_resamples=4)
    p_pos, p_unl = beta_mixture(0.2, 100, 500, seed=3)
    a = subproblem(p_pos, p_unl, config)
    b = subproblem(p_pos, p_unl[:400], config)
    with pytest.raises(ValueError, match="same unlabeled rows"):
        alpha_interval({"pulsnar": [a, b]}, config)
    # as many unlabeled rows, but other ones
    shifted = estimate_subproblem(a.row_ids + 1, a.labels, a.probabilities, config, 0)
    with pytest.raises(ValueError, match="same unlabeled rows"):
        alpha_interval({"pulsnar": [a, shifted]}, config)
    with pytest.raises(ValueError, match="interval_resamples must be 0"):
        PUConfig(interval_resamples=1)
    with pytest.raises(ValueError, match="at least 2"):
        alpha_interval({"pulscar": [a]}, config.with_(interval_resamples=0))


@pytest.mark.parametrize("reader", ["kernel", "tail", "bbe", "valley"])
def test_alpha_alone_is_what_the_full_reading_gives(reader):
    config = PUConfig(alpha_estimator=reader)
    p_pos, p_unl = beta_mixture(0.25, 300, 1500, seed=4)
    sub = subproblem(p_pos, p_unl, config)
    full = read_alpha(sub.probabilities, sub.labels, config, 3).alpha
    assert alpha_value(sub.probabilities, sub.labels, config, 3) == full


def test_a_subtype_cut_into_two_clusters_counts_once_and_distinct_subtypes_add_up():
    """Clusters cut from one subtype claim the same hidden positives; the interval's
    readings count them once, and still add up subtypes that claim different rows."""
    config = PUConfig(interval_resamples=4, claim_overlap=0.5)
    rng = np.random.default_rng(4)
    n_u = 3000
    kind = rng.choice(3, n_u, p=[0.7, 0.15, 0.15])  # negatives, subtype A, subtype B
    scores = rng.beta(2, 8, (2, n_u))
    scores[0, kind == 1] = rng.beta(8, 2, np.sum(kind == 1))  # A's classifier finds A
    scores[1, kind == 2] = rng.beta(8, 2, np.sum(kind == 2))
    halves = [subproblem(rng.beta(8, 2, 200), scores[0], config, 1000 * i) for i in range(2)]
    other = subproblem(rng.beta(8, 2, 200), scores[1], config, 5000)
    cut = alpha_interval({"pulsnar": [*halves, other]}, config, seed=1)
    one_subtype = halves[0].alpha + other.alpha
    assert cut.readings["pulsnar kernel"][0] == pytest.approx(one_subtype, abs=0.01)
    # the united claims counted partition by partition: the same readings
    parted = alpha_interval({"pulsnar": [*halves, other]}, config, 1, (), in_parts)
    for name, values in cut.readings.items():
        assert parted.readings[name] == pytest.approx(values, abs=1e-12), name
    added = alpha_interval({"pulsnar": [*halves, other]}, config.with_(claim_overlap=1.0))
    assert added.readings["pulsnar kernel"][0] == pytest.approx(
        sum(r.alpha for r in [*halves, other])
    )


@pytest.mark.parametrize("reader", ["kernel", "tail", "bbe"])
def test_a_weighted_reading_is_the_reading_of_the_rows_repeated(reader):
    config = PUConfig(alpha_estimator=reader)
    p_pos, p_unl = beta_mixture(0.25, 300, 1500, seed=6)
    sub = subproblem(p_pos, p_unl, config)
    w = poisson_weights(sub.row_ids, 1, 0)
    repeated = read_alpha(np.repeat(sub.probabilities, w), np.repeat(sub.labels, w), config, 3)
    weighted = alpha_value(sub.probabilities, sub.labels, config, 3, w)
    assert weighted == pytest.approx(repeated.alpha, abs=1e-4)
    assert weighted != pytest.approx(
        alpha_value(sub.probabilities, sub.labels, config, 3), abs=1e-4
    )


def test_interval_from_counts_follows_the_interval_from_the_rows():
    """The oracle: the same resamples read from the rows themselves (exact densities,
    each row repeated as often as it weighs) and from their weighted counts."""
    config = PUConfig(interval_resamples=6, claim_overlap=0.5)
    p_a, p_unl = beta_mixture(0.3, 300, 1500, seed=7)
    p_b = np.random.default_rng(7).beta(6, 2, 200)
    clusters = [subproblem(p_a, p_unl, config), subproblem(p_b, p_unl, config, 300)]
    pulscar = [subproblem(np.r_[p_a, p_b], p_unl, config)]
    groups = {"pulsnar": clusters, "pulscar": pulscar}
    counts = alpha_interval(groups, config, seed=2)
    rows = alpha_interval(groups, config.with_(exact_density=True), seed=2)
    assert counts.low == pytest.approx(rows.low, abs=0.01)
    assert counts.high == pytest.approx(rows.high, abs=0.01)
    for name, (alpha, sd) in rows.readings.items():
        assert counts.readings[name][0] == pytest.approx(alpha, abs=0.002), name
        assert counts.readings[name][1] == pytest.approx(sd, rel=0.1, abs=0.002), name


def test_a_reading_no_resample_could_make_spans_everything():
    from pulsnar_dask.core.interval import _spread

    resampled = np.array([[[0.1, np.nan]], [[0.3, np.nan]], [[0.2, 0.5]]])
    sd = _spread(resampled)
    assert sd[0, 0] == pytest.approx(0.1) and sd[0, 1] == np.inf


def test_a_reader_of_the_rows_reads_them_in_one_order_whatever_the_partitions():
    """bbe draws a random split of the rows: the pieces' rows are put back in id order
    before it reads them, so partitions read as one piece does."""
    config = PUConfig(interval_resamples=3, alpha_estimator="bbe")
    p_pos, p_unl = beta_mixture(0.3, 300, 1500, seed=8)
    sub = subproblem(p_pos, p_unl, config)
    whole = alpha_interval({"pulscar": [sub]}, config, seed=4)
    parted = alpha_interval({"pulscar": [sub]}, config, 4, (), in_parts)
    assert parted.readings == whole.readings


@pytest.mark.parametrize(
    ("n", "most", "expected"),
    [(31, 25, 2), (31, 12, 4), (31, 7, 6), (10, 4, 4), (31, 1, 31), (3, 1, 3), (2, 25, 2),
     (1, 25, 1)],
)  # fmt: skip
def test_resamples_are_read_in_an_even_number_of_even_batches(n, most, expected):
    from pulsnar_dask.core.interval import even_batches

    batches = even_batches(list(range(n)), most)
    assert [i for b in batches for i in b] == list(range(n))  # every resample once, in order
    sizes = [len(b) for b in batches]
    assert max(sizes) <= most and max(sizes) - min(sizes) <= 1
    # as few as fit, rounded up to an even count where the items allow it
    assert len(batches) == expected


def test_the_batches_a_reading_is_cut_into_do_not_change_it(monkeypatch):
    """Each resample is read from its own counts, whatever batch carries it."""
    import pulsnar_dask.core.interval as interval

    config = PUConfig(interval_resamples=8, claim_overlap=0.5)
    p_a, p_unl = beta_mixture(0.3, 300, 1500, seed=9)
    p_b = np.random.default_rng(9).beta(6, 2, 200)
    groups = {
        "pulsnar": [subproblem(p_a, p_unl, config), subproblem(p_b, p_unl, config, 300)],
        "pulscar": [subproblem(np.r_[p_a, p_b], p_unl, config)],
    }
    batched = alpha_interval(groups, config, 3, (), in_parts)
    monkeypatch.setattr(interval, "_BATCH", 1)
    one_by_one = alpha_interval(groups, config, 3, (), in_parts)
    assert batched == one_by_one
