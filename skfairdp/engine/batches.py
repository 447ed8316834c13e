"""What the training loop iterates: one batch per step, its rows of X and of every per-row tensor.

A sampler's ``epoch()`` yields, per step, either the sorted row indices (in memory:
the rows are ``index_select``-ed from ``X``, as always) or ``(indices, rows)``
(out of core: the sampler read the feature rows itself, see
:mod:`skfairdp.data.buckets`; the per-row tensors are still indexed in memory).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["Batch", "CompactRows", "compact_rows", "row_batches", "take_rows"]


@dataclass
class Batch:
    """One step's rows: features, per-row tensors, weights, and how many rows."""

    X: torch.Tensor
    tensors: tuple[torch.Tensor, ...]
    weights: torch.Tensor | None
    size: int


class CompactRows:
    """An integer per-row tensor kept in the smallest integer dtype that holds its values.

    ``index_select`` returns the selected rows in the original dtype, so a batch is
    what the uncompacted tensor would give (an out-of-core fit keeps labels and group
    codes in a byte per row instead of eight).
    """

    def __init__(self, tensor: torch.Tensor):
        self.dtype = tensor.dtype
        low = int(tensor.min()) if tensor.numel() else 0
        high = int(tensor.max()) if tensor.numel() else 0
        small = next(
            (
                dtype
                for dtype in (torch.int8, torch.int16, torch.int32)
                if torch.iinfo(dtype).min <= low and high <= torch.iinfo(dtype).max
            ),
            tensor.dtype,
        )
        self.data = tensor.to(small)

    def index_select(self, dim: int, index: torch.Tensor) -> torch.Tensor:
        return self.data.index_select(dim, index).to(self.dtype)

    def to(self, device) -> CompactRows:
        self.data = self.data.to(device)
        return self


def compact_rows(tensors) -> tuple:
    """Integer tensors as :class:`CompactRows`; others unchanged."""
    return tuple(
        CompactRows(t) if not t.is_floating_point() and not t.is_complex() else t for t in tensors
    )


def row_batches(
    sampler,
    X: torch.Tensor | None,
    tensors: tuple,
    sample_weight: torch.Tensor | None,
    device: torch.device,
) -> Iterator[Batch]:
    """The batches of one epoch of ``sampler`` (``X`` None when the sampler reads the rows)."""
    for item in sampler.epoch():
        idx, rows = item if isinstance(item, tuple) else (item, None)
        yield take_rows(idx, X, tensors, sample_weight, device, rows)


def take_rows(
    idx,
    X: torch.Tensor | None,
    tensors: tuple,
    sample_weight: torch.Tensor | None,
    device: torch.device,
    rows: np.ndarray | None = None,
) -> Batch:
    """The :class:`Batch` of row indices ``idx`` (``rows``: their features, read out of core)."""
    idx_t = torch.from_numpy(np.asarray(idx)).to(device)
    batch = tuple(t.index_select(0, idx_t) for t in tensors)
    weights = None if sample_weight is None else sample_weight.index_select(0, idx_t)
    xb = X.index_select(0, idx_t) if rows is None else torch.from_numpy(rows).to(device)
    return Batch(xb, batch, weights, len(idx))
