"""One row's contribution is bounded by its clip norm for every finite input.

The hole this guards against: a feature of 2e19 (a valid float32) made a
per-sample gradient norm overflow, its clip factor 0 * inf = NaN, and the whole
model NaN while ``privacy_spent_`` still said epsilon = 1. Property tests feed
values up to float32's maximum through every per-sample path (Linear fast path
with and without hand-written output gradients, MLPs, vmap, non-simple layers),
through the estimators' own ``private_sum`` hooks and dual rows, and check the
sum's sensitivity directly: removing one row moves the clipped sum by at most C.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_biased_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from skfairdp import (
    DPFermiClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    GlobalScalingDPClassifier,
    RaCODPClassifier,
)
from skfairdp.baselines.dpsgdf import DPSGDFProblem
from skfairdp.dpsgd.global_scaling import GlobalScalingProblem, scaling_weights
from skfairdp.engine import PerSampleGradients, clipped_sum
from skfairdp.engine.loop import check_finite_parameters
from skfairdp.engine.per_sample import DenseGradients, finite_outputs
from skfairdp.fermi import ermi
from skfairdp.privacy import RandomSource
from skfairdp.raco.problem import soft_histogram

F32_MAX = float(np.finfo(np.float32).max)
# float32 rounding of a sum of B rows, each within C: a relative slack far below any
# privacy-relevant change, and far below the factor-of-inf failures it guards against.
REL = 1e-5

finite_f32 = st.floats(
    min_value=-F32_MAX, max_value=F32_MAX, allow_nan=False, allow_infinity=False, width=32
)
moderate = st.floats(min_value=-3.0, max_value=3.0, width=32)
value = st.one_of(finite_f32, moderate, st.sampled_from([0.0, 2e19, -2e19, F32_MAX, -F32_MAX]))


def _batch(draw_rows, d):
    return torch.tensor(np.array(draw_rows, dtype=np.float32).reshape(-1, d))


class _SharedLayer(nn.Module):
    """A Linear applied twice: the non-simple (materialised) factored path."""

    def __init__(self, d):
        super().__init__()
        self.inner = nn.Linear(d, d)
        self.out = nn.Linear(d, 2)

    def forward(self, x):
        return self.out(torch.tanh(self.inner(torch.tanh(self.inner(x)))))


def _module(kind, d):
    torch.manual_seed(0)
    if kind == "linear":
        return nn.Linear(d, 2)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(d, 4), nn.ReLU(), nn.Linear(4, 2))
    if kind == "tanh":
        return nn.Sequential(nn.Linear(d, 3), nn.Tanh(), nn.Linear(3, 2))
    return _SharedLayer(d)


def _cross_entropy(outputs, y):
    loss = nn.functional.cross_entropy(outputs, y, reduction="none")
    return (loss,), {"loss": loss}


def _cross_entropy_by_hand(outputs, y):
    F = torch.softmax(outputs, dim=1)
    grad = F.scatter_add(1, y.unsqueeze(1), F.new_full((len(y), 1), -1.0))
    return (grad,), {"loss": -torch.log_softmax(outputs, 1).gather(1, y.unsqueeze(1))[:, 0]}


def _grads(module, strategy, X, y, by_hand):
    grads_of = PerSampleGradients(module, strategy)
    try:
        grads, _, _ = grads_of(
            X, _cross_entropy, y, output_gradients=_cross_entropy_by_hand if by_hand else None
        )
    finally:
        grads_of.close()
    return grads[0]


def _assert_sensitivity(total_with, total_without, C):
    assert torch.isfinite(total_with).all() and torch.isfinite(total_without).all()
    diff = torch.linalg.vector_norm(total_with.double() - total_without.double())
    assert diff <= C * (1 + REL) + 1e-30, (float(diff), C)


PATHS = [
    ("linear", "linear", True),
    ("linear", "linear", False),
    ("linear", "vmap", False),
    ("mlp", "linear", True),
    ("mlp", "linear", False),
    ("mlp", "vmap", False),
    ("tanh", "linear", True),
    ("shared", "linear", False),
]


@pytest.mark.parametrize("kind,strategy,by_hand", PATHS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), C=st.floats(min_value=1e-3, max_value=1e3))
def test_clipped_sum_sensitivity_holds_up_to_float32_max(kind, strategy, by_hand, data, C):
    d = data.draw(st.integers(1, 4))
    B = data.draw(st.integers(2, 6))
    X = _batch(data.draw(st.lists(value, min_size=B * d, max_size=B * d)), d)
    y = torch.tensor(data.draw(st.lists(st.integers(0, 1), min_size=B, max_size=B)))
    i = data.draw(st.integers(0, B - 1))
    module = _module(kind, d)
    keep = torch.tensor([j for j in range(B) if j != i])
    g_all = _grads(module, strategy, X, y, by_hand)
    g_rest = _grads(module, strategy, X[keep], y[keep], by_hand)
    total, norms = clipped_sum(g_all, C)
    rest, _ = clipped_sum(g_rest, C)
    assert norms.dtype == torch.float64 and torch.isfinite(norms).all()
    _assert_sensitivity(total, rest, C)
    # and each row's own contribution is within C
    factors = C / norms.clamp(min=C)
    for j in range(B):
        one = g_all.weighted_sum(factors * (torch.arange(B) == j))
        assert torch.linalg.vector_norm(one.double()) <= C * (1 + REL)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), C=st.floats(min_value=1e-3, max_value=1e3))
def test_raw_rows_with_nan_inf_and_huge_entries(data, C):
    """Tensor rows (dual rows, FairLens): non-finite rows count as zero, huge ones clip."""
    P = data.draw(st.integers(1, 5))
    B = data.draw(st.integers(1, 6))
    entries = st.one_of(value, st.sampled_from([np.nan, np.inf, -np.inf]))
    rows = _batch(data.draw(st.lists(entries, min_size=B * P, max_size=B * P)), P)
    total, norms = clipped_sum(rows, C)
    assert torch.isfinite(total).all()
    for i in range(B):
        keep = torch.tensor([j for j in range(B) if j != i], dtype=torch.long)
        _assert_sensitivity(total, clipped_sum(rows[keep], C)[0], C)
    bad = ~torch.isfinite(rows).all(dim=1)
    assert torch.all(norms[bad] == 0)


def test_the_audit_canary_row_is_clipped_not_nan():
    """The audit's case: output gradient exactly 0 on a row with a feature of 2e19."""
    layer = nn.Linear(3, 2)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]))
        layer.bias.zero_()
    X = torch.tensor([[2e19, 0.0, 0.0], [0.5, 1.0, -1.0]])
    y = torch.tensor([0, 1])  # row 0 is predicted with probability 1: its gradient is exactly 0
    g = _grads(layer, "linear", X, y, by_hand=True)
    total, norms = clipped_sum(g, 1.0)
    assert torch.isfinite(total).all() and torch.isfinite(norms).all()
    assert norms[0] == 0.0


