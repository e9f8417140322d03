"""A table larger than any worker's memory: PULSNAR with calibration and the retrain runs to
the end on real worker processes whose nannies enforce a memory limit, and no stage
gathers the table onto one worker (that worker would pass its limit and be restarted).

About 2.5 minutes on two cores: four 1 GiB workers hold 1.1 GB of features between them.
"""

import numpy as np
import pytest
from distributed import Client

from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.dask_executor.connect import ProcessCluster
from pulsnar_dask.dask_executor.engine import run_job
from pulsnar_dask.datasets.synthetic import synthetic_dask_frame
from pulsnar_dask.io import PUFrame

N_POS, N_UNLAB, N_FEATURES, CHUNK = 100_000, 2_650_000, 100, 125_000
LIMIT = 2**30  # each worker's memory limit, bytes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with ProcessCluster(
        tmp_path_factory.mktemp("memory"), n_workers=4, memory_limit=str(LIMIT), nanny=True
    ) as c:
        yield c


def test_pulsnar_with_calibration_and_retrain_on_a_table_larger_than_any_worker(cluster):
    with Client(cluster.address) as client:
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 4
        assert all(w["memory_limit"] == LIMIT for w in workers.values())
        # drawn on the workers, partition by partition: the client never holds it
        frame = synthetic_dask_frame(
            "snar", N_POS, N_UNLAB, N_FEATURES, 0.2, CHUNK, class_sep=1.0, n_subtypes=2
        ).persist()
        size = int(frame.memory_usage(deep=True).sum().compute())
        assert size > LIMIT  # the table does not fit any one worker
        truth = frame[["row_id", "label", "true_label"]].compute().sort_values("row_id")
        unlabeled = truth["label"].to_numpy() == 0
        hidden = unlabeled & (truth["true_label"].to_numpy() > 0)
        true_alpha = hidden.sum() / unlabeled.sum()

        puf = PUFrame(frame, [f"f{j}" for j in range(N_FEATURES)], "label", "row_id", None)
        # a model's training rows (40 MB here) take about 3x their size while it trains:
        # capped at 100,000 rows the busiest worker peaks near 790 MiB of its 1 GiB (the
        # nanny restarts it at 973), at the default 200,000 near 880 (measured)
        config = PUConfig(
            n_folds=2, n_rounds=10, interval_resamples=5, n_clusters=2, max_train_rows=100_000
        )
        result = run_job(
            client,
            puf,
            method="pulsnar",
            config=config,
            calibrate_probabilities=True,
            classify=True,
        )

        # each model trains on at most max_train_rows rows, gathered to one task; the table
        # itself never leaves the workers that hold it
        assert result.engine == "task"
        assert result.n_clusters == 2
        assert result.alpha == pytest.approx(true_alpha, abs=0.05)
        np.testing.assert_array_equal(result.row_ids, truth["row_id"].to_numpy())
        for vector in (result.probability, result.calibrated, result.improved):
            assert np.isfinite(vector).all()
        # the retrained classifier rates the hidden positives above the negatives
        negative = truth["true_label"].to_numpy() == 0
        assert result.improved[hidden].mean() > result.improved[negative].mean() + 0.2
        # no worker passed its limit: a restarted worker comes back under a new address
        assert set(client.scheduler_info()["workers"]) == set(workers)
