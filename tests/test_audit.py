"""Tests of skfairdp.audit: Clopper-Pearson bound, threshold split, canaries, tiny audits."""

import math

import numpy as np
import pytest
from scipy.stats import beta

from skfairdp import DPFermiClassifier, GlobalScalingDPClassifier
from skfairdp.audit import (
    Canary,
    ThresholdRule,
    canary_score,
    choose_rule,
    clopper_pearson_bounds,
    epsilon_lower_bound,
    extreme_canary,
    ordinary_canary,
    run_audit,
)


# -- golden values of the bound (independently from beta quantiles) ------------------
def _tpr_lower(k, n, alpha=0.05):
    return 0.0 if k == 0 else beta.ppf(alpha / 2, k, n - k + 1)


def _fpr_upper(k, n, alpha=0.05):
    return 1.0 if k == n else beta.ppf(1 - alpha / 2, k + 1, n - k)


def test_cp_bounds_are_one_sided_at_half_alpha():
    lo, hi = clopper_pearson_bounds(40, 50, 5, 60, confidence=0.95)
    assert lo == pytest.approx(beta.ppf(0.025, 40, 11), rel=1e-9)
    assert hi == pytest.approx(beta.ppf(0.975, 6, 55), rel=1e-9)
    # extremes: closed forms of the exact interval
    lo, hi = clopper_pearson_bounds(20, 20, 0, 20)
    assert lo == pytest.approx(0.025 ** (1 / 20), rel=1e-9)
    assert hi == pytest.approx(1 - 0.025 ** (1 / 20), rel=1e-9)


@pytest.mark.parametrize("n", [5, 10, 50, 125, 250])
def test_perfect_separation_golden(n):
    expected = max(0.0, math.log(beta.ppf(0.025, n, 1) / beta.ppf(0.975, 1, n)))
    assert epsilon_lower_bound(n, n, 0, n) == pytest.approx(expected, rel=1e-9)
    if n == 5:  # five runs per side cannot show anything at 95%
        assert expected == 0.0
    # the documented caps: ~3.5 at 125 evaluation runs per side, ~4.2 at 250
    if n == 125:
        assert 3.4 < expected < 3.6
    if n == 250:
        assert 4.1 < expected < 4.3


def test_bound_with_delta_golden():
    d = 1e-3
    lo, hi = _tpr_lower(40, 50), _fpr_upper(5, 50)
    expected = max(math.log((lo - d) / hi), math.log((1 - hi - d) / (1 - lo)), 0.0)
    assert epsilon_lower_bound(40, 50, 5, 50, delta=d) == pytest.approx(expected, rel=1e-9)
    assert expected > 0
    # a larger delta can only lower the bound
    assert epsilon_lower_bound(40, 50, 5, 50, delta=0.1) < expected


def test_second_inequality_used():
    # every IN run guessed IN, most OUT runs too: the evidence is in the complements
    lo, hi = _tpr_lower(50, 50), _fpr_upper(35, 50)
    first = math.log(lo / hi)
    second = math.log((1 - hi) / (1 - lo))
    assert second > first
    assert epsilon_lower_bound(50, 50, 35, 50) == pytest.approx(second, rel=1e-9)


def test_no_evidence_is_zero():
    assert epsilon_lower_bound(25, 50, 25, 50) == 0.0
    assert epsilon_lower_bound(0, 50, 0, 50) == 0.0
    assert epsilon_lower_bound(50, 50, 50, 50) == 0.0
    with pytest.raises(ValueError, match="confidence"):
        epsilon_lower_bound(1, 2, 0, 2, confidence=1.0)


# -- rule selection ------------------------------------------------------------------
def test_choose_rule_one_sided_both_directions():
    high, low = np.arange(20.0, 40.0), np.arange(0.0, 20.0)
    rule, bound = choose_rule(high, low)
    assert (rule.direction, rule.center, rule.threshold) == (1, None, 20.0)
    assert bound == pytest.approx(epsilon_lower_bound(20, 20, 0, 20))
    # one OUT run among the IN runs: the bound at each threshold decides (here keeping
    # every IN run and one false positive beats dropping six IN runs)
    rule, bound = choose_rule(high, np.append(low[:-1], 25.0))
    assert rule.threshold == 20.0
    assert bound == pytest.approx(epsilon_lower_bound(20, 20, 1, 20))
    assert bound > epsilon_lower_bound(14, 20, 0, 20) > 0
    rule, _ = choose_rule(low, high)
    assert rule.direction == -1 and rule.center is None
    assert rule.guess_in([19.0, 20.0]).tolist() == [True, False]
    assert "score <= 19" in rule.describe()


