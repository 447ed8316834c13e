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


def count_linear_steps(monkeypatch, step_class):
    """Counts of the steps a dedicated linear step took (True), handed to the engine
    (False), and of the empty batches among them."""
    counts = {True: 0, False: 0, "empty": 0}
    original = step_class.step

    def step(self, idx):
        done = original(self, idx)
        counts[done] += 1
        counts["empty"] += len(idx) == 0
        return done

    monkeypatch.setattr(step_class, "step", step)
    return counts


def spy_linear_step(monkeypatch, step_class):
    """Record what a dedicated linear step (``LinearErmiStep``, ``LinearRacoStep``) sums and
    draws: ``seen``, ``[rows' indices, its clipped logit-gradient rows]`` per step (rows None
    where the engine took it), and ``draws``, ``(shape, std)`` of every Gaussian draw."""
    from skfairdp.privacy import RandomSource

    seen, draws = [], []
    original_rows, original_step = step_class._clipped_rows, step_class.step
    original_normal = RandomSource.normal

    def step(self, idx):
        seen.append([np.asarray(idx), None])
        return original_step(self, idx)

    def clipped_rows(self, *args):
        rows = original_rows(self, *args)
        seen[-1][1] = rows.copy()
        return rows

    def normal(self, shape, std, dtype=torch.float32):
        draws.append((tuple(shape), std))
        return original_normal(self, shape, std, dtype)

    monkeypatch.setattr(step_class, "step", step)
    monkeypatch.setattr(step_class, "_clipped_rows", clipped_rows)
    monkeypatch.setattr(RandomSource, "normal", normal)
    return seen, draws


def check_linear_step_release(est, X, seen, draws, bound):
    """Every summed per-sample contribution ``|b_i| |(a_i, 1)|`` (derived here, in float64,
    from the batch's own rows) is at most ``bound``, and the gradient's noise std is
    ``noise_multiplier_ * bound`` at every step. Returns the parameter count."""
    summed = [(idx, rows) for idx, rows in seen if rows is not None]
    assert summed
    for idx, rows in summed:
        a = X[idx].astype(np.float64)
        r = rows.astype(np.float64)
        norms = np.linalg.norm(r, axis=-1) * np.sqrt((a * a).sum(1) + 1.0)
        assert norms.max() <= bound * (1 + 1e-5), (norms.max(), bound)
    n_params = sum(p.numel() for p in est.module_.parameters())
    gradient_stds = [std for shape, std in draws if shape == (n_params,)]
    assert len(gradient_stds) == est.n_steps_
    assert gradient_stds == pytest.approx([est.noise_multiplier_ * bound] * est.n_steps_)
    return n_params


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
