"""The clipped sums of a step's private objectives, fused for one Linear layer (issue 39).

A step with ``K`` private objectives (DP-FERMI's split clip: the loss and the penalty)
releases ``sum_k clipped_total(g_k, C_k, w_k)``. For a model that is one Linear layer,
sample ``i``'s gradient of objective ``k`` is ``b_ki a_i^T`` (and ``b_ki`` for the bias):
its norm is ``|b_ki| |(a_i, 1)|`` and the clipped, weighted sum over the batch is
``(f_k * B_k)^T A`` for the per-row factors ``f_k`` (clip factor times weight). The
``K`` sums then share the one product

    ``(sum_k f_k * B_k)^T A``

and the inputs' norms: one matmul, one tame check and one host read for the step,
instead of ``K`` of each. The per-row norms and factors are computed by the very
operations :func:`~skfairdp.engine.clipping.clipped_total` uses (same bits), so each
sample's clip, hence the sensitivity and the noise, is unchanged. Only the order of the
final additions moves: ``K = 1`` gives :func:`clipped_total`'s bits; for ``K > 1`` the
rows are added before the product instead of after, a float32 rounding difference
(relative ~1e-7) in the released sum. Anything else (several layers, sample weights
with non-tame norms, huge or non-finite rows, a clip outside float32's comfortable
range) takes :func:`clipped_total` per objective, as before.
"""

from __future__ import annotations

import torch

from .clipping import _FLOAT32_CLIP_RANGE, clip_factors, clipped_total, tame
from .per_sample import FactoredLinearGradients


def clipped_totals(grads, clips) -> torch.Tensor:
    """``sum_k clipped_total(grads[k], *clips[k])``, one product when the layer allows.

    Parameters
    ----------
    grads : sequence of per-sample gradient sets
        One per private objective, from one forward pass.
    clips : sequence of (float, Tensor or None)
        Each objective's clip norm ``C_k`` and row weights ``w_k`` (applied after
        clipping, as in :func:`clipped_total`; None for none).

    Returns
    -------
    Tensor of shape (n_params,)
        A fresh tensor.
    """
    fused = _linear_fused(grads, clips)
    if fused is not None:
        return fused
    total = None
    for g, (max_norm, weights) in zip(grads, clips):
        part = clipped_total(g, max_norm, weights)
        total = part if total is None else total.add_(part)
    return total


def _same_layer(grads) -> tuple | None:
    """The one ``(weight, bias, a)`` all of ``grads`` share (single Linear layer), or None."""
    first = grads[0]
    if type(first) is not FactoredLinearGradients or not first.simple or len(first.factors) != 1:
        return None
    weight, bias, a, _ = first.factors[0]
    if a.dtype != torch.float32:
        return None
    for g in grads[1:]:
        if type(g) is not FactoredLinearGradients or len(g.factors) != 1:
            return None
        w2, bias2, a2, _ = g.factors[0]
        if w2 is not weight or bias2 is not bias or a2 is not a or g.params is not first.params:
            return None
    return weight, bias, a


def _linear_fused(grads, clips) -> torch.Tensor | None:
    if not grads or len(grads) != len(clips):
        return None
    layer = _same_layer(grads)
    if layer is None:
        return None
    low, high = _FLOAT32_CLIP_RANGE
    if not all(low <= max_norm <= high for max_norm, _ in clips):
        return None
    # float32 norms |b_i| |(a_i, 1)| (the inputs' norms computed once, in ``shared``)
    norms = [g._float32_norms() for g in grads]
    peak = norms[0]
    for n in norms[1:]:  # maximum propagates NaN, as the tame check needs
        peak = torch.maximum(peak, n)
    if not tame(peak):  # huge or non-finite rows: the float64 path, objective by objective
        return None
    combined = None
    for g, n, (max_norm, weights) in zip(grads, norms, clips):
        if weights is None:  # clipped_total's tame path: float32 factors
            factors = clip_factors(n, max_norm)
        else:  # its weighted path: float64 factors times the weights, then float32
            factors = clip_factors(n.double(), max_norm) * weights.to(torch.float64)
            factors = factors.to(torch.float32)
        b = g.factors[0][3]
        rows = b * factors.unsqueeze(1)
        combined = rows if combined is None else combined.add_(rows)
    weight, bias, a = layer
    wb_t = combined.t()
    parts = {id(weight): wb_t @ a}
    if bias is not None:
        parts[id(bias)] = wb_t.sum(1)
    return grads[0]._concat(parts)
