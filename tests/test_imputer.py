"""skfairdp.preprocessing.DPSimpleImputer: constant (free), noisy mean / median / most frequent.

Sensitivity by property test (neighbouring datasets), accounting (recorded == planned,
within the budget), accuracy of the noisy fill values (5-sd margins), constant reads
no row, pandas / ColumnTransformer / feature names, every error message, sklearn's checks.
"""

import math

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks

from skfairdp.preprocessing import DPSimpleImputer, DPStandardScaler
from skfairdp.preprocessing.imputation import binned_counts, histogram_median, mean_sums
from skfairdp.privacy import PrivacySpent, epsilon_spent, spent
from skfairdp.privacy.planning import planned_fit_event


def _frame(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 10, n)
    age[rng.random(n) < 0.2] = np.nan
    hours = rng.uniform(10, 60, n)
    hours[rng.random(n) < 0.1] = np.nan
    city = rng.choice(["a", "b", "c"], p=[0.2, 0.5, 0.3], size=n).astype(object)
    city[rng.random(n) < 0.3] = np.nan  # missing cities outnumber a
    return pd.DataFrame({"age": age, "hours": hours, "city": city})


# ---------------------------------------------------------------------------
# sensitivity: one row added or removed moves each released vector by at most
# the stated L2 sensitivity, missing entries and rows far outside the bounds included
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_sensitivity_property(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 30)), int(rng.integers(1, 6))
    lower = rng.normal(size=d) * 3
    upper = lower + rng.uniform(0.1, 5, size=d)
    X = rng.normal(size=(n, d)) * 10
    missing = rng.random((n, d)) < 0.3
    X[missing] = np.nan
    full_sums = mean_sums(X, missing, lower, upper)
    full_bins = binned_counts(X, missing, lower, upper, 8)
    for i in range(n):
        keep = np.arange(n) != i
        sums = mean_sums(X[keep], missing[keep], lower, upper)
        bins = binned_counts(X[keep], missing[keep], lower, upper, 8)
        assert np.linalg.norm(full_sums - sums) <= math.sqrt(2 * d) + 1e-9
        assert np.linalg.norm(full_bins - bins) <= math.sqrt(d) + 1e-9
    corner = mean_sums(upper[None, :], np.zeros((1, d), bool), lower, upper)
    assert np.linalg.norm(corner) == pytest.approx(math.sqrt(2 * d))  # tight


@pytest.mark.parametrize(
    "params, released, sensitivity",
    [
        ({"strategy": "mean", "bounds": (0, 1)}, (6,), math.sqrt(6)),
        ({"strategy": "median", "bounds": (0, 1), "n_bins": 4}, (3, 4), math.sqrt(3)),
        ({"strategy": "most_frequent", "categories": [[0, 1]] * 3}, (6,), math.sqrt(3)),
    ],
)
def test_fit_releases_the_vector_with_its_sensitivity(params, released, sensitivity, monkeypatch):
    """The noise is scaled by the sensitivity the property test above proves."""
    import skfairdp.preprocessing.imputer as module

    seen = []

    def spy(counts, random, **kwargs):
        seen.append((tuple(counts.shape), kwargs["sensitivity"]))
        return real(counts, random, **kwargs)

    real = module.noisy_histogram
    monkeypatch.setattr(module, "noisy_histogram", spy)
    X = np.random.default_rng(0).integers(0, 2, size=(40, 3)).astype(float)
    DPSimpleImputer(**params, epsilon=1.0, random_state=0).fit(X)
    assert seen == [(released, pytest.approx(sensitivity))]


def test_histogram_median_exact_counts():
    counts = np.array([[0.0, 2.0, 2.0, 0.0], [-3.0, 0.0, 0.0, 0.0]])  # second: no mass left
    got = histogram_median(counts, np.array([0.0, 0.0]), np.array([4.0, 10.0]))
    np.testing.assert_allclose(got, [2.0, 5.0])  # half of the mass at 2; no mass: middle


