"""Errors about a missing ``sensitive_features`` name how scikit-learn would forward it.

With metadata routing disabled, a Pipeline, GridSearchCV or cross_validate never passes
``sensitive_features`` to skfairdp's estimators: each estimator's (and PrivateSearchCV's)
error names ``sklearn.set_config(enable_metadata_routing=True)``. With routing enabled it
says to pass the metadata to their fit instead. (The scorers' messages: test_scorers.py.)
"""

import pytest
import sklearn
from conftest import make_biased_data
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline

from skfairdp import (
    CGOOReduction,
    DPFermiClassifier,
    DPSGDClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    FederatedDPFermiClassifier,
    RaCODPClassifier,
)
from skfairdp.fairness.routing import ENABLE_ROUTING, routing_hint
from skfairdp.model_selection import PrivateSearchCV
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.preprocessing import DPStandardScaler

# FairLens warns at construction-time checks of its fit; not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::skfairdp.baselines.UnboundedSensitivityWarning")

HINT_OFF = r"sklearn\.set_config\(enable_metadata_routing=True\)"
HINT_ON = "metadata routing is enabled"

ESTIMATORS = {
    "DPFermiClassifier": (lambda: DPFermiClassifier(fairness_weight=1.0), "fairness_weight > 0"),
    "RaCODPClassifier": (lambda: RaCODPClassifier(), r"constraints='demographic_parity'"),
    "CGOOReduction": (lambda: CGOOReduction(), "CGOOReduction.fit needs sensitive_features"),
    "FederatedDPFermiClassifier": (
        lambda: FederatedDPFermiClassifier(fairness_weight=1.0),
        "fairness_weight > 0",
    ),
    "DPSGDFClassifier": (lambda: DPSGDFClassifier(), "sensitive_features is required"),
    "FairLensClassifier": (lambda: FairLensClassifier(), "sensitive_features is required"),
    "DPThresholdOptimizer": (
        lambda: DPThresholdOptimizer(LogisticRegression(), epsilon=1.0),
        "DPThresholdOptimizer.fit needs sensitive_features",
    ),
    "PrivateSearchCV": (
        lambda: PrivateSearchCV(DPSGDClassifier(), {"lr": [0.1]}, fairness="demographic_parity"),
        "needs fit\\(X, y, sensitive_features=...\\)",
    ),
}


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_biased_data(n=120, seed=0)
    return X, y


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_missing_groups_names_set_config_when_routing_is_off(name, data):
    make, what = ESTIMATORS[name]
    X, y = data
    assert not sklearn.get_config()["enable_metadata_routing"]
    with pytest.raises(ValueError, match=what) as info:
        make().fit(X, y)
    assert ENABLE_ROUTING in str(info.value)
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match=what) as info:
            make().fit(X, y)
    assert HINT_ON in str(info.value) and ENABLE_ROUTING not in str(info.value)


def test_inside_a_pipeline_and_cross_val_score(data):
    """The path a user takes: routing off, the estimator in a Pipeline, scored by sklearn."""
    X, y = data
    pipe = make_pipeline(DPStandardScaler(bounds=(-5, 5)), DPFermiClassifier(fairness_weight=1.0))
    with pytest.raises(ValueError, match=HINT_OFF):
        pipe.fit(X, y)
    with pytest.raises(ValueError, match=HINT_OFF):
        cross_val_score(pipe, X, y, cv=2, error_score="raise")


def test_hint_follows_the_config():
    assert ENABLE_ROUTING in routing_hint()
    with sklearn.config_context(enable_metadata_routing=True):
        assert HINT_ON in routing_hint() and "params={'sensitive_features': s}" in routing_hint()
    assert routing_hint().count("sklearn.set_config") == 1
