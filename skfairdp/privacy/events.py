"""Builders of dp-accounting events for the releases skfairdp makes.

A fit describes itself as one :class:`dp_accounting.DpEvent`; the accountant
(:mod:`skfairdp.privacy.accountant`) turns that event into an epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import dp_accounting


def joint_noise_multiplier(*noise_multipliers: float) -> float:
    """Effective noise multiplier of several Gaussian releases on the same batch.

    Releasing ``v_1 + N(0, (z_1 C_1)^2)``, ..., ``v_k + N(0, (z_k C_k)^2)`` where
    each per-record contribution to ``v_j`` has norm at most ``C_j`` is one
    Gaussian mechanism with multiplier ``(sum_j z_j^-2)^(-1/2)``.

    Parameters
    ----------
    *noise_multipliers : float
        Multipliers ``z_j > 0``; ``inf`` entries (releases that carry no private
        signal) are ignored.

    Returns
    -------
    float
        The joint multiplier; ``inf`` if every entry is ``inf``.
    """
    if any(not z > 0 for z in noise_multipliers):  # also rejects NaN
        raise ValueError(f"noise multipliers must be > 0, got {noise_multipliers}")
    inv_sq = sum(0.0 if math.isinf(z) else z**-2 for z in noise_multipliers)
    return math.inf if inv_sq == 0 else inv_sq**-0.5


def gaussian_release_event(noise_multiplier: float) -> dp_accounting.DpEvent:
    """One (non-subsampled) Gaussian release, e.g. a noisy histogram."""
    if math.isinf(noise_multiplier):
        return dp_accounting.NoOpDpEvent()
    if noise_multiplier == 0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.GaussianDpEvent(noise_multiplier)


def sampled_gaussian_steps_event(
    noise_multiplier: float, sampling_rate: float, steps: int
) -> dp_accounting.DpEvent:
    """``steps`` Poisson-subsampled Gaussian releases with rate ``sampling_rate``.

    Each step may release several vectors computed on the same batch; pass
    their :func:`joint_noise_multiplier`.
    """
    if steps == 0 or math.isinf(noise_multiplier):
        return dp_accounting.NoOpDpEvent()
    if noise_multiplier == 0:
        return dp_accounting.NonPrivateDpEvent()
    step = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sampling_rate < 1.0:
        step = dp_accounting.PoissonSampledDpEvent(sampling_rate, step)
    return dp_accounting.SelfComposedDpEvent(step, int(steps))


def compose(events: Iterable[dp_accounting.DpEvent]) -> dp_accounting.DpEvent:
    """Compose events, dropping no-ops; a single event is returned as is."""
    kept = [e for e in events if not isinstance(e, dp_accounting.NoOpDpEvent)]
    if not kept:
        return dp_accounting.NoOpDpEvent()
    if len(kept) == 1:
        return kept[0]
    return dp_accounting.ComposedDpEvent(kept)
