"""Releases whose rows are split over processes: the exact sums added up, the noise added once.

In a data-parallel fit (:mod:`skfairdp.distributed`) each process (rank) holds a
shard of the rows. Every release is a sum over rows, so the release of all rows
is the sum over ranks of each rank's exact local sum, plus one noise draw.
While a :class:`Collective` is active (:func:`summed_over`), the mechanisms of
:mod:`skfairdp.privacy.mechanisms` do exactly that: rank 0 adds the noise to
its local sum, every other rank contributes its exact local sum, and one
all-reduce gives every rank the same noisy release (Opacus'
``DistributedDPOptimizer``: noise on rank 0 only, then ``all_reduce``). The
released value has the distribution of the one-process release on the union of
the shards, and every rank records the same event.

Without an active collective (any fit in one process) nothing here runs: the
mechanisms draw and add their noise as they always did.

A caller that releases several sums of one step may ask for them unsummed
(:func:`local_releases`) and sum them across ranks in one all-reduce
(:func:`sum_over_ranks`); the engine does so with a step's gradient and dual sums.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Protocol

import numpy as np
import torch

__all__ = [
    "Collective",
    "active_collective",
    "adds_noise",
    "finish_grid_release",
    "finish_release",
    "from_first_rank",
    "local_releases",
    "sum_over_ranks",
    "summed_over",
]


class Collective(Protocol):
    """How the ranks of a data-parallel fit add up their sums (see :mod:`skfairdp.distributed`)."""

    rank: int
    world_size: int

    def all_reduce(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Element-wise sums over ranks of ``tensors`` (same shapes on every rank)."""
        ...

    def broadcast(self, tensor: torch.Tensor) -> torch.Tensor:
        """Rank 0's ``tensor`` on every rank."""
        ...


_ACTIVE: ContextVar[Collective | None] = ContextVar("skfairdp_collective", default=None)
_DEFERRED: ContextVar[bool] = ContextVar("skfairdp_collective_deferred", default=False)


def active_collective() -> Collective | None:
    """The collective of the data-parallel fit running in this context, or None."""
    return _ACTIVE.get()


@contextlib.contextmanager
def summed_over(collective: Collective | None) -> Iterator[None]:
    """Block in which every release is summed over ``collective``'s ranks (None: no change)."""
    token = _ACTIVE.set(collective)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def adds_noise() -> bool:
    """Whether this process draws a release's noise: always, except on ranks other than 0."""
    collective = _ACTIVE.get()
    return collective is None or collective.rank == 0


@contextlib.contextmanager
def local_releases() -> Iterator[None]:
    """Block whose releases stay local (rank 0's carry the noise): the caller must pass
    each of them through :func:`sum_over_ranks` before anything reads it."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def finish_release(noisy_local: torch.Tensor) -> torch.Tensor:
    """A mechanism's last step: the sum over ranks of ``noisy_local`` (itself in one process,
    or inside :func:`local_releases`)."""
    if _ACTIVE.get() is None or _DEFERRED.get():
        return noisy_local
    return _ACTIVE.get().all_reduce([noisy_local])[0]


def finish_grid_release(noisy_local: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """:func:`finish_release` of a grid release (``secure_mode``), kept exact over the ranks.

    ``noisy_local`` is float64: grid values ``g * integer`` add up exactly there (below
    ``2**53 g``), so the sum is a function of the noisy integer alone. In float32, rank 0's
    noisy value plus another rank's exact one rounds half to even, and the last bit of the
    release would depend on that rank's noiseless sum. Cast to ``dtype`` after the sum
    (inside :func:`local_releases`, float64 is returned for the caller's exact sum).
    """
    if _ACTIVE.get() is not None and _DEFERRED.get():
        return noisy_local
    return finish_release(noisy_local).to(dtype)


def sum_over_ranks(*values):
    """``values`` (tensors, arrays or None) summed over the ranks in one all-reduce.

    The identity without an active collective. Arrays come back as arrays, None
    stays None.
    """
    collective = _ACTIVE.get()
    if collective is None:
        return values
    present = [i for i, v in enumerate(values) if v is not None]
    tensors = [torch.as_tensor(values[i]) for i in present]
    summed = collective.all_reduce(tensors)
    out = list(values)
    for i, total in zip(present, summed):
        out[i] = total.cpu().numpy() if isinstance(values[i], np.ndarray) else total
    return tuple(out)


def from_first_rank(value: float) -> float:
    """Rank 0's ``value`` on every rank (a draw every rank must agree on)."""
    collective = _ACTIVE.get()
    if collective is None:
        return value
    return float(collective.broadcast(torch.tensor([value], dtype=torch.float64))[0])
