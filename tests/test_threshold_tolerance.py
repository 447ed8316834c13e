"""DPThresholdOptimizer's ``tol`` (fairlearn's relaxed constraint): rates within a stated gap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from fairlearn.postprocessing import ThresholdOptimizer
from test_postprocessing import ScoreColumn, synthetic

from skfairdp import DPSGDClassifier
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.postprocessing.curves import _within_tolerance, optimize_thresholds


def _counts(seed: int, n_groups: int = 3, n_bins: int = 12) -> np.ndarray:
    """(group, label, bin) counts whose groups differ in base rate and score shift."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_groups, 2, n_bins))
    bins = np.arange(n_bins)
    for g in range(n_groups):
        shift = rng.uniform(-3, 3)
        for label, sign in ((0, -1), (1, 1)):
            centre = n_bins / 2 + sign * 2.5 + shift
            counts[g, label] = rng.integers(20, 400) * np.exp(-0.5 * ((bins - centre) / 2.5) ** 2)
    return counts


def _rates(rule, counts: np.ndarray) -> tuple[np.ndarray, float]:
    """Each group's selection rate under ``rule`` and the rule's accuracy on ``counts``."""
    n_groups, _, n_bins = counts.shape
    bins = np.arange(n_bins)
    rates, correct = [], 0.0
    for g in range(n_groups):
        p = rule.positive_probability(np.full(n_bins, g), bins)
        rates.append((counts[g] @ p).sum() / counts[g].sum())
        correct += counts[g, 1] @ p + counts[g, 0] @ (1 - p)
    return np.array(rates), correct / counts.sum()


@pytest.mark.parametrize("seed", range(6))
def test_window_search_is_the_best_feasible_choice(seed):
    """Against brute force over every combination of grid points within the span."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, 15)
    values = rng.uniform(size=(3, 15))
    weights = rng.dirichlet(np.ones(3))
    for tol in (0.0, 2 / 14 + 1e-9, 5 / 14 + 1e-9, 1.0):
        points = _within_tolerance(x, values, weights, tol)
        assert np.ptp(x[points]) <= tol
        got = weights @ values[np.arange(3), points]
        best = max(
            weights @ values[np.arange(3), list(combo)]
            for combo in itertools.product(range(15), repeat=3)
            if np.ptp(x[list(combo)]) <= tol
        )
        assert got == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("tol", [0.02, 0.05, 0.2])
@pytest.mark.parametrize("constraints", ["demographic_parity", "true_positive_rate_parity"])
def test_exact_counts_choose_fairlearns_relaxed_operating_point(constraints, tol):
    """fairlearn 0.13's ThresholdOptimizer(tol=...) on the same scores, one per bin."""
    X, y, g = synthetic(n=800, n_bins=12, n_groups=3, seed=3)
    ours = DPThresholdOptimizer(
        ScoreColumn().fit(None),
        constraints=constraints,
        tol=tol,
        n_bins=12,
        prefit=True,
        epsilon=np.inf,
    ).fit(X, y, sensitive_features=g)
    theirs = ThresholdOptimizer(
        estimator=ScoreColumn().fit(None), constraints=constraints, prefit=True,
        predict_method="predict_proba", tol=tol,
    ).fit(X, y, sensitive_features=g)  # fmt: skip
    np.testing.assert_allclose(
        ours._pmf_predict(X, sensitive_features=g),
        theirs._pmf_predict(X, sensitive_features=g),
        atol=1e-6,
    )


@pytest.mark.parametrize("seed", range(4))
def test_rates_within_the_tolerance_and_accuracy_never_lower(seed):
    counts = _counts(seed)
    previous = -np.inf
    for tol in (None, 0.02, 0.05, 0.1, 0.3):
        rule = optimize_thresholds(counts, "demographic_parity", "accuracy_score", 1000, tol=tol)
        rates, accuracy = _rates(rule, counts)
        assert rates.max() - rates.min() <= (tol or 0.0) + 1e-9
        assert accuracy >= previous - 1e-12  # a looser bound never costs accuracy
        previous = accuracy
    # loose enough, each group sits at its own best rate: the unconstrained optimum
    own = [optimize_thresholds(counts[[g]], "demographic_parity", "accuracy_score", 1000)
           for g in range(len(counts))]  # fmt: skip
    unconstrained = sum(_rates(r, counts[[g]])[1] * counts[g].sum() for g, r in enumerate(own))
    rule = optimize_thresholds(counts, "demographic_parity", "accuracy_score", 1000, tol=1.0)
    assert _rates(rule, counts)[1] == pytest.approx(unconstrained / counts.sum(), abs=1e-9)


def test_tol_zero_is_the_exact_rule():
    counts = _counts(7)
    for constraints in ("demographic_parity", "true_positive_rate_parity"):
        exact = optimize_thresholds(counts, constraints, "accuracy_score", 1000)
        zero = optimize_thresholds(counts, constraints, "accuracy_score", 1000, tol=0.0)
        for a, b in zip(exact.__dict__.values(), zero.__dict__.values()):
            np.testing.assert_array_equal(a, b)


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    s = (rng.uniform(size=n) < 0.3).astype(int)
    X = rng.normal(size=(n, 3)) + s[:, None] * 0.8
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.6).astype(int)
    return X, y, s


def test_fit_with_a_tolerance_trades_the_gap_for_accuracy_on_new_rows():
    X, y, s = _data()
    Xt, yt, st = _data(seed=1)
    base = DPSGDClassifier(epsilon=np.inf, max_epochs=5, random_state=0)
    errors, gaps = [], []
    for tol in (None, 0.1):
        post = DPThresholdOptimizer(base, epsilon=np.inf, tol=tol, random_state=0)
        pred = post.fit(X, y, sensitive_features=s).predict(Xt, sensitive_features=st)
        rates = [pred[st == g].mean() for g in (0, 1)]
        errors.append(np.mean(pred != yt))
        gaps.append(abs(rates[1] - rates[0]))
    # deterministic (seeded, no noise); on 4,000 new rows a gap has sd ~0.017
    assert gaps[0] < 0.05 and 0.05 < gaps[1] < 0.15
    assert errors[1] < errors[0] - 0.005


def test_tol_with_equalized_odds_is_an_error():
    X, y, s = _data(400)
    post = DPThresholdOptimizer(DPSGDClassifier(max_epochs=1), constraints="equalized_odds",
                                tol=0.05)  # fmt: skip
    with pytest.raises(ValueError, match="tol=0.05: relaxed constraints are not supported"):
        post.fit(X, y, sensitive_features=s)
    with pytest.raises(ValueError, match="tol"):
        DPThresholdOptimizer(DPSGDClassifier(), tol=1.5).fit(X, y, sensitive_features=s)
