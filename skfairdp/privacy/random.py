"""Where a fit's randomness comes from: a seeded generator, or the OS CSPRNG.

Seeded noise (``random_state``) makes experiments reproducible and is *not* a
deployment setting: whoever knows the seed can subtract the noise.
``secure_mode=True`` draws every noise and sampling bit from ``os.urandom``.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from sklearn.utils import check_random_state


class RandomSource:
    """Uniforms for sampling and Gaussians for noise, from one seed or the OS.

    Parameters
    ----------
    random_state : None, int or numpy RandomState
        Seed, as in scikit-learn, except that ``None`` takes 63 bits of OS entropy, not a
        draw from numpy's global RNG (which a notebook's ``np.random.seed`` would make
        repeat). Ignored when ``secure_mode`` is True.
    secure_mode : bool
        Draw all randomness from the OS CSPRNG (``os.urandom``).
    device : torch.device or str
        Device on which Gaussian noise is returned.
    """

    def __init__(self, random_state=None, *, secure_mode: bool = False, device="cpu"):
        self.secure_mode = bool(secure_mode)
        self.device = torch.device(device)
        # whether the user chose the stream (experiments): only then may a fitted
        # object keep a seed of it (:meth:`shareable_seed`)
        self.user_seeded = random_state is not None
        if self.secure_mode:
            self.seed = None
            self.cpu_generator = None
            self.noise_generator = None
            return
        if random_state is None:
            # fresh OS entropy, not numpy's global RNG: after a notebook's np.random.seed(0)
            # an unseeded fit's noise would repeat, and anyone knowing that seed could
            # subtract it; 63 bits, where a 31-bit seed can be searched exhaustively
            self.seed = int.from_bytes(os.urandom(8), "little") >> 1
        else:
            self.seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
        self._children = np.random.SeedSequence(self.seed)
        self.cpu_generator = torch.Generator().manual_seed(self.seed)
        if self.device.type == "cpu":
            self.noise_generator = self.cpu_generator
        else:
            self.noise_generator = torch.Generator(self.device).manual_seed(self.seed + 1)

    def uniform(self, size: int) -> np.ndarray:
        """``size`` float64 uniforms in ``(0, 1]``."""
        if self.secure_mode:
            bits = np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
            return ((bits >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53
        u = torch.rand(size, generator=self.cpu_generator, dtype=torch.float64).numpy()
        return 1.0 - u  # (0, 1]

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of ``range(n)`` (non-private training only)."""
        if self.secure_mode:
            return np.argsort(self.uniform(n), kind="stable")
        return torch.randperm(n, generator=self.cpu_generator).numpy()

    def normal(self, shape, std: float, dtype=torch.float32) -> torch.Tensor:
        """Gaussian noise ``N(0, std^2)`` of ``shape`` on :attr:`device`."""
        shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        if self.secure_mode:
            size = int(np.prod(shape, dtype=np.int64))
            u1 = self.uniform((size + 1) // 2)
            u2 = self.uniform((size + 1) // 2)
            radius = np.sqrt(-2.0 * np.log(u1))
            z = np.concatenate([radius * np.cos(2 * np.pi * u2), radius * np.sin(2 * np.pi * u2)])
            return torch.from_numpy(z[:size] * std).to(self.device, dtype).reshape(shape)
        noise = torch.empty(shape, device=self.device, dtype=dtype)
        return noise.normal_(0.0, std, generator=self.noise_generator)

    def spawn(self) -> RandomSource:
        """An independent child source (same mode and device).

        For a meta-estimator that fits an oracle many times under one
        ``random_state``: each call gives a stream independent of the parent's and
        of every other child's (numpy ``SeedSequence`` spawning), so T oracle fits
        draw T independent batch sequences and noise, instead of cloning one seed
        and repeating the same noise T times. In ``secure_mode`` the child draws
        from the OS CSPRNG too.
        """
        if self.secure_mode:
            return RandomSource(secure_mode=True, device=self.device)
        if not self.user_seeded:  # fresh OS entropy: no 31-bit child seed to search
            return RandomSource(device=self.device)
        (child,) = self._children.spawn(1)
        seed = int(child.generate_state(1, dtype=np.uint32)[0] % np.iinfo(np.int32).max)
        source = RandomSource(seed, device=self.device)
        source.user_seeded = self.user_seeded
        return source

    def shareable_seed(self) -> int | None:
        """A seed a fitted object may keep, for draws that are not noise (posterior intervals).

        The stream's own seed where the user chose it (they can regenerate its noise
        anyway); otherwise a fresh seed unrelated to the noise, since the stream's seed
        would let anyone holding the object regenerate the noise and subtract it;
        ``None`` under ``secure_mode``. Draws nothing from the stream.
        """
        if self.secure_mode:
            return None
        if self.user_seeded:
            return self.seed
        fresh = np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0]
        return int(fresh % np.iinfo(np.int32).max)

    def estimator_params(self) -> dict:
        """``{"random_state": ..., "secure_mode": ...}`` for an estimator seeded from this source.

        ``estimator.set_params(**source.spawn().estimator_params())`` gives an oracle a
        stream determined by (and independent like) the child: seeded from the child's
        seed, or ``secure_mode=True`` when the source is secure. From a source the
        user did not seed, ``random_state=None``: the oracle draws fresh entropy, and
        no fitted object keeps a seed from which its noise could be regenerated.
        """
        if self.secure_mode:
            return {"random_state": None, "secure_mode": True}
        if not self.user_seeded:  # a derived seed kept in a fitted oracle would regenerate
            return {"random_state": None, "secure_mode": False}  # its noise: fresh entropy
        return {"random_state": self.seed, "secure_mode": False}

    def torch_seed(self) -> int:
        """A seed for torch's global RNG (module initialisation)."""
        if self.secure_mode:
            return int.from_bytes(os.urandom(7), "little")
        return int(torch.randint(2**62, (1,), generator=self.cpu_generator))
