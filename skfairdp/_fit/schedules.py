"""Every ``"auto"`` rule of a fit: ``batch_size``, ``max_epochs``, ``max_grad_norm``.

Each rule is a function of public facts only (the number of rows ``n``, ``epsilon``,
the privacy unit), never of the data's values. An estimator whose parameters accept
``"auto"`` names its rules in a class attribute ``_schedule =``
:class:`AutoSchedule` (:data:`DPFERMI`, :data:`RACO`, :data:`DPSGD` below); the fit
template resolves them (:func:`resolve_schedule`, :func:`resolve_clip`) and stores
the values used as ``batch_size_``, ``max_epochs_`` and ``max_grad_norm_``.

On small data a fixed epoch count leaves DP-SGD with a few dozen steps (at
``n = 750`` and batch 256, 20 epochs are 60 steps: too few to move a logistic
regression off its initialisation). What matters there is the number of steps
(and ``lr * steps``), so the rules keep the sampling rate small and ask for a
minimum number of steps, while large data keeps the usual batch and epoch count.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "AutoSchedule",
    "DPFERMI",
    "DPSGD",
    "RACO",
    "min_steps_epochs",
    "power_of_two_batch_size",
    "reduction_iterations",
    "resolve_clip",
    "resolve_schedule",
]


@dataclass(frozen=True)
class AutoSchedule:
    """An estimator's ``"auto"`` rules.

    Attributes
    ----------
    batch_size : callable ``(n_samples, epsilon) -> int``
    max_epochs : callable ``(n_samples, batch_size) -> int``
    max_grad_norm : callable ``(n_samples, epsilon, privacy_unit) -> float``, or None
        None: ``max_grad_norm`` takes no ``"auto"``.
    """

    batch_size: Callable[[int, float], int]
    max_epochs: Callable[[int, int], int]
    max_grad_norm: Callable[[int, float, str], float] | None = None


def resolve_schedule(estimator, n_samples: int) -> tuple[int, int]:
    """``(batch_size, max_epochs)`` of a fit of ``estimator`` on ``n_samples`` rows."""
    batch_size, max_epochs = estimator.batch_size, estimator.max_epochs
    rules = estimator._schedule
    if batch_size == "auto":
        batch_size = rules.batch_size(n_samples, float(estimator.epsilon))
    if max_epochs == "auto":
        max_epochs = rules.max_epochs(n_samples, int(batch_size))
    return int(batch_size), int(max_epochs)


def resolve_clip(estimator, n_samples: int) -> float:
    """The per-sample clipping norm of a fit of ``estimator`` on ``n_samples`` rows."""
    if estimator.max_grad_norm == "auto":
        unit = getattr(estimator, "privacy_unit", "record")
        return float(estimator._schedule.max_grad_norm(n_samples, float(estimator.epsilon), unit))
    return float(estimator.max_grad_norm)


# -- shapes of rules -----------------------------------------------------------------
def power_of_two_batch_size(n_samples: int, fraction_inv: float, low: int, high: int) -> int:
    """``2^round(log2(n / fraction_inv))``, clipped to ``[low, high]``."""
    target = max(1.0, n_samples / fraction_inv)
    return int(min(high, max(low, 2 ** round(math.log2(target)))))


def min_steps_epochs(n_samples: int, batch_size: int, min_epochs: int, min_steps: int) -> int:
    """``min_epochs`` passes, or more so that the run takes at least ``min_steps`` steps.

    Steps per epoch counted as ``max(1, n / batch_size)``.
    """
    steps_per_epoch = max(1.0, n_samples / batch_size)
    return int(max(min_epochs, math.ceil(min_steps / steps_per_epoch)))


def min_whole_steps_epochs(n_samples: int, batch_size: int, min_epochs: int, min_steps: int):
    """As :func:`min_steps_epochs`, with ``ceil(n / batch_size)`` steps per epoch."""
    steps_per_epoch = max(1, math.ceil(n_samples / batch_size))
    return int(max(min_epochs, math.ceil(min_steps / steps_per_epoch)))


def clip_growing_with_n_epsilon(n_samples: int, epsilon: float, per_n_epsilon, low, high):
    """``n * epsilon * per_n_epsilon`` within ``[low, high]``."""
    return float(min(high, max(low, n_samples * epsilon * per_n_epsilon)))


def reduction_iterations(n_samples: int, epsilon: float, scale: float, low: int, high: int) -> int:
    """``round((n * epsilon)^(2/3) / scale)`` within ``[low, high]`` (``high`` at ``epsilon=inf``).

    A reduction's ``T`` oracle calls share the budget: each released statistic
    carries noise of std ``~ sqrt(T) / (n epsilon)`` while Frank–Wolfe's own error
    falls like ``1 / T``; the two balance at ``T ~ (n epsilon)^(2/3)``.
    """
    if math.isinf(epsilon):
        return int(high)
    return int(min(high, max(low, round((n_samples * epsilon) ** (2.0 / 3.0) / scale))))


# -- DP-FERMI ------------------------------------------------------------------------
FERMI_BATCH_FRACTION_INV, FERMI_MIN_BATCH, FERMI_MAX_BATCH = 128, 32, 256
FERMI_MIN_EPOCHS, FERMI_MIN_STEPS = 40, 1000
# max_grad_norm="auto" under "record": n * epsilon / 10,000, between 1 and 3
FERMI_CLIP_RANGE, FERMI_CLIP_PER_N_EPSILON = (1.0, 3.0), 1e-4


def fermi_batch_size(n_samples: int, epsilon: float = 1.0) -> int:
    """DP-FERMI's ``batch_size="auto"``: ``n / 128`` rounded, between 32 and 256."""
    target = round(n_samples / FERMI_BATCH_FRACTION_INV)
    return int(min(FERMI_MAX_BATCH, max(FERMI_MIN_BATCH, target)))


