"""Data-parallel training on ``torch.distributed``: one fit, its rows split over processes.

When the user's script has initialised a process group (``torchrun``; gloo on
CPU, NCCL on GPUs) with more than one rank, ``fit`` of every estimator on the fit
template trains data-parallel: each rank Poisson-samples its shard at the fit's
rate ``q``, clips and sums locally, and every release is the sum over ranks of
the exact local sums plus one noise draw (rank 0's), in one all-reduce per
release (:mod:`skfairdp.privacy.collective`). See :doc:`/distributed`.

- :mod:`.world`: whether a fit is data-parallel; :func:`data_parallel` chooses.
- :mod:`.collective`: the all-reduce and broadcast on a process group.
- :mod:`.sharding`: contiguous shards, each rank's sampling stream, the sampler.
- :mod:`.fit`: what the fit template does differently in a data-parallel fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {"data_parallel": "world", "DataParallelConfig": "world"}
__all__ = ["DataParallelConfig", "data_parallel"]

if TYPE_CHECKING:  # pragma: no cover
    from .world import DataParallelConfig, data_parallel

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
