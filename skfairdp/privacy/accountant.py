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
from dp_accounting.pld import PLDAccountant, privacy_loss_mechanism
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_repeat_and_select, compute_epsilon

from .choice import ChoiceDpEvent
from .joint import contains_joint_sampled_event, joint_epsilon

PRIVACY_UNITS = ("record", "sensitive")
ACCOUNTANTS = ("auto", "rdp", "pld")
# Pessimistic discretisation: reported epsilons are upper bounds at any grid. The grid
# of an event is chosen from the event (:func:`pld_discretization`), at most this coarse.
PLD_DISCRETIZATION = 1e-3
#: The grid is this fraction of the smallest std of one piece's privacy loss among the
#: event's mechanisms (doc/privacy.md, "PLD discretisation").
PLD_GRID_FRACTION = 0.2
#: The finest grid chosen (a floor for events whose every loss is negligible).
PLD_MIN_DISCRETIZATION = 1e-7
#: A piece's PLD has at most about this many grid points (dp-accounting builds it point by
#: point in Python): pieces of wide loss range, whose epsilon is large, get a coarser grid.
PLD_MAX_POINTS = 20_000


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
    accountant: str = "auto",
    privacy_unit: str = "record",
    event: dp_accounting.DpEvent | None = None,
) -> dp_accounting.PrivacyAccountant:
    """A fresh dp-accounting accountant for the unit's neighbouring relation.

    Parameters
    ----------
    accountant : {"auto", "rdp", "pld"}, default="auto"
    privacy_unit : {"record", "sensitive"}, default="record"
    event : DpEvent, optional
        The event the accountant will compose: a PLD accountant then gets the grid
        :func:`pld_discretization` chooses for it (else :data:`PLD_DISCRETIZATION`).

    Returns
    -------
    dp_accounting.PrivacyAccountant
    """
    relation = neighboring_relation(privacy_unit)
    kind = resolve_accountant(accountant, privacy_unit)
    if kind == "rdp":
        return RdpAccountant(neighboring_relation=relation)
    interval = PLD_DISCRETIZATION if event is None else pld_discretization(event, privacy_unit)
    return PLDAccountant(relation, value_discretization_interval=interval)


def pld_discretization(event: dp_accounting.DpEvent, privacy_unit: str = "record") -> float:
    """The PLD grid (``value_discretization_interval``) for ``event``.

    dp-accounting's pessimistic connect-the-dots PLD is an upper bound at any grid,
    but each composed piece (one step of a sampled mechanism, one release) adds
    about a grid interval squared to the variance of the composed privacy loss,
    so a fixed grid of 1e-3 is loose for many steps of small loss: at sigma 3,
    q 0.001 and 50,000 steps it certifies epsilon 0.40 at delta 1e-5 where the
    exact value is 0.256 (RDP: 0.283). The grid chosen here is
    :data:`PLD_GRID_FRACTION` of the smallest std of one piece's privacy loss
    among the event's mechanisms, so each mechanism's composed loss gets extra
    variance of only a small share of its own (about ``PLD_GRID_FRACTION**2 /
    12``); at least ``1 / PLD_MAX_POINTS`` of the widest piece's loss range (its
    PLD is built point by point; a wide range means a large epsilon, where the
    grid matters little); and within ``[PLD_MIN_DISCRETIZATION,
    PLD_DISCRETIZATION]``, so never coarser than the former fixed grid. Events
    with a mechanism this does not model (e.g. randomized response) keep
    :data:`PLD_DISCRETIZATION`.

    Parameters
    ----------
    event : DpEvent
    privacy_unit : {"record", "sensitive"}, default="record"

    Returns
    -------
    float
    """
    replace = neighboring_relation(privacy_unit) == dp_accounting.NeighboringRelation.REPLACE_ONE
    pieces = _loss_pieces(event, 1, replace)
    if not pieces:  # None (not modelled) or nothing private
        return PLD_DISCRETIZATION
    smallest = min(std for std, _ in pieces)
    widest = max(width for _, width in pieces)
    interval = max(PLD_GRID_FRACTION * smallest, widest / PLD_MAX_POINTS)
    return float(min(PLD_DISCRETIZATION, max(PLD_MIN_DISCRETIZATION, interval)))


