"""``fallback_to_constant``: the check after training (skfairdp._fit.constant_check).

The release is tested against a sensitivity and a multiplier the tests derive
themselves (one row in one cell, its weight bounded by ``max_sample_weight``; 5 % of
the zCDP rho that ``(epsilon, delta)`` allows), the rule against margins the tests
compute from the released counts, and DP-FERMI's accounting against the event.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
import torch

from skfairdp import DPFermiClassifier
from skfairdp._fit import constant_check
from skfairdp._fit.constant_check import decide, release_confusion
from skfairdp._fit.context import FitContext
from skfairdp.privacy import RandomSource
from skfairdp.privacy.mechanisms import EventRecorder


def _derived_multiplier(epsilon: float, delta: float, share: float = 0.05) -> float:
    log_inv_delta = math.log(1 / delta)
    rho = (math.sqrt(epsilon + log_inv_delta) - math.sqrt(log_inv_delta)) ** 2
    return 1 / math.sqrt(2 * share * rho)  # a Gaussian of multiplier z is 1/(2 z^2)-zCDP


def _ctx(X, y, seed, weights=None, max_weight=1.0, private=True):
    return FitContext(
        X=torch.as_tensor(X, dtype=torch.float32).numpy(), y=y, groups=np.zeros_like(y),
        sample_weight=weights, max_weight=max_weight, n_classes=2, private=private,
        delta=1e-5, device=torch.device("cpu"), random=RandomSource(seed), sampler=None,
        planned_steps=0, recorder=EventRecorder(),
    )  # fmt: skip


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0.3).astype(np.int64)
    module = torch.nn.Linear(2, 2)
    with torch.no_grad():
        module.weight.copy_(torch.tensor([[-1.0, 0.2], [1.0, 0.0]]))
        module.bias.zero_()
    pred = module(torch.as_tensor(X, dtype=torch.float32)).argmax(1).numpy()
    return X, y, module, pred


@pytest.mark.parametrize("max_weight", [1.0, 2.0])
def test_the_released_counts_carry_the_derived_noise(max_weight):
    X, y, module, pred = _data()
    weights = np.random.default_rng(1).uniform(0, max_weight, size=len(y))
    exact = np.zeros((2, 2))
    np.add.at(exact, (y, pred), weights)
    z = _derived_multiplier(1.0, 1e-5)
    assert constant_check.check_noise_multiplier(1.0, 1e-5) == pytest.approx(z, rel=1e-12)
    residuals = []
    for seed in range(400):
        ctx = _ctx(X, y, seed, weights, max_weight)
        check = release_confusion(module, ctx, z)
        residuals.append(check.counts - exact)
        assert ctx.recorder.build() == dp_accounting.GaussianDpEvent(z)  # recorded once
    residuals = np.asarray(residuals).ravel()  # 1,600 draws
    # one row moves one cell by at most max_weight: the std must be z * max_weight;
    # the sample std of 1,600 normals is within 9 % of the truth far beyond 1 in 10,000
    assert np.std(residuals) == pytest.approx(z * max_weight, rel=0.09)
    assert abs(np.mean(residuals)) < 5 * z * max_weight / math.sqrt(len(residuals))


def test_exact_counts_without_privacy():
    X, y, module, pred = _data()
    check = release_confusion(module, _ctx(X, y, 0, private=False), 0.0)
    exact = np.zeros((2, 2))
    np.add.at(exact, (y, pred), 1.0)
    np.testing.assert_array_equal(check.counts, exact)
    assert check.margin == 0.0 and check.noise_multiplier == 0.0


def _counts(advantage: float, total=400.0, share=0.3):
    """2x2 counts whose model errs ``advantage`` (a share of rows) less than class 0's constant."""
    positives = share * total  # the constant 0 errs on every positive
    model_errors = positives - advantage * total
    fp = fn = model_errors / 2
    return np.array([[total - positives - fp, fp], [fn, positives - fn]])


def test_the_model_is_kept_only_where_it_beats_the_constant_by_z_sds():
    std, total = 5.0, 400.0
    # error - constant error is sum(counts * ([k != y] - [y != 0])): loadings 0 / 1 on
    # the negatives' row (0, -1 ... ) -> cells (0,1): +1, (1,0): +1 - 1 = 0, (1,1): -1
    sd = std * math.sqrt(2) / total
    margin = constant_check.CHECK_Z * sd
    keep = decide(_counts(1.1 * margin, total), std)
    fall = decide(_counts(0.9 * margin, total), std)
    assert not keep.falls_back and fall.falls_back
    assert keep.margin == pytest.approx(margin) and keep.constant_class == 0
    assert not decide(_counts(0.9 * margin, total), 0.0).falls_back  # exact: any advantage
    assert decide(_counts(0.0, total), 0.0).falls_back  # an exact tie goes to the constant


def _fermi_data(n=800, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * s + rng.normal(scale=0.5, size=n) > 0.3).astype(int)
    return X, y, s


def test_dpfermi_accounts_for_the_check_and_keeps_a_model_that_learns():
    X, y, s = _fermi_data()
    clf = DPFermiClassifier(fairness_weight=1.0, epsilon=1.0, delta=1e-5, random_state=0)
    clf.fit(X, y, sensitive_features=s)
    z = _derived_multiplier(1.0, 1e-5)
    assert clf.constant_check_.noise_multiplier == pytest.approx(z, rel=1e-12)
    assert clf.dp_event_.events[-1] == dp_accounting.GaussianDpEvent(z)
    assert clf.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert not clf.constant_check_.falls_back and clf.fallback_class_ is None
    assert (clf.predict(X) == y).mean() > 0.75


def test_dpfermi_falls_back_on_labels_it_cannot_learn():
    X, y, s = _fermi_data()
    y = (np.random.default_rng(5).random(len(y)) < 0.3).astype(int)  # noise: nothing to learn
    with pytest.warns(UserWarning, match="fallback_to_constant"):
        clf = DPFermiClassifier(fairness_weight=16.0, epsilon=1.0, random_state=0).fit(
            X, y, sensitive_features=s
        )
    assert clf.fallback_class_ == 0
    np.testing.assert_array_equal(clf.predict(X), 0)
    assert np.allclose(clf.predict_proba(X)[:, 0], 1.0)
    assert np.all(np.isfinite(clf.decision_function(X)))


@pytest.mark.parametrize(
    "params",
    [
        dict(fallback_to_constant=False),
        dict(calibration="paper", epsilon=3.0),
        dict(privacy_unit="sensitive"),
    ],
)
def test_no_noisy_check_where_it_is_off_paper_or_public(params):
    X, y, s = _fermi_data()
    kw = {"fairness_weight": 1.0, "epsilon": 1.0, "max_epochs": 2, "random_state": 0, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the paper's preconditions, on a small table
        clf = DPFermiClassifier(**kw).fit(X, y, sensitive_features=s)
    delta = clf.privacy_spent_.delta
    gaussian = dp_accounting.GaussianDpEvent(_derived_multiplier(kw["epsilon"], delta))
    events = clf.dp_event_.events if hasattr(clf.dp_event_, "events") else [clf.dp_event_]
    assert gaussian not in events
    if params.get("privacy_unit") == "sensitive":  # labels and X public: exact counts, free
        assert clf.constant_check_.noise_multiplier == 0.0
    else:
        assert clf.constant_check_ is None
