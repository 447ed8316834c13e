"""No fitted object keeps a seed of its noise unless the user chose it; the searches price rows.

A seed of the noise's stream lets anyone holding the object regenerate the noise and
subtract it from what was released (the exact validation counts, the number of runs
and which one won). Only the user's own ``random_state`` may be kept (experiments).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from skfairdp import DPFermiClassifier
from skfairdp.evaluation import PrivateMetricFrame
from skfairdp.model_selection import FairModelSearch, PrivateSearchCV
from skfairdp.privacy import random as random_module


@pytest.fixture
def noise_seeds(monkeypatch):
    """Every seed a RandomSource drew its stream from during the test."""
    seeds = []
    init = random_module.RandomSource.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if self.seed is not None:
            seeds.append(self.seed)

    monkeypatch.setattr(random_module.RandomSource, "__init__", spy)
    return seeds


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    s = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * s + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


def _kept_seeds(obj, seen=None) -> list:
    """Every ``random_state`` parameter and frame seed reachable from a fitted object."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    found = []
    if isinstance(obj, PrivateMetricFrame):
        found.append(obj._seed)
    if isinstance(obj, BaseEstimator):
        found.append(obj.get_params(deep=False).get("random_state"))
    if isinstance(obj, BaseEstimator | PrivateMetricFrame):
        for value in vars(obj).values():
            found += _kept_seeds(value, seen)
    if isinstance(obj, list | tuple | dict):
        for value in obj.values() if isinstance(obj, dict) else obj:
            found += _kept_seeds(value, seen)
    return [s for s in found if isinstance(s, int | np.integer)]


def test_an_unseeded_frame_keeps_no_seed_of_its_noise(noise_seeds):
    X, y, s = _data()
    frame = PrivateMetricFrame(
        metrics="selection_rate", y_true=y, y_pred=y, sensitive_features=s, epsilon=1.0
    )
    assert noise_seeds and frame._seed not in noise_seeds
    seeded = PrivateMetricFrame(
        metrics="selection_rate", y_true=y, y_pred=y, sensitive_features=s, epsilon=1.0,
        random_state=7,
    )  # fmt: skip
    assert seeded.random_state == 7  # the user's own seed is theirs to keep


@pytest.mark.parametrize("search", ["private_search_cv", "fair_model_search"])
def test_an_unseeded_search_keeps_no_seed_of_its_noise(search, noise_seeds):
    X, y, s = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if search == "private_search_cv":
            est = PrivateSearchCV(
                DPFermiClassifier(max_epochs=2), {"fairness_weight": [0.5, 1.0]}, epsilon=1.0,
                fairness="demographic_parity", max_violation=0.2,
            ).fit(X, y, sensitive_features=s)  # fmt: skip
        else:
            est = FairModelSearch("demographic_parity", 0.2, epsilon=1.0).fit(
                X, y, sensitive_features=s
            )
    kept = _kept_seeds(est)
    assert noise_seeds and not set(kept) & set(noise_seeds), (kept, noise_seeds)


def test_a_seeded_search_still_reproduces():
    X, y, s = _data()
    kw = dict(epsilon=1.0, random_state=3)
    space = {"fairness_weight": [0.5, 1.0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = PrivateSearchCV(DPFermiClassifier(max_epochs=2), space, **kw).fit(
            X, y, sensitive_features=s
        )
        b = PrivateSearchCV(DPFermiClassifier(max_epochs=2), space, **kw).fit(
            X, y, sensitive_features=s
        )
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.best_estimator_.random_state == b.best_estimator_.random_state is not None


def test_a_step_in_secure_mode_stays_in_it():
    X, y, s = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = PrivateSearchCV(
            DPFermiClassifier(max_epochs=2, secure_mode=True), {"fairness_weight": [0.5, 1.0]},
            epsilon=1.0,
        ).fit(X, y, sensitive_features=s)  # fmt: skip
    assert search.best_estimator_.secure_mode is True


@pytest.mark.parametrize(
    "estimator, space",
    [
        (DPFermiClassifier(privacy_unit="sensitive", fairness_weight=0.0), {"lr": [0.1, 0.2]}),
        (DPFermiClassifier(fairness_weight=0.0), {"privacy_unit": ["record", "sensitive"]}),
    ],
)
def test_private_search_refuses_a_step_that_protects_less_than_rows(estimator, space):
    X, y, s = _data()
    with pytest.raises(ValueError, match="privacy_unit='sensitive'.*whole rows"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            PrivateSearchCV(estimator, space, epsilon=1.0, random_state=0).fit(
                X, y, sensitive_features=s
            )


@pytest.mark.parametrize("meta", ["dpto", "cgoo"])
def test_an_unseeded_meta_estimator_keeps_no_seed_of_its_oracles(meta, noise_seeds):
    from skfairdp import CGOOReduction, DPSGDClassifier
    from skfairdp.postprocessing import DPThresholdOptimizer

    X, y, s = _data()
    est = (
        DPThresholdOptimizer(DPSGDClassifier(max_epochs=2), epsilon=1.0)
        if meta == "dpto"
        else CGOOReduction(epsilon=1.0, max_iter=2)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, sensitive_features=s)
    kept = _kept_seeds(est)
    assert noise_seeds and not set(kept) & set(noise_seeds), (kept, noise_seeds)


def test_the_split_assigns_each_row_on_its_own_coin():
    """Adding a row changes one part by that row: the other rows keep their parts."""
    from skfairdp.model_selection.inputs import independent_split
    from skfairdp.privacy import RandomSource

    n, shares = 5000, [0.2, 0.2]
    parts = independent_split(RandomSource(4), n, shares)
    assert sorted(np.concatenate(parts).tolist()) == list(range(n))  # a partition
    for part, share in zip(parts, [*shares, 0.6]):
        assert abs(len(part) - share * n) < 6 * np.sqrt(share * (1 - share) * n)
    # the same coins for n rows and for n + 1 (one row appended): the first n rows keep
    # their parts, which a split of fixed sizes from n could not guarantee
    more = independent_split(RandomSource(4), n + 1, shares)
    for a, b in zip(parts, more):
        assert np.array_equal(a, b[b < n])


def test_an_unseeded_stream_does_not_follow_numpys_global_seed():
    """``random_state=None`` takes OS entropy: a notebook's ``np.random.seed(0)`` would
    otherwise make every unseeded fit's noise repeat (and be regenerable by whoever knows
    that seed); its children too, where a derived 31-bit seed could be searched."""
    from skfairdp import DPSGDClassifier
    from skfairdp.privacy import RandomSource

    seeds = []
    for _ in range(2):
        np.random.seed(0)  # noqa: NPY002 - the legacy global seed is the point
        source = RandomSource()
        seeds.append((source.seed, source.spawn().seed))
    assert seeds[0][0] != seeds[1][0] and seeds[0][1] != seeds[1][1]
    X, y, _ = _data(200)
    coefs = []
    for _ in range(2):
        np.random.seed(0)  # noqa: NPY002 - the legacy global seed is the point
        model = DPSGDClassifier(epsilon=1.0, max_epochs=2).fit(X, y)
        coefs.append(model.predict_proba(X))
    assert not np.array_equal(coefs[0], coefs[1])
    assert RandomSource(5).seed == RandomSource(5).seed  # a user's seed still reproduces