# ---------------------------------------------------------------------------
# constant: reads no row
# ---------------------------------------------------------------------------
def test_constant_is_free_and_reads_no_row():
    X = _frame(50)[["age", "hours"]]
    a = DPSimpleImputer("constant", fill_value=-1.0, epsilon=1.0).fit(X)  # epsilon unused
    b = DPSimpleImputer("constant", fill_value=-1.0).fit(X.fillna(3.0) * 100)
    np.testing.assert_array_equal(a.statistics_, b.statistics_)
    assert isinstance(a.dp_event_, dp_accounting.NoOpDpEvent)
    assert a.privacy_spent_ == PrivacySpent(0.0, 0.0) == spent(a)
    assert isinstance(planned_fit_event(a, 10), dp_accounting.NoOpDpEvent)
    out = a.transform(X).to_numpy()  # a DataFrame in, a DataFrame out
    assert not np.isnan(out).any() and np.all(out[X.isna().to_numpy()] == -1.0)
    strings = pd.DataFrame({"c": ["x", np.nan]})
    assert DPSimpleImputer("constant").fit_transform(strings).to_numpy().ravel().tolist() == [
        "x",
        "missing_value",
    ]
    assert DPSimpleImputer("constant").fit_transform([[np.nan, 2]]).tolist() == [[0.0, 2.0]]


# ---------------------------------------------------------------------------
# private strategies: accounting and accuracy
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["mean", "median"])
def test_numeric_strategies_accounting_and_accuracy(strategy):
    X = _frame()[["age", "hours"]]
    imp = DPSimpleImputer(
        strategy, bounds={"age": (0, 100), "hours": (0, 99)}, epsilon=1.0, random_state=0
    ).fit(X)
    assert isinstance(imp.dp_event_, dp_accounting.GaussianDpEvent)
    assert imp.dp_event_ == planned_fit_event(imp, len(X)) == imp.planned_event(len(X))
    assert imp.delta_ == pytest.approx(5e-06)
    assert 0.99 <= imp.privacy_spent_.epsilon <= 1.0
    assert spent(imp) == imp.privacy_spent_
    truth = np.nanmean(X, axis=0) if strategy == "mean" else np.nanmedian(X, axis=0)
    # mean: noise sd z sqrt(2 d) r / n_present ~ 4 * 2 * 50 / 16000 = 0.025 (8 sd margin);
    # median: bins of ~3 with linear interpolation, the noise moves the crossing little
    margin = 0.2 if strategy == "mean" else 1.0
    assert np.all(np.abs(imp.statistics_ - truth) <= margin), (imp.statistics_, truth)
    out = imp.transform(X).to_numpy()
    np.testing.assert_array_equal(out[X.isna().to_numpy()], np.broadcast_to(
        imp.statistics_, X.shape)[X.isna().to_numpy()])  # fmt: skip
    observed = ~X.isna().to_numpy()
    np.testing.assert_array_equal(out[observed], X.to_numpy()[observed])  # untouched


def test_most_frequent_noisy_max_over_declared_categories():
    X = _frame()[["city"]]
    imp = DPSimpleImputer(
        "most_frequent", categories=[["a", "b", "c", "d"]], epsilon=0.5, random_state=0
    ).fit(X)
    assert imp.statistics_.tolist() == ["b"]  # 7000 rows vs 4200: far beyond the noise
    assert imp.dp_event_ == imp.planned_event(len(X))
    assert imp.privacy_spent_.epsilon <= 0.5
    assert set(imp.transform(X).to_numpy().ravel()) == {"a", "b", "c"}
    # numeric categories on a numeric column
    numbers = DPSimpleImputer("most_frequent", categories=[[1, 2]], epsilon=1.0, random_state=0)
    assert numbers.fit_transform([[1.0], [2.0], [2.0], [np.nan]] * 500)[3, 0] == 2.0


def test_reproducible_and_noisy():
    X = _frame(500)[["age"]]
    make = lambda seed: DPSimpleImputer(  # noqa: E731
        bounds=(0, 100), epsilon=0.5, random_state=seed
    ).fit(X)
    assert make(1).statistics_ == make(1).statistics_
    assert make(1).statistics_ != make(2).statistics_