@settings(max_examples=40, deadline=None)
@given(data=st.data(), variant=st.sampled_from(["adapt", "global", "clip"]))
def test_global_scaling_and_dpsgdf_hooks_stay_within_their_sensitivity(data, variant):
    d, B = 2, data.draw(st.integers(2, 5))
    X = _batch(data.draw(st.lists(value, min_size=B * d, max_size=B * d)), d)
    y = torch.tensor(data.draw(st.lists(st.integers(0, 1), min_size=B, max_size=B)))
    groups = torch.tensor(data.draw(st.lists(st.integers(0, 1), min_size=B, max_size=B)))
    z = data.draw(st.floats(min_value=1e-3, max_value=1e3))
    g = _grads(_module("mlp", d), "linear", X, y, by_hand=False)
    norms = g.norms()
    assert torch.isfinite(norms).all()

    def assert_rows_within(weights, bound):
        for j in range(B):
            one = g.weighted_sum(weights * (torch.arange(B) == j))
            assert torch.isfinite(one).all()
            assert torch.linalg.vector_norm(one.double()) <= bound * (1 + REL)

    # GlobalScaling's per-row factors, as its private_sum applies them
    assert_rows_within(scaling_weights(norms, z, 1.0, variant), 1.0)
    gs = GlobalScalingProblem(
        variant=variant,
        max_grad_norm=1.0,
        z_init=z,
        z_lr=0.1,
        z_threshold=1.0,
        count_noise_std=1.0,
        expected_batch_size=B,
        random=RandomSource(0),
    )
    total, sensitivity = gs.private_sum(g, X)[:2]
    assert torch.isfinite(total).all() and sensitivity == 1.0
    assert torch.linalg.vector_norm(total.double()) <= B * (1 + REL)
    # DPSGDF: per-group clip bounds from noisy counts; each row within the largest
    f = DPSGDFProblem(max_grad_norm=1.0, n_groups=2, count_noise_std=1.0, random=RandomSource(0))
    total, sensitivity = f.private_sum(g, X, y, groups)
    assert torch.isfinite(total).all()
    limit = f.bounds_log[-1].to(norms.dtype)[groups]
    assert_rows_within((limit / (norms + 1e-12)).clamp(max=1.0), sensitivity)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_batch_statistics_and_dual_rows_are_bounded(data):
    """RaCO's histogram row sums to 1 and DP-FERMI's W rows stay finite for any outputs."""
    B = data.draw(st.integers(1, 6))
    entries = st.one_of(value, st.sampled_from([np.nan, np.inf, -np.inf]))
    outputs = finite_outputs(
        _batch(data.draw(st.lists(entries, min_size=2 * B, max_size=2 * B)), 2)
    )
    assert torch.isfinite(outputs).all()
    parts = torch.zeros(B, dtype=torch.long)
    H = soft_histogram(torch.softmax(outputs, 1), parts, 1)
    torch.testing.assert_close(H.sum(), torch.tensor(float(B)))
    W = torch.zeros(1, 2, 2)
    pinv = torch.full((1, 2), 2.0**0.5)
    s = torch.tensor(data.draw(st.lists(st.integers(0, 1), min_size=B, max_size=B)))
    rows = ermi.w_gradient_rows(
        torch.softmax(outputs, 1), W, pinv, s, torch.zeros(B, dtype=torch.long), torch.ones(B)
    )
    assert torch.isfinite(rows).all()
    assert torch.isfinite(clipped_sum(rows, 1.0)[0]).all()