def _loss_pieces(
    event: dp_accounting.DpEvent, count: int, replace: bool
) -> list[tuple[float, float]] | None:
    """``(std of one piece's privacy loss, its loss range)`` of each mechanism of ``event``.

    None: a mechanism not modelled here. The pieces follow dp-accounting's
    PLDAccountant: ``count`` Gaussian releases are one Gaussian of std
    ``noise / sqrt(count)``; every other mechanism is self-composed.
    """
    if isinstance(event, dp_accounting.NoOpDpEvent | dp_accounting.NonPrivateDpEvent):
        return []
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _loss_pieces(event.event, event.count * count, replace)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        pieces: list[tuple[float, float]] = []
        for part in event.events:
            inner = _loss_pieces(part, count, replace)
            if inner is None:
                return None
            pieces += inner
        return pieces
    q, leaf = 1.0, event
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        q, leaf = float(event.sampling_probability), event.event
        if q == 0:
            return []
    kind = {dp_accounting.GaussianDpEvent: "gaussian", dp_accounting.LaplaceDpEvent: "laplace"}
    if type(leaf) not in kind or (replace and kind[type(leaf)] == "laplace"):
        return None  # (dp-accounting's PLD has no Laplace under replace-one: it says so)
    scale = float(leaf.noise_multiplier)
    if scale == 0 or count == 0:
        return []
    if isinstance(leaf, dp_accounting.GaussianDpEvent) and q == 1.0:
        scale /= math.sqrt(count)  # the PLD accountant's one Gaussian of std noise / sqrt(count)
    variance, width = _piece(kind[type(leaf)], scale, q, replace)
    return [(math.sqrt(variance), width)]


@functools.lru_cache(maxsize=4096)
def _piece(kind: str, scale: float, q: float, replace: bool) -> tuple[float, float]:
    """``(variance of the loss, range of the losses dp-accounting discretises)`` of a piece."""
    relation = {False: ("REMOVE", "ADD"), True: ("REPLACE",)}[replace]
    width = 0.0
    for name in relation:
        adjacency = getattr(privacy_loss_mechanism.AdjacencyType, name)
        if kind == "gaussian":
            loss = privacy_loss_mechanism.GaussianPrivacyLoss(
                scale, sampling_prob=q, adjacency_type=adjacency
            )
        else:
            loss = privacy_loss_mechanism.LaplacePrivacyLoss(
                scale, sampling_prob=q, adjacency_type=adjacency
            )
        bounds = loss.connect_dots_bounds()
        width = max(width, float(bounds.epsilon_upper - bounds.epsilon_lower))
    return _loss_variance(kind, scale, q, replace), width


def _loss_variance(kind: str, scale: float, q: float, replace: bool) -> float:
    """Variance of one piece's privacy loss (sensitivity 1, sampling rate ``q``).

    dp-accounting's additive-noise privacy losses (``privacy_loss_mechanism``):
    remove ``log(1 - q + q mu(x + 1) / mu(x))`` with ``x`` from
    ``q mu(x + 1) + (1 - q) mu(x)``; add ``-remove(-x)`` with ``x ~ mu``; replace
    their sum with ``x`` as for remove. Add/remove takes the larger variance of the
    two. A numerical integral on a grid (a heuristic for the grid, not a bound).
    """
    half = 1.0 + (14.0 * scale if kind == "gaussian" else 40.0 * scale)
    # a uniform grid, and a fine one where the Laplace loss bends (between -1 and 0)
    x = np.unique(np.concatenate([np.linspace(-half, half, 8001), np.linspace(-2.0, 1.0, 3001)]))
    if kind == "gaussian":
        log_mu = lambda t: -0.5 * (t / scale) ** 2  # noqa: E731
    else:
        log_mu = lambda t: -np.abs(t) / scale  # noqa: E731

    def remove(t: np.ndarray) -> np.ndarray:
        shift = log_mu(t + 1.0) - log_mu(t)
        if q == 1.0:
            return shift
        return np.logaddexp(math.log1p(-q), math.log(q) + shift)

    def moments(loss: np.ndarray, density: np.ndarray) -> float:
        weights = density * np.gradient(x)  # trapezoid-like weights on the uneven grid
        weights = weights / weights.sum()
        mean = float(np.sum(weights * loss))
        return float(np.sum(weights * (loss - mean) ** 2))

    mu, mu_left = np.exp(log_mu(x)), np.exp(log_mu(x + 1.0))
    upper = q * mu_left + (1.0 - q) * mu
    if replace:
        return moments(remove(x) - remove(-x), upper)
    return max(moments(remove(x), upper), moments(-remove(-x), mu))


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
    acc = make_accountant(accountant, privacy_unit, event)
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
