import numpy as np
import pytest


def beta_mixture(rng: np.random.Generator, n: int):
    """Random PU probabilities: positives ~ Beta(a, b), unlabeled a mix with negatives.

    Returns (probabilities, labels, true mixing weight).
    """
    weight = rng.uniform(0.02, 0.6)
    n_pos = max(20, int(n * rng.uniform(0.05, 0.5)))
    n_unl = n - n_pos
    pos_ab = rng.uniform(3, 8), rng.uniform(0.6, 2.5)
    neg_ab = rng.uniform(0.6, 2.5), rng.uniform(3, 8)
    hidden = rng.random(n_unl) < weight
    unl = np.where(hidden, rng.beta(*pos_ab, n_unl), rng.beta(*neg_ab, n_unl))
    p = np.concatenate([rng.beta(*pos_ab, n_pos), unl])
    y = np.r_[np.ones(n_pos), np.zeros(n_unl)].astype(np.int8)
    return p, y, float(hidden.mean())


@pytest.fixture
def mixture():
    return beta_mixture


def _local_client():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def client():
    """A local multi-process cluster (two workers of one thread) and its client."""
    yield from _local_client()


@pytest.fixture
def fresh_client():
    """As ``client``, closed after the test: for modules that also run the CLI in this
    process, which starts a cluster of its own (a second local cluster alive in the same
    process has hung xgboost.dask's matrix building and the cluster's close)."""
    yield from _local_client()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A real external cluster: a scheduler and two worker processes started as
    separate commands (:class:`~pulsnar_dask.dask_executor.connect.ProcessCluster`)."""
    from pulsnar_dask.dask_executor.connect import ProcessCluster

    with ProcessCluster(tmp_path_factory.mktemp("cluster"), n_workers=2) as c:
        yield c
