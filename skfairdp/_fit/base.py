"""The base classes of skfairdp's private estimators: parameters, the fit, the outputs.

Every estimator is a :class:`PrivateClassifierBase` (or, for regression, a
:class:`PrivateRegressorBase`; both are a :class:`PrivateEstimatorBase`). It writes
its ``__init__`` and ``_parameter_constraints`` (:mod:`.parameters`) and fills a few
hooks of the one private fit (:class:`~skfairdp._fit.template.PrivateFitMixin`).
This module holds what is left: the skorch-style prefixed parameters, validation of
``X``/``y``, building the module and optimizer, and prediction.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_is_fitted

from ..data.source import is_source
from ..nn import build_module
from .context import FitContext, NoisePlan
from .parameters import (
    COMMON_CONSTRAINTS,
    NON_NEGATIVE,
    POSITIVE,
    SHARED_CONSTRAINTS,
    parameter_constraints,
    store_parameters,
)
from .source import check_source_features
from .template import PrivateDiagnosticsWarning, PrivateFitMixin
from .validation import check_X, check_y, check_y_numeric, densify

__all__ = [
    "COMMON_CONSTRAINTS",
    "SHARED_CONSTRAINTS",
    "FitContext",
    "NON_NEGATIVE",
    "NoisePlan",
    "POSITIVE",
    "PrivateClassifierBase",
    "PrivateDiagnosticsWarning",
    "PrivateEstimatorBase",
    "PrivateRegressorBase",
    "parameter_constraints",
]

_PREFIXES = ("module__", "optimizer__")
_PREDICT_CHUNK = 65536


def row_chunks(X, device: torch.device):
    """``(rows, tensor)`` per chunk of ``X``'s rows, densified and on ``device``.

    Prediction walks ``X`` in chunks so that a large (or sparse, densified) ``X``
    never sits whole on the device; a data source is streamed in its own chunks.
    """
    if is_source(X):
        for start, chunk in X.iter_features():
            yield slice(start, start + len(chunk)), torch.from_numpy(chunk).to(device)
        return
    if not isinstance(X, np.ndarray):
        X = X.tocsr()  # row slices
    for start in range(0, X.shape[0], _PREDICT_CHUNK):
        rows = slice(start, start + _PREDICT_CHUNK)
        yield rows, torch.from_numpy(densify(X[rows])).to(device)


class PrivateEstimatorBase(PrivateFitMixin, BaseEstimator):
    """Base class: parameters, the one private fit, the model's outputs.

    :class:`PrivateClassifierBase` and :class:`PrivateRegressorBase` add what
    depends on the task: the validation of ``y`` and prediction.

    **Parameters.** A subclass writes an ``__init__`` that stores each argument
    unchanged (scikit-learn's rule) and passes ``**kwargs`` to
    :meth:`_store_prefixed`, and sets ``_parameter_constraints`` with
    :func:`~skfairdp._fit.parameters.parameter_constraints`. Keyword arguments
    ``module__*``/``optimizer__*`` are stored too and visible to
    ``get_params``/``set_params``, so ``GridSearchCV`` can tune the architecture,
    as in skorch.

    **Fit.** :meth:`fit` runs the one template of every estimator
    (:class:`~skfairdp._fit.template.PrivateFitMixin`, whose docstring lists the
    hooks a subclass fills in).
    """

    # fairlearn-style: request sensitive_features (and sample_weight) for fit under
    # metadata routing, so routers pass them without set_fit_request.
    __metadata_request__fit = {"sensitive_features": True, "sample_weight": True}

    # -- parameters ----------------------------------------------------------
    def _store_parameters(self, arguments: dict) -> None:
        """Store ``__init__``'s arguments unchanged (its ``locals()``), route ``**kwargs``.

        Each estimator writes its ``__init__`` with its explicit signature and calls
        this once: every named argument becomes the attribute of the same name, as
        scikit-learn requires, and ``**kwargs`` goes to :meth:`_store_prefixed`.
        """
        self._store_prefixed(store_parameters(self, arguments))

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

    # -- outputs -----------------------------------------------------------
    def _outputs(self, X) -> np.ndarray:
        """The module's outputs on ``X`` (float64, shape (n_samples, n_outputs)), in chunks."""
        check_is_fitted(self, "module_")
        X = self._prediction_input(X)
        device = next(self.module_.parameters()).device
        self.module_.eval()
        chunks = []
        with torch.no_grad():
            for _, xb in row_chunks(X, device):
                chunks.append(self.module_(xb).double().cpu().numpy())
        if not chunks:
            return np.empty((0, self._n_outputs()))
        return np.concatenate(chunks)

    def _prediction_input(self, X):
        """``X`` checked for prediction: sparse stays sparse, a source stays a source."""
        if is_source(X):
            check_source_features(self, X)
            return X
        return check_X(self, X, reset=False)  # sparse: densified chunk by chunk

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = True  # accepted and densified (see check_X)
        tags.non_deterministic = bool(getattr(self, "secure_mode", False))
        return tags


class PrivateClassifierBase(ClassifierMixin, PrivateEstimatorBase):
    """Base class of the private classifiers: class labels, probabilities, argmax prediction."""

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

    # -- prediction ---------------------------------------------------------
    def decision_function(self, X) -> np.ndarray:
        """Logit scores: shape (n,) for binary tasks (class 1 vs 0), (n, n_classes) otherwise."""
        logits = self._outputs(X)
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (softmax of the logits); no sensitive features needed."""
        logits = self._outputs(X)
        logits -= logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Most probable class; no sensitive features needed."""
        logits = self._outputs(X)  # first: raises NotFittedError before classes_ is read
        return self.classes_[np.argmax(logits, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


class PrivateRegressorBase(RegressorMixin, PrivateEstimatorBase):
    """Base class of the private regressors: a float target, one output, ``predict`` = it.

    The fit is the same template (:meth:`_private_fit`); a regressor's problem
    receives the float targets as its one per-row tensor (:meth:`_per_row_tensors`)
    and its module has one output. No ``classes_``.
    """

    def _validate_X_y(self, X, y):
        """Validate the training data; set ``n_features_in_``.

        Returns
        -------
        X : ndarray of float32
            Dense (sparse input is densified once, as for the classifiers).
        y : ndarray of float32, shape (n_samples,)
        """
        X = check_X(self, X, reset=True, ensure_min_samples=2)
        y = check_y_numeric(self, y, X.shape[0])
        return densify(X), y.astype(np.float32)

    def _n_outputs(self) -> int:
        return 1

    def _per_row_tensors(self, ctx: FitContext) -> tuple[torch.Tensor, ...]:
        """One float32 tensor: the targets."""
        return (torch.as_tensor(ctx.y),)

    def predict(self, X) -> np.ndarray:
        """The model's output, shape (n_samples,); no sensitive features needed."""
        return self._outputs(X)[:, 0]
