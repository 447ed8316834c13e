"""The fused clipped sum of a step's private objectives (issue 39, :mod:`skfairdp.engine.fused`).

One Linear layer's clipped, weighted per-sample gradients of several objectives are
summed with one product; each sample's clip must stay exactly what it was. Checked
against per-sample gradients from autograd (a loop over samples) clipped in float64,
against :func:`clipped_total` objective by objective, and on DP-FERMI's split clip
(same privacy event, parameters within float32 rounding of the unfused step).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_biased_data

import skfairdp.engine.step as step_module
from skfairdp import DPFermiClassifier
from skfairdp.engine.clipping import UnitRows, clip_factors, clipped_total
from skfairdp.engine.fused import clipped_totals
from skfairdp.engine.per_sample import PerSampleGradients
from skfairdp.fermi import linear_step


def _objectives(outputs, y, c):
    """Two per-sample objectives of the logits: cross-entropy and a smooth penalty."""
    loss = torch.nn.functional.cross_entropy(outputs, y, reduction="none")
    penalty = (torch.softmax(outputs, dim=1) * c).sum(dim=1) * 40.0
    return (loss, penalty), {}


def _problem(n=97, d=6, classes=3, seed=0, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    module = torch.nn.Linear(d, classes)
    X = torch.randn(n, d, generator=generator) * scale
    y = torch.randint(0, classes, (n,), generator=generator)
    c = torch.randn(n, classes, generator=generator)
    return module, X, y, c


def _autograd_rows(module, X, y, c):
    """Per-sample flat gradients of each objective, by autograd one sample at a time."""
    rows = [[], []]
    for i in range(len(X)):
        objectives, _ = _objectives(module(X[i : i + 1]), y[i : i + 1], c[i : i + 1])
        for k, objective in enumerate(objectives):
            grads = torch.autograd.grad(
                objective.sum(), list(module.parameters()), retain_graph=k == 0
            )
            rows[k].append(torch.cat([g.reshape(-1) for g in grads]))
    return [torch.stack(r).double() for r in rows]


def _reference(rows, clips):
    """``sum_k sum_i w_ki min(1, C_k / |g_ki|) g_ki`` in float64."""
    total = 0.0
    for g, (max_norm, weights) in zip(rows, clips):
        factors = max_norm / g.norm(dim=1).clamp(min=max_norm)
        if weights is not None:
            factors = factors * weights.double()
        total = total + factors @ g
    return total


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scale", [1.0, 50.0])
def test_fused_sum_is_the_clipped_sum_of_autograd_per_sample_gradients(weighted, scale):
    module, X, y, c = _problem(scale=scale)
    grads, _, _ = PerSampleGradients(module, "linear")(X, _objectives, y, c)
    weights = torch.rand(len(X), generator=torch.Generator().manual_seed(1)) if weighted else None
    clips = [(0.7, None), (0.3, weights)]
    fused = clipped_totals(grads, clips)
    reference = _reference(_autograd_rows(module, X, y, c), clips)
    assert fused.dtype == torch.float32
    torch.testing.assert_close(fused.double(), reference, rtol=2e-6, atol=2e-6)
    # objective by objective (the unfused path): the same sum up to float32 rounding
    unfused = clipped_total(grads[0], *clips[0]) + clipped_total(grads[1], *clips[1])
    torch.testing.assert_close(fused, unfused, rtol=1e-6, atol=1e-6)


def test_fused_clips_each_objective_at_its_own_norm():
    """Each sample's contribution per objective is within its own clip: swapping the two
    clips, or dropping the weights, moves the sum far beyond float32 rounding."""
    module, X, y, c = _problem(scale=50.0)
    grads, _, _ = PerSampleGradients(module, "linear")(X, _objectives, y, c)
    weights = torch.rand(len(X), generator=torch.Generator().manual_seed(2))
    fused = clipped_totals(grads, [(0.9, None), (0.1, weights)])
    swapped = _reference(_autograd_rows(module, X, y, c), [(0.1, None), (0.9, weights)])
    unweighted = _reference(_autograd_rows(module, X, y, c), [(0.9, None), (0.1, None)])
    assert (fused.double() - swapped).abs().max() > 1e-2
    assert (fused.double() - unweighted).abs().max() > 1e-2


def test_one_objective_is_clipped_totals_bits():
    module, X, y, c = _problem()
    grads, _, _ = PerSampleGradients(module, "linear")(X, _objectives, y, c)
    weights = torch.rand(len(X), generator=torch.Generator().manual_seed(3))
    for clip in [(0.5, None), (0.5, weights)]:
        assert torch.equal(clipped_totals(grads[:1], [clip]), clipped_total(grads[0], *clip))


def test_huge_rows_take_the_float64_path():
    """A row whose float32 norm overflows is not tame: objective by objective, bounded."""
    module, X, y, c = _problem()
    X[3] = 3e38
    grads, _, _ = PerSampleGradients(module, "linear")(X, _objectives, y, c)
    clips = [(0.7, None), (0.3, None)]
    fused = clipped_totals(grads, clips)
    assert torch.isfinite(fused).all()
    assert torch.equal(
        fused, clipped_total(grads[0], *clips[0]).add_(clipped_total(grads[1], *clips[1]))
    )


@pytest.mark.parametrize("max_norm", [1.0, 2.5, 0.5])
@pytest.mark.parametrize("weighted", [False, True])
def test_unit_rows_skip_no_clip(max_norm, weighted):
    """Unit rows at a clip >= 1: the shortcut gives the general path's bits (below 1,
    the general path itself clips)."""
    generator = torch.Generator().manual_seed(4)
    rows = UnitRows(
        torch.randint(0, 8, (200,), generator=generator),
        torch.rand(200, generator=generator) > 0.2,
        8,
    )
    weights = torch.rand(200, generator=generator) * 3 if weighted else None
    factors = clip_factors(rows.norms(), max_norm)
    general = rows.weighted_sum(factors if weights is None else factors * weights.double())
    assert torch.equal(clipped_total(rows, max_norm, weights), general)
    row_weights = torch.ones(200) if weights is None else weights
    dense = min(1.0, max_norm) * row_weights.double() @ rows.dense().double()
    torch.testing.assert_close(general.double(), dense, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("penalty_clip", ["balanced", "split"])
def test_dpfermi_split_clip_fused_and_unfused_agree(penalty_clip, monkeypatch):
    X, y, s = make_biased_data(n=500, n_features=5)

    def fit():
        return DPFermiClassifier(
            max_epochs=3, batch_size=64, lr=0.5, penalty_clip=penalty_clip, random_state=0
        ).fit(X, y, sensitive_features=s)

    calls = []
    # the engine's step (the linear step has its own fused sum; test_linear_step.py)
    monkeypatch.setattr(linear_step, "ENABLED", False)
    fused_clips = step_module._fused_clips
    monkeypatch.setattr(step_module, "_fused_clips", lambda *a: calls.append(1) or fused_clips(*a))
    fused = fit()
    assert calls  # the fused path ran
    monkeypatch.setattr(step_module, "_fused_clips", lambda *a: None)
    unfused = fit()
    assert fused.dp_event_ == unfused.dp_event_
    for p, q in zip(fused.module_.parameters(), unfused.module_.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused.predict_proba(X), unfused.predict_proba(X), atol=1e-5)
