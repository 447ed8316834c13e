"""The regression mode of a CGOO reduction: per-group squared losses of least-squares atoms.

Alabi's case study §1.3.1 (digest ``seed-002-cgoo.md`` §2.6, §3.3): the oracle
minimises ``(1/n) sum_i w_group(i) (f(x_i) - y_i)^2``, weighted least squares
with one weight per group, and the reduction steers the weights to meet an
objective of the **group losses**

    ``L_g(f) = (1/n) sum_{i in group g} min((f(x_i) - y_i)^2, loss_bound)``

(joint, like the classification statistics: a group's mean loss is ``L_g / p_g``
with ``p_g`` the released group frequency). Clipping each row's squared residual
at the public ``loss_bound`` bounds what one row adds to the released vector:
one coordinate, by at most ``loss_bound`` (its L2 sensitivity; ``max_weight *
loss_bound`` when the rows carry weights, which multiply their losses).

A weighted least-squares fit can only take non-negative weights (a negative
weight makes the problem unbounded), so the objective and the constraint must be
non-decreasing in every group loss: then the direction ``grad h`` is ``>= 0``
and the oracle's weights are ``w_group(i) / max w``. The built-ins are:

- objectives (:data:`REGRESSION_OBJECTIVES`): ``"mean_loss"`` (``sum_g L_g``,
  linear) and ``"worst_group_loss"`` (log-sum-exp smooth max of the group mean
  losses);
- constraint (:data:`REGRESSION_CONSTRAINTS`): ``"bounded_group_loss"`` (the
  gaps are the group mean losses: every group's mean loss ``<= bound``).

A torch callable ``f(losses, groups)`` (or ``g(losses, groups) -> gaps``) is
accepted too; :class:`GroupLosses` raises a ``ValueError`` when its direction
has a negative entry. Everything here except :meth:`GroupLosses.sums` reads
released values only.
"""

from __future__ import annotations

import numpy as np
import torch

from .atoms import WeightedCells
from .constraints import Constraint
from .frank_wolfe import PenalisedObjective
from .objectives import DEFAULT_TEMPERATURE, Objective

__all__ = [
    "REGRESSION_CONSTRAINTS",
    "REGRESSION_OBJECTIVES",
    "GroupLossProblem",
    "GroupLosses",
    "bounded_group_loss_gaps",
    "check_monotone",
    "check_problem_monotone",
    "clipped_squared_errors",
    "group_mean_losses",
    "mean_loss",
    "resolve_regression_constraint",
    "resolve_regression_objective",
    "worst_group_loss",
]


# --------------------------------------------------------------------------------------------
# Objectives and constraints over group losses
# --------------------------------------------------------------------------------------------


