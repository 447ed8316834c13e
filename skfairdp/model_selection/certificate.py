"""The certificate of a bound-first search: one release on rows the selection never saw.

After the search has chosen its model, the model predicts the certification rows
(split off at random before anything ran, used by nothing else) and their
``(group x true class x predicted class)`` counts are released once with Gaussian
noise (L2 sensitivity 1). Intervals for the model's violation and accuracy then
follow from that one release as from any
:class:`~skfairdp.metrics.PrivateMetricFrame`: sampling and noise, at the stated
confidence (equalized odds splits it over its two differences).

Why it is not optimistic: the selected model is a function of the training and
validation rows and of the search's noise only, so, given the model, the
certification rows are a fresh sample of the population it will decide about. The
interval covers the selected model's population violation with the stated
confidence, whatever the selection did, as for a model fixed in advance (the
winner's curse inflates the *validation* scores, not these).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ..evaluation.violations import violation_interval
from ..privacy import noisy_count
from .statistics import confusion_cells, noisy_statistics
from .validation import validation_frame

__all__ = ["Certificate", "certify"]


@dataclasses.dataclass(frozen=True)
class Certificate:
    """What a bound-first search certifies about the model it selected.

    Attributes
    ----------
    fairness : str
        The notion.
    max_violation : float
        The stated bound.
    confidence : float
        Of both intervals.
    violation : float
        The noisy point value on the certification rows.
    violation_interval : tuple of float
        ``(lower, upper)`` for the population's violation.
    accuracy : float
        The noisy point value on the certification rows.
    accuracy_interval : tuple of float
        ``(lower, upper)`` for the population's accuracy.
    meets_bound : bool
        Whether the interval's upper end is within ``max_violation``: then the
        model meets the bound on new rows with probability at least ``confidence``.
    n_rows : int
        Certification rows (public: a share of the table's size).
    noise_multiplier : float
        The std of the noise on each released count.
    """

    fairness: str
    max_violation: float
    confidence: float
    violation: float
    violation_interval: tuple[float, float]
    accuracy: float
    accuracy_interval: tuple[float, float]
    meets_bound: bool
    n_rows: int
    noise_multiplier: float


def certify(model, X, y, groups, group_values, *, encoder, fairness: str, max_violation: float,
            confidence: float, noise_multiplier: float, delta: float, random, recorder,
            seed: int | None, secure_mode: bool):  # fmt: skip
    """Release the certification rows' noisy table once; ``(Certificate, frame)``.

    ``groups`` are the encoded groups (``encoder``'s codes), ``group_values`` the
    raw ones (for a model that predicts with the group).
    """
    y_pred = np.asarray(model.predict(X, sensitive_features=group_values))
    cells = confusion_cells(model.classes_, y, y_pred, groups, encoder.n_groups_)
    noisy, _ = noisy_count(
        torch.as_tensor(cells, dtype=torch.float64), noise_multiplier, random, recorder
    )
    noisy = noisy.numpy()
    stats = noisy_statistics(noisy, fairness, "accuracy")
    frame = validation_frame(noisy, encoder, noise_multiplier, delta, seed, secure_mode)
    bounds = violation_interval(frame, fairness, confidence)
    if model.is_constant():  # a constant's violation is 0 on any rows, not an estimate
        stats["violation"], bounds = 0.0, type(bounds)(0.0, 0.0)
    accuracy = tuple(map(float, frame.with_metrics("accuracy").interval("overall", confidence)))
    certificate = Certificate(
        fairness=fairness,
        max_violation=float(max_violation),
        confidence=float(confidence),
        violation=stats["violation"],
        violation_interval=(bounds.lower, bounds.upper),
        accuracy=stats["score"],
        accuracy_interval=accuracy,
        meets_bound=bool(bounds.upper <= max_violation),
        n_rows=len(y),
        noise_multiplier=float(noise_multiplier),
    )
    return certificate, frame
