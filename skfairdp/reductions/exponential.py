"""Algorithm 1 of Alabi's paper: the exponential mechanism over a finite class (pure epsilon-DP).

A candidate ``c`` is drawn with probability proportional to
``exp(-epsilon * h(c) / (2 * sensitivity))`` by the Gumbel-max trick. The
candidates must not depend on the private data (thresholds on a fixed grid of a
public score, or models fitted on public data, digest pitfall P10).

``h`` depends on the data through the per-cell positive counts (divided by the
released total) and the released cell frequencies, which are constants once
released. Adding or removing one row moves one count by at most 1, so
``|h(D) - h(D')| <= max_z sup |dh / dJ_z| / N``; for linear objectives and the
built-in (linear-gap) constraints that supremum is bounded exactly by
:func:`score_sensitivity` (a log-sum-exp max has gradients in the convex hull
of its terms' gradients; the smooth hinge's slope is in ``[0, 1]``). With public
row weights in ``[0, W]`` one row moves one count by at most ``W``: the bound
times ``W``.

**Its event.** The mechanism is ``epsilon``-DP, and more: ``epsilon``-bounded
range (Durfee & Rogers 2019), so ``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021).
dp-accounting 0.6 has no event for a pure-DP mechanism (no ``EpsilonDeltaDpEvent``)
and prices ``ZCDpEvent`` with RDP only, never at ``delta = 0``. The selection is
recorded as ``LaplaceDpEvent(1 / epsilon)`` (:func:`selection_event`): the Laplace
mechanism of the same epsilon, which every accountant prices (RDP and PLD), whose
pure-DP value is ``epsilon`` (the guarantee stated), and which dominates every
``epsilon``-bounded-range pair (checked numerically against the two-point pairs,
the extreme ones, in RDP at orders 1.001 to 1e5 and in the hockey-stick
divergence, ``epsilon`` from 0.01 to 20): a composition priced with it at
``delta > 0`` is an upper bound too.
"""

from __future__ import annotations

import dp_accounting
import numpy as np
import torch

from ..privacy import EventRecorder, RandomSource
from .constraints import linear_gap_matrix
from .frank_wolfe import PenalisedObjective
from .objectives import linear_objective_vector

__all__ = [
    "exponential_log_probabilities",
    "exponential_mechanism",
    "gumbel_max_index",
    "score_sensitivity",
    "selection_event",
]


def score_sensitivity(problem: PenalisedObjective, total: float) -> float:
    """Bound on how much ``h`` moves when one row is added or removed.

    Parameters
    ----------
    problem : PenalisedObjective
        With a linear objective and a linear-gap constraint.
    total : float
        The released row total ``N`` the counts are divided by.

    Raises
    ------
    ValueError
        For a non-linear objective or constraint (no exact bound).
    """
    if not (problem.objective.linear and problem.constraint.linear):
        raise ValueError(
            "method='exponential' needs a linear objective and a built-in constraint "
            "(the sensitivity of h is bounded exactly only for those)"
        )
    cells = torch.as_tensor(problem.cells, dtype=torch.float64)
    c, _ = linear_objective_vector(problem.objective, cells)
    A, _ = linear_gap_matrix(problem.constraint, cells)
    per_cell = c.abs().numpy() + problem.penalty * A.abs().max(dim=0).values.numpy()
    return float(per_cell.max()) / float(total)


def exponential_log_probabilities(
    scores: np.ndarray, sensitivity: float, epsilon: float
) -> np.ndarray:
    """Log-probabilities of the exponential mechanism minimising ``scores`` (normalised)."""
    logits = -float(epsilon) * np.asarray(scores, dtype=np.float64) / (2.0 * float(sensitivity))
    return logits - np.logaddexp.reduce(logits)


def gumbel_max_index(log_probabilities: np.ndarray, uniforms: np.ndarray) -> int:
    """Index drawn from ``softmax(log_probabilities)`` by the Gumbel-max trick.

    ``uniforms`` are ``len(log_probabilities)`` draws in ``(0, 1]`` (from a
    :class:`~skfairdp.privacy.RandomSource`, so ``secure_mode`` holds).
    """
    gumbel = -np.log(-np.log(np.clip(uniforms, 1e-300, 1.0 - 1e-16)))
    return int(np.argmax(np.asarray(log_probabilities) + gumbel))


def selection_event(epsilon: float) -> dp_accounting.DpEvent:
    """The recorded event of one ``epsilon``-DP selection (see the module docstring)."""
    return dp_accounting.LaplaceDpEvent(1.0 / float(epsilon))


def exponential_mechanism(
    scores: np.ndarray,
    sensitivity: float,
    epsilon: float,
    random: RandomSource,
    recorder: EventRecorder,
) -> int:
    """Index of the candidate drawn (minimising ``scores``), its event recorded.

    Parameters
    ----------
    scores : ndarray of shape (n_candidates,)
    sensitivity : float
        Bound on how much one row moves any score.
    epsilon : float
    random : RandomSource
        The Gumbel draws (``secure_mode`` holds).
    recorder : EventRecorder
        Records :func:`selection_event`.
    """
    log_p = exponential_log_probabilities(scores, sensitivity, epsilon)
    index = gumbel_max_index(log_p, random.uniform(len(scores)))
    recorder.record(selection_event(epsilon))
    return index
