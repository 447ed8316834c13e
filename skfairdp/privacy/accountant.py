"""Accountant facade: event -> epsilon (calibration: :mod:`skfairdp.privacy.calibration`).

Two neighbouring relations are supported, named by ``privacy_unit``:

``"record"``
    add or remove one whole row ``(x, s, y)`` (dp-accounting's
    ``ADD_OR_REMOVE_ONE``).
``"sensitive"``
    replace one row's sensitive attribute, ``x`` and ``y`` public
    (``REPLACE_ONE``). dp-accounting's RDP accountant has no Poisson-sampled
    Gaussian under replace-one, so this unit is accounted with PLD, which models
    it exactly (contributions of norm at most the sensitivity on either side).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import dp_accounting
import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_repeat_and_select, compute_epsilon

from .choice import ChoiceDpEvent
from .joint import contains_joint_sampled_event, joint_epsilon

PRIVACY_UNITS = ("record", "sensitive")
ACCOUNTANTS = ("auto", "rdp", "pld")
# Pessimistic discretisation: reported epsilons are upper bounds.
PLD_DISCRETIZATION = 1e-3


@contextlib.contextmanager
def quiet_accounting() -> Iterator[None]:
    """Silence dp-accounting's absl *warnings* (not errors) for the block.

    Its RDP accountant logs "failed to converge ... Excluding this order" for
    some (q, sigma, order) and then drops that order, which is sound (epsilon
    stays an upper bound) but floods stderr on every fit. Errors still show.
    """
    logger = logging.getLogger("absl")
    before = logger.level
    if before < logging.ERROR:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(before)


class PrivacySpent(NamedTuple):
    """The ``(epsilon, delta)`` guarantee of an executed event."""

    epsilon: float
    delta: float


def neighboring_relation(privacy_unit: str) -> dp_accounting.NeighboringRelation:
    """dp-accounting's neighbouring relation for a ``privacy_unit``."""
    if privacy_unit == "record":
        return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    if privacy_unit == "sensitive":
        return dp_accounting.NeighboringRelation.REPLACE_ONE
    raise ValueError(f"privacy_unit must be one of {PRIVACY_UNITS}, got {privacy_unit!r}")


def resolve_accountant(accountant: str, privacy_unit: str) -> str:
    """Resolve ``"auto"`` (RDP for ``record``, PLD for ``sensitive``) and check support."""
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    if accountant == "auto":
        return "rdp" if privacy_unit == "record" else "pld"
    if accountant == "rdp" and privacy_unit == "sensitive":
        raise ValueError(
            "accountant='rdp' cannot account privacy_unit='sensitive': dp-accounting's RDP "
            "accountant has no Poisson-sampled Gaussian under replace-one. Use "
            "accountant='pld' or 'auto'."
        )
    return accountant


def make_accountant(
    accountant: str = "auto", privacy_unit: str = "record"
) -> dp_accounting.PrivacyAccountant:
    """A fresh dp-accounting accountant for the unit's neighbouring relation."""
    relation = neighboring_relation(privacy_unit)
    kind = resolve_accountant(accountant, privacy_unit)
    if kind == "rdp":
        return RdpAccountant(neighboring_relation=relation)
    return PLDAccountant(relation, value_discretization_interval=PLD_DISCRETIZATION)


def epsilon_spent(
    event: dp_accounting.DpEvent,
    delta: float,
    *,
    accountant: str = "auto",
    privacy_unit: str = "record",
) -> PrivacySpent:
    """The epsilon at ``delta`` of an executed event.

    A :class:`~dp_accounting.NonPrivateDpEvent` anywhere gives ``(inf, 0.0)``;
    an event that released nothing private gives ``(0.0, 0.0)``.
    """
    with quiet_accounting():
        return _epsilon_spent(event, delta, accountant=accountant, privacy_unit=privacy_unit)


def epsilon_history(
    events: Sequence[dp_accounting.DpEvent],
    delta: float,
    *,
    accountant: str = "auto",
    privacy_unit: str = "record",
) -> list[PrivacySpent]:
    """:func:`epsilon_spent` of each event; an event equal to the one before is not recomputed.

    For a fit's per-epoch recorded events followed by its final event (usually
    equal to the last epoch's).
    """
    result: list[PrivacySpent] = []
    for i, event in enumerate(events):
        if i and events[i - 1] == event:
            result.append(result[-1])
        else:
            result.append(
                epsilon_spent(event, delta, accountant=accountant, privacy_unit=privacy_unit)
            )
    return result


def _epsilon_spent(event, delta, *, accountant, privacy_unit) -> PrivacySpent:
    if _contains(event, dp_accounting.NonPrivateDpEvent):
        return PrivacySpent(math.inf, 0.0)
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return PrivacySpent(0.0, 0.0)
    if contains_joint_sampled_event(event):
        # Several releases on one Poisson batch (e.g. RaCO's Laplace histogram):
        # dp-accounting has no such event; see skfairdp.privacy.joint.
        if privacy_unit != "record" or accountant == "rdp":
            raise ValueError(
                "an event with a Poisson-sampled composition (several releases on one batch) "
                "is accounted by joint PLD under privacy_unit='record' only; got "
                f"accountant={accountant!r}, privacy_unit={privacy_unit!r}"
            )
        return PrivacySpent(joint_epsilon(event, delta), float(delta))
    if _RDP_ORDERS and resolve_accountant(accountant, privacy_unit) == "rdp":
        rdp = _rdp_of(event)
        if rdp is not None:
            return PrivacySpent(float(compute_epsilon(_RDP_ORDERS, rdp, delta)[0]), float(delta))
    acc = make_accountant(accountant, privacy_unit)
    acc.compose(event)
    return PrivacySpent(float(acc.get_epsilon(delta)), float(delta))


# RDP composes additively, so the curve of a mechanism is computed once and scaled by
# its count: a fit asks for the same sampled Gaussian at many step counts (per-epoch
# history) and many multipliers (calibration). Same numbers as RdpAccountant.compose.
# (It reads RdpAccountant's private _orders/_rdp; without them it falls back to compose.)
_RDP_ORDERS = tuple(getattr(RdpAccountant(), "_orders", ()))
_RDP_LEAVES = (
    dp_accounting.GaussianDpEvent,
    dp_accounting.PoissonSampledDpEvent,
    dp_accounting.LaplaceDpEvent,
)


def _rdp_of(event: dp_accounting.DpEvent) -> np.ndarray | None:
    """RDP curve (add/remove) of ``event`` over ``_RDP_ORDERS``; None if not handled here."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return np.zeros(len(_RDP_ORDERS))
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = _rdp_of(event.event)
        return None if inner is None else event.count * inner
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [_rdp_of(e) for e in event.events]
        if any(part is None for part in parts):
            return None
        return np.sum(parts, axis=0) if parts else np.zeros(len(_RDP_ORDERS))
    if isinstance(event, ChoiceDpEvent):
        parts = [_rdp_of(e) for e in event.events]
        if not parts or any(part is None for part in parts):
            return None
        return np.max(parts, axis=0)  # a data-independent choice: the worst candidate's curve
    if isinstance(event, dp_event.RepeatAndSelectDpEvent):
        inner = _rdp_of(event.event)
        if inner is None:
            return None
        return _compute_rdp_repeat_and_select(np.array(_RDP_ORDERS), inner, event.mean, event.shape)
    if isinstance(event, _RDP_LEAVES):
        rdp = _leaf_rdp(event)
        return None if rdp is None else np.array(rdp)
    return None


@functools.lru_cache(maxsize=4096)
def _leaf_rdp(event: dp_accounting.DpEvent) -> tuple[float, ...] | None:
    acc = RdpAccountant(orders=list(_RDP_ORDERS))
    acc.compose(event)
    rdp = getattr(acc, "_rdp", None)
    return None if rdp is None else tuple(rdp)


def _contains(event: dp_accounting.DpEvent, kind: type) -> bool:
    if isinstance(event, kind):
        return True
    if isinstance(event, (dp_accounting.ComposedDpEvent, ChoiceDpEvent)):
        return any(_contains(e, kind) for e in event.events)
    inner = getattr(event, "event", None)
    return inner is not None and _contains(inner, kind)
