"""Shared fit of the DP-SGD family: cross-entropy, one private gradient release per step.

:class:`~skfairdp.GlobalScalingDPClassifier` and the paper's comparison methods
(:mod:`skfairdp.baselines`) differ only in how a step processes per-sample
gradients (the problem's ``private_sum`` hook) and in whether a step also
releases a noisy count on the same batch. Everything else lives here: validation,
noise calibration, the executed :class:`dp_accounting.DpEvent`, the training loop.

Accounting of a step that releases a gradient sum (multiplier ``z1``) and a
count (multiplier ``z2``) computed on the same Poisson batch:

``"joint"`` (sound, default)
    one sampled Gaussian mechanism with ``z_eff = (z1^-2 + z2^-2)^(-1/2)``;
    ``z1`` is raised so that ``z_eff`` is the DP-SGD multiplier for the target.
``"composed"`` (the papers' accounting, for reproduction)
    two sampled Gaussian mechanisms composed as if their batches were
    independent. The batch is shared, so this under-states epsilon (slightly
    at ``z2 = 10``; a lot for small ``z2``).
"""

from __future__ import annotations

import math
import warnings
from numbers import Real

import dp_accounting
import numpy as np
import torch
from sklearn.utils._param_validation import Interval

from .base import PrivateClassifierBase
from .engine import NoiseConfig, train
from .nn import build_module
from .privacy import (
    EventRecorder,
    PoissonSampler,
    RandomSource,
    ShuffledBatches,
    calibration,
    epsilon_spent,
    joint_noise_multiplier,
    resolve_delta,
    sampled_gaussian_steps_event,
)
from .privacy.accountant import epsilon_history
from .privacy.events import compose

ACCOUNTING = ("joint", "composed")


def step_events(
    noise_multiplier: float,
    count_noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    accounting: str = "joint",
) -> dp_accounting.DpEvent:
    """The event of ``steps`` steps that each release a gradient sum and a count (the plan).

    Calibration plans with it; the fit's ``dp_event_`` is what its mechanisms
    recorded (equal to this for the executed steps, up to the order of a
    composition).

    Parameters
    ----------
    noise_multiplier : float
        ``z1``: gradient-noise std over the per-sample sensitivity.
    count_noise_multiplier : float
        ``z2``: count-noise std over the count's sensitivity (1); ``inf`` when
        the step releases no count.
    sampling_rate : float
        Poisson rate ``q``.
    steps : int
        Number of steps executed.
    accounting : {"joint", "composed"}
        See the module docstring.
    """
    if accounting not in ACCOUNTING:
        raise ValueError(f"accounting must be one of {ACCOUNTING}, got {accounting!r}")
    if accounting == "joint" or math.isinf(count_noise_multiplier):
        z_eff = joint_noise_multiplier(noise_multiplier, count_noise_multiplier)
        return sampled_gaussian_steps_event(z_eff, sampling_rate, steps)
    return compose(
        [
            sampled_gaussian_steps_event(noise_multiplier, sampling_rate, steps),
            sampled_gaussian_steps_event(count_noise_multiplier, sampling_rate, steps),
        ]
    )


def split_noise_multiplier(effective: float, count_noise_multiplier: float) -> float:
    """Gradient multiplier ``z1`` with ``(z1^-2 + z2^-2)^(-1/2) >= effective``.

    Raises a ValueError naming ``count_noise_multiplier`` when ``z2 <= effective``
    (the count alone would already spend the whole budget).
    """
    z2 = float(count_noise_multiplier)
    if math.isinf(z2):
        return effective
    if not z2 > effective:
        raise ValueError(
            f"count_noise_multiplier={z2:g} must exceed the effective noise multiplier "
            f"{effective:.4g} that the target epsilon needs: the noisy count alone would spend "
            "the whole budget. Increase count_noise_multiplier (the paper uses 10) or epsilon."
        )
    z1 = (effective**-2 - z2**-2) ** -0.5
    while joint_noise_multiplier(z1, z2) < effective:  # float rounding: never overspend
        z1 = math.nextafter(z1, math.inf)
    return z1


