"""The engine's fast ("tame") path: same numbers as the float64 path, fewer kernels.

A batch whose float32 per-sample norms are all finite and below ``TAME_NORM`` keeps
float32 arithmetic end to end (norms, clip factors, sums); these tests pin down that
this changes how the clipped sum is computed, not what it is, and that the checks
deciding it are one reduction and one host read each.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from skfairdp.engine import PerSampleGradients, clipped_sum
from skfairdp.engine.clipping import TAME_NORM, ScaledRows, clip_factors, clipped_total
from skfairdp.engine.per_sample import finite_outputs

F32_MAX = float(np.finfo(np.float32).max)


def _rows(n=9, p=5, seed=0, scale=3.0):
    return scale * torch.randn(n, p, generator=torch.Generator().manual_seed(seed))


def _by_hand(outputs, y):
    F_ = torch.softmax(outputs, dim=1)
    grad = F_.scatter_add(1, y.unsqueeze(1), F_.new_full((len(y), 1), -1.0))
    return (grad,), {}


def _cross_entropy(outputs, y):
    loss = F.cross_entropy(outputs, y, reduction="none")
    return (loss,), {}


def _linear_grads(seed=0, n=11, d=4, by_hand=True, scale=2.0):
    torch.manual_seed(seed)
    module = nn.Linear(d, 3)
    X = scale * torch.randn(n, d)
    y = torch.randint(0, 3, (n,))
    grads_of = PerSampleGradients(module, "linear")
    try:
        grads, _, _ = grads_of(X, _cross_entropy, y, output_gradients=_by_hand if by_hand else None)
    finally:
        grads_of.close()
    return grads[0]


def _float64_route(per_sample, C, weights=None):
    """The clipped sum with clip factors from the float64 norms (the reference route)."""
    factors = clip_factors(per_sample.norms(), C)
    if weights is not None:
        factors = factors * weights.double()
    return per_sample.weighted_sum(factors)


@pytest.mark.parametrize("C", [1.0, 0.5, 3.0, 2.0**-3, 7.25])
@pytest.mark.parametrize("weighted", [False, True])
def test_tame_rows_clip_like_the_float64_route_bit_for_bit(C, weighted):
    """For a C that float32 represents, float32 factors are float64 factors rounded."""
    weights = torch.rand(9, generator=torch.Generator().manual_seed(3)) if weighted else None
    rows = _rows()
    g = ScaledRows(rows)
    assert g.tame_norms() is not None and g.tame_norms().dtype == torch.float32
    reference = _float64_route(ScaledRows(rows), C, weights)
    assert torch.equal(clipped_total(rows, C, weights), reference)
    total, norms = clipped_sum(rows, C, weights)
    assert norms.dtype == torch.float64
    assert torch.equal(norms, torch.linalg.vector_norm(rows, dim=1).double())
    assert torch.equal(total, clipped_total(rows, C, weights))


@pytest.mark.parametrize("by_hand", [True, False])
@pytest.mark.parametrize("C", [1.0, 0.25, 5.0])
def test_tame_factored_gradients_clip_like_the_float64_route_bit_for_bit(by_hand, C):
    g = _linear_grads(by_hand=by_hand)
    assert g.tame_norms() is not None
    fast = clipped_total(g, C)
    reference = _float64_route(_linear_grads(by_hand=by_hand), C)
    assert torch.equal(fast, reference)
    assert g.norms().dtype == torch.float64
    assert torch.equal(g.norms(), g.tame_norms().double())


def test_huge_and_non_finite_rows_leave_the_tame_path():
    rows = _rows()
    rows[2, 0] = 2e19  # float32 norm finite but >= TAME_NORM
    assert ScaledRows(rows).tame_norms() is None
    rows = _rows()
    rows[4, 1] = float("nan")
    g = ScaledRows(rows)
    assert g.tame_norms() is None and g.norms()[4] == 0
    # a row exactly at the threshold is not tame either
    rows = torch.zeros(3, 2)
    rows[0, 0] = TAME_NORM
    assert ScaledRows(rows).tame_norms() is None


@pytest.mark.parametrize("C", [1e39, 1e-30])
def test_clip_norms_float32_cannot_hold_take_the_float64_factors(C):
    """C beyond float32's range (or so small that C / norm would be subnormal)."""
    rows = _rows(scale=1.0)
    total = clipped_total(rows, C)
    assert torch.equal(total, _float64_route(ScaledRows(rows), C))
    if C > 1:
        torch.testing.assert_close(total, rows.sum(0))  # nothing is clipped


