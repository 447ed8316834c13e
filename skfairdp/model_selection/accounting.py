"""The search's accounting helpers: RDP dominance, the cover of several fit events, the price.

A run's fit event is planned before the search; candidates whose hyperparameters
give different fit events are covered by the one whose RDP curve is at least every
other's, or by their composition when none is (conservative). The search's event,
``RepeatAndSelectDpEvent``, is priced by dp-accounting's RDP accountant, the only
one that prices it, under ``privacy_unit="record"``.
"""

from __future__ import annotations

import dp_accounting
import numpy as np

from ..privacy import PrivacySpent, epsilon_spent
from ..privacy.accountant import _rdp_of, quiet_accounting
from ..privacy.choice import ChoiceDpEvent
from ..privacy.events import compose

__all__ = [
    "ACCOUNTANT_OPTIONS",
    "choice_cover",
    "cover",
    "dominates",
    "rdp_spent",
    "require_record_unit",
]

ACCOUNTANT_OPTIONS = {"accountant": "rdp", "privacy_unit": "record"}


def require_record_unit(estimator) -> None:
    """Refuse a step whose ``privacy_unit`` is not ``"record"``: the search prices whole rows.

    Under ``privacy_unit="sensitive"`` a fit treats ``X`` and ``y`` as public (exact
    gradients of the loss; no noise at all without a fairness term), so a search
    over it would report a row-level guarantee that does not hold.
    """
    for name, value in estimator.get_params(deep=True).items():
        if name.rsplit("__", 1)[-1] == "privacy_unit" and value != "record":
            raise ValueError(
                f"{name}={value!r}: the search's guarantee protects whole rows and is priced "
                "under privacy_unit='record'; a step that protects only the sensitive "
                "attribute trains on exact X and y. Set privacy_unit='record' (and do not "
                "search over privacy_unit)"
            )


def dominates(a: dp_accounting.DpEvent, b: dp_accounting.DpEvent) -> bool:
    """Whether ``a``'s RDP curve is at least ``b``'s at every order (add/remove one)."""
    if a == b:
        return True
    with quiet_accounting():
        ra, rb = _rdp_of(a), _rdp_of(b)
    if ra is None or rb is None:
        return False
    finite = np.isfinite(rb)
    ok = np.where(
        finite,
        ra >= np.where(finite, rb - 1e-12 * np.maximum(1.0, np.abs(rb)), 0.0),
        np.isposinf(ra),
    )
    return bool(np.all(ok))


def cover(events: list[dp_accounting.DpEvent]) -> tuple[dp_accounting.DpEvent, bool]:
    """One event whose RDP curve is at least every event's; ``(event, exact)``."""
    distinct = []
    for event in events:
        if event not in distinct:
            distinct.append(event)
    for candidate in distinct:
        if all(dominates(candidate, other) for other in distinct):
            return candidate, True
    return compose(distinct), False


def choice_cover(events: list[dp_accounting.DpEvent]) -> tuple[dp_accounting.DpEvent, bool]:
    """Like :func:`cover`, but a run that draws its candidate independently of the data is
    covered by a :class:`~skfairdp.privacy.choice.ChoiceDpEvent` (the pointwise maximum of
    the RDP curves) when no candidate dominates, not by their composition."""
    event, exact = cover(events)
    if exact:
        return event, True
    distinct = []
    for event in events:
        if event not in distinct:
            distinct.append(event)
    return ChoiceDpEvent(distinct), True


def rdp_spent(event: dp_accounting.DpEvent, delta: float) -> PrivacySpent:
    """``(epsilon, delta)`` of ``event`` by the RDP accountant (``ValueError`` if it cannot)."""
    try:
        return epsilon_spent(event, delta, **ACCOUNTANT_OPTIONS)
    except (dp_accounting.UnsupportedEventError, ValueError) as exc:
        raise ValueError(
            f"PrivateSearchCV is accounted by dp-accounting's RDP accountant (repeat and "
            f"select); the estimator's event is not supported by it: {exc}"
        ) from exc
