"""DPSGDRegressor: weighted least squares by plain DP-SGD, the reductions' regression oracle.

The regression counterpart of :class:`~skfairdp.DPSGDClassifier`: the per-sample
loss is the squared error ``(f(x) - y)^2`` of a module with one output (a linear
model by default); every per-sample gradient is clipped to ``max_grad_norm``,
multiplied by its (public, bounded) sample weight *after* clipping, summed,
noised and divided by the expected batch size, on Poisson batches. It is the
weighted least-squares oracle of :class:`~skfairdp.CGOOReduction`'s regression
mode (Alabi's subgroup-weights case study, digest ``seed-002-cgoo.md`` §2.6):
``fit(X, y, sample_weight=w_group(i) / max w)``.
"""

from __future__ import annotations

import torch

from .._fit.base import PrivateRegressorBase, parameter_constraints
from .core import ActivationModuleMixin, UngroupedFitMixin

__all__ = ["DPSGDRegressor", "SquaredErrorProblem"]


class SquaredErrorProblem:
    """Per-sample squared error ``(output - y)^2`` of a one-output module (the engine's problem)."""

    private_primal = (True,)
    dual_clip = 0.0  # no dual rows: the engine noises nothing but the gradient sum

    def prepare_batch(self, y):
        return (y,)

    def primal_objectives(self, outputs, y):
        loss = (outputs[:, 0] - y) ** 2
        return (loss,), {"loss": loss}

    def primal_output_gradients(self, outputs, y):
        """:meth:`primal_objectives` differentiated by hand: ``2 (output - y)``."""
        residual = outputs[:, 0] - y
        return (2.0 * residual.unsqueeze(1),), {"loss": residual**2}


class DPSGDRegressor(UngroupedFitMixin, ActivationModuleMixin, PrivateRegressorBase):
    """Least-squares regressor trained by DP-SGD with post-clipping sample weights.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of the fit (``np.inf``: non-private SGD).
    delta : "auto" or float, default="auto"
        ``"auto"``: ``0.1 / n`` rounded down.
    max_grad_norm : float, default=1.0
        Per-sample clipping norm ``C`` (a gradient ``2 (f(x) - y) x`` longer than
        ``C`` is scaled down: for large residuals the fit is Huber-like).
    max_sample_weight : float, default=1.0
        Public bound on ``sample_weight``; the sensitivity is ``C * max_sample_weight``.
    noise_multiplier : float, default=None
        Fixed gradient noise multiplier (the fit then runs as many planned steps as
        ``(epsilon, delta)`` allows); ``None`` calibrates it to the budget.
    activation : str, default="tanh"
        Activation of the default MLP (when ``hidden_layer_sizes`` is not empty).
    lr, batch_size, max_epochs, module, hidden_layer_sizes, optimizer, callbacks
        Training (skorch's names); the default module is linear regression.
    random_state, secure_mode, device, n_jobs, record_private_diagnostics, verbose
        Execution.
    **kwargs
        ``module__*`` and ``optimizer__*`` arguments of the module and the
        optimizer (skorch's routing; visible to ``get_params``).

    Attributes
    ----------
    module_ : torch.nn.Module
        One output.
    noise_multiplier_ : float
    dp_event_ : dp_accounting.DpEvent
        The releases the fit executed (one Poisson-sampled Gaussian per step).
    privacy_spent_ : PrivacySpent
    history_ : skorch.history.History
    n_steps_ : int
    n_features_in_ : int

    Notes
    -----
    Scale the features and the target first (e.g. ``StandardScaler``): clipping
    bounds each row's gradient, so the scale decides how much of it survives.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> y = X @ [1.0, -0.5, 0.0] + 0.1 * rng.normal(size=400)
    >>> from skfairdp import DPSGDRegressor
    >>> reg = DPSGDRegressor(epsilon=1.0, batch_size=64, max_epochs=5, random_state=0)
    >>> reg.fit(X, y).predict(X[:5]).shape
    (5,)
    >>> round(reg.privacy_spent_.epsilon, 2)
    1.0
    """

    _parameter_constraints = parameter_constraints("activation")

    def __init__(
        self, *, epsilon=1.0, delta="auto", max_grad_norm=1.0, max_sample_weight=1.0,
        noise_multiplier=None, activation="tanh", lr=0.1, batch_size=256, max_epochs=20,
        module=None, hidden_layer_sizes=(), optimizer=torch.optim.SGD, callbacks=None,
        random_state=None, secure_mode=False, device="cpu", n_jobs=None,
        record_private_diagnostics=False, verbose=0, **kwargs,
    ):  # fmt: skip
        self._store_parameters(locals())

    def _make_problem(self, ctx, plan) -> SquaredErrorProblem:
        return SquaredErrorProblem()
