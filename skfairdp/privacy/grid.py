"""Closed-form releases as integer noise on an integer statistic (``secure_mode=True``).

A real-valued statistic ``x`` (a sum of clipped values, a weighted count, a
histogram) is released on a grid of step ``g``, a power of two chosen from public
quantities only (the noise scale and the number of cells ``d``, never the data)::

    release = g * (s + Z),   s = rint(x / g)   (clipped to +-2**62),

with integer noise ``Z``. Nothing in the release depends on the low bits of a
floating-point noise draw: ``s`` is an exact integer computed from ``x`` alone,
``Z`` is integer noise from the OS CSPRNG drawn by inverting fixed-point CDF tables
(:mod:`skfairdp.privacy.cdt`: within total variation ``2**-278`` per cell of the
distributions below, see doc/privacy.md for how that is accounted; the exact rejection
samplers of :mod:`skfairdp.privacy.discrete` are the tests' reference), and ``g * (s +
Z)`` is a deterministic function of the private integer ``s + Z`` (post-processing;
its cast to the input's dtype too).

Sensitivity in grid units. If one privacy unit moves ``x`` by ``Delta`` (L2 for the
Gaussian, L1 for the Laplace release), it moves ``x / g`` by ``Delta / g``; rounding
each coordinate moves it by at most ``1/2`` on each of the two datasets, so by less
than ``1`` between them: ``||s - s'||_2 <= Delta / g + sqrt(d)`` and
``||s - s'||_1 <= Delta / g + d``. The release uses the integer ``Delta_g =
ceil(Delta / g) + ceil(sqrt(d))`` (L2) or ``ceil(Delta / g) + d`` (L1), and its noise is
calibrated to ``Delta_g``: the grid costs a relative ``sqrt(d) g / Delta`` more noise,
below ``z 2**-14`` with the grid chosen here (``z sqrt(d) 2**-23`` past ~10**6 cells, where
the Gaussian's grid is capped at ``sigma / g < 2**24``). (Clipping
``s`` to a fixed interval is 1-Lipschitz per coordinate: it cannot raise the
sensitivity.) In a data-parallel fit every rank snaps its local sum to the same grid
and rank 0 adds the noise; one unit lives on one rank, so the bound is the same.

Gaussian (:func:`gaussian_release`), accounted as ``GaussianDpEvent(z)``. The noise is
the discrete Gaussian ``N_Z(0, sigma^2)`` with ``sigma^2 >= (z Delta_g)^2 + rho^2``,
``rho = 4`` (rounded up to a rational by :func:`~skfairdp.privacy.discrete.round_up_sigma2`).

- RDP (the ``record`` accountant): ``N_Z(0, sigma^2)`` on an integer query of L2
  sensitivity ``Delta_g`` is ``Delta_g^2 / (2 sigma^2)``-zCDP (Canonne, Kamath &
  Steinke 2020, Thm 14; Thm 4 in one dimension), i.e. RDP ``alpha Delta_g^2 /
  (2 sigma^2) <= alpha / (2 z^2)``, the continuous Gaussian's curve, which is what
  ``GaussianDpEvent(z)`` charges.
- PLD (and Poisson-subsampled or joint uses): the continuous Gaussian's privacy loss
  distribution does *not* dominate the discrete Gaussian's at equal ``sigma``: at
  ``epsilon = 0`` the discrete one's total variation ``P[Y = 0]`` exceeds the continuous
  ``2 Phi(1 / (2 sigma)) - 1`` (relative ``~1 / (24 sigma^2)``). Hence the margin
  ``rho``: draw ``X ~ N(s, tau^2)`` with ``tau = z Delta_g``, then output ``Y`` with
  ``P[Y = y | X] ∝ exp(-(y - X)^2 / (2 rho^2))``. By Poisson summation the normaliser
  ``sum_j exp(-(j - X)^2 / (2 rho^2))`` is ``rho sqrt(2 pi) (1 +- eta)`` with ``eta = 2
  sum_{k>=1} exp(-2 pi^2 rho^2 k^2) < 1e-137``, so ``P[Y = y]`` is within a factor
  ``exp(+-lambda)``, ``lambda = log((1 + eta) / (1 - eta)) < 1e-136``, of ``N_Z(s, tau^2 +
  rho^2)``, for every integer ``s``. The released noise is thus, coordinate by
  coordinate, a post-processing of the continuous Gaussian mechanism with
  multiplier ``z`` up to a pointwise factor ``exp(+-lambda)`` on every probability;
  over ``n`` released coordinates any ``(epsilon, delta)`` of the continuous mechanism
  (composed, subsampled or not) holds for the discrete one as ``(epsilon + 2 n lambda,
  exp(n lambda) delta)``: for any ``n < 1e100`` a change far below float64 resolution.
  The margin costs a relative ``rho^2 / (2 sigma^2) <= 2**-25`` of noise (in grid
  units ``sigma >= 2**14``).

Laplace (:func:`laplace_release`), accounted as ``LaplaceDpEvent(b)``. The noise is
``floor(L)`` for ``L ~ Laplace(0, t)`` with the integer ``t = ceil(b Delta_g) >= b
Delta_g`` (:func:`~skfairdp.privacy.cdt.two_sided_geometric_cdt`), and the release
adds ``g / 2`` (mean zero). ``s + floor(L) = floor(s + L)`` for an integer ``s``: the
release is exactly a post-processing of the continuous Laplace mechanism of scale
``t`` on ``s`` (L1 sensitivity ``Delta_g``), which ``LaplaceDpEvent(b)`` dominates in
every accountant. (The discrete Laplace ``P[Y] ∝ exp(-|Y| / t)`` itself is ``(Delta_g /
t)``-DP but its PLD is not dominated by the continuous Laplace's: at ``epsilon = 0``
its total variation ``tanh(Delta_g / (2t))`` exceeds ``1 - exp(-Delta_g / (2t))``.)
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import torch

from .cdt import discrete_gaussian_cdt, two_sided_geometric_cdt
from .discrete import round_up_sigma2

__all__ = ["gaussian_release", "grid_step", "laplace_release", "snap"]

#: grid steps per unit of sensitivity per unit of rounding slack (at least)
PRECISION = 2**14
#: margin of the discrete Gaussian over the continuous one it is accounted as
RHO = 4
_CLIP = float(2**62)
_MAX_GRID_SIGMA = 2**24


def grid_step(scale: float, slack: int) -> float:
    """The grid: the power of two ``g <= scale / (PRECISION * slack)`` nearest to it.

    Parameters
    ----------
    scale : float
        The noise's scale in the statistic's units (``z * sensitivity`` or ``b *
        sensitivity``); public.
    slack : int
        The rounding's bound in grid units (``ceil(sqrt(d))`` or ``d``); public.

    Returns
    -------
    float
    """
    target = float(scale) / (PRECISION * max(int(slack), 1))
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"the noise scale must be finite and > 0, got {scale}")
    mantissa, exponent = math.frexp(target)  # target = mantissa * 2**exponent, 0.5 <= m < 1
    return math.ldexp(1.0, exponent - 1)


def _values(total: torch.Tensor) -> np.ndarray:
    return total.detach().to("cpu", torch.float64).numpy().reshape(-1)


def snap(total: torch.Tensor, g: float) -> np.ndarray:
    """``rint(total / g)`` as int64, clipped to ``+-2**62`` (inf to ``+-2**62``, nan to ``-2**62``;
    the releases keep non-finite entries as they were)."""
    return _snap(_values(total), g)


def _snap(x: np.ndarray, g: float) -> np.ndarray:
    s = x / g  # exact (g = 2**e); a new array, changed in place below
    np.fmax(s, -_CLIP, out=s)  # fmax/fmin take the number where one side is nan
    np.fmin(s, _CLIP, out=s)
    return np.rint(s, out=s).astype(np.int64)


def _finish(total: torch.Tensor, x: np.ndarray, grid_values: np.ndarray) -> torch.Tensor:
    """``grid_values`` where ``x`` (``total``'s values) is finite; nan/inf stay (no guarantee)."""
    out = np.where(np.isfinite(x), grid_values, x)
    return torch.as_tensor(out.reshape(tuple(total.shape)), dtype=total.dtype, device=total.device)


def _ceil_sqrt(d: int) -> int:
    r = math.isqrt(d)
    return r if r * r == d else r + 1


@functools.lru_cache(maxsize=256)
def gaussian_grid(sensitivity: float, noise_multiplier: float, d: int):
    """``(g, Delta_g, sigma2)`` of a Gaussian release of ``d`` cells (public quantities only)."""
    slack = _ceil_sqrt(max(d, 1))
    g = grid_step(noise_multiplier * sensitivity, slack)
    # keep sigma / g <= 2**24 (the sampler's 64-bit path) past ~10**6 cells, at a cost
    # of a relative z * sqrt(d) * 2**-23 of noise there
    g = max(g, 2.0 * grid_step(noise_multiplier * sensitivity * PRECISION / _MAX_GRID_SIGMA, 1))
    delta_g = math.ceil(Fraction(sensitivity) / Fraction(g)) + slack
    sigma2 = round_up_sigma2(Fraction(noise_multiplier) ** 2 * delta_g**2 + RHO**2)
    return g, delta_g, sigma2


@functools.lru_cache(maxsize=256)
def laplace_grid(sensitivity: float, laplace_scale: float, d: int):
    """``(g, Delta_g, t)`` of a Laplace release of ``d`` cells (public quantities only)."""
    slack = max(d, 1)
    g = grid_step(laplace_scale * sensitivity, slack)
    delta_g = math.ceil(Fraction(sensitivity) / Fraction(g)) + slack
    return g, delta_g, math.ceil(Fraction(laplace_scale) * delta_g)


def gaussian_release(
    total: torch.Tensor, sensitivity: float, noise_multiplier: float, *, add_noise: bool = True
) -> torch.Tensor:
    """``g * (rint(total / g) + N_Z(0, sigma^2))``: the grid Gaussian release (module docstring).

    Parameters
    ----------
    total : Tensor
        The exact statistic; one unit moves it by at most ``sensitivity`` in L2.
    sensitivity : float
        > 0.
    noise_multiplier : float
        ``z > 0``; the release is accounted as ``GaussianDpEvent(z)``.
    add_noise : bool, default=True
        False on a data-parallel fit's ranks > 0: the local sum is only snapped.

    Returns
    -------
    Tensor
        Same shape, dtype and device as ``total``; every finite entry is ``g`` times
        an integer (up to the final cast to ``total.dtype``).
    """
    d = int(total.numel())
    g, _, sigma2 = gaussian_grid(sensitivity, noise_multiplier, d)
    x = _values(total)
    s = _snap(x, g)
    if add_noise:
        s += discrete_gaussian_cdt(sigma2.sigma2, d)
    return _finish(total, x, s * g)


def laplace_release(
    total: torch.Tensor, sensitivity: float, laplace_scale: float, *, add_noise: bool = True
) -> torch.Tensor:
    """``g * (rint(total / g) + floor(Laplace(0, t)) + 1/2)``: the grid Laplace release.

    Parameters
    ----------
    total : Tensor
        The exact statistic; one unit moves it by at most ``sensitivity`` in L1.
    sensitivity : float
        > 0.
    laplace_scale : float
        ``b > 0``; the release is accounted as ``LaplaceDpEvent(b)``.
    add_noise : bool, default=True
        False on a data-parallel fit's ranks > 0 (snapped only, no offset).

    Returns
    -------
    Tensor
        Same shape, dtype and device as ``total``; finite entries are ``g`` times an
        integer plus ``g / 2`` (the offset on rank 0 only).
    """
    d = int(total.numel())
    g, _, t = laplace_grid(sensitivity, laplace_scale, d)
    x = _values(total)
    s = _snap(x, g)
    if not add_noise:
        return _finish(total, x, s * g)
    s += two_sided_geometric_cdt(t, d)
    return _finish(total, x, s * g + g / 2)
