"""Calibration: the smallest noise for a budget, or the most steps for a fixed noise.

Both searches take the *planned* event as a function of the searched parameter
(the event a fit would record if it ran with that parameter) and ask the
accountant facade (:func:`~skfairdp.privacy.accountant.epsilon_spent`) what it
costs, so every estimator calibrates against the same accounting that later
prices its recorded ``dp_event_``.

Why not :func:`dp_accounting.mechanism_calibration.calibrate_dp_mechanism`: it
composes the event into a fresh dp-accounting ``PrivacyAccountant``, while our
events may hold several releases on one Poisson batch (accounted by
:mod:`skfairdp.privacy.joint`, which no dp-accounting accountant accepts) and
RDP epsilons come from the facade's cached curves; its Brent search with an
absolute tolerance would also move every calibrated multiplier (and so every
seeded model) within that tolerance; and in discrete mode it returns a step
count within one of the largest, not the largest. The bisections below are
the ones the estimators have always used (same numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import dp_accounting

from .accountant import epsilon_spent, resolve_accountant

__all__ = ["calibrate_noise_multiplier", "max_steps_within"]

# The multiplier search gives up above this value.
MAX_NOISE_MULTIPLIER = 1e6


def calibrate_noise_multiplier(
    target_epsilon: float,
    delta: float,
    make_event: Callable[[float], dp_accounting.DpEvent],
    *,
    accountant: str = "auto",
    privacy_unit: str = "record",
    tol: float = 1e-3,
) -> float:
    """Smallest noise multiplier whose planned event spends at most ``target_epsilon``.

    Doubles from 1 until the event meets the target, then bisects; the search
    is rounded upwards, so the returned multiplier never overspends.

    Parameters
    ----------
    target_epsilon : float
        Target epsilon, ``> 0``; ``inf`` returns 0 (no noise).
    delta : float
        Target delta in ``(0, 1)``.
    make_event : callable
        Maps a noise multiplier to the event a fit would execute with it
        (epsilon must decrease as the multiplier grows).
    accountant, privacy_unit : str
        See :func:`~skfairdp.privacy.accountant.make_accountant`.
    tol : float
        Relative tolerance on the multiplier.

    Returns
    -------
    float
        The noise multiplier.
    """
    if math.isinf(target_epsilon):
        return 0.0
    resolve_accountant(accountant, privacy_unit)  # fail early

    def spent(z: float) -> float:
        return epsilon_spent(
            make_event(z), delta, accountant=accountant, privacy_unit=privacy_unit
        ).epsilon

    lo, hi = 0.0, 1.0
    while spent(hi) > target_epsilon:
        lo, hi = hi, hi * 2.0
        if hi > MAX_NOISE_MULTIPLIER:
            floor = spent(hi)
            raise ValueError(
                f"no noise multiplier reaches epsilon={target_epsilon:g} at delta={delta:g}: "
                f"even noise multiplier {hi:.3g} spends epsilon={floor:.4g} under the "
                f"{resolve_accountant(accountant, privacy_unit)} accountant (its conversion "
                "from the accountant's curve to (epsilon, delta) has that floor, or another "
                "release in the event already spends more)"
            )
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if spent(mid) > target_epsilon:
            lo = mid
        else:
            hi = mid
    return hi


def max_steps_within(
    target_epsilon: float,
    delta: float,
    make_event: Callable[[int], dp_accounting.DpEvent],
    max_steps: int,
    *,
    accountant: str = "auto",
    privacy_unit: str = "record",
) -> int:
    """Largest step count ``T <= max_steps`` whose planned event spends at most ``target_epsilon``.

    Step capping for a fixed noise multiplier (epsilon grows with ``T``): binary
    search between 1 and ``max_steps``.

    Parameters
    ----------
    target_epsilon : float
        Target epsilon.
    delta : float
        Target delta.
    make_event : callable
        Maps a step count to the event a fit would execute with it.
    max_steps : int
        Cap (e.g. ``max_epochs`` epochs' worth of steps).
    accountant, privacy_unit : str
        See :func:`~skfairdp.privacy.accountant.make_accountant`.

    Returns
    -------
    int
        The step count.

    Raises
    ------
    ValueError
        If a single step already spends more than ``target_epsilon``.
    """

    def spent(steps: int) -> float:
        return epsilon_spent(
            make_event(steps), delta, accountant=accountant, privacy_unit=privacy_unit
        ).epsilon

    one = spent(1)
    if one > target_epsilon:
        raise ValueError(
            f"a single step spends epsilon={one:.4g} > the target epsilon={target_epsilon:g}"
        )
    cap = int(max_steps)
    if spent(cap) <= target_epsilon:
        return cap
    lo, hi = 1, cap  # spent(lo) <= target < spent(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if spent(mid) <= target_epsilon:
            lo = mid
        else:
            hi = mid
    return lo
