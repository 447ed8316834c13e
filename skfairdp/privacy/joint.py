"""Sound accounting of several noisy releases computed on the *same* Poisson batch.

A step that releases a Gaussian-noised clipped gradient sum and a
Laplace-noised histogram, both computed on one Poisson-subsampled batch, is ONE
subsampled mechanism: the batch is sampled once and both outputs depend on it.
Accounting it as two independently subsampled mechanisms (amplifying each
separately, then composing) is not a valid upper bound in general, because it
pretends the two releases saw independent batches.

The event for such a step is written as it happens::

    PoissonSampledDpEvent(q, ComposedDpEvent([GaussianDpEvent(z), LaplaceDpEvent(b)]))

dp-accounting's accountants do not accept a composition inside a sampled event,
so this module builds its privacy loss distribution (PLD) directly:

1. The un-subsampled base mechanism (Gaussian x Laplace with independent noise)
   has a PLD that is the convolution of its parts' PLDs. dp-accounting's
   "privacy buckets" construction rounds every privacy loss *up* to the grid
   ``d * Z``; writing ``A_i`` for the upper-measure mass at loss ``l_i`` and
   ``B_i = exp(-l_i) A_i`` (the rest of the lower measure on an extra atom
   with ``A = 0``), the pair ``(A, B)`` dominates the mechanism in every
   hockey-stick divergence (per bucket, the true lower mass is at least
   ``exp(-l_i)`` times the upper mass), and both parts are symmetric.
2. Poisson subsampling with rate ``q`` of a mechanism dominated by ``(A, B)``
   is dominated, for removal, by ``(q A + (1 - q) B, B)`` (loss
   ``log(1 - q + q e^l)``) and, for addition, by ``(A, (1 - q) A + q B)`` (loss
   ``-log(1 - q + q e^-l)``) (Zhu, Dong & Wang, AISTATS 2022, Thm. 11; the same
   construction dp-accounting uses for the subsampled Gaussian).
3. The subsampled losses are rounded up to the grid again (pessimistic), and
   the resulting PLD is composed with dp-accounting's own machinery.

With only a Gaussian inside, this reproduces dp-accounting's subsampled
Gaussian up to discretisation (a test checks it), which is the evidence that
the construction is wired correctly.
"""

from __future__ import annotations

import functools
import math

import dp_accounting
import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

__all__ = [
    "contains_joint_sampled_event",
    "joint_epsilon",
    "joint_sampled_event",
    "joint_sampled_pld",
]

# Grid of the base PLD; the composed PLD is rounded up to it (pessimistic).
JOINT_DISCRETIZATION = 1e-3
# The un-subsampled base PLD uses a grid up to this many times finer (its
# rounding error reaches the subsampled loss multiplied by about q).
BASE_REFINEMENT = 10


def joint_sampled_event(
    sampling_rate: float,
    *,
    gaussian_multiplier: float = math.inf,
    laplace_scale: float = math.inf,
) -> dp_accounting.DpEvent:
    """One Poisson-sampled step releasing a Gaussian and a Laplace output of the same batch.

    Parameters
    ----------
    sampling_rate : float
        Poisson rate ``q``.
    gaussian_multiplier : float
        Gaussian noise std over the L2 sensitivity (``inf``: no Gaussian release).
    laplace_scale : float
        Laplace scale over the L1 sensitivity (``inf``: no Laplace release).
    """
    parts: list[dp_accounting.DpEvent] = []
    if not math.isinf(gaussian_multiplier):
        parts.append(dp_accounting.GaussianDpEvent(gaussian_multiplier))
    if not math.isinf(laplace_scale):
        parts.append(dp_accounting.LaplaceDpEvent(laplace_scale))
    if not parts:
        return dp_accounting.NoOpDpEvent()
    inner = parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts)
    if sampling_rate >= 1.0:
        return inner
    return dp_accounting.PoissonSampledDpEvent(sampling_rate, inner)


def _is_joint(event: dp_accounting.DpEvent) -> bool:
    return isinstance(event, dp_accounting.PoissonSampledDpEvent) and isinstance(
        event.event, dp_accounting.ComposedDpEvent
    )


def contains_joint_sampled_event(event: dp_accounting.DpEvent) -> bool:
    """Whether ``event`` has a Poisson-sampled composition that needs :func:`joint_epsilon`."""
    if _is_joint(event):
        return True
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(contains_joint_sampled_event(e) for e in event.events)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return contains_joint_sampled_event(event.event)
    return False


def _leaf_parts(inner: dp_accounting.DpEvent) -> tuple[list[float], list[float]]:
    gaussians, laplaces = [], []
    events = inner.events if isinstance(inner, dp_accounting.ComposedDpEvent) else [inner]
    for e in events:
        if isinstance(e, dp_accounting.ComposedDpEvent):
            g, lap = _leaf_parts(e)
            gaussians += g
            laplaces += lap
        elif isinstance(e, dp_accounting.GaussianDpEvent):
            gaussians.append(float(e.noise_multiplier))
        elif isinstance(e, dp_accounting.LaplaceDpEvent):
            laplaces.append(float(e.noise_multiplier))
        elif isinstance(e, dp_accounting.NoOpDpEvent):
            continue
        else:
            raise dp_accounting.UnsupportedEventError(
                f"joint accounting supports Gaussian and Laplace releases inside a "
                f"PoissonSampledDpEvent, got {e}"
            )
    return gaussians, laplaces


