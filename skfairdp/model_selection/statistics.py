"""A run's validation statistics and the selection rule on their noisy values.

The search releases, per run, noisy counts of the validation rows: the cells
``[group, true class, predicted class]`` (L2 sensitivity 1: adding or removing one
row moves one cell by one), or, without a fairness notion and with
``scoring="accuracy"``, the one count of correct predictions. The score and the
fairness violation are post-processing of those noisy counts, and the selection
key is a total order on one run's noisy statistics, as Papernot & Steinke's
theorem requires.
"""

from __future__ import annotations

import numpy as np

from ..fairness.metrics import (
    demographic_parity_from_counts,
    equal_opportunity_from_counts,
    equalized_odds_from_counts,
    positive_classes,
)

__all__ = [
    "FAIRNESS",
    "SCORING",
    "confusion_cells",
    "correct_count",
    "noisy_accuracy",
    "noisy_statistics",
    "selection_key",
]

FAIRNESS = ("demographic_parity", "equal_opportunity", "equalized_odds")
SCORING = ("accuracy", "balanced_accuracy")


def _class_indices(classes: np.ndarray, y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    """Indices in ``classes`` of the true and predicted labels (-1: predicted outside)."""
    k = len(classes)
    t = np.searchsorted(classes, y_true)
    p = np.searchsorted(classes, y_pred).clip(0, k - 1)
    return t, np.where(classes[p] == y_pred, p, -1)


def correct_count(classes: np.ndarray, y_true, y_pred) -> int:
    """How many predictions are right (a label outside ``classes`` never is)."""
    t, p = _class_indices(classes, y_true, y_pred)
    return int(np.sum(p == t))


def confusion_cells(classes: np.ndarray, y_true, y_pred, groups, n_groups: int) -> np.ndarray:
    """Exact counts ``cells[group, true, predicted]``; one row is in exactly one cell.

    ``groups`` None: one group. A label predicted outside ``classes`` is counted in
    the next class's cell (a wrong one).
    """
    k = len(classes)
    t, p = _class_indices(classes, y_true, y_pred)
    g = np.zeros(len(t), dtype=np.int64) if groups is None else groups
    keep = p >= 0
    flat = (g[keep] * k + t[keep]) * k + p[keep]
    cells = np.bincount(flat, minlength=n_groups * k * k).reshape(n_groups, k, k)
    wrong = np.bincount(g[~keep] * k + t[~keep], minlength=n_groups * k).reshape(n_groups, k)
    if wrong.any():
        cells[:, np.arange(k), (np.arange(k) + 1) % k] += wrong
    return cells


def noisy_accuracy(noisy_correct: float, n_rows: int) -> dict:
    """The score of a noisy count of correct predictions, clipped to ``[0, 1]``."""
    score = float(noisy_correct) / n_rows
    return {"score": min(max(score, 0.0), 1.0)}


def noisy_statistics(cells: np.ndarray, fairness: str | None, scoring: str) -> dict:
    """Noisy score and violation from noisy ``cells[group, true, predicted]`` (post-processing)."""
    cells = np.maximum(cells, 0.0)
    n_classes = cells.shape[1]
    diag = np.arange(n_classes)
    by_class = cells.sum(axis=0)  # [true, predicted]
    total = max(by_class.sum(), 1.0)
    if scoring == "accuracy":
        score = float(by_class[diag, diag].sum() / total)
    else:
        recall = by_class[diag, diag] / np.maximum(by_class.sum(axis=1), 1.0)
        score = float(recall.mean())
    out = {"score": min(max(score, 0.0), 1.0)}
    if fairness is None:
        return out
    if fairness == "demographic_parity":
        violation = demographic_parity_from_counts(cells.sum(axis=1))  # [group, predicted]
    elif fairness == "equal_opportunity":
        violation = equal_opportunity_from_counts(cells, positive_classes(np.arange(n_classes)))
    else:
        violation = equalized_odds_from_counts(cells)
    out["violation"] = float(violation)
    return out


def selection_key(stats: dict, max_violation: float | None) -> tuple:
    """Total order on one run's noisy statistics (larger is better).

    Without a bound: the score. With one: a run meeting it beats every run that
    does not; among those that meet it the larger score wins, among the others
    the smaller violation.
    """
    if max_violation is None or "violation" not in stats:
        return (1, stats["score"])
    if stats["violation"] <= max_violation:
        return (1, stats["score"])
    return (0, -stats["violation"])
