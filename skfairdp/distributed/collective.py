"""The sums and broadcasts of a data-parallel fit on a ``torch.distributed`` process group.

:class:`TorchCollective` implements :class:`skfairdp.privacy.collective.Collective`:
``all_reduce`` sums a list of tensors in one ``all_reduce`` call per dtype (a
training step's gradient and dual sums are float32: one call), on the device
the backend needs (CUDA for NCCL, CPU for gloo), and returns them where they
were. :class:`OneProcess` is its stand-in for a one-process run that samples
like several ranks (nothing to sum).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist

__all__ = ["OneProcess", "TorchCollective"]


class TorchCollective:
    """Sums and broadcasts over a ``torch.distributed`` process group.

    Parameters
    ----------
    group : ProcessGroup or None
        ``None``: the default group.
    """

    def __init__(self, group=None):
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        backend = dist.get_backend(group)
        cuda = str(backend).lower() == "nccl"
        self.device = torch.device("cuda", torch.cuda.current_device()) if cuda else None
        self._source = 0 if group is None else dist.get_global_rank(group, 0)

    def _on_backend(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.device is None else tensor.to(self.device)

    def all_reduce(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Element-wise sums over the ranks; one ``all_reduce`` per dtype among ``tensors``."""
        out: list[torch.Tensor | None] = [None] * len(tensors)
        by_dtype: dict[torch.dtype, list[int]] = {}
        for i, t in enumerate(tensors):
            by_dtype.setdefault(t.dtype, []).append(i)
        for indices in by_dtype.values():
            # torch.cat copies: the callers' tensors are never reduced in place
            flat = torch.cat([self._on_backend(tensors[i]).reshape(-1) for i in indices])
            dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=self.group)
            offset = 0
            for i in indices:
                size = tensors[i].numel()
                part = flat[offset : offset + size].view(tensors[i].shape)
                out[i] = part.to(tensors[i].device)
                offset += size
        return out

    def broadcast(self, tensor: torch.Tensor) -> torch.Tensor:
        """Rank 0's ``tensor`` (a copy) on every rank."""
        copy = self._on_backend(tensor.clone())
        dist.broadcast(copy, src=self._source, group=self.group)
        return copy.to(tensor.device)

    def gather_objects(self, obj) -> list:
        """``obj`` of every rank, in rank order (picklable objects; for checks before a fit)."""
        out = [None] * self.world_size
        dist.all_gather_object(out, obj, group=self.group)
        return out


class OneProcess:
    """One process holding every shard: nothing to sum, rank 0, ``world_size`` shards."""

    rank = 0

    def __init__(self, world_size: int):
        self.world_size = int(world_size)

    def all_reduce(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return list(tensors)

    def broadcast(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def gather_objects(self, obj) -> list:
        return [obj]
