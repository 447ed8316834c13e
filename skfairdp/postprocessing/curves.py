"""Hardt et al.'s threshold choice, as fairlearn's ``ThresholdOptimizer`` makes it, on counts.

Input: a (group, true label, score bin) histogram (exact, or the noisy release
clipped at 0). A threshold ``k`` in ``0..n_bins`` predicts positive for the
rows whose bin is at least ``k`` (``k = n_bins``: nobody; ``k = 0``: everybody);
cumulative sums of the counts give every group's confusion matrix at every
threshold, hence its selection rate, TPR, FPR... Then, exactly as fairlearn:

- each group's achievable (constraint metric, objective) points, their upper
  convex hull (monotone chain), and the hull interpolated on a grid of
  ``grid_size + 1`` constraint values in ``[0, 1]``: a point between two hull
  vertices is the randomised mix of their two thresholds;
- simple constraints (one rate equal across groups): the grid value maximising
  the group-size-weighted objective;
- equalized odds: the ROC hulls (FPR, TPR); at each FPR the smallest TPR over
  groups is reachable by all (mixing in the constant predictor on the
  diagonal, ``p_ignore``); the FPR maximising the objective.

On exact counts of scores that sit one per bin, the result is fairlearn's (the
tests compare them). No private data is read here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONSTRAINTS",
    "check_options",
    "OBJECTIVES",
    "ThresholdRule",
    "confusion_counts",
    "optimize_thresholds",
]

#: fairlearn's constraint names -> the rate made equal across groups.
CONSTRAINTS = {
    "demographic_parity": "selection_rate",
    "selection_rate_parity": "selection_rate",
    "true_positive_rate_parity": "true_positive_rate",
    "equal_opportunity": "true_positive_rate",  # skfairdp's name (DP-FERMI's fairness)
    "false_negative_rate_parity": "false_negative_rate",
    "false_positive_rate_parity": "false_positive_rate",
    "true_negative_rate_parity": "true_negative_rate",
    "equalized_odds": None,
}
#: Objectives allowed with a simple constraint; equalized odds takes the first two.
OBJECTIVES = (
    "accuracy_score",
    "balanced_accuracy_score",
    "selection_rate",
    "true_positive_rate",
    "true_negative_rate",
)


def _ratio(a, b):
    return a / b


METRICS = {
    "selection_rate": lambda c: _ratio(c["tp"] + c["fp"], c["n"]),
    "false_positive_rate": lambda c: _ratio(c["fp"], c["neg"]),
    "false_negative_rate": lambda c: _ratio(c["fn"], c["pos"]),
    "true_positive_rate": lambda c: _ratio(c["tp"], c["pos"]),
    "true_negative_rate": lambda c: _ratio(c["tn"], c["neg"]),
    "accuracy_score": lambda c: _ratio(c["tp"] + c["tn"], c["n"]),
    "balanced_accuracy_score": lambda c: (
        0.5 * _ratio(c["tp"], c["pos"]) + 0.5 * _ratio(c["tn"], c["neg"])
    ),
}


@dataclass(frozen=True)
class ThresholdRule:
    """Each group's randomised threshold: ``p0`` of ``bin >= k0``, ``p1`` of ``bin >= k1``.

    With probability ``p_ignore[g]`` the decision is instead positive with
    probability ``constant`` (equalized odds only; 0 otherwise).
    """

    p0: np.ndarray
    k0: np.ndarray
    p1: np.ndarray
    k1: np.ndarray
    p_ignore: np.ndarray
    constant: float

    def positive_probability(self, groups: np.ndarray, bins: np.ndarray) -> np.ndarray:
        """Probability of a positive decision for rows of ``groups`` with score ``bins``."""
        thresholded = self.p0[groups] * (bins >= self.k0[groups]) + self.p1[groups] * (
            bins >= self.k1[groups]
        )
        ignore = self.p_ignore[groups]
        return ignore * self.constant + (1.0 - ignore) * thresholded


def confusion_counts(counts: np.ndarray) -> dict:
    """Every group's confusion matrix at every threshold, from a (G, 2, B) histogram.

    Column ``j`` is threshold ``k = n_bins - j`` (fairlearn's order: nobody
    positive first). A group without (noisy) positives or negatives gets rates
    that grow with the share of bins selected instead of 0/0.

    Returns
    -------
    dict of ndarray of shape (G, n_bins + 1)
        ``tp, fp, tn, fn, pos, neg, n`` and ``k`` (the threshold of each column).
    """
    counts = np.asarray(counts, dtype=np.float64)
    n_groups, _, n_bins = counts.shape
    above = np.cumsum(counts[:, :, ::-1], axis=2)  # rows in the top j bins
    above = np.concatenate([np.zeros((n_groups, 2, 1)), above], axis=2)
    totals = above[:, :, -1:]
    share = np.arange(n_bins + 1) / n_bins
    for label in (0, 1):  # degenerate label: as if one row per bin
        empty = totals[:, label, 0] <= 0
        above[empty, label] = share
        totals[empty, label] = 1.0
    fp, tp = above[:, 0], above[:, 1]
    neg, pos = np.broadcast_to(totals[:, 0], fp.shape), np.broadcast_to(totals[:, 1], tp.shape)
    k = np.broadcast_to(n_bins - np.arange(n_bins + 1), fp.shape)
    return {"tp": tp, "fp": fp, "tn": neg - fp, "fn": pos - tp, "pos": pos, "neg": neg,
            "n": pos + neg, "k": k}  # fmt: skip


def _upper_hull(x: np.ndarray, y: np.ndarray, k: np.ndarray):
    """fairlearn's upper convex hull (Andrew's monotone chain) of points sorted by (x, y)."""
    order = np.lexsort((y, x))
    x, y, k = x[order], y[order], k[order]
    kept: list[int] = []
    for i in range(len(x)):
        while len(kept) >= 2:
            a, b = kept[-2], kept[-1]
            if (y[b] - y[a]) * (x[i] - x[a]) <= (y[i] - y[a]) * (x[b] - x[a]):
                kept.pop()
            else:
                break
        kept.append(i)
    return x[kept], y[kept], k[kept]


def _interpolate(x, y, k, grid):
    """fairlearn's interpolation of a hull on ``grid``: (y, p0, k0, p1, k1) per grid value."""
    idx = np.searchsorted(x, grid, side="right") - 1
    idx[1:] = np.where(grid[1:] == x[idx[1:]], idx[1:] - 1, idx[1:])
    idx = np.clip(idx, 0, len(x) - 2)
    p0 = (x[idx + 1] - grid) / (x[idx + 1] - x[idx])
    p1 = 1 - p0
    return p0 * y[idx] + p1 * y[idx + 1], p0, k[idx], p1, k[idx + 1]


