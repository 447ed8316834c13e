"""skfairdp.preprocessing: public and private scaler and one-hot encoder.

Sensitivity by property test (neighbouring datasets), accounting (recorded ==
planned, priced within the budget), accuracy of the noisy statistics, public
mode reads nothing, Pipeline + GridSearchCV costs (in test_spent.py too).
"""

import math
import os

import dp_accounting
import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from skfairdp.preprocessing import (
    DPOneHotEncoder,
    DPStandardScaler,
    category_counts,
    moment_sums,
)
from skfairdp.privacy import PrivacySpent, spent
from skfairdp.privacy.planning import planned_fit_event


# ---------------------------------------------------------------------------
# sensitivity: one row added or removed moves each released vector by at most
# the stated L2 sensitivity (random datasets, worst-case rows included)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_scaler_sensitivity_property(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 30)), int(rng.integers(1, 6))
    lower = rng.normal(size=d) * 3
    upper = lower + rng.uniform(0.1, 5, size=d)
    # rows far outside the bounds too: clipping must hold the bound
    X = rng.normal(size=(n, d)) * 10
    full = moment_sums(X, lower, upper)
    for i in range(n):
        without = moment_sums(np.delete(X, i, axis=0), lower, upper)
        assert np.linalg.norm(full - without) <= math.sqrt(2 * d) + 1e-9
    # the bound is attained by a row at a corner of the box (it is tight)
    corner = moment_sums(upper[None, :], lower, upper)
    assert np.linalg.norm(corner) == pytest.approx(math.sqrt(2 * d))


@pytest.mark.parametrize("seed", range(20))
def test_encoder_sensitivity_property(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    declared = [np.array(list("abcde")[: int(rng.integers(1, 6))], dtype=object) for _ in range(d)]
    n = int(rng.integers(2, 30))
    X = rng.choice(list("abcdefg"), size=(n, d)).astype(object)  # f, g: undeclared
    full = category_counts(X, declared)
    for i in range(n):
        without = category_counts(np.delete(X, i, axis=0), declared)
        assert np.linalg.norm(full - without) <= math.sqrt(d) + 1e-9


# ---------------------------------------------------------------------------
# public mode: reads nothing, costs nothing
# ---------------------------------------------------------------------------
def test_public_scaler_maps_bounds_and_costs_nothing():
    bounds = {0: (0.0, 100.0), 1: (-10.0, 10.0)}  # two columns: a pair of pairs is ambiguous
    a = DPStandardScaler(bounds=bounds).fit(np.random.default_rng(0).normal(size=(50, 2)))
    b = DPStandardScaler(bounds=bounds).fit(np.random.default_rng(1).normal(size=(7, 2)) + 100)
    np.testing.assert_array_equal(a.mean_, [50.0, 0.0])
    np.testing.assert_array_equal(a.scale_, b.scale_)
    Z = a.transform([[0.0, -10.0], [100.0, 10.0], [500.0, 0.0]])
    np.testing.assert_allclose(Z, [[-1, -1], [1, 1], [1, 0]])  # clipped to the bounds
    assert isinstance(a.dp_event_, dp_accounting.NoOpDpEvent)
    assert a.privacy_spent_ == PrivacySpent(0.0, 0.0)
    assert spent(a) == PrivacySpent(0.0, 0.0)
    assert isinstance(planned_fit_event(a, 10), dp_accounting.NoOpDpEvent)
    np.testing.assert_allclose(a.inverse_transform(Z[:2]), [[0, -10], [100, 10]])


def test_public_encoder_declared_categories_unknown_is_zero():
    enc = DPOneHotEncoder(categories=[["a", "b"], [1, 2, 3]]).fit(
        np.array([["a", 1]], dtype=object)
    )
    assert [list(c) for c in enc.categories_] == [["a", "b"], [1, 2, 3]]
    out = enc.transform(np.array([["b", 3], ["z", 9], [None, 1]], dtype=object))
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 1], [0, 0, 0, 0, 0], [0, 0, 1, 0, 0]])
    assert list(enc.get_feature_names_out()) == ["x0_a", "x0_b", "x1_1", "x1_2", "x1_3"]
    assert enc.privacy_spent_ == PrivacySpent(0.0, 0.0)


# ---------------------------------------------------------------------------
# private mode: accounting and accuracy
# ---------------------------------------------------------------------------
def test_private_scaler_accounting_and_accuracy():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(40, 10, 20000), rng.uniform(0, 1, 20000)])
    sc = DPStandardScaler(bounds={0: (0, 100), 1: (0, 1)}, epsilon=1.0, random_state=0).fit(X)
    assert isinstance(sc.dp_event_, dp_accounting.GaussianDpEvent)
    assert sc.dp_event_ == planned_fit_event(sc, len(X)) == sc.planned_event(len(X))
    assert sc.delta_ == pytest.approx(5e-06)  # "auto": 0.1 / n rounded down
    assert 0.99 <= sc.privacy_spent_.epsilon <= 1.0
    assert spent(sc) == sc.privacy_spent_
    # noise std of a mean: z sqrt(2 d) r / n ~ 4 * 2 * 50 / 20000 = 0.02 (5 sd margins)
    assert np.all(np.abs(sc.mean_ - X.mean(axis=0)) <= [0.5, 0.01])
    np.testing.assert_allclose(sc.scale_, X.std(axis=0), rtol=0.1)
    Z = sc.transform(X)
    assert abs(Z.mean()) < 0.1 and abs(Z.std() - 1) < 0.1


