"""The one release of a private evaluation: the (group x y_true x y_pred) count table.

Each evaluation row falls in exactly one cell (its group, its true label, its
prediction), so the table is a histogram: adding or removing one row moves one
cell by the row's weight, at most ``max_sample_weight`` (1 without weights).
That bound is the table's L2 (and L1) sensitivity under add/remove-one
neighbouring (``privacy_unit="record"``). The table gets Gaussian noise of std
``noise_multiplier * sensitivity``, the multiplier being the smallest whose
``GaussianDpEvent`` the PLD accountant prices at most ``epsilon`` at ``delta``.
Every metric, interval and plot of :class:`~skfairdp.metrics.PrivateMetricFrame`
is computed from the released table: post-processing, free.

What is taken as public: the number of rows (it sets ``delta="auto"``, as for
every skfairdp fit), the group domain (``sensitive_values`` when declared, else
the groups observed, as the estimators do), ``pos_label`` and the weight bound.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import column_or_1d

from ..fairness.groups import GroupEncoder, encode_sensitive_features
from ..fairness.inputs import read_sensitive_features
from ..privacy import (
    EventRecorder,
    RandomSource,
    calibrate_noise_multiplier,
    gaussian_release_event,
    noisy_histogram,
    resolve_delta,
)

__all__ = ["EvaluationData", "Release", "check_evaluation_data", "exact_table", "release_table"]

#: A single Gaussian release is priced exactly by PLD (RDP's conversion is looser).
ACCOUNTING = {"accountant": "pld", "privacy_unit": "record"}


@dataclass(frozen=True)
class EvaluationData:
    """Validated inputs: 0/1 labels, group codes, weights."""

    y_true: np.ndarray
    y_pred: np.ndarray
    groups: np.ndarray
    encoder: GroupEncoder
    sample_weight: np.ndarray | None


@dataclass(frozen=True)
class Release:
    """What the release produced and what it cost."""

    table: np.ndarray  # (n_groups, 4): tn, fp, fn, tp per group (noisy unless epsilon=inf)
    noise_multiplier: float
    sensitivity: float
    delta: float
    event: dp_accounting.DpEvent

    @property
    def noise_std(self) -> float:
        """The std of each cell's noise."""
        return self.noise_multiplier * self.sensitivity


