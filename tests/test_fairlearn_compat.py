"""fairlearn conventions where users expect them (issue 38 item 10).

PrivateMetricFrame takes a single group as fairlearn's MetricFrame does;
DPThresholdOptimizer takes two sensitive columns with an absent combination
(the groups are those present at fit), routes ``fit(**kwargs)`` to its
estimator, refuses ``X=None`` with a ValueError and reads a one-column
DataFrame ``y`` without a warning.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame, selection_rate
from sklearn.linear_model import LogisticRegression

from skfairdp.metrics import PrivateMetricFrame
from skfairdp.postprocessing import DPThresholdOptimizer

RNG = np.random.default_rng(0)
N = 300
X = RNG.normal(size=(N, 3))
A = RNG.integers(0, 2, N)
B = np.where(A == 1, 0, RNG.integers(0, 2, N))  # the combination (a=1, b=1) never occurs
Y = (X[:, 0] + A + RNG.normal(size=N) > 0.5).astype(int)
PRED = (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("epsilon", [np.inf, 1.0])
def test_metric_frame_single_group_as_fairlearn(epsilon):
    metrics = {"sel": "selection_rate", "acc": "accuracy"}
    frame = PrivateMetricFrame(
        metrics=metrics, y_true=Y, y_pred=PRED, sensitive_features=np.zeros(N),
        epsilon=epsilon, random_state=0,
    )  # fmt: skip
    exact = MetricFrame(
        metrics={"sel": selection_rate, "acc": lambda t, p: np.mean(t == p)},
        y_true=Y, y_pred=PRED, sensitive_features=np.zeros(N),
    )  # fmt: skip
    assert frame.by_group.shape == exact.by_group.shape == (1, 2)
    pd.testing.assert_series_equal(frame.by_group.iloc[0], frame.overall, check_names=False)
    if epsilon == np.inf:
        np.testing.assert_allclose(frame.by_group.to_numpy(), exact.by_group.to_numpy())
    for method in ("between_groups", "to_overall"):
        assert frame.difference(method).tolist() == exact.difference(method).tolist() == [0, 0]
        assert frame.ratio(method).tolist() == exact.ratio(method).tolist() == [1, 1]
        low, high = frame.interval("difference", method=method)
        assert low.tolist() == high.tolist() == [0.0, 0.0]
        low, high = frame.interval("ratio", method=method)
        assert low.tolist() == high.tolist() == [1.0, 1.0]


def test_threshold_optimizer_absent_combination():
    sf = pd.DataFrame({"a": A, "b": B})
    post = DPThresholdOptimizer(LogisticRegression(), epsilon=np.inf, random_state=0)
    post.fit(X, Y, sensitive_features=sf)
    assert post.group_labels_.tolist() == [(0, 0), (0, 1), (1, 0)]
    assert post.histogram_.shape[0] == 3
    assert post.predict(X[:10], sensitive_features=sf[:10]).shape == (10,)
    absent = pd.DataFrame({"a": [1, 0], "b": [1, 0]})
    with pytest.raises(ValueError, match=r"no rows at fit: a=1, b=1") as info:
        post.predict(X[:2], sensitive_features=absent)
    assert "sensitive_values" not in str(info.value)


def test_threshold_optimizer_single_group_present_is_an_error():
    sf = pd.DataFrame({"a": np.zeros(N, int), "b": np.zeros(N, int)})
    with pytest.raises(ValueError, match="single group") as info:
        DPThresholdOptimizer(LogisticRegression(), epsilon=np.inf).fit(X, Y, sensitive_features=sf)
    assert "sensitive_values" not in str(info.value)


class _Recorder(LogisticRegression):
    def fit(self, X, y, sample_weight=None, extra=None):
        self.extra_ = extra
        return super().fit(X, y, sample_weight=sample_weight)


def test_threshold_optimizer_routes_fit_kwargs_to_the_estimator():
    post = DPThresholdOptimizer(_Recorder(), epsilon=np.inf).fit(
        X, Y, sensitive_features=A, extra=7
    )
    assert post.estimator_.extra_ == 7
    prefit = DPThresholdOptimizer(_Recorder().fit(X, Y), prefit=True, epsilon=np.inf)
    with pytest.raises(ValueError, match=r"\['extra'\].*prefit=True"):
        prefit.fit(X, Y, sensitive_features=A, extra=7)


def test_threshold_optimizer_x_none_is_a_value_error():
    with pytest.raises(ValueError, match="X is None"):
        DPThresholdOptimizer(LogisticRegression(), epsilon=np.inf).fit(
            None, Y, sensitive_features=A
        )


def test_threshold_optimizer_one_column_dataframe_y_no_warning():
    post = DPThresholdOptimizer(LogisticRegression(), epsilon=np.inf, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post.fit(X, pd.DataFrame({"label": Y}), sensitive_features=A)
    reference = DPThresholdOptimizer(LogisticRegression(), epsilon=np.inf, random_state=0)
    reference.fit(X, Y, sensitive_features=A)
    np.testing.assert_array_equal(post.histogram_, reference.histogram_)
