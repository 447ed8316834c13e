"""What the fit template does differently when a fit is data-parallel.

:func:`data_parallel_fit` opens the block of one fit: ``None`` for an ordinary
fit, else a :class:`DataParallelFit` whose collective sums every release over the
ranks (:mod:`skfairdp.privacy.collective`) while the fit runs. The template then
asks it for

- the rows this rank trains on (:meth:`DataParallelFit.take_rows`), after
  checking that the ranks agree on the estimator, its parameters, the features,
  the classes and the groups (and, for ``shard="full"``, on the data);
- the total number of rows ``n`` (what ``"auto"`` rules, ``delta`` and the
  sampling rate ``q = batch_size / n`` are computed from, as in one process);
- the sampler (:class:`~skfairdp.distributed.sharding.ShardedPoissonSampler`:
  this rank's shard at rate ``q``, normalised by ``q n``);
- rank 0's initial model on every rank (:meth:`DataParallelFit.share_module`).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
from collections.abc import Iterator

import numpy as np
import torch

from ..privacy.collective import summed_over
from ..privacy.random import RandomSource
from .collective import OneProcess, TorchCollective
from .sharding import ShardedPoissonSampler, contiguous_shards, sampling_source
from .world import configured, initialised_world_size

__all__ = ["DataParallelFit", "data_parallel_fit"]

#: ``shard="full"``: rows of ``X`` hashed to check that every rank passed the same data
#: (all of ``y``, the groups and the weights are).
HASHED_ROWS = 65_536


@contextlib.contextmanager
def data_parallel_fit(estimator) -> Iterator[DataParallelFit | None]:
    """The block of one fit: its :class:`DataParallelFit`, or None when it runs in one process."""
    config = configured()
    if config.simulate is not None:
        yield DataParallelFit(OneProcess(config.simulate), "full")
        return
    if config.enabled is False:
        yield None
        return
    world_size = initialised_world_size(config.group)
    if config.enabled and world_size == 0:
        raise RuntimeError(
            "data_parallel(True): torch.distributed is not initialised; call "
            "torch.distributed.init_process_group first (e.g. under torchrun)"
        )
    if world_size < 2 and not (config.enabled and world_size == 1):
        yield None
        return
    parallel = DataParallelFit(TorchCollective(config.group), config.shard)
    with summed_over(parallel.collective):
        yield parallel


class DataParallelFit:
    """One fit's view of the ranks: its rows, ``n``, its sampler, the shared initial model.

    Parameters
    ----------
    collective : TorchCollective or OneProcess
    shard : {"full", "local"}
        What each rank passed to ``fit`` (see :func:`~skfairdp.distributed.data_parallel`).
    """

    def __init__(self, collective, shard: str):
        self.collective = collective
        self.shard = shard
        self.rank, self.world_size = collective.rank, collective.world_size
        self.one_process = isinstance(collective, OneProcess)
        self.shard_sizes: list[int] = []
        self.held: list[int] = []

    @property
    def n_total(self) -> int:
        """Rows of all ranks."""
        return int(sum(self.shard_sizes))

    def take_rows(self, estimator, X, y, groups, sample_weight):
        """This rank's rows of the validated data, once the ranks agree; returns the four."""
        if math.isinf(float(estimator.epsilon)):
            raise ValueError(
                "a data-parallel fit needs a finite epsilon (epsilon=inf trains without "
                "noise, in one process): fit outside skfairdp.distributed.data_parallel, "
                "or with data_parallel(False)"
            )
        if not getattr(estimator, "_data_parallel", True):
            raise ValueError(
                f"{type(estimator).__name__} cannot fit data-parallel: each step uses "
                "statistics of the whole batch that no rank holds; fit it in one process "
                "(skfairdp.distributed.data_parallel(False))"
            )
        n = X.shape[0]
        self._check_agreement(estimator, X, y, groups, sample_weight)
        if self.shard == "local":
            self.shard_sizes = [int(k) for k in self.collective.gather_objects(n)]
            self.held = [self.rank]
        else:
            bounds = contiguous_shards(n, self.world_size)
            self.shard_sizes = [stop - start for start, stop in bounds]
            self.held = list(range(self.world_size)) if self.one_process else [self.rank]
        if min(self.shard_sizes) < 1:
            raise ValueError(
                f"a data-parallel fit needs at least one row per rank; the shards have "
                f"{self.shard_sizes} rows"
            )
        if self.shard == "local" or self.one_process:
            return X, y, groups, sample_weight
        start, stop = contiguous_shards(n, self.world_size)[self.rank]
        rows = slice(start, stop)
        weights = None if sample_weight is None else sample_weight[rows]
        return X[rows], y[rows], groups[rows], weights

    def sampler(self, sampling_rate: float, random: RandomSource) -> ShardedPoissonSampler:
        """Poisson batches of the held shards at ``sampling_rate``, each shard its rank's stream."""
        return ShardedPoissonSampler(
            [self.shard_sizes[r] for r in self.held],
            sampling_rate,
            [sampling_source(random, r) for r in self.held],
            self.n_total,
        )

    def share_module(self, module: torch.nn.Module) -> None:
        """Every rank starts from rank 0's parameters and buffers (one broadcast)."""
        if self.one_process:
            return
        tensors = [*module.parameters(), *module.buffers()]
        if not tensors:
            return
        flat = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in tensors])
        flat = self.collective.broadcast(flat)
        offset = 0
        with torch.no_grad():
            for t in tensors:
                t.copy_(flat[offset : offset + t.numel()].view(t.shape).to(t.dtype))
                offset += t.numel()

    # -- the ranks must fit the same model on the same kind of data -----------------
    def _check_agreement(self, estimator, X, y, groups, sample_weight) -> None:
        if self.one_process:
            return
        mine = _fingerprint(estimator, X, y, groups, sample_weight, self.shard)
        everyone = self.collective.gather_objects(mine)
        for key in mine:
            values = [rank_print[key] for rank_print in everyone]
            if any(v != values[0] for v in values):
                raise ValueError(_disagreement(key, values))


