"""DP-FERMI's hard histogram rows kept as indices (UnitRows) and W's host best response.

The dual release of ``lr_dual="auto"`` with ``dual_rates="hard"`` sums rows that are a
unit vector or zero by construction; :class:`UnitRows` declares their norms instead of
computing them. These tests derive the bound (one row moves the sum by at most 1 =
``dual_clip``) and check it on adversarial model outputs, and check that the engine's
clip and sum give what they give on the dense rows.
"""

import math

import numpy as np
import pytest
import torch

from skfairdp.engine.clipping import UnitRows, clipped_total
from skfairdp.fermi import best_response
from skfairdp.fermi.problem import ErmiProblem, balanced_rescale, penalty_scale_max


def _problem(n_blocks=1):
    pinv = torch.tensor([[1 / math.sqrt(0.3), 1 / math.sqrt(0.7)]] * n_blocks)
    W = torch.zeros(n_blocks, 2, 2)
    return ErmiProblem(
        W=W, pinv=pinv, fairness_weight=3.0, dual_bound=10.0, lr_dual=0.0,
        privacy_unit="record", dual_rate=0.1, dual_rates="hard",
    )  # fmt: skip


ADVERSARIAL = torch.tensor(
    [
        [0.0, 0.0],  # a tie
        [float("nan"), 1.0],
        [float("inf"), float("-inf")],
        [float("inf"), float("inf")],
        [3.4e38, -3.4e38],
        [-1e-45, 1e-45],
        [float("nan"), float("nan")],
        [1.0, 2.0],
    ]
)


@pytest.mark.parametrize("n_blocks", [1, 2])
def test_hard_histogram_rows_are_unit_or_zero_on_adversarial_outputs(n_blocks):
    """Whatever the logits (NaN, infinite, huge, tied), each row is one entry 1 (active) or
    zero, its declared norm is its norm, and removing any row moves the batch's clipped
    sum by exactly that norm: at most 1, the sensitivity the engine noises for."""
    problem = _problem(n_blocks)
    n = len(ADVERSARIAL)
    gen = torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (n,), generator=gen)
    s = torch.randint(0, 2, (n,), generator=gen)
    block = y if n_blocks == 2 else torch.zeros_like(y)
    weights = torch.full((n, 2), 3.0)
    weights[1] = 0.0  # an inactive row
    batch = problem.prepare_batch(torch.stack([y, s, block], dim=1), weights)
    public, rows = problem.dual_contributions(ADVERSARIAL, *batch)
    assert public is None and isinstance(rows, UnitRows)
    assert problem.dual_clip == 1.0
    dense = rows.dense()
    assert dense.shape == (n, problem.W.numel())
    assert torch.isfinite(dense).all()
    assert set(dense.flatten().tolist()) <= {0.0, 1.0}
    assert ((dense != 0).sum(dim=1) <= 1).all()
    torch.testing.assert_close(dense.norm(dim=1).double(), rows.norms(), rtol=0, atol=0)
    assert float(rows.norms()[1]) == 0.0 and float(rows.norms().max()) == 1.0
    total = clipped_total(rows, problem.dual_clip)
    torch.testing.assert_close(total, dense.sum(0), rtol=0, atol=0)
    for i in range(n):  # add/remove one row: the sum moves by that row, norm <= 1
        keep = torch.arange(n) != i
        without = UnitRows(rows.column[keep], rows.active[keep], rows.n_columns)
        moved = float((total - clipped_total(without, problem.dual_clip)).norm())
        assert moved == float(rows.norms()[i]) <= problem.dual_clip


@pytest.mark.parametrize("max_norm", [0.25, 1.0, 3.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_clipped_total_of_unit_rows_is_that_of_the_dense_rows(max_norm, weighted):
    """The engine's clip and (weighted) sum on UnitRows equal those on the dense rows:
    a clip below 1 scales each row down to it, weights multiply after clipping."""
    gen = torch.Generator().manual_seed(1)
    n, p = 200, 8
    rows = UnitRows(torch.randint(0, p, (n,), generator=gen), torch.rand(n, generator=gen) < 0.8, p)
    weights = torch.rand(n, generator=gen, dtype=torch.float64) if weighted else None
    got = clipped_total(rows, max_norm, weights)
    expected = clipped_total(rows.dense(), max_norm, weights)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    if max_norm < 1.0:  # every active row was clipped: contributions of norm max_norm
        assert float(got.sum()) == pytest.approx(max_norm * float(rows.active.sum()) * (
            1.0 if weights is None else float((weights * rows.active).sum()) / float(
                rows.active.sum())
        ), rel=1e-5)  # fmt: skip


def test_unit_rows_reject_other_dtypes():
    with pytest.raises(TypeError, match="integer columns and a boolean"):
        UnitRows(torch.zeros(3), torch.ones(3, dtype=torch.bool), 4)
    with pytest.raises(TypeError, match="integer columns and a boolean"):
        UnitRows(torch.zeros(3, dtype=torch.int64), torch.ones(3), 4)


@pytest.mark.parametrize("shape", [(1, 2, 2), (2, 2, 2), (1, 3, 2), (2, 4, 3)])
@pytest.mark.parametrize("variance", [0.0, 1e-4, 10.0])
def test_small_best_response_is_the_numpy_one(shape, variance):
    """The Python-float path of a small W and the NumPy path give the same float64 numbers
    (W and its psi tables), on noisy histograms with negative cells and empty columns."""
    rng = np.random.default_rng(2)
    for _ in range(20):
        H = rng.normal(0.1, 0.2, size=shape)
        H[..., 0] = np.where(rng.random(shape[:2]) < 0.2, -0.1, H[..., 0])  # empty-ish
        pinv = 1.0 / np.sqrt(rng.dirichlet(np.ones(shape[1]), size=shape[0]))
        W = best_response.shrunk_best_response(H, variance, pinv)
        tables = best_response.psi_tables(W, pinv)
        small = best_response.shrunk_best_response_small(H.tolist(), variance, pinv.tolist())
        for got, expected in zip(small, (W, *tables)):
            np.testing.assert_allclose(got, expected.reshape(-1), rtol=1e-12, atol=1e-15)


def test_host_best_response_step_answers_the_bias_corrected_mean():
    """One step: W is the shrunk best response to H / (1 - (1 - beta)), in float32."""
    H = torch.tensor([[[0.30, 0.21], [0.09, 0.40]], [[0.05, 0.0], [0.2, -0.01]]])
    pinv = torch.tensor([[1.4, 1.7], [1.2, 2.1]])
    problem = ErmiProblem(
        W=torch.zeros(2, 2, 2), pinv=pinv, fairness_weight=1.0, dual_bound=10.0,
        lr_dual=0.0, privacy_unit="record", dual_rate=0.05, dual_noise_std=0.02,
    )  # fmt: skip
    problem.dual_step(H.reshape(-1))
    beta = 0.05
    mean = (beta * H) / (1 - (1 - beta))  # the bias-corrected mean after one step
    variance = (beta * 0.02) ** 2 / (1 - (1 - beta)) ** 2
    expected = best_response.shrunk_best_response(
        mean.double().numpy(), variance, pinv.double().numpy()
    )
    torch.testing.assert_close(problem.W, torch.from_numpy(expected).float(), rtol=1e-6, atol=1e-7)
    own, shared, combined = problem._psi_tables()
    c = own + shared.repeat_interleave(2, dim=0)
    torch.testing.assert_close(combined, c, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("penalty_clip", ["balanced", "split"])
def test_packed_balanced_factors_are_the_per_batch_ones(penalty_clip):
    """The estimator packs the balanced clip's factor per row (a third weights column); the
    split clip then uses exactly the factors it would compute per batch, all in (0, 1] (so
    each row's penalty clip stays within share * C); other clips ignore the column."""
    gen = torch.Generator().manual_seed(3)
    pinv = torch.tensor([[1 / math.sqrt(0.2), 1 / math.sqrt(0.8)]])
    label_weights = np.array([0.7, 1.3])
    scale_max = penalty_scale_max(4.0, label_weights, pinv)
    kw = dict(
        pinv=pinv, fairness_weight=4.0, dual_bound=10.0, lr_dual=0.0, privacy_unit="record",
        dual_rate=0.1, penalty_clip=penalty_clip, max_grad_norm=1.0, penalty_scale_max=scale_max,
    )  # fmt: skip
    n = 64
    y = torch.randint(0, 2, (n,), generator=gen)
    s = torch.randint(0, 2, (n,), generator=gen)
    codes = torch.stack([y, s, torch.zeros_like(s)], dim=1)
    weight = 4.0 * torch.as_tensor(label_weights, dtype=torch.float32)[y]
    weight[:4] = 0.0
    weights = torch.stack([weight, torch.full((n,), 4.0)], dim=1)
    plain = ErmiProblem(W=torch.zeros(1, 2, 2), **kw)
    batch = plain.prepare_batch(codes, weights)
    expected = plain._penalty_rescale(*batch[1:4])
    packed_f = balanced_rescale(pinv, s, codes[:, 2], weight, scale_max)
    assert float(packed_f.max()) <= 1.0 and float(packed_f.min()) > 0.0
    packed = ErmiProblem(W=torch.zeros(1, 2, 2), **kw)
    batch = packed.prepare_batch(codes, torch.cat([weights, packed_f.unsqueeze(1)], dim=1))
    got = packed._penalty_rescale(*batch[1:4])
    assert torch.equal(got, expected)
    if penalty_clip == "balanced":
        assert got is batch_factor(packed) and not torch.equal(got, torch.ones(n))


def batch_factor(problem):
    return problem._rescale_cache[3]
