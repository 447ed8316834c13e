"""Iterates kept during training, and the solutions made from them.

A constrained (min-max) training run does not end at a point that satisfies the
constraints: the model and the multipliers chase each other, and what the
theory guarantees is the *average over iterates* (Cotter, Jiang & Sridharan,
"Two-player games for efficient non-convex constrained optimization", 2019): if
the multipliers ascend on the constraint values, the mean violation of the
iterates over any window is at most the change of the multipliers over it divided
by ``lr_dual`` times its length. :class:`IterateTrack` keeps what the solutions
need from the tail of a run, by post-processing of the parameters (which are
released), so it costs no privacy:

- the **running mean** of the parameters over the tail (Polyak averaging; one
  deterministic model);
- **copies** of the parameters at evenly spaced steps of the tail, the atoms of a
  **mixture** (the randomised classifier that draws one iterate per prediction)
  or the candidates of a selection.

:class:`TailAverage` is the plain mean over the tail alone, without copies.

:func:`iterate_outputs` evaluates the copies on data. This module knows nothing
about privacy or fairness.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch.func import functional_call

__all__ = [
    "IterateTrack",
    "TailAverage",
    "iterate_outputs",
    "flat_parameters",
    "load_flat_parameters",
]


def flat_parameters(module: torch.nn.Module) -> torch.Tensor:
    """The trainable parameters of ``module`` as one detached float32 vector (a copy)."""
    return torch.cat(
        [p.detach().reshape(-1).float() for p in module.parameters() if p.requires_grad]
    ).clone()


def _unflatten(module: torch.nn.Module, flat: torch.Tensor) -> dict:
    out, start = {}, 0
    for name, p in module.named_parameters():
        if not p.requires_grad:
            continue
        out[name] = flat[start : start + p.numel()].view_as(p).to(p.dtype)
        start += p.numel()
    return out


def load_flat_parameters(module: torch.nn.Module, flat) -> None:
    """Copy a vector from :func:`flat_parameters` back into ``module`` (in place)."""
    flat = torch.as_tensor(flat, dtype=torch.float32)
    with torch.no_grad():
        for name, value in _unflatten(module, flat).items():
            module.get_parameter(name).copy_(value)


def iterate_outputs(module: torch.nn.Module, iterates, X: torch.Tensor) -> torch.Tensor:
    """Outputs of ``module`` with each row of ``iterates`` as its parameters.

    Parameters
    ----------
    module : torch.nn.Module
        The architecture (its own parameters are not used, buffers are).
    iterates : array-like of shape (n_iterates, n_params)
        Flat parameter vectors (:func:`flat_parameters`).
    X : Tensor of shape (n_samples, ...)

    Returns
    -------
    Tensor of shape (n_iterates, n_samples, n_outputs)
    """
    iterates = torch.as_tensor(np.asarray(iterates), dtype=torch.float32, device=X.device)
    with torch.no_grad():
        return torch.stack([functional_call(module, _unflatten(module, w), (X,)) for w in iterates])


class IterateTrack:
    """A running average and evenly spaced copies of a module's parameters.

    Call :meth:`step` after every optimizer step. The **average** is the
    polynomial-decay average of Shamir & Zhang (2013),
    ``avg_t = (1 - c_t) avg_{t-1} + c_t theta_t`` with ``c_t = (eta + 1) / (t + eta)``:
    every iterate so far, weighted about like ``s^eta`` (``eta = 0``: the plain
    mean), so that it forgets the start of the run and at every step is an
    average over roughly its recent ``1 / (eta + 1)``-th part. The **copies** are
    taken at ``n_copies`` evenly spaced steps of the last ``tail`` fraction of
    ``total_steps``, the last at ``total_steps``.

    Parameters
    ----------
    module : torch.nn.Module
        The model being trained (read, never modified).
    total_steps : int
        Steps the run will take (planned).
    n_copies : int
        Copies to keep (fewer when the tail has fewer steps); 0 keeps none.
    tail : float in (0, 1]
        Fraction of the run, at its end, that the copies cover.
    eta : float, default=2.0
        Decay of the average.
    """

    def __init__(
        self,
        module: torch.nn.Module,
        total_steps: int,
        n_copies: int,
        tail: float,
        eta: float = 2.0,
    ):
        self.module = module
        self.total_steps = int(total_steps)
        self.eta = float(eta)
        start = min(self.total_steps - 1, int(np.floor(self.total_steps * (1.0 - tail))))
        length = self.total_steps - start
        n = max(0, min(int(n_copies), length))
        # copy at the ends of n equal windows of the tail
        self.copy_at = {start + int(round(length * (i + 1) / n)) for i in range(n)}
        self.t = 0
        self.average: torch.Tensor = flat_parameters(module)
        # the trainable parameters, read once (module.parameters() walks the modules)
        self._params = [p for p in module.parameters() if p.requires_grad]
        self.copies: list[torch.Tensor] = []
        self.copy_steps: list[int] = []

    def step(self) -> None:
        """Record the parameters after one more step."""
        self.t += 1
        # flat_parameters(self.module) without the walk and the second copy (cat copies)
        flat = torch.cat([p.detach().reshape(-1).float() for p in self._params])
        rate = (self.eta + 1.0) / (self.t + self.eta)
        self.average = self.average.mul_(1.0 - rate).add_(flat, alpha=rate)
        if self.t in self.copy_at:
            self.copies.append(flat)
            self.copy_steps.append(self.t)

    def finish(self) -> None:
        """Make sure the last iterate is among the copies (a run stopped before the end)."""
        if self.copy_at and (not self.copy_steps or self.copy_steps[-1] != self.t):
            self.copies.append(flat_parameters(self.module))
            self.copy_steps.append(self.t)

    @property
    def stacked(self) -> np.ndarray:
        """The copies, shape (n_copies, n_params), float32."""
        return torch.stack(self.copies).cpu().numpy()


class TailAverage:
    """Running mean of a module's trainable parameters over the last steps of a run.

    ``step()`` after every optimizer step; the steps after ``start`` (the first
    ``1 - tail`` of ``total_steps``) are summed, in float64. Post-processing of the
    iterates (which are released), so it costs no privacy.

    Parameters
    ----------
    module : torch.nn.Module
        The model being trained (its parameters are replaced by :meth:`load`).
    total_steps : int
        Steps the run will take (planned).
    tail : float in (0, 1], default=0.5
        Fraction of the run, at its end, that the mean covers (at least its last step).
    """

    def __init__(self, module: torch.nn.Module, total_steps: int, tail: float = 0.5):
        self.params = [p for p in module.parameters() if p.requires_grad]
        # aliases without autograd (they see the parameters' in-place steps), read each step
        self._data = [p.detach() for p in self.params]
        self.start = min(int(total_steps) - 1, int(math.floor(total_steps * (1.0 - tail))))
        self.t = 0
        self.n = 0
        self.sums = [torch.zeros_like(p, dtype=torch.float64) for p in self.params]

    def step(self) -> None:
        """Add the parameters after one more step (once past ``start``)."""
        self.t += 1
        if self.t <= self.start:
            return
        self.n += 1
        for total, p in zip(self.sums, self._data):
            total.add_(p)

    def load(self) -> None:
        """Replace the module's parameters by their mean (no-op if no step was summed)."""
        if self.n == 0:
            return
        with torch.no_grad():
            for total, p in zip(self.sums, self.params):
                p.copy_((total / self.n).to(p.dtype))
