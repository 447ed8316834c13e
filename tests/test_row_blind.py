"""Row-blind scikit-learn steps cost nothing in spent(); an infinite spent() names its steps.

A step on the allowlist (skfairdp.privacy.row_blind) must really read no row: fitted on
two different datasets of the same shape, it transforms identically. Near misses (a
parameter that makes the step read the rows) stay infinite, with a hint.
"""

import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)

from skfairdp import DPSGDClassifier
from skfairdp.preprocessing import DPSimpleImputer, DPStandardScaler
from skfairdp.privacy import PrivacySpent, UnaccountedStepWarning, spent, unaccounted_steps
from skfairdp.privacy.planning import planned_fit_event
from skfairdp.privacy.row_blind import reads_no_rows, row_reading_hint

CATS = [["x", "y", "z"]]
ROW_BLIND = [
    SimpleImputer(strategy="constant", fill_value=50, keep_empty_features=True),
    MissingIndicator(features="all"),
    OneHotEncoder(categories=CATS, sparse_output=False),
    OneHotEncoder(categories=CATS, handle_unknown="ignore", drop="first", sparse_output=False),
    OrdinalEncoder(categories=CATS),
    FunctionTransformer(np.abs),
]
READS_ROWS = [
    (SimpleImputer(strategy="constant", fill_value=50), "keep_empty_features=True"),
    (SimpleImputer(strategy="median"), "DPSimpleImputer"),
    (
        SimpleImputer(strategy="constant", keep_empty_features=True, add_indicator=True),
        "add_indicator=True keeps indicators only",
    ),
    (MissingIndicator(), "features='all'"),
    (OneHotEncoder(), "categories='auto' reads the categories"),
    (OneHotEncoder(categories=CATS, min_frequency=2), "min_frequency or max_categories"),
    (OrdinalEncoder(categories=CATS, max_categories=2), "min_frequency or max_categories"),
    (StandardScaler(), "use skfairdp.preprocessing"),
]


def _data(seed, numeric):
    rng = np.random.default_rng(seed)
    if not numeric:
        return rng.choice(["x", "y", "z"], size=(30 + seed, 1)).astype(object)
    X = rng.normal(size=(30, 2))
    X[rng.random(X.shape) < 0.3] = np.nan
    if seed == 1:
        X[:, 1] = np.nan  # a column entirely missing at fit
    return X


@pytest.mark.parametrize("step", ROW_BLIND, ids=lambda s: type(s).__name__)
def test_allowlisted_steps_read_no_row(step):
    numeric = not isinstance(step, (OneHotEncoder, OrdinalEncoder))
    fits = [step.__class__(**step.get_params()).fit(_data(seed, numeric)) for seed in (0, 1)]
    probe = _data(2, numeric)
    outputs = [np.asarray(f.transform(probe), dtype=object) for f in fits]
    assert outputs[0].shape == outputs[1].shape
    assert np.array_equal(outputs[0], outputs[1]) or np.allclose(
        outputs[0].astype(float), outputs[1].astype(float), equal_nan=True
    )
    assert reads_no_rows(step) and row_reading_hint(step) == ""
    assert spent(fits[0]) == PrivacySpent(0.0, 0.0)
    assert isinstance(planned_fit_event(step, 10), dp_accounting.NoOpDpEvent)


def test_the_default_constant_imputer_reads_the_rows():
    """sklearn drops a column that is entirely missing at fit: the output shape reads the rows."""
    default = SimpleImputer(strategy="constant", fill_value=50)
    assert default.fit(_data(0, True)).transform(_data(2, True)).shape[1] == 2
    with pytest.warns(UserWarning, match="Skipping features without any observed values"):
        assert default.fit(_data(1, True)).transform(_data(2, True)).shape[1] == 1


@pytest.mark.parametrize("step, hint", READS_ROWS, ids=lambda s: getattr(s, "strategy", ""))
def test_near_misses_stay_infinite_with_a_hint(step, hint):
    assert not reads_no_rows(step)
    assert hint in row_reading_hint(step)
    numeric = not isinstance(step, (OneHotEncoder, OrdinalEncoder))
    fitted = step.fit(_data(0, numeric))
    with pytest.warns(UnaccountedStepWarning, match="1 step read the training rows") as info:
        assert spent(fitted) == PrivacySpent(np.inf, 0.0)
    assert hint in str(info[0].message)
    assert isinstance(planned_fit_event(step, 10), dp_accounting.NonPrivateDpEvent)


def _fast():
    return DPSGDClassifier(
        epsilon=1.0, delta=1e-4, batch_size=32, max_epochs=1, noise_multiplier=2.0, random_state=0
    )


def _frame():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=240), "c": rng.choice(["x", "y"], 240)})
    X.loc[:9, "a"] = np.nan
    return X, rng.integers(0, 2, 240)


def _pipeline(imputer, encoder):
    return make_pipeline(
        make_column_transformer(
            (make_pipeline(imputer, DPStandardScaler(bounds=(-3, 3))), ["a"]), (encoder, ["c"])
        ),
        _fast(),
    )


def test_the_issue_pipeline_is_free_with_row_blind_steps():
    X, y = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate one-epoch model
        free = _pipeline(
            SimpleImputer(strategy="constant", fill_value=50, keep_empty_features=True),
            OneHotEncoder(categories=[["x", "y"]]),
        ).fit(X, y)
        leaky = _pipeline(SimpleImputer(strategy="median"), OneHotEncoder()).fit(X, y)
    assert spent(free) == free[-1].privacy_spent_
    assert unaccounted_steps(free) == []
    names = unaccounted_steps(leaky)
    assert [n.split(":")[0] for n in names] == [
        "columntransformer__pipeline__simpleimputer",
        "columntransformer__onehotencoder",
    ]
    with pytest.warns(UnaccountedStepWarning, match="2 steps read") as info:
        assert spent(leaky).epsilon == np.inf
    message = str(info[0].message)
    assert all(name in message for name in names)
    # DPSimpleImputer(strategy="constant") is free whatever keep_empty_features means
    ours = _pipeline(
        DPSimpleImputer("constant", fill_value=50), OneHotEncoder(categories=[["x", "y"]])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X, y)
    assert spent(ours) == ours[-1].privacy_spent_


def test_search_names_its_fold_fits_and_refit():
    X, y = _frame()
    X = X[["a"]].fillna(0.0).to_numpy()
    pipe = make_pipeline(
        StandardScaler(),
        _fast(),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(pipe, {"dpsgdclassifier__lr": [0.1, 1.0]}, cv=KFold(2)).fit(X, y)
    names = [n.split(":")[0] for n in unaccounted_steps(search, X=X, y=y)]
    assert names == [
        "estimator__standardscaler (the fold fits of GridSearchCV)",
        "best_estimator___standardscaler",
    ]
    with pytest.warns(UnaccountedStepWarning):
        spent(search, X=X, y=y)
