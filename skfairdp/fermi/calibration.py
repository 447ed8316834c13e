"""``calibration="paper"``: DP-FERMI's noise from Theorem 3.3's closed-form sigmas.

The theorem (:mod:`skfairdp.fermi.theorem`) gives standard deviations on
minibatch-averaged gradients under its own preconditions; :func:`theorem_3_3_plan`
turns them into the noise multipliers of the sums DP-FERMI releases, and warns when
a precondition fails. The default calibration is the numeric accountant's
(:mod:`skfairdp._fit.budget`); either way ``privacy_spent_`` is what the accountant
says the executed event costs.
"""

from __future__ import annotations

import math
import warnings

from .._fit.context import NoisePlan
from ..privacy import joint_noise_multiplier
from .theorem import theorem_3_3_preconditions, theorem_3_3_sigmas

__all__ = ["theorem_3_3_plan"]


def theorem_3_3_plan(
    *,
    epsilon: float,
    delta: float,
    n_samples: int,
    batch_size: float,
    steps: int,
    rho: float,
    max_grad_norm: float,
    dual_bound: float,
    dual_clip: float,
    n_classes: int,
    fairness_weight: float,
    privacy_unit: str,
    stacklevel: int = 2,
) -> NoisePlan:
    """The :class:`NoisePlan` of Theorem 3.3's sigmas for one DP-FERMI fit.

    Parameters
    ----------
    epsilon, delta, n_samples, steps, rho, n_classes
        As in :func:`~skfairdp.fermi.theorem.theorem_3_3_sigmas`.
    batch_size : float
        Expected batch size ``m`` (the noise goes on sums of ``m`` rows).
    max_grad_norm : float
        The theta clip, as the theorem's ``L_theta``.
    dual_bound : float
        W's ball radius, as the theorem's ``D``.
    dual_clip : float
        The clip of one row's W-gradient (:func:`~skfairdp.fermi.problem.w_clip_norm`).
    fairness_weight : float
        ``lambda``.
    privacy_unit : {"record", "sensitive"}
        Part (b) of the theorem, or part (a) (the sensitive attribute only).
    stacklevel : int, default=2
        The precondition warning's stack level as seen from the caller.

    Returns
    -------
    NoisePlan
        Nothing to noise (all ``inf``) with ``lambda = 0`` under ``"sensitive"``.
    """
    has_dual = fairness_weight > 0
    # with lambda = 0 under "sensitive" nothing depends on s: nothing to noise
    if not (has_dual or privacy_unit == "record"):
        return NoisePlan()
    problems = theorem_3_3_preconditions(
        epsilon=epsilon, delta=delta, n_samples=n_samples, batch_size=batch_size, steps=steps
    )
    if problems:
        warnings.warn(
            "calibration='paper': Theorem 3.3's preconditions fail ("
            + "; ".join(problems)
            + "); its sigmas then carry no guarantee. privacy_spent_ reports what the "
            "accountant says the executed event costs.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )
    sensitive_only = privacy_unit == "sensitive"
    sigmas = theorem_3_3_sigmas(
        epsilon=epsilon,
        delta=delta,
        n_samples=n_samples,
        steps=steps,
        rho=rho,
        lipschitz=max_grad_norm,
        w_bound=dual_bound,
        n_classes=n_classes,
        sensitive_only=sensitive_only,
    )
    # The sigmas are stds on averaged gradients; ours is added to sums of m rows.
    # Alg. 1 scales the sensitive-unit theta noise by lambda; W noise scales with
    # lambda in both units (digest §2.6 P4).
    m, lam = batch_size, fairness_weight
    theta_std = sigmas.sigma_theta * m * (lam if sensitive_only else 1.0)
    z_theta = theta_std / max_grad_norm if theta_std > 0 else math.inf
    z_w = (lam * sigmas.sigma_w * m) / dual_clip if has_dual else math.inf
    return NoisePlan(
        primal_multiplier=z_theta,
        dual_multiplier=z_w,
        effective_multiplier=joint_noise_multiplier(z_theta, z_w),
    )
