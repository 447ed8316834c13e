"""Flat L2 clipping of per-sample vectors."""

from __future__ import annotations

import torch


def clipped_sum(per_sample: torch.Tensor, max_norm: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of per-sample rows, each first scaled to L2 norm at most ``max_norm``.

    Parameters
    ----------
    per_sample : Tensor of shape (B, P)
        One flattened vector per sample (all parameters together).
    max_norm : float
        Clipping threshold ``C``; the sum's add/remove sensitivity is ``C``.

    Returns
    -------
    total : Tensor of shape (P,)
    norms : Tensor of shape (B,)
        The unclipped norms (for diagnostics).
    """
    norms = torch.linalg.vector_norm(per_sample, dim=1)
    scale = (max_norm / (norms + 1e-12)).clamp(max=1.0)
    return scale @ per_sample, norms
