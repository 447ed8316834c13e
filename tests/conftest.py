"""Shared fixtures and helpers of the test suite."""

import logging

import numpy as np
import pytest
import sklearn
import torch

# dp-accounting logs convergence warnings through absl; they are noise in tests.
logging.getLogger("absl").setLevel(logging.ERROR)
# The tests train tiny models, for which intra-op threading costs more than it
# saves (the suite runs ~1.6x faster on 2 cores with one thread).
torch.set_num_threads(1)


def make_biased_data(n=400, seed=0, n_features=3, strength=1.5):
    """Binary task whose label correlates with a binary group ``s``.

    ``s`` shifts the first feature, and ``y`` thresholds that feature, so an
    unconstrained classifier has a large demographic-parity gap.
    """
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, n_features))
    X[:, 0] += strength * s
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > strength / 2).astype(np.int64)
    return X.astype(np.float32), y, s


def make_tradeoff_data(n=400, seed=0):
    """Binary task whose label depends on a group proxy ``X[:, 0]`` and on ``X[:, 1]``.

    Unconstrained, a classifier leans on the proxy (large demographic-parity
    gap); a fair one can shift weight to ``X[:, 1]`` and stay accurate, so the
    violation falls gradually with the fairness weight instead of collapsing.
    """
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 1.5 * s
    y = (X[:, 1] + X[:, 0] - 0.75 + 0.3 * rng.normal(size=n) > 0).astype(np.int64)
    return X.astype(np.float32), y, s


@pytest.fixture
def biased_data():
    return make_biased_data()


@pytest.fixture
def small_data():
    """100 rows, binary label, two balanced-ish groups."""
    return make_biased_data(n=100, seed=1, strength=1.0)


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield
