"""Tests for the fairness scorers and their metadata routing."""

import pickle

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skfairdp.metrics import (
    demographic_parity_scorer,
    demographic_parity_violation,
    equal_opportunity_scorer,
    equal_opportunity_violation,
    equalized_odds_scorer,
    equalized_odds_violation,
    make_fairness_scorer,
)

SCORERS = {
    "dp": (demographic_parity_scorer, demographic_parity_violation),
    "eo": (equalized_odds_scorer, equalized_odds_violation),
    "eopp": (equal_opportunity_scorer, equal_opportunity_violation),
}


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n = 120
    s = rng.choice(["F", "M"], n)
    X = np.column_stack([rng.normal(size=n) + (s == "F"), rng.normal(size=n)])
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0.5).astype(int)
    return X, y, pd.Series(s, name="sex")


def _manual_fold_scores(X, y, s, violation, cv):
    s = pd.DataFrame(s) if isinstance(s, pd.DataFrame) else np.asarray(s)
    out = []
    for train, test in cv.split(X, y):
        clf = LogisticRegression().fit(X[train], y[train])
        s_test = s.iloc[test] if isinstance(s, pd.DataFrame) else s[test]
        out.append(-violation(y[test], clf.predict(X[test]), sensitive_features=s_test))
    return np.array(out)


def test_cross_validate_routes_sensitive_features_to_scorers(routing, data):
    X, y, s = data
    cv = KFold(4)
    scoring = {name: scorer for name, (scorer, _) in SCORERS.items()}
    result = cross_validate(
        LogisticRegression(),
        X,
        y,
        cv=cv,
        params={"sensitive_features": s},
        scoring={**scoring, "acc": "accuracy"},
        error_score="raise",
    )
    for name, (_, violation) in SCORERS.items():
        expected = _manual_fold_scores(X, y, s, violation, cv)
        np.testing.assert_allclose(result[f"test_{name}"], expected, atol=1e-12)
        assert np.all(result[f"test_{name}"] <= 0)  # greater is better: negated
    assert np.any(result["test_dp"] < 0)
    assert np.all(result["test_acc"] > 0.5)


def test_single_scorer_and_joint_groups(routing, data):
    X, y, s = data
    sf = pd.DataFrame({"sex": s, "older": np.arange(len(y)) % 3 == 0})
    cv = KFold(3)
    result = cross_validate(
        LogisticRegression(),
        X,
        y,
        cv=cv,
        params={"sensitive_features": sf},
        scoring=equalized_odds_scorer,
        error_score="raise",
    )
    expected = _manual_fold_scores(X, y, sf, equalized_odds_violation, cv)
    np.testing.assert_allclose(result["test_score"], expected, atol=1e-12)


def test_grid_search_refits_on_accuracy(routing, data):
    X, y, s = data
    cv = KFold(3)
    search = GridSearchCV(
        LogisticRegression(),
        {"C": [0.01, 1.0]},
        scoring={"acc": "accuracy", "dp": demographic_parity_scorer},
        refit="acc",
        cv=cv,
        error_score="raise",
    ).fit(X, y, sensitive_features=s)
    for i, C in enumerate(search.cv_results_["param_C"]):
        folds = []
        for train, test in cv.split(X, y):
            clf = LogisticRegression(C=C).fit(X[train], y[train])
            folds.append(
                -demographic_parity_violation(
                    y[test], clf.predict(X[test]), sensitive_features=s.iloc[test]
                )
            )
        assert search.cv_results_["mean_test_dp"][i] == pytest.approx(np.mean(folds))
    best = np.argmax(search.cv_results_["mean_test_acc"])
    assert search.best_index_ == best
    assert hasattr(search.best_estimator_, "coef_")


def test_error_when_routing_disabled(data):
    X, y, s = data
    assert not sklearn.get_config()["enable_metadata_routing"]
    with pytest.raises(ValueError, match=r"enable_metadata_routing=True"):
        cross_validate(
            LogisticRegression(),
            X,
            y,
            scoring={"dp": demographic_parity_scorer},
            error_score="raise",
        )
    # with the default error_score, scikit-learn turns the error into NaN + warning
    with pytest.warns(UserWarning, match="enable_metadata_routing=True"):
        result = cross_validate(
            LogisticRegression(), X, y, cv=2, scoring={"dp": demographic_parity_scorer}
        )
    assert np.all(np.isnan(result["test_dp"]))


def test_error_when_routing_enabled_but_not_passed(routing, data):
    X, y, _ = data
    with pytest.raises(ValueError, match="sensitive_features was not passed"):
        cross_validate(
            LogisticRegression(), X, y, scoring=demographic_parity_scorer, error_score="raise"
        )


def test_direct_call_without_routing(data):
    X, y, s = data
    clf = LogisticRegression().fit(X, y)
    for scorer, violation in SCORERS.values():
        got = scorer(clf, X, y, sensitive_features=s)
        assert isinstance(got, float)
        assert got == -violation(y, clf.predict(X), sensitive_features=s)
    with pytest.raises(ValueError, match="did not receive sensitive_features"):
        demographic_parity_scorer(clf, X, y)
    with pytest.raises(TypeError, match="only accept sensitive_features"):
        demographic_parity_scorer(clf, X, y, sensitive_features=s, sample_weight=np.ones(len(y)))


def test_scorers_request_sensitive_features_without_routing():
    # created at import time with routing disabled, yet already requesting
    for scorer, _ in SCORERS.values():
        request = scorer.get_metadata_routing()
        assert request.score.requests["sensitive_features"] is True


def test_alias_with_set_score_request(routing, data):
    X, y, s = data
    scorer = make_fairness_scorer(demographic_parity_violation).set_score_request(
        sensitive_features="group"
    )
    result = cross_validate(
        LogisticRegression(),
        X,
        y,
        cv=KFold(2),
        params={"group": s},
        scoring={"dp": scorer},
        error_score="raise",
    )
    expected = _manual_fold_scores(X, y, s, demographic_parity_violation, KFold(2))
    np.testing.assert_allclose(result["test_dp"], expected)
    # the module-level scorer is unaffected
    requests = demographic_parity_scorer.get_metadata_routing().score.requests
    assert requests == {"sensitive_features": True}


def test_make_fairness_scorer_kwargs_repr_and_pickle(data):
    X, y, s = data
    clf = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer(equal_opportunity_violation, pos_label=0)
    assert repr(scorer) == "make_fairness_scorer(equal_opportunity_violation, pos_label=0)"
    assert repr(demographic_parity_scorer) == "make_fairness_scorer(demographic_parity_violation)"
    expected = -equal_opportunity_violation(y, clf.predict(X), sensitive_features=s, pos_label=0)
    assert scorer(clf, X, y, sensitive_features=s) == expected
    restored = pickle.loads(pickle.dumps(scorer))
    assert restored(clf, X, y, sensitive_features=s) == expected
    with pytest.raises(TypeError, match="sensitive_features keyword"):
        make_fairness_scorer(lambda y_true, y_pred: 0.0)
    with pytest.raises(TypeError, match="scoring time"):
        make_fairness_scorer(demographic_parity_violation, sensitive_features=s)
