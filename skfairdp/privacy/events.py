"""Builders of dp-accounting events for the releases skfairdp makes.

A fit describes itself as one :class:`dp_accounting.DpEvent`; the accountant
(:mod:`skfairdp.privacy.accountant`) turns that event into an epsilon.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import dp_accounting

SAME_BATCH = ("joint", "separate")


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


def batch_event(
    releases: Sequence[dp_accounting.DpEvent], sampling_rate: float, same_batch: str = "joint"
) -> dp_accounting.DpEvent:
    """The event of one Poisson batch on which ``releases`` were computed.

    Parameters
    ----------
    releases : sequence of DpEvent
        What each noisy release of the batch executed: ``GaussianDpEvent``,
        ``LaplaceDpEvent``, ``NonPrivateDpEvent`` or ``NoOpDpEvent``.
    sampling_rate : float
        Poisson rate ``q`` of the batch; ``q >= 1`` is no subsampling.
    same_batch : {"joint", "separate"}
        ``"joint"`` (sound): the releases are one mechanism on one batch. Gaussians
        combine into ``GaussianDpEvent(joint_noise_multiplier(...))``; with Laplace
        releases the step is ``PoissonSampledDpEvent(q, ComposedDpEvent([Gaussian,
        Laplace, ...]))``, accounted by :mod:`skfairdp.privacy.joint`. ``"separate"``:
        each release is subsampled on its own and the results composed, as if the
        releases had independent batches (some papers' accounting; it under-states
        epsilon, kept for reproductions).

    Returns
    -------
    DpEvent
        ``NoOpDpEvent`` if nothing private was released; ``NonPrivateDpEvent`` if
        any release was exact.
    """
    return _batch_event(tuple(releases), float(sampling_rate), same_batch)


@functools.lru_cache(maxsize=256)
def _batch_event(releases: tuple, q: float, same_batch: str) -> dp_accounting.DpEvent:
    if same_batch not in SAME_BATCH:
        raise ValueError(f"same_batch must be one of {SAME_BATCH}, got {same_batch!r}")
    kept = [e for e in releases if not isinstance(e, dp_accounting.NoOpDpEvent)]
    if not kept:
        return dp_accounting.NoOpDpEvent()
    if any(isinstance(e, dp_accounting.NonPrivateDpEvent) for e in kept):
        return dp_accounting.NonPrivateDpEvent()
    leaves = (dp_accounting.GaussianDpEvent, dp_accounting.LaplaceDpEvent)
    unsupported = [e for e in kept if not isinstance(e, leaves)]
    if unsupported:
        raise dp_accounting.UnsupportedEventError(
            f"a batch's releases must be Gaussian or Laplace mechanisms, got {unsupported}"
        )

    def sampled(event):
        return dp_accounting.PoissonSampledDpEvent(q, event) if q < 1.0 else event

    if same_batch == "separate":
        return compose(sampled(e) for e in kept)
    gaussians = sorted(
        float(e.noise_multiplier) for e in kept if isinstance(e, dp_accounting.GaussianDpEvent)
    )
    parts: list[dp_accounting.DpEvent] = []
    if gaussians:  # one Gaussian keeps its multiplier exactly; several combine
        z = gaussians[0] if len(gaussians) == 1 else joint_noise_multiplier(*gaussians)
        parts.append(dp_accounting.GaussianDpEvent(z))
    parts += [e for e in kept if isinstance(e, dp_accounting.LaplaceDpEvent)]
    return sampled(parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts))
