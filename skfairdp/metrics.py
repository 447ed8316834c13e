"""Public fairness metrics and scorers of skfairdp.

Re-exports the violation metrics, the scikit-learn scorers and the sampling
floor of a violation (:func:`fair_violation_floor`) of :mod:`skfairdp.fairness`::

    from skfairdp.metrics import demographic_parity_violation, demographic_parity_scorer
"""

from .fairness.metrics import (
    demographic_parity_violation,
    equal_opportunity_violation,
    equalized_odds_violation,
)
from .fairness.resolution import fair_violation_floor
from .fairness.scorers import (
    FairnessScorer,
    demographic_parity_scorer,
    equal_opportunity_scorer,
    equalized_odds_scorer,
    make_fairness_scorer,
)

__all__ = [
    "FairnessScorer",
    "demographic_parity_scorer",
    "demographic_parity_violation",
    "equal_opportunity_scorer",
    "equal_opportunity_violation",
    "equalized_odds_scorer",
    "equalized_odds_violation",
    "fair_violation_floor",
    "make_fairness_scorer",
]
