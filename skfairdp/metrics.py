"""Public fairness metrics and scorers of skfairdp.

Re-exports the violation metrics and the scikit-learn scorers of
:mod:`skfairdp.fairness`::

    from skfairdp.metrics import demographic_parity_violation, demographic_parity_scorer
"""

from .fairness.metrics import (
    demographic_parity_violation,
    equal_opportunity_violation,
    equalized_odds_violation,
)
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
    "make_fairness_scorer",
]
