"""The search's inner budget: the largest epsilon each run's fit may take.

The user states the total ``(epsilon, delta)``. Every run's estimator gets the
same inner epsilon (and the total delta); the inner epsilon is the largest whose
run event, repeated and selected, costs at most the total epsilon. Candidates with
the same planned event at one budget are planned by one representative; if one
of them differs at the calibrated budget, the calibration is redone with every
candidate.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import dp_accounting

from .._fit.budget import reserved_noise_multiplier
from ..privacy.planning import planned_fit_event
from ..privacy.spent import unplanned_steps
from .accounting import cover, rdp_spent
from .candidates import configured

__all__ = [
    "SCORE_BUDGET_SHARE",
    "InnerBudget",
    "NoInnerBudget",
    "auto_score_noise_multiplier",
    "calibrate_inner_budget",
    "largest_within",
]

# score_noise_multiplier="auto": one score release alone spends this share of the budget
SCORE_BUDGET_SHARE = 0.2


class NoInnerBudget(ValueError):
    """No inner epsilon keeps the search within its total epsilon."""


@dataclasses.dataclass(frozen=True)
class InnerBudget:
    """Each run's fit budget and the planned fit event that covers every candidate's."""

    epsilon: float
    fit_event: dp_accounting.DpEvent
    exact: bool  # the cover is one candidate's event (False: a composition of several)


def auto_score_noise_multiplier(epsilon: float, delta: float) -> float:
    """``score_noise_multiplier="auto"``: one score release alone is ``(epsilon, delta) / 5``-DP.

    The fit contract's rule for a release sized from a share of the budget (exact
    Gaussian); the accountant then composes it with the run's fit.
    """
    return reserved_noise_multiplier(SCORE_BUDGET_SHARE, float(epsilon), delta)


def calibrate_inner_budget(
    estimator,
    candidates: list[dict],
    *,
    epsilon: float,
    delta: float,
    n_train: int,
    search_event: Callable[[dp_accounting.DpEvent], dp_accounting.DpEvent],
    combine: Callable[[list], tuple[dp_accounting.DpEvent, bool]] = cover,
) -> InnerBudget:
    """Largest inner epsilon whose search event (``search_event(fit cover)``) costs <= ``epsilon``.

    ``combine`` turns the candidates' planned fit events into one that covers them
    (``(event, exact)``; default :func:`~.accounting.cover`). Raises
    :class:`NoInnerBudget` if even a tiny inner epsilon overspends.
    """

    def planned(params_list, eps_in):
        return [
            planned_fit_event(configured(estimator, params, eps_in, delta), n_train)
            for params in params_list
        ]

    reading = {
        step: None
        for params in candidates
        for step in unplanned_steps(configured(estimator, params, epsilon, delta), n_train)
    }
    if reading:  # no inner budget could cover them: say which, not "epsilon=0.0"
        listed = "\n".join(f"  - {step}" for step in reading)
        raise ValueError(
            f"no inner budget can make the runs private: {len(reading)} step(s) of the "
            f"estimator read the training rows without noise:\n{listed}"
        )

    def cost(fit_cover):
        return rdp_spent(search_event(fit_cover), delta).epsilon

    def total_for(reps):
        return lambda eps_in: cost(combine(planned(reps, eps_in))[0])

    probe = planned(candidates, epsilon)
    reps = [candidates[i] for i, e in enumerate(probe) if probe.index(e) == i]
    inner = largest_within(total_for(reps), epsilon)
    fit_cover, exact = combine(planned(candidates, inner))
    if cost(fit_cover) > epsilon:
        # a candidate planned like a representative at one budget differs at this one:
        # calibrate again with every candidate (slower, rarely needed)
        inner = largest_within(total_for(candidates), epsilon)
        fit_cover, exact = combine(planned(candidates, inner))
    return InnerBudget(inner, fit_cover, exact)


def largest_within(
    total: Callable[[float], float], eps: float, rtol: float = 1e-3, max_evals: int = 30
) -> float:
    """Largest ``x`` (to ``rtol``) with ``total(x) <= eps``, for an increasing ``total``.

    Regula falsi (Illinois) on ``log total(x) - log eps`` against ``log x``, which is
    nearly linear here (an epsilon grows about linearly with an inner epsilon), so a
    few evaluations suffice; each is a calibration of every planned candidate.
    """

    def f(x):
        return math.log(total(math.exp(x))) - math.log(eps)

    a = math.log(eps)
    fa = f(a)
    if fa <= 0:
        return eps  # one run already spends no more than a repeated one: nothing to fit
    b = a - fa - math.log(2.0)  # guess: slope one, then some margin
    fb = f(b)
    while fb > 0:
        a, fa = b, fb
        b = b - 2 * fb - math.log(4.0)
        if b < math.log(eps * 1e-6):
            raise NoInnerBudget("no inner budget fits")
        fb = f(b)
    # now f(b) <= 0 < f(a), b < a
    side, true_fb = 0, fb
    for _ in range(max_evals):
        if -true_fb < rtol or a - b < rtol:
            break
        x = b - fb * (a - b) / (fa - fb)
        x = min(max(x, b + 1e-4 * (a - b)), a - 1e-4 * (a - b))
        fx = f(x)
        if fx <= 0:
            b, fb, true_fb = x, fx, fx
            if side == -1:
                fa /= 2
            side = -1
        else:
            a, fa = x, fx
            if side == 1:
                fb /= 2
            side = 1
    return math.exp(b)
