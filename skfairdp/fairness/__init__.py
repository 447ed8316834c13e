"""Fairness layer: sensitive-feature encoding, rate constraints, violation metrics and scorers.

This subpackage depends only on numpy, pandas and scikit-learn; it knows
nothing about privacy or torch.
"""

from .groups import (
    GroupEncoder,
    encode_sensitive_features,
)
from .metrics import (
    demographic_parity_violation,
    equal_opportunity_violation,
    equalized_odds_violation,
)
from .rates import (
    Cells,
    DemographicParity,
    EqualizedOdds,
    EqualOpportunity,
    FalseNegativeRate,
    RateConstraint,
    RateProgram,
    compile_rate_constraints,
)
from .resolution import fair_violation_floor
from .scorers import (
    FairnessScorer,
    demographic_parity_scorer,
    equal_opportunity_scorer,
    equalized_odds_scorer,
    make_fairness_scorer,
)

__all__ = [
    "Cells",
    "DemographicParity",
    "EqualOpportunity",
    "EqualizedOdds",
    "FalseNegativeRate",
    "RateConstraint",
    "RateProgram",
    "compile_rate_constraints",
    "FairnessScorer",
    "GroupEncoder",
    "demographic_parity_scorer",
    "demographic_parity_violation",
    "encode_sensitive_features",
    "equal_opportunity_scorer",
    "equal_opportunity_violation",
    "equalized_odds_scorer",
    "equalized_odds_violation",
    "fair_violation_floor",
    "make_fairness_scorer",
]
