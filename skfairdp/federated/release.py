"""Clipped per-silo sums of one round, for one silo or for many at once.

Each silo's release is the engine's (:func:`skfairdp.engine.step.release`): per-sample
gradients of the DP-FERMI objective, each private one clipped to the silo's norm,
summed; then the silo adds its own noise (:meth:`~skfairdp.federated.silo.Silo.finish_round`).
Here the silos' batches are concatenated so that all silos share one forward pass and
one per-sample gradient computation (the local backend vectorises the silos); each
silo's sums are the clipped rows of its own batch only (a 0/1 mask applied after
clipping, like a sample weight). A Flower silo calls the same function with its own
batch alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..engine.clipping import ScaledRows, clipped_total
from ..engine.per_sample import FactoredLinearGradients
from ..engine.step import plain_sum

__all__ = ["SiloBatch", "clipped_sums"]


@dataclass
class SiloBatch:
    """One silo's batch of a round and its clipping norms (set by the silo)."""

    X: torch.Tensor
    codes: torch.Tensor
    weights: torch.Tensor
    max_grad_norm: float | None
    dual_clip: float | None

    @property
    def size(self) -> int:
        return int(self.X.shape[0])


def clipped_sums(grads_of, problem, batches: list[SiloBatch]):
    """Per-silo ``(primal_sum, dual_sum)`` of one round, not yet noised.

    Parameters
    ----------
    grads_of : PerSampleGradients
        Bound to the module holding the broadcast ``theta``.
    problem : ErmiProblem
        Built from the broadcast ``W`` (same objective for every silo).
    batches : list of SiloBatch
        ``max_grad_norm is None``: the silo trains without privacy (exact sums).

    Returns
    -------
    list of (Tensor, Tensor or None)
        Sum over each silo's batch of its (clipped, for the private objectives)
        per-sample theta-gradients and W-rows; ``None`` when there is no W step.
    """
    n_params = grads_of.n_params
    sizes = [b.size for b in batches]
    total = sum(sizes)
    device = batches[0].X.device
    primal = [torch.zeros(n_params, device=device) for _ in batches]
    if total == 0:  # every batch empty: nothing to sum (the releases still happen)
        dual = _empty_dual(problem)
        return [(p, None if dual is None else dual.clone()) for p in primal]
    X = torch.cat([b.X for b in batches])
    codes = torch.cat([b.codes for b in batches])
    weights = torch.cat([b.weights for b in batches])
    masks = []
    start = 0
    for size in sizes:
        mask = torch.zeros(total, device=device)
        mask[start : start + size] = 1.0
        masks.append(mask)
        start += size
    batch = problem.prepare_batch(codes, weights)
    grads, outputs, _ = grads_of(
        X,
        problem.primal_objectives,
        *batch,
        output_gradients=getattr(problem, "primal_output_gradients", None),
    )
    slices = [slice(start - size, start) for start, size in zip(np.cumsum(sizes), sizes)]
    for g, is_private in zip(grads, problem.private_primal):
        for j, b in enumerate(batches):
            own = _rows(g, slices[j])  # silo j's rows alone: the engine's own arithmetic
            if is_private and b.max_grad_norm is not None:
                part = (
                    clipped_total(g, b.max_grad_norm, masks[j])
                    if own is None
                    else clipped_total(own, b.max_grad_norm)
                )
            elif own is None:
                part = plain_sum(g, total, device, masks[j])
            else:
                part = plain_sum(own, sizes[j], device)
            primal[j] = primal[j] + part
    dual = _dual_sums(problem, outputs, batch, batches, masks, slices)
    return [(primal[j], d) for j, d in enumerate(dual)]


def _empty_dual(problem):
    contributions = problem.dual_contributions(None, *([None] * 7))
    if contributions is None:
        return None
    public = contributions[0]
    return problem.W.new_zeros(problem.W.numel()) if public is None else public


def _rows(per_sample, rows: slice):
    """The per-sample rows ``rows`` alone, or None (then a 0/1 mask selects them)."""
    if isinstance(per_sample, torch.Tensor):
        return per_sample[rows]
    if isinstance(per_sample, FactoredLinearGradients) and per_sample.simple:
        factors = [(w, c, a[rows], b[rows]) for w, c, a, b in per_sample.factors]
        return FactoredLinearGradients(per_sample.params, factors, rows.stop - rows.start)
    if isinstance(per_sample, ScaledRows) and per_sample.exponent is None:
        return per_sample.scaled[rows]
    return None


def _dual_sums(problem, outputs, batch, batches, masks, slices):
    contributions = problem.dual_contributions(outputs, *batch)
    if contributions is None:
        return [None] * len(batches)
    shared_public = problem.sensitive_unit
    sums = []
    rows = contributions[1]
    for j, b in enumerate(batches):
        public = None
        if shared_public:  # the s-free part of W's gradient: exact, per silo
            public, _ = problem.dual_contributions(outputs, *batch, weights=masks[j])
        own = _rows(rows, slices[j])
        if b.dual_clip is not None:
            part = (
                clipped_total(rows, b.dual_clip, masks[j])
                if own is None
                else clipped_total(own, b.dual_clip)
            )
        elif own is None:
            part = plain_sum(rows, len(masks[j]), masks[j].device, masks[j])
        else:
            part = plain_sum(own, b.size, masks[j].device)
        sums.append(part if public is None else public + part)
    return sums
