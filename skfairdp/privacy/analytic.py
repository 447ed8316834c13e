"""Exact (epsilon, delta) of one Gaussian release (Balle & Wang 2018, Theorem 8).

Used to size a one-off release (a noisy histogram) as a share of the budget:
unlike an RDP conversion, which has a floor (about 0.0064 at delta = 5e-7 with
dp-accounting's orders), the exact curve reaches every epsilon > 0, so a share
of a small budget is always feasible. The fit's total is still accounted by the
fit's accountant over the whole executed event.
"""

from __future__ import annotations

import math

from scipy.stats import norm


def gaussian_delta(epsilon: float, noise_multiplier: float, sensitivity: float = 1.0) -> float:
    """``delta(epsilon)`` of ``N(0, (z * 1)^2)`` noise on a value of L2 sensitivity ``sensitivity``.

    ``Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)`` with ``s = z``, ``D`` the
    sensitivity (exact; Balle & Wang 2018, Theorem 8).
    """
    s, d = float(noise_multiplier), float(sensitivity)
    a, b = d / (2.0 * s), epsilon * s / d
    # e^eps * Phi(x) in log space, so large epsilon does not overflow
    tail = math.exp(epsilon + norm.logcdf(-a - b)) if epsilon + norm.logcdf(-a - b) > -745 else 0.0
    return max(0.0, float(norm.cdf(a - b)) - tail)


def gaussian_noise_multiplier(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest std ``z`` with ``gaussian_delta(epsilon, z, sensitivity) <= delta``.

    Rounded upwards (bisection to a relative 1e-6), so the returned noise never
    overspends. ``epsilon > 0`` and ``0 < delta < 1``.
    """
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"need epsilon > 0 and 0 < delta < 1, got {epsilon!r}, {delta!r}")
    lo, hi = 0.0, 1.0
    while gaussian_delta(epsilon, hi, sensitivity) > delta:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-6 * hi:
        mid = 0.5 * (lo + hi)
        if gaussian_delta(epsilon, mid, sensitivity) > delta:
            lo = mid
        else:
            hi = mid
    return hi
