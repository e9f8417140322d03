import numpy as np
import pytest
from helpers import free_port


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


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3-compatible server (moto in server mode) on loopback: its URL. One for
    the session: fsspec keeps the S3 filesystems it made (keyed by their options, not
    by the endpoint the environment names), so a second server would be missed."""
    moto_server = pytest.importorskip("moto.server")
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch):
    """The server as this process's (and its children's) S3, with an empty bucket
    ``pu-test``: a boto3 client on it."""
    boto3 = pytest.importorskip("boto3")
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    s3 = boto3.client("s3", endpoint_url=s3_endpoint)
    s3.create_bucket(Bucket="pu-test")
    yield s3
    for obj in s3.list_objects_v2(Bucket="pu-test").get("Contents", []):
        s3.delete_object(Bucket="pu-test", Key=obj["Key"])
    s3.delete_bucket(Bucket="pu-test")