def test_choose_rule_nan_and_two_sided():
    values = np.arange(20.0)
    rule, _ = choose_rule([np.nan] * 20, values)
    assert rule.nan_in and rule.guess_in([np.nan, 19.0]).tolist() == [True, False]
    rule, _ = choose_rule(values, [np.nan] * 20)
    assert not rule.nan_in and rule.guess_in([np.nan, 0.0]).tolist() == [False, True]
    # IN pushed far in either direction: only the two-sided rule separates
    far = [-100, 100, -90, 90, np.inf] * 4
    rule, bound = choose_rule(far, np.linspace(-1, 1, 20))
    assert rule.center == pytest.approx(0.0, abs=1e-12)
    assert bound == pytest.approx(epsilon_lower_bound(20, 20, 0, 20))
    assert rule.guess_in([-np.inf, 95, 80, 0.3]).tolist() == [True, True, False, False]


def test_threshold_rule_keys_order_infinities_and_nan():
    rule = ThresholdRule(direction=1, nan_in=True, threshold=0.0)
    keys = rule.keys([-np.inf, 0.0, np.inf, np.nan])
    assert keys[0] < keys[1] < keys[2] < keys[3] == np.inf


# -- canaries and scores ---------------------------------------------------------------
def test_canaries():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    X[7] = [4.0, -4.0, 4.0]
    y = np.array([0, 1] * 25)
    s = np.array(["a", "b"] * 25)
    c = ordinary_canary(X, y, s)
    assert np.allclose(c.x, X[7]) and c.y == 0 and c.s == "b"
    far = ordinary_canary(X, y, s, spread=3.0)
    assert np.allclose(far.x - X.mean(0), 3 * (X[7] - X.mean(0)))
    ext = extreme_canary(c, feature=1)
    assert ext.x[1] == 2e19 and np.isfinite(np.float32(ext.x[1]))
    assert np.array_equal(ext.x[[0, 2]], c.x[[0, 2]]) and ext.y == c.y and ext.s == c.s
    three = ordinary_canary(X, np.arange(50) % 3)
    assert three.y == (7 % 3 + 1) % 3 and three.s is None


class _Fixed:
    """A fitted classifier with given logits."""

    def __init__(self, logits, classes):
        self.logits = np.asarray(logits, dtype=float)
        self.classes_ = np.asarray(classes)

    def decision_function(self, X):
        if self.logits.ndim == 1:
            return np.repeat(self.logits[1] - self.logits[0], len(X))
        return np.repeat(self.logits, len(X), axis=0)


def test_canary_score():
    assert canary_score(_Fixed([0.0, 2.0], ["n", "p"]), [0.0], "p") == 2.0
    assert canary_score(_Fixed([0.0, 2.0], ["n", "p"]), [0.0], "n") == -2.0
    logits = [[1.0, 2.0, 3.0]]
    expected = 2.0 - np.log(np.exp(1.0) + np.exp(3.0))
    assert canary_score(_Fixed(logits, [0, 1, 2]), [0.0], 1) == pytest.approx(expected)
    assert math.isnan(canary_score(_Fixed([[1.0, np.nan, 0.0]], [0, 1, 2]), [0.0], 0))
    assert canary_score(_Fixed([0.0, np.inf], [0, 1]), [0.0], 1) == np.inf


# -- run_audit with fake estimators (exact control of the scores) ---------------------------
N_BASE = 30


def _base():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N_BASE, 2)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(int)


class _Fake:
    """Scores the canary by a callback of (IN?, call number); claims (1, 1e-5)."""

    def __init__(self, score_of, seed):
        self.score_of, self.seed = score_of, seed

    def fit(self, X, y):
        self.value = self.score_of(len(X) == N_BASE + 1, self.seed)
        self.classes_ = np.array([0, 1])
        self.privacy_spent_ = (1.0, 1e-5)
        return self

    def decision_function(self, X):
        return np.full(len(X), self.value)


def _factory(score_of):
    calls = []

    def make(seed):
        calls.append(seed)
        return _Fake(score_of, len(calls) - 1)

    return make, calls


