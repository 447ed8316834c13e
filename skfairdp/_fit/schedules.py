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
    "FEDERATED_DPFERMI",
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


#: the most steps an ``"auto"`` epoch count asks for: on large tables the epochs are cut
#: (to at least one) so that the run takes about this many steps, not ``min_epochs``
#: passes. At a fixed epsilon and sampling rate fewer steps need less noise per step,
#: and 10,000 Poisson steps of a few hundred rows move a linear model or small MLP to
#: its optimum (doc/large_data.md measures it). Below ``min_epochs * batch / 10,000``
#: rows (64,000 for DP-FERMI, 51,200 for DP-SGD, 170,667 for RaCO-DP) nothing changes.
MAX_AUTO_STEPS = 10_000


def _cap_epochs(epochs: int, steps_per_epoch: float, max_steps: int | None) -> int:
    """``epochs``, cut to the fewest (at least 1) that still take ``max_steps`` steps."""
    if max_steps is None:
        return int(epochs)
    return int(min(epochs, max(1, math.ceil(max_steps / steps_per_epoch))))


def min_steps_epochs(
    n_samples: int,
    batch_size: int,
    min_epochs: int,
    min_steps: int,
    max_steps: int | None = MAX_AUTO_STEPS,
) -> int:
    """``min_epochs`` passes, or more so that the run takes at least ``min_steps`` steps.

    Steps per epoch counted as ``max(1, n / batch_size)``. On a table so large that
    ``min_epochs`` passes exceed ``max_steps`` steps, the fewest passes (at least one)
    that take ``max_steps`` steps instead.
    """
    steps_per_epoch = max(1.0, n_samples / batch_size)
    epochs = _cap_epochs(min_epochs, steps_per_epoch, max_steps)
    return int(max(epochs, math.ceil(min_steps / steps_per_epoch)))


def min_whole_steps_epochs(
    n_samples: int,
    batch_size: int,
    min_epochs: int,
    min_steps: int,
    max_steps: int | None = MAX_AUTO_STEPS,
):
    """As :func:`min_steps_epochs`, with ``ceil(n / batch_size)`` steps per epoch."""
    steps_per_epoch = max(1, math.ceil(n_samples / batch_size))
    epochs = _cap_epochs(min_epochs, steps_per_epoch, max_steps)
    return int(max(epochs, math.ceil(min_steps / steps_per_epoch)))


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
    """DP-FERMI's ``max_epochs="auto"``: 40 passes, or more to take at least 1,000 steps.

    Fewer (at least one) where 40 passes exceed :data:`MAX_AUTO_STEPS` steps.
    """
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


# -- federated DP-FERMI (SteFFLe) -------------------------------------------------------
# A round costs seconds over a real network (Flower: a process per message, fixed polls),
# and fewer, larger rounds cost nothing in privacy at fixed epsilon and epochs: a larger
# Poisson rate over fewer steps needs less noise per averaged gradient. On Adult and Credit
# Card (3 silos, epsilon = 1, 5 seeds; experiments/results/federated_schedule.md) 4 rounds
# per epoch for 15 epochs at lr = 8 matched the error of DP-FERMI's schedule (5,160 rounds
# at lr = 0.1), with the dual step of skfairdp.federated.objective.dual_step; with 3 local
# steps per round (the estimator's local_steps=3: batch and lr a third) its violation too.
FEDERATED_ROUNDS_PER_EPOCH, FEDERATED_EPOCHS, FEDERATED_MIN_BATCH = 4, 15, 32
FEDERATED_LR = 8.0
# W's ascent averages over about 1 / (2 a p) rounds (a = lr_dual * lambda, p a class
# share ~0.1): at most a tenth of the run, i.e. a >= 20 / T
FEDERATED_DUAL_MEMORY = 20.0
# ... and a <= 0.25: each step keeps 3/4 of W's distance to its target even for a class of
# share p = 0.5 (1 - 2 a p); at 0.4 a 10-round fit of sklearn's checks overshot (accuracy <0.83)
FEDERATED_DUAL_MAX_STEP = 0.25


def federated_batch_size(n_samples: int, epsilon: float = 1.0) -> int:
    """``batch_size="auto"`` of a silo of ``n_samples`` rows: a quarter of it (at least 32).

    Four rounds per epoch (fewer when the silo is under 128 rows).
    """
    return int(max(FEDERATED_MIN_BATCH, math.ceil(n_samples / FEDERATED_ROUNDS_PER_EPOCH)))


def federated_max_epochs(n_samples: int, batch_size: int) -> int:
    """``max_epochs="auto"`` of the federated estimator: 15."""
    return FEDERATED_EPOCHS


