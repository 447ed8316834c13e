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


def _prepare(
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


def _cell_counts(t: np.ndarray, p: np.ndarray, g: np.ndarray, n_classes: int) -> np.ndarray:
    """``counts[group, true class, predicted class]``."""
    n_groups = int(g.max()) + 1
    flat = (g * n_classes + t) * n_classes + p
    counts = np.bincount(flat, minlength=n_groups * n_classes * n_classes)
    return counts.reshape(n_groups, n_classes, n_classes)


def _max_gap(numerator: np.ndarray, denominator: np.ndarray) -> float:
    """Largest between-group gap of ``numerator / denominator`` over columns.

    Both arrays have shape ``(n_groups, n_cells)``.  Groups with a zero
    denominator in a cell are skipped for that cell; a cell with fewer than
    two groups left contributes a gap of 0.
    """
    valid = denominator > 0
    rates = numerator / np.where(valid, denominator, 1)
    highest = np.where(valid, rates, -np.inf).max(axis=0)
    lowest = np.where(valid, rates, np.inf).min(axis=0)
    gaps = np.where(valid.sum(axis=0) >= 2, highest - lowest, 0.0)
    return float(gaps.max(initial=0.0))


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
    >>> demographic_parity_violation([1, 0, 0, 1], [1, 1, 0, 0],
    ...                              sensitive_features=[0, 0, 1, 1])
    1.0
    """
    classes, _, p, g = _prepare(y_true, y_pred, sensitive_features)
    n_groups, n_classes = int(g.max()) + 1, len(classes)
    counts = np.bincount(g * n_classes + p, minlength=n_groups * n_classes)
    counts = counts.reshape(n_groups, n_classes)
    sizes = np.broadcast_to(counts.sum(axis=1, keepdims=True), counts.shape)
    return _max_gap(counts, sizes)


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
    classes, t, p, g = _prepare(y_true, y_pred, sensitive_features)
    counts = _cell_counts(t, p, g, len(classes))
    diag = np.arange(len(classes))
    n_true = counts.sum(axis=2)  # rows with y = c
    n_pred = counts.sum(axis=1)  # rows with y_hat = c
    hits = counts[:, diag, diag]  # rows with y = y_hat = c
    n_group = n_true.sum(axis=1, keepdims=True)
    given_c = _max_gap(hits, n_true)
    given_not_c = _max_gap(n_pred - hits, n_group - n_true)
    return max(given_c, given_not_c)


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
    classes, t, p, g = _prepare(y_true, y_pred, sensitive_features)
    counts = _cell_counts(t, p, g, len(classes))
    diag = np.arange(len(classes))
    if pos_label is not None:
        matches = np.flatnonzero(classes == pos_label)
        if matches.size == 0:
            if len(classes) >= 2:
                raise ValueError(
                    f"pos_label={pos_label!r} is not a valid label: it should be one of "
                    f"{classes.tolist()}."
                )
            return 0.0  # the positive class never occurs: no true positive rate
        diag = matches[:1]
    elif len(classes) <= 2:
        diag = diag[-1:]
    hits = counts[:, diag, diag]
    n_true = counts.sum(axis=2)[:, diag]
    return _max_gap(hits, n_true)