def test_run_audit_selects_on_first_half_only():
    X, y = _base()
    canary = Canary(x=np.zeros(2), y=1)
    R = 40
    # IN runs score +1 in the selection half and -1 in the evaluation half, OUT runs 0:
    # a rule chosen on the selection half ("score >= 1") must find nothing afterwards.
    make, calls = _factory(lambda inside, i: (1.0 if i < R // 2 else -1.0) if inside else 0.0)
    result = run_audit(make, X, y, canary, n_runs=R, random_state=0)
    assert len(calls) == 2 * R and len(set(calls)) == 2 * R
    assert result.selection_bound > 0
    assert result.rule.direction == 1 and result.rule.threshold == 1.0
    assert (result.n_eval_in, result.n_eval_out) == (20, 20)
    assert (result.true_positives, result.false_positives) == (0, 0)
    assert result.epsilon_lower_bound == 0.0
    assert result.epsilon_claimed == 1.0 and result.delta == 1e-5 and result.passed


def test_run_audit_detects_nan_models_and_failures():
    X, y = _base()
    canary = Canary(x=np.zeros(2), y=1)
    make, _ = _factory(lambda inside, i: np.nan if inside else 0.0)
    result = run_audit(make, X, y, canary, n_runs=40)
    assert result.nonfinite_in == 1.0 and result.nonfinite_out == 0.0
    assert (result.true_positives, result.false_positives) == (20, 0)
    expected = math.log((_tpr_lower(20, 20) - 1e-5) / _fpr_upper(0, 20))
    assert result.epsilon_lower_bound == pytest.approx(expected, rel=1e-9)
    assert not result.passed  # 1.6 > the claimed 1

    def boom(inside, i):
        if inside:
            raise FloatingPointError("diverged")
        return 0.0

    make, _ = _factory(boom)
    with pytest.raises(FloatingPointError):
        run_audit(make, X, y, canary, n_runs=4)
    result = run_audit(make, X, y, canary, n_runs=40, on_fit_error="nan")
    assert result.failed_in == 1.0 and result.failed_out == 0.0
    assert result.nonfinite_in == 0.0 and "diverged" in result.errors[0]
    assert result.true_positives == 20 and result.false_positives == 0


# -- tiny real audits --------------------------------------------------------------------
def _tiny_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4)).astype(np.float32)
    s = (rng.random(100) < 0.4).astype(int)
    y = (X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.logistic(size=100) > 0).astype(int)
    return X, y, s


def _gs(epsilon, seed):
    return GlobalScalingDPClassifier(
        variant="clip",
        epsilon=epsilon,
        delta=1e-5,
        hidden_layer_sizes=(),
        batch_size=25,
        max_epochs=10,
        lr=0.1,
        random_state=seed,
    )


def _fermi(seed):
    return DPFermiClassifier(
        epsilon=1.0,
        delta=1e-5,
        group_priors={0: 0.6, 1: 0.4},
        batch_size=25,
        max_epochs=5,
        random_state=seed,
    )


def test_nonprivate_control_is_caught():
    # Non-private SGD memorises a far, mislabelled row. (Over 20 values of random_state
    # this setup gave eps_lb in [0.25, 1.28] and TPR - FPR >= 0.67; the test is seeded.)
    X, y, _ = _tiny_problem()
    canary = ordinary_canary(X, y, spread=4.0)
    result = run_audit(lambda seed: _gs(np.inf, seed), X, y, canary, n_runs=30)
    assert math.isinf(result.epsilon_claimed) and result.passed
    assert result.epsilon_lower_bound > 0
    assert result.tpr - result.fpr > 0.5


def test_private_run_within_claim():
    # confidence 0.9999: if the estimator is (eps, delta)-DP, this fails with
    # probability <= 1e-4 whatever the seeds.
    X, y, s = _tiny_problem()
    canary = ordinary_canary(X, y, s, spread=12.0)
    result = run_audit(_fermi, X, y, canary, sensitive_features=s, n_runs=20, confidence=0.9999)
    assert result.epsilon_claimed == pytest.approx(1.0, abs=1e-3)
    assert result.nonfinite_in == result.nonfinite_out == 0.0
    assert result.epsilon_lower_bound <= result.epsilon_claimed
    extreme = extreme_canary(canary)
    result = run_audit(lambda seed: _gs(1.0, seed), X, y, extreme, n_runs=20, confidence=0.9999)
    assert result.nonfinite_in == 0.0 and result.failed_in == 0.0
    assert result.epsilon_lower_bound <= result.epsilon_claimed