def _group_curves(counts, x_metric, y_metric, grid):
    c = confusion_counts(counts)
    xs, ys = METRICS[x_metric](c), METRICS[y_metric](c)
    return [_interpolate(*_upper_hull(xs[g], ys[g], c["k"][g]), grid) for g in range(len(xs))]


def check_options(constraints: str, objective: str, tol: float | None) -> None:
    """The errors fairlearn raises for what equalized odds cannot take: an objective
    other than (balanced) accuracy, and a relaxed constraint (``tol``)."""
    if constraints != "equalized_odds":
        return
    if objective not in OBJECTIVES[:2]:
        raise ValueError(
            f"objective={objective!r} is not supported with constraints='equalized_odds'"
            f"; use one of {OBJECTIVES[:2]}"
        )
    if tol is not None:
        raise ValueError(
            f"tol={tol!r}: relaxed constraints are not supported with constraints="
            "'equalized_odds' (as in fairlearn); use tol=None, or a single-rate "
            "constraint such as 'true_positive_rate_parity'"
        )


def optimize_thresholds(
    counts: np.ndarray,
    constraints: str,
    objective: str,
    grid_size: int = 1000,
    tol: float | None = None,
) -> ThresholdRule:
    """The randomised group thresholds fairlearn's ``ThresholdOptimizer`` picks, from counts.

    Parameters
    ----------
    counts : ndarray of shape (n_groups, 2, n_bins)
        Non-negative (weighted) counts per group, true label and score bin.
    constraints : str
        A key of :data:`CONSTRAINTS`.
    objective : str
        One of :data:`OBJECTIVES` (equalized odds: accuracy or balanced accuracy).
    grid_size : int, default=1000
        The constraint metric is searched on ``grid_size + 1`` values in ``[0, 1]``.
    tol : float or None, default=None
        fairlearn's ``tol`` (simple constraints only): the groups' constraint rates may
        span up to ``tol`` (the largest pairwise gap) instead of being equal
        (:func:`_within_tolerance`); ``None`` or 0: exact equality.

    Returns
    -------
    ThresholdRule
    """
    counts = np.asarray(counts, dtype=np.float64)
    n_groups = counts.shape[0]
    grid = np.linspace(0, 1, grid_size + 1)
    if constraints == "equalized_odds":
        curves = _group_curves(counts, "false_positive_rate", "true_positive_rate", grid)
        y_min = np.min([curve[0] for curve in curves], axis=0)
        # floored: noisy totals clipped at 0 may vanish (then the objective is flat)
        n_pos, n_neg = max(counts[:, 1].sum(), 1e-12), max(counts[:, 0].sum(), 1e-12)
        c = {"fp": n_neg * grid, "tn": n_neg * (1.0 - grid), "tp": n_pos * y_min,
             "fn": n_pos * (1.0 - y_min), "pos": n_pos, "neg": n_neg,
             "n": n_pos + n_neg}  # fmt: skip
        best = int(np.argmax(np.around(METRICS[objective](c), 15)))
        x_best, y_best = grid[best], y_min[best]
        ignore = []
        for y, *_ in curves:
            gap = y[best] - x_best
            ignore.append(0.0 if gap == 0 else (y[best] - y_best) / gap)
        p_ignore, constant = np.array(ignore), float(x_best)
        points = np.full(n_groups, best)
    else:
        curves = _group_curves(counts, CONSTRAINTS[constraints], objective, grid)
        sizes = counts.sum(axis=(1, 2))
        weights = sizes / sizes.sum() if sizes.sum() > 0 else np.full(n_groups, 1.0 / n_groups)
        if tol:
            points = _within_tolerance(grid, np.stack([c[0] for c in curves]), weights, tol)
        else:
            overall = sum(w * curve[0] for w, curve in zip(weights, curves, strict=True))
            points = np.full(n_groups, int(np.argmax(overall)))
        p_ignore, constant = np.zeros(n_groups), 0.0
    # each group's point on the grid (one common point but under a tol)
    p0, k0, p1, k1 = (
        np.array([curve[i][point] for curve, point in zip(curves, points)]) for i in range(1, 5)
    )
    return ThresholdRule(p0, k0.astype(np.int64), p1, k1.astype(np.int64), p_ignore, constant)