def federated_lr(batch_size: int, auto_batch_size: int) -> float:
    """``lr="auto"``: 8, scaled down linearly for a batch smaller than the auto one."""
    return FEDERATED_LR * min(1.0, batch_size / auto_batch_size)


FEDERATED_DPFERMI = AutoSchedule(federated_batch_size, federated_max_epochs, fermi_max_grad_norm)


# -- RaCO-DP -------------------------------------------------------------------------
RACO_BATCH_FRACTION_INV, RACO_NONPRIVATE_FRACTION_INV = 64, 8
RACO_MIN_BATCH, RACO_NONPRIVATE_MIN_BATCH, RACO_MAX_BATCH = 32, 128, 512
RACO_MIN_EPOCHS, RACO_MIN_STEPS = 30, 2000
RACO_CLIP_PER_N_EPSILON, RACO_CLIP_RANGE = 6e-4, (1.0, 10.0)
#: tolerance_margin="auto": the bounds are tightened by this many standard deviations of
#: the training rates' sampling error (RacoProblem.tolerance_margins)
RACO_TOLERANCE_MARGIN = 1.0


def raco_tolerance_margin(tolerance_margin) -> float:
    """RaCO-DP's ``tolerance_margin`` in effect (``"auto"``: :data:`RACO_TOLERANCE_MARGIN`)."""
    if tolerance_margin == "auto":
        return RACO_TOLERANCE_MARGIN
    return float(tolerance_margin)


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
    """RaCO-DP's ``max_epochs="auto"``: 30 passes, or more to take 2,000 steps.

    Fewer (at least one) where 30 passes exceed :data:`MAX_AUTO_STEPS` steps.
    """
    return min_whole_steps_epochs(n_samples, batch_size, RACO_MIN_EPOCHS, RACO_MIN_STEPS)


