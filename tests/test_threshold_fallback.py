"""DPThresholdOptimizer's ``fallback_to_constant``: its thresholds against a constant.

The check reads only the released histogram. The tests derive the rule's error and
the difference's noise sd themselves (cell by cell, and by simulating the release),
and check that the fallback releases nothing more.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skfairdp import DPSGDClassifier
from skfairdp._fit.constant_check import CHECK_Z
from skfairdp._fit.degenerate import DegenerateModelWarning
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.postprocessing.curves import ThresholdRule
from skfairdp.postprocessing.fallback import constant_rule, thresholds_check

# two groups, (label, bin) counts: group 0 separates the labels, group 1 less so
COUNTS = np.array(
    [[[50.0, 30.0, 10.0], [5.0, 10.0, 40.0]], [[40.0, 20.0, 20.0], [10.0, 10.0, 15.0]]]
)
# group 0: bin >= 2 always, bin >= 1 with 0.3; group 1: bin >= 2 with 0.6
RULE = ThresholdRule(
    p0=np.array([0.7, 0.6]), k0=np.array([2, 2]), p1=np.array([0.3, 0.0]),
    k1=np.array([1, 3]), p_ignore=np.zeros(2), constant=0.0,
)  # fmt: skip


def _positive(rule, g, b):
    p = rule.p0[g] * (b >= rule.k0[g]) + rule.p1[g] * (b >= rule.k1[g])
    return rule.p_ignore[g] * rule.constant + (1 - rule.p_ignore[g]) * p


def _by_hand(counts, rule, std):
    total = counts.sum()
    wrong = 0.0
    coefficient = {}
    constant = int(counts[:, 0].sum() < counts[:, 1].sum())  # the majority label
    for g in range(counts.shape[0]):
        for label in (0, 1):
            for b in range(counts.shape[2]):
                p = _positive(rule, g, b)
                loss = p if label == 0 else 1 - p
                wrong += loss * counts[g, label, b]
                coefficient[g, label, b] = loss - float(label != constant)
    norm = np.sqrt(sum(a * a for a in coefficient.values()))
    return wrong / total, constant, CHECK_Z * std * norm / total


def test_the_errors_and_margin_are_the_cell_sums():
    check = thresholds_check(COUNTS, RULE, noise_std=7.0, noise_multiplier=7.0)
    error, constant, margin = _by_hand(COUNTS, RULE, 7.0)
    assert check.error == pytest.approx(error, rel=1e-12)
    assert check.constant_class == constant == 0
    assert check.constant_error == pytest.approx(COUNTS[:, 1].sum() / COUNTS.sum())
    assert check.margin == pytest.approx(margin, rel=1e-12)
    assert check.counts.sum() == pytest.approx(COUNTS.sum())
    assert check.counts[1].sum() == pytest.approx(COUNTS[:, 1].sum())  # labels kept
    assert check.falls_back == (check.constant_error <= check.error + check.margin)


def test_the_margin_is_half_the_simulated_sd_of_the_difference():
    """The consumer's noise: Gaussian counts of std 3 around COUNTS, the rule fixed."""
    rng = np.random.default_rng(0)
    std = 3.0
    differences = []
    for _ in range(4000):
        noisy = COUNTS + rng.normal(0.0, std, size=COUNTS.shape)
        check = thresholds_check(noisy, RULE, noise_std=std, noise_multiplier=1.0)
        assert check.constant_class == 0  # 170 vs 90 rows: 8 sds apart, never flips
        differences.append((check.error - check.constant_error) * noisy.sum())
    sd = np.std(differences)  # 4,000 draws: relative sd of the sd estimate ~1.1 %
    expected = thresholds_check(COUNTS, RULE, noise_std=std, noise_multiplier=1.0).margin
    assert sd * CHECK_Z / COUNTS.sum() == pytest.approx(expected, rel=0.08)


