"""A gradient sum and a noisy count released on the same Poisson batch, and their calibration.

:class:`~skfairdp.GlobalScalingDPClassifier` (the clip fraction) and
:class:`~skfairdp.baselines.DPSGDFClassifier` (the group counts) release, each
step, a gradient sum (multiplier ``z1``) and a count (multiplier ``z2``) computed
on the same batch. How such a step is accounted, by the parameter
``calibration``:

``"accountant"`` (sound, default)
    one sampled Gaussian mechanism with ``z_eff = (z1^-2 + z2^-2)^(-1/2)``;
    ``z1`` is raised so that ``z_eff`` is the DP-SGD multiplier for the target.
``"paper"`` (the papers' accounting, for reproduction)
    two sampled Gaussian mechanisms composed as if their batches were
    independent. The batch is shared, so this under-states epsilon (slightly
    at ``z2 = 10``; a lot for small ``z2``).

``count_noise_multiplier="auto"`` sizes ``z2`` from ``z1``
(:func:`auto_count_noise_multiplier`).
"""

from __future__ import annotations

import math
import warnings

import dp_accounting

from .._fit.context import FitContext
from ..privacy import (
    calibration,
    epsilon_spent,
    joint_noise_multiplier,
    sampled_gaussian_steps_event,
)
from ..privacy.events import compose

#: Values of ``calibration`` (the shared parameter's options).
CALIBRATIONS = ("accountant", "paper")

#: ``count_noise_multiplier="auto"``: the paper's ``z2 = 10`` while that leaves the
#: gradient at least ``AUTO_COUNT_RATIO**-1`` of the step's precision, else
#: ``z2 = AUTO_COUNT_RATIO * z_eff`` (small data, where the target needs ``z_eff``
#: near or above 10): the gradient's multiplier is then ``z_eff * sqrt(9/8)``,
#: 6% more noise, and the count's noise grows with the gradient's.
AUTO_COUNT_RATIO = 3.0
PAPER_COUNT_NOISE_MULTIPLIER = 10.0


def step_events(
    noise_multiplier: float,
    count_noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    calibration: str = "accountant",
) -> dp_accounting.DpEvent:
    """The event of ``steps`` steps that each release a gradient sum and a count (the plan).

    Calibration plans with it; the fit's ``dp_event_`` is what its mechanisms
    recorded (equal to this for the executed steps, up to the order of a
    composition).

    Parameters
    ----------
    noise_multiplier : float
        ``z1``: gradient-noise std over the per-sample sensitivity.
    count_noise_multiplier : float
        ``z2``: count-noise std over the count's sensitivity (1); ``inf`` when
        the step releases no count.
    sampling_rate : float
        Poisson rate ``q``.
    steps : int
        Number of steps executed.
    calibration : {"accountant", "paper"}, default="accountant"
        See the module docstring.
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if calibration == "accountant" or math.isinf(count_noise_multiplier):
        z_eff = joint_noise_multiplier(noise_multiplier, count_noise_multiplier)
        return sampled_gaussian_steps_event(z_eff, sampling_rate, steps)
    return compose(
        [
            sampled_gaussian_steps_event(noise_multiplier, sampling_rate, steps),
            sampled_gaussian_steps_event(count_noise_multiplier, sampling_rate, steps),
        ]
    )


def auto_count_noise_multiplier(noise_multiplier: float) -> float:
    """``z2`` of ``count_noise_multiplier="auto"`` for a gradient multiplier ``z1``.

    ``max(10, 2 sqrt(2) z1)``: with ``z2 = 2 sqrt(2) z1`` the effective multiplier
    is ``z1 sqrt(8/9)`` and ``z2 = 3 z_eff`` (:data:`AUTO_COUNT_RATIO`).
    """
    r = AUTO_COUNT_RATIO
    return max(PAPER_COUNT_NOISE_MULTIPLIER, float(noise_multiplier) * math.sqrt(r * r - 1))


def split_auto_noise_multiplier(effective: float) -> float:
    """Gradient multiplier ``z1`` whose ``"auto"`` count keeps the joint one ``>= effective``."""
    if effective < PAPER_COUNT_NOISE_MULTIPLIER:
        z1 = split_noise_multiplier(effective, PAPER_COUNT_NOISE_MULTIPLIER)
        if auto_count_noise_multiplier(z1) == PAPER_COUNT_NOISE_MULTIPLIER:
            return z1
    r = AUTO_COUNT_RATIO
    z1 = effective * r / math.sqrt(r * r - 1)
    while joint_noise_multiplier(z1, auto_count_noise_multiplier(z1)) < effective:
        z1 = math.nextafter(z1, math.inf)
    return z1


def split_noise_multiplier(effective: float, count_noise_multiplier: float) -> float:
    """Gradient multiplier ``z1`` with ``(z1^-2 + z2^-2)^(-1/2) >= effective``.

    Raises a ValueError naming ``count_noise_multiplier`` when ``z2 <= effective``
    (the count alone would already spend the whole budget).
    """
    z2 = float(count_noise_multiplier)
    if math.isinf(z2):
        return effective
    if not z2 > effective:
        raise ValueError(
            f"count_noise_multiplier={z2:g} must exceed the effective noise multiplier "
            f"{effective:.4g} that the target epsilon needs: the noisy count alone would spend "
            "the whole budget. Increase count_noise_multiplier (the paper uses 10) or epsilon."
        )
    z1 = (effective**-2 - z2**-2) ** -0.5
    while joint_noise_multiplier(z1, z2) < effective:  # float rounding: never overspend
        z1 = math.nextafter(z1, math.inf)
    return z1


def paper_noise_multiplier(epsilon: float, ctx: FitContext, count_noise_multiplier: float) -> float:
    """``z1`` of ``calibration="paper"``: gradient and count composed as if independent.

    Raises a ValueError when the counts alone spend the target ``epsilon``.
    """
    q, steps = ctx.sampling_rate, ctx.planned_steps
    count_only = epsilon_spent(
        sampled_gaussian_steps_event(count_noise_multiplier, q, steps), ctx.delta
    ).epsilon
    if count_only >= epsilon:
        raise ValueError(
            f"count_noise_multiplier={count_noise_multiplier:g}: the noisy counts alone "
            f"spend epsilon={count_only:.4g} >= the target epsilon={epsilon:g}; "
            "increase count_noise_multiplier or epsilon."
        )

    def composed(z):
        return ctx.with_steps(step_events(z, count_noise_multiplier, q, steps, "paper"))

    return calibration.calibrate_noise_multiplier(epsilon, ctx.delta, composed)


def warn_paper_accounting(ctx: FitContext, reported_epsilon: float, stacklevel: int) -> None:
    """Warn that ``calibration="paper"`` under-states epsilon, giving the sound (joint) one."""
    sound = epsilon_spent(ctx.recorder.build("joint"), ctx.delta)
    warnings.warn(
        f"calibration='paper' reproduces the paper's accounting, which composes the "
        f"gradient and the count as if their batches were independent; they share the "
        f"batch, and the sound (joint) epsilon of this fit is {sound.epsilon:.4g}, not "
        f"{reported_epsilon:.4g}. Use calibration='accountant' outside reproductions.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )
