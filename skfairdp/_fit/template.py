"""The one private fit of every estimator: a template with small hooks.

:class:`PrivateFitMixin` holds the path of a fit: validation, groups, randomness
and sampling, the releases before training, the noise plan (asked once of
:mod:`skfairdp._fit.budget`), the training loop (:func:`skfairdp.engine.train`),
the recorded event and what it costs. An estimator fills in the hooks listed in
the docstring of :class:`PrivateFitMixin`.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import torch
from sklearn.base import clone, is_classifier

from ..data.source import is_source
from ..distributed.fit import data_parallel_fit
from ..engine import NoiseConfig, train
from ..engine.batches import compact_rows
from ..fairness import encode_sensitive_features
from ..privacy import (
    EventRecorder,
    PoissonSampler,
    RandomSource,
    ShuffledBatches,
    resolve_delta,
    sampled_gaussian_steps_event,
)
from ..privacy.accountant import epsilon_history
from ..privacy.events import compose
from ..privacy.sampling import CappedSampler
from . import budget
from .context import FitContext, NoisePlan
from .degenerate import warn_if_degenerate
from .schedules import AutoSchedule, resolve_clip, resolve_schedule
from .search_run import allow_empty_declared_groups
from .source import SourceGroups, read_source
from .threads import torch_threads
from .validation import check_sample_weight

__all__ = ["PrivateDiagnosticsWarning", "PrivateFitMixin"]


class PrivateDiagnosticsWarning(UserWarning):
    """A fit records diagnostics computed on raw training data (not private)."""


class PrivateFitMixin:
    """The fit template (mixed into :class:`~skfairdp._fit.base.PrivateEstimatorBase`).

    Hooks an estimator fills in (defaults in this class):

    - ``_make_problem(ctx, plan)`` (required): the engine problem, i.e. the
      per-sample objective, the statistics released per batch and the dual update;
    - ``_encode_groups(sensitive_features, n_samples)``: group codes (default: none);
    - ``_upfront_releases(ctx)``: releases before training (e.g. a noisy histogram),
      returning their planned event; ``_post_training_event(ctx)``: the planned event
      of releases after training (e.g. a noisy selection);
    - ``_per_row_tensors(ctx)``: what each batch holds besides ``X``;
    - ``_store_fitted(problem, plan, ctx)``: fitted attributes (released values only);
    - the budget's hooks (:mod:`skfairdp._fit.budget`): ``_plan_for(z, ctx)``,
      ``_steps_event(plan, ctx, steps)``, ``_one_gaussian_per_step()``,
      ``_split_joint(joint)``, ``_check_budget(ctx)``, ``_paper_plan(ctx)``,
      ``_outside_steps_note()``;
    - ``_schedule``: the estimator's ``"auto"`` rules (:mod:`skfairdp._fit.schedules`);
    - ``_check_params()``, ``_accountant_options()``, ``_calibration_options()``,
      ``_recorded_view()``, ``_report_accounting(ctx)``: cross-parameter checks, the
      accountant that prices the event (and the one calibration plans with), the
      view of same-batch releases, warnings about the accounting.
    """

    # -- the one private fit -------------------------------------------------
    def fit(self, X, y=None, *, sensitive_features=None, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), or ParquetSource
            Features (without the sensitive attribute, usually). A
            :class:`~skfairdp.data.ParquetSource` is read out of core (``y``,
            ``sensitive_features`` and ``sample_weight`` then come from its columns
            and must not be passed; see :doc:`/large_data`).
        y : array-like of shape (n_samples,)
            Class labels (required unless ``X`` is a source).
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
            :doc:`/privacy`). Requested by default under metadata routing.

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
        with torch_threads(self.n_jobs), data_parallel_fit(self) as parallel:
            self._fit_template(X, y, sensitive_features, sample_weight, parallel)
            if not is_source(X):  # a source would cost one more pass over the table
                warn_if_degenerate(self, X, y)
        return self

    def _fit_template(self, X, y, sensitive_features, sample_weight, parallel=None):
        self._validate_params()
        if math.isinf(self.epsilon) and self.noise_multiplier is not None:
            raise ValueError(
                "noise_multiplier is set but epsilon=inf (non-private training adds no noise); "
                "set a finite epsilon or noise_multiplier=None"
            )
        self._check_params()
        source = X if is_source(X) else None
        if source is not None and parallel is not None:
            raise ValueError(
                "X: a ParquetSource in a data-parallel fit (torch.distributed) is not supported "
                "yet; give each rank its rows in memory (with "
                "skfairdp.distributed.data_parallel(shard='local')), or fit in one process "
                "(with skfairdp.distributed.data_parallel(False))"
            )
        if source is None:
            X, y_enc = self._validate_X_y(X, y)
        else:  # y, groups and weights from the source's columns, X streamed
            y_enc, sensitive_features, sample_weight = read_source(
                self, source, y, sensitive_features, sample_weight
            )
        sample_weight = check_sample_weight(
            sample_weight,
            X.shape[0],
            epsilon=self.epsilon,
            max_sample_weight=self.max_sample_weight,
        )
        groups = self._encode_groups(sensitive_features, X.shape[0])
        if parallel is not None:  # data-parallel (skfairdp.distributed): this rank's rows
            X, y_enc, groups, sample_weight = parallel.take_rows(
                self, X, y_enc, groups, sample_weight
            )
        ctx = self._fit_context(X, y_enc, groups, sample_weight, parallel)
        if not ctx.private:
            ctx.recorder.record(dp_accounting.NonPrivateDpEvent())
        ctx.outside_steps_event = compose(
            [self._upfront_releases(ctx), self._post_training_event(ctx)]
        )
        plan = budget.noise_plan(self, ctx) if ctx.private else NoisePlan()
        self.noise_multiplier_ = plan.primal_multiplier
        self.effective_noise_multiplier_ = plan.effective_multiplier
        sampler, max_epochs = ctx.sampler, self._training_schedule(ctx.n_samples)[1]
        if plan.steps is not None and plan.steps < ctx.planned_steps:
            sampler = CappedSampler(sampler, plan.steps)
            max_epochs = max(1, math.ceil(plan.steps / sampler.steps_per_epoch))
        if source is not None:  # no sampling pass is prefetched beyond the last epoch
            ctx.sampler.epochs = max_epochs

        with torch.random.fork_rng(devices=[ctx.device] if ctx.device.type == "cuda" else []):
            torch.manual_seed(ctx.random.torch_seed())
            self.module_ = self._build_module(X.shape[1], ctx.n_classes).to(
                device=ctx.device, dtype=torch.float32
            )
        if parallel is not None:
            parallel.share_module(self.module_)
        optimizer = self._build_optimizer(self.module_)
        problem = self._make_problem(ctx, plan)
        noise = (
            NoiseConfig(
                self.max_grad_norm_, plan.primal_multiplier, plan.dual_multiplier, ctx.max_weight
            )
            if ctx.private
            else NoiseConfig()
        )
        weights = ctx.sample_weight
        weights = None if weights is None else torch.from_numpy(weights).to(ctx.device)
        tensors = self._per_row_tensors(ctx)
        rows = None  # a source's sampler reads each batch's rows
        if source is None:
            rows = torch.from_numpy(np.ascontiguousarray(X)).to(ctx.device)
        else:  # labels and group codes in a byte per row, not eight
            tensors = compact_rows(tensors)
        self.module_.train()
        result = train(
            self.module_,
            rows,
            tuple(t.to(ctx.device) for t in tensors),
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
            fast_step=self._fast_step,
        )
        self.module_.eval()
        self.n_steps_ = result.steps
        self.history_ = result.history
        self._store_fitted(problem, plan, ctx)
        # the recorded event; per-epoch epsilons from what was recorded by each epoch's end
        self.dp_event_ = ctx.recorder.build()
        *per_epoch, self.privacy_spent_ = epsilon_history(
            [*result.epoch_events, self.dp_event_], ctx.delta, **self._accountant_options()
        )
        self._report_accounting(ctx)
        for row, spent in zip(self.history_, per_epoch):
            row["epsilon"] = spent.epsilon

    def _fit_context(self, X, y_enc, groups, sample_weight=None, parallel=None) -> FitContext:
        n = X.shape[0] if parallel is None else parallel.n_total
        private = not math.isinf(self.epsilon)
        device = self._device()
        random = RandomSource(self.random_state, secure_mode=self.secure_mode, device=device)
        batch_size, max_epochs = self._training_schedule(n)
        self.batch_size_, self.max_epochs_ = batch_size, max_epochs
        self.max_grad_norm_ = self._clip_norm(n)
        if is_source(X):  # out of core: one pass per epoch writes the batches' rows
            sampler = X.sampler(batch_size, random, private=private, verbose=self.verbose)
        elif not private:
            sampler = ShuffledBatches(n, batch_size, random)
        elif parallel is None:
            sampler = PoissonSampler(n, min(1.0, batch_size / n), random)
        else:  # each rank samples its shard at the same rate
            sampler = parallel.sampler(min(1.0, batch_size / n), random)
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
            n_total=None if parallel is None else n,
        )

    # -- hooks of the fit (defaults) ---------------------------------------
    #: The estimator's "auto" rules (None: no parameter accepts "auto").
    _schedule: AutoSchedule | None = None
    #: A dedicated step the engine takes where it applies (``train``'s ``fast_step``).
    _fast_step = None

    def _training_schedule(self, n_samples: int) -> tuple[int, int]:
        """``(batch_size, max_epochs)`` of a fit on ``n_samples`` rows, ``"auto"`` resolved."""
        return resolve_schedule(self, n_samples)

    def _clip_norm(self, n_samples: int) -> float:
        """The per-sample clipping norm of a fit on ``n_samples`` rows, ``"auto"`` resolved."""
        return resolve_clip(self, n_samples)

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
        if isinstance(sensitive_features, SourceGroups):  # encode the combinations, map the rows
            table = sensitive_features.table
            codes, self.group_encoder_ = encode_sensitive_features(
                table, len(table), sensitive_values=self.sensitive_values,
                allow_empty_groups=allow_empty_declared_groups(self.sensitive_values),
            )  # fmt: skip
            return codes[sensitive_features.index]
        codes, self.group_encoder_ = encode_sensitive_features(
            sensitive_features, n_samples, sensitive_values=self.sensitive_values,
            allow_empty_groups=allow_empty_declared_groups(self.sensitive_values),
        )  # fmt: skip
        return codes

    def _upfront_releases(self, ctx: FitContext) -> dp_accounting.DpEvent:
        """Releases before training (recorded in ``ctx.recorder``); returns their planned event."""
        return dp_accounting.NoOpDpEvent()

    def _post_training_event(self, ctx: FitContext) -> dp_accounting.DpEvent:
        """The planned event of releases after training (default: none)."""
        return dp_accounting.NoOpDpEvent()

    # -- hooks of the budget (skfairdp._fit.budget) ----------------------------
    def _plan_for(self, noise_multiplier: float, ctx: FitContext) -> NoisePlan:
        """The plan whose gradient multiplier is ``noise_multiplier`` (default: sole release)."""
        return NoisePlan(primal_multiplier=noise_multiplier, effective_multiplier=noise_multiplier)

    def _steps_event(self, plan: NoisePlan, ctx: FitContext, steps: int) -> dp_accounting.DpEvent:
        """The planned event of ``steps`` steps under ``plan`` (default: one joint Gaussian)."""
        return sampled_gaussian_steps_event(plan.effective_multiplier, ctx.sampling_rate, steps)

    def _one_gaussian_per_step(self) -> bool:
        """Whether a step's releases are one joint Gaussian (calibrated as such)."""
        return True

    def _split_joint(self, joint: float) -> float:
        """The gradient multiplier whose plan has joint multiplier ``joint`` (default: it)."""
        return joint

    def _check_budget(self, ctx: FitContext) -> None:
        """Refuse settings no gradient noise can fit in the budget (default: none)."""

    def _outside_steps_note(self) -> str:
        """What the releases outside the steps are, for an unmet budget's error."""
        return "the releases outside the training steps"

    def _paper_plan(self, ctx: FitContext) -> NoisePlan:
        """The plan of ``calibration="paper"`` (estimators with that parameter)."""
        raise NotImplementedError

    # -- the planned event, without training ---------------------------------------
    def planned_event(
        self, n_samples: int, *, noise_multiplier: float | None = None
    ) -> dp_accounting.DpEvent:
        """The event a fit of this (unfitted) estimator on ``n_samples`` rows executes.

        A dry run of the fit template on ``n_samples`` placeholder rows (one zero
        feature, two balanced classes, two balanced groups): parameter checks, the
        fit context, the releases before training (drawn on the placeholder rows
        and thrown away) and the noise plan; no training. The event depends only on
        ``n_samples`` and the parameters, never on the data's values (tests check
        planned == recorded); a fit that stops early records a prefix of it.

        Parameters
        ----------
        n_samples : int
            Rows of the training set.
        noise_multiplier : float, optional
            The oracle contract's planning call (:mod:`skfairdp.oracle`): the event of
            every planned step with this gradient multiplier (and the other releases
            it implies), whatever the budget; a meta-estimator calibrates the noise of
            its oracle fits against it. ``None``: the event of a fit as configured.

        Returns
        -------
        dp_accounting.DpEvent
            ``NonPrivateDpEvent`` when ``epsilon=inf``.
        """
        n = int(n_samples)
        if n < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}")
        est = clone(self)
        # the placeholder draws come from the CSPRNG: no seeded source (nor numpy's global
        # RNG) is touched by a plan, so a secure meta-estimator planning a template stays secure
        est.secure_mode = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # small-group notes, delta >= 1/n
            est._validate_params()
            if math.isinf(est.epsilon):
                return dp_accounting.NonPrivateDpEvent()
            est._check_params()
            if is_classifier(est):
                est.classes_ = np.array([0, 1])
            values = getattr(est, "sensitive_values", None)
            labels = np.asarray(values if values is not None else [0, 1], dtype=object)
            sensitive = labels[np.arange(n) % min(2, len(labels))].astype(type(labels[0]))
            groups = est._encode_groups(sensitive, n)
            y_enc = (np.arange(n) % 2).astype(np.int64)
            ctx = est._fit_context(np.zeros((n, 1), dtype=np.float32), y_enc, groups, None)
            ctx.outside_steps_event = compose(
                [est._upfront_releases(ctx), est._post_training_event(ctx)]
            )
            if noise_multiplier is not None:
                plan = est._plan_for(float(noise_multiplier), ctx)
            else:
                plan = budget.noise_plan(est, ctx)
        steps = ctx.planned_steps if plan.steps is None else min(plan.steps, ctx.planned_steps)
        return ctx.with_steps(est._steps_event(plan, ctx, steps))

    def _make_problem(self, ctx: FitContext, plan: NoisePlan):
        """The engine problem of one fit (see :class:`skfairdp.engine.PrimalDualProblem`)."""
        raise NotImplementedError

    def _param_values(self, *names: str) -> dict:
        """``{name: value}`` of parameters that go to the problem unchanged."""
        return {name: getattr(self, name) for name in names}

    def _per_row_tensors(self, ctx: FitContext) -> tuple[torch.Tensor, ...]:
        """Per-row tensors indexed with each batch (default: one int64 column pair (y, group))."""
        return (torch.as_tensor(np.stack([ctx.y, ctx.groups], axis=1)),)

    def _store_fitted(self, problem, plan: NoisePlan, ctx: FitContext) -> None:
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
