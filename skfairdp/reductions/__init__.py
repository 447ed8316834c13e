"""Reductions: constrained group-objective optimisation (CGOO) over mixtures of classifiers.

:mod:`skfairdp.reductions.objectives` and :mod:`skfairdp.reductions.constraints`
hold the pure math layer: objectives ``f`` and constraints ``g`` as differentiable
torch functions of the joint group statistics ``(positives, cells)``;
:mod:`skfairdp.reductions.regression` those of the regression mode (group losses).
"""

from .estimator import CGOOReduction
from .small_cells import SmallCellWarning

__all__ = ["CGOOReduction", "SmallCellWarning"]