def _within_tolerance(
    x: np.ndarray, values: np.ndarray, weights: np.ndarray, tol: float
) -> np.ndarray:
    """Each group's grid point when the groups' constraint rates may span ``tol``.

    fairlearn's relaxed choice (``ThresholdOptimizer(tol=...)``, 0.13): ``values[g, i]``
    is group ``g``'s objective at the constraint rate ``x[i]`` (ascending). Every window
    ``[start, end]`` of the grid with ``x[end] - x[start] <= tol`` is tried; in each,
    every group takes its best point (the last of equal ones), and the window whose
    size-weighted sum is largest wins; on a tie, the one whose points span less, and then
    the later one. Exhaustive over the windows: it needs no concavity of the (noisy)
    curves.
    """
    n_points = len(x)
    scaled = values * np.asarray(weights, dtype=np.float64)[:, None]
    best, best_span, points = -np.inf, np.inf, np.zeros(len(values), dtype=np.int64)
    start = 0
    for end in range(n_points):
        while x[end] - x[start] > tol:
            start += 1
        window = scaled[:, start : end + 1]
        # the last index of each row's maximum (argmax of the reversed row)
        inside = end - np.argmax(window[:, ::-1], axis=1)
        objective = sum(row[i] for row, i in zip(scaled, inside))
        span = np.ptp(x[inside])
        if objective > best or (objective == best and span <= best_span):
            best, best_span, points = objective, span, inside
    return points
