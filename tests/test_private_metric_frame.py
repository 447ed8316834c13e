"""PrivateMetricFrame (issue 25): exact at epsilon=inf, one private release, honest intervals.

Statistical tests are seeded (deterministic); each states the probability that a
correct implementation fails it for a random seed, kept below 1e-4.
"""

from __future__ import annotations

import functools
import math
import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm
from fairlearn import metrics as flm
from scipy import stats

from skfairdp.evaluation import intervals as iv
from skfairdp.evaluation.metrics import METRICS, resolve_metric, supported_metrics
from skfairdp.evaluation.table import check_evaluation_data, exact_table
from skfairdp.metrics import PrivateMetricFrame
from skfairdp.privacy import RandomSource, epsilon_spent, spent

FAIRLEARN_METRICS = {
    "selection_rate": flm.selection_rate,
    "mean_prediction": flm.mean_prediction,
    "tpr": flm.true_positive_rate,
    "fpr": flm.false_positive_rate,
    "tnr": flm.true_negative_rate,
    "fnr": flm.false_negative_rate,
    "accuracy": skm.accuracy_score,
    "error": skm.zero_one_loss,
    "balanced_accuracy": skm.balanced_accuracy_score,
    "recall": skm.recall_score,
    "precision": skm.precision_score,
    "f1": skm.f1_score,
    "recall_pos1": functools.partial(skm.recall_score, pos_label=1),
}


def _data(n=400, seed=0, n_attributes=1, small=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.7, y, 1 - y)
    a = rng.choice(["f", "m", "x"], n, p=[0.45, 0.5, 0.05] if small else None)
    if n_attributes == 1:
        return y, p, pd.Series(a, name="sex")
    b = rng.choice(["black", "white"], n)
    # one intersection left empty: fairlearn shows it as NaN, so must we
    b[a == "x"] = "white"
    return y, p, pd.DataFrame({"sex": a, "race": b})


def _both(metrics, y, p, s, *, weights=None, **kwargs):
    ours = PrivateMetricFrame(metrics=metrics, y_true=y, y_pred=p, sensitive_features=s,
                              epsilon=np.inf, sample_weight=weights, **kwargs)  # fmt: skip
    params = None
    if weights is not None:
        params = {k: {"sample_weight": weights} for k in metrics if metrics[k] is not flm.count}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's zero-division warnings in small groups
        theirs = flm.MetricFrame(metrics=metrics, y_true=y, y_pred=p, sensitive_features=s,
                                 sample_params=params)  # fmt: skip
    return ours, theirs


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


# ------------------------------------------------------------------ exactness
@pytest.mark.parametrize("n_attributes", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_exact_values_equal_fairlearn(n_attributes, weighted):
    y, p, s = _data(n=300, seed=n_attributes, n_attributes=n_attributes, small=True)
    metrics = dict(FAIRLEARN_METRICS)
    if not weighted:
        metrics["count"] = flm.count
    w = np.random.default_rng(5).uniform(0, 3, y.size) if weighted else None
    ours, theirs = _both(metrics, y, p, s, weights=w)
    pd.testing.assert_index_equal(ours.by_group.index, theirs.by_group.index)
    assert list(ours.by_group.columns) == list(theirs.by_group.columns)
    _close(ours.by_group, theirs.by_group)
    _close(ours.overall, theirs.overall)
    for method in ("between_groups", "to_overall"):
        _close(ours.difference(method), theirs.difference(method))
        _close(ours.ratio(method), theirs.ratio(method))
    _close(ours.group_min(), theirs.group_min())
    _close(ours.group_max(), theirs.group_max())
    assert ours.privacy_spent_.epsilon == math.inf
    assert isinstance(ours.dp_event_, dp_accounting.NonPrivateDpEvent)


def test_edge_cells_follow_fairlearn_conventions():
    """Groups with no positives, no predicted positives, one class only: sklearn's zero rules."""
    y = np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 0])
    p = np.array([0, 1, 0, 1, 1, 0, 0, 0, 0, 0])
    s = np.array(["a", "a", "a", "b", "b", "b", "c", "c", "d", "d"])
    ours, theirs = _both(dict(FAIRLEARN_METRICS), y, p, s)
    _close(ours.by_group, theirs.by_group)


def test_single_metric_shapes_and_names_follow_fairlearn():
    y, p, s = _data()
    for metric in (flm.selection_rate, skm.recall_score):
        ours, theirs = _both({"m": metric}, y, p, s)
        single = PrivateMetricFrame(metrics=metric, y_true=y, y_pred=p, sensitive_features=s,
                                    epsilon=np.inf)  # fmt: skip
        reference = flm.MetricFrame(metrics=metric, y_true=y, y_pred=p, sensitive_features=s)
        assert isinstance(single.overall, float) and single.overall == reference.overall
        pd.testing.assert_series_equal(single.by_group, reference.by_group, check_dtype=False)
        assert isinstance(single.difference(), float)
        low, high = single.interval("by_group")
        assert isinstance(low, pd.Series) and (low <= single.by_group).all()
        assert (single.by_group <= high).all()


