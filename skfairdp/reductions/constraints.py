"""Constraints ``g`` of a CGOO reduction as differentiable torch functions of group statistics.

The statistics ``(positives, cells)`` are those of
:mod:`skfairdp.reductions.objectives`: joint frequencies ``J_z = P[yhat=1,
cell=z]`` and cell proportions ``q_z = P[cell=z]`` for cells ``z = 2 * group +
label``.

A :class:`Constraint` maps the statistics to a 1-D tensor of signed *gaps*
whose maximum is the exact violation, e.g. ``PR_a - PR_a'`` and
``PR_a' - PR_a`` for every pair of groups, so that ``max(gaps) = max_{a,a'}
|PR_a - PR_a'|``, the violation of :mod:`skfairdp.fairness.metrics`.  The
reduction requires ``violation <= difference_bound`` and optimises the smooth
convex surrogate

    smooth_violation = log_sum_exp_max(gaps, eta) = (1/eta) * logsumexp(eta * gaps),

which satisfies ``max(gaps) <= smooth_violation <= max(gaps) + log(m) / eta``
for ``m`` gaps, so requiring it to be ``<= bound`` is conservative
(digest P4).  The penalty on a positive violation uses
:func:`softplus_penalty`, a smooth hinge (digest P3).

Built-ins (:data:`CONSTRAINTS`; all linear in ``positives``):
``"demographic_parity"``, ``"equalized_odds"``, ``"true_positive_rate_parity"``
(pairwise, both signs) and ``"bounded_group_loss"`` (the group errors).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .objectives import (
    check_statistics,
    group_error_rates,
    group_false_positive_rates,
    group_positive_rates,
    group_true_positive_rates,
    linear_objective_vector,
)

__all__ = [
    "CONSTRAINTS",
    "Constraint",
    "boltzmann_smooth_max",
    "bounded_group_loss_gaps",
    "default_smoothing",
    "demographic_parity_gaps",
    "equalized_odds_gaps",
    "linear_gap_matrix",
    "linear_objective_vector",
    "log_sum_exp_max",
    "resolve_constraint",
    "softplus_penalty",
    "true_positive_rate_parity_gaps",
]

GapFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


# --------------------------------------------------------------------------------------------
# Smooth max and smooth hinge
# --------------------------------------------------------------------------------------------


def _check_positive(value: float, name: str, *, allow_inf: bool = False) -> float:
    value = float(value)
    if not (value > 0 and (allow_inf or math.isfinite(value))):
        kind = "positive number" if allow_inf else "positive finite number"
        raise ValueError(f"{name} must be a {kind}, got {value!r}.")
    return value


def log_sum_exp_max(values: torch.Tensor, eta: float) -> torch.Tensor:
    """Log-sum-exp smooth maximum ``(1/eta) * logsumexp(eta * values)`` over the last axis.

    Convex, ``eta``-smooth (its gradient is ``softmax(eta * values)``, a
    probability vector, so it is also 1-Lipschitz in the l-infinity norm), and
    for ``m`` values::

        max(values) <= log_sum_exp_max(values, eta) <= max(values) + log(m) / eta.

    It over-estimates the maximum, so ``log_sum_exp_max(gaps, eta) <= bound``
    implies ``max(gaps) <= bound``.  Compare :func:`boltzmann_smooth_max`.

    Parameters
    ----------
    values : torch.Tensor of shape (..., m)
        Values to take the smooth maximum of (``m >= 1``).
    eta : float
        Positive sharpness; ``math.inf`` gives the exact maximum.

    Returns
    -------
    torch.Tensor of shape (...)
    """
    eta = _check_positive(eta, "eta", allow_inf=True)
    if values.shape[-1] == 0:
        raise ValueError("log_sum_exp_max needs at least one value.")
    if math.isinf(eta):
        return values.amax(dim=-1)
    return torch.logsumexp(eta * values, dim=-1) / eta


def boltzmann_smooth_max(values: torch.Tensor, eta: float) -> torch.Tensor:
    """The paper's "smooth max" ``sum_i y_i e^{eta y_i} / sum_i e^{eta y_i}``; do **not** use it.

    This is the Boltzmann operator of the paper's Definitions 1.14 / 8.8 (after
    Lange et al. 2014), kept only to document digest pitfall P4 and tested as a
    negative example.  It is unsuitable as a constraint surrogate because:

    * it is **not convex**, so ``h = f + G * max(0, g)`` built from it is not
      convex and the Frank-Wolfe / LOPT guarantees (which assume convex ``g``)
      do not apply;
    * it is a weighted *average* of the values, so it **under-estimates** the
      maximum: ``boltzmann_smooth_max([0.1, 0.05], 10) = 0.0811 < 0.1``, and
      "smoothed violation <= alpha" does not imply "violation <= alpha".

    :func:`log_sum_exp_max` is convex and over-estimates the maximum by at
    most ``log(m) / eta``; it is what the reduction uses.

    Parameters
    ----------
    values : torch.Tensor of shape (..., m)
        Values (``m >= 1``).
    eta : float
        Positive sharpness.

    Returns
    -------
    torch.Tensor of shape (...)
    """
    eta = _check_positive(eta, "eta")
    return (torch.softmax(eta * values, dim=-1) * values).sum(dim=-1)


def softplus_penalty(value: torch.Tensor | float, mu: float) -> torch.Tensor:
    """Smooth hinge ``(1/mu) * log(1 + exp(mu * value))`` replacing ``max(0, value)`` (digest P3).

    Convex, non-decreasing, ``mu/4``-smooth, with slope in ``(0, 1)``, and
    ``max(0, v) <= softplus_penalty(v, mu) <= max(0, v) + log(2) / mu``.
    Computed stably by :func:`torch.nn.functional.softplus`.

    Parameters
    ----------
    value : torch.Tensor or float
        The (smooth) violation minus its bound.
    mu : float
        Positive sharpness.

    Returns
    -------
    torch.Tensor
        Same shape as ``value``.
    """
    mu = _check_positive(mu, "mu")
    if not torch.is_tensor(value):
        value = torch.tensor(float(value), dtype=torch.float64)
    return torch.nn.functional.softplus(value, beta=mu)


def default_smoothing(difference_bound: float, n_terms: int) -> float:
    """The sharpness ``eta`` with ``log(n_terms) / eta = difference_bound / 4``.

    With it, the smooth violation :func:`log_sum_exp_max` over ``n_terms``
    gaps over-estimates the exact violation by at most a quarter of the bound
    (digest §3.7).  With a single gap the log-sum-exp is exact for every
    ``eta``; ``log(2)`` then stands in for ``log(n_terms)`` so the result stays
    positive.

    Parameters
    ----------
    difference_bound : float
        The constraint bound (positive).
    n_terms : int
        The number of gaps, ``len(constraint.gaps(positives, cells))``, both
        signs included.

    Returns
    -------
    float
        ``4 * log(max(n_terms, 2)) / difference_bound``.
    """
    difference_bound = _check_positive(difference_bound, "difference_bound")
    if isinstance(n_terms, bool) or int(n_terms) != n_terms or n_terms < 1:
        raise ValueError(f"n_terms must be a positive integer, got {n_terms!r}.")
    return 4.0 * math.log(max(int(n_terms), 2)) / difference_bound


# --------------------------------------------------------------------------------------------
# Built-in gap functions
# --------------------------------------------------------------------------------------------


def _pairwise_gaps(rates: torch.Tensor) -> torch.Tensor:
    """Signed pairwise differences of the rows of ``rates`` (shape ``(S, G)``).

    Order: the ``S * P`` differences ``rates[s, a] - rates[s, a']`` (statistic
    major, pairs ``a < a'`` in :func:`torch.triu_indices` order), then their
    negatives.  With fewer than two groups there is no pair: one gap, 0.
    """
    n_groups = rates.shape[1]
    if n_groups < 2:
        return (0.0 * rates.sum()).reshape(1)
    first, second = torch.triu_indices(n_groups, n_groups, offset=1, device=rates.device)
    differences = (rates[:, first] - rates[:, second]).reshape(-1)
    return torch.cat([differences, -differences])


def demographic_parity_gaps(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Gaps ``PR_a - PR_a'`` and ``PR_a' - PR_a`` over pairs of groups ``a < a'``.

    ``max`` is ``max_{a,a'} |PR_a - PR_a'|``, the binary case of
    :func:`skfairdp.fairness.metrics.demographic_parity_violation`.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics.

    Returns
    -------
    torch.Tensor of shape (G * (G - 1),)
        All ``+`` differences first, then their negatives (``(1,)`` zeros for
        ``G = 1``).
    """
    return _pairwise_gaps(group_positive_rates(positives, cells).unsqueeze(0))


def equalized_odds_gaps(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Gaps of the true and false positive rates over pairs of groups ``a < a'``, both signs.

    ``max`` is ``max_{a,a'} max(|TPR_a - TPR_a'|, |FPR_a - FPR_a'|)``, the binary
    case of :func:`skfairdp.fairness.metrics.equalized_odds_violation` and the
    paper's Definition 1.13.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics.

    Returns
    -------
    torch.Tensor of shape (2 * G * (G - 1),)
        ``[TPR_a - TPR_a' for pairs, FPR_a - FPR_a' for pairs]`` followed by
        their negatives (``(1,)`` zeros for ``G = 1``).
    """
    rates = torch.stack(
        [group_true_positive_rates(positives, cells), group_false_positive_rates(positives, cells)]
    )
    return _pairwise_gaps(rates)


def true_positive_rate_parity_gaps(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Gaps ``TPR_a - TPR_a'`` and ``TPR_a' - TPR_a`` over pairs of groups ``a < a'``.

    ``max`` is the binary case of
    :func:`skfairdp.fairness.metrics.equal_opportunity_violation`.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics.

    Returns
    -------
    torch.Tensor of shape (G * (G - 1),)
        All ``+`` differences first, then their negatives (``(1,)`` zeros for
        ``G = 1``).
    """
    return _pairwise_gaps(group_true_positive_rates(positives, cells).unsqueeze(0))


def bounded_group_loss_gaps(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Gaps ``err_g - 0``: the violation is the worst group error, and the bound applies to it.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics.

    Returns
    -------
    torch.Tensor of shape (G,)
        :func:`skfairdp.reductions.objectives.group_error_rates`.
    """
    return group_error_rates(positives, cells)


# --------------------------------------------------------------------------------------------
# Constraint records, registry and resolution
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Constraint:
    """A constraint of a CGOO reduction: ``violation(positives, cells) <= bound``.

    Parameters
    ----------
    name : str
        Display name (the registry key for built-ins).
    gaps : callable
        ``gaps(positives, cells) -> torch.Tensor`` of shape ``(m,)``, ``m >= 1``:
        signed differences, each convex (built-ins: affine) in ``positives``,
        whose maximum is the violation.
    linear : bool
        Whether ``gaps`` is affine in ``positives`` for fixed ``cells`` (then
        :func:`linear_gap_matrix` gives ``(A, b)``).
    """

    name: str
    gaps: GapFunction
    linear: bool

    def violation(self, positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        """Exact violation ``gaps(positives, cells).max()`` (a 0-dim tensor)."""
        return self.gaps(positives, cells).max()

    def smooth_violation(
        self, positives: torch.Tensor, cells: torch.Tensor, eta: float
    ) -> torch.Tensor:
        """Smooth violation ``log_sum_exp_max(gaps(positives, cells), eta)`` (a 0-dim tensor)."""
        return log_sum_exp_max(self.gaps(positives, cells), eta)


#: Built-in constraints, by name.
CONSTRAINTS: dict[str, Constraint] = {
    "demographic_parity": Constraint("demographic_parity", demographic_parity_gaps, linear=True),
    "equalized_odds": Constraint("equalized_odds", equalized_odds_gaps, linear=True),
    "true_positive_rate_parity": Constraint(
        "true_positive_rate_parity", true_positive_rate_parity_gaps, linear=True
    ),
    "bounded_group_loss": Constraint("bounded_group_loss", bounded_group_loss_gaps, linear=True),
}
# the name skfairdp.fairness and RaCODPClassifier use for the same constraint
CONSTRAINTS["equal_opportunity"] = CONSTRAINTS["true_positive_rate_parity"]


def resolve_constraint(constraints: str | Constraint | GapFunction) -> Constraint:
    """Turn a name, a :class:`Constraint` or a torch callable into a :class:`Constraint`.

    Parameters
    ----------
    constraints : str, Constraint or callable
        A key of :data:`CONSTRAINTS`; a :class:`Constraint` (returned as is); or
        a callable ``g(positives, cells) -> 1-D tensor of gaps``, each gap
        convex in ``positives`` (treated as non-linear; wrap it in a
        :class:`Constraint` with ``linear=True`` to declare it affine).

    Returns
    -------
    Constraint

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid names.
    TypeError
        For anything else (a list of constraints included: combine them in one
        callable, since they share one bound).
    """
    if isinstance(constraints, Constraint):
        return constraints
    if isinstance(constraints, str):
        try:
            return CONSTRAINTS[constraints]
        except KeyError:
            raise ValueError(
                f"Unknown constraint {constraints!r}; valid names are: "
                f"{', '.join(map(repr, CONSTRAINTS))}."
            ) from None
    if callable(constraints):
        name = getattr(constraints, "__name__", type(constraints).__name__)
        return Constraint(name, constraints, linear=False)
    raise TypeError(
        "constraints must be a name, a Constraint or a callable g(positives, cells), "
        f"got {type(constraints).__name__}."
    )


# --------------------------------------------------------------------------------------------
# Linear constraints as matrices
# --------------------------------------------------------------------------------------------


def _rate_matrix(cells: torch.Tensor, labels: tuple[int, ...]) -> torch.Tensor:
    """``R`` of shape ``(G, K)`` with ``R @ J`` the per-group rate over the given labels."""
    n_groups = cells.shape[0] // 2
    groups = torch.arange(n_groups, device=cells.device)
    denominator = sum(cells[label::2] for label in labels)
    matrix = torch.zeros(n_groups, cells.shape[0], dtype=cells.dtype, device=cells.device)
    for label in labels:
        matrix[groups, 2 * groups + label] = 1.0 / denominator
    return matrix


def _pairwise_matrix(rate_matrices: torch.Tensor) -> torch.Tensor:
    """Rows of :func:`_pairwise_gaps` for rates ``rate_matrices[s] @ J`` (shape ``(S, G, K)``)."""
    n_groups, n_cells = rate_matrices.shape[1], rate_matrices.shape[2]
    if n_groups < 2:
        return rate_matrices.new_zeros(1, n_cells)
    first, second = torch.triu_indices(n_groups, n_groups, offset=1, device=rate_matrices.device)
    differences = (rate_matrices[:, first] - rate_matrices[:, second]).reshape(-1, n_cells)
    return torch.cat([differences, -differences])


def _demographic_parity_matrix(cells: torch.Tensor) -> torch.Tensor:
    return _pairwise_matrix(_rate_matrix(cells, (0, 1)).unsqueeze(0))


def _equalized_odds_matrix(cells: torch.Tensor) -> torch.Tensor:
    return _pairwise_matrix(torch.stack([_rate_matrix(cells, (1,)), _rate_matrix(cells, (0,))]))


def _true_positive_rate_parity_matrix(cells: torch.Tensor) -> torch.Tensor:
    return _pairwise_matrix(_rate_matrix(cells, (1,)).unsqueeze(0))


def _bounded_group_loss_affine(cells: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    sizes = cells[0::2] + cells[1::2]
    n_groups = sizes.shape[0]
    groups = torch.arange(n_groups, device=cells.device)
    matrix = torch.zeros(n_groups, cells.shape[0], dtype=cells.dtype, device=cells.device)
    matrix[groups, 2 * groups] = 1.0 / sizes
    matrix[groups, 2 * groups + 1] = -1.0 / sizes
    return matrix, cells[1::2] / sizes


def _zero_offset(
    matrix: Callable[[torch.Tensor], torch.Tensor],
) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    def affine(cells: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = matrix(cells)
        return a, a.new_zeros(a.shape[0])

    return affine


_LINEAR_GAPS = {
    demographic_parity_gaps: _zero_offset(_demographic_parity_matrix),
    equalized_odds_gaps: _zero_offset(_equalized_odds_matrix),
    true_positive_rate_parity_gaps: _zero_offset(_true_positive_rate_parity_matrix),
    bounded_group_loss_gaps: _bounded_group_loss_affine,
}


def linear_gap_matrix(
    constraint: str | Constraint, cells: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Affine form ``(A, b)`` of a linear constraint: ``gaps(J, cells) == A @ J + b`` for all ``J``.

    For a linear program over mixture weights ``alpha`` of atoms with
    statistics ``J_atoms`` (shape ``(K, T)``), the constraint "exact violation
    ``<= bound``" is ``A @ (J_atoms @ alpha) + b <= bound`` row-wise.  Built-in
    constraints are written out in closed form; another :class:`Constraint`
    declared ``linear=True`` is differentiated at ``J = 0`` (exact for an
    affine function).

    Parameters
    ----------
    constraint : str or Constraint
        A linear constraint (resolved with :func:`resolve_constraint`).
    cells : torch.Tensor of shape (K,)
        Cell proportions ``q``.

    Returns
    -------
    A : torch.Tensor of shape (m, K)
    b : torch.Tensor of shape (m,)
        Same dtype as ``cells``; rows in the order of ``constraint.gaps``.

    Raises
    ------
    ValueError
        If the constraint is not linear.
    """
    constraint = resolve_constraint(constraint)
    if not constraint.linear:
        raise ValueError(
            f"Constraint {constraint.name!r} is not linear: it has no (A, b) representation."
        )
    cells = cells.detach()
    zeros = torch.zeros_like(cells)
    check_statistics(zeros, cells)
    builder = _LINEAR_GAPS.get(constraint.gaps)
    if builder is not None:
        return builder(cells)
    offset = constraint.gaps(zeros, cells).detach()
    matrix = torch.autograd.functional.jacobian(lambda j: constraint.gaps(j, cells), zeros)
    return matrix.reshape(offset.shape[0], cells.shape[0]).detach(), offset
