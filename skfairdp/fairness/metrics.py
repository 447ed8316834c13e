"""Group-fairness violation metrics on hard predictions.

All metrics are *violations* (0 is perfectly fair, larger is worse) defined
as in the seed papers: the largest gap, over predicted classes and pairs of
groups, between group-conditional rates.  They handle binary and multi-class
labels (any labels accepted by :func:`sklearn.utils.multiclass.unique_labels`,
strings included), and one or several sensitive attributes; several
attributes define joint (intersectional) groups, of which only those present
in the data are compared.  The set of classes is the union of the labels in
``y_true`` and ``y_pred``.

The computations are vectorised: one :func:`numpy.bincount` over
``(group, y_true, y_pred)`` cells, no Python loop over samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_consistent_length, column_or_1d
from sklearn.utils.multiclass import unique_labels

from .groups import observed_group_codes

__all__ = [
    "demographic_parity_violation",
    "equal_opportunity_violation",
    "equalized_odds_violation",
]


def prepare(
    y_true: Any, y_pred: Any, sensitive_features: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate inputs; return classes and integer codes of y_true, y_pred, groups."""
    y_true = column_or_1d(y_true, warn=True)
    y_pred = column_or_1d(y_pred, warn=True)
    check_consistent_length(y_true, y_pred)
    if y_true.shape[0] == 0:
        raise ValueError("y_true and y_pred are empty.")
    try:
        classes = unique_labels(y_true, y_pred)
    except ValueError as exc:
        raise ValueError(
            f"{exc} Fairness metrics need hard class predictions: threshold "
            "probabilities or scores (e.g. use estimator.predict) first."
        ) from exc
    groups = observed_group_codes(sensitive_features, y_true.shape[0], other="y_true")
    t = np.searchsorted(classes, y_true).astype(np.int64, copy=False)
    p = np.searchsorted(classes, y_pred).astype(np.int64, copy=False)
    return classes, t, p, groups


def cell_counts(t: np.ndarray, p: np.ndarray, g: np.ndarray, n_classes: int) -> np.ndarray:
    """``counts[group, true class, predicted class]``."""
    n_groups = int(g.max()) + 1
    flat = (g * n_classes + t) * n_classes + p
    counts = np.bincount(flat, minlength=n_groups * n_classes * n_classes)
    return counts.reshape(n_groups, n_classes, n_classes)