# ---------------------------------------------------------------------------
# indicators, names, pandas, pipelines
# ---------------------------------------------------------------------------
def test_add_indicator_names_and_column_transformer():
    frame = _frame(200)
    numeric = DPSimpleImputer(
        "median", bounds={"age": (0, 100), "hours": (0, 99)}, add_indicator=True,
        epsilon=1.0, random_state=0,
    )  # fmt: skip
    categorical = DPSimpleImputer("constant", fill_value="unknown")
    ct = make_column_transformer(
        (numeric, ["age", "hours"]), (categorical, ["city"]), verbose_feature_names_out=False
    )
    out = ct.fit_transform(frame)
    assert list(ct.get_feature_names_out()) == [
        "age", "hours", "missingindicator_age", "missingindicator_hours", "city",
    ]  # fmt: skip
    np.testing.assert_array_equal(out[:, 2].astype(bool), frame["age"].isna())
    assert not pd.isna(out).any()
    # indicators for every feature, even one with no missing value at fit (free)
    full = DPSimpleImputer("constant", add_indicator=True).fit([[1.0, 2.0]])
    assert full.transform([[np.nan, 2.0]]).tolist() == [[0.0, 2.0, 1.0, 0.0]]
    assert list(full.get_feature_names_out()) == ["x0", "x1", "missingindicator_x0",
                                                  "missingindicator_x1"]  # fmt: skip


def test_spent_of_a_pipeline_composes_the_imputer():
    X = _frame(300)[["age", "hours"]]
    bounds = {"age": (0, 100), "hours": (0, 99)}
    pipe = make_pipeline(
        DPSimpleImputer(bounds=bounds, epsilon=0.3, delta=1e-5, random_state=0),
        DPStandardScaler(bounds=bounds, epsilon=0.3, delta=1e-5, random_state=0),
    ).set_output(transform="pandas")  # the scaler sees the column names
    pipe.fit(X)
    events = dp_accounting.ComposedDpEvent([pipe[0].dp_event_, pipe[1].dp_event_])
    assert spent(pipe) == epsilon_spent(events, 1e-5, accountant="pld")
    free = make_pipeline(
        DPSimpleImputer("constant", fill_value=50), DPStandardScaler(bounds=(0, 100))
    ).fit(X)
    assert spent(free) == PrivacySpent(0.0, 0.0)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, X, expected",
    [
        ({"strategy": "mean", "bounds": (0, 1)}, [[0.0]], r"reads the rows: give it a budget"),
        ({"strategy": "median", "epsilon": 1.0}, [[0.0]], r"needs bounds: the public range"),
        ({"strategy": "most_frequent", "epsilon": 1.0}, [["a"]], "needs categories"),
        (
            {"strategy": "most_frequent", "epsilon": 1.0, "categories": [["a", "?"]],
             "missing_values": "?"},
            [["a"]],
            r"categories\[0\] contains missing_values='\?'",
        ),
        (
            {"strategy": "most_frequent", "epsilon": 1.0, "categories": [["a", "b"]]},
            [[1.0]],
            r"categories\[0\] holds non-numbers, but X is numeric",
        ),
        (
            {"strategy": "most_frequent", "epsilon": 1.0, "categories": [["a"], ["b"]]},
            [["a"]],
            "categories declares 2 columns but X has 1",
        ),
        ({"strategy": "constant", "fill_value": "x"}, [[1.0]], r"fill_value='x' is not a number"),
        (
            {"strategy": "mean", "epsilon": 1.0, "bounds": ([0, 0], [1, 1])},
            [[1.0, 2.0, 3.0]],
            "gives 2 lower bounds, but X has 3 columns",
        ),
    ],
)  # fmt: skip
def test_bad_input(params, X, expected):
    with pytest.raises(ValueError, match=expected):
        DPSimpleImputer(**params).fit(X)


def test_planned_event_needs_a_budget():
    with pytest.raises(ValueError, match="reads the rows"):
        DPSimpleImputer("median", bounds=(0, 1)).planned_event(10)


def test_param_validation():
    check_param_validation("DPSimpleImputer", DPSimpleImputer())
    with pytest.raises(InvalidParameterError, match="strategy"):
        DPSimpleImputer("mode").fit([[0.0]])


@parametrize_with_checks(
    [
        DPSimpleImputer("constant"),
        DPSimpleImputer("mean", bounds=(-1e3, 1e3), epsilon=1.0, random_state=0),
        DPSimpleImputer(
            "median", bounds=(-1e3, 1e3), epsilon=1.0, random_state=0, add_indicator=True
        ),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