def test_finite_outputs_fast_check():
    outputs = torch.randn(6, 3)
    assert finite_outputs(outputs) is outputs
    # finite entries whose sum overflows: the exact row test keeps them all
    huge = torch.tensor([[F32_MAX, F32_MAX], [F32_MAX, 1.0]])
    assert torch.equal(finite_outputs(huge), huge)
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.randn(4, 2)
        x[1, 0] = bad
        out = finite_outputs(x)
        assert torch.equal(out[1], torch.zeros(2))
        assert torch.equal(out[[0, 2, 3]], x[[0, 2, 3]])
    # with gradients: the check does not enter the graph, the finite rows keep theirs
    z = torch.randn(3, 2, requires_grad=True)
    finite_outputs(z).sum().backward()
    assert torch.equal(z.grad, torch.ones(3, 2))


class _TiedLayers(nn.Module):
    """Two Linear layers sharing one weight: that weight's gradient sums two outer products."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.second = nn.Linear(4, 4)
        self.second.weight = self.first.weight
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        return self.head(torch.tanh(self.second(torch.tanh(self.first(x)))))


def test_a_weight_shared_by_two_layers_is_not_factored_per_layer():
    torch.manual_seed(0)
    module = _TiedLayers()
    X = torch.randn(6, 4)
    y = torch.randint(0, 3, (6,))
    params = [p for p in module.parameters() if p.requires_grad]
    reference = []
    for i in range(6):
        loss = F.cross_entropy(module(X[i : i + 1]), y[i : i + 1])
        reference.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)]))
    reference = torch.stack(reference)
    grads_of = PerSampleGradients(module, "linear")
    try:
        (g,), _, _ = grads_of(X, _cross_entropy, y)
    finally:
        grads_of.close()
    assert not g.simple
    torch.testing.assert_close(g.dense(), reference, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(g.norms(), reference.norm(dim=1).double(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(clipped_sum(g, 0.1)[0], clipped_sum(reference, 0.1)[0])


class _Reads(TorchDispatchMode):
    """Counts host reads and float64 results of the aten ops run inside it."""

    def __init__(self):
        super().__init__()
        self.host_reads = 0
        self.float64 = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.ops.aten._local_scalar_dense.default:
            self.host_reads += 1
        results = out if isinstance(out, (tuple, list)) else (out,)
        if any(isinstance(r, torch.Tensor) and r.dtype == torch.float64 for r in results):
            self.float64.append(str(func))
        return out


def test_a_tame_private_step_reads_the_host_three_times_and_forms_one_float64_norm():
    """Outputs' finiteness, the primal tame check and the dual tame check: one read each.
    The only float64 result is the output gradients' row norms (B values: a float32 square
    of 2e-23 underflows to 0 beside an input of 1e19), cast back to float32."""
    from skfairdp.engine import NoiseConfig
    from skfairdp.engine.step import release
    from skfairdp.fermi.problem import ErmiProblem
    from skfairdp.privacy import EventRecorder, RandomSource

    torch.manual_seed(0)
    module = nn.Linear(5, 2)
    problem = ErmiProblem(
        W=torch.zeros(1, 2, 2),
        pinv=torch.full((1, 2), 2.0**0.5),
        fairness_weight=1.0,
        dual_bound=3.0,
        lr_dual=0.05,
        privacy_unit="record",
    )
    n = 32
    X = torch.randn(n, 5)
    codes = torch.stack(
        [torch.randint(0, 2, (n,)), torch.randint(0, 2, (n,)), torch.zeros(n, dtype=torch.long)],
        dim=1,
    )
    batch = problem.prepare_batch(codes, torch.ones(n, 2))
    noise = NoiseConfig(max_grad_norm=1.0, primal_multiplier=1.0, dual_multiplier=2.0)
    grads_of = PerSampleGradients(module)
    recorder = EventRecorder()
    try:
        for _ in range(2):  # the first call learns that the module is one layer
            with _Reads() as reads, recorder.batch(0.1):
                released = release(
                    module, grads_of, X, batch, problem, noise, RandomSource(0), recorder, 3.2
                )
    finally:
        grads_of.close()
    assert released.dual is not None
    assert reads.host_reads == 3
    assert reads.float64 == ["aten.linalg_vector_norm.default"]