def max_gaps(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Largest between-group gap of ``numerator / denominator`` over columns.

    Both arrays have shape ``(..., n_groups, n_cells)``; the result has the
    leading shape ``(...)``.  Groups with a zero denominator in a cell are
    skipped for that cell; a cell with fewer than two groups left contributes a
    gap of 0.
    """
    valid = denominator > 0
    rates = numerator / np.where(valid, denominator, 1)
    highest = np.where(valid, rates, -np.inf).max(axis=-2)
    lowest = np.where(valid, rates, np.inf).min(axis=-2)
    gaps = np.where(valid.sum(axis=-2) >= 2, highest - lowest, 0.0)
    return gaps.max(axis=-1, initial=0.0)


def demographic_parity_from_counts(predicted: np.ndarray) -> np.ndarray:
    """Demographic parity violation of ``predicted[..., group, predicted class]`` counts."""
    sizes = np.broadcast_to(predicted.sum(axis=-1, keepdims=True), predicted.shape)
    return max_gaps(predicted, sizes)


def equalized_odds_from_counts(counts: np.ndarray) -> np.ndarray:
    """Equalized odds violation of ``counts[..., group, true class, predicted class]``."""
    diag = np.arange(counts.shape[-1])
    n_true = counts.sum(axis=-1)  # rows with y = c
    n_pred = counts.sum(axis=-2)  # rows with y_hat = c
    hits = counts[..., diag, diag]  # rows with y = y_hat = c
    n_group = n_true.sum(axis=-1, keepdims=True)
    given_c = max_gaps(hits, n_true)
    given_not_c = max_gaps(n_pred - hits, n_group - n_true)
    return np.maximum(given_c, given_not_c)


def equal_opportunity_from_counts(counts: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Equal opportunity violation (true-positive-rate gap) of ``counts`` for ``classes``."""
    hits = counts[..., classes, classes]
    n_true = counts.sum(axis=-1)[..., classes]
    return max_gaps(hits, n_true)


def demographic_parity_violation(y_true: Any, y_pred: Any, *, sensitive_features: Any) -> float:
    r"""Demographic parity violation of hard predictions.

    .. math::

        \max_c \max_{a, b} |P(\hat y = c \mid s = a) - P(\hat y = c \mid s = b)|

    over predicted classes ``c`` and pairs of groups ``(a, b)``.  For binary
    labels this equals fairlearn's ``demographic_parity_difference``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels; only used for the set of classes (accepted for API
        symmetry with fairlearn).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Sensitive labels; several attributes define joint groups.

    Returns
    -------
    float
        The violation, in ``[0, 1]``.

    Examples
    --------
    >>> from skfairdp.metrics import demographic_parity_violation
    >>> demographic_parity_violation([1, 0, 0, 1], [1, 1, 0, 0],
    ...                              sensitive_features=[0, 0, 1, 1])
    1.0
    """
    classes, _, p, g = prepare(y_true, y_pred, sensitive_features)
    n_groups, n_classes = int(g.max()) + 1, len(classes)
    counts = np.bincount(g * n_classes + p, minlength=n_groups * n_classes)
    return float(demographic_parity_from_counts(counts.reshape(n_groups, n_classes)))


def equalized_odds_violation(y_true: Any, y_pred: Any, *, sensitive_features: Any) -> float:
    r"""Equalized odds violation of hard predictions.

    .. math::

        \max_c \max_{E \in \{y = c,\ y \ne c\}} \max_{a, b}
        |P(\hat y = c \mid s = a, E) - P(\hat y = c \mid s = b, E)|

    For binary labels this is the larger of the true- and false-positive-rate
    gaps, i.e. fairlearn's ``equalized_odds_difference``.  A group with no rows
    satisfying condition ``E`` is skipped for that ``(c, E)`` cell (its rate
    is undefined); a cell with fewer than two groups left contributes 0.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Sensitive labels; several attributes define joint groups.

    Returns
    -------
    float
        The violation, in ``[0, 1]``.
    """
    classes, t, p, g = prepare(y_true, y_pred, sensitive_features)
    return float(equalized_odds_from_counts(cell_counts(t, p, g, len(classes))))


def equal_opportunity_violation(
    y_true: Any, y_pred: Any, *, sensitive_features: Any, pos_label: Any = None
) -> float:
    r"""Equal opportunity violation (true-positive-rate gap) of hard predictions.

    .. math::

        \max_{c \in C} \max_{a, b}
        |P(\hat y = c \mid s = a, y = c) - P(\hat y = c \mid s = b, y = c)|

    where ``C = {pos_label}``.  With ``pos_label=None``, ``C`` is the larger
    label for binary problems (at most two classes), so this equals
    fairlearn's ``true_positive_rate`` difference, and all classes for
    multi-class problems.  Groups with no row of class ``c`` are skipped for
    that class.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Sensitive labels; several attributes define joint groups.
    pos_label : label or None, default=None
        The positive ("advantaged") class.

    Returns
    -------
    float
        The violation, in ``[0, 1]``.
    """
    classes, t, p, g = prepare(y_true, y_pred, sensitive_features)
    positive = positive_classes(classes, pos_label)
    if positive.size == 0:
        return 0.0  # the positive class never occurs: no true positive rate
    counts = cell_counts(t, p, g, len(classes))
    return float(equal_opportunity_from_counts(counts, positive))


def positive_classes(classes: np.ndarray, pos_label: Any = None) -> np.ndarray:
    """Indices of the classes whose true-positive rates equal opportunity compares.

    ``pos_label`` given: its index (none if it never occurs and the labels are a
    single class). ``None``: the larger label of a binary problem, all classes of
    a multi-class one.
    """
    if pos_label is not None:
        matches = np.flatnonzero(classes == pos_label)
        if matches.size == 0 and len(classes) >= 2:
            raise ValueError(
                f"pos_label={pos_label!r} is not a valid label: it should be one of "
                f"{classes.tolist()}."
            )
        return matches[:1]
    diag = np.arange(len(classes))
    return diag[-1:] if len(classes) <= 2 else diag
