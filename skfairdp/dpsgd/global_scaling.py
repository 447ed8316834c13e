"""GlobalScalingDPClassifier: DPSGD-Global-Adapt (Esipova et al., ICLR 2023).

DP-SGD clips each per-sample gradient to norm ``C0``: samples with large
gradients (often an under-represented group's) are shrunk more than others,
so the clipped batch gradient points in a different direction from the true
one (*gradient misalignment*), and the excess loss falls unequally on groups.
Global scaling multiplies every gradient by the same ``C0 / Z`` instead, which
keeps the direction whenever ``Z`` bounds the norms:

``gamma_i = C0 / max(Z, ||g_i||)`` (``variant="adapt"``)
    ``C0 / Z`` below ``Z``; above it, clip to ``C0`` (not drop). ``Z`` follows
    ``Z <- Z exp(-z_lr + b~)`` with ``b~`` the noisy fraction of the batch with
    ``||g_i|| > z_threshold * Z``, released with the gradient on the same batch.
``gamma_i = C0 / Z`` or 0 above ``Z`` (``variant="global"``, Bu et al. 2021)
    fixed ``Z = z_init``.
``gamma_i = min(1, C0 / ||g_i||)`` (``variant="clip"``)
    plain DP-SGD (Abadi et al. 2016), the baseline.

What this module adds to the engine: the per-sample weights (the problem's
``private_sum`` hook), the count release and ``Z``'s update.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.utils._param_validation import StrOptions

from .._fit.base import NON_NEGATIVE, POSITIVE, parameter_constraints
from ..privacy import EventRecorder, noisy_count
from .core import CrossEntropyProblem, NoisySGDClassifierBase, UngroupedFitMixin

__all__ = [
    "GlobalScalingDPClassifier",
    "GlobalScalingProblem",
    "VARIANTS",
    "scaling_weights",
    "update_z",
]

VARIANTS = ("adapt", "global", "clip")
_TINY = 1e-12
_Z_RANGE = (1e-12, 1e12)


def scaling_weights(
    norms: torch.Tensor, z: torch.Tensor | float, max_grad_norm: float, variant: str
) -> torch.Tensor:
    """Per-sample factors ``gamma_i`` of a step (every ``||gamma_i g_i|| <= C0``).

    Parameters
    ----------
    norms : Tensor of shape (B,)
        Flat L2 norms of the per-sample gradients.
    z : float or scalar Tensor
        The strict bound ``Z`` of this step (unused by ``"clip"``).
    max_grad_norm : float
        ``C0``, the per-sample sensitivity.
    variant : {"adapt", "global", "clip"}

    Notes
    -----
    ``"adapt"`` uses ``C0 / max(Z, ||g||) = (C0 / Z) min(1, Z / ||g||)``: the
    paper's two branches, continuous at ``||g|| = Z`` and valid for every
    ``Z > 0``. For ``Z < C0`` it is DP-SGD clipped at ``Z`` with the step scaled
    by ``C0 / Z > 1`` (the authors' code instead falls back to clipping at
    ``C0`` there, a jump in the update).
    """
    c = float(max_grad_norm)
    if variant == "clip":
        return (c / (norms + _TINY)).clamp(max=1.0)
    if variant == "global":
        return torch.where(norms <= z, c / z, torch.zeros_like(norms))
    if variant == "adapt":
        return c / torch.clamp(norms, min=z)
    raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")


def update_z(
    z: torch.Tensor, noisy_fraction: torch.Tensor, z_lr: float, z_min=None, z_max=None
) -> torch.Tensor:
    """``Z exp(-z_lr + b~)``, then the optional clamps (post-processing of ``b~``).

    ``Z`` is always kept in ``[1e-12, 1e12]`` so that very noisy counts (tiny
    batches) cannot drive it to 0 or infinity (and the model to NaN).
    """
    z = z * torch.exp(noisy_fraction - z_lr)
    z = z.clamp(min=z_min if z_min is not None else _Z_RANGE[0], max=_Z_RANGE[1])
    if z_max is not None:
        z = z.clamp(max=z_max)
    return z


class GlobalScalingProblem(CrossEntropyProblem):
    """One fit's per-step processing, as the engine sees it.

    Holds ``Z`` (a device scalar, so a step needs no host synchronisation) and
    logs, per executed step, the ``Z`` used and the released noisy fraction.
    The count release is recorded in ``recorder`` (the fit's, shared with the
    engine; a new one by default).
    """

    def __init__(
        self,
        *,
        variant: str,
        max_grad_norm: float,
        z_init: float,
        z_lr: float,
        z_threshold: float,
        count_noise_std: float,
        expected_batch_size: float,
        z_min=None,
        z_max=None,
        random=None,
        device="cpu",
        recorder: EventRecorder | None = None,
        max_weight: float = 1.0,
    ):
        self.variant = variant
        self.max_grad_norm = float(max_grad_norm)
        self.state = {"z": torch.tensor(float(z_init), dtype=torch.float64, device=device)}
        self.z_lr = float(z_lr)
        self.z_threshold = float(z_threshold)
        self.count_noise_std = float(count_noise_std)
        self.expected_batch_size = float(expected_batch_size)
        self.z_min = z_min
        self.z_max = z_max
        self.random = random
        self.recorder = recorder if recorder is not None else EventRecorder()
        self.max_weight = float(max_weight)
        self.z_log: list[torch.Tensor] = []
        self.fraction_log: list[torch.Tensor] = []

    @property
    def z(self) -> torch.Tensor:
        """The current bound ``Z`` (``state["z"]``)."""
        return self.state["z"]

    def private_sum(self, per_sample, X, *batch, weights=None):
        """``sum_i w_i gamma_i g_i`` (sensitivity ``C0`` per unit weight); "adapt" also
        releases the (weighted) clip fraction."""
        if per_sample is None:
            norms = torch.zeros(0, dtype=torch.float64, device=self.z.device)
            total = None
        else:
            raw = per_sample.norms()
            norms = raw.double()
            gamma = scaling_weights(norms, self.z, self.max_grad_norm, self.variant)
            if weights is not None:
                gamma = gamma * weights.to(gamma.dtype)
            total = per_sample.weighted_sum(gamma.to(raw.dtype))
        if self.variant != "clip":
            self.z_log.append(self.z)
        if self.variant != "adapt":
            return total, self.max_grad_norm
        # b_t uses the Z that scaled this step; Z moves when the step is applied.
        above = norms > self.z_threshold * self.z
        if weights is None:
            count = above.sum().double()
        else:  # a row moves the weighted count by its weight: sensitivity max_weight
            count = (weights.double() * above).sum()
        noisy = noisy_count(
            count, self.count_noise_std, self.random, self.recorder, sensitivity=self.max_weight
        )[0]
        return total, self.max_grad_norm, {"fraction": noisy / self.expected_batch_size}

    def apply_statistics(self, statistics: dict) -> None:
        """``Z <- Z exp(-z_lr + b~)`` from the released clip fraction (a new ``state``)."""
        fraction = statistics["fraction"]
        self.fraction_log.append(fraction)
        self.state = {"z": update_z(self.z, fraction, self.z_lr, self.z_min, self.z_max)}


class GlobalScalingDPClassifier(UngroupedFitMixin, NoisySGDClassifierBase):
    """Differentially private classifier by DPSGD-Global-Adapt (global gradient scaling).

    Scales every per-sample gradient by the same ``C0 / Z`` (clipping only
    those above ``Z``) so that the privatised batch gradient keeps its
    direction, which removes most of DP-SGD's disparate impact across groups
    *without using group labels* (Esipova, Ashari Ghomi, Luo & Cresswell,
    "Disparate Impact in Differential Privacy from Gradient Misalignment",
    ICLR 2023). ``Z`` tracks a high quantile of the gradient norms through a
    noisy count released with each step. See :doc:`/global_scaling`.

    Parameters
    ----------
    variant : {"adapt", "global", "clip"}, default="adapt"
        ``"adapt"``: ``gamma_i = C0/Z`` if ``||g_i|| <= Z`` else ``C0/||g_i||``,
        ``Z`` adapted privately. ``"global"``: fixed ``Z = z_init``, samples
        above it dropped (DPSGD-Global). ``"clip"``: standard DP-SGD.
    epsilon : float, default=1.0
        Target epsilon (add/remove one row); ``np.inf`` trains non-privately
        (plain SGD on shuffled batches, no scaling) and reports ``(inf, 0)``.
    delta : "auto" or float, default="auto"
        ``"auto"`` is ``0.1/n`` rounded down to one digit.
    max_grad_norm : float, default=1.0
        ``C0``: every processed per-sample gradient has norm at most ``C0``.
        With ``Z`` fixed, training depends on ``lr * max_grad_norm`` only; keep
        it at 1 and tune ``lr`` (the paper's Adult ``C0=0.5, eta=0.2`` is
        ``lr=0.1``).
    max_sample_weight : float, default=1.0
        Public bound on ``sample_weight``, as in :class:`~skfairdp.DPFermiClassifier`;
        it scales the count's sensitivity too (the count is weighted).
    noise_multiplier : None or float, default=None
        ``None`` calibrates ``sigma_1`` to ``(epsilon, delta)``; a float fixes it
        and caps the steps to the budget, as in :class:`~skfairdp.DPFermiClassifier`.
    z_init : float, default=50.0
        Initial (``"adapt"``) or fixed (``"global"``) strict bound ``Z``.
    z_lr : float, default=0.1
        ``eta_Z``: ``log Z`` moves by ``-z_lr + b~`` per step, so ``Z`` settles
        where a fraction ``z_lr`` of samples has ``||g|| > z_threshold * Z``.
    z_threshold : float, default=1.0
        ``tau``: the count is of norms above ``tau * Z`` (paper: 1 tabular,
        0.7 images).
    count_noise_multiplier : "auto" or float, default="auto"
        ``sigma_2``: std of the Gaussian noise on the count (sensitivity 1).
        ``"auto"`` is the paper's 10 while the target's effective multiplier is
        below ``10/3``; above, on small data or small epsilon, ``3 sigma_eff``
        (the gradient's multiplier is then ``sigma_eff sqrt(9/8)``). With
        ``calibration="paper"``, ``"auto"`` is 10. A float at or below the
        effective multiplier the target needs is an error.
    calibration : {"accountant", "paper"}, default="accountant"
        ``"accountant"``: gradient and count on the same batch are one Gaussian
        mechanism with ``sigma_eff = (sigma_1^-2 + sigma_2^-2)^(-1/2)``, and
        ``sigma_1`` is raised so that ``sigma_eff`` is the DP-SGD multiplier
        for the target (sound). ``"paper"``: the paper's accounting (two
        mechanisms composed as if independent), which under-states epsilon;
        ``privacy_spent_`` is then the paper's (smaller) epsilon, and a warning
        gives the sound one.
    lr : float, default=0.1
        SGD learning rate applied to the processed, noised gradient sum divided
        by the expected batch size (a step moves the weights by at most
        ``lr * max_grad_norm`` plus noise, in every variant).
    batch_size : int, default=256
        Expected (Poisson) batch size; ``q = batch_size / n``.
    max_epochs : int, default=20
        ``T = max_epochs * ceil(n / batch_size)`` steps.
    module : None, nn.Module class or instance, default=None
        ``None`` builds an MLP from ``hidden_layer_sizes`` and ``activation``.
    hidden_layer_sizes : tuple of int, default=(256, 256)
        Hidden layers of the default MLP (the paper's Adult model).
    activation : {"tanh", "relu", "logistic", "identity"}, default="tanh"
        Hidden activation of the default MLP.
    z_min, z_max : None or float, default=None
        Optional clamps of ``Z`` after each update (post-processing of the
        released count, so free). ``z_min=max_grad_norm`` enforces the paper's
        ``Z >= C0``; not needed for privacy, see :func:`scaling_weights`.
    optimizer, callbacks, random_state, secure_mode, device, n_jobs,
    record_private_diagnostics, verbose, **kwargs
        As in :class:`~skfairdp.DPFermiClassifier` (seeded noise is for
        experiments only).
    Attributes
    ----------
    classes_ : ndarray
    module_ : torch.nn.Module
    z_history_ : ndarray of shape (n_steps,)
        ``Z`` used at each step (``"adapt"``, ``"global"``); empty for
        ``"clip"`` and non-private fits. Private: a function of released counts.
    clip_fraction_history_ : ndarray of shape (n_steps,)
        The released noisy fractions ``b~_t`` (``"adapt"`` only, else empty).
    privacy_spent_ : PrivacySpent
    dp_event_ : dp_accounting.DpEvent
    noise_multiplier_ : float
        ``sigma_1``, gradient-noise std over ``max_grad_norm``.
    effective_noise_multiplier_ : float
        ``(sigma_1^-2 + sigma_2^-2)^(-1/2)`` for ``"adapt"``, else ``sigma_1``.
    count_noise_multiplier_ : float
        ``sigma_2`` used (``inf`` for ``"global"``, ``"clip"`` and non-private fits).
    history_ : skorch.history.History
        Per-epoch training loss on raw batches (NOT covered by the guarantee).
    n_steps_ : int
        Number of steps taken (``n_steps`` above).

    Notes
    -----
    ``fit`` takes no group labels, by design: the method treats every row
    alike. Evaluate per-group effects with
    :func:`skfairdp.diagnostics.disparate_impact_report`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import GlobalScalingDPClassifier
    >>> clf = GlobalScalingDPClassifier(epsilon=1.0, hidden_layer_sizes=(16,), batch_size=64,
    ...                                 max_epochs=5, random_state=0)
    >>> clf.fit(X, y).predict(X[:5]).shape  # no group labels
    (5,)
    >>> round(clf.privacy_spent_.epsilon, 2)
    1.0
    """

    _parameter_constraints = parameter_constraints(
        "count_noise_multiplier",
        "calibration",
        "activation",
        own={
            "variant": [StrOptions(set(VARIANTS))],
            "z_init": [POSITIVE],
            "z_lr": [NON_NEGATIVE],
            "z_threshold": [NON_NEGATIVE],
            "z_min": [None, POSITIVE],
            "z_max": [None, POSITIVE],
        },
    )

    def __init__(
        self, variant="adapt", *, epsilon=1.0, delta="auto", max_grad_norm=1.0,
        max_sample_weight=1.0, noise_multiplier=None, z_init=50.0, z_lr=0.1, z_threshold=1.0,
        z_min=None, z_max=None, count_noise_multiplier="auto", calibration="accountant",
        activation="tanh", lr=0.1, batch_size=256, max_epochs=20, module=None,
        hidden_layer_sizes=(256, 256), optimizer=torch.optim.SGD, callbacks=None, random_state=None,
        secure_mode=False, device="cpu", n_jobs=None, record_private_diagnostics=False, verbose=0,
        **kwargs,
    ):  # fmt: skip
        self._store_parameters(locals())

    def _check_params(self) -> None:
        if self.z_min is not None and self.z_max is not None and self.z_min > self.z_max:
            raise ValueError(
                f"z_min={self.z_min!r} must not exceed z_max={self.z_max!r} (clamps of Z)"
            )

    def _count_noise_multiplier(self) -> float | str:
        return self.count_noise_multiplier if self.variant == "adapt" else math.inf

    def _make_problem(self, ctx, plan):
        names = ("variant", "max_grad_norm", "z_init", "z_lr", "z_threshold", "z_min", "z_max")
        return GlobalScalingProblem(
            **self._param_values(*names),
            **ctx.mechanisms,
            count_noise_std=plan.statistics_multiplier,
            expected_batch_size=ctx.sampler.expected_batch_size,
            device=ctx.device,
        )

    def _store_fitted(self, problem, plan, ctx) -> None:
        def stacked(log):
            if not log:
                return np.zeros(0)
            return torch.stack(log).cpu().numpy().astype(float)

        self.count_noise_multiplier_ = plan.statistics_multiplier
        self.z_history_ = stacked(problem.z_log)
        self.clip_fraction_history_ = stacked(problem.fraction_log)
        # public after the fit: the next Z (a function of the released counts)
        self.z_ = float(problem.z) if problem.z_log else float(self.z_init)
