"""The unlabeled rows each subproblem claims (pulsnar_dask.core.subproblem)."""

import numpy as np

from pulsnar_dask.core.subproblem import claimed_rows


def test_each_subproblem_claims_its_most_probable_unlabeled_rows():
    proba = [np.array([0.9, 0.1, 0.8, 0.2, 0.7]), np.array([0.1, 0.9, 0.2, 0.8, 0.3])]
    claims = claimed_rows(proba, [0.4, 0.2])
    assert claims.tolist() == [
        [True, False, True, False, False],
        [False, True, False, False, False],
    ]
    assert claimed_rows(proba, [0.0, 1.0]).sum(axis=1).tolist() == [0, 5]
