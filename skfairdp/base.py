"""Shared machinery of skfairdp's private classifiers (scikit-learn + skorch conventions)."""

from __future__ import annotations

import functools
import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._degenerate import warn_if_degenerate
from ._threads import torch_threads
from ._validation import HiddenLayerSizes, TorchDevice, check_X, check_y, densify
from .nn import ACTIVATIONS, build_module
from .privacy.accountant import ACCOUNTANTS, PRIVACY_UNITS

_PREFIXES = ("module__", "optimizer__")


class PrivateDiagnosticsWarning(UserWarning):
    """A fit records diagnostics computed on raw training data (not private)."""


def private_fit(fit):
    """Decorator of estimators' ``fit``: torch threads from ``n_jobs``, degenerate-model check."""

    @functools.wraps(fit)
    def wrapper(self, X, y, *args, **kwargs):
        with torch_threads(getattr(self, "n_jobs", None)):
            result = fit(self, X, y, *args, **kwargs)
            warn_if_degenerate(self, X, y)
        return result

    return wrapper


_PREDICT_CHUNK = 65536

# -- parameter constraints ------------------------------------------------------
# An estimator's ``_parameter_constraints`` holds exactly the parameters of its
# ``__init__`` (sklearn's check_param_validation; tests/test_common.py checks it for
# every estimator). Each estimator builds it with :func:`parameter_constraints` from
# the block every estimator takes, the shared entries it names, and its own entries.

#: Parameters that every estimator's ``__init__`` takes.
COMMON_CONSTRAINTS: dict = {
    # privacy target and clipping
    "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
    "delta": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
    "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
    # training and model
    "lr": [Interval(Real, 0, None, closed="neither")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "module": [None, type, HasMethods(["forward"])],
    "hidden_layer_sizes": [HiddenLayerSizes()],
    "optimizer": [type],
    # execution
    "callbacks": [None, list, tuple],
    "random_state": ["random_state"],
    "secure_mode": ["boolean"],
    "device": [TorchDevice()],
    "verbose": ["verbose"],
    "n_jobs": [
        None,
        Interval(Integral, None, -1, closed="right"),
        Interval(Integral, 1, None, closed="left"),
    ],
    "record_private_diagnostics": ["boolean"],
}

#: Parameters that several (not all) estimators take; each names the ones it takes.
SHARED_CONSTRAINTS: dict = {
    "privacy_unit": [StrOptions(set(PRIVACY_UNITS))],
    "accountant": [StrOptions(set(ACCOUNTANTS))],
    "iterate": [StrOptions({"last", "random"})],
    "calibration": [StrOptions({"accountant", "paper"})],
    "sensitive_values": [None, "array-like", dict],
    "activation": [StrOptions(set(ACTIVATIONS))],
    "accounting": [StrOptions({"joint", "composed"})],  # = _dpsgd.ACCOUNTING
    "count_noise_multiplier": [Interval(Real, 0, None, closed="neither")],
}


def parameter_constraints(*shared: str, own: dict | None = None) -> dict:
    """An estimator's ``_parameter_constraints``.

    :data:`COMMON_CONSTRAINTS`, plus the :data:`SHARED_CONSTRAINTS` entries named in
    ``shared``, plus ``own`` (the estimator's own parameters). A name that is not
    shared, or an own entry that redefines a common or shared one, is an error: each
    parameter is constrained in one place.
    """
    own = dict(own or {})
    unknown = sorted(set(shared) - set(SHARED_CONSTRAINTS))
    if unknown:
        raise ValueError(f"not in SHARED_CONSTRAINTS: {unknown}")
    redefined = sorted(set(own) & (set(COMMON_CONSTRAINTS) | set(SHARED_CONSTRAINTS)))
    if redefined:
        raise ValueError(f"own constraints redefine common/shared ones: {redefined}")
    return {
        **COMMON_CONSTRAINTS,
        **{name: SHARED_CONSTRAINTS[name] for name in shared},
        **own,
    }


class PrivateClassifierBase(ClassifierMixin, BaseEstimator):
    """Base class: parameter routing, validation, module building and prediction.

    Subclasses store their parameters in ``__init__`` and forward ``**kwargs``
    (``module__*``/``optimizer__*``) to :meth:`_store_prefixed`. Those prefixed
    parameters are visible to ``get_params``/``set_params``, so ``GridSearchCV``
    can tune the architecture, as in skorch.
    """

    # fairlearn-style: request sensitive_features for fit under metadata routing.
    __metadata_request__fit = {"sensitive_features": True}

    # No ``_parameter_constraints`` here (nor in NoisySGDClassifierBase): each
    # estimator builds its own with :func:`parameter_constraints`, so none
    # inherits a constraint for a parameter its ``__init__`` lacks.

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
        record = bool(getattr(self, "record_private_diagnostics", False))
        if record:
            warnings.warn(
                f"{type(self).__name__}(record_private_diagnostics=True): history_ will hold "
                "the exact training loss (and other objective terms) computed on raw training "
                "batches. They are NOT covered by privacy_spent_; do not publish or ship this "
                "model (pickle it only without history_).",
                PrivateDiagnosticsWarning,
                stacklevel=3,
            )
        return record

    @property
    def history(self):
        """Alias of ``history_`` for skorch callbacks, which write to ``net.history``."""
        return self.history_
