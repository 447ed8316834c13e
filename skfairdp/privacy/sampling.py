"""Batch samplers: Poisson sampling for private training, shuffled epochs otherwise."""

from __future__ import annotations

import math

import numpy as np

from .random import RandomSource


def bernoulli_positions(total: int, q: float, random: RandomSource) -> np.ndarray:
    """Sorted positions of the successes among ``total`` independent Bernoulli(``q``) trials.

    The gaps between successes are i.i.d. geometric, ``floor(log U / log(1 - q)) + 1``
    for ``U`` uniform in ``(0, 1]``: the scan draws about ``total * q`` uniforms,
    not ``total``. ``q`` in ``(0, 1)``.
    """
    log1m_q = math.log1p(-q)
    chunks, position = [], -1
    while True:
        expected = (total - 1 - position) * q
        size = int(expected + 6.0 * math.sqrt(expected) + 16)
        gaps = np.floor(np.log(random.uniform(size)) / log1m_q).astype(np.int64) + 1
        positions = position + np.cumsum(gaps)
        if positions[-1] >= total:
            chunks.append(positions[positions < total])
            break
        chunks.append(positions)
        position = int(positions[-1])
    return np.concatenate(chunks)


class PoissonSampler:
    """Each row joins each batch independently with probability ``sampling_rate``.

    Batch sizes vary (an empty batch is still a step); the expected batch size is
    ``sampling_rate * n_samples``. Sampling is O(batch size) per step: gaps between
    selected rows are geometric.

    Parameters
    ----------
    n_samples : int
        Number of rows.
    sampling_rate : float
        ``q`` in ``(0, 1]``.
    random : RandomSource
        Source of uniforms.
    """

    poisson = True  # the engine records its steps as Poisson-sampled at sampling_rate

    def __init__(self, n_samples: int, sampling_rate: float, random: RandomSource):
        if not 0 < sampling_rate <= 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate}")
        self.n_samples = int(n_samples)
        self.sampling_rate = float(sampling_rate)
        self.random = random

    @property
    def expected_batch_size(self) -> float:
        return self.sampling_rate * self.n_samples

    @property
    def steps_per_epoch(self) -> int:
        return max(1, math.ceil(1.0 / self.sampling_rate))

    def sample(self, steps: int = 1) -> list[np.ndarray]:
        """Indices of ``steps`` independent Poisson batches, each sorted.

        The ``steps * n`` Bernoulli trials are scanned as one sequence whose
        successes have geometric gaps (:func:`bernoulli_positions`), so the cost
        is proportional to the number of selected rows.
        """
        n, q = self.n_samples, self.sampling_rate
        if q >= 1.0:
            return [np.arange(n) for _ in range(steps)]
        positions = bernoulli_positions(n * steps, q, self.random)
        bounds = np.searchsorted(positions, np.arange(1, steps) * n)
        return [part - i * n for i, part in enumerate(np.split(positions, bounds))]

    def epoch(self):
        """Yield the batches of one (expected) epoch."""
        yield from self.sample(self.steps_per_epoch)


class ShuffledBatches:
    """Fixed-size batches of a fresh permutation each epoch (non-private training only)."""

    def __init__(self, n_samples: int, batch_size: int, random: RandomSource):
        self.n_samples = int(n_samples)
        self.batch_size = int(min(batch_size, n_samples))
        self.random = random

    @property
    def expected_batch_size(self) -> float:
        return float(self.batch_size)

    @property
    def sampling_rate(self) -> float:
        return self.batch_size / self.n_samples

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.n_samples / self.batch_size)

    def epoch(self):
        order = self.random.permutation(self.n_samples)
        for start in range(0, self.n_samples, self.batch_size):
            yield np.sort(order[start : start + self.batch_size])


class CappedSampler:
    """Stops a sampler after ``max_steps`` batches in total (the last epoch is partial).

    For a fixed noise multiplier whose budget allows fewer steps than planned.
    """

    def __init__(self, sampler, max_steps: int):
        self.sampler = sampler
        self.max_steps = int(max_steps)
        self.taken = 0

    @property
    def expected_batch_size(self) -> float:
        return self.sampler.expected_batch_size

    @property
    def sampling_rate(self) -> float:
        return self.sampler.sampling_rate

    @property
    def poisson(self) -> bool:
        return getattr(self.sampler, "poisson", False)

    @property
    def steps_per_epoch(self) -> int:
        return self.sampler.steps_per_epoch

    def close(self) -> None:
        """Close the wrapped sampler if it holds resources (an out-of-core sampler)."""
        getattr(self.sampler, "close", lambda: None)()

    def epoch(self):
        """Yield the wrapped sampler's batches of one epoch, until ``max_steps`` in total."""
        for batch in self.sampler.epoch():
            if self.taken >= self.max_steps:
                return
            self.taken += 1
            yield batch
