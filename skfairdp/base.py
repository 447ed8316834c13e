"""Shared machinery of skfairdp's private classifiers: parameters, one fit, prediction.

Every estimator is a :class:`PrivateClassifierBase`. It declares its parameters
(:func:`declare_parameters`) and fills a few hooks of the one private fit
(:meth:`PrivateClassifierBase._private_fit`, see its docstring for the path of a
fit); everything else (validation, randomness, sampling, calibration, module and
optimizer, the training loop, the recorded event and what it costs) lives here.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from dataclasses import dataclass, field

import dp_accounting
import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_array, check_is_fitted

from ._degenerate import warn_if_degenerate
from ._parameters import (
    COMMON_CONSTRAINTS,
    NON_NEGATIVE,
    POSITIVE,
    SHARED_CONSTRAINTS,
    Param,
    ParameterDeclaration,
    declare_parameters,
    parameter_constraints,
)
from ._threads import torch_threads
from ._validation import check_X, check_y, densify
from .engine import NoiseConfig, train
from .fairness import encode_sensitive_features
from .nn import build_module
from .privacy import (
    EventRecorder,
    PoissonSampler,
    RandomSource,
    ShuffledBatches,
    calibration,
    resolve_delta,
    sampled_gaussian_steps_event,
)
from .privacy.accountant import epsilon_history
from .privacy.events import compose
from .privacy.sampling import CappedSampler

__all__ = [
    "COMMON_CONSTRAINTS",
    "SHARED_CONSTRAINTS",
    "FitContext",
    "NON_NEGATIVE",
    "NoisePlan",
    "POSITIVE",
    "Param",
    "PrivateClassifierBase",
    "PrivateDiagnosticsWarning",
    "declare_parameters",
    "parameter_constraints",
]

_PREFIXES = ("module__", "optimizer__")
_PREDICT_CHUNK = 65536


class PrivateDiagnosticsWarning(UserWarning):
    """A fit records diagnostics computed on raw training data (not private)."""


@dataclass
class FitContext:
    """What one fit knows before training; the template hands it to the estimator's hooks.

    Attributes
    ----------
    X : ndarray of float32, shape (n_samples, n_features)
    y : ndarray of int64, shape (n_samples,)
        Class indices into ``classes_``.
    groups : ndarray of int64, shape (n_samples,)
        Group codes from ``_encode_groups`` (zeros when the estimator uses none).
    sample_weight : ndarray of float64, shape (n_samples,), or None
        Validated sample weights (``None``: every row weighs 1).
    max_weight : float
        Bound on the weights that every sensitivity is scaled by:
        ``max_sample_weight`` when the fit has sample weights, else 1.
    n_classes : int
    private : bool
        ``epsilon < inf``.
    delta : float
        Resolved target delta (0 for non-private fits).
    device : torch.device
    random : RandomSource
        The fit's only source of sampling, noise and initialisation randomness.
    sampler : PoissonSampler or ShuffledBatches
        Poisson batches of rate ``sampling_rate`` (private) or shuffled epochs.
    planned_steps : int
        ``max_epochs * sampler.steps_per_epoch``.
    recorder : EventRecorder
        Where every executed release records its event; ``dp_event_`` is its
        ``build()``.
    upfront_event : DpEvent
        The planned event of the releases made before training (returned by
        ``_upfront_releases``); calibration plans with it.
    released : dict
        The estimator's own values from ``_upfront_releases`` (e.g. DP-FERMI's
        released group priors), for its later hooks.
    """

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    sample_weight: np.ndarray | None
    max_weight: float
    n_classes: int
    private: bool
    delta: float
    device: torch.device
    random: RandomSource
    sampler: PoissonSampler | ShuffledBatches
    planned_steps: int
    recorder: EventRecorder
    upfront_event: dp_accounting.DpEvent = field(default_factory=dp_accounting.NoOpDpEvent)
    released: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def sampling_rate(self) -> float:
        """Poisson rate ``q = min(1, batch_size / n)``."""
        return self.sampler.sampling_rate

    @property
    def mechanisms(self) -> dict:
        """What a problem releasing statistics in its hooks needs.

        ``random`` (its noise), ``recorder`` (where it records) and ``max_weight``
        (the bound on one row's weight, which scales its statistics' sensitivity).
        """
        return {"random": self.random, "recorder": self.recorder, "max_weight": self.max_weight}

    def planned_event(self, steps_event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
        """The fit's planned event: the up-front releases, then ``steps_event``."""
        return compose([self.upfront_event, steps_event])


