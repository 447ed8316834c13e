"""The selection order of :class:`~.fair_search.FairModelSearch`: a total order on one
run's noisy validation statistics, as Papernot & Steinke's theorem requires, and which
candidates bound their own violation."""

from __future__ import annotations

__all__ = [
    "OUTSIDE", "POINT_WITHIN", "QUALIFIED", "SELF_BOUNDED", "SELF_BOUNDING_FAMILIES",
    "SELF_BOUND_SHARE", "TIER_NAMES", "selection_tier", "self_bounded",
]  # fmt: skip

#: tiers of :func:`selection_tier` (larger is better)
QUALIFIED, SELF_BOUNDED, POINT_WITHIN, OUTSIDE = 3, 2, 1, 0
TIER_NAMES = {
    QUALIFIED: "qualified", SELF_BOUNDED: "self_bounded", POINT_WITHIN: "point_within",
    OUTSIDE: "outside",
}  # fmt: skip
#: RaCO-DP and CGOO promise their own bound on their training rows (RaCO-DP's
#: enforced tolerance, CGOO's restricted master on its released statistics); a run
#: whose own bound is at most this share of the stated one leaves the rest of the
#: bound to the sampling error of new rows (tier ``SELF_BOUNDED``; 0.5 until issue 36's
#: second round, when the default candidates moved to 0.6 of the bound: families.py)
SELF_BOUND_SHARE = 0.6
#: the families whose knob is a bound they enforce on their training rows
SELF_BOUNDING_FAMILIES = ("raco", "cgoo")


def self_bounded(params: dict, max_violation: float) -> bool:
    """Whether a run's candidate enforces, on its own training rows, a bound of at most
    :data:`SELF_BOUND_SHARE` of ``max_violation`` (public: the candidate's parameters)."""
    knob = params.get("knob")
    return (
        params.get("family") in SELF_BOUNDING_FAMILIES
        and knob is not None
        and float(knob) <= SELF_BOUND_SHARE * float(max_violation) + 1e-12
    )


def selection_tier(
    stats: dict, upper: float, max_violation: float, *, lower: float = 0.0,
    bounded: bool = False,
) -> tuple:  # fmt: skip
    """Total order on one run's noisy validation statistics (larger is better).

    A run whose violation interval's upper end is within the bound (``QUALIFIED``)
    beats a run of a candidate that enforces a tighter bound on its own training rows
    (``bounded``, :func:`self_bounded`) whose interval's lower end is within the bound
    (the validation rows do not contradict it: ``SELF_BOUNDED``), which beats one whose
    noisy point value is within the bound (``POINT_WITHIN``), which beats the rest
    (``OUTSIDE``); the noisy accuracy orders runs within the first three tiers, the
    upper end within the last.
    """
    if upper <= max_violation:
        return (QUALIFIED, stats["score"])
    if bounded and lower <= max_violation:
        return (SELF_BOUNDED, stats["score"])
    if stats["violation"] <= max_violation:
        return (POINT_WITHIN, stats["score"])
    return (OUTSIDE, -upper)
