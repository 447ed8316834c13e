"""The engine's optional ``private_sum`` problem hook (used by the DP-SGD family)."""

import numpy as np
import pytest
import torch

from skfairdp.engine import NoiseConfig, train
from skfairdp.privacy import PoissonSampler, RandomSource


class ZeroSumProblem:
    """A problem whose processed sum is zero, with a fixed declared sensitivity."""

    private_primal = (True,)
    dual_clip = 0.0

    def __init__(self, sensitivity):
        self.sensitivity = sensitivity
        self.calls = []

    def prepare_batch(self, codes):
        return (codes[:, 0],)

    def primal_objectives(self, outputs, y):
        loss = torch.nn.functional.cross_entropy(outputs, y, reduction="none")
        return (loss,), {"loss": loss}

    def dual_contributions(self, outputs, *batch):
        return None

    def dual_step(self, gradient):
        pass

    def private_sum(self, per_sample, X, y):
        self.calls.append(None if per_sample is None else len(y))
        if per_sample is None:
            return None, self.sensitivity
        return torch.zeros(sum(p.numel() for p in self.params)), self.sensitivity


def _run(problem, n=40, rate=0.25, multiplier=2.0, lr=1.0):
    torch.manual_seed(0)
    module = torch.nn.Linear(100, 50)
    problem.params = list(module.parameters())
    before = torch.cat([p.detach().clone().ravel() for p in module.parameters()])
    random = RandomSource(0)
    sampler = PoissonSampler(n, rate, random)
    X = torch.randn(n, 100)
    codes = torch.zeros(n, 2, dtype=torch.long)
    result = train(
        module, X, (codes,), problem, sampler=sampler,
        optimizer=torch.optim.SGD(module.parameters(), lr=lr),
        noise=NoiseConfig(1.0, multiplier, None), random=random, max_epochs=1,
    )  # fmt: skip
    after = torch.cat([p.detach().ravel() for p in module.parameters()])
    return (after - before).numpy(), result, sampler.expected_batch_size


@pytest.mark.parametrize("sensitivity", [0.5, 3.0])
def test_noise_scales_with_the_hooks_sensitivity(sensitivity):
    delta, result, m = _run(ZeroSumProblem(sensitivity), multiplier=2.0, lr=1.0)
    # only noise moved the weights: T steps of N(0, (z * s / m)^2) per coordinate
    expected = 2.0 * sensitivity / m * np.sqrt(result.steps)
    assert delta.std() == pytest.approx(expected, rel=0.05)


def test_hook_is_called_on_empty_batches():
    problem = ZeroSumProblem(1.0)
    _, result, _ = _run(problem, n=40, rate=0.01)  # most Poisson batches are empty
    assert len(problem.calls) == result.steps == 100
    assert None in problem.calls and any(c for c in problem.calls)
