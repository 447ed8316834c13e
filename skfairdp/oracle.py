"""The oracle contract: what a meta-estimator may assume of an estimator it fits many times.

A meta-estimator (fairlearn's ``ExponentiatedGradient``,
:class:`~skfairdp.CGOOReduction`) calls a weighted-ERM *oracle* ``T`` times within
one fit, each time with other sample weights (and relabelled targets). Every skfairdp estimator
meets :class:`PrivateOracle`; any scikit-learn classifier meets its call shape at
``epsilon = inf``. The contract:

1. **Call shape** (fairlearn's): ``oracle.fit(X, y, sample_weight=w, **fit_params)``.
   Weights are public and, for a private oracle, in ``[0, max_sample_weight]``;
   they multiply each row's contributions after clipping (doc/privacy.md).
2. **Budget.** Each fit honours ``epsilon``/``delta``: the noise is calibrated to
   them, or, with a fixed ``noise_multiplier``, the fit runs as many steps as the
   budget allows (at most ``max_epochs`` epochs).
3. **Event.** After ``fit``, ``dp_event_`` is the :class:`dp_accounting.DpEvent`
   of the releases the fit *executed* (recorded by the mechanisms as they ran).
   The meta-estimator's own cost is the composition of its oracles' events
   (:func:`composed_event`; a meta-estimator with releases of its own records each
   fit's :func:`executed_event` in its :class:`~skfairdp.privacy.EventRecorder`
   between them), priced by one accountant; nothing else is released about the
   data unless the meta-estimator releases it (and records it).
4. **Plan.** Before any fit, ``planned_event(n_samples, noise_multiplier=z)`` is
   the event a fit on ``n_samples`` rows executes with gradient multiplier ``z``
   (from the parameters alone), so a meta-estimator can calibrate ``z`` for all
   its fits at once; a fit run with ``noise_multiplier=z`` and a budget that
   allows every step then records exactly that event.
5. **Randomness.** Each fit draws its batches, noise and initialisation from the
   stream it is given. ``sklearn.base.clone`` keeps ``random_state``, so ``T``
   clones would repeat the same noise ``T`` times; :func:`spawn_oracle` hands each
   fit an independent child of the meta-estimator's
   :class:`~skfairdp.privacy.RandomSource` (``RandomSource.spawn()``), so one
   ``random_state`` reproduces the whole meta-fit while its oracle fits stay
   independent (``secure_mode`` children draw from the OS CSPRNG).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import dp_accounting
from sklearn.base import clone

from .privacy import RandomSource

__all__ = ["PrivateOracle", "composed_event", "executed_event", "spawn_oracle"]


@runtime_checkable
class PrivateOracle(Protocol):
    """A private estimator a meta-estimator can fit repeatedly (see the module docstring).

    Attributes
    ----------
    epsilon, delta : float
        The budget of one fit (``delta`` may be ``"auto"``).
    noise_multiplier : float or None
        A fixed gradient noise multiplier (steps capped to the budget), or None
        (noise calibrated to the budget).
    max_sample_weight : float
        Public bound on ``sample_weight``.
    random_state, secure_mode
        The fit's random stream (set by :func:`spawn_oracle`).
    dp_event_ : dp_accounting.DpEvent
        After ``fit``: the event of the releases the fit executed.
    """

    epsilon: float
    delta: Any
    noise_multiplier: float | None
    max_sample_weight: float
    random_state: Any
    secure_mode: bool

    def fit(self, X, y, *, sample_weight=None, **fit_params) -> PrivateOracle:
        """Fit on weighted rows; ``fit_params`` e.g. ``sensitive_features``."""
        ...

    def planned_event(
        self, n_samples: int, *, noise_multiplier: float | None = None
    ) -> dp_accounting.DpEvent:
        """The event of a fit on ``n_samples`` rows (with gradient multiplier ``z``)."""
        ...

    def get_params(self, deep: bool = True) -> dict:
        """The estimator's parameters (scikit-learn)."""
        ...

    def set_params(self, **params) -> PrivateOracle:
        """Set parameters (scikit-learn); returns the estimator."""
        ...


def spawn_oracle(estimator, random: RandomSource):
    """An unfitted copy of ``estimator`` drawing from a new independent child of ``random``.

    Parameters
    ----------
    estimator : estimator
        The oracle template (left untouched). A skfairdp estimator, or any
        scikit-learn estimator; parameters it lacks (``secure_mode``,
        ``random_state``) are not set.
    random : RandomSource
        The meta-estimator's source; each call takes its next child
        (:meth:`~skfairdp.privacy.RandomSource.spawn`).

    Returns
    -------
    estimator
        ``clone(estimator)`` seeded from the child (``secure_mode=True`` when the
        source is secure).
    """
    oracle = clone(estimator)
    params = random.spawn().estimator_params()
    accepted = oracle.get_params(deep=False)
    if "secure_mode" not in accepted and params.pop("secure_mode"):
        params["random_state"] = None  # a non-private estimator: fresh OS entropy
    return oracle.set_params(**{k: v for k, v in params.items() if k in accepted})


def executed_event(estimator) -> dp_accounting.DpEvent:
    """A fitted oracle's ``dp_event_``; ``NonPrivateDpEvent`` for one without it.

    An estimator that does not state its event (any scikit-learn classifier) made
    no private release: it is non-private (``epsilon = inf``).
    """
    event = getattr(estimator, "dp_event_", None)
    return event if event is not None else dp_accounting.NonPrivateDpEvent()


def composed_event(estimators: Iterable) -> dp_accounting.DpEvent:
    """The event of several oracle fits on the same data: their executed events, composed.

    Parameters
    ----------
    estimators : iterable of fitted estimators

    Returns
    -------
    DpEvent
        ``ComposedDpEvent`` of the :func:`executed_event` of each fit, in order
        (price it with :func:`skfairdp.privacy.epsilon_spent`, passing the fits'
        ``privacy_unit``).
    """
    return dp_accounting.ComposedDpEvent([executed_event(est) for est in estimators])
