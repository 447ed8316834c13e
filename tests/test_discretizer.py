"""DPKBinsDiscretizer: uniform bins from declared bounds (free), private quantile bins.

The release test derives the quantile histogram's sensitivity itself (the largest L2
change of the released statistic when any one row is removed) and checks the noise the
edges are computed from against it, not the constant the code states.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import skfairdp.preprocessing.discretizer as discretizer
from skfairdp import DPSGDClassifier
from skfairdp.preprocessing import (
    DPKBinsDiscretizer,
    DPStandardScaler,
    fine_histograms,
    make_trend_and_bins,
)
from skfairdp.privacy import calibrate_noise_multiplier, gaussian_release_event, spent


def test_uniform_bins_come_from_the_bounds_and_cost_nothing():
    X = np.array([[-5.0, 0.0], [0.0, 0.5], [24.9, 0.99], [25.0, 1.0], [99.0, 7.0]])
    binner = DPKBinsDiscretizer(bounds={0: (0, 100), 1: (0, 1)}, n_bins=4, encode="ordinal")
    ordinal = binner.fit_transform(X)
    np.testing.assert_array_equal(binner.bin_edges_[0], [0, 25, 50, 75, 100])
    np.testing.assert_array_equal(ordinal, [[0, 0], [0, 2], [0, 3], [1, 3], [3, 3]])
    assert isinstance(binner.dp_event_, dp_accounting.NoOpDpEvent)
    assert binner.privacy_spent_.epsilon == 0.0
    onehot = binner.set_params(encode="onehot-dense").fit_transform(X)
    assert onehot.shape == (5, 8) and (onehot.sum(axis=1) == 2).all()
    assert onehot[4, 3] == 1 and onehot[4, 7] == 1
    assert list(binner.get_feature_names_out())[:2] == ["x0_bin0", "x0_bin1"]
    # another sample, the same edges: uniform bins read no row
    other = DPKBinsDiscretizer(bounds={0: (0, 100), 1: (0, 1)}, n_bins=4).fit(X[:2] * 3)
    for a, b in zip(binner.bin_edges_, other.bin_edges_):
        np.testing.assert_array_equal(a, b)


def test_one_row_moves_the_quantile_statistic_by_sqrt_d():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) * 40
    lower, upper = np.full(3, -50.0), np.full(3, 50.0)
    full = fine_histograms(X, lower, upper, 16)
    changes = [
        np.linalg.norm(full - fine_histograms(np.delete(X, i, axis=0), lower, upper, 16))
        for i in range(len(X))
    ]
    assert max(changes) == pytest.approx(math.sqrt(3))


def test_quantile_noise_is_calibrated_to_the_derived_sensitivity(monkeypatch):
    """The histogram the edges come from carries noise of std z * (largest one-row L2
    change of the statistic, derived here), z the multiplier of the recorded event."""
    seen = {}
    release = discretizer.noisy_histogram

    def spy(counts, random, **kwargs):
        noisy, event = release(counts, random, **kwargs)
        seen["counts"], seen["noisy"] = counts.numpy().copy(), noisy.numpy().copy()
        return noisy, event

    monkeypatch.setattr(discretizer, "noisy_histogram", spy)
    rng = np.random.default_rng(1)
    d, n_bins, epsilon = 5, 50, 1.0
    X = rng.uniform(0, 10, size=(400, d))
    binner = DPKBinsDiscretizer(bounds=(0, 10), n_bins=n_bins, strategy="quantile",
                                epsilon=epsilon, random_state=3).fit(X)  # fmt: skip
    lower, upper, cells = np.zeros(d), np.full(d, 10.0), n_bins * discretizer.RESOLUTION
    derived = max(
        np.linalg.norm(fine_histograms(X, lower, upper, cells)
                       - fine_histograms(np.delete(X, i, axis=0), lower, upper, cells))
        for i in range(0, len(X), 7)
    )  # fmt: skip
    z = calibrate_noise_multiplier(epsilon, binner.delta_, gaussian_release_event,
                                   accountant="pld")  # fmt: skip
    assert binner.dp_event_ == dp_accounting.GaussianDpEvent(z)
    np.testing.assert_array_equal(seen["counts"], fine_histograms(X, lower, upper, cells))
    noise = (seen["noisy"] - seen["counts"]).ravel()  # 2,000 draws: std within 8 % at 5 se
    assert noise.std() == pytest.approx(z * derived, rel=0.1)
    assert binner.privacy_spent_.epsilon <= epsilon * (1 + 1e-6)


def test_quantile_edges_approach_the_quantiles_when_noise_is_small():
    rng = np.random.default_rng(2)
    X = rng.exponential(10.0, size=(20000, 1))
    binner = DPKBinsDiscretizer(bounds=(0, 80), n_bins=4, strategy="quantile", epsilon=50.0,
                                random_state=0).fit(X)  # fmt: skip
    cell = 80 / (4 * discretizer.RESOLUTION)
    truth = np.quantile(X[:, 0], [0.25, 0.5, 0.75])
    np.testing.assert_allclose(binner.bin_edges_[0][1:-1], truth, atol=cell)
    counts = binner.transform(X).sum(axis=0) / len(X)
    np.testing.assert_allclose(counts, 0.25, atol=0.08)


def test_bad_input_names_the_argument():
    X = np.ones((10, 2))
    with pytest.raises(ValueError, match="epsilon"):
        DPKBinsDiscretizer(bounds=(0, 1), strategy="quantile").fit(X)
    with pytest.raises(ValueError, match="n_bins"):
        DPKBinsDiscretizer(bounds=(0, 1), n_bins=1).fit(X)
    with pytest.raises(ValueError, match="NaN"):
        DPKBinsDiscretizer(bounds=(0, 1)).fit(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="bounds"):
        DPKBinsDiscretizer(bounds=[(0, 1)] * 3).fit(X)


def test_in_a_pipeline_spent_includes_the_quantile_release():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] ** 2 > 1).astype(int)  # a step function of one feature: bins help
    pipe = make_pipeline(
        DPKBinsDiscretizer(bounds=(-3, 3), n_bins=6, strategy="quantile", epsilon=0.5,
                           random_state=0),
        DPSGDClassifier(epsilon=1.0, max_epochs=20, lr=1.0, random_state=0),
    )  # fmt: skip
    pipe.fit(X, y)
    total = spent(pipe)
    parts = [step.privacy_spent_.epsilon for _, step in pipe.steps]
    assert total.epsilon <= sum(parts) * (1 + 1e-6) and total.epsilon > max(parts)
    assert (pipe.predict(X) == y).mean() > 0.8  # linear on raw X: about the majority, 0.68


@pytest.mark.parametrize("d", [1, 3, 7])
def test_onehot_unit_rows_have_unit_norm_whatever_the_number_of_columns(d):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(50, d)) * 3  # some rows beyond the bounds: clipped into the end bins
    dense = DPKBinsDiscretizer(bounds=(-2, 2), n_bins=5).fit_transform(X)
    unit = DPKBinsDiscretizer(bounds=(-2, 2), n_bins=5, encode="onehot-unit").fit_transform(X)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(unit * math.sqrt(d), dense, rtol=1e-12)  # the same bins


def _frame(n, seed):
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.uniform(17, 90, n), "hours": rng.uniform(1, 99, n),
        "flag": rng.integers(0, 2, n).astype(float),
    })  # fmt: skip


def test_trend_and_bins_are_the_scaler_beside_unit_bins_and_cost_nothing():
    frame = _frame(40, 0)
    bounds = {"age": (17, 90), "hours": (1, 99)}
    features = make_trend_and_bins(bounds, n_bins=4)
    Z = features.fit_transform(frame)
    assert Z.shape == (40, 2 + 8 + 1)
    trend = DPStandardScaler(bounds=bounds).fit_transform(frame[["age", "hours"]])
    np.testing.assert_array_equal(Z[:, :2], trend)
    np.testing.assert_allclose(np.linalg.norm(Z[:, 2:10], axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(Z[:, 10], frame["flag"])  # remainder passes through
    names = list(features.get_feature_names_out())
    assert names[:3] == ["trend__age", "trend__hours", "bins__age_bin0"]
    assert spent(features).epsilon == 0.0
    with pytest.raises(ValueError, match="bounds"):
        make_trend_and_bins([(17, 90)])


def test_trend_and_bins_learn_a_bend_a_linear_model_cannot():
    frame = _frame(3000, 1)
    y = ((frame["age"] - 50).abs() < 15).astype(int).to_numpy()  # middle ages: a bump
    bounds = {"age": (17, 90), "hours": (1, 99)}

    def accuracy(features):
        model = make_pipeline(
            features, DPSGDClassifier(epsilon=2.0, max_epochs=30, lr=2.0, random_state=0)
        )
        return (model.fit(frame, y).predict(frame) == y).mean()

    linear = accuracy(make_trend_and_bins(bounds, n_bins=4).set_params(bins="drop"))
    both = accuracy(make_trend_and_bins(bounds, n_bins=10))
    assert linear < 0.66 and both > 0.85, (linear, both)


@parametrize_with_checks(
    [
        DPKBinsDiscretizer(bounds=(-1e3, 1e3), n_bins=3),
        DPKBinsDiscretizer(bounds=(-1e3, 1e3), n_bins=3, encode="onehot-unit"),
        DPKBinsDiscretizer(bounds=(-1e3, 1e3), n_bins=3, strategy="quantile", epsilon=1.0,
                           random_state=0),
    ]
)  # fmt: skip
def test_sklearn_compatible(estimator, check):
    check(estimator)
