"""What the baselines refuse or warn about: missing groups, FairLens' inputs and privacy caveat."""

from __future__ import annotations

import warnings

import numpy as np

from ..fairness.routing import routing_hint


class UnboundedSensitivityWarning(UserWarning):
    """A fit whose per-sample contributions are coupled, so ``C0`` does not bound sensitivity."""


def groups_required(why: str) -> str:
    """The error of a fit without ``sensitive_features`` by an estimator that needs them."""
    return (
        f"sensitive_features is required: {why}. Pass fit(X, y, sensitive_features=...). "
        + routing_hint()
    )


def check_two_groups_binary(group_encoder, classes: np.ndarray) -> None:
    """FairLens' regularisers compare two groups and use the positive-class probability."""
    if group_encoder.n_groups_ != 2:
        raise ValueError(
            "FairLensClassifier supports exactly 2 groups in sensitive_features; got "
            f"{group_encoder.n_groups_} ({list(group_encoder.group_labels_)})"
        )
    if len(classes) != 2:
        raise ValueError(
            "Only binary classification is supported. The type of the target is "
            f"multiclass ({len(classes)} classes in y); FairLensClassifier's R2 "
            "regulariser uses the positive-class probability."
        )


def warn_unbounded_sensitivity(stacklevel: int) -> None:
    """FairLens' privacy caveat, warned by every private fit."""
    warnings.warn(
        "FairLensClassifier's regularisers couple the samples of a batch, so the "
        "per-sample clipping bound does not bound the sensitivity: privacy_spent_ is "
        "the DP-SGD accounting reported in the literature for this baseline, not a "
        "proven guarantee. Use GlobalScalingDPClassifier or DPSGDFClassifier for a "
        "private model.",
        UnboundedSensitivityWarning,
        stacklevel=stacklevel + 1,
    )