def fermi_max_epochs(n_samples: int, batch_size: int) -> int:
    """DP-FERMI's ``max_epochs="auto"``: 40 passes, or more to take at least 1,000 steps."""
    return min_whole_steps_epochs(n_samples, batch_size, FERMI_MIN_EPOCHS, FERMI_MIN_STEPS)


def fermi_max_grad_norm(n_samples: int, epsilon: float, privacy_unit: str) -> float:
    """DP-FERMI's ``max_grad_norm="auto"``: ``n * epsilon / 10,000`` in ``[1, 3]``, else 1.

    The noise on the mean gradient relative to the clip falls like ``1 / (n epsilon)``:
    with much data a larger clip keeps more of each row's gradient (Adult, epsilon=1:
    3 beat 1) while on little data it only adds noise (German credit, 750 rows: 1
    beat 3). Under ``"sensitive"`` the clip bounds the penalty's force only; 1.
    """
    if privacy_unit == "sensitive" or math.isinf(epsilon):
        return FERMI_CLIP_RANGE[0]
    return clip_growing_with_n_epsilon(
        n_samples, epsilon, FERMI_CLIP_PER_N_EPSILON, *FERMI_CLIP_RANGE
    )


DPFERMI = AutoSchedule(fermi_batch_size, fermi_max_epochs, fermi_max_grad_norm)


# -- RaCO-DP -------------------------------------------------------------------------
RACO_BATCH_FRACTION_INV, RACO_NONPRIVATE_FRACTION_INV = 64, 8
RACO_MIN_BATCH, RACO_NONPRIVATE_MIN_BATCH, RACO_MAX_BATCH = 32, 128, 512
RACO_MIN_EPOCHS, RACO_MIN_STEPS = 30, 2000
RACO_CLIP_PER_N_EPSILON, RACO_CLIP_RANGE = 2e-4, (1.0, 10.0)


