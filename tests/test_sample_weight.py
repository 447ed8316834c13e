"""sample_weight in every estimator: public, bounded weights applied after clipping.

- ``epsilon=inf``: integer weights give the model of the repeated rows (full-batch fits,
  so batching plays no part), for every estimator, fairness terms included;
- private fits: every sensitivity (gradient, dual rows, histograms, counts) is scaled by
  ``max_sample_weight``, the multipliers and the recorded event are unchanged, and
  weights above the bound, negative or non-finite are errors;
- metadata routing requests ``sample_weight`` for ``fit`` like ``sensitive_features``.
"""

import math
import warnings

import numpy as np
import pytest
import sklearn
import torch
from conftest import make_biased_data
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfairdp import (
    CGOOReduction,
    DPFermiClassifier,
    DPSGDClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    GlobalScalingDPClassifier,
    RaCODPClassifier,
)
from skfairdp.engine import clipped_sum
from skfairdp.privacy import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::skfairdp.baselines.UnboundedSensitivityWarning")


def _fit(est, X, y, s, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(est, (GlobalScalingDPClassifier, DPSGDClassifier)):  # no groups
            return est.fit(X, y, **kwargs)
        return est.fit(X, y, sensitive_features=s, **kwargs)


@pytest.fixture(scope="module")
def data():
    return make_biased_data(n=120, seed=3)


@pytest.fixture(scope="module")
def integer_weights(data):
    y = data[1]
    w = np.random.default_rng(0).integers(0, 4, size=len(y))  # zeros drop rows
    w[:8] = 1
    return w


FULL_BATCH = dict(epsilon=np.inf, batch_size=10_000, max_epochs=15, random_state=0)
NON_PRIVATE = {
    "fermi-dp": DPFermiClassifier(fairness_weight=2.0, **FULL_BATCH),
    "fermi-eo-mlp": DPFermiClassifier(
        fairness="equalized_odds", fairness_weight=2.0, hidden_layer_sizes=(4,), **FULL_BATCH
    ),
    "raco": RaCODPClassifier(tolerance=0.02, **FULL_BATCH),
    "global-scaling": GlobalScalingDPClassifier(hidden_layer_sizes=(4,), **FULL_BATCH),
    "dpsgdf": DPSGDFClassifier(hidden_layer_sizes=(), **FULL_BATCH),
    "fairlens": FairLensClassifier(hidden_layer_sizes=(), **FULL_BATCH),
    "dpsgd": DPSGDClassifier(**FULL_BATCH),
    # its statistics and its LogisticRegression oracles see the weights (CGOO's private
    # weights: tests/test_cgoo.py)
    "cgoo": CGOOReduction(LogisticRegression(), epsilon=np.inf, max_iter=3, random_state=0),
}


@pytest.mark.parametrize("name", list(NON_PRIVATE))
def test_integer_weights_are_repeated_rows_at_epsilon_inf(name, data, integer_weights):
    X, y, s = data
    w = integer_weights
    rows = np.repeat(np.arange(len(y)), w)
    weighted = _fit(clone(NON_PRIVATE[name]), X, y, s, sample_weight=w)
    repeated = _fit(clone(NON_PRIVATE[name]), X[rows], y[rows], s[rows])
    unweighted = _fit(clone(NON_PRIVATE[name]), X, y, s)
    got, expected = weighted.predict_proba(X), repeated.predict_proba(X)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.abs(unweighted.predict_proba(X) - expected).max() > 1e-3  # the weights matter
    for attr in ("W_", "lambda_", "group_priors_", "label_weights_"):
        if hasattr(weighted, attr):
            np.testing.assert_allclose(
                getattr(weighted, attr), getattr(repeated, attr), rtol=1e-5, atol=1e-6
            )
    if name == "raco":
        assert weighted.lambda_.max() > 0  # the constraint (weighted rates) was active


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize("cls", [DPFermiClassifier, GlobalScalingDPClassifier])
def test_private_weights_must_be_finite_non_negative_and_bounded(cls, data):
    X, y, s = data
    est = cls(fairness_weight=0) if cls is DPFermiClassifier else cls(hidden_layer_sizes=())
    est.set_params(epsilon=1.0, max_epochs=1, max_sample_weight=2.0)
    for bad in (2.5, -0.1, np.nan, np.inf):
        w = np.ones(len(y))
        w[5] = bad
        with pytest.raises(ValueError, match=r"sample_weight.*max_sample_weight=2"):
            _fit(clone(est), X, y, s, sample_weight=w)
    _fit(clone(est), X, y, s, sample_weight=np.full(len(y), 2.0))  # the bound itself is fine
    with pytest.raises(ValueError, match="weight.*zero"):
        _fit(clone(est), X, y, s, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="sample_weight.shape"):
        _fit(clone(est), X, y, s, sample_weight=np.ones(len(y) + 1))


def test_non_private_weights_need_only_be_finite_and_non_negative(data):
    X, y, s = data
    est = DPFermiClassifier(fairness_weight=0, epsilon=np.inf, max_epochs=1)
    _fit(clone(est), X, y, s, sample_weight=np.full(len(y), 1e3))  # no bound at epsilon=inf
    for bad in (-1.0, np.nan):
        w = np.ones(len(y))
        w[0] = bad
        with pytest.raises(ValueError, match="sample_weight must be finite and non-negative"):
            _fit(clone(est), X, y, s, sample_weight=w)


def test_weights_are_not_modified(data):
    X, y, s = data
    w = np.linspace(0.0, 2.0, len(y))
    before = w.copy()
    _fit(
        DPFermiClassifier(epsilon=1.0, max_epochs=1, max_sample_weight=2.0),
        X,
        y,
        s,
        sample_weight=w,
    )
    np.testing.assert_array_equal(w, before)


# --------------------------------------------------------------------------- after clipping
def test_clipped_sum_multiplies_by_the_weights_after_clipping():
    G = torch.tensor([[3.0, 4.0], [0.3, 0.4], [1e6, 0.0]], dtype=torch.float32)
    w = torch.tensor([2.0, 3.0, 0.5], dtype=torch.float64)
    total, norms = clipped_sum(G, 1.0, w)
    expected = 2.0 * G[0] / 5.0 + 3.0 * G[1] + 0.5 * G[2] / 1e6
    torch.testing.assert_close(total, expected)
    assert torch.equal(norms, torch.tensor([5.0, 0.5, 1e6], dtype=torch.float64))
    for i in range(3):  # each row's contribution is within w_i * C
        one = clipped_sum(G[i : i + 1], 1.0, w[i : i + 1])[0]
        assert float(torch.linalg.vector_norm(one)) <= float(w[i]) * (1 + 1e-6)


def _noise_stds(monkeypatch):
    stds = []
    original = RandomSource.normal

    def normal(self, shape, std, dtype=torch.float32):
        stds.append(float(std))
        return original(self, shape, std, dtype)

    monkeypatch.setattr(RandomSource, "normal", normal)
    return stds


@pytest.mark.parametrize(
    "est",
    [
        GlobalScalingDPClassifier(variant="clip", hidden_layer_sizes=()),
        GlobalScalingDPClassifier(variant="adapt", hidden_layer_sizes=()),
        DPFermiClassifier(fairness_weight=1.0, group_priors=[0.5, 0.5]),
        DPFermiClassifier(fairness_weight=1.0, privacy_unit="sensitive", group_priors=[0.5, 0.5]),
        DPFermiClassifier(fairness_weight=0.0),
        RaCODPClassifier(),
        DPSGDClassifier(),
    ],
    ids=["gs-clip", "gs-adapt", "fermi-record", "fermi-sensitive", "fermi-dpsgd", "raco", "dpsgd"],
)
def test_every_noise_scale_grows_by_max_sample_weight_and_the_event_does_not(
    est, data, monkeypatch
):
    """Same seed, weights of 1 under max_sample_weight=3: every Gaussian draw (gradient,
    dual rows, histograms, counts) has exactly 3x the unweighted std, and the multipliers
    and the recorded event are those of the unweighted fit. (Sensitivities that depend
    on released values, W's clip through released priors or DPSGD-F's group bounds, are
    covered below: the 3x noisier releases move them.)"""
    X, y, s = data
    est = clone(est).set_params(epsilon=2.0, max_epochs=1, batch_size=40, random_state=0)
    stds = _noise_stds(monkeypatch)
    plain = _fit(clone(est), X, y, s)
    plain_stds = list(stds)
    stds.clear()
    weighted = _fit(
        clone(est).set_params(max_sample_weight=3.0), X, y, s, sample_weight=np.ones(len(y))
    )
    assert len(stds) == len(plain_stds) > 0
    np.testing.assert_allclose(stds, [3.0 * v for v in plain_stds], rtol=1e-12)
    assert weighted.dp_event_ == plain.dp_event_
    assert weighted.privacy_spent_ == plain.privacy_spent_
    assert weighted.noise_multiplier_ == plain.noise_multiplier_
    # without sample_weight the bound changes nothing
    stds.clear()
    _fit(clone(est).set_params(max_sample_weight=3.0), X, y, s)
    assert stds == plain_stds


def test_released_histograms_and_data_dependent_bounds_scale_too(data, monkeypatch):
    X, y, s = data
    stds = _noise_stds(monkeypatch)
    fermi = DPFermiClassifier(epsilon=2.0, max_epochs=1, batch_size=40, random_state=0)
    _fit(clone(fermi), X, y, s)
    hist = stds[0]  # the group histogram, released before training
    stds.clear()
    _fit(clone(fermi).set_params(max_sample_weight=3.0), X, y, s, sample_weight=np.ones(len(y)))
    assert stds[0] == pytest.approx(3.0 * hist, rel=1e-12)
    stds.clear()
    est = DPSGDFClassifier(
        hidden_layer_sizes=(), epsilon=2.0, max_epochs=1, batch_size=40, random_state=0
    ).set_params(max_sample_weight=3.0)
    est = _fit(est, X, y, s, sample_weight=np.ones(len(y)))
    counts, gradients = stds[0::2], stds[1::2]  # per step: the 2K counts, then the gradient
    assert counts == [3.0 * est.count_noise_multiplier_] * est.n_steps_
    bounds = est.group_clip_history_.max(axis=1)
    np.testing.assert_allclose(gradients, 3.0 * est.noise_multiplier_ * bounds, rtol=1e-12)


@pytest.mark.parametrize(
    "est",
    [
        DPFermiClassifier(fairness_weight=1.0, privacy_unit="sensitive"),
        RaCODPClassifier(),
        GlobalScalingDPClassifier(hidden_layer_sizes=(3,)),
        DPSGDFClassifier(hidden_layer_sizes=()),
        DPSGDClassifier(),
    ],
    ids=["fermi-sensitive", "raco", "gs-adapt", "dpsgdf", "dpsgd"],
)
def test_unit_weights_give_the_unweighted_model(est, data):
    X, y, s = data
    est = clone(est).set_params(epsilon=2.0, max_epochs=2, batch_size=40, random_state=1)
    plain = _fit(clone(est), X, y, s)
    ones = _fit(clone(est), X, y, s, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(ones.predict_proba(X), plain.predict_proba(X), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- routing
# a small fit that may come out degenerate; the warning is not the subject here
@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")
def test_metadata_routing_requests_sample_weight_for_fit(data):
    X, y, s = data
    w = np.where(np.arange(len(y)) % 3 == 0, 0.5, 1.0)
    seen = []

    class Spy(DPFermiClassifier):
        def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
            seen.append((len(sensitive_features), len(sample_weight)))
            return super().fit(
                X, y, sensitive_features=sensitive_features, sample_weight=sample_weight
            )

    assert Spy().get_metadata_routing().fit.requests == {
        "sensitive_features": True,
        "sample_weight": True,
    }
    gs_requests = GlobalScalingDPClassifier().get_metadata_routing().fit.requests
    assert gs_requests["sample_weight"] is True
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(
            StandardScaler().set_fit_request(sample_weight=False),
            Spy(epsilon=np.inf, max_epochs=1),
        )
        accuracy = get_scorer("accuracy").set_score_request(sample_weight=True)
        search = GridSearchCV(pipe, {"spy__lr": [0.1, 0.2]}, cv=2, scoring=accuracy)
        search.fit(X, y, sensitive_features=s, sample_weight=w)
    assert seen == [(60, 60)] * 4 + [(120, 120)]
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_global_scaling_fit_takes_sample_weight_but_no_groups():
    import inspect

    params = inspect.signature(GlobalScalingDPClassifier.fit).parameters
    assert "sample_weight" in params and "sensitive_features" not in params
    assert math.isinf(GlobalScalingDPClassifier(epsilon=np.inf).epsilon)