@dataclass(frozen=True)
class NoisePlan:
    """The noise of one fit, as calibrated (``inf``: that release adds no noise / does not run).

    Attributes
    ----------
    primal : float
        Gradient-noise std over the clipping norm (``noise_multiplier_``).
    dual : float
        Noise multiplier of the dual rows the engine releases (DP-FERMI's W).
    statistics : float
        Noise multiplier (or Laplace scale) of the batch statistics a problem
        releases in its hooks (a count, a histogram).
    effective : float
        Joint Gaussian multiplier of one step's releases
        (``effective_noise_multiplier_``).
    steps : int or None
        Steps to run when fewer than planned (a fixed noise multiplier capped by
        the budget); ``None`` runs every planned step.
    """

    primal: float = math.inf
    dual: float = math.inf
    statistics: float = math.inf
    effective: float = math.inf
    steps: int | None = None


class PrivateClassifierBase(ClassifierMixin, BaseEstimator):
    """Base class: declared parameters, the one private fit, prediction.

    **Parameters.** A subclass sets ``_parameters = declare_parameters(...)``;
    its ``__init__`` and ``_parameter_constraints`` are made from it (each
    estimator declares exactly its own parameters, never inheriting a constraint
    for one it lacks). Keyword arguments ``module__*``/``optimizer__*`` are
    stored too and visible to ``get_params``/``set_params``, so ``GridSearchCV``
    can tune the architecture, as in skorch.

    **Fit.** :meth:`fit` runs :meth:`_private_fit`, the one template of every
    estimator. A subclass fills in:

    - ``_make_problem(ctx, plan)`` (required): the engine problem, i.e. the
      per-sample objective, the statistics released per batch and the dual update;
    - ``_calibrate(ctx)``: the :class:`NoisePlan` meeting ``(epsilon, delta)``
      (default: one Gaussian per step, calibrated by :meth:`_calibrated_effective`);
    - ``_plan_for(z, ctx)`` and ``_steps_event(plan, ctx, steps)``: the plan of a
      fixed gradient multiplier ``z`` (``noise_multiplier``) and the planned event of
      ``steps`` steps with a plan, with which the template caps the steps to the
      budget (defaults: one Gaussian per step);
    - ``_encode_groups(sensitive_features, n_samples)``: group codes (default: none);
    - ``_upfront_releases(ctx)``: releases before training, e.g. a noisy
      histogram (default: none), returning their planned event;
    - ``_per_row_tensors(ctx)``: the per-row tensors the problem's batches hold
      (default: labels and groups);
    - ``_store_fitted(problem, plan)``: fitted attributes from the problem;
    - ``_check_params()``, ``_accountant_options()`` (and
      ``_calibration_options()``), ``_recorded_view()``, ``_report_accounting(ctx)``:
      cross-parameter checks, the accountant that prices the event (and the one
      calibration plans with), the view of same-batch releases, warnings about
      the accounting.
    """

    # fairlearn-style: request sensitive_features (and sample_weight) for fit under
    # metadata routing, so routers pass them without set_fit_request.
    __metadata_request__fit = {"sensitive_features": True, "sample_weight": True}

    #: The estimator's parameter declaration (set by each concrete estimator).
    _parameters: ParameterDeclaration | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        declaration = vars(cls).get("_parameters")
        if declaration is not None:
            cls._parameter_constraints = dict(declaration.constraints)
            cls.__init__ = declaration.make_init(cls)

    # -- skorch-style prefixed parameters ---------------------------------
    def _store_prefixed(self, kwargs: dict) -> None:
        for key, value in kwargs.items():
            if not key.startswith(_PREFIXES):
                raise TypeError(
                    f"{type(self).__name__}.__init__() got an unexpected keyword argument {key!r} "
                    f"(only {', '.join(p + '*' for p in _PREFIXES)} are routed)"
                )
            setattr(self, key, value)

    def _prefixed(self, prefix: str) -> dict:
        return {
            k[len(prefix) :]: v
            for k, v in vars(self).items()
            if k.startswith(prefix) and not k.endswith("_")
        }

    def get_params(self, deep: bool = True) -> dict:
        params = super().get_params(deep=deep)
        params.update({k: v for k, v in vars(self).items() if k.startswith(_PREFIXES)})
        return params

    def set_params(self, **params):
        prefixed = {k: v for k, v in params.items() if k.startswith(_PREFIXES)}
        for key, value in prefixed.items():
            setattr(self, key, value)
        rest = {k: v for k, v in params.items() if k not in prefixed}
        return super().set_params(**rest) if rest else self

    # -- validation ---------------------------------------------------------
    def _validate_X_y(self, X, y):
        """Validate the training data; set ``n_features_in_`` and ``classes_``.

        ``X`` may be a scipy.sparse matrix/array (e.g. a ``ColumnTransformer``
        with ``OneHotEncoder``): it is validated as sparse (NaN/inf among its
        stored values are rejected) and then densified once, so the returned
        ``X`` is always a dense float32 ndarray of shape (n_samples, n_features)
        (mind the memory of wide one-hot encodings). Errors name ``X`` or ``y``.

        Returns
        -------
        X : ndarray of float32
        y_enc : ndarray of int64
            Class indices into ``classes_``.
        """
        X = check_X(self, X, reset=True, ensure_min_samples=2)
        y = check_y(self, y, X.shape[0])
        X = densify(X)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 classes in y; got 1 class "
                f"({self.classes_[0]!r})"
            )
        return X, encoder.transform(y).astype(np.int64)

    def _device(self) -> torch.device:
        device = torch.device(self.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} was requested but CUDA is not available")
        return device

    def _build_module(self, n_features: int, n_outputs: int) -> torch.nn.Module:
        return build_module(
            self.module,
            n_features=n_features,
            n_outputs=n_outputs,
            hidden_layer_sizes=tuple(self.hidden_layer_sizes),
            module_kwargs=self._prefixed("module__"),
        )

    def _build_optimizer(self, module: torch.nn.Module) -> torch.optim.Optimizer:
        params = [p for p in module.parameters() if p.requires_grad]
        return self.optimizer(params, lr=self.lr, **self._prefixed("optimizer__"))

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

        validate parameters and data -> encode groups -> resolve delta, device,
        random source, sampler (Poisson when private) -> up-front releases ->
        calibrate the noise -> build module and optimizer (initialised from the
        random source) -> the problem -> train (release, apply per step, every
        release recorded) -> fitted attributes -> ``dp_event_`` (the recorded
        event) -> ``privacy_spent_`` and the per-epoch epsilons of ``history_``.
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
        sample_weight = self._validate_sample_weight(sample_weight, X.shape[0])
        groups = self._encode_groups(sensitive_features, X.shape[0])
        ctx = self._fit_context(X, y_enc, groups, sample_weight)
        if not ctx.private:
            ctx.recorder.record(dp_accounting.NonPrivateDpEvent())
        ctx.upfront_event = self._upfront_releases(ctx)
        plan = self._noise_plan(ctx) if ctx.private else NoisePlan()
        self.noise_multiplier_ = plan.primal
        self.effective_noise_multiplier_ = plan.effective
        sampler, max_epochs = ctx.sampler, self.max_epochs
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
            NoiseConfig(float(self.max_grad_norm), plan.primal, plan.dual, ctx.max_weight)
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

    def _validate_sample_weight(self, sample_weight, n_samples: int) -> np.ndarray | None:
        """Sample weights as float64, or None; errors name ``sample_weight`` (and the bound).

        Finite and non-negative, not all zero; when private, at most
        ``max_sample_weight`` (the bound every sensitivity is scaled by).
        """
        if sample_weight is None:
            return None
        if isinstance(sample_weight, numbers.Number):
            weights = np.full(n_samples, float(sample_weight))
        else:
            weights = check_array(
                sample_weight,
                ensure_2d=False,
                dtype=np.float64,
                ensure_all_finite=False,
                input_name="sample_weight",
                copy=True,
            )
        if weights.shape != (n_samples,):
            raise ValueError(
                f"sample_weight.shape == {weights.shape}, expected ({n_samples},): one weight "
                "per row of X"
            )
        private = not math.isinf(self.epsilon)
        bound = f" and at most max_sample_weight={self.max_sample_weight:g}" if private else ""
        bad = ~np.isfinite(weights) | (weights < 0)
        if private:
            bad |= weights > self.max_sample_weight
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"sample_weight must be finite, non-negative{bound}; got {weights[row]!r} "
                f"(row {row}). The weights are public and bounded: each row's clipped "
                "contribution is multiplied by its weight, so max_sample_weight scales the "
                "noise; raise it or rescale the weights."
                if private
                else f"sample_weight must be finite and non-negative; got {weights[row]!r} "
                f"(row {row})."
            )
        if not weights.any():
            raise ValueError("sample_weight: weights must contain at least one non-zero number.")
        return weights

    def _fit_context(self, X, y_enc, groups, sample_weight=None) -> FitContext:
        n = X.shape[0]
        private = not math.isinf(self.epsilon)
        device = self._device()
        random = RandomSource(self.random_state, secure_mode=self.secure_mode, device=device)
        sampler = (
            PoissonSampler(n, min(1.0, self.batch_size / n), random)
            if private
            else ShuffledBatches(n, self.batch_size, random)
        )
        return FitContext(
            X=X,
            y=y_enc,
            groups=groups,
            sample_weight=sample_weight,
            max_weight=1.0 if sample_weight is None else float(self.max_sample_weight),
            n_classes=len(self.classes_),
            private=private,
            delta=resolve_delta(self.delta, n) if private else 0.0,
            device=device,
            random=random,
            sampler=sampler,
            planned_steps=self.max_epochs * sampler.steps_per_epoch,
            recorder=EventRecorder(self._recorded_view()),
        )

    # -- hooks of the fit (defaults) ---------------------------------------
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

    # -- prediction ---------------------------------------------------------
    def _logits(self, X) -> np.ndarray:
        check_is_fitted(self, "module_")
        X = check_X(self, X, reset=False)  # sparse stays sparse: densified chunk by chunk
        if not isinstance(X, np.ndarray):
            X = X.tocsr()  # row slices
        device = next(self.module_.parameters()).device
        self.module_.eval()
        chunks = []
        with torch.no_grad():
            for start in range(0, X.shape[0], _PREDICT_CHUNK):
                xb = torch.from_numpy(densify(X[start : start + _PREDICT_CHUNK]))
                chunks.append(self.module_(xb.to(device)).double().cpu().numpy())
        if not chunks:
            return np.empty((0, len(self.classes_)))
        return np.concatenate(chunks)

    def decision_function(self, X) -> np.ndarray:
        """Logit scores: shape (n,) for binary tasks (class 1 vs 0), (n, n_classes) otherwise."""
        logits = self._logits(X)
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (softmax of the logits); no sensitive features needed."""
        logits = self._logits(X)
        logits -= logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Most probable class; no sensitive features needed."""
        logits = self._logits(X)  # first: raises NotFittedError before classes_ is read
        return self.classes_[np.argmax(logits, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = True  # accepted and densified (see _validate_X_y)
        tags.non_deterministic = bool(getattr(self, "secure_mode", False))
        return tags

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
