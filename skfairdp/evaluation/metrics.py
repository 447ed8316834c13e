"""The metrics a (group x label x prediction) count table determines, and how callables map to them.

A binary classifier's rows in one group fall in four cells of its confusion
matrix: true negatives, false positives, false negatives, true positives (the
last axis of a table, in that order: ``cell = 2 * y_true + y_pred``). Every
metric here is a function of those four (weighted) counts, vectorised over any
leading axes, so the same code gives a point value, a value per group, and a
value per posterior draw of :mod:`.intervals`.

Conventions follow scikit-learn and fairlearn, so that at ``epsilon=inf`` the
values equal fairlearn ``MetricFrame``'s: a rate whose denominator is zero is 0
(scikit-learn's ``zero_division`` default, fairlearn's ``nan_to_num``); a group
without any (weight of) rows is NaN; balanced accuracy averages the recalls of
the classes present.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ConfusionMetric", "METRICS", "resolve_metric", "supported_metrics"]

TN, FP, FN, TP = range(4)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), 0.0)


def _empty_to_nan(cells: np.ndarray, value: np.ndarray) -> np.ndarray:
    return np.where(cells.sum(axis=-1) > 0, value, np.nan)


def _of_total(*parts: int) -> Callable[[np.ndarray], np.ndarray]:
    def metric(cells: np.ndarray) -> np.ndarray:
        total = cells.sum(axis=-1)
        return _empty_to_nan(cells, _ratio(cells[..., list(parts)].sum(axis=-1), total))

    return metric


def _conditional(part: int, other: int) -> Callable[[np.ndarray], np.ndarray]:
    def metric(cells: np.ndarray) -> np.ndarray:
        return _empty_to_nan(cells, _ratio(cells[..., part], cells[..., part] + cells[..., other]))

    return metric


def _balanced_accuracy(cells: np.ndarray) -> np.ndarray:
    positives, negatives = cells[..., TP] + cells[..., FN], cells[..., TN] + cells[..., FP]
    tpr, tnr = _ratio(cells[..., TP], positives), _ratio(cells[..., TN], negatives)
    both = (tpr + tnr) / 2
    value = np.where(positives > 0, np.where(negatives > 0, both, tpr), tnr)
    return _empty_to_nan(cells, value)


def _f1(cells: np.ndarray) -> np.ndarray:
    tp2 = 2 * cells[..., TP]
    return _empty_to_nan(cells, _ratio(tp2, tp2 + cells[..., FP] + cells[..., FN]))


def _count(cells: np.ndarray) -> np.ndarray:
    return _empty_to_nan(cells, cells.sum(axis=-1))


@dataclass(frozen=True)
class ConfusionMetric:
    """A metric of the four confusion cells.

    Attributes
    ----------
    name : str
        Canonical name.
    function : callable
        ``cells (..., 4) -> values (...)``.
    is_count : bool
        True for the count of rows: it describes the evaluation sample itself, so
        its interval covers the sample's count (noise only), not a population rate.
    """

    name: str
    function: Callable[[np.ndarray], np.ndarray]
    is_count: bool = False

    def __call__(self, cells: np.ndarray) -> np.ndarray:
        return self.function(np.asarray(cells, dtype=np.float64))


METRICS: dict[str, ConfusionMetric] = {
    m.name: m
    for m in (
        ConfusionMetric("selection_rate", _of_total(FP, TP)),
        ConfusionMetric("accuracy", _of_total(TN, TP)),
        ConfusionMetric("error_rate", _of_total(FP, FN)),
        ConfusionMetric("balanced_accuracy", _balanced_accuracy),
        ConfusionMetric("true_positive_rate", _conditional(TP, FN)),
        ConfusionMetric("false_negative_rate", _conditional(FN, TP)),
        ConfusionMetric("true_negative_rate", _conditional(TN, FP)),
        ConfusionMetric("false_positive_rate", _conditional(FP, TN)),
        ConfusionMetric("precision", _conditional(TP, FP)),
        ConfusionMetric("f1", _f1),
        ConfusionMetric("count", _count, is_count=True),
    )
}

#: Other names of the metrics (scikit-learn's and fairlearn's function names included).
ALIASES = {
    "mean_prediction": "selection_rate",
    "accuracy_score": "accuracy",
    "zero_one_loss": "error_rate",
    "balanced_accuracy_score": "balanced_accuracy",
    "recall": "true_positive_rate",
    "recall_score": "true_positive_rate",
    "tpr": "true_positive_rate",
    "fnr": "false_negative_rate",
    "tnr": "true_negative_rate",
    "specificity": "true_negative_rate",
    "fpr": "false_positive_rate",
    "precision_score": "precision",
    "f1_score": "f1",
}


@functools.cache
def _known_functions() -> dict[Any, str]:
    """The scikit-learn and fairlearn functions that are one of :data:`METRICS`."""
    import fairlearn.metrics as flm
    import sklearn.metrics as skm

    functions = {
        skm.accuracy_score: "accuracy",
        skm.zero_one_loss: "error_rate",
        skm.balanced_accuracy_score: "balanced_accuracy",
        skm.recall_score: "true_positive_rate",
        skm.precision_score: "precision",
        skm.f1_score: "f1",
        flm.selection_rate: "selection_rate",
        flm.mean_prediction: "selection_rate",
        flm.true_positive_rate: "true_positive_rate",
        flm.false_negative_rate: "false_negative_rate",
        flm.true_negative_rate: "true_negative_rate",
        flm.false_positive_rate: "false_positive_rate",
        flm.count: "count",
    }
    return functions


def supported_metrics() -> list[str]:
    """Every name :func:`resolve_metric` accepts (canonical names, then aliases)."""
    return [*METRICS, *ALIASES]


def _unsupported(metric: Any, why: str = "") -> ValueError:
    return ValueError(
        f"metrics: {metric!r} is not a metric of the confusion table{why}. PrivateMetricFrame "
        f"computes every metric from one noisy (group x y_true x y_pred) count table; supported: "
        f"the names {supported_metrics()}, and the functions scikit-learn's accuracy_score, "
        "zero_one_loss, balanced_accuracy_score, recall_score, precision_score, f1_score and "
        "fairlearn's selection_rate, mean_prediction, true_positive_rate, false_negative_rate, "
        "true_negative_rate, false_positive_rate, count (a functools.partial of them may fix "
        "pos_label to the frame's pos_label, or zero_division=0)."
    )


def resolve_metric(metric: Any, pos_label: Any) -> ConfusionMetric:
    """The :class:`ConfusionMetric` a name, function or ``functools.partial`` stands for.

    Parameters
    ----------
    metric : str or callable
        A name of :func:`supported_metrics`, a supported scikit-learn or fairlearn
        function, or a ``functools.partial`` of one whose only keywords are
        ``pos_label`` (equal to ``pos_label``) and ``zero_division=0``.
    pos_label : object
        The frame's positive label.

    Returns
    -------
    ConfusionMetric

    Raises
    ------
    ValueError
        Listing the supported metrics, for anything else.
    """
    if isinstance(metric, str):
        name = ALIASES.get(metric, metric)
        if name not in METRICS:
            raise _unsupported(metric)
        return METRICS[name]
    if isinstance(metric, functools.partial):
        if metric.args:
            raise _unsupported(metric, " (a partial with positional arguments)")
        for key, value in metric.keywords.items():
            fixed = (key == "pos_label" and value == pos_label) or (
                key == "zero_division" and value == 0
            )
            if not fixed:
                raise _unsupported(
                    metric, f" (its keyword {key}={value!r} changes what it computes; "
                    f"the frame's pos_label is {pos_label!r})",
                )  # fmt: skip
        return resolve_metric(metric.func, pos_label)
    if callable(metric):
        try:
            name = _known_functions().get(metric)
        except TypeError:  # an unhashable callable
            name = None
        if name is not None:
            return METRICS[name]
    raise _unsupported(metric)


def metric_name(metric: Any) -> str:
    """The name fairlearn gives a single metric: the function's ``__name__`` (or the string)."""
    if isinstance(metric, str):
        return metric
    return getattr(metric, "__name__", "metric")  # a functools.partial has none
