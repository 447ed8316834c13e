"""The DP-SGD family's base: cross-entropy, a private gradient (and maybe a count) per step.

:class:`~skfairdp.DPSGDClassifier`, :class:`~skfairdp.GlobalScalingDPClassifier`
and the paper's comparison methods (:mod:`skfairdp.baselines`) differ only in
how a step processes per-sample gradients (the problem's ``private_sum`` hook)
and in whether a step also releases a noisy count on the same batch. They fit
by the one template (:class:`~skfairdp._fit.template.PrivateFitMixin`); what
they share beyond it lives here: the objective, the default MLP's activation,
the ``fit`` of the estimators without groups, and the budget hooks of a
gradient and a count released on the same batch (:mod:`.same_batch`).
"""

from __future__ import annotations

import math

import torch
from sklearn.utils import metadata_routing

from .._fit.base import FitContext, NoisePlan, PrivateClassifierBase
from .._fit.budget import calibrated_plan
from ..nn import build_module
from ..privacy import joint_noise_multiplier
from .same_batch import (
    PAPER_COUNT_NOISE_MULTIPLIER,
    auto_count_noise_multiplier,
    paper_noise_multiplier,
    split_auto_noise_multiplier,
    split_noise_multiplier,
    step_events,
    warn_paper_accounting,
)


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

    def primal_output_gradients(self, outputs, y, groups):
        """:meth:`primal_objectives` differentiated by hand: ``softmax(outputs) - onehot(y)``.

        A logistic regression's step then runs no autograd (issue 39). The kernel is
        the one autograd calls for ``log_softmax``, so the gradients are bit-identical.
        """
        log_p = torch.log_softmax(outputs, dim=1)
        rows = y.unsqueeze(1)
        loss = log_p.gather(1, rows).squeeze(1).neg_()
        minus_onehot = torch.zeros_like(log_p).scatter_(1, rows, -1.0)
        grad = torch._log_softmax_backward_data(minus_onehot, log_p, 1, log_p.dtype)
        return (grad,), {"loss": loss}


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


class UngroupedFitMixin:
    """``fit(X, y, *, sample_weight=None)``: an estimator that treats every row alike."""

    # fit takes no sensitive_features: drop the base class's request, so routers
    # never send them here.
    __metadata_request__fit = {"sensitive_features": metadata_routing.UNUSED}

    def fit(self, X, y=None, *, sample_weight=None):
        """Fit the model (no group labels: every row is treated alike).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), or ParquetSource
            A :class:`~skfairdp.data.ParquetSource` is read out of core (``y`` and
            ``sample_weight`` then come from its columns).
        y : array-like of shape (n_samples,)
            Class labels (real values for a regressor); required unless ``X`` is a
            source.
        sample_weight : array-like of shape (n_samples,), default=None
            Public weights in ``[0, max_sample_weight]`` (any non-negative finite
            weights when ``epsilon=inf``), applied after clipping: each row's
            processed gradient, and its share of any released count, is
            multiplied by its weight.

        Returns
        -------
        self
        """
        return self._private_fit(X, y, sample_weight=sample_weight)


class NoisySGDClassifierBase(ActivationModuleMixin, PrivateClassifierBase):
    """Cross-entropy classifier trained by a DP-SGD variant (the fit is the base's template).

    Subclasses implement ``_make_problem`` (the per-step processing, as an
    engine problem with a ``private_sum`` hook; a problem releasing a count
    records it in ``ctx.recorder``), ``_count_noise_multiplier`` (``inf`` when a
    step releases nothing but the gradient) and, when they use groups,
    ``_encode_groups``. This class fills in the budget hooks of a gradient and a
    count released on the same batch (:mod:`.same_batch`).
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
        return getattr(self, "calibration", "accountant")

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
        count = self._statistics_multiplier(math.nan)
        return self._plan_for(paper_noise_multiplier(self.epsilon, ctx, count), ctx)

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
            # user -> fit -> _private_fit -> _fit_template -> here
            warn_paper_accounting(ctx, self.privacy_spent_.epsilon, stacklevel=5)
