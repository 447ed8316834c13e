"""The DP-SGD step's two shortcuts (issue 39) change no bit of a seeded model.

- :meth:`CrossEntropyProblem.primal_output_gradients`: the cross-entropy's logit
  gradient by hand, with the kernel autograd itself calls, so a logistic regression's
  step runs no autograd;
- :func:`skfairdp.engine.step.plain_sgd`: a plain ``torch.optim.SGD`` step done as
  ``p.add_(grad, alpha=-lr)`` without the optimizer's per-call overhead, and only then.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import skfairdp.engine.step as step_module
from skfairdp import DPFermiClassifier, DPSGDClassifier
from skfairdp.dpsgd.core import CrossEntropyProblem
from skfairdp.engine.step import plain_sgd


@pytest.mark.parametrize("n_classes", [2, 3, 7])
@pytest.mark.parametrize("scale", [1.0, 30.0, 1e4])
def test_cross_entropy_output_gradients_are_autograds_bits(n_classes, scale):
    generator = torch.Generator().manual_seed(n_classes)
    logits = (torch.randn(513, n_classes, generator=generator) * scale).requires_grad_()
    y = torch.randint(0, n_classes, (513,), generator=generator)
    problem = CrossEntropyProblem()
    groups = torch.zeros_like(y)
    (loss,), _ = problem.primal_objectives(logits, y, groups)
    (autograd,) = torch.autograd.grad(loss.sum(), logits)
    (by_hand,), diagnostics = problem.primal_output_gradients(logits.detach(), y, groups)
    assert torch.equal(by_hand, autograd)
    assert torch.equal(diagnostics["loss"], loss.detach())


def _module():
    return torch.nn.Linear(3, 2)


@pytest.mark.parametrize(
    "make, plain",
    [
        (lambda p: torch.optim.SGD(p, lr=0.1), True),
        (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), False),
        (lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=1e-3), False),
        (lambda p: torch.optim.SGD(p, lr=0.1, maximize=True), False),
        (lambda p: torch.optim.SGD(p, lr=0.1, foreach=True), False),
        (lambda p: torch.optim.Adam(p, lr=0.1), False),
    ],
    ids=["sgd", "momentum", "weight-decay", "maximize", "foreach", "adam"],
)
def test_plain_sgd_is_only_plain_sgd(make, plain):
    assert plain_sgd(make(_module().parameters())) is plain


def test_plain_sgd_is_off_with_a_scheduler_hooks_or_two_groups():
    optimizer = torch.optim.SGD(_module().parameters(), lr=0.1)
    torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)  # wraps optimizer.step
    assert not plain_sgd(optimizer)
    hooked = torch.optim.SGD(_module().parameters(), lr=0.1)
    handle = hooked.register_step_post_hook(lambda *args: None)
    assert not plain_sgd(hooked)
    handle.remove()
    assert plain_sgd(hooked)
    global_handle = register_optimizer_step_pre_hook(lambda *args: None)
    try:
        assert not plain_sgd(hooked)
    finally:
        global_handle.remove()
    a, b = _module(), _module()
    two = torch.optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 1.0}])
    assert not plain_sgd(two)

    class MySGD(torch.optim.SGD):
        pass

    assert not plain_sgd(MySGD(_module().parameters(), lr=0.1))


def _data(n=600):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    s = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * s + rng.normal(size=n) > 0).astype(int)
    return X, y, s


@pytest.mark.parametrize(
    "make, grouped",
    [
        (lambda: DPSGDClassifier(max_epochs=3, batch_size=64, lr=0.5, random_state=0), False),
        (lambda: DPSGDClassifier(max_epochs=3, hidden_layer_sizes=(8,), random_state=1), False),
        (lambda: DPFermiClassifier(max_epochs=3, batch_size=64, lr=0.5, random_state=0), True),
    ],
    ids=["dpsgd", "dpsgd-mlp", "dpfermi"],
)
def test_the_shortcuts_leave_every_bit_of_a_seeded_fit(make, grouped, monkeypatch):
    X, y, s = _data()
    kwargs = {"sensitive_features": s} if grouped else {}
    fast = make().fit(X, y, **kwargs)
    monkeypatch.setattr(step_module, "plain_sgd", lambda optimizer: False)
    monkeypatch.delattr(CrossEntropyProblem, "primal_output_gradients")
    slow = make().fit(X, y, **kwargs)
    for p, q in zip(fast.module_.parameters(), slow.module_.parameters()):
        assert torch.equal(p, q)
    assert np.array_equal(fast.predict_proba(X), slow.predict_proba(X))