def test_private_scaler_reproducible_and_noisy():
    X = np.random.default_rng(0).normal(size=(500, 3))
    a = DPStandardScaler(bounds=(-3, 3), epsilon=0.5, random_state=1).fit(X)
    b = DPStandardScaler(bounds=(-3, 3), epsilon=0.5, random_state=1).fit(X)
    c = DPStandardScaler(bounds=(-3, 3), epsilon=0.5, random_state=2).fit(X)
    np.testing.assert_array_equal(a.mean_, b.mean_)
    assert not np.array_equal(a.mean_, c.mean_)
    assert np.all(a.scale_ >= 3 * 1e-3)  # the floor keeps transform finite


@pytest.mark.parametrize(
    "make, released",
    [
        (lambda **kw: DPStandardScaler(bounds=(-3, 3), **kw), lambda s: s.mean_),
        (
            lambda **kw: DPOneHotEncoder(categories=[[0.0, 1.0, 2.0]] * 3, **kw),
            lambda s: np.concatenate(s.noisy_counts_),
        ),
    ],
    ids=["scaler", "encoder"],
)
def test_secure_mode_draws_from_the_os_not_the_seed(make, released, monkeypatch):
    """secure_mode=True ignores random_state: a silent fall-back to the seed fails here."""
    X = np.random.default_rng(0).integers(0, 3, size=(200, 3)).astype(float)
    urandom_bytes = []

    def counting_urandom(size, _urandom=os.urandom):
        urandom_bytes.append(size)
        return _urandom(size)

    monkeypatch.setattr(os, "urandom", counting_urandom)
    a, b = (make(epsilon=1.0, random_state=0, secure_mode=True).fit(X) for _ in range(2))
    assert urandom_bytes, "no noise was drawn from os.urandom"
    seeded = make(epsilon=1.0, random_state=0).fit(X)
    assert not np.array_equal(released(a), released(b))
    assert not np.array_equal(released(a), released(seeded))
    assert a.dp_event_ == b.dp_event_ == seeded.dp_event_  # the noise scale does not change
    assert a.__sklearn_tags__().non_deterministic


def test_private_encoder_keeps_frequent_drops_absent():
    rng = np.random.default_rng(0)
    X = rng.choice(["a", "b", "c"], p=[0.6, 0.3, 0.1], size=(5000, 2)).astype(object)
    enc = DPOneHotEncoder(
        categories=[["a", "b", "c", "d"], ["a", "b", "c", "e"]], epsilon=1.0, random_state=0
    ).fit(X)
    # kept: counts >= 500 are far above the threshold 3 z sqrt(2) ~ 20; d/e have no row
    assert [list(c) for c in enc.categories_] == [["a", "b", "c"], ["a", "b", "c"]]
    assert enc.min_count_ == pytest.approx(3 * enc.noise_multiplier_ * math.sqrt(2))
    assert enc.dp_event_ == enc.planned_event(len(X))
    assert enc.privacy_spent_.epsilon <= 1.0
    assert enc.transform(X[:1]).sum() == 2
    manual = DPOneHotEncoder(
        categories=[["a", "b", "c"]], epsilon=1.0, min_count=1000, random_state=0
    ).fit(X[:, :1])
    assert list(manual.categories_[0]) == ["a", "b"]  # c has ~500 rows


def test_bad_input():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="upper bound"):
        DPStandardScaler(bounds=(1, 0)).fit(X)
    with pytest.raises(ValueError, match="finite"):
        DPStandardScaler(bounds=(0, np.inf)).fit(X)
    with pytest.raises(ValueError, match=r"\(lower, upper\)"):
        DPStandardScaler(bounds=(0, 1, 2)).fit(X)
    with pytest.raises(ValueError, match="epsilon"):
        DPStandardScaler(bounds=(0, 1), epsilon=0.0).fit(X)
    with pytest.raises(ValueError, match="declares 1 columns"):
        DPOneHotEncoder(categories=[["a"]]).fit(X)
    with pytest.raises(ValueError, match="duplicates"):
        DPOneHotEncoder(categories=[["a", "a"], ["b"]]).fit(X)


# both modes of the scaler; the encoder needs declared categories of the checks' columns,
# which a generic check cannot declare
@parametrize_with_checks(
    [
        DPStandardScaler(bounds=(-1e3, 1e3)),
        DPStandardScaler(bounds=(-1e3, 1e3), epsilon=1.0, random_state=0),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
