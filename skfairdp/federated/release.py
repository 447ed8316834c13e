"""Clipped per-silo sums of one round, for one silo or for many at once.

Each silo's release is the engine's (:func:`skfairdp.engine.step.release`): per-sample
gradients of the DP-FERMI objective, each private one clipped to the silo's norm,
summed; then the silo adds its own noise (:meth:`~skfairdp.federated.silo.Silo.finish_round`).
Here the silos' batches are concatenated so that all silos share one forward pass and
one per-sample gradient computation (the local backend vectorises the silos). When
every row is tame, the per-row norms and clip factors are computed once too, each
row's with its own silo's clip norm; each silo's sums are then products over its own
rows (slices), the same arithmetic as the silo alone. A batch with a huge or
non-finite row sends every silo to its own path (as alone); per-sample gradients that
cannot be sliced take a 0/1 mask applied after clipping, like a sample weight. A
Flower silo calls the same function with its own batch alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..engine.clipping import _FLOAT32_CLIP_RANGE, ScaledRows, clip_factors, clipped_total, tame
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
    sizes = [b.size for b in batches]
    device = batches[0].X.device
    if sum(sizes) == 0:  # every batch empty: nothing to sum (the releases still happen)
        dual = _empty_dual(problem)
        zeros = [torch.zeros(grads_of.n_params, device=device) for _ in batches]
        return [(p, None if dual is None else dual.clone()) for p in zeros]
    X = torch.cat([b.X for b in batches])
    codes = torch.cat([b.codes for b in batches])
    weights = torch.cat([b.weights for b in batches])
    segments = _Segments(sizes, device)
    batch = problem.prepare_batch(codes, weights)
    grads, outputs, _ = grads_of(
        X,
        problem.primal_objectives,
        *batch,
        output_gradients=getattr(problem, "primal_output_gradients", None),
    )
    primal = None
    for g, is_private in zip(grads, problem.private_primal):
        clips = [b.max_grad_norm if is_private else None for b in batches]
        parts = _silo_totals(g, clips, segments)
        primal = parts if primal is None else [p + q for p, q in zip(primal, parts)]
    dual = _dual_sums(problem, outputs, batch, batches, segments)
    return list(zip(primal, dual))


class _Segments:
    """The silos' consecutive row ranges in the concatenated batch (masks made on demand)."""

    def __init__(self, sizes: list[int], device):
        ends = np.cumsum(sizes)
        self.sizes = sizes
        self.total = int(ends[-1])
        self.device = device
        self.slices = [slice(int(end) - size, int(end)) for end, size in zip(ends, sizes)]
        self._masks: dict[int, torch.Tensor] = {}

    def mask(self, j: int) -> torch.Tensor:
        """0/1 weights selecting silo ``j``'s rows (fallback for unsliceable gradients)."""
        if j not in self._masks:
            mask = torch.zeros(self.total, device=self.device)
            mask[self.slices[j]] = 1.0
            self._masks[j] = mask
        return self._masks[j]


def _silo_totals(per_sample, clips, segments: _Segments) -> list[torch.Tensor]:
    """Each silo's sum of its rows: clipped to its norm (``clips[j]``), or exact (None)."""
    shared = _shared_clipped_totals(per_sample, clips, segments.slices)
    if shared is not None:
        return shared
    parts = []
    for j, clip in enumerate(clips):
        own = _rows(per_sample, segments.slices[j])  # silo j's rows alone
        if clip is not None:
            part = (
                clipped_total(per_sample, clip, segments.mask(j))
                if own is None
                else clipped_total(own, clip)
            )
        elif own is None:
            part = plain_sum(per_sample, segments.total, segments.device, segments.mask(j))
        else:
            part = plain_sum(own, segments.sizes[j], segments.device)
        parts.append(part)
    return parts


def _shared_clipped_totals(per_sample, clips, slices) -> list[torch.Tensor] | None:
    """The silos' clipped sums with the norms and clip factors computed once, or None.

    Applies when every silo clips (with a norm in float32's range), the rows are a
    float32 matrix or simple Linear factors, and every row's float32 norm is tame
    (:func:`~skfairdp.engine.clipping.tame`): then each silo, alone, would take the
    engine's float32 path with these same per-row norms and factors, and its sum is
    the same product over its own rows. Otherwise (a huge or non-finite row
    somewhere) None: each silo then decides its own path on its own rows.
    """
    low, high = _FLOAT32_CLIP_RANGE
    if not all(c is not None and low <= c <= high for c in clips):
        return None
    if isinstance(per_sample, torch.Tensor):
        if per_sample.dtype != torch.float32:
            return None
        norms = torch.linalg.vector_norm(per_sample, dim=1)
        if not tame(norms):
            return None
        factors = _clip_factors(norms, clips, slices)
        return [factors[s] @ per_sample[s] for s in slices]
    if not (isinstance(per_sample, FactoredLinearGradients) and per_sample.simple):
        return None
    norms = per_sample.tame_norms()
    if norms is None:
        return None
    factors = _clip_factors(norms, clips, slices)
    parts = [{} for _ in slices]
    for weight, bias, a, b in per_sample.factors:
        scaled = b.t() * factors.to(b.dtype)  # (out, B): row i's output gradient, clipped
        for own, s in zip(parts, slices):
            own[id(weight)] = scaled[:, s] @ a[s]
            if bias is not None:
                own[id(bias)] = scaled[:, s].sum(1)
    return [
        torch.cat(
            [
                own[id(p)].reshape(-1) if id(p) in own else p.new_zeros(p.numel())
                for p in per_sample.params
            ]
        )
        for own in parts
    ]


def _clip_factors(norms, clips, slices) -> torch.Tensor:
    """Per-row ``min(1, C_j / norm)`` with each silo's own ``C_j``."""
    if len(set(clips)) == 1:
        return clip_factors(norms, clips[0])
    return torch.cat([clip_factors(norms[s], c) for s, c in zip(slices, clips)])


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


def _dual_sums(problem, outputs, batch, batches, segments: _Segments):
    contributions = problem.dual_contributions(outputs, *batch)
    if contributions is None:
        return [None] * len(batches)
    parts = _silo_totals(contributions[1], [b.dual_clip for b in batches], segments)
    if not problem.sensitive_unit:
        return parts
    sums = []
    for j, part in enumerate(parts):  # the s-free part of W's gradient: exact, per silo
        public, _ = problem.dual_contributions(outputs, *batch, weights=segments.mask(j))
        sums.append(part if public is None else public + part)
    return sums
