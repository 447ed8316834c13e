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
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm!r}")
    if isinstance(per_sample, torch.Tensor):
        norms = torch.linalg.vector_norm(per_sample, dim=1)
        return clip_factors(norms, max_norm) @ per_sample, norms
    norms = per_sample.norms()
    return per_sample.weighted_sum(clip_factors(norms, max_norm)), norms


def clip_factors(norms: torch.Tensor, max_norm: float) -> torch.Tensor:
    """``min(1, C / norm)`` per sample (1 for a zero norm)."""
    return max_norm / norms.clamp(min=max_norm)
