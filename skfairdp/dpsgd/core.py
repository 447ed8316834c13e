"""The DP-SGD family: cross-entropy, one private gradient release (and maybe a count) per step.

:class:`~skfairdp.GlobalScalingDPClassifier` and the paper's comparison methods
(:mod:`skfairdp.baselines`) differ only in how a step processes per-sample
gradients (the problem's ``private_sum`` hook) and in whether a step also
releases a noisy count on the same batch. They fit by the base's one template
(:meth:`skfairdp.base.PrivateClassifierBase._private_fit`); what they share
beyond it lives here: the calibration of a gradient and a count released on
the same batch, and the activation of the default MLP.

Accounting of a step that releases a gradient sum (multiplier ``z1``) and a
count (multiplier ``z2``) computed on the same Poisson batch, by the parameter
``calibration``:

``"accountant"`` (sound, default)
    one sampled Gaussian mechanism with ``z_eff = (z1^-2 + z2^-2)^(-1/2)``;
    ``z1`` is raised so that ``z_eff`` is the DP-SGD multiplier for the target.
``"paper"`` (the papers' accounting, for reproduction)
    two sampled Gaussian mechanisms composed as if their batches were
    independent. The batch is shared, so this under-states epsilon (slightly
    at ``z2 = 10``; a lot for small ``z2``).
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import torch

from .._fit.base import FitContext, NoisePlan, PrivateClassifierBase
from .._fit.budget import calibrated_plan
from ..nn import build_module
from ..privacy import (
    calibration,
    epsilon_spent,
    joint_noise_multiplier,
    sampled_gaussian_steps_event,
)
from ..privacy.events import compose

#: Values of ``calibration`` (the shared parameter's options).
CALIBRATIONS = ("accountant", "paper")


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


#: ``count_noise_multiplier="auto"``: the paper's ``z2 = 10`` while that leaves the
#: gradient at least ``AUTO_COUNT_RATIO**-1`` of the step's precision, else
#: ``z2 = AUTO_COUNT_RATIO * z_eff`` (small data, where the target needs ``z_eff``
#: near or above 10): the gradient's multiplier is then ``z_eff * sqrt(9/8)``,
#: 6% more noise, and the count's noise grows with the gradient's.
AUTO_COUNT_RATIO = 3.0
PAPER_COUNT_NOISE_MULTIPLIER = 10.0


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


class CrossEntropyProblem:
    """The DP-SGD family's objective as the engine sees it: per-sample cross-entropy.

    Batches hold (label, group) rows (the group is 0 for estimators without
    groups). Subclasses say how a step processes the per-sample gradients (a
    ``private_sum`` hook) and, when a step releases a statistic on the same
    batch, record it in their ``recorder``.
    """

    private_primal = (True,)
    dual_clip = 0.0  # no dual rows: the engine noises nothing but the gradient sum

    def prepare_batch(self, codes):
        return codes[:, 0], codes[:, 1]

    def primal_objectives(self, outputs, y, groups):
        loss = torch.nn.functional.cross_entropy(outputs, y, reduction="none")
        return (loss,), {"loss": loss}


class ActivationModuleMixin:
    """The default module with the ``activation`` parameter (for ``hidden_layer_sizes``)."""

    def _build_module(self, n_features: int, n_outputs: int) -> torch.nn.Module:
        kwargs = self._prefixed("module__")
        if self.module is None:
            kwargs.setdefault("activation", self.activation)
        return build_module(
            self.module,
            n_features=n_features,
            n_outputs=n_outputs,
            hidden_layer_sizes=tuple(self.hidden_layer_sizes),
            module_kwargs=kwargs,
        )


class NoisySGDClassifierBase(ActivationModuleMixin, PrivateClassifierBase):
    """Cross-entropy classifier trained by a DP-SGD variant (the fit is the base's template).

    Subclasses implement ``_make_problem`` (the per-step processing, as an
    engine problem with a ``private_sum`` hook; a problem releasing a count
    records it in ``ctx.recorder``), ``_count_noise_multiplier`` (``inf`` when a
    step releases nothing but the gradient) and, when they use groups,
    ``_encode_groups``. This class adds the calibration of a gradient and a
    count released on the same batch (module docstring).
    """

    def _count_noise_multiplier(self) -> float | str:
        """``count_noise_multiplier`` as set (``inf`` when a step releases no count)."""
        return math.inf

    def _statistics_multiplier(self, noise_multiplier: float) -> float:
        """The count's multiplier beside a gradient multiplier (resolves ``"auto"``)."""
        setting = self._count_noise_multiplier()
        if setting == "auto":
            if self._calibration() == "paper":
                return PAPER_COUNT_NOISE_MULTIPLIER
            return auto_count_noise_multiplier(noise_multiplier)
        return float(setting)

    def _calibration(self) -> str:
        """``calibration`` in effect (``"accountant"`` for an estimator without it)."""
        if "calibration" not in self._parameters.defaults:
            return "accountant"
        return self.calibration

    def _recorded_view(self) -> str:
        # "paper": the papers' view of a step (gradient and count as if independent)
        return "separate" if self._calibration() == "paper" else "joint"

    def _split_joint(self, joint: float) -> float:
        setting = self._count_noise_multiplier()
        if setting == "auto":
            return split_auto_noise_multiplier(joint)
        return split_noise_multiplier(joint, float(setting))

    def _paper_plan(self, ctx: FitContext) -> NoisePlan:
        if self._count_noise_multiplier() == math.inf:  # the gradient alone: nothing to split
            return calibrated_plan(self, ctx)
        statistics_multiplier = self._statistics_multiplier(math.nan)
        q, steps = ctx.sampling_rate, ctx.planned_steps
        count_only = epsilon_spent(
            sampled_gaussian_steps_event(statistics_multiplier, q, steps), ctx.delta
        ).epsilon
        if count_only >= self.epsilon:
            raise ValueError(
                f"count_noise_multiplier={statistics_multiplier:g}: the noisy counts alone "
                f"spend epsilon={count_only:.4g} >= the target epsilon={self.epsilon:g}; "
                "increase count_noise_multiplier or epsilon."
            )

        def composed(z):
            return ctx.with_steps(step_events(z, statistics_multiplier, q, steps, "paper"))

        z1 = calibration.calibrate_noise_multiplier(self.epsilon, ctx.delta, composed)
        return self._plan_for(z1, ctx)

    def _plan_for(self, noise_multiplier: float, ctx: FitContext) -> NoisePlan:
        statistics_multiplier = self._statistics_multiplier(noise_multiplier)
        effective = joint_noise_multiplier(noise_multiplier, statistics_multiplier)
        return NoisePlan(
            primal_multiplier=noise_multiplier,
            statistics_multiplier=statistics_multiplier,
            effective_multiplier=effective,
        )

    def _steps_event(self, plan: NoisePlan, ctx: FitContext, steps: int):
        q = ctx.sampling_rate
        return step_events(
            plan.primal_multiplier, plan.statistics_multiplier, q, steps, self._calibration()
        )

    def _report_accounting(self, ctx: FitContext) -> None:
        if (
            ctx.private
            and self._calibration() == "paper"
            and self._count_noise_multiplier() != math.inf
        ):
            sound = epsilon_spent(ctx.recorder.build("joint"), ctx.delta)
            warnings.warn(
                f"calibration='paper' reproduces the paper's accounting, which composes the "
                f"gradient and the count as if their batches were independent; they share the "
                f"batch, and the sound (joint) epsilon of this fit is {sound.epsilon:.4g}, not "
                f"{self.privacy_spent_.epsilon:.4g}. Use calibration='accountant' outside "
                "reproductions.",
                UserWarning,
                stacklevel=5,  # user -> fit -> _private_fit -> _fit_template -> here
            )