def raco_max_grad_norm(n_samples: int, epsilon: float, privacy_unit: str = "record") -> float:
    """RaCO-DP's ``max_grad_norm="auto"``: ``n * epsilon * 6e-4``, between 1 and 10.

    Clipping biases the step (the paper's §6): every row's gradient of
    ``loss_i + B <W, sigma_tau>`` is cut to ``C``, and a constraint on a small
    cell acts through a few rows with large weights (``lambda / p_min``), whose push
    is cut the most, while the averaged model's noise relative to its signal scales
    like ``C / (n epsilon)``. So ``C`` grows with ``n epsilon`` from a floor of 1 (below
    it a 5,000-row dataset lost to the majority class; German credit, 750 training
    rows, demographic parity: 0.291 with 1, 0.320 with 3). The slope was 2e-4 (chosen
    on Adult: equalized odds, gamma = 0.02, test error 0.1637 with ``C = 3``, 0.1607
    with 6, 0.1609 with 12; the gap was the clipping, not the noise) until the zoo
    (issue 34, ``experiments/raco_clip_probe.py``: 15 tables, both notions, gamma 0.02
    and 0.05, epsilon = 1): on HI (16,575 training rows, a 5.6 % minority) ``C = 3.3``
    left the run at a mean training gap of 0.061 and the mix at 0.300 test error, ``C =
    9.9`` at 0.044 and 0.279 (CPS1988: 0.359 to 0.333), while the tables of a few
    thousand rows keep ``C`` near the floor; slope 6e-4 gave the zoo's worst excess
    error over ExpGrad 0.156 against 0.180. Non-private training clips nothing (the
    upper end is reported).
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
    """DP-SGD's ``max_epochs="auto"``: 20 passes, or more to take at least 600 steps.

    Fewer (at least one) where 20 passes exceed :data:`MAX_AUTO_STEPS` steps.
    """
    return min_steps_epochs(n_samples, batch_size, DPSGD_MIN_EPOCHS, DPSGD_MIN_STEPS)


DPSGD = AutoSchedule(dpsgd_batch_size, dpsgd_max_epochs)


# -- CGOO (CGOOReduction) ------------------------------------------------------------
#: The default oracle on large data (what :func:`cgoo_oracle_params` gives from about
#: 24,000 rows on): DP-SGD logistic regression with large batches (many oracle fits
#: share the budget, so each runs with a large noise multiplier; large batches keep
#: the noise of the averaged gradient small). Adult, eps=1, DP bound 0.01, seeds 0-2:
#: error 0.1751 at lr 0.5, 0.1709 at lr 1.0 (the oracles were under-trained).
CGOO_ORACLE_PARAMS = {"lr": 1.0, "batch_size": 1024, "max_epochs": 20}
# the oracle's schedule by n (see cgoo_oracle_params)
CGOO_ORACLE_BATCH_FRACTION_INV = 32
CGOO_ORACLE_MIN_BATCH, CGOO_ORACLE_MAX_BATCH = 64, 1024
CGOO_ORACLE_MIN_EPOCHS, CGOO_ORACLE_MIN_STEPS = 20, 600
#: lr = CGOO_ORACLE_PARAMS["lr"] * (batch / CGOO_ORACLE_MAX_BATCH) ** CGOO_ORACLE_LR_EXPONENT
CGOO_ORACLE_LR_EXPONENT = 0.75
# max_iter="auto": round((n * epsilon)^(2/3) / CGOO_ITER_SCALE) within CGOO_ITER_RANGE.
# 100 (10 on Adult, 8 on Adult with women at 5 %): with 50 (17-20 atoms) each atom's
# released minority rate at a 5 % share had noise of std 0.05, 2.5 times a bound of
# 0.02 (doc/cgoo.md, "Small minority groups")
CGOO_ITER_SCALE = 100.0
CGOO_ITER_RANGE = (3, 20)
#: noise_margin="auto", in standard deviations of the released statistics' noise: on
#: the constraints' values, and on the objective's (about the largest of T = 20 noises,
#: sqrt(2 log 20) = 2.4: an oracle atom replaces the constants only when its released
#: advantage is not the winner's curse; German credit, eps=1, 5 seeds: error - majority
#: -0.004 with 2.0, +0.001 with 1.0; German (sex): -0.010 with 2.0, +0.009 with 0.5).
CGOO_CONSTRAINT_MARGIN = 0.5
CGOO_OBJECTIVE_MARGIN = 2.0
#: budget_split="auto": the cell counts' share, and the statistics' share per atom within a
#: range: each atom's statistics carry noise of std ~ sqrt(T / share), so the share grows
#: with T (0.15 at T = 3, the former fixed split on small tables; 0.35 from T = 7 on:
#: Adult with women at 5 %, T = 8: test DP 0.018 instead of 0.036 at share 0.15, 2 seeds)
CGOO_CELLS_SHARE = 0.05
CGOO_STATISTICS_SHARE_PER_ATOM, CGOO_STATISTICS_SHARE_RANGE = 0.05, (0.15, 0.35)
#: The oracle's task weights are ``min(1, |w_cell| / scale)`` with ``scale`` this
#: many times the mean ``|w|`` over the released cell frequencies (at most
#: ``max |w|``): the few rows of a small group's cells, whose weights ``~ 1 / p`` set
#: ``max |w|``, no longer shrink every other row's weight against the oracle's fixed
#: gradient noise (Adult, women at 5 %, eps=1, 5 seeds: error 0.2015 at DP 0.016
#: with 1.5, 0.2033 at 0.030 with 2.0, 0.212 at 0.019 (2 seeds) without a cap)
CGOO_ORACLE_WEIGHT_CAP = 1.5
#: Which private oracle calls get the capped task (issue 34): "adaptive"
#: (:func:`cgoo_capped_task`), "always" (issue 24's rule) or "alternate" (the odd
#: calls). The cap on every call put 67 % of the mixture on the constant atoms on
#: Ecdat HI (black at 5.6 %, base rates 0.42 / 0.37): error 0.323 at bound 0.02
#: against 0.217 with the adaptive rule, 3 seeds (doc/cgoo.md)
CGOO_ORACLE_CAP_RULE = "adaptive"

#: Issue 34: a private fit's column counts as stalled (the multipliers are then rescaled
#: before the next oracle call) unless its reduced cost on the released statistics is
#: below ``-objective margin * std * ||gradient||``, the noise of the released values.
#: On cps1988 (28,155 rows, DP bound 0.05, epsilon 1, seeds 0 1) test error 0.336 ->
#: 0.287; ``False`` is the former exact test ``>= 0``.
CGOO_NOISE_AWARE_STALL = True


def cgoo_capped_task(call: int, weight_capped: float, weight_plain: float) -> bool:
    """Whether a private fit's oracle call ``call`` (from 0) gets the capped task.

    ``"adaptive"``: call 0 gets the exact task, call 1 the capped one, and each
    later call the kind whose atoms carry more of the restricted master's current
    weight (ties: the exact task). ``weight_capped`` / ``weight_plain`` are those
    weights, functions of the released statistics only, so the choice is
    post-processing and moves no accounting. On Adult with women at 5 % the
    capped atoms win (error 0.203 at bound 0.02, as with the cap on every call;
    0.214 without the cap); on HI the exact ones (0.217; 0.323 with the cap on
    every call).
    """
    if CGOO_ORACLE_CAP_RULE == "always":
        return True
    if CGOO_ORACLE_CAP_RULE == "alternate" or call < 2:
        return call % 2 == 1
    return weight_capped > weight_plain


def cgoo_oracle_params(n_samples: int) -> dict:
    """CGOO's default oracle (:class:`~skfairdp.DPSGDClassifier`) parameters on ``n`` rows.

    ``batch_size = 2^round(log2(n / 32))`` within ``[64, 1024]``, ``max_epochs`` 20
    or more to take at least 600 steps, ``lr = (batch_size / 1024)^0.75``
    (noise of the averaged gradient ``~ 1 / batch_size``: smaller batches take
    smaller steps). From about 24,000 rows on this is
    :data:`CGOO_ORACLE_PARAMS` (Adult, ``lr=1``); at 750 rows (German credit)
    ``batch_size=64, max_epochs=52, lr=0.125``: the former fixed batch of 1,024
    was the whole table, 20 full-batch steps that left each oracle near the
    constant (an oracle at epsilon 0.5 on German credit: error 0.294 = the
    majority class's, against 0.256 with the auto schedule at lr 0.1, 0.308 at
    lr 0.5). The exponent joins those two measured ends: lr 0.125 at batch 64,
    1.0 at 1,024.
    """
    batch = power_of_two_batch_size(
        n_samples, CGOO_ORACLE_BATCH_FRACTION_INV, CGOO_ORACLE_MIN_BATCH, CGOO_ORACLE_MAX_BATCH
    )
    epochs = min_steps_epochs(n_samples, batch, CGOO_ORACLE_MIN_EPOCHS, CGOO_ORACLE_MIN_STEPS)
    lr = CGOO_ORACLE_PARAMS["lr"] * (batch / CGOO_ORACLE_MAX_BATCH) ** CGOO_ORACLE_LR_EXPONENT
    return {"lr": lr, "batch_size": batch, "max_epochs": epochs}


def cgoo_max_iter(n_samples: int, epsilon: float) -> int:
    """CGOO's ``max_iter="auto"``: ``round((n epsilon)^(2/3) / 100)`` within ``[3, 20]``.

    20 at ``epsilon=inf``. Each of the ``T`` atoms' statistics is released with
    noise of std ``~ sqrt(T) / (n epsilon)`` on a frequency, and each oracle gets
    ``~ 1 / T`` of the budget, while Frank–Wolfe's error falls like ``1 / T``; the
    two balance at ``T ~ (n epsilon)^(2/3)`` (:func:`reduction_iterations`). A rate
    of a group of share ``p`` carries ``1 / p`` times that noise, so the scale
    (formerly 50, 20 atoms on Adult) is set for a small group: 10 on Adult (33,916
    training rows), 8 on Adult with women at 5 % (24,100), 3 on German credit
    (750), Communities and Crime (1,495) and Bank marketing (3,390).
    """
    return reduction_iterations(n_samples, epsilon, CGOO_ITER_SCALE, *CGOO_ITER_RANGE)


def cgoo_budget_split(n_iterations: int) -> tuple[float, float, float]:
    """CGOO's ``budget_split="auto"`` for ``T`` oracle calls: ``(0.05, s, 0.95 - s)``.

    ``s = 0.05 T`` within ``[0.15, 0.35]``: (0.05, 0.15, 0.8) at ``T = 3`` (the
    tables of up to 3,750 rows at epsilon = 1, the former fixed default), (0.05, 0.35,
    0.6) from ``T = 7`` on (Adult: 10). Each atom's released statistics have noise
    std ``z* sqrt(T / s)``: on a group of 1,205 training rows (Adult with women at
    5 %, ``T = 8``) the former share 0.15 left a std of 0.035 on the group's positive
    rate per atom, 0.023 with 0.35.
    """
    low, high = CGOO_STATISTICS_SHARE_RANGE
    statistics = round(min(high, max(low, CGOO_STATISTICS_SHARE_PER_ATOM * n_iterations)), 10)
    return CGOO_CELLS_SHARE, statistics, round(1.0 - CGOO_CELLS_SHARE - statistics, 10)


def cgoo_noise_margins(noise_margin) -> tuple[float, float]:
    """CGOO's ``noise_margin`` in effect: (on the constraints, on the objective).

    ``"auto"``: :data:`CGOO_CONSTRAINT_MARGIN` and :data:`CGOO_OBJECTIVE_MARGIN`; a
    float sets both.
    """
    if noise_margin == "auto":
        return CGOO_CONSTRAINT_MARGIN, CGOO_OBJECTIVE_MARGIN
    return float(noise_margin), float(noise_margin)