def check_privacy(epsilon: Any, delta: Any, max_sample_weight: Any) -> None:
    """Errors that name ``epsilon``, ``delta`` or ``max_sample_weight``."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not epsilon > 0:
        raise ValueError(
            f"epsilon must be a number > 0 (np.inf: exact, non-private values), got {epsilon!r}"
        )
    if not (isinstance(delta, str) and delta == "auto"):
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 < delta < 1:
            raise ValueError(f"delta must be 'auto' or a float in (0, 1), got {delta!r}")
    bad = isinstance(max_sample_weight, bool) or not isinstance(max_sample_weight, numbers.Real)
    if bad or not (0 < max_sample_weight < math.inf):
        raise ValueError(
            f"max_sample_weight must be a finite number > 0 (the public bound on sample_weight, "
            f"the table's sensitivity), got {max_sample_weight!r}"
        )


def _labels(name: str, values: Any) -> np.ndarray:
    try:
        array = column_or_1d(np.asarray(values, dtype=object) if values is not None else None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be a 1-D array-like of labels: {exc}") from exc
    missing = pd.isna(array)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{name} has missing values (NaN/None), first at row {row}; every row needs a "
            "label: drop those rows or fill them before evaluating"
        )
    return array


def _binary(y_true: np.ndarray, y_pred: np.ndarray, pos_label: Any) -> tuple:
    labels = pd.unique(np.concatenate([y_true, y_pred]))
    if len(labels) > 2:
        raise ValueError(
            "y_true and y_pred must be binary: PrivateMetricFrame evaluates binary "
            f"classifiers, but they hold {len(labels)} labels together: "
            f"{sorted(map(str, labels))[:5]}"
        )
    if not any(label == pos_label for label in labels) and not set(labels) <= {0, 1, -1}:
        raise ValueError(
            f"pos_label={pos_label!r} is not among the labels {sorted(map(str, labels))}; "
            "pass pos_label=<the positive class>"
        )
    return (y_true == pos_label).astype(np.int64), (y_pred == pos_label).astype(np.int64)


def _weights(sample_weight: Any, n: int, private: bool, bound: float) -> np.ndarray | None:
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"sample_weight must be numbers, one per row: {exc}") from exc
    if weights.shape != (n,):
        raise ValueError(
            f"sample_weight has {weights.size} values but y_true has {n} rows; one weight per row"
        )
    bad = ~np.isfinite(weights) | (weights < 0)
    if private:
        bad |= weights > bound
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        bound_text = f" and at most max_sample_weight={bound:g}" if private else ""
        raise ValueError(
            f"sample_weight must be finite, non-negative{bound_text}; got {weights[row]!r} "
            f"(row {row}). The bound is public: it is the table's sensitivity."
        )
    return weights


def check_evaluation_data(
    y_true: Any,
    y_pred: Any,
    sensitive_features: Any,
    *,
    sample_weight: Any = None,
    pos_label: Any = 1,
    private: bool = True,
    max_sample_weight: float = 1.0,
    sensitive_values: Any = None,
) -> EvaluationData:
    """Check the rows to evaluate; every error names the argument at fault.

    Returns
    -------
    EvaluationData
        Labels as 0/1 (1: ``pos_label``), group codes and their encoder, weights.
    """
    t, p = _labels("y_true", y_true), _labels("y_pred", y_pred)
    if t.shape[0] != p.shape[0]:
        raise ValueError(f"y_true has {t.shape[0]} rows but y_pred has {p.shape[0]}")
    if t.shape[0] == 0:
        raise ValueError("y_true is empty: nothing to evaluate")
    t, p = _binary(t, p, pos_label)
    read_sensitive_features(sensitive_features, t.shape[0], other="y_true")
    groups, encoder = encode_sensitive_features(
        sensitive_features,
        t.shape[0],
        sensitive_values=sensitive_values,
        allow_empty_groups=True,
        allow_single_group=True,  # as fairlearn's MetricFrame: differences are 0
    )
    weights = _weights(sample_weight, t.shape[0], private, float(max_sample_weight))
    return EvaluationData(t, p, groups, encoder, weights)


def exact_table(data: EvaluationData, n_groups: int | None = None) -> np.ndarray:
    """The exact (weighted) counts, shape ``(n_groups, 4)``: tn, fp, fn, tp of each group.

    ``n_groups``: the number of cells coded in ``data.groups`` (default: the encoder's).
    """
    cells = data.groups * 4 + data.y_true * 2 + data.y_pred
    n_groups = data.encoder.n_groups_ if n_groups is None else n_groups
    counts = np.bincount(cells, weights=data.sample_weight, minlength=4 * n_groups)
    return counts.astype(np.float64).reshape(n_groups, 4)


def table_noise_multiplier(epsilon: float, delta: float) -> float:
    """Smallest multiplier whose one Gaussian release PLD prices at most ``epsilon``."""
    return calibrate_noise_multiplier(epsilon, delta, gaussian_release_event, **ACCOUNTING)


def release_table(
    table: np.ndarray,
    *,
    epsilon: float,
    delta: float | str,
    n_samples: int,
    weighted: bool,
    max_sample_weight: float,
    random: RandomSource,
) -> Release:
    """The Gaussian release of ``table`` (exact and ``NonPrivateDpEvent`` at ``epsilon=inf``).

    Parameters
    ----------
    table : ndarray of shape (n_groups, 4)
    epsilon : float
    delta : float or "auto"
        ``"auto"``: ``0.1 / n_samples`` rounded down.
    n_samples : int
    weighted : bool
        Whether the counts are weighted: the sensitivity is then ``max_sample_weight``.
    max_sample_weight : float
    random : RandomSource
        Where the noise comes from.

    Returns
    -------
    Release
    """
    sensitivity = float(max_sample_weight) if weighted else 1.0
    if math.isinf(epsilon):
        return Release(table, 0.0, sensitivity, 0.0, dp_accounting.NonPrivateDpEvent())
    resolved = resolve_delta(delta, n_samples)
    z = table_noise_multiplier(float(epsilon), resolved)
    recorder = EventRecorder()
    noisy, _ = noisy_histogram(
        torch.as_tensor(table, dtype=torch.float64), random,
        noise_multiplier=z, sensitivity=sensitivity, recorder=recorder,
    )  # fmt: skip
    return Release(noisy.numpy(), z, sensitivity, resolved, recorder.build())
