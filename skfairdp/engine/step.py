"""One private step, in two halves: ``release`` on a batch, ``apply`` to the model.

``release`` runs where the data are: one forward pass, per-sample gradients,
clipping, noise (through :mod:`skfairdp.privacy.mechanisms`, recorded in the
step's batch event), and the problem's released batch statistics. What it
returns, a :class:`NoisyRelease`, is all that leaves the data: noised sums (not
yet averaged), released statistics, and the normaliser. ``apply`` needs no data:
the optimizer step on the model and the problem's dual update, which replaces
the problem's ``state`` (W, lambda, Z) by a new value.

One process trains with ``apply(release(...))``; a federated server can average
the releases of several silos and apply once (Opacus: ``DPOptimizer.pre_step``
clips and noises, ``step`` applies).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.optim import optimizer as _optimizer_module

from ..privacy.collective import local_releases, sum_over_ranks
from ..privacy.mechanisms import gaussian_sum
from .clipping import clipped_total
from .fused import clipped_totals


@dataclass
class NoisyRelease:
    """What one step releases about its batch.

    Attributes
    ----------
    primal : Tensor of shape (n_params,)
        Sum over the batch of the processed per-sample gradients: clipped and
        noised for the private objectives, exact for the public ones. Not averaged.
    dual : Tensor or None
        Sum of the dual rows (clipped and noised when private, plus the public
        part), or None when the problem has no dual update this step.
    statistics : dict of Tensor
        Noisy batch statistics the problem released (e.g. RaCO's rate values,
        Global Scaling's clip fraction), consumed by ``problem.apply_statistics``.
    denominator : float
        What the sums are divided by: the expected batch size (private) or the
        realised one (non-private).
    diagnostics : dict of Tensor
        Per-sample diagnostics of the objective (raw, not private; only recorded
        on request).
    """

    primal: torch.Tensor
    dual: torch.Tensor | None = None
    statistics: dict = field(default_factory=dict)
    denominator: float = 1.0
    diagnostics: dict = field(default_factory=dict)


def release(
    module,
    grads_of,
    Xb,
    batch,
    problem,
    noise,
    random,
    recorder,
    expected_batch_size,
    weights=None,
) -> NoisyRelease:
    """Per-sample gradients of ``problem`` on the batch, clipped, weighted, summed and noised.

    Parameters
    ----------
    module : torch.nn.Module
        The model (only read).
    grads_of : PerSampleGradients
        Per-sample gradient computer bound to ``module``.
    Xb : Tensor
        The batch's inputs (possibly empty: an empty Poisson batch still releases).
    batch : tuple of Tensor
        The problem's per-sample tensors (from ``problem.prepare_batch``).
    problem : PrimalDualProblem
    noise : NoiseConfig
    random : RandomSource
    recorder : EventRecorder
        Where the noisy releases record their events.
    expected_batch_size : float
        The private normaliser ``q n``.
    weights : Tensor of shape (B,), optional
        The batch's sample weights. They multiply each per-sample contribution
        *after* clipping (private sums) or as is (public sums); the noise is
        scaled to the weighted sensitivity ``sensitivity * noise.max_weight``. The
        problem's hooks receive them as the keyword ``weights`` (only when given).
        Non-private sums are then divided by the batch's weight sum.
    """
    n_params = grads_of.n_params
    device = Xb.device
    primal = None
    outputs = None
    diagnostics: dict[str, torch.Tensor] = {}
    statistics: dict[str, torch.Tensor] = {}
    # Optional problem hook: private per-batch statistics the objective needs, released
    # before it is formed (e.g. RaCO-DP's noisy histogram); see PrimalDualProblem.
    # With a non-empty batch it runs inside grads_of, on that forward pass's outputs.
    weighted = {} if weights is None else {"weights": weights}
    release_statistics = getattr(problem, "release_batch_statistics", None)
    released, prepare = {}, None
    if release_statistics is not None:

        def prepare(outputs, *per_sample):
            released["batch"], released["statistics"] = release_statistics(
                outputs, *per_sample, **weighted
            )
            return released["batch"]

        if Xb.shape[0] == 0:
            with torch.no_grad():
                prepare(module(Xb), *batch)
    # Optional problem hook replacing flat clipping (see PrimalDualProblem.private_sum).
    private_sum = getattr(problem, "private_sum", None) if noise.private else None
    sensitivity = noise.max_grad_norm
    if Xb.shape[0] > 0:
        grads, outputs, diagnostics = grads_of(
            Xb,
            problem.primal_objectives,
            *batch,
            output_gradients=getattr(problem, "primal_output_gradients", None),
            prepare=prepare,
        )
        fused = _fused_clips(problem, noise, grads, Xb, _after(released, batch), weighted)
        if fused is not None:
            clips, sensitivity = fused
            primal = clipped_totals(grads, clips)
            grads = ()
        for g, is_private in zip(grads, problem.private_primal):
            if is_private and private_sum is not None:
                hooked = _hook(private_sum(g, Xb, *_after(released, batch), **weighted))
                part, sensitivity = hooked[:2]
                statistics.update(hooked[2])
            elif is_private and noise.private:
                part = clipped_total(g, noise.max_grad_norm, weights)
            else:
                part = plain_sum(g, Xb.shape[0], device, weights)
            primal = part if primal is None else primal.add_(part)
    elif private_sum is not None and any(problem.private_primal):
        # empty batch: the hook's releases still happen
        hooked = _hook(private_sum(None, Xb, *_after(released, batch), **weighted))
        _, sensitivity, hook_statistics = hooked
        statistics.update(hook_statistics)
    batch = _after(released, batch)
    statistics.update(released.get("statistics") or {})
    if primal is None:  # empty batch
        primal = torch.zeros(n_params, device=device, dtype=torch.float32)
    # in a data-parallel fit the gradient and dual sums stay local (rank 0's noised) until
    # one all-reduce sums them over the ranks (privacy.collective); else nothing changes
    if noise.private and any(problem.private_primal):
        sensitivity = sensitivity * noise.max_weight
        with local_releases():
            primal = gaussian_sum(primal, sensitivity, noise.primal_multiplier, random, recorder)[0]
    dual = _dual_release(problem, outputs, batch, noise, random, device, recorder, weights)
    primal, dual = sum_over_ranks(primal, dual)
    return NoisyRelease(
        primal, dual, statistics, _denominator(noise, expected_batch_size, Xb, weights), diagnostics
    )


def _denominator(noise, expected_batch_size, Xb, weights) -> float:
    """Private: the expected batch size (data-independent). Non-private: the batch's size,
    or its weight sum, so that integer weights act as repeated rows (1 for an empty batch).
    """
    if noise.private:
        return float(expected_batch_size)
    if weights is None:
        return float(max(Xb.shape[0], 1))
    total = float(weights.sum())
    return total if total > 0 else 1.0


def apply(release: NoisyRelease, problem, grads_of, optimizer) -> dict:
    """The optimizer step on the model and the problem's dual update; returns the new state.

    Reads nothing but the release: the averaged primal sum becomes the parameters'
    gradient, the averaged dual sum goes to ``problem.dual_step`` and the released
    statistics to ``problem.apply_statistics``, each of which replaces
    ``problem.state`` by a new value.
    """
    primal = release.primal / release.denominator
    for p, g in zip(grads_of.params, grads_of.unflatten(primal)):
        p.grad = g
    if plain_sgd(optimizer):
        # what SGD.step does for these settings on CPU, without its per-call overhead
        group = optimizer.param_groups[0]
        with torch.no_grad():
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
    else:
        optimizer.step()
    if release.dual is not None:
        problem.dual_step(release.dual / release.denominator)
    if release.statistics:
        problem.apply_statistics(release.statistics)
    return getattr(problem, "state", {})


#: SGD settings under which a step is ``p -= lr * grad`` and keeps no state
_PLAIN_SGD = {"momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False,
              "maximize": False, "differentiable": False}  # fmt: skip


def plain_sgd(optimizer) -> bool:
    """Whether ``optimizer.step()`` is exactly ``p.add_(p.grad, alpha=-lr)`` on each parameter.

    ``torch.optim.SGD`` itself (not a subclass), one parameter group without momentum,
    weight decay or the fused/foreach kernels, on CPU parameters, with no step hooks and
    ``step`` not wrapped (an LR scheduler wraps it to count the calls).
    """
    if type(optimizer) is not torch.optim.SGD or len(optimizer.param_groups) != 1:
        return False
    group = optimizer.param_groups[0]
    if any(group.get(key, value) != value for key, value in _PLAIN_SGD.items()):
        return False
    if group.get("fused") or group.get("foreach") or isinstance(group["lr"], torch.Tensor):
        return False
    if optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks:
        return False
    if "step" in vars(optimizer):  # wrapped, e.g. by an LR scheduler counting the steps
        return False
    if any(
        getattr(_optimizer_module, f"_global_optimizer_{kind}_hooks", None)
        for kind in ("pre", "post")
    ):
        return False
    return all(p.device.type == "cpu" for p in group["params"])


def _fused_clips(problem, noise, grads, Xb, batch, weighted):
    """A problem's ``clip_plan`` ``(clips, sensitivity)`` for a private step whose
    objectives are all private, else None (see :mod:`.problem` and :mod:`.fused`)."""
    clip_plan = getattr(problem, "clip_plan", None)
    if clip_plan is None or not noise.private or not all(problem.private_primal):
        return None
    return clip_plan(Xb, *batch, **weighted)


def _after(released: dict, batch):
    return released.get("batch", batch)


def _hook(result) -> tuple:
    """``private_sum``'s ``(total, sensitivity[, statistics])`` as a 3-tuple."""
    if len(result) == 2:
        return (*result, {})
    return result


def _dual_release(problem, outputs, batch, noise, random, device, recorder, weights=None):
    dual_contributions = getattr(problem, "dual_contributions", None)
    weighted = {} if weights is None else {"weights": weights}
    contributions = (
        None if dual_contributions is None else dual_contributions(outputs, *batch, **weighted)
    )
    if contributions is None:
        return None
    public, private_rows = contributions
    if private_rows is None:  # a copy: the release must not share the problem's tensor
        return None if public is None else public.clone()
    if noise.private:
        clip = problem.dual_clip
        part = clipped_total(private_rows, clip, weights)
        sensitivity = clip * noise.max_weight
        with local_releases():  # summed over the ranks with the gradient by release()
            part = gaussian_sum(part, sensitivity, noise.dual_multiplier, random, recorder)[0]
    else:
        part = plain_sum(private_rows, len(batch[0]), device, weights)
    return part if public is None else public + part


def plain_sum(per_sample, batch_size: int, device, weights=None) -> torch.Tensor:
    """Unclipped (weighted) sum of public per-sample rows (no privacy at stake: no clipping).

    A tensor, an object with ``plain_sum()`` (raw float32 arithmetic), or one with
    ``weighted_sum``; ``weights`` (shape ``(batch_size,)``) multiply the rows.
    """
    if weights is not None:
        if isinstance(per_sample, torch.Tensor):
            return weights.to(per_sample.dtype) @ per_sample
        return per_sample.weighted_sum(weights.float())
    if isinstance(per_sample, torch.Tensor):
        return per_sample.sum(0)
    if hasattr(per_sample, "plain_sum"):
        return per_sample.plain_sum()
    return per_sample.weighted_sum(torch.ones(batch_size, device=device))