def _dense(pmf: pld_pmf.PLDPmf) -> tuple[np.ndarray, np.ndarray, float]:
    """Integer loss indices, masses and infinity mass of a PLD pmf."""
    dense = pmf.to_dense_pmf()
    probs = np.asarray(dense._probs, dtype=float)
    losses = dense._lower_loss + np.arange(len(probs))
    return losses, probs, float(dense._infinity_mass)


def joint_sampled_pld(
    sampling_rate: float,
    gaussian_multipliers=(),
    laplace_scales=(),
    *,
    discretization: float = JOINT_DISCRETIZATION,
) -> pld_lib.PrivacyLossDistribution:
    """PLD (add/remove) of one Poisson-sampled step with several same-batch releases.

    Parameters
    ----------
    sampling_rate : float
        ``q`` in ``(0, 1]``.
    gaussian_multipliers : sequence of float
        Each Gaussian release's std over its L2 sensitivity.
    laplace_scales : sequence of float
        Each Laplace release's scale over its L1 sensitivity.
    discretization : float
        Loss grid.
    """
    d = float(discretization)
    q = float(sampling_rate)
    # the base grid's rounding reaches the subsampled loss scaled by about q
    d_base = d * min(1.0, max(q, 1.0 / BASE_REFINEMENT))
    base = pld_lib.identity(value_discretization_interval=d_base)
    gaussians = [z for z in gaussian_multipliers if not math.isinf(z)]
    if gaussians:
        from .events import joint_noise_multiplier

        z = joint_noise_multiplier(*gaussians)
        base = base.compose(
            pld_lib.from_gaussian_mechanism(
                z, value_discretization_interval=d_base, use_connect_dots=False
            )
        )
    for b in laplace_scales:
        if not math.isinf(b):
            base = base.compose(
                pld_lib.from_laplace_mechanism(
                    b, value_discretization_interval=d_base, use_connect_dots=False
                )
            )
    if q >= 1.0:
        return base
    idx, A, inf_mass = _dense(base._pmf_remove)
    loss = idx * d_base
    B = np.exp(-loss) * A
    leftover = max(0.0, 1.0 - float(B.sum()))
    # removal: upper q A + (1 - q) B, lower B (loss log(1 - q + q e^l))
    rem = _connect_dots(
        np.append(q * A + (1.0 - q) * B, (1.0 - q) * leftover),
        np.append(B, leftover),
        q * inf_mass,
        d,
    )
    # addition: upper A, lower (1 - q) A + q B (loss -log(1 - q + q e^-l))
    add = _connect_dots(
        np.append(A, inf_mass),
        np.append((1.0 - q) * A + q * B, (1.0 - q) * inf_mass),
        0.0,
        d,
    )
    return pld_lib.PrivacyLossDistribution(rem, add)


def _connect_dots(upper: np.ndarray, lower: np.ndarray, inf_mass: float, d: float):
    """Pessimistic connect-the-dots pmf of a finite pair (upper, lower) plus infinite mass.

    The hockey-stick curve ``delta(eps) = sum_i [upper_i - e^eps lower_i]_+ + inf_mass``
    is evaluated exactly on the grid ``d * Z`` covering the losses; dp-accounting's
    connect-the-dots construction turns it into a PLD pmf that upper-bounds it
    everywhere (Doroshenko et al. 2022, Alg. 1).
    """
    keep = (upper > 0) & (lower > 0)
    u, lo = upper[keep], lower[keep]
    losses = np.log(u) - np.log(lo)
    order = np.argsort(losses)
    losses, u, lo = losses[order], u[order], lo[order]
    # tail sums over atoms with loss > eps
    tail_u = np.append(np.cumsum(u[::-1])[::-1], 0.0)
    tail_l = np.append(np.cumsum(lo[::-1])[::-1], 0.0)
    grid = np.arange(math.floor(losses[0] / d), math.ceil(losses[-1] / d) + 1)
    eps = grid * d
    first = np.searchsorted(losses, eps, side="right")
    deltas = tail_u[first] - np.exp(eps) * tail_l[first] + inf_mass
    deltas = np.clip(deltas, 0.0, 1.0)
    return pld_pmf.create_pmf_pessimistic_connect_dots(d, grid, deltas)


@functools.lru_cache(maxsize=64)
def _cached_step(q: float, gaussians: tuple, laplaces: tuple, d: float):
    return joint_sampled_pld(q, gaussians, laplaces, discretization=d)


def _pld_of(event: dp_accounting.DpEvent, d: float) -> pld_lib.PrivacyLossDistribution:
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return pld_lib.identity(value_discretization_interval=d)
    if _is_joint(event):
        gaussians, laplaces = _leaf_parts(event.event)
        # one step's PLD is reused across the T's of a calibration or a fit's history
        return _cached_step(float(event.sampling_probability), tuple(gaussians), tuple(laplaces), d)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        pld = pld_lib.identity(value_discretization_interval=d)
        for e in event.events:
            pld = pld.compose(_pld_of(e, d))
        return pld
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _pld_of(event.event, d).self_compose(event.count)
    acc = PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=d
    )
    acc.compose(event)
    return acc._pld


def joint_epsilon(
    event: dp_accounting.DpEvent, delta: float, *, discretization: float = JOINT_DISCRETIZATION
) -> float:
    """Epsilon at ``delta`` (add/remove-one) of an event that may contain joint steps."""
    return float(_pld_of(event, discretization).get_epsilon_for_delta(delta))
