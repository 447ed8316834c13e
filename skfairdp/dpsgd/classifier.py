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

from sklearn.utils import metadata_routing
from sklearn.utils._param_validation import StrOptions

from .._fit.base import declare_parameters
from .._fit.schedules import min_steps_epochs, power_of_two_batch_size
from .core import CrossEntropyProblem, NoisySGDClassifierBase

__all__ = ["DPSGDClassifier", "auto_batch_size", "auto_max_epochs"]

# batch_size="auto" and max_epochs="auto" (see auto_batch_size, auto_max_epochs)
BATCH_FRACTION_INV = 12
MIN_BATCH, MAX_BATCH = 32, 256
MIN_EPOCHS, MIN_STEPS = 20, 600


def auto_batch_size(n_samples: int) -> int:
    """``batch_size="auto"``: ``2^round(log2(n / 12))`` within ``[32, 256]``.

    256 from about 2,200 rows on (Adult keeps it); 64 at 750 rows, 128 at 1,500.
    """
    return power_of_two_batch_size(n_samples, BATCH_FRACTION_INV, MIN_BATCH, MAX_BATCH)


def auto_max_epochs(n_samples: int, batch_size: int) -> int:
    """``max_epochs="auto"``: 20 passes, or more to take at least 600 steps (small data)."""
    return min_steps_epochs(n_samples, batch_size, MIN_EPOCHS, MIN_STEPS)


class DPSGDClassifier(NoisySGDClassifierBase):
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
        ``[32, 256]`` (:func:`auto_batch_size`; 256 on Adult).
    max_epochs : "auto" or int, default="auto"
        Expected passes. ``"auto"``: 20, or more so that the run takes at least
        600 steps (:func:`auto_max_epochs`; 20 on Adult, 52 at 750 rows). On small
        data the number of steps, not of epochs, decides whether SGD gets anywhere.
    lr, module, hidden_layer_sizes, optimizer, callbacks
        Training (skorch's names); the default module is logistic regression.
    random_state, secure_mode, device, n_jobs, record_private_diagnostics, verbose
        Execution.

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

    # fit(X, y) takes no sensitive_features: routers never send them here.
    __metadata_request__fit = {"sensitive_features": metadata_routing.UNUSED}

    _parameters = declare_parameters(
        "activation",
        defaults={"batch_size": "auto", "max_epochs": "auto"},
        also_accept={
            "batch_size": [StrOptions({"auto"})],
            "max_epochs": [StrOptions({"auto"})],
        },
    )

    def fit(self, X, y, *, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Public weights in ``[0, max_sample_weight]`` (any non-negative finite
            weights when ``epsilon=inf``), applied after clipping.

        Returns
        -------
        self
        """
        return self._private_fit(X, y, sample_weight=sample_weight)

    def _training_schedule(self, n_samples: int) -> tuple[int, int]:
        """``batch_size`` and ``max_epochs``, ``"auto"`` resolved from ``n_samples``."""
        batch_size = self.batch_size
        if batch_size == "auto":
            batch_size = auto_batch_size(n_samples)
        max_epochs = self.max_epochs
        if max_epochs == "auto":
            max_epochs = auto_max_epochs(n_samples, batch_size)
        return int(batch_size), int(max_epochs)

    def _make_problem(self, ctx, plan):
        self.batch_size_, self.max_epochs_ = self._training_schedule(ctx.n_samples)
        return CrossEntropyProblem()
