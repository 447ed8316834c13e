"""One owner of a fit's budget: the noise that meets ``(epsilon, delta)``.

The fit template asks :func:`noise_plan` once; nothing else splits epsilon or
calls the calibration. The planned event of a fit is

    compose(releases outside the steps, steps_event(plan, planned steps))

where the releases outside the steps are those before training (e.g. DP-FERMI's
group histogram, executed already) and after it (e.g. RaCO-DP's noisy selection),
and ``steps_event`` is the estimator's event of its per-step releases under a
:class:`~skfairdp._fit.context.NoisePlan`. How ``epsilon`` becomes the plan:

- ``noise_multiplier`` set: the plan of that gradient multiplier
  (``estimator._plan_for``), and the largest number of steps, at most the planned
  ones, whose planned event stays within the budget;
- ``calibration="paper"``: the paper's own rule (``estimator._paper_plan``);
- otherwise the smallest multiplier that meets the budget (:func:`calibrated_plan`):
  when each step is one joint Gaussian release
  (``estimator._one_gaussian_per_step()``), the joint multiplier is calibrated and
  split into the releases' (``estimator._split_joint``); else the gradient
  multiplier is calibrated through the whole planned event.

A release sized before calibration from a share of the budget (a histogram of
group priors, a selection, a score) takes its multiplier from one of the two rules
here: a share of epsilon (:func:`reserved_noise_multiplier`) or a share of the
budget's zCDP rho (:func:`reserved_zcdp_noise_multiplier`); the accountant then
composes it exactly with the rest.
"""

from __future__ import annotations

import dataclasses
import math

import dp_accounting

from ..privacy import calibration, sampled_gaussian_steps_event
from ..privacy.accountant import PLD_DISCRETIZATION, resolve_accountant
from ..privacy.analytic import gaussian_noise_multiplier
from .context import FitContext, NoisePlan

__all__ = [
    "calibrated_plan",
    "fixed_multiplier_plan",
    "noise_plan",
    "reserved_noise_multiplier",
    "reserved_zcdp_noise_multiplier",
]


def reserved_noise_multiplier(
    share: float, epsilon: float, delta: float, *, sensitivity: float = 1.0
) -> float:
    """Multiplier of a release that alone is ``(share * epsilon, share * delta)``-DP.

    The exact Gaussian curve (Balle & Wang 2018), which reaches any epsilon > 0;
    the release is then accounted with the fit's other releases.
    """
    return gaussian_noise_multiplier(share * epsilon, share * delta, sensitivity=sensitivity)


def reserved_zcdp_noise_multiplier(share: float, epsilon: float, delta: float) -> float:
    """Multiplier of a Gaussian release that takes ``share`` of the budget's zCDP ``rho``.

    ``rho = (sqrt(eps + L) - sqrt(L))^2`` with ``L = log(1/delta)`` is the zCDP that
    ``(epsilon, delta)`` allows; a Gaussian release of multiplier ``z`` is
    ``1 / (2 z^2)``-zCDP. Gentler than :func:`reserved_noise_multiplier` for a small
    share (zCDP composes as a sum), which suits a release made once beside many steps.
    """
    log_inv_delta = math.log(1.0 / delta)
    rho = (math.sqrt(epsilon + log_inv_delta) - math.sqrt(log_inv_delta)) ** 2
    return 1.0 / math.sqrt(2.0 * share * rho)


def noise_plan(estimator, ctx: FitContext) -> NoisePlan:
    """The noise of a private fit of ``estimator`` (see the module docstring)."""
    if estimator.noise_multiplier is not None:
        return fixed_multiplier_plan(estimator, ctx, float(estimator.noise_multiplier))
    if getattr(estimator, "calibration", "accountant") == "paper":
        return estimator._paper_plan(ctx)
    return calibrated_plan(estimator, ctx)


def calibrated_plan(estimator, ctx: FitContext) -> NoisePlan:
    """The plan of the smallest gradient multiplier whose planned event meets the budget."""
    estimator._check_budget(ctx)
    q, steps = ctx.sampling_rate, ctx.planned_steps
    options = estimator._calibration_options()
    try:
        if estimator._one_gaussian_per_step():
            joint = calibration.calibrate_noise_multiplier(
                estimator.epsilon,
                ctx.delta,
                lambda z: ctx.with_steps(sampled_gaussian_steps_event(z, q, steps)),
                **options,
            )
            return estimator._plan_for(estimator._split_joint(joint), ctx)
        z = calibration.calibrate_noise_multiplier(
            estimator.epsilon,
            ctx.delta,
            lambda z: ctx.with_steps(
                estimator._steps_event(estimator._plan_for(z, ctx), ctx, steps)
            ),
            **options,
        )
    except ValueError as exc:
        raise ValueError(_unmet(estimator, ctx, exc)) from exc
    return estimator._plan_for(z, ctx)


def fixed_multiplier_plan(estimator, ctx: FitContext, z: float) -> NoisePlan:
    """The plan of gradient multiplier ``z``, with the steps the budget allows."""
    plan = estimator._plan_for(z, ctx)
    try:
        steps = calibration.max_steps_within(
            estimator.epsilon,
            ctx.delta,
            lambda steps: ctx.with_steps(estimator._steps_event(plan, ctx, steps)),
            ctx.planned_steps,
            **estimator._calibration_options(),
        )
    except ValueError as exc:
        raise ValueError(
            f"noise_multiplier={z:g} spends more than epsilon={estimator.epsilon:g} in a single "
            f"step; increase the noise ({exc})"
        ) from exc
    return dataclasses.replace(plan, steps=steps)


def _unmet(estimator, ctx: FitContext, exc: Exception) -> str:
    """Why calibration failed, in the estimator's terms."""
    outside = (
        f" after {estimator._outside_steps_note()}"
        if not isinstance(ctx.outside_steps_event, dp_accounting.NoOpDpEvent)
        else ""
    )
    options = estimator._calibration_options()
    accountant = resolve_accountant(
        options.get("accountant", "auto"), options.get("privacy_unit", "record")
    )
    hint = (
        "or use accountant='pld', tighter for small epsilon"
        if accountant == "rdp"
        else f"the PLD accountant's discretisation (chosen per event, at most "
        f"{PLD_DISCRETIZATION:g}) floors the epsilon it can certify near that value"
    )
    return (
        f"epsilon={estimator.epsilon:g} at delta={ctx.delta:g} cannot be met by the "
        f"{ctx.planned_steps} per-step gradient releases (sampling rate "
        f"{ctx.sampling_rate:.3g}){outside}: {exc}. Raise epsilon or delta, or lower "
        f"max_epochs; {hint}."
    )
