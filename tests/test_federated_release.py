"""The local backend's shared clipping: each silo's sums are its own rows' (federated.release).

``clipped_sums`` computes all silos' per-sample gradients in one pass and, when every
row is tame, their norms and clip factors once; each silo's sum must still be exactly
what it would release alone (its rows, its clip), checked here against the silo alone
and against per-row autograd clipped by hand in float64.
"""

import numpy as np
import pytest
import torch

from skfairdp.engine import PerSampleGradients
from skfairdp.engine.clipping import clipped_total
from skfairdp.federated import objective, release
from skfairdp.federated.release import SiloBatch, clipped_sums

LAM, N_FEATURES = 2.0, 5


def _problem(privacy_unit):
    return objective.make_problem(
        W=torch.tensor([[[0.9, -0.4], [0.2, 1.3]]]),
        pinv=torch.tensor([[1.2, 1.6]]),
        fairness="demographic_parity",
        fairness_weight=LAM,
        privacy_unit=privacy_unit,
        private=True,
        dual_rates="soft",
    )


def _batches(sizes, clips, dual_clips, huge=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for j, (n, clip, dual_clip) in enumerate(zip(sizes, clips, dual_clips)):
        X = torch.randn(n, N_FEATURES, generator=g) * 3.0
        if huge == j:
            X[1] *= 1e20  # a row whose float32 gradient norm is not tame (> 2^64)
        y = torch.randint(0, 2, (n,), generator=g).numpy()
        s = torch.randint(0, 2, (n,), generator=g).numpy()
        codes, weights = objective.row_tensors("demographic_parity", LAM, y, s, 2, np.ones(2))
        batches.append(SiloBatch(X, codes, weights, clip, dual_clip))
    return batches


def _clip(rows, clip):
    rows = rows.double()
    norms = torch.linalg.vector_norm(rows, dim=1, keepdim=True)
    return (rows * torch.clamp(clip / norms, max=1.0)).sum(0)


def _by_hand(module, problem, batch):
    """Per-row autograd, each private objective's row clipped in float64; W rows likewise."""
    params = [p for p in module.parameters() if p.requires_grad]
    primal = torch.zeros(sum(p.numel() for p in params), dtype=torch.float64)
    for i in range(batch.size):
        prepared = problem.prepare_batch(batch.codes[i : i + 1], batch.weights[i : i + 1])
        objectives, _ = problem.primal_objectives(module(batch.X[i : i + 1]), *prepared)
        for obj, private in zip(objectives, problem.private_primal):
            grads = torch.autograd.grad(obj.sum(), params, retain_graph=True)
            row = torch.cat([g.reshape(-1) for g in grads]).unsqueeze(0)
            primal += _clip(row, batch.max_grad_norm) if private else row.double().sum(0)
    with torch.no_grad():
        prepared = problem.prepare_batch(batch.codes, batch.weights)
        public, rows = problem.dual_contributions(module(batch.X), *prepared)
    dual = _clip(rows, batch.dual_clip) if batch.size else rows.new_zeros(rows.shape[1]).double()
    return primal, dual + (0.0 if public is None else public.double())


@pytest.mark.parametrize("privacy_unit", ["record", "sensitive"])
@pytest.mark.parametrize("hidden", [(), (4,)])
@pytest.mark.parametrize("huge", [None, 2], ids=["tame", "huge-row"])
def test_each_silo_sums_its_own_rows_with_its_own_clip(privacy_unit, hidden, huge):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(N_FEATURES, 2)]
    if hidden:
        layers = [torch.nn.Linear(N_FEATURES, hidden[0]), torch.nn.Tanh()]
        layers.append(torch.nn.Linear(hidden[0], 2))
    module = torch.nn.Sequential(*layers)
    grads_of = PerSampleGradients(module)
    problem = _problem(privacy_unit)
    # different clips per silo (a shared factor computation must not mix them up) and an
    # empty silo (its sums are zero)
    batches = _batches([7, 0, 9, 6], [1.0, 0.7, 0.05, 3.0], [0.6, 1.0, 0.2, 5.0], huge=huge)
    together = clipped_sums(grads_of, problem, batches)
    for batch, (primal, dual) in zip(batches, together):
        ((alone_primal, alone_dual),) = clipped_sums(grads_of, problem, [batch])
        torch.testing.assert_close(primal, alone_primal, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(dual, alone_dual, rtol=1e-6, atol=1e-6)
        exact_primal, exact_dual = _by_hand(module, problem, batch)
        scale = 1.0 + float(exact_primal.abs().max())
        torch.testing.assert_close(primal.double(), exact_primal, rtol=1e-4, atol=1e-5 * scale)
        torch.testing.assert_close(dual.double(), exact_dual, rtol=1e-4, atol=1e-5)
    grads_of.close()


@pytest.mark.parametrize("bad", [3e38, float("nan")], ids=["overflowing-norm", "nan"])
def test_dense_rows_with_an_untame_row_in_one_silo(bad):
    """W-gradient rows (a dense matrix): a row whose float32 norm overflows, or a NaN row,
    in silo 1 sends every silo to its own path; each sum is the silo's alone (the huge
    row clipped to the silo's norm, the NaN row counted as zero).
    """
    g = torch.Generator().manual_seed(1)
    rows = torch.randn(12, 4, generator=g) * 2.0
    rows[6] = bad
    sizes, clips = [5, 4, 3], [1.0, 0.5, 2.0]
    totals = release._silo_totals(rows, clips, release._Segments(sizes, rows.device))
    start = 0
    for size, clip, total in zip(sizes, clips, totals):
        alone = clipped_total(rows[start : start + size], clip)
        torch.testing.assert_close(total, alone, rtol=1e-6, atol=1e-6)
        own = rows[start : start + size].double()  # float64 norms: the huge row's is finite
        expected = _clip(own[torch.isfinite(own).all(dim=1)], clip)
        torch.testing.assert_close(total.double(), expected, rtol=1e-5, atol=1e-6)
        start += size
