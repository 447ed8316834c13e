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

import numpy as np
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
        self,
        *,
        epsilon: float = 1.0,
        delta: float | str = "auto",
        max_grad_norm: float = 1.0,
        max_sample_weight: float = 1.0,
        noise_multiplier: float | None = None,
        activation: str = "tanh",
        lr: float = 0.1,
        batch_size: int | str = "auto",
        max_epochs: int | str = "auto",
        module: type | torch.nn.Module | None = None,
        hidden_layer_sizes: tuple[int, ...] = (),
        optimizer: type = torch.optim.SGD,
        callbacks: list | None = None,
        random_state: int | np.random.RandomState | None = None,
        secure_mode: bool = False,
        device: str | torch.device = "cpu",
        n_jobs: int | None = None,
        record_private_diagnostics: bool = False,
        verbose: int = 0,
        **kwargs,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.max_grad_norm = max_grad_norm
        self.max_sample_weight = max_sample_weight
        self.noise_multiplier = noise_multiplier
        self.activation = activation
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.module = module
        self.hidden_layer_sizes = hidden_layer_sizes
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.random_state = random_state
        self.secure_mode = secure_mode
        self.device = device
        self.n_jobs = n_jobs
        self.record_private_diagnostics = record_private_diagnostics
        self.verbose = verbose
        self._store_prefixed(kwargs)

    def _make_problem(self, ctx, plan):
        return CrossEntropyProblem()
