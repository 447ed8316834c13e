"""The federation's one ``(epsilon, delta)``, from what each silo released.

Under inter-silo record-level DP (ISRL-DP) a record is protected by the releases of
the silo that holds it, and by nothing else: silo ``j``'s transcript is
``(epsilon_j, delta_j)``-DP with respect to its own rows (its accountant's value of
its own event), and the other silos' releases do not read them. So every record of
the federation is protected at least as well as the weakest silo's records. The
silos' ``delta_j`` may differ (``delta="auto"`` is ``0.1 / n_j``), so "weakest" is
read at one delta: each silo's event is priced by its accountant at the largest,
``delta* = max_j delta_j`` (at ``delta* >= delta_j`` its epsilon is at most
``epsilon_j``), and the weakest silo is the one whose epsilon there is largest (the
first of ties). Its event and ``(epsilon, delta*)`` are the estimator's ``dp_event_``
and ``privacy_spent_``: a guarantee every silo's records have, and the accountant's
value of ``dp_event_``.
When the deltas agree (a numeric ``delta``, or silos of one size) ``privacy_spent_``
is the largest of the silos' own values.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import dp_accounting
import numpy as np

from ..privacy.accountant import PrivacySpent, epsilon_spent
from .silo import Silo, SiloConfig

__all__ = ["check_silo_targets", "planned_dp_event", "weakest_silo"]


def weakest_silo(
    events: Sequence[dp_accounting.DpEvent],
    spent: Sequence[PrivacySpent],
    *,
    accountant: str,
    privacy_unit: str,
) -> tuple[int, PrivacySpent]:
    """The weakest silo and its guarantee at the largest of the silos' deltas.

    Parameters
    ----------
    events : sequence of DpEvent
        Each silo's event (what it released).
    spent : sequence of PrivacySpent
        Each silo's own accountant value of its event, at its own delta.
    accountant, privacy_unit : str
        The silos' accountant (the one that priced ``spent``).

    Returns
    -------
    index : int
        The silo whose epsilon at ``delta* = max_j delta_j`` is largest (first of ties).
    guarantee : PrivacySpent
        ``epsilon_spent(events[index], delta*)``.
    """
    delta = max(s.delta for s in spent)
    at_delta = [
        own
        if own.delta == delta  # the silo's own value is already at delta*
        else epsilon_spent(event, delta, accountant=accountant, privacy_unit=privacy_unit)
        for event, own in zip(events, spent, strict=True)
    ]
    index = max(range(len(at_delta)), key=lambda j: at_delta[j].epsilon)
    return index, at_delta[index]


def planned_dp_event(config: SiloConfig, sizes: Sequence[int]) -> dp_accounting.DpEvent:
    """The ``dp_event_`` of a whole run on silos of ``sizes`` rows: the weakest silo's.

    A silo's noise, Poisson rate and delta depend on its configuration and its row
    count only (``calibration="accountant"``), so a silo of ``n_j`` placeholder rows
    calibrates exactly as the real one does; its event is its budgeted event at that
    noise (a run that stops early records a prefix of it).
    """
    by_size = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # delta >= 1/n_j notes: the fit warns
        for n_j in sorted({int(n) for n in sizes}):
            placeholder = np.zeros(n_j, dtype=np.int64)
            silo = Silo(np.zeros((n_j, 1), np.float32), placeholder, placeholder, config, seed=0)
            event = silo.budgeted_event(silo.calibrate(None)["effective"])
            by_size[n_j] = (
                event,
                epsilon_spent(
                    event,
                    silo.delta,
                    accountant=config.accountant,
                    privacy_unit=config.privacy_unit,
                ),
            )
    events, spent = zip(*(by_size[int(n)] for n in sizes))
    index, _ = weakest_silo(
        events, spent, accountant=config.accountant, privacy_unit=config.privacy_unit
    )
    return events[index]


def check_silo_targets(labels, spent: Sequence[PrivacySpent], epsilon: float) -> None:
    """Refuse a run in which a silo spent more than ``epsilon`` (its calibrated target).

    Raises
    ------
    RuntimeError
        Naming every such silo (by its label) and its epsilon.
    """
    over = {
        label.item() if hasattr(label, "item") else label: own.epsilon
        for label, own in zip(labels, spent, strict=True)
        if own.epsilon > epsilon * (1 + 1e-6)
    }
    if over:
        raise RuntimeError(f"silos {over} spent more than epsilon={epsilon:g}")
