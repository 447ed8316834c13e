"""PrivateMetricFrame(control_features=...): fairlearn's MetricFrame exactly at epsilon=inf."""

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    false_positive_rate,
    selection_rate,
    true_positive_rate,
)
from sklearn.metrics import accuracy_score

from skfairdp.metrics import PrivateMetricFrame


def _data(seed, n=300):
    rng = np.random.default_rng(seed)
    y_true, y_pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    sens = rng.choice(["a", "b", "c"], n)
    ctrl = rng.choice(["x", "y"], n)
    return y_true, y_pred, sens, ctrl


def _cases():
    y_true, y_pred, sens, ctrl = _data(0)
    yield "one control", y_true, y_pred, sens, ctrl
    empty = sens.copy()
    empty[(ctrl == "y") & (sens == "c")] = "a"  # group c absent from level y
    yield "empty cell", y_true, y_pred, empty, ctrl
    two = pd.DataFrame({"c1": ctrl, "c2": np.where(y_true[::-1] == 1, "u", "v")})
    yield "two controls", y_true, y_pred, sens, two
    sens2 = pd.DataFrame({"s1": sens, "s2": ctrl[::-1]})
    yield "two sensitive", y_true, y_pred, sens2, pd.Series(ctrl, name="region")
    yield "one control level", y_true, y_pred, sens, np.full(len(sens), 7)


METRICS = [
    selection_rate,
    {"sr": selection_rate, "tpr": true_positive_rate, "fpr": false_positive_rate,
     "acc": accuracy_score},
]  # fmt: skip


def _equal(ours, theirs):
    if isinstance(theirs, pd.DataFrame):
        pd.testing.assert_frame_equal(ours, theirs, check_dtype=False, atol=1e-12)
    elif isinstance(theirs, pd.Series):
        pd.testing.assert_series_equal(ours, theirs, check_dtype=False, atol=1e-12)
    else:
        assert ours == pytest.approx(theirs, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("metrics", METRICS, ids=["single", "dict"])
@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_control_features_equal_fairlearn_at_infinite_epsilon(case, metrics):
    _, y_true, y_pred, sens, ctrl = case
    kw = dict(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=sens,
              control_features=ctrl)  # fmt: skip
    theirs, ours = MetricFrame(**kw), PrivateMetricFrame(**kw, epsilon=np.inf)
    _equal(ours.by_group, theirs.by_group)
    _equal(ours.overall, theirs.overall)
    _equal(ours.group_min(), theirs.group_min())
    _equal(ours.group_max(), theirs.group_max())
    for method in ("between_groups", "to_overall"):
        _equal(ours.difference(method), theirs.difference(method=method))
        _equal(ours.ratio(method), theirs.ratio(method=method))


def test_empty_cell_reads_nan_like_fairlearn():
    _, y_true, y_pred, sens, ctrl = list(_cases())[1]
    frame = PrivateMetricFrame(metrics=selection_rate, y_true=y_true, y_pred=y_pred,
                               sensitive_features=sens, control_features=ctrl,
                               epsilon=np.inf)  # fmt: skip
    assert np.isnan(frame.by_group[("y", "c")])
    assert not np.isnan(frame.difference()["y"])


def test_control_costs_no_extra_privacy_and_intervals_per_level():
    y_true, y_pred, sens, ctrl = _data(1, n=400)
    kw = dict(metrics={"sr": "selection_rate", "tpr": "true_positive_rate"}, y_true=y_true,
              y_pred=y_pred, sensitive_features=sens, epsilon=1.0, n_draws=400,
              random_state=0)  # fmt: skip
    plain, controlled = PrivateMetricFrame(**kw), PrivateMetricFrame(**kw, control_features=ctrl)
    assert controlled.noise_std_ == plain.noise_std_
    assert controlled.privacy_spent_ == plain.privacy_spent_
    assert controlled.table_.shape == (6, 4)
    assert list(controlled.table_.index.names) == ["control_feature_0", "sensitive_feature_0"]
    for kind in ("overall", "difference", "ratio"):
        lower, upper = controlled.interval(kind)
        assert list(lower.index) == ["x", "y"] and list(lower.columns) == ["sr", "tpr"]
        assert (lower.to_numpy() <= upper.to_numpy()).all()
    lower, upper = controlled.interval("by_group")
    assert lower.shape == (6, 2)
    points = controlled.difference()
    assert ((controlled.interval("difference").lower <= points + 1e-12).all()).all()


def test_interval_per_level_equals_frame_on_that_level_at_infinite_epsilon():
    y_true, y_pred, sens, ctrl = _data(2, n=400)
    kw = dict(metrics="selection_rate", epsilon=np.inf, n_draws=400, random_state=0)
    controlled = PrivateMetricFrame(y_true=y_true, y_pred=y_pred, sensitive_features=sens,
                                    control_features=ctrl, **kw)  # fmt: skip
    rows = ctrl == "x"
    alone = PrivateMetricFrame(y_true=y_true[rows], y_pred=y_pred[rows],
                               sensitive_features=sens[rows], **kw)  # fmt: skip
    assert controlled.overall["x"] == alone.overall
    assert controlled.difference()["x"] == alone.difference()


def test_bad_control_features_name_the_argument():
    y_true, y_pred, sens, ctrl = _data(3, n=50)
    with pytest.raises(ValueError, match="control_features"):
        PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred,
                           sensitive_features=sens, control_features=ctrl[:10],
                           epsilon=np.inf)  # fmt: skip


def test_polars_input_equals_pandas():
    pl = pytest.importorskip("polars")
    y_true, y_pred, sens, ctrl = _data(4, n=80)
    frame = pd.DataFrame({"y": y_true, "p": y_pred, "s": sens, "c": ctrl})
    kw = dict(metrics={"sr": selection_rate})
    native = pl.from_pandas(frame)
    ours = PrivateMetricFrame(y_true=native["y"], y_pred=native["p"],
                              sensitive_features=native.select("s"),
                              control_features=native["c"], epsilon=np.inf, **kw)  # fmt: skip
    theirs = MetricFrame(y_true=frame["y"], y_pred=frame["p"], sensitive_features=frame[["s"]],
                         control_features=frame["c"], **kw)  # fmt: skip
    _equal(ours.by_group, theirs.by_group)
    _equal(ours.difference(), theirs.difference())


def test_intervals_plot_through_fairlearns_plotter():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from fairlearn.metrics._plotter import _plot_df

    y_true, y_pred, sens, ctrl = _data(5, n=200)
    frame = PrivateMetricFrame(metrics={"sr": "selection_rate", "tpr": "true_positive_rate"},
                               y_true=y_true, y_pred=y_pred, sensitive_features=sens,
                               control_features=ctrl, epsilon=1.0, n_draws=200,
                               random_state=0)  # fmt: skip
    df = frame.by_group_with_intervals()
    assert list(df.columns) == ["sr", "tpr", "sr interval", "tpr interval"]
    for name in ("sr", "tpr"):
        bounds = np.stack(df[f"{name} interval"].to_list())
        assert (bounds[:, 0] <= bounds[:, 1]).all()
    errors = frame.by_group_errors()  # plot_metric_frame's df_all_errors
    assert errors.shape == (6, 2) and (np.stack(errors["sr"].to_list()) >= 0).all()
    # plot_metric_frame itself accepts only a fairlearn MetricFrame instance
    axes = _plot_df(df, ["sr", "tpr"], "bar", True, "95% interval", errors)
    assert len(np.ravel(axes)) == 2
    plt.close("all")
