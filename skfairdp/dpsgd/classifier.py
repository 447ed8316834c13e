"""DPSGDClassifier: plain DP-SGD (Abadi et al. 2016), the default oracle of reductions.

No fairness of its own: every per-sample gradient is clipped to
``max_grad_norm``, multiplied by its (public, bounded) sample weight *after*
clipping, summed, noised and divided by the expected batch size. Clipping before
weighting keeps each row's sensitivity at ``max_grad_norm * max_sample_weight``
and the weighting exact (weighting first would let clipping erase the weights a
reduction asks for; Alabi's digest, pitfall P19). That makes it the weighted-ERM
oracle that :class:`~skfairdp.CGOOReduction` calls, and a private baseline.
"""

from __future__ import annotations

import torch
from sklearn.utils._param_validation import StrOptions

from .._fit.base import parameter_constraints
from .._fit.schedules import DPSGD
from .core import CrossEntropyProblem, NoisySGDClassifierBase, UngroupedFitMixin

__all__ = ["DPSGDClassifier"]


class DPSGDClassifier(UngroupedFitMixin, NoisySGDClassifierBase):
    """Cross-entropy classifier trained by DP-SGD with post-clipping sample weights.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of the fit (``np.inf``: non-private SGD).
    delta : "auto" or float, default="auto"
        ``"auto"``: ``0.1 / n`` rounded down.
    max_grad_norm : float, default=1.0
        Per-sample clipping norm ``C``.
    max_sample_weight : float, default=1.0
        Public bound on ``sample_weight``; the sensitivity is ``C * max_sample_weight``.
    noise_multiplier : float, default=None
        Fixed gradient noise multiplier (the fit then runs as many planned steps as
        ``(epsilon, delta)`` allows); ``None`` calibrates it to the budget.
    activation : str, default="tanh"
        Activation of the default MLP (when ``hidden_layer_sizes`` is not empty).
    batch_size : "auto" or int, default="auto"
        Expected Poisson batch size. ``"auto"``: ``2^round(log2(n / 12))`` within
        ``[32, 256]`` (``dpsgd_batch_size`` in ``_fit/schedules.py``; 256 on Adult).
    max_epochs : "auto" or int, default="auto"
        Expected passes. ``"auto"``: 20, or more so that the run takes at least
        600 steps (``dpsgd_max_epochs``; 20 on Adult, 52 at 750 rows). On small
        data the number of steps, not of epochs, decides whether SGD gets anywhere.
    lr, module, hidden_layer_sizes, optimizer, callbacks
        Training (skorch's names); the default module is logistic regression.
    random_state, secure_mode, device, n_jobs, record_private_diagnostics, verbose
        Execution.
    **kwargs
        ``module__*`` and ``optimizer__*`` arguments of the module and the
        optimizer (skorch's routing; visible to ``get_params``).

    Attributes
    ----------
    module_ : torch.nn.Module
    classes_ : ndarray
    noise_multiplier_ : float
    dp_event_ : dp_accounting.DpEvent
        The releases the fit executed (one Poisson-sampled Gaussian per step).
    privacy_spent_ : PrivacySpent
    history_ : skorch.history.History
    n_steps_ : int
    batch_size_, max_epochs_ : int
        The schedule the fit ran with (``"auto"`` resolved from ``n``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import DPSGDClassifier
    >>> clf = DPSGDClassifier(epsilon=1.0, max_epochs=3, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:5]).shape
    (5, 2)
    >>> round(clf.privacy_spent_.epsilon, 2)
    1.0
    """

    _parameter_constraints = parameter_constraints(
        "activation",
        also_accept={
            "batch_size": [StrOptions({"auto"})],
            "max_epochs": [StrOptions({"auto"})],
        },
    )
    _schedule = DPSGD

    def __init__(
        self, *, epsilon=1.0, delta="auto", max_grad_norm=1.0, max_sample_weight=1.0,
        noise_multiplier=None, activation="tanh", lr=0.1, batch_size="auto", max_epochs="auto",
        module=None, hidden_layer_sizes=(), optimizer=torch.optim.SGD, callbacks=None,
        random_state=None, secure_mode=False, device="cpu", n_jobs=None,
        record_private_diagnostics=False, verbose=0, **kwargs,
    ):  # fmt: skip
        self._store_parameters(locals())

    def _make_problem(self, ctx, plan):
        return CrossEntropyProblem()
