"""skfairdp.privacy.spent: the composed cost of fitted estimators, pipelines and searches.

The cost of a GridSearchCV is computed from each candidate's *planned* event
(scikit-learn keeps no fold fits); it is checked here against the events every
fit actually recorded.
"""

import warnings

import dp_accounting
import numpy as np
import pytest
import sklearn
from conftest import make_biased_data
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from skfairdp import DPFermiClassifier, DPSGDClassifier
from skfairdp.preprocessing import DPStandardScaler
from skfairdp.privacy import (
    PrivacySpent,
    UnaccountedStepWarning,
    epsilon_spent,
    spent,
    spent_event,
)
from skfairdp.privacy.planning import planned_fit_event

RECORDED: list = []


class RecordingDPSGD(DPSGDClassifier):
    """Keeps every fit's dp_event_ (the test's ground truth; spent() does not use it)."""

    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        super().fit(X, y, sample_weight=sample_weight)
        RECORDED.append(self.dp_event_)
        return self


class RecordingScaler(DPStandardScaler):
    def fit(self, X, y=None):
        super().fit(X, y)
        RECORDED.append(self.dp_event_)
        return self


def _fast(**params):
    """A cheap private fit: a fixed noise multiplier (one cached RDP curve, steps capped)."""
    defaults = {"batch_size": 32, "max_epochs": 1, "noise_multiplier": 2.0, "random_state": 0}
    return DPSGDClassifier(**{**defaults, **params})


@pytest.fixture(scope="module")
def data():
    return make_biased_data(n=301, seed=1)  # 301 rows: unequal folds


def test_single_fit_and_list(data):
    X, y, _ = data
    a = _fast(epsilon=1.0, delta=1e-4).fit(X, y)
    b = _fast(epsilon=0.5, delta=1e-4, max_epochs=2).fit(X, y)
    assert spent(a) == a.privacy_spent_
    expected = epsilon_spent(dp_accounting.ComposedDpEvent([a.dp_event_, b.dp_event_]), 1e-4)
    assert spent([a, b]) == expected
    assert spent((a, [b])) == expected
    assert spent_event([a, b]) == dp_accounting.ComposedDpEvent([a.dp_event_, b.dp_event_])
    # another delta: the same events priced there
    assert spent([a, b], delta=1e-6).epsilon > expected.epsilon


# a small fit that may come out degenerate; the warning is not the subject here
@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")
def test_grid_search_equals_sum_of_recorded_fits(data):
    """Every candidate x fold (planned) + refit (recorded) == all recorded fits composed."""
    X, y, _ = data
    RECORDED.clear()
    pipe = make_pipeline(
        RecordingScaler(bounds=(-4, 4), epsilon=0.2, delta=1e-4, random_state=0),
        RecordingDPSGD(
            epsilon=3.0,
            delta=1e-4,
            batch_size=32,
            max_epochs=1,
            noise_multiplier=2.0,
            random_state=0,
        ),  # fmt: skip
    )
    grid = [
        {"recordingdpsgd__max_epochs": [1, 2]},  # changes the classifier's event
        {"recordingscaler__epsilon": [0.4]},  # changes the scaler's
    ]
    search = GridSearchCV(pipe, grid, cv=KFold(3)).fit(X, y)
    assert len(RECORDED) == 2 * (3 * 3 + 1)  # scaler + classifier per pipeline fit
    truth = epsilon_spent(dp_accounting.ComposedDpEvent(RECORDED), 1e-4)
    got = spent(search, X=X, y=y)
    assert got.epsilon == pytest.approx(truth.epsilon, rel=1e-9)
    assert got.delta == 1e-4
    # more than any single fit, less than the naive sum of epsilons
    assert spent(search.best_estimator_).epsilon < got.epsilon


def test_planned_equals_recorded_dpfermi():
    """The dry run's event is the recorded one (group histogram + joint steps)."""
    X, y, s = make_biased_data(n=200, seed=0)
    for params in ({"fairness_weight": 2.0}, {"fairness_weight": 0.0}):
        est = DPFermiClassifier(epsilon=1.0, max_epochs=1, batch_size=50, random_state=0, **params)
        est.set_params(batch_size=256)  # > n: no subsampling, cheap exact Gaussian curves
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # small-group notes of the noisy histogram
            est.fit(X, y, sensitive_features=s)
        planned = planned_fit_event(est, len(X))
        # one step of q = 1 is planned as SelfComposed(step, 1), recorded as the bare step
        assert epsilon_spent(planned, 1e-5) == epsilon_spent(est.dp_event_, 1e-5)


def test_cross_validate_result(data):
    X, y, _ = data
    result = cross_validate(_fast(epsilon=1.0, delta=1e-4), X, y, cv=3, return_estimator=True)
    events = [est.dp_event_ for est in result["estimator"]]
    assert spent(result) == epsilon_spent(dp_accounting.ComposedDpEvent(events), 1e-4)
    bare = cross_validate(_fast(epsilon=1.0, delta=1e-4), X, y, cv=2)
    with pytest.raises(ValueError, match="return_estimator=True"):
        spent(bare)


def test_pipelines_non_private_steps(data):
    X, y, _ = data
    clf = _fast(epsilon=1.0, delta=1e-4)
    # a scikit-learn scaler read the rows without noise: infinite, and the warning names it
    with pytest.warns(UnaccountedStepWarning, match=r"- standardscaler: StandardScaler\(\)"):
        assert spent(make_pipeline(StandardScaler(), clf).fit(X, y)) == PrivacySpent(np.inf, 0.0)
    with pytest.warns(UnaccountedStepWarning, match=r"(?s)1 step read .*- LogisticRegression\(\)"):
        assert spent(LogisticRegression().fit(X, y)) == PrivacySpent(np.inf, 0.0)
    # stateless and public steps cost nothing
    fitted = make_pipeline(FunctionTransformer(), DPStandardScaler(bounds=(-3, 3)), clf).fit(X, y)
    assert spent(fitted) == fitted[-1].privacy_spent_
    with pytest.raises(NotFittedError):
        spent(make_pipeline(StandardScaler(), _fast()))


def test_sensitive_unit_makes_xy_steps_free():
    """Under privacy_unit='sensitive' X and y are public: a scaler on X costs nothing."""
    X, y, s = make_biased_data(n=200, seed=0)
    clf = DPFermiClassifier(
        epsilon=1.0, privacy_unit="sensitive", fairness_weight=1.0, max_epochs=1, batch_size=50,
        group_priors=[0.5, 0.5], random_state=0,
    )  # fmt: skip
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(StandardScaler(), clf).fit(X, y, sensitive_features=s)
    assert spent(pipe).epsilon == pytest.approx(pipe[-1].privacy_spent_.epsilon)
    record_fit = _fast(epsilon=1.0, delta=1e-4).fit(X, y)
    with pytest.raises(ValueError, match="different privacy units"):
        spent([pipe, record_fit])


def test_search_needs_its_data(data):
    X, y, _ = data
    search = GridSearchCV(_fast(epsilon=1.0, delta=1e-4), {"lr": [0.1, 1.0]}, cv=2).fit(X, y)
    with pytest.raises(ValueError, match="needs the X"):
        spent(search)
    with pytest.raises(ValueError, match="splits"):
        spent(GridSearchCV(_fast(), {"lr": [0.1]}, cv=3).fit(X, y).set_params(cv=2), X=X, y=y)
    assert spent(search, X=X, y=y).epsilon > spent(search.best_estimator_).epsilon
