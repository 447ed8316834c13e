"""Can the validation rows certify the bound at all? If not, only self-bounded runs.

:class:`~.fair_search.FairModelSearch` selects on the upper end of each run's
violation interval on the validation part. On a table whose smallest group has a
few hundred validation rows, that interval is wider than the bound for *any*
useful model, a perfectly fair one included: no run can qualify (issue 36: on the
zoo no run qualified in 284 of 300 searches), and a run of a candidate that does
not bound its own violation (DP-FERMI) can then win only by a noisy point value,
or fall back to the majority class.

This module decides that from a release the search makes anyway (the noisy
``(group x label)`` counts of the training and validation parts, whose label
marginal also gives the majority-class fallback its class), and restricts the
runs to the candidates that enforce a tighter bound on their own training rows
(:func:`self_bounded_space`). The decision is post-processing of that release,
and every run of the restricted space is covered by the fit event planned for the
whole space, so the search's event and its price are the same either way: the
release, then ``RepeatAndSelectDpEvent`` of a run whose RDP curve is at most the
planned cover's whatever the release said (adaptive composition, Mironov 2017,
Prop. 1), then the certificate.
"""

from __future__ import annotations

import numpy as np

from ..evaluation.violations import violation_interval
from .tiers import SELF_BOUNDING_FAMILIES, self_bounded
from .validation import validation_frame

__all__ = ["STRATEGIES", "best_case_upper", "self_bounded_space"]

STRATEGIES = ("auto", "search")
#: the rates of the hypothetical fair model whose interval decides: a model of moderate
#: skill, equal in every group (DP: the selection rate is the noisy base rate, within
#: these bounds; EO: these true- and false-positive rates)
DP_RATE_BOUNDS = (0.2, 0.8)
EO_RATES = (0.25, 0.75)  # (false-positive rate, true-positive rate)


def self_bounded_space(spaces: list[dict], max_violation: float) -> list | None:
    """The part of the search space whose candidates are self-bounded
    (:func:`~.tiers.self_bounded`; one space per family, its listed knobs); None if the
    space has none (the whole space is searched)."""
    restricted = []
    for family in SELF_BOUNDING_FAMILIES:
        knobs = sorted({
            float(knob)
            for space in spaces
            if family in space.get("family", ["dpfermi"])
            for knob in space.get("knob", [None])
            if not hasattr(knob, "rvs")
            and self_bounded({"family": family, "knob": knob}, max_violation)
        })  # fmt: skip
        if knobs:
            restricted.append({"family": [family], "knob": knobs})
    return restricted or None


def best_case_cells(counts: np.ndarray, share: float, fairness: str) -> np.ndarray:
    """Expected validation cells ``[group, true, predicted]`` of a fair model (see
    :data:`DP_RATE_BOUNDS`, :data:`EO_RATES`) on ``share`` of the rows that ``counts``
    (noisy ``[group, label]``, negatives clipped to 0) counted."""
    expected = np.maximum(np.asarray(counts, dtype=np.float64), 0.0) * float(share)
    if fairness == "demographic_parity":
        base = expected[:, 1].sum() / max(expected.sum(), 1.0)
        rates = np.full(2, float(np.clip(base, *DP_RATE_BOUNDS)))
    else:
        rates = np.asarray(EO_RATES)
    positive = expected * rates[None, :]
    return np.stack([expected - positive, positive], axis=2)


def best_case_upper(
    counts: np.ndarray, share: float, fairness: str, *, noise_multiplier: float,
    delta: float, confidence: float, encoder, seed: int | None, secure_mode: bool,
) -> float:  # fmt: skip
    """Upper end of the violation interval a fair model (violation 0) of moderate skill
    would get from the validation part's release: wider than the bound means no run can
    qualify. Post-processing of the released ``counts``."""
    cells = best_case_cells(counts, share, fairness)
    frame = validation_frame(cells, encoder, noise_multiplier, delta, seed, secure_mode)
    return float(violation_interval(frame, fairness, confidence).upper)