def raco_batch_size(n_samples: int, epsilon: float = 1.0) -> int:
    """RaCO-DP's ``batch_size="auto"``: a fraction of ``n``, between a floor and 512.

    Private: ``n / 64`` (a small sampling rate, which Poisson subsampling
    amplifies), at least 32. Non-private: ``n / 8``, at least 128: nothing is
    gained by small batches there, and the hard rates the dual sees are then less
    noisy (the iterates, hence their average, agree better).
    """
    if math.isfinite(epsilon):
        inv, floor = RACO_BATCH_FRACTION_INV, RACO_MIN_BATCH
    else:
        inv, floor = RACO_NONPRIVATE_FRACTION_INV, RACO_NONPRIVATE_MIN_BATCH
    return int(min(RACO_MAX_BATCH, max(floor, round(n_samples / inv))))


def raco_max_epochs(n_samples: int, batch_size: int) -> int:
    """RaCO-DP's ``max_epochs="auto"``: 30 passes, or more to take 2,000 steps."""
    return min_whole_steps_epochs(n_samples, batch_size, RACO_MIN_EPOCHS, RACO_MIN_STEPS)


def raco_max_grad_norm(n_samples: int, epsilon: float, privacy_unit: str = "record") -> float:
    """RaCO-DP's ``max_grad_norm="auto"``: ``n * epsilon / 5,000``, between 1 and 10.

    Clipping biases the step (the paper's §6): every row's gradient of
    ``loss_i + B <W, sigma_tau>`` is cut to ``C``, and a constraint on a small
    cell acts through a few rows with large weights, whose push is cut the most,
    while the averaged model's noise relative to its signal scales like
    ``C / (n epsilon)``. So ``C`` grows with ``n epsilon`` from a floor of 1 (below
    it a 5,000-row dataset lost to the majority class). Measured on Adult,
    equalized odds, gamma = 0.02, epsilon = 1 (seeds 0-2): test error 0.1637 with
    ``C = 3``, 0.1607 with 6, 0.1609 with 12; with ``C = 3`` and no gradient noise
    still 0.1638, with neither noise nor clipping 0.1589 (0.1592 without privacy):
    the gap was the clipping, not the noise. Small data keeps the floor (German
    credit, 750 training rows, demographic parity: 0.291 with 1, 0.320 with 3).
    Non-private training clips nothing (the upper end is reported).
    """
    if math.isinf(epsilon):
        return RACO_CLIP_RANGE[1]
    return clip_growing_with_n_epsilon(
        n_samples, epsilon, RACO_CLIP_PER_N_EPSILON, *RACO_CLIP_RANGE
    )


RACO = AutoSchedule(raco_batch_size, raco_max_epochs, raco_max_grad_norm)


# -- plain DP-SGD (DPSGDClassifier) --------------------------------------------------
DPSGD_BATCH_FRACTION_INV, DPSGD_MIN_BATCH, DPSGD_MAX_BATCH = 12, 32, 256
DPSGD_MIN_EPOCHS, DPSGD_MIN_STEPS = 20, 600


def dpsgd_batch_size(n_samples: int, epsilon: float = 1.0) -> int:
    """DP-SGD's ``batch_size="auto"``: ``2^round(log2(n / 12))`` within ``[32, 256]``.

    256 from about 2,200 rows on (Adult keeps it); 64 at 750 rows, 128 at 1,500.
    """
    return power_of_two_batch_size(
        n_samples, DPSGD_BATCH_FRACTION_INV, DPSGD_MIN_BATCH, DPSGD_MAX_BATCH
    )


def dpsgd_max_epochs(n_samples: int, batch_size: int) -> int:
    """DP-SGD's ``max_epochs="auto"``: 20 passes, or more to take at least 600 steps."""
    return min_steps_epochs(n_samples, batch_size, DPSGD_MIN_EPOCHS, DPSGD_MIN_STEPS)


DPSGD = AutoSchedule(dpsgd_batch_size, dpsgd_max_epochs)
