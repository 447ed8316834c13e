"""Which rows a rank holds, where its sampling randomness comes from, and its Poisson batches.

A data-parallel fit samples each shard independently at the fit's rate ``q``
(:class:`ShardedPoissonSampler`): every row of every shard joins each step's
batch with probability ``q``, independently of every other row and step. The
union of the ranks' batches is therefore exactly a Poisson sample of all rows at
rate ``q`` -- the event the accountant prices, whatever the number of ranks.
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy.random import RandomSource
from ..privacy.sampling import PoissonSampler

__all__ = ["ShardedPoissonSampler", "contiguous_shards", "sampling_source"]

#: Mixed into a seed to derive the ranks' sampling streams (never a seed's own stream).
_SAMPLING_STREAM = 0x5EED5A


def contiguous_shards(n_samples: int, world_size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of each rank's block of ``n_samples`` rows (sizes differ by at most 1)."""
    n, w = int(n_samples), int(world_size)
    return [(r * n // w, (r + 1) * n // w) for r in range(w)]


def sampling_source(random: RandomSource, rank: int) -> RandomSource:
    """Rank ``rank``'s sampling stream: derived from ``(seed, rank)``, or the OS CSPRNG.

    Seeded: independent of the fit's noise stream (``random``) and of every other
    rank's, and the same in a one-process run that samples the shard of ``rank``.
    """
    if random.secure_mode:
        return RandomSource(secure_mode=True, device=random.device)
    sequence = np.random.SeedSequence([random.seed, _SAMPLING_STREAM, int(rank)])
    seed = int(sequence.generate_state(1, dtype=np.uint32)[0] % np.iinfo(np.int32).max)
    return RandomSource(seed, device=random.device)


class ShardedPoissonSampler:
    """Poisson batches of rate ``sampling_rate`` over shards, each sampled by its own stream.

    Yields indices into the concatenation of the held shards (a rank holds one,
    a one-process check holds all). The normaliser is the expected batch size of
    all ``n_total`` rows, ``q * n_total``, the same on every rank.

    Parameters
    ----------
    shard_sizes : sequence of int
        Rows of each held shard, in order.
    sampling_rate : float
        ``q`` in ``(0, 1]``, the same on every rank.
    sources : sequence of RandomSource
        One sampling stream per held shard.
    n_total : int
        Rows of all shards of all ranks.
    """

    poisson = True

    def __init__(self, shard_sizes, sampling_rate: float, sources, n_total: int):
        self.samplers = [
            PoissonSampler(size, sampling_rate, source)
            for size, source in zip(shard_sizes, sources)
        ]
        self.offsets = np.concatenate([[0], np.cumsum(shard_sizes)[:-1]]).astype(np.int64)
        self.sampling_rate = float(sampling_rate)
        self.n_total = int(n_total)

    @property
    def expected_batch_size(self) -> float:
        return self.sampling_rate * self.n_total

    @property
    def steps_per_epoch(self) -> int:
        return max(1, math.ceil(1.0 / self.sampling_rate))

    def epoch(self):
        """Yield the batches of one (expected) epoch: each shard's batch, concatenated."""
        parts = [sampler.sample(self.steps_per_epoch) for sampler in self.samplers]
        for step in zip(*parts):
            if len(step) == 1:
                yield step[0]
            else:
                yield np.concatenate([idx + offset for idx, offset in zip(step, self.offsets)])
