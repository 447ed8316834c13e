"""How a RaCO-DP fit is priced: two releases on each step's batch, and a noisy selection.

Each step releases the clipped gradient sum (multiplier ``z_grad``) and the
histogram (``z_hist``: Gaussian std or Laplace scale over its sensitivity), both
computed on the same Poisson batch.

- The executed event (``_event``, sound): with a Gaussian histogram the two
  form one Gaussian mechanism of multiplier ``(z_grad^-2 + z_hist^-2)^-1/2`` per
  sampled step; with a Laplace histogram the pair is accounted jointly by a PLD
  (:mod:`skfairdp.privacy.joint`).
- The authors' event (``_paper_event``): each release amplified by the
  sampling separately, then composed. ``calibration="paper"`` plans with it and
  ``paper_epsilon_`` reports the run by it; it is not a guarantee.
- ``solution="best"`` adds one Gaussian release after training
  (:mod:`skfairdp.raco.solutions`), and ``enforce_tolerance=True`` another
  (:mod:`skfairdp.raco.enforcement`).

:class:`RacoAccounting` fills the fit template's budget hooks with them.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting

from .._fit.budget import calibrated_plan, reserved_zcdp_noise_multiplier
from .._fit.context import FitContext, NoisePlan
from ..privacy import epsilon_spent, joint_noise_multiplier, sampled_gaussian_steps_event
from ..privacy.events import compose
from ..privacy.joint import joint_sampled_event
from .enforcement import enforce_noise_multiplier
from .solutions import SELECTION_SHARE

__all__ = ["HISTOGRAM_NOISE_RATIO", "RacoAccounting"]

# "auto" histogram noise: its multiplier is this many times the gradient's. The
# histogram is a Q x K statistic whose noise the dual step averages over many
# steps, while the gradient noise lands on d parameters each step, so most of
# the budget goes to the gradient: with Gaussian noise the histogram takes
# 1 / (1 + 2^2) = 20% of the per-step "precision" (z^-2) budget.
HISTOGRAM_NOISE_RATIO = 2.0


class RacoAccounting:
    """The fit template's budget hooks for :class:`~skfairdp.RaCODPClassifier` (a mixin)."""

    def _event(
        self, gradient_multiplier: float, statistics_multiplier: float, q: float, steps: int
    ) -> dp_accounting.DpEvent:
        """The executed event: ``steps`` Poisson-sampled steps of (gradient, histogram)."""
        if self.histogram_noise == "gaussian":
            return sampled_gaussian_steps_event(
                joint_noise_multiplier(gradient_multiplier, statistics_multiplier), q, steps
            )
        step = joint_sampled_event(
            q, gaussian_multiplier=gradient_multiplier, laplace_scale=statistics_multiplier
        )
        return dp_accounting.SelfComposedDpEvent(step, int(steps))

    def _paper_event(
        self, gradient_multiplier: float, statistics_multiplier: float, q: float, steps: int
    ) -> dp_accounting.DpEvent:
        """The authors' accounting: each release amplified separately, then composed."""
        hist = (
            dp_accounting.GaussianDpEvent(statistics_multiplier)
            if self.histogram_noise == "gaussian"
            else dp_accounting.LaplaceDpEvent(statistics_multiplier)
        )
        parts = [dp_accounting.GaussianDpEvent(gradient_multiplier)] + (
            [hist] if math.isfinite(statistics_multiplier) else []
        )
        return dp_accounting.ComposedDpEvent(
            [
                dp_accounting.SelfComposedDpEvent(
                    dp_accounting.PoissonSampledDpEvent(q, e) if q < 1 else e, int(steps)
                )
                for e in parts
            ]
        )

    def _calibrated_view_event(
        self, gradient_multiplier: float, statistics_multiplier: float, q: float, steps: int
    ) -> dp_accounting.DpEvent:
        """The steps' event in the view calibration uses: sound, or the authors' (``"paper"``)."""
        if self.calibration == "paper":
            return self._paper_event(gradient_multiplier, statistics_multiplier, q, steps)
        return self._event(gradient_multiplier, statistics_multiplier, q, steps)

    def _hist_multiplier(self, gradient_multiplier: float) -> float:
        if self.histogram_noise_multiplier == "auto":
            return HISTOGRAM_NOISE_RATIO * gradient_multiplier
        return float(self.histogram_noise_multiplier)

    def _plan_for(self, noise_multiplier: float, ctx: FitContext) -> NoisePlan:
        statistics_multiplier = self._hist_multiplier(noise_multiplier)
        gaussian = self.histogram_noise == "gaussian"
        return NoisePlan(
            primal_multiplier=noise_multiplier,
            statistics_multiplier=statistics_multiplier,
            effective_multiplier=joint_noise_multiplier(noise_multiplier, statistics_multiplier)
            if gaussian
            else math.nan,
        )

    def _steps_event(self, plan: NoisePlan, ctx: FitContext, steps: int) -> dp_accounting.DpEvent:
        return self._calibrated_view_event(
            plan.primal_multiplier, plan.statistics_multiplier, ctx.sampling_rate, steps
        )

    def _spent(self, gradient_multiplier, statistics_multiplier, q, steps, delta) -> float:
        event = self._calibrated_view_event(gradient_multiplier, statistics_multiplier, q, steps)
        return epsilon_spent(event, delta, **self._calibration_options()).epsilon

    def _one_gaussian_per_step(self) -> bool:
        # a Laplace histogram, or a fixed histogram multiplier: calibrate the gradient's
        return (
            self.histogram_noise == "gaussian"
            and self.histogram_noise_multiplier == "auto"
            and self.calibration == "accountant"
        )

    def _split_joint(self, joint: float) -> float:
        return joint * math.sqrt(1.0 + HISTOGRAM_NOISE_RATIO**-2)

    def _check_budget(self, ctx: FitContext) -> None:
        if self.histogram_noise_multiplier == "auto":
            return
        statistics_multiplier = float(self.histogram_noise_multiplier)
        q, steps, delta = ctx.sampling_rate, ctx.planned_steps, ctx.delta
        if self._spent(1e6, statistics_multiplier, q, steps, delta) > self.epsilon:
            raise ValueError(
                f"histogram_noise_multiplier={statistics_multiplier:g} alone spends more than "
                f"epsilon={self.epsilon:g} over {steps} steps; increase it or use 'auto'"
            )

    def _paper_plan(self, ctx: FitContext) -> NoisePlan:
        # the authors' accounting (each release amplified separately), calibrated by PLD
        return calibrated_plan(self, ctx)

    def _post_training_event(self, ctx: FitContext) -> dp_accounting.DpEvent:
        """The planned releases after training: ``solution="best"``'s evaluation and the
        ``enforce_tolerance`` check (no-op when neither runs or the fit is not private)."""
        events = []
        if ctx.private and self.solution == "best":
            events.append(
                dp_accounting.GaussianDpEvent(
                    reserved_zcdp_noise_multiplier(SELECTION_SHARE, self.epsilon, ctx.delta)
                )
            )
        if ctx.private and self.enforce_tolerance:
            events.append(
                dp_accounting.GaussianDpEvent(enforce_noise_multiplier(self.epsilon, ctx.delta))
            )
        return compose(events)

    def _accountant_options(self) -> dict:
        return {"accountant": self.accountant}

    def _calibration_options(self) -> dict:
        # the authors' accounting is PLD; the sound one uses the chosen accountant
        return {"accountant": "pld" if self.calibration == "paper" else self.accountant}

    def _report_accounting(self, ctx: FitContext) -> None:
        # the authors' accounting of the same releases: each amplified separately
        self.paper_epsilon_ = epsilon_spent(
            ctx.recorder.build("separate"), ctx.delta, accountant="pld"
        ).epsilon
        if self.calibration == "paper" and self.privacy_spent_.epsilon > self.epsilon * 1.001:
            warnings.warn(
                f"calibration='paper' met epsilon={self.epsilon:g} by the authors' separate "
                f"composition; the sound (joint) accountant says this run spent "
                f"epsilon={self.privacy_spent_.epsilon:.4g} (privacy_spent_).",
                UserWarning,
                stacklevel=5,  # user -> fit -> _private_fit -> _fit_template -> here
            )
