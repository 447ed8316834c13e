"""Flat L2 clipping of per-sample vectors."""

from __future__ import annotations

import torch


def clipped_sum(per_sample, max_norm: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of per-sample rows, each first scaled to L2 norm at most ``max_norm``.

    Parameters
    ----------
    per_sample : Tensor of shape (B, P), or per-sample gradients
        One flattened vector per sample (all parameters together), or an object
        with ``norms()`` and ``weighted_sum(weights)`` (see
        :mod:`skfairdp.engine.per_sample`).
    max_norm : float
        Clipping threshold ``C``; the sum's add/remove sensitivity is ``C``.

    Returns
    -------
    total : Tensor of shape (P,)
    norms : Tensor of shape (B,)
        The unclipped norms (for diagnostics).
    """
    if isinstance(per_sample, torch.Tensor):
        norms = torch.linalg.vector_norm(per_sample, dim=1)
        scale = (max_norm / (norms + 1e-12)).clamp(max=1.0)
        return scale @ per_sample, norms
    norms = per_sample.norms()
    scale = (max_norm / (norms + 1e-12)).clamp(max=1.0)
    return per_sample.weighted_sum(scale), norms