def test_exact_counts_keep_a_better_rule_and_the_constant_wins_a_tie():
    assert not thresholds_check(COUNTS, RULE, 0.0, 0.0).falls_back
    everybody_no = constant_rule(2, positive=False)
    tie = thresholds_check(COUNTS, everybody_no, 0.0, 0.0)
    assert tie.falls_back and tie.margin == 0.0 and tie.error == tie.constant_error
    groups, bins = np.array([0, 1, 1]), np.array([2, 0, 1])
    assert np.all(constant_rule(2, positive=True).positive_probability(groups, bins) == 1.0)
    assert np.all(everybody_no.positive_probability(groups, bins) == 0.0)


def _no_signal(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    s = rng.integers(0, 2, size=n)
    y = (rng.random(n) < 0.15).astype(int)  # the label ignores X and s
    return X, y, s


def _signal(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    s = rng.integers(0, 2, size=n)
    y = (2 * X[:, 0] + 0.5 * s + rng.normal(size=n) > 0).astype(int)
    return X, y, s


def _fit(data, **params):
    X, y, s = data
    post = DPThresholdOptimizer(DPSGDClassifier(max_epochs=3), epsilon=1.0, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post.fit(X, y, sensitive_features=s)
    return post, caught


def test_falls_back_where_nothing_beats_the_majority_class_and_releases_nothing_more():
    X, y, s = _no_signal()
    fell = 0
    for seed in range(8):
        post, caught = _fit((X, y, s), random_state=seed)
        plain, _ = _fit((X, y, s), random_state=seed, fallback_to_constant=False)
        assert post.dp_event_ == plain.dp_event_  # the check is post-processing
        np.testing.assert_array_equal(post.histogram_, plain.histogram_)
        if post.fallback_class_ is None:
            continue
        fell += 1
        assert not any(issubclass(w.category, DegenerateModelWarning) for w in caught)
        assert post.fallback_class_ == 0 and post.constant_check_.falls_back
        assert any("fallback_to_constant" in str(w.message) for w in caught)
        assert np.all(post.predict(X, sensitive_features=s) == 0)
    assert fell >= 3  # seeded: 0, 2, 3, 5 (the rule is lenient: fallback.py says why)


def test_keeps_thresholds_that_learn_and_names_the_class():
    X, y, s = _signal()
    labels = np.where(y == 1, "yes", "no")
    post, caught = _fit((X, labels, s), random_state=0)
    assert post.fallback_class_ is None and not post.constant_check_.falls_back
    assert post.constant_check_.error < post.constant_check_.constant_error - 0.1
    assert not any("fallback_to_constant" in str(w.message) for w in caught)
    assert np.mean(post.predict(X, sensitive_features=s) == labels) > 0.75
    # a constant fallback keeps a string label
    X0, y0, s0 = _no_signal()
    post, _ = _fit((X0, np.where(y0 == 1, "yes", "no"), s0), random_state=1)
    assert post.fallback_class_ in (None, "no")


@pytest.mark.parametrize(
    "params",
    [
        {"epsilon": np.inf},
        {"objective": "balanced_accuracy_score"},
        {"fallback_to_constant": False},
    ],
)
def test_no_check_without_noise_for_another_objective_or_when_off(params):
    X, y, s = _no_signal()
    post = DPThresholdOptimizer(DPSGDClassifier(max_epochs=2), random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post.fit(X, y, sensitive_features=s)
    assert post.constant_check_ is None and post.fallback_class_ is None


def test_the_check_reads_the_release_and_its_noise(monkeypatch):
    """The counts the check decides on are the released ``histogram_`` (not the exact
    counts), with the std of each released cell's noise: the multiplier the accountant
    chose times the sensitivity the test derives (one row moves one cell by 1)."""
    from skfairdp.postprocessing import estimator as module

    seen = {}
    original = module.thresholds_check

    def spy(histogram, rule, noise_std, noise_multiplier):
        seen.update(histogram=np.array(histogram), noise_std=noise_std)
        return original(histogram, rule, noise_std, noise_multiplier)

    monkeypatch.setattr(module, "thresholds_check", spy)
    post, _ = _fit(_signal(), random_state=0)
    np.testing.assert_array_equal(seen["histogram"], post.histogram_)
    assert not np.allclose(seen["histogram"], np.round(seen["histogram"]))  # noised
    assert seen["noise_std"] == pytest.approx(post.noise_multiplier_ * 1.0)
    assert post.noise_multiplier_ > 1.0