class NoisySGDClassifierBase(PrivateClassifierBase):
    """Cross-entropy classifier trained by a DP-SGD variant (shared fit).

    Subclasses implement ``_make_problem`` (the per-step processing, as an
    engine problem with a ``private_sum`` hook; a problem releasing a count
    records it in the ``recorder`` it is given), ``_count_noise_multiplier``
    (``inf`` when a step releases nothing but the gradient) and, when they use
    groups, ``_encode_groups``.
    """

    # No ``_parameter_constraints``: each estimator declares exactly its own
    # (:func:`skfairdp.base.parameter_constraints`).

    def _build_module(self, n_features: int, n_outputs: int) -> torch.nn.Module:
        kwargs = self._prefixed("module__")
        if self.module is None:
            kwargs.setdefault("activation", self.activation)
        return build_module(
            self.module,
            n_features=n_features,
            n_outputs=n_outputs,
            hidden_layer_sizes=tuple(self.hidden_layer_sizes),
            module_kwargs=kwargs,
        )

    # -- hooks ------------------------------------------------------------
    def _count_noise_multiplier(self) -> float:
        return math.inf

    def _encode_groups(self, sensitive_features, n: int) -> np.ndarray:
        return np.zeros(n, dtype=np.int64)

    def _make_problem(self, *, random, expected_batch_size, device, n_classes, private, recorder):
        """The engine problem of one fit (with a ``private_sum`` hook)."""
        raise NotImplementedError

    def _after_fit(self, problem) -> None:
        """Copy the problem's (private) telemetry to fitted attributes."""

    def _accounting(self) -> str:
        return getattr(self, "accounting", "joint")

    # -- fit --------------------------------------------------------------
    def _fit(self, X, y, sensitive_features=None):
        self._validate_params()
        X, y_enc = self._validate_X_y(X, y)
        n, n_classes = X.shape[0], len(self.classes_)
        groups = self._encode_groups(sensitive_features, n)
        self._check_extra_params(n_classes)
        private = not math.isinf(self.epsilon)
        delta = resolve_delta(self.delta, n) if private else 0.0
        device = self._device()
        random = RandomSource(self.random_state, secure_mode=self.secure_mode, device=device)

        sampling_rate = min(1.0, self.batch_size / n)
        sampler = (
            PoissonSampler(n, sampling_rate, random)
            if private
            else ShuffledBatches(n, self.batch_size, random)
        )
        planned_steps = self.max_epochs * sampler.steps_per_epoch
        count_z = self._count_noise_multiplier() if private else math.inf
        accounting = self._accounting()
        if private:
            z1 = self._calibrate(delta, sampling_rate, planned_steps, count_z, accounting)
        else:
            z1 = math.inf
        self.noise_multiplier_ = z1
        self.effective_noise_multiplier_ = joint_noise_multiplier(z1, count_z)

        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(random.torch_seed())
            self.module_ = self._build_module(X.shape[1], n_classes).to(
                device=device, dtype=torch.float32
            )
        optimizer = self._build_optimizer(self.module_)
        # what the fit releases, as it runs ("composed": the papers' view of a step)
        recorder = EventRecorder("separate" if accounting == "composed" else "joint")
        if not private:
            recorder.record(dp_accounting.NonPrivateDpEvent())
        problem = self._make_problem(
            random=random,
            expected_batch_size=sampler.expected_batch_size,
            device=device,
            n_classes=n_classes,
            private=private,
            recorder=recorder,
        )
        packed = np.stack([y_enc, groups], axis=1)
        tensors = (torch.as_tensor(packed).to(device),)
        noise = NoiseConfig(float(self.max_grad_norm), z1, None) if private else NoiseConfig()
        self.module_.train()
        result = train(
            self.module_,
            torch.from_numpy(np.ascontiguousarray(X)).to(device),
            tensors,
            problem,
            sampler=sampler,
            optimizer=optimizer,
            noise=noise,
            random=random,
            max_epochs=self.max_epochs,
            callbacks=list(getattr(self, "callbacks", None) or ()),
            net=self,
            verbose=self.verbose,
            record_diagnostics=self._record_diagnostics(),
            recorder=recorder,
        )
        self.module_.eval()
        self.n_steps_ = result.steps
        self.history_ = result.history
        self._after_fit(problem)
        # the recorded event; per-epoch epsilons from what was recorded by each epoch's end
        self.dp_event_ = recorder.build()
        *per_epoch, self.privacy_spent_ = epsilon_history(
            [*result.epoch_events, self.dp_event_], delta
        )
        for row, spent in zip(self.history_, per_epoch):
            row["epsilon"] = spent.epsilon
        if private and accounting == "composed" and not math.isinf(count_z):
            sound = epsilon_spent(recorder.build("joint"), delta)
            warnings.warn(
                f"accounting='composed' reproduces the paper's accounting, which composes the "
                f"gradient and the count as if their batches were independent; they share the "
                f"batch, and the sound (joint) epsilon of this fit is {sound.epsilon:.4g}, not "
                f"{self.privacy_spent_.epsilon:.4g}. Use accounting='joint' outside "
                "reproductions.",
                UserWarning,
                stacklevel=3,
            )
        return self

    def _check_extra_params(self, n_classes: int) -> None:
        """Cross-parameter checks of subclasses (after data validation)."""

    def _calibrate(self, delta, sampling_rate, steps, count_z, accounting) -> float:
        if accounting == "joint" or math.isinf(count_z):

            def event(z):
                return sampled_gaussian_steps_event(z, sampling_rate, steps)

            effective = calibration.calibrate_noise_multiplier(self.epsilon, delta, event)
            return split_noise_multiplier(effective, count_z)

        count_only = epsilon_spent(
            sampled_gaussian_steps_event(count_z, sampling_rate, steps), delta
        ).epsilon
        if count_only >= self.epsilon:
            raise ValueError(
                f"count_noise_multiplier={count_z:g}: the noisy counts alone spend epsilon="
                f"{count_only:.4g} >= the target epsilon={self.epsilon:g}; increase "
                "count_noise_multiplier or epsilon."
            )

        def composed(z):
            return step_events(z, count_z, sampling_rate, steps, "composed")

        return calibration.calibrate_noise_multiplier(self.epsilon, delta, composed)


POSITIVE = Interval(Real, 0, None, closed="neither")
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
