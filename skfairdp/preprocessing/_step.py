"""The private step shared by the transformers: budget, randomness and accounting.

A step makes at most one Gaussian release, calibrated to ``(epsilon, delta)``;
``epsilon=None`` is the public mode, which releases nothing about the rows.
"""

from __future__ import annotations

import math
import numbers

import dp_accounting
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions

from ..privacy import (
    EventRecorder,
    PrivacySpent,
    RandomSource,
    calibrate_noise_multiplier,
    epsilon_spent,
    gaussian_release_event,
    resolve_delta,
)

BUDGET_CONSTRAINTS = {
    "epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "delta": [Interval(numbers.Real, 0, 1, closed="neither"), StrOptions({"auto"})],
    "random_state": ["random_state"],
    "secure_mode": ["boolean"],
}


class PrivateStep(BaseEstimator):
    """Budget, randomness and accounting of a transformer's one release.

    Subclasses take the parameters of :data:`BUDGET_CONSTRAINTS`; their ``fit``
    calls :meth:`_start`, releases through :mod:`skfairdp.privacy.mechanisms`
    with the recorder it returns, then calls :meth:`_finish`.
    """

    # read X only: free under an estimator's privacy_unit="sensitive" (see spent)
    _reads_only_xy = True

    def _private(self) -> bool:
        return self.epsilon is not None

    def _noise_multiplier(self, delta: float) -> float:
        """The Gaussian multiplier of the one release, for ``(epsilon, delta)``."""
        return calibrate_noise_multiplier(
            float(self.epsilon), delta, gaussian_release_event, accountant="pld"
        )

    def planned_event(self, n_samples: int) -> dp_accounting.DpEvent:
        """The event ``fit`` on ``n_samples`` rows executes (independent of the data's values).

        Parameters
        ----------
        n_samples : int

        Returns
        -------
        dp_accounting.DpEvent
            ``NoOpDpEvent`` in public mode, else ``GaussianDpEvent(z)``.
        """
        if not self._private():
            return dp_accounting.NoOpDpEvent()
        return gaussian_release_event(self._noise_multiplier(resolve_delta(self.delta, n_samples)))

    def _start(self, n_samples: int) -> tuple[float, RandomSource, EventRecorder] | None:
        """Resolve the budget; ``(noise multiplier, random source, recorder)``, None if public."""
        if not self._private():
            self.dp_event_ = dp_accounting.NoOpDpEvent()
            self.privacy_spent_ = PrivacySpent(0.0, 0.0)
            self.noise_multiplier_ = math.inf
            return None
        self.delta_ = resolve_delta(self.delta, n_samples)
        self.noise_multiplier_ = self._noise_multiplier(self.delta_)
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        return self.noise_multiplier_, random, EventRecorder()

    def _finish(self, recorder: EventRecorder) -> None:
        self.dp_event_ = recorder.build()
        self.privacy_spent_ = epsilon_spent(
            self.dp_event_, self.delta_, **self._accountant_options()
        )

    def _accountant_options(self) -> dict:
        # a Gaussian release is priced exactly by PLD (RDP's conversion overstates it)
        return {"accountant": "pld", "privacy_unit": "record"}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = bool(self._private() and self.secure_mode)
        return tags
