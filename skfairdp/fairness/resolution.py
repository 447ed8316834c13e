"""How small a violation a sample can show: the floor that sampling alone sets.

A violation is measured on finite group cells. A classifier that is exactly fair
in the population still shows a gap on a sample, because each group's rate is a
count over that group's rows: with 20 positive rows in a group, its true-positive
rate moves in steps of 0.05 and has a standard deviation near 0.1. A tolerance
below that floor cannot be verified on the sample, by any method, private or not.

:func:`fair_violation_floor` computes the floor for a given sample and operating
point by simulation: the classifier keeps ``y_pred``'s pooled rates (so its
accuracy level is the same) and is made exactly fair, then the sample's cells are
drawn again from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from .metrics import (
    cell_counts,
    demographic_parity_from_counts,
    equal_opportunity_from_counts,
    equalized_odds_from_counts,
    positive_classes,
    prepare,
)

__all__ = ["fair_violation_floor"]

NOTIONS = ("demographic_parity", "equalized_odds", "equal_opportunity")


def fair_violation_floor(
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any,
    notion: str = "demographic_parity",
    n_draws: int = 20_000,
    random_state: Any = 0,
) -> float:
    """Expected violation of an exactly fair classifier on this sample's cells.

    The classifier predicts with ``y_pred``'s pooled rates, the same in every
    group: ``P(y_hat)`` for demographic parity, ``P(y_hat | y)`` for equalized
    odds and equal opportunity. Each group's (or each (group, label) cell's)
    predictions are drawn from those rates for the cell's number of rows, and
    the notion's violation is averaged over ``n_draws`` draws. A measured
    violation near the floor is what sampling alone produces at this operating
    point; a tolerance below it cannot be checked on this sample.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (they fix the (group, label) cells).
    y_pred : array-like of shape (n_samples,)
        Hard predictions; only their pooled rates are used.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Sensitive labels; several attributes define joint groups.
    notion : {"demographic_parity", "equalized_odds", "equal_opportunity"}, \
default="demographic_parity"
        The violation, as :func:`~skfairdp.metrics.demographic_parity_violation`,
        :func:`~skfairdp.metrics.equalized_odds_violation` and
        :func:`~skfairdp.metrics.equal_opportunity_violation` (default
        ``pos_label``) define it.
    n_draws : int, default=20_000
        Simulated samples. The estimate's standard error is below
        ``0.5 / sqrt(n_draws)`` (a violation lies in [0, 1]).
    random_state : int, RandomState instance or None, default=0
        Seeds the simulation (0: the same floor on every call).

    Returns
    -------
    float
        The expected violation, in ``[0, 1]``.

    See Also
    --------
    skfairdp.metrics.PrivateMetricFrame : its ``interval("difference")`` at
        ``epsilon=np.inf`` asks the same question of one measured gap: a gap no larger
        than the floor has an interval reaching 0.

    Examples
    --------
    Two groups of one row each, half the predictions positive: an exactly fair
    coin disagrees with itself half of the time.

    >>> from skfairdp.metrics import fair_violation_floor
    >>> round(fair_violation_floor([0, 1], [1, 0], sensitive_features=["a", "b"]), 1)
    0.5
    """
    if notion not in NOTIONS:
        raise ValueError(f"notion must be one of {NOTIONS}, got {notion!r}")
    if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive integer, got {n_draws!r}")
    classes, t, p, g = prepare(y_true, y_pred, sensitive_features)
    rng = check_random_state(random_state)
    n_classes, n_groups = len(classes), int(g.max()) + 1
    observed = cell_counts(t, p, g, n_classes)  # (group, true, predicted)
    if notion == "demographic_parity":
        sizes = observed.sum(axis=(1, 2))
        pooled = observed.sum(axis=(0, 1)) / sizes.sum()
        drawn = np.stack([rng.multinomial(n, pooled, size=n_draws) for n in sizes], axis=1)
        return float(demographic_parity_from_counts(drawn).mean())
    sizes = observed.sum(axis=2)  # (group, true)
    pooled = observed.sum(axis=0) / np.maximum(sizes.sum(axis=0), 1)[:, None]
    drawn = np.zeros((n_draws, n_groups, n_classes, n_classes), dtype=np.int64)
    for group, label in zip(*np.nonzero(sizes)):
        drawn[:, group, label] = rng.multinomial(sizes[group, label], pooled[label], size=n_draws)
    if notion == "equalized_odds":
        return float(equalized_odds_from_counts(drawn).mean())
    positive = positive_classes(classes)
    return float(equal_opportunity_from_counts(drawn, positive).mean())
