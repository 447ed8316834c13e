"""The one private fit of every estimator: a template with small hooks.

:class:`PrivateFitMixin` holds the path of a fit (validation, randomness,
sampling, up-front releases, calibration, the training loop, the recorded event
and what it costs); an estimator fills in the hooks listed in the docstring of
:class:`~skfairdp.base.PrivateClassifierBase`.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import dp_accounting
import numpy as np
import torch

from ..engine import NoiseConfig, train
from ..fairness import encode_sensitive_features
from ..privacy import (
    EventRecorder,
    PoissonSampler,
    RandomSource,
    ShuffledBatches,
    calibration,
    resolve_delta,
    sampled_gaussian_steps_event,
)
from ..privacy.accountant import epsilon_history
from ..privacy.sampling import CappedSampler
from .context import FitContext, NoisePlan
from .degenerate import warn_if_degenerate
from .threads import torch_threads
from .validation import check_sample_weight

__all__ = ["PrivateDiagnosticsWarning", "PrivateFitMixin"]


class PrivateDiagnosticsWarning(UserWarning):
    """A fit records diagnostics computed on raw training data (not private)."""


class PrivateFitMixin:
    """The fit template (mixed into :class:`~skfairdp.base.PrivateClassifierBase`)."""

    # -- the one private fit -------------------------------------------------
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Features (without the sensitive attribute, usually).
        y : array-like of shape (n_samples,)
            Class labels.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Group membership; several columns form joint groups. Required when the
            estimator's objective or constraints use groups (see the class
            docstring); not needed by ``predict``. Routed by metadata routing
            inside a ``Pipeline`` or ``GridSearchCV``.
        sample_weight : array-like of shape (n_samples,), default=None
            Public, non-negative weights; each row's clipped contributions (and its
            share of every released count or histogram) are multiplied by its
            weight. With a finite ``epsilon`` every weight must be at most
            ``max_sample_weight``, which scales every sensitivity (see
            doc/privacy.md). Requested by default under metadata routing.

        Returns
        -------
        self
        """
        return self._private_fit(X, y, sensitive_features, sample_weight)

    def _private_fit(self, X, y, sensitive_features=None, sample_weight=None):
        """The template of every fit (torch threads from ``n_jobs``, degenerate-model check).

        validate parameters and data -> encode
        groups -> resolve delta, device, random source, sampler (Poisson when
        private) -> up-front releases -> calibrate the noise -> build module and
        optimizer (initialised from the random source) -> the problem -> train
        (release, apply per step, every release recorded) -> fitted attributes
        -> ``dp_event_`` (the recorded event) -> ``privacy_spent_`` and the
        per-epoch epsilons of ``history_``.
        """
        with torch_threads(self.n_jobs):
            self._fit_template(X, y, sensitive_features, sample_weight)
            warn_if_degenerate(self, X, y)
        return self

    def _fit_template(self, X, y, sensitive_features, sample_weight):
        self._validate_params()
        if math.isinf(self.epsilon) and self.noise_multiplier is not None:
            raise ValueError(
                "noise_multiplier is set but epsilon=inf (non-private training adds no noise); "
                "set a finite epsilon or noise_multiplier=None"
            )
        self._check_params()
        X, y_enc = self._validate_X_y(X, y)
        sample_weight = check_sample_weight(
            sample_weight,
            X.shape[0],
            epsilon=self.epsilon,
            max_sample_weight=self.max_sample_weight,
        )
        groups = self._encode_groups(sensitive_features, X.shape[0])
        ctx = self._fit_context(X, y_enc, groups, sample_weight)
        if not ctx.private:
            ctx.recorder.record(dp_accounting.NonPrivateDpEvent())
        ctx.upfront_event = self._upfront_releases(ctx)
        plan = self._noise_plan(ctx) if ctx.private else NoisePlan()
        self.noise_multiplier_ = plan.primal
        self.effective_noise_multiplier_ = plan.effective
        sampler, max_epochs = ctx.sampler, self._training_schedule(ctx.n_samples)[1]
        if plan.steps is not None and plan.steps < ctx.planned_steps:
            sampler = CappedSampler(sampler, plan.steps)
            max_epochs = max(1, math.ceil(plan.steps / sampler.steps_per_epoch))

        with torch.random.fork_rng(devices=[ctx.device] if ctx.device.type == "cuda" else []):
            torch.manual_seed(ctx.random.torch_seed())
            self.module_ = self._build_module(X.shape[1], ctx.n_classes).to(
                device=ctx.device, dtype=torch.float32
            )
        optimizer = self._build_optimizer(self.module_)
        problem = self._make_problem(ctx, plan)
        noise = (
            NoiseConfig(self._clip_norm(ctx), plan.primal, plan.dual, ctx.max_weight)
            if ctx.private
            else NoiseConfig()
        )
        weights = ctx.sample_weight
        weights = None if weights is None else torch.from_numpy(weights).to(ctx.device)
        self.module_.train()
        result = train(
            self.module_,
            torch.from_numpy(np.ascontiguousarray(X)).to(ctx.device),
            tuple(t.to(ctx.device) for t in self._per_row_tensors(ctx)),
            problem,
            sampler=sampler,
            optimizer=optimizer,
            noise=noise,
            random=ctx.random,
            max_epochs=max_epochs,
            iterate=getattr(self, "iterate", "last"),  # a shared parameter
            callbacks=list(self.callbacks or ()),
            net=self,
            verbose=self.verbose,
            record_diagnostics=self._record_diagnostics(),
            recorder=ctx.recorder,
            sample_weight=weights,
        )
        self.module_.eval()
        self.n_steps_ = result.steps
        self.history_ = result.history
        self._store_fitted(problem, plan)
        # the recorded event; per-epoch epsilons from what was recorded by each epoch's end
        self.dp_event_ = ctx.recorder.build()
        *per_epoch, self.privacy_spent_ = epsilon_history(
            [*result.epoch_events, self.dp_event_], ctx.delta, **self._accountant_options()
        )
        self._report_accounting(ctx)
        for row, spent in zip(self.history_, per_epoch):
            row["epsilon"] = spent.epsilon

    def _fit_context(self, X, y_enc, groups, sample_weight=None) -> FitContext:
        n = X.shape[0]
        private = not math.isinf(self.epsilon)
        device = self._device()
        random = RandomSource(self.random_state, secure_mode=self.secure_mode, device=device)
        batch_size, max_epochs = self._training_schedule(n)
        sampler = (
            PoissonSampler(n, min(1.0, batch_size / n), random)
            if private
            else ShuffledBatches(n, batch_size, random)
        )
        return FitContext(
            X=X,
            y=y_enc,
            groups=groups,
            sample_weight=sample_weight,
            max_weight=1.0 if sample_weight is None else float(self.max_sample_weight),
            n_classes=self._n_outputs(),
            private=private,
            delta=resolve_delta(self.delta, n) if private else 0.0,
            device=device,
            random=random,
            sampler=sampler,
            planned_steps=max_epochs * sampler.steps_per_epoch,
            recorder=EventRecorder(self._recorded_view()),
        )

    # -- hooks of the fit (defaults) ---------------------------------------
    def _training_schedule(self, n_samples: int) -> tuple[int, int]:
        """``(batch_size, max_epochs)`` of a fit on ``n_samples`` rows (default: the parameters).

        An estimator whose parameters accept ``"auto"`` resolves them here from
        public facts (``n_samples``, the number of features, ``epsilon``).
        """
        return self.batch_size, self.max_epochs

    def _clip_norm(self, ctx: FitContext) -> float:
        """The per-sample clipping norm of a private fit (default: ``max_grad_norm``).

        An estimator whose ``max_grad_norm`` accepts ``"auto"`` resolves it here.
        """
        return float(self.max_grad_norm)

    def _n_outputs(self) -> int:
        """Outputs of the module (default: one per class; a regressor has 1)."""
        return len(self.classes_)

    def _check_params(self) -> None:
        """Cross-parameter checks, before the data are read."""

    def _encode_groups(self, sensitive_features, n_samples: int) -> np.ndarray:
        """Group codes of the rows (default: the estimator uses no groups)."""
        return np.zeros(n_samples, dtype=np.int64)

    def _encode_sensitive(self, sensitive_features, n_samples: int, required: str | None):
        """Encode groups into ``group_encoder_``; ``required``: the error when they are missing.

        Without ``sensitive_features`` (and ``required`` None) every row is in one
        group and ``group_encoder_`` is None.
        """
        if sensitive_features is None:
            if required is not None:
                raise ValueError(required)
            self.group_encoder_ = None
            return np.zeros(n_samples, dtype=np.int64)
        codes, self.group_encoder_ = encode_sensitive_features(
            sensitive_features, n_samples, sensitive_values=self.sensitive_values
        )
        return codes

    def _upfront_releases(self, ctx: FitContext) -> dp_accounting.DpEvent:
        """Releases before training (recorded in ``ctx.recorder``); returns their planned event."""
        return dp_accounting.NoOpDpEvent()

    def _noise_plan(self, ctx: FitContext) -> NoisePlan:
        """The noise of a private fit: calibrated to the budget, or fixed and step-capped.

        With ``noise_multiplier`` set, the gradient multiplier is that value (the
        other releases' follow from it, :meth:`_plan_for`) and the fit runs the
        largest number of steps, at most the planned ones, whose planned event
        (up-front releases, then :meth:`_steps_event`) stays within
        ``(epsilon, delta)``.
        """
        if self.noise_multiplier is None:
            return self._calibrate(ctx)
        z = float(self.noise_multiplier)
        plan = self._plan_for(z, ctx)
        steps = self._max_steps_within(
            lambda steps: ctx.planned_event(self._steps_event(plan, ctx, steps)),
            z,
            ctx.planned_steps,
            ctx.delta,
        )
        return dataclasses.replace(plan, steps=steps)

    def planned_event(self, n_samples: int, *, noise_multiplier: float) -> dp_accounting.DpEvent:
        """The event a private fit on ``n_samples`` rows executes with a fixed noise multiplier.

        The oracle contract's planning call (:mod:`skfairdp.oracle`): a meta-estimator
        calibrates the noise of its oracle fits against it before any fit runs. It
        is the event of every planned step (``max_epochs`` epochs of Poisson batches
        of rate ``batch_size / n_samples``) with gradient multiplier
        ``noise_multiplier`` and the other releases it implies; a fit with that
        ``noise_multiplier`` and a budget at least this event's records exactly it.

        Parameters
        ----------
        n_samples : int
            Rows of the training set.
        noise_multiplier : float
            The fixed gradient noise multiplier.

        Returns
        -------
        dp_accounting.DpEvent

        Raises
        ------
        NotImplementedError
            For an estimator with releases before training (their event depends on
            its fit, e.g. DP-FERMI's group histogram).
        """
        if type(self)._upfront_releases is not PrivateFitMixin._upfront_releases:
            raise NotImplementedError(
                f"{type(self).__name__} releases statistics before training; its planned "
                "event is known only inside fit"
            )
        n = int(n_samples)
        batch_size, max_epochs = self._training_schedule(n)
        sampler = PoissonSampler(n, min(1.0, batch_size / n), RandomSource(0))
        ctx = FitContext(
            X=np.empty((n, 0), dtype=np.float32),
            y=np.zeros(n, dtype=np.int64),
            groups=np.zeros(n, dtype=np.int64),
            sample_weight=None,
            max_weight=1.0,
            n_classes=2,
            private=True,
            delta=resolve_delta(self.delta, n),
            device=torch.device("cpu"),
            random=RandomSource(0),
            sampler=sampler,
            planned_steps=max_epochs * sampler.steps_per_epoch,
            recorder=EventRecorder(self._recorded_view()),
        )
        plan = self._plan_for(float(noise_multiplier), ctx)
        return ctx.planned_event(self._steps_event(plan, ctx, ctx.planned_steps))

    def _max_steps_within(self, planned_event, z: float, cap: int, delta: float) -> int:
        """Largest ``T <= cap`` with ``planned_event(T)`` within ``(epsilon, delta)``."""
        try:
            return calibration.max_steps_within(
                self.epsilon, delta, planned_event, cap, **self._calibration_options()
            )
        except ValueError as exc:
            raise ValueError(
                f"noise_multiplier={z:g} spends more than epsilon={self.epsilon:g} in a single "
                f"step; increase the noise ({exc})"
            ) from exc

    def _calibrate(self, ctx: FitContext) -> NoisePlan:
        """The noise meeting the budget (default: one Gaussian release per step)."""
        return self._plan_for(self._calibrated_effective(ctx), ctx)

    def _plan_for(self, noise_multiplier: float, ctx: FitContext) -> NoisePlan:
        """The plan whose gradient multiplier is ``noise_multiplier`` (default: sole release)."""
        return NoisePlan(primal=noise_multiplier, effective=noise_multiplier)

    def _steps_event(self, plan: NoisePlan, ctx: FitContext, steps: int) -> dp_accounting.DpEvent:
        """The planned event of ``steps`` steps under ``plan`` (default: one joint Gaussian)."""
        return sampled_gaussian_steps_event(plan.effective, ctx.sampling_rate, steps)

    def _calibrated_effective(self, ctx: FitContext) -> float:
        """Smallest joint per-step multiplier for which the planned event meets the target.

        The plan is the up-front releases, then ``planned_steps`` Poisson-sampled
        Gaussian steps (:func:`skfairdp.privacy.calibration.calibrate_noise_multiplier`).
        """
        q, steps = ctx.sampling_rate, ctx.planned_steps

        def event(z):
            return ctx.planned_event(sampled_gaussian_steps_event(z, q, steps))

        return calibration.calibrate_noise_multiplier(
            self.epsilon, ctx.delta, event, **self._calibration_options()
        )

    def _make_problem(self, ctx: FitContext, plan: NoisePlan):
        """The engine problem of one fit (see :class:`skfairdp.engine.PrimalDualProblem`)."""
        raise NotImplementedError

    def _param_values(self, *names: str) -> dict:
        """``{name: value}`` of parameters that go to the problem unchanged."""
        return {name: getattr(self, name) for name in names}

    def _per_row_tensors(self, ctx: FitContext) -> tuple[torch.Tensor, ...]:
        """Per-row tensors indexed with each batch (default: one int64 column pair (y, group))."""
        return (torch.as_tensor(np.stack([ctx.y, ctx.groups], axis=1)),)

    def _store_fitted(self, problem, plan: NoisePlan) -> None:
        """Fitted attributes from the trained problem (released values only)."""

    def _accountant_options(self) -> dict:
        """Keyword arguments of the accountant that prices the fit's event."""
        return {}

    def _calibration_options(self) -> dict:
        """Keyword arguments of the accountant calibration plans with (default: the same)."""
        return self._accountant_options()

    def _recorded_view(self) -> str:
        """How ``dp_event_`` combines releases on one batch (see :class:`EventRecorder`)."""
        return "joint"

    def _report_accounting(self, ctx: FitContext) -> None:
        """After ``privacy_spent_``: other views of the recorded event, warnings."""

    # -- what every fit does around the algorithm ----------------------------
    def _record_diagnostics(self) -> bool:
        """Whether to put raw training diagnostics in ``history_`` (warns: not private)."""
        record = bool(self.record_private_diagnostics)
        if record:
            warnings.warn(
                f"{type(self).__name__}(record_private_diagnostics=True): history_ will hold "
                "the exact training loss (and other objective terms) computed on raw training "
                "batches. They are NOT covered by privacy_spent_; do not publish or ship this "
                "model (pickle it only without history_).",
                PrivateDiagnosticsWarning,
                stacklevel=5,  # user -> fit -> _private_fit -> _fit_template -> here
            )
        return record

    @property
    def history(self):
        """Alias of ``history_`` for skorch callbacks, which write to ``net.history``."""
        return self.history_