def group_mean_losses(losses: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """Each group's mean loss ``L_g / p_g`` (``losses`` joint, ``groups`` the group frequencies)."""
    return losses / groups


def mean_loss(losses: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """The mean loss over all rows, ``sum_g L_g`` (linear, non-decreasing)."""
    return losses.sum()


def worst_group_loss(
    losses: torch.Tensor, groups: torch.Tensor, temperature: float = DEFAULT_TEMPERATURE
) -> torch.Tensor:
    """Smooth worst-group mean loss ``(1/t) logsumexp(t L_g / p_g)`` (convex, non-decreasing).

    ``max_g L_g/p_g <= value <= max_g L_g/p_g + log(G) / t``.
    """
    return torch.logsumexp(temperature * group_mean_losses(losses, groups), dim=0) / temperature


def bounded_group_loss_gaps(losses: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """Gaps ``L_g / p_g``: the violation is the worst group's mean loss (linear)."""
    return group_mean_losses(losses, groups)


#: Built-in objectives of the regression mode, by name.
REGRESSION_OBJECTIVES: dict[str, Objective] = {
    "mean_loss": Objective("mean_loss", mean_loss, linear=True, lipschitz=1.0),
    "worst_group_loss": Objective(
        "worst_group_loss", worst_group_loss, linear=False, lipschitz=1.0
    ),
}
#: Built-in constraints of the regression mode, by name.
REGRESSION_CONSTRAINTS: dict[str, Constraint] = {
    "bounded_group_loss": Constraint("bounded_group_loss", bounded_group_loss_gaps, linear=True),
}


def resolve_regression_objective(objective) -> Objective:
    """A name of :data:`REGRESSION_OBJECTIVES`, or a torch callable ``f(losses, groups)``."""
    if isinstance(objective, Objective):
        return objective
    if isinstance(objective, str):
        if objective not in REGRESSION_OBJECTIVES:
            raise ValueError(
                f"objective={objective!r} is not a regression objective; with a regressor as "
                f"the oracle, objective is one of {sorted(REGRESSION_OBJECTIVES)} or a torch "
                "callable f(losses, groups) non-decreasing in every group loss"
            )
        return REGRESSION_OBJECTIVES[objective]
    name = getattr(objective, "__name__", type(objective).__name__)
    return Objective(name, objective, linear=False, lipschitz=None)


def resolve_regression_constraint(constraints) -> Constraint:
    """A name of :data:`REGRESSION_CONSTRAINTS`, or a torch callable ``g(losses, groups)``."""
    if isinstance(constraints, Constraint):
        return constraints
    if isinstance(constraints, str):
        if constraints not in REGRESSION_CONSTRAINTS:
            raise ValueError(
                f"constraints={constraints!r} is not a regression constraint; with a regressor "
                f"as the oracle, constraints is one of {sorted(REGRESSION_CONSTRAINTS)} or a "
                "torch callable g(losses, groups) -> gaps, each non-decreasing in every group loss"
            )
        return REGRESSION_CONSTRAINTS[constraints]
    name = getattr(constraints, "__name__", type(constraints).__name__)
    return Constraint(name, constraints, linear=False)


def _affine(function, groups: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(jacobian, value)`` of ``losses -> function(losses, groups)`` at 0 (exact if affine)."""
    zeros = torch.zeros_like(groups)
    value = function(zeros, groups).detach()
    jacobian = torch.autograd.functional.jacobian(lambda losses: function(losses, groups), zeros)
    return jacobian.reshape(-1, groups.shape[0]).detach(), value.reshape(-1)


class GroupLossProblem(PenalisedObjective):
    """:class:`PenalisedObjective` over the ``G`` group losses (``cells`` = group frequencies).

    Only the linear forms differ from classification's (any number of groups;
    no (group, label) layout): the Jacobians of the affine objective and gaps.
    """

    def linear_forms(self):
        if not (self.objective.linear and self.constraint.linear):
            return None
        groups = torch.as_tensor(self.cells, dtype=torch.float64)
        c, _ = _affine(self.objective.function, groups)
        A, b = _affine(self.constraint.gaps, groups)
        return c[0].numpy(), A.numpy(), b.numpy()


# --------------------------------------------------------------------------------------------
# The statistics of the regression mode
# --------------------------------------------------------------------------------------------


def clipped_squared_errors(predictions, y, loss_bound: float) -> np.ndarray:
    """Per-row ``min((prediction - y)^2, loss_bound)``; a non-finite residual counts ``loss_bound``.

    Every value is in ``[0, loss_bound]``: one row moves one group's loss sum by at
    most ``loss_bound``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        squared = (np.asarray(predictions, dtype=np.float64) - np.asarray(y, dtype=np.float64)) ** 2
    return np.where(np.isfinite(squared), np.minimum(squared, loss_bound), loss_bound)


class GroupLosses(WeightedCells):
    """What the shared reduction loop needs to know about the regression statistics.

    Parameters
    ----------
    groups : ndarray of int64, shape (n,)
        Group code of each row (the "cells" of the regression mode).
    y : ndarray of float64, shape (n,)
    n_groups : int
    loss_bound : float
        Public bound on one row's squared residual.
    weights : ndarray of float64, shape (n,), or None
        ``sample_weight`` (None: every row weighs 1).
    max_weight : float, default=1.0
        Public bound on the weights.
    """

    #: What a cell is, in warnings.
    cell_name = "group"

    def __init__(
        self,
        groups: np.ndarray,
        y: np.ndarray,
        n_groups: int,
        loss_bound: float,
        weights: np.ndarray | None = None,
        max_weight: float = 1.0,
    ):
        super().__init__(groups, n_groups, weights, max_weight)
        self.y = np.asarray(y, dtype=np.float64)
        self.loss_bound = float(loss_bound)

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of one atom's released loss sums: one row, one group, at most
        ``max_weight * loss_bound``."""
        return self.max_weight * self.loss_bound

    @property
    def diameter(self) -> float:
        """``sum_g loss_bound * p_g``: the l1 diameter of the statistics' box."""
        return self.loss_bound

    def free_atoms(self, frequencies: np.ndarray):
        """No atom is free: every predictor's group losses depend on the data."""
        return [], [], np.zeros(0)

    def free_response(self, direction: np.ndarray) -> int | None:
        """Never a free atom: every direction calls the oracle."""
        return None

    def task(
        self, direction: np.ndarray, frequencies: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(y, w_group(i) / max w * weight_i)``: weighted least squares minimising ``<L(f), w>``.

        ``frequencies`` (the released group frequencies) is not used: the group
        weights are scaled by their largest, as the paper's case study does.

        Raises
        ------
        ValueError
            If ``direction`` has a negative entry: the objective or the constraint
            is not non-decreasing in the group losses.
        """
        check_monotone(direction)
        scale = float(np.max(direction))
        weights = direction / scale if scale > 0 else np.ones_like(direction)
        return self.y, np.clip(weights, 0.0, 1.0)[self.cells] * self.weights

    def sums(self, atom, X) -> np.ndarray:
        """Exact per-group (weighted) sums of the atom's clipped squared residuals."""
        losses = clipped_squared_errors(atom.predict(X), self.y, self.loss_bound)
        return np.bincount(self.cells, weights=self.weights * losses, minlength=self.n_cells)

    def clip(self, statistics: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
        """Released statistics into their box ``[0, loss_bound * p_g]`` (post-processing)."""
        return np.clip(statistics, 0.0, self.loss_bound * frequencies)


def check_monotone(direction: np.ndarray, what: str = "the direction of the smoothed problem"):
    """Raise a ``ValueError`` if a gradient of the regression mode has a negative entry.

    Parameters
    ----------
    direction : ndarray of shape (G,)
        A gradient in the group losses (the oracle's direction, or the gradient of
        the objective or of one gap).
    what : str
        What ``direction`` is, for the message.
    """
    direction = np.asarray(direction, dtype=np.float64)
    if not np.isfinite(direction).all():
        raise ValueError(
            f"{what} is not finite ({direction.tolist()!r}): the objective or the constraint "
            "is not differentiable at the released statistics"
        )
    tolerance = 1e-12 * max(1.0, float(np.max(np.abs(direction))))
    negative = np.flatnonzero(direction < -tolerance)
    if negative.size:
        raise ValueError(
            "in regression mode the objective and the constraint must be non-decreasing in "
            f"every group loss; {what} is {direction.tolist()!r}, negative for group index "
            f"{negative.tolist()!r}. Weighted least squares cannot put a negative weight on "
            "a group (the problem would be unbounded): use "
            f"{sorted(REGRESSION_OBJECTIVES)} / {sorted(REGRESSION_CONSTRAINTS)} or monotone "
            "callables."
        )


def check_problem_monotone(problem: PenalisedObjective, points) -> None:
    """Check that the objective and every gap are non-decreasing at public ``points``.

    Then ``h = f + G softplus(LSE(gaps) - bound)`` is non-decreasing too (the
    log-sum-exp and the smooth hinge are), whatever the penalty; a check of ``h``
    alone could miss a decreasing objective that the penalty outweighs there.

    Parameters
    ----------
    problem : PenalisedObjective
    points : iterable of ndarray of shape (G,)
        Group-loss vectors that read no data (e.g. corners of the statistics' box).
    """
    groups = torch.as_tensor(problem.cells, dtype=torch.float64)
    for point in points:
        at = torch.as_tensor(point, dtype=torch.float64)
        gradient = torch.autograd.functional.jacobian(
            lambda losses: problem.objective.function(losses, groups), at
        )
        check_monotone(gradient.numpy(), f"the gradient of the objective at {at.tolist()!r}")
        jacobian = torch.autograd.functional.jacobian(
            lambda losses: problem.constraint.gaps(losses, groups), at
        )
        for row in jacobian.reshape(-1, groups.shape[0]).numpy():
            check_monotone(row, f"the gradient of a constraint gap at {at.tolist()!r}")
