"""DPSimpleImputer then DPStandardScaler with one dict of bounds (issue 38 item 4).

Fitted on a DataFrame, the imputer returns one, so the scaler reads the columns by
name in a Pipeline and in GridSearchCV without ``set_output(transform="pandas")``.
After a step that returns an array the scaler's error names the fix.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from skfairdp.preprocessing import DPSimpleImputer, DPStandardScaler

BOUNDS = {"age": (18, 90), "hours": (1, 99)}


def _data(n=120):
    rng = np.random.default_rng(0)
    # columns in the other order than the dict: a positional reading would swap the bounds
    X = pd.DataFrame({"hours": rng.uniform(1, 99, n), "age": rng.uniform(18, 90, n)})
    X.loc[::7, "age"] = np.nan
    return X, (X["hours"] > 50).astype(int)


def _pipeline(first=None):
    imputer = first or DPSimpleImputer("median", bounds=BOUNDS, epsilon=1.0, random_state=0)
    return make_pipeline(
        imputer, DPStandardScaler(bounds=BOUNDS, epsilon=1.0, random_state=0), LogisticRegression()
    )


def test_same_dict_of_bounds_in_a_pipeline():
    X, y = _data()
    pipe = _pipeline().fit(X, y)
    scaler = pipe[1]
    assert scaler.feature_names_in_.tolist() == ["hours", "age"]
    np.testing.assert_array_equal(scaler.lower_, [1, 18])  # by name, not by the dict's order
    np.testing.assert_array_equal(scaler.upper_, [99, 90])
    assert pipe.predict(X).shape == (len(X),)


def test_same_dict_of_bounds_in_grid_search():
    X, y = _data()
    search = GridSearchCV(_pipeline(), {"logisticregression__C": [0.1, 1.0]}, cv=2,
                          error_score="raise").fit(X, y)  # fmt: skip
    assert search.best_estimator_[1].feature_names_in_.tolist() == ["hours", "age"]


def test_output_type_follows_the_input_and_set_output():
    X, _ = _data()
    imputer = DPSimpleImputer("constant", fill_value=0.0, add_indicator=True)
    out = imputer.fit_transform(X)
    assert isinstance(out, pd.DataFrame) and out.index.equals(X.index)
    assert out.columns.tolist() == [
        "hours",
        "age",
        "missingindicator_hours",
        "missingindicator_age",
    ]
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        assert isinstance(imputer.fit(X).transform(X.to_numpy()), np.ndarray)
    assert isinstance(imputer.fit_transform(X.to_numpy()), np.ndarray)
    default = DPSimpleImputer("constant").set_output(transform="default")
    assert isinstance(default.fit_transform(X), np.ndarray)


def test_after_an_array_step_the_error_names_the_fix():
    X, y = _data()
    pipe = _pipeline(SimpleImputer(strategy="constant", keep_empty_features=True))
    with pytest.raises(ValueError, match=r'set_output\(transform="pandas"\) on the pipeline'):
        pipe.fit(X, y)
    pipe.set_output(transform="pandas").fit(X, y)  # the named fix works
