"""Public fairness metrics and scorers of skfairdp.

Re-exports the violation metrics, the scikit-learn scorers and the sampling
floor of a violation (:func:`fair_violation_floor`) of :mod:`skfairdp.fairness`,
and the private evaluation :class:`PrivateMetricFrame` of
:mod:`skfairdp.evaluation` (imported on first use: it loads torch)::

    from skfairdp.metrics import demographic_parity_violation, demographic_parity_scorer
    from skfairdp.metrics import PrivateMetricFrame
"""

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from .evaluation import PrivateMetricFrame

__all__ = [
    "FairnessScorer",
    "PrivateMetricFrame",
    "demographic_parity_scorer",
    "demographic_parity_violation",
    "equal_opportunity_scorer",
    "equal_opportunity_violation",
    "equalized_odds_scorer",
    "equalized_odds_violation",
    "fair_violation_floor",
    "make_fairness_scorer",
]


def __getattr__(name: str):
    if name == "PrivateMetricFrame":  # on first use: the release imports torch
        from .evaluation import PrivateMetricFrame

        globals()[name] = PrivateMetricFrame
        return PrivateMetricFrame
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