def _plain(value) -> str:
    """A parameter's repr without memory addresses (objects built alike compare equal)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def _fingerprint(estimator, X, y, groups, sample_weight, shard: str) -> dict:
    encoder = getattr(estimator, "group_encoder_", None)
    params = estimator.get_params(deep=False)
    out = {
        "estimator": type(estimator).__qualname__,
        "parameters": {name: _plain(value) for name, value in sorted(params.items())},
        "n_features_in_": int(X.shape[1]),
        "classes_": _plain(list(getattr(estimator, "classes_", []))),
        "groups": _plain(None if encoder is None else list(encoder.group_labels_)),
        "sample_weight given": sample_weight is not None,
    }
    if shard == "full":
        digest = hashlib.blake2b(digest_size=16)
        if X.shape[0] > HASHED_ROWS:  # a check, not a proof: evenly spaced rows of X
            X = X[np.linspace(0, X.shape[0] - 1, HASHED_ROWS).astype(np.int64)]
        for part in (X, y, groups, sample_weight):
            if part is not None:
                digest.update(np.ascontiguousarray(part).data)
        out["rows (shard='full': every rank passes all rows)"] = int(X.shape[0])
        out["data (shard='full': every rank passes the same X, y, groups, weights)"] = (
            digest.hexdigest()
        )
    return out


def _disagreement(key: str, values: list) -> str:
    if key == "parameters":
        names = sorted({name for v in values for name in v if v.get(name) != values[0].get(name)})
        detail = "; ".join(
            f"{name}: " + ", ".join(f"rank {r}: {v.get(name)}" for r, v in enumerate(values))
            for name in names
        )
        return f"data-parallel fit: the ranks' estimators have different parameters ({detail})"
    shown = ", ".join(f"rank {r}: {str(v)[:80]}" for r, v in enumerate(values))
    return f"data-parallel fit: the ranks disagree on {key} ({shown})"
