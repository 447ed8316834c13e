"""The fairness violations of skfairdp.metrics read from a PrivateMetricFrame, with intervals.

For a binary classifier each violation is a between-group difference of
confusion-matrix rates (fairlearn's ``difference()``): demographic parity of the
selection rate, equal opportunity of the true positive rate, equalized odds the
larger of the true and false positive rates' differences. The interval of a
single difference is the frame's ``interval("difference")``. That of equalized
odds combines the two by Bonferroni: each difference's interval at confidence
``1 - alpha / 2`` holds with probability ``1 - alpha / 2``, so both hold with
probability at least ``1 - alpha``, and then the larger difference lies between
the larger lower bound and the larger upper bound.

All of it reads the frame's one release: :meth:`PrivateMetricFrame.with_metrics`
adds the rates a violation needs at no cost.
"""

from __future__ import annotations

from .frame import Interval, PrivateMetricFrame

__all__ = ["NOTIONS", "violation", "violation_interval"]

#: Each notion's rates, whose largest between-group difference is the violation.
NOTIONS: dict[str, tuple[str, ...]] = {
    "demographic_parity": ("selection_rate",),
    "equal_opportunity": ("true_positive_rate",),
    "equalized_odds": ("true_positive_rate", "false_positive_rate"),
}


def _rates(frame: PrivateMetricFrame, notion: str) -> PrivateMetricFrame:
    if notion not in NOTIONS:
        raise ValueError(f"notion must be one of {sorted(NOTIONS)}, got {notion!r}")
    return frame.with_metrics({name: name for name in NOTIONS[notion]})


def violation(frame: PrivateMetricFrame, notion: str) -> float:
    """The violation ``notion`` of the frame's released table (post-processing).

    Parameters
    ----------
    frame : PrivateMetricFrame
    notion : {"demographic_parity", "equal_opportunity", "equalized_odds"}

    Returns
    -------
    float
    """
    return float(_rates(frame, notion).difference().max())


def violation_interval(
    frame: PrivateMetricFrame, notion: str, confidence: float = 0.95
) -> Interval:
    """Bounds on the population's violation under sampling and the frame's noise.

    Parameters
    ----------
    frame : PrivateMetricFrame
    notion : {"demographic_parity", "equal_opportunity", "equalized_odds"}
    confidence : float in (0, 1), default=0.95
        For equalized odds each of its two differences gets ``(1 + confidence) / 2``.

    Returns
    -------
    Interval
        ``(lower, upper)`` as floats.
    """
    rates = _rates(frame, notion)
    each = confidence if len(NOTIONS[notion]) == 1 else 1 - (1 - confidence) / len(NOTIONS[notion])
    lower, upper = rates.interval("difference", each)
    return Interval(float(lower.max()), float(upper.max()))
