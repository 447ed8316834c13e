"""DP-FERMI's linear step (skfairdp/fermi/linear_step.py) is the engine's step, bit for bit.

Each seeded fit is run twice, with the dedicated step and with the generic engine
(``linear_step.ENABLED`` off), and must give the same parameters, W, ``dp_event_`` and
``privacy_spent_``. The clipped contributions the step sums are checked against the
sensitivity the test derives from the parameters it sets, and the noise against it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import (
    check_linear_step_release,
    count_linear_steps,
    make_biased_data,
    spy_linear_step,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skfairdp import DPFermiClassifier
from skfairdp.fermi import linear_step
from skfairdp.fermi.linear_step import LinearErmiStep


@pytest.fixture
def taken(monkeypatch):
    """Counts of the steps the linear step took (True) and handed to the engine (False)."""
    return count_linear_steps(monkeypatch, LinearErmiStep)


def _fit(X, y, s, fast, monkeypatch, sample_weight=None, **params):
    monkeypatch.setattr(linear_step, "ENABLED", fast)
    settings_ = dict(epsilon=2.0, delta=1e-5, max_epochs=2, batch_size=64, lr=0.5)
    settings_.update(params)
    est = DPFermiClassifier(**settings_)
    return est.fit(X, y, sensitive_features=s, sample_weight=sample_weight)


def assert_same_fit(a, b, X):
    for p, q in zip(a.module_.parameters(), b.module_.parameters(), strict=True):
        assert torch.equal(p, q)
        assert torch.equal(p.grad, q.grad)  # the last step's gradient, as the engine leaves it
    assert np.array_equal(a.W_, b.W_)
    assert a.dp_event_ == b.dp_event_
    assert a.privacy_spent_ == b.privacy_spent_
    assert a.n_steps_ == b.n_steps_
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))  # NaN == NaN


CONFIGS = {
    "balanced": {},
    "split-lambda-4": dict(penalty_clip="split", fairness_weight=4.0),
    "joint": dict(penalty_clip="joint"),
    "equalized-odds": dict(fairness="equalized_odds"),
    "equal-opportunity": dict(fairness="equal_opportunity", fairness_weight=8.0),
    "large-batch": dict(batch_size=300),
    "last-iterate-adam": dict(iterate="last", optimizer=torch.optim.Adam, lr=0.05),
    "clip-0.3": dict(max_grad_norm=0.3, fairness_weight=16.0),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("config", list(CONFIGS), ids=list(CONFIGS))
def test_linear_step_fits_are_the_engines(config, seed, monkeypatch, taken):
    X, y, s = make_biased_data(n=500, seed=seed, n_features=4)
    params = dict(CONFIGS[config], random_state=seed)
    fast = _fit(X, y, s, True, monkeypatch, **params)
    assert taken[True] == fast.n_steps_  # every step was the linear step's
    engine = _fit(X, y, s, False, monkeypatch, **params)
    assert_same_fit(fast, engine, X)


@pytest.mark.parametrize("penalty_clip", ["balanced", "split", "joint"])
def test_sample_weights_and_three_classes(penalty_clip, monkeypatch, taken):
    """Weighted (float64 clip factors, weighted histogram) with three classes (psi's sum
    over three logits by torch)."""
    rng = np.random.default_rng(3)
    X, _, s = make_biased_data(n=450, seed=3, n_features=3)
    y = rng.integers(0, 3, len(X))
    w = rng.uniform(0.0, 2.0, len(X))
    params = dict(max_sample_weight=2.0, penalty_clip=penalty_clip, random_state=4)
    fast = _fit(X, y, s, True, monkeypatch, sample_weight=w, **params)
    assert taken[True] == fast.n_steps_
    engine = _fit(X, y, s, False, monkeypatch, sample_weight=w, **params)
    assert_same_fit(fast, engine, X)


@pytest.mark.parametrize("wild", [1e25, float(np.finfo(np.float32).max)])
def test_empty_batches_and_wild_rows_take_the_engines_step(wild, monkeypatch, taken):
    """An empty Poisson batch, and a batch holding a row whose gradient norm is not tame
    (above 2^64) or whose outputs are not finite: the engine's step on those rows, the
    same fit."""
    X, y, s = make_biased_data(n=300, seed=2, n_features=3)
    X[7] = wild  # |(a, 1)| ~ 1.7e25 (not tame), or float32's largest (outputs overflow)
    params = dict(batch_size=3, max_epochs=2, random_state=5)  # q = 1 %: P(empty) ~ 5 %
    fast = _fit(X, y, s, True, monkeypatch, **params)
    assert taken["empty"] > 0 and taken[True] > 0
    assert taken[False] > taken["empty"]  # a non-empty batch on the engine's step
    assert taken[True] + taken[False] == fast.n_steps_
    engine = _fit(X, y, s, False, monkeypatch, **params)
    assert_same_fit(fast, engine, X)


@pytest.mark.parametrize(
    "params",
    [
        dict(privacy_unit="sensitive"),
        dict(fairness_weight=0.0),
        dict(dual_rates="soft"),
        dict(lr_dual=0.01),
        dict(hidden_layer_sizes=(4,)),
        dict(epsilon=math.inf),
        dict(record_private_diagnostics=True),
    ],
    ids=["sensitive", "lambda-0", "soft", "ascent", "mlp", "non-private", "diagnostics"],
)
def test_options_it_does_not_cover_take_the_engine(params, monkeypatch, taken):
    X, y, s = make_biased_data(n=200, seed=0, n_features=3)
    with pytest.warns() if params.get("record_private_diagnostics") else _nothing():
        _fit(X, y, s, True, monkeypatch, max_epochs=1, random_state=0, **params)
    assert taken[True] == taken[False] == 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    scale=st.floats(-3.0, 6.0),
    lam=st.sampled_from([0.5, 4.0, 64.0]),
    penalty_clip=st.sampled_from(["balanced", "split", "joint"]),
    clip=st.floats(0.05, 5.0),
    weighted=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_each_clipped_contribution_is_within_the_sensitivity(
    scale, lam, penalty_clip, clip, weighted, seed, monkeypatch
):
    """Row i's contribution to the released gradient sum is ``r_i (a_i, 1)^T`` for the
    combined logit row ``r_i`` the step multiplies by the inputs: its norm, computed here in
    float64 from the batch's own rows, is at most ``C * max_sample_weight`` (the test's
    own values), and the gradient noise the step draws has std ``z * C * max_sample_weight``."""
    rng = np.random.default_rng(seed)
    X, y, s = make_biased_data(n=160, seed=seed % 7, n_features=3)
    X = X * np.float32(10.0**scale) * rng.lognormal(0.0, 2.0, (len(X), 1)).astype(np.float32)
    max_weight = 3.0 if weighted else 1.0
    w = rng.uniform(0.0, max_weight, len(X)) if weighted else None
    bound = clip * max_weight
    seen, draws = spy_linear_step(monkeypatch, LinearErmiStep)
    est = _fit(
        X, y, s, True, monkeypatch, sample_weight=w, fairness_weight=lam, max_grad_norm=clip,
        penalty_clip=penalty_clip, max_sample_weight=max_weight, batch_size=20, max_epochs=1,
        random_state=seed,
    )  # fmt: skip
    check_linear_step_release(est, X, seen, draws, bound)
