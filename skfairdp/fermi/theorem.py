"""Closed-form noise of DP-FERMI's Theorem 3.3 (Lowy, Gupta & Razaviyayn, ICLR 2023).

Kept for reproducing the paper (``calibration="paper"``); the default is a
numeric accountant. The formulas give the standard deviation of Gaussian noise
added to the *minibatch-averaged* gradients, from the moments-accountant bound
``sigma^2 = 2 T ln(1/delta) (m Delta)^2 / (eps^2 n^2)`` applied to the paper's
replace-one sensitivities. They hold only under the theorem's preconditions,
which :func:`theorem_3_3_preconditions` checks.
"""

from __future__ import annotations

import math
from typing import NamedTuple


class FermiSigmas(NamedTuple):
    """Noise standard deviations on the averaged theta- and W-gradients."""

    sigma_theta: float
    sigma_w: float


def theorem_3_3_sigmas(
    *,
    epsilon: float,
    delta: float,
    n_samples: int,
    steps: int,
    rho: float,
    lipschitz: float,
    w_bound: float,
    n_classes: int,
    sensitive_only: bool,
) -> FermiSigmas:
    """Theorem 3.3's sigma_theta and sigma_w.

    Parameters
    ----------
    epsilon, delta : float
        Target guarantee.
    n_samples : int
        ``n``.
    steps : int
        ``T``.
    rho : float
        Lower bound on every group's frequency.
    lipschitz : float
        ``L_theta`` (skfairdp passes the clipping norm).
    w_bound : float
        ``D`` (skfairdp passes the W-ball radius).
    n_classes : int
        ``l``.
    sensitive_only : bool
        Part (a), DP with respect to the sensitive attribute only; otherwise
        part (b), all features, as stated in the theorem.
    """
    log_term = math.log(1.0 / delta) * steps / (epsilon**2 * n_samples**2)
    if sensitive_only:
        var_w = 16.0 * log_term / rho
        var_theta = 16.0 * lipschitz**2 * w_bound**2 * log_term / rho
    else:
        var_w = 32.0 * log_term * (1.0 / rho + w_bound**2)
        var_theta = (
            64.0 * lipschitz**2 * w_bound**2 * log_term / rho
            + 32.0 * w_bound**4 * lipschitz**2 * n_classes**2 * log_term
        )
    return FermiSigmas(math.sqrt(var_theta), math.sqrt(var_w))


def theorem_3_3_preconditions(
    *, epsilon: float, delta: float, n_samples: int, batch_size: float, steps: int
) -> list[str]:
    """The theorem's violated preconditions, as messages (empty when all hold)."""
    problems = []
    if epsilon > 2.0 * math.log(1.0 / delta):
        problems.append(f"epsilon={epsilon:g} > 2 ln(1/delta) = {2 * math.log(1 / delta):.3g}")
    needed = (n_samples * math.sqrt(epsilon) / (2.0 * batch_size)) ** 2
    if steps < needed:
        problems.append(f"T={steps} < (n sqrt(eps) / (2m))^2 = {needed:.0f}")
    return problems
