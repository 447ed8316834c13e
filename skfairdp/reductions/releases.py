"""What a reduction releases about its rows, recorded as it runs, and what that costs.

Every noisy statistic goes through :mod:`skfairdp.privacy.mechanisms` with the fit's
:class:`~skfairdp.privacy.EventRecorder`, which also records each oracle fit's
executed ``dp_event_``; the fit's ``dp_event_`` is the recorder's ``build()`` and
``privacy_spent_`` the accountant's price of it.

Sensitivities, with public row weights ``w_i in [0, W]`` (``W = max_sample_weight``
when ``sample_weight`` is given, else 1): adding or removing one row moves

- the cell counts ``sum_{i in z} w_i`` in one cell by at most ``W`` (L1 and L2);
- an atom's positive counts ``sum_{i in z} w_i 1[c(x_i) = 1]`` in one cell by at
  most ``W``;
- an atom's group-loss sums ``sum_{i in g} w_i min(r_i^2, loss_bound)`` in one
  group by at most ``W * loss_bound``.

The noise of each release is its multiplier times that sensitivity, so the
multipliers, and the recorded events, do not depend on the weights.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import torch

from ..privacy import EventRecorder, RandomSource, epsilon_spent, noisy_histogram
from ..privacy.accountant import PrivacySpent
from .atoms import WeightedCells

__all__ = ["pure_epsilon_spent", "reduction_spent", "release_cells", "release_sums"]


def release_cells(
    statistics: WeightedCells,
    random: RandomSource,
    recorder: EventRecorder,
    floor: float,
    **noise,
) -> tuple[np.ndarray, float]:
    """The released cell frequencies ``q`` and row total ``N`` (counts floored at ``floor``).

    Parameters
    ----------
    statistics : WeightedCells
    random : RandomSource
    recorder : EventRecorder
    floor : float
        Smallest count kept (the frequencies are divided by).
    **noise
        ``noise_multiplier=`` (Gaussian) or ``laplace_scale=`` (Laplace) of
        :func:`~skfairdp.privacy.noisy_histogram`, with sensitivity ``max_weight``;
        none: the exact counts (a non-private fit).
    """
    counts = statistics.counts()
    if noise:
        noisy, _ = noisy_histogram(
            torch.as_tensor(counts),
            random,
            sensitivity=statistics.max_weight,
            recorder=recorder,
            **noise,
        )
        counts = noisy.numpy()
    counts = np.maximum(counts, floor)
    total = float(counts.sum())
    return counts / total, total


def release_sums(
    exact: np.ndarray,
    statistics: WeightedCells,
    noise_multiplier: float,
    random: RandomSource,
    recorder: EventRecorder,
) -> np.ndarray:
    """One atom's per-cell sums plus Gaussian noise of std ``noise_multiplier * sensitivity``."""
    noisy, _ = noisy_histogram(
        torch.as_tensor(exact),
        random,
        noise_multiplier=noise_multiplier,
        sensitivity=statistics.sensitivity,
        recorder=recorder,
    )
    return noisy.numpy()


def reduction_spent(event: dp_accounting.DpEvent, delta: float, accountant: str) -> PrivacySpent:
    """The accountant's ``(epsilon, delta)`` of ``event``; ``"advanced"`` is priced by RDP.

    The paper's split (``accountant="advanced"``) only sizes the noise: what ran
    is priced soundly, and more tightly than advanced composition.
    """
    return epsilon_spent(event, delta, accountant="rdp" if accountant == "advanced" else accountant)


def pure_epsilon_spent(event: dp_accounting.DpEvent) -> PrivacySpent:
    """The pure-DP guarantee ``(epsilon, 0)`` of an event made of Laplace releases.

    Basic composition, which is what any accountant gives at ``delta = 0``: a
    ``LaplaceDpEvent(b)`` is ``1/b``-DP and epsilons add up. dp-accounting's
    accountants cannot price ``delta = 0`` (RDP converts at ``delta > 0`` only; the
    PLD of a Laplace is truncated, leaving mass at infinity), hence this rule.

    Raises
    ------
    ValueError
        For an event with a non-pure release.
    """
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return PrivacySpent(math.inf, 0.0)
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return PrivacySpent(0.0, 0.0)
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return PrivacySpent(1.0 / event.noise_multiplier, 0.0)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return PrivacySpent(event.count * pure_epsilon_spent(event.event).epsilon, 0.0)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return PrivacySpent(sum(pure_epsilon_spent(e).epsilon for e in event.events), 0.0)
    raise ValueError(f"{event!r} is not a pure-DP event (LaplaceDpEvent compositions only)")
