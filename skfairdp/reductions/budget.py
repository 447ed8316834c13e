"""The privacy budget of a reduction: what it releases, how the noise is split, what it costs.

A private reduction (:class:`~skfairdp.reductions.CGOOReduction`) releases, on
the same data:

1. the (group, label) cell counts once, Gaussian noise (sensitivity 1: adding or
   removing a row moves one count by 1);
2. ``T`` oracle fits (each a private weighted-ERM estimator; its event is the one
   it records, :attr:`dp_event_`);
3. ``T`` vectors of per-cell counts of an oracle's positive predictions, Gaussian
   noise (sensitivity 1, one row is in one cell).

(With ``sample_weight`` every sensitivity is scaled by the weight bound, see
:mod:`~skfairdp.reductions.releases`; the multipliers here are unchanged.)

Everything else (the Frank–Wolfe gradients, the relabelling, the mixture
weights, the fully-corrective step, predictions) is computed from these
releases and public values: post-processing.

Sound calibration (``accountant="rdp"`` or ``"pld"``): the two Gaussian releases
take shares of the budget stated in zCDP terms (``rho = 1 / (2 z^2)`` for a
Gaussian of multiplier ``z``): with ``z*`` the multiplier of one Gaussian that
spends the whole target, the cell counts get ``z* / sqrt(share_cells)`` and each
statistics release ``z* sqrt(T / share_statistics)``. The oracle's noise
multiplier is then the smallest for which the whole planned event (cell counts,
then ``T`` times an oracle fit and a statistics release) meets ``(epsilon,
delta)`` under the accountant: the oracles receive everything the two fixed
releases leave, which is at least their nominal share.

The paper's calibration (``accountant="advanced"``, Lemma 5.8 of Alabi's
paper): every one of the ``k`` mechanisms gets ``epsilon' = epsilon / (2 sqrt(2
k log(2 / delta')))`` and ``delta' = delta / (2k)`` under advanced composition.
It is sound but loose (the realised epsilon is well under half the target).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import dp_accounting

from ..privacy import calibrate_noise_multiplier, epsilon_spent
from ..privacy.analytic import gaussian_noise_multiplier
from ..privacy.events import compose, gaussian_release_event

__all__ = [
    "ReductionNoise",
    "advanced_composition_epsilon",
    "calibrate_reduction",
    "paper_per_call_budget",
    "reduction_event",
]

#: Accountants of a reduction: the two sound ones and the paper's split.
REDUCTION_ACCOUNTANTS = ("rdp", "pld", "advanced")


@dataclass(frozen=True)
class ReductionNoise:
    """The noise of one private reduction (``inf``/None where nothing is released).

    Attributes
    ----------
    cells : float
        Gaussian multiplier of the (group, label) cell counts (sensitivity 1).
    statistics : float
        Gaussian multiplier of each atom's per-cell positive counts (sensitivity 1).
    oracle_noise_multiplier : float or None
        The gradient noise multiplier every oracle fit runs with (sound
        calibration), or None when each oracle calibrates itself to
        ``oracle_budget``.
    oracle_budget : tuple of float or None
        ``(epsilon, delta)`` of one oracle fit (the paper's split), else None.
    """

    cells: float = math.inf
    statistics: float = math.inf
    oracle_noise_multiplier: float | None = None
    oracle_budget: tuple[float, float] | None = None


def reduction_event(
    cells: float,
    statistics: float,
    oracle_events: list[dp_accounting.DpEvent],
) -> dp_accounting.DpEvent:
    """The event of a reduction: cell counts, then each oracle fit with its statistics release.

    Parameters
    ----------
    cells, statistics : float
        Gaussian multipliers of the cell counts and of each statistics release.
    oracle_events : list of DpEvent
        One event per oracle fit, in order (planned or executed).
    """
    events = [gaussian_release_event(cells)]
    for oracle in oracle_events:
        events += [oracle, gaussian_release_event(statistics)]
    return compose(events)


def paper_per_call_budget(epsilon: float, delta: float, n_mechanisms: int) -> tuple[float, float]:
    """``(epsilon', delta')`` of each mechanism under the paper's advanced-composition split.

    ``delta' = delta / (2k)``, ``epsilon' = epsilon / (2 sqrt(2k log(2 / delta')))``
    (Alabi, Algorithm 2 / Lemma 5.8, with ``k`` mechanisms). Golden values (digest
    §3.6): ``(1, 1e-5, 10) -> 0.0287``, ``(1, 1e-5, 20) -> 0.0198``.
    """
    k = int(n_mechanisms)
    delta_call = delta / (2 * k)
    return epsilon / (2.0 * math.sqrt(2.0 * k * math.log(2.0 / delta_call))), delta_call


def advanced_composition_epsilon(epsilon_call: float, n_mechanisms: int, delta_slack: float):
    """Dwork–Rothblum–Vadhan: ``k`` adaptive ``(e0, d0)`` mechanisms are
    ``(e0 sqrt(2k log(1/d)) + k e0 (e^e0 - 1), k d0 + d)``-DP; returns that epsilon."""
    k, e0 = int(n_mechanisms), float(epsilon_call)
    return e0 * math.sqrt(2.0 * k * math.log(1.0 / delta_slack)) + k * e0 * math.expm1(e0)


def calibrate_reduction(
    epsilon: float,
    delta: float,
    n_iterations: int,
    budget_split: tuple[float, float, float],
    oracle_event: Callable[[float], dp_accounting.DpEvent] | None,
    *,
    accountant: str = "rdp",
) -> ReductionNoise:
    """The noise of a reduction with ``n_iterations`` oracle calls meeting ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon, delta : float
        The whole reduction's target.
    n_iterations : int
        ``T``, the number of oracle fits (each followed by a statistics release).
    budget_split : tuple of 3 floats
        Shares (summing to 1) of the cell counts, the statistics releases and the
        oracle fits (see the module docstring).
    oracle_event : callable or None
        Maps a gradient noise multiplier to the event one oracle fit would
        execute (``None`` with ``accountant="advanced"``: each oracle calibrates
        itself to its per-call budget).
    accountant : {"rdp", "pld", "advanced"}

    Returns
    -------
    ReductionNoise
    """
    T = int(n_iterations)
    if accountant == "advanced":
        eps_call, delta_call = paper_per_call_budget(epsilon, delta, 2 * T + 1)
        z = gaussian_noise_multiplier(eps_call, delta_call)
        return ReductionNoise(cells=z, statistics=z, oracle_budget=(eps_call, delta_call))
    share_cells, share_statistics, _ = budget_split
    whole = calibrate_noise_multiplier(
        epsilon, delta, gaussian_release_event, accountant=accountant
    )
    cells = whole / math.sqrt(share_cells)
    statistics = whole * math.sqrt(T / share_statistics)
    if oracle_event is None:
        raise ValueError("a sound calibration needs the oracle's planned event")

    def planned(z: float) -> dp_accounting.DpEvent:
        return reduction_event(cells, statistics, [oracle_event(z)] * T)

    no_oracle = [dp_accounting.NoOpDpEvent()] * T
    fixed = epsilon_spent(
        reduction_event(cells, statistics, no_oracle), delta, accountant=accountant
    )
    if fixed.epsilon >= epsilon:  # cannot happen with shares < 1; guards a bad split
        raise ValueError(
            f"budget_split={budget_split}: the count releases alone spend epsilon="
            f"{fixed.epsilon:.4g} >= {epsilon:g}"
        )
    oracle = calibrate_noise_multiplier(epsilon, delta, planned, accountant=accountant)
    return ReductionNoise(cells=cells, statistics=statistics, oracle_noise_multiplier=oracle)