def _fit_kwargs(est, s):
    return {} if isinstance(est, GlobalScalingDPClassifier) else {"sensitive_features": s}


@pytest.mark.parametrize("extreme", [2e19, -2e19, F32_MAX])
@pytest.mark.parametrize(
    "make",
    [
        lambda: DPFermiClassifier(fairness_weight=1.0),
        lambda: DPFermiClassifier(fairness_weight=1.0, hidden_layer_sizes=(4,)),
        lambda: DPFermiClassifier(fairness_weight=1.0, privacy_unit="sensitive"),
        lambda: RaCODPClassifier(),
        lambda: GlobalScalingDPClassifier(variant="adapt"),
        lambda: GlobalScalingDPClassifier(variant="clip"),
        lambda: DPSGDFClassifier(),
        lambda: FairLensClassifier(),
    ],
    ids=["fermi", "fermi-mlp", "fermi-sensitive", "raco", "adapt", "clip", "dpsgdf", "fairlens"],
)
def test_every_estimator_stays_finite_with_an_extreme_row(make, extreme, recwarn):
    X, y, s = make_biased_data(n=160, seed=3)
    X = X.copy()
    X[0, 0] = extreme
    est = make().set_params(epsilon=1.0, max_epochs=3, batch_size=40, random_state=0)
    est.fit(X, y, **_fit_kwargs(est, s))
    for p in est.module_.parameters():
        assert torch.isfinite(p).all()
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert np.isfinite(est.predict_proba(X[1:])).all()


def test_non_finite_parameters_raise_instead_of_returning_a_model():
    module = nn.Linear(2, 2)
    check_finite_parameters(module, 1)
    with torch.no_grad():
        module.weight[0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match=r"\['weight'\].*lower lr"):
        check_finite_parameters(module, 3)


def test_dense_gradients_zero_non_finite_rows_and_keep_huge_ones():
    rows = torch.tensor([[np.nan, 1.0], [np.inf, 0.0], [3e38, 3e38], [0.6, 0.8]])
    g = DenseGradients(rows)
    norms = g.norms()
    assert norms[0] == 0 and norms[1] == 0
    assert norms[2] == pytest.approx(3e38 * 2**0.5, rel=1e-6)
    assert norms[3] == pytest.approx(1.0, rel=1e-6)
    dense = g.dense()
    assert torch.equal(dense[:2], torch.zeros(2, 2)) and torch.equal(dense[2:], rows[2:])
    total = g.weighted_sum(1.0 / norms.clamp(min=1.0))
    torch.testing.assert_close(
        total, torch.tensor([2**-0.5 + 0.6, 2**-0.5 + 0.8]), rtol=1e-6, atol=1e-6
    )