def test_string_names_are_the_same_metrics():
    y, p, s = _data()
    named = {"selection_rate": "selection_rate", "tpr": "true_positive_rate", "acc": "accuracy",
             "bal": "balanced_accuracy", "prec": "precision", "err": "error_rate"}  # fmt: skip
    functions = {"selection_rate": flm.selection_rate, "tpr": flm.true_positive_rate,
                 "acc": skm.accuracy_score, "bal": skm.balanced_accuracy_score,
                 "prec": skm.precision_score, "err": skm.zero_one_loss}  # fmt: skip
    a = PrivateMetricFrame(metrics=named, y_true=y, y_pred=p, sensitive_features=s, epsilon=np.inf)
    _, theirs = _both(functions, y, p, s)
    _close(a.by_group, theirs.by_group)


def test_pos_label_other_than_one():
    y, p, s = _data()
    labels = np.array(["no", "yes"])
    a = PrivateMetricFrame(metrics={"tpr": "true_positive_rate"}, y_true=labels[y],
                           y_pred=labels[p], sensitive_features=s, epsilon=np.inf,
                           pos_label="yes")  # fmt: skip
    b = PrivateMetricFrame(metrics={"tpr": "true_positive_rate"}, y_true=y, y_pred=p,
                           sensitive_features=s, epsilon=np.inf)  # fmt: skip
    _close(a.by_group, b.by_group)


def test_unsupported_metric_lists_the_supported_ones():
    y, p, s = _data()
    for bad in (skm.roc_auc_score, "auc", functools.partial(skm.recall_score, pos_label=0),
                lambda t, q: 0.0):  # fmt: skip
        with pytest.raises(ValueError, match="not a metric of the confusion table.*supported"):
            PrivateMetricFrame(metrics={"m": bad}, y_true=y, y_pred=p, sensitive_features=s,
                               epsilon=1.0)  # fmt: skip
    assert set(METRICS) <= set(supported_metrics())
    assert resolve_metric(flm.count, 1).is_count


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"y_true": [0, 1, np.nan, 1]}, "y_true has missing values"),
        ({"y_pred": [0, None, 1, 1]}, "y_pred has missing values"),
        ({"sensitive_features": ["a", "b", "a"]}, "sensitive_features has 3 rows but y_true has 4"),
        ({"sensitive_features": ["a", None, "a", "b"]}, "sensitive_features"),
        ({"y_pred": [0, 1, 1]}, "y_true has 4 rows but y_pred has 3"),
        ({"epsilon": 0}, "epsilon must be a number > 0"),
        ({"epsilon": -1.0}, "epsilon must be a number > 0"),
        ({"delta": 1.0}, r"delta must be 'auto' or a float in \(0, 1\)"),
        ({"delta": 0.0}, r"delta must be 'auto' or a float in \(0, 1\)"),
        ({"y_true": [0, 1, 2, 1]}, "y_true and y_pred must be binary"),
        ({"y_true": ["a", "b", "a", "b"], "y_pred": ["a", "b", "b", "b"]}, "pos_label=1 is not"),
        ({"sample_weight": [1, 1, 2, 1]}, "at most max_sample_weight=1"),
        ({"sample_weight": [1, 1, 1]}, "sample_weight has 3 values but y_true has 4"),
        ({"sample_weight": [1, np.nan, 1, 1]}, "sample_weight must be finite"),
        ({"max_sample_weight": 0}, "max_sample_weight must be a finite number > 0"),
        ({"metrics": {}}, "metrics is an empty dict"),
    ],
)
def test_bad_input_is_a_clear_error(change, message):
    kwargs = dict(metrics={"sr": "selection_rate"}, y_true=[0, 1, 0, 1], y_pred=[0, 1, 1, 1],
                  sensitive_features=["a", "b", "a", "b"], epsilon=1.0)  # fmt: skip
    kwargs.update(change)
    with pytest.raises(ValueError, match=message):
        PrivateMetricFrame(**kwargs)


def test_bad_interval_arguments():
    frame = PrivateMetricFrame(metrics="selection_rate", y_true=[0, 1, 0, 1], y_pred=[0, 1, 1, 1],
                               sensitive_features=["a", "b", "a", "b"], epsilon=1.0,
                               random_state=0)  # fmt: skip
    with pytest.raises(ValueError, match="kind must be one of"):
        frame.interval("groups")
    with pytest.raises(ValueError, match="confidence must be a number in"):
        frame.interval("by_group", confidence=95)
    with pytest.raises(ValueError, match="method must be one of"):
        frame.difference("pairwise")
