"""Tests for skfairdp.metrics.fair_violation_floor against exact enumeration."""

import itertools

import numpy as np
import pytest
from scipy.stats import binom

from skfairdp.metrics import (
    demographic_parity_violation,
    equal_opportunity_violation,
    equalized_odds_violation,
    fair_violation_floor,
)

# The simulation's estimate has standard error below 0.5 / sqrt(n_draws) = 0.0035 at the
# default 20,000 draws; it is seeded (random_state=0), so these tolerances (about 4 standard
# errors) are checked once, not re-drawn on each run.
TOL = 0.015


def _rate_gap_distribution(sizes, p):
    """Exact ``E[max - min]`` of ``Binomial(n, p) / n`` over groups of ``sizes``."""
    supports = [np.arange(n + 1) / n for n in sizes]
    pmfs = [binom.pmf(np.arange(n + 1), n, p) for n in sizes]
    total = 0.0
    for combo in itertools.product(*[range(n + 1) for n in sizes]):
        rates = [supports[i][k] for i, k in enumerate(combo)]
        weight = np.prod([pmfs[i][k] for i, k in enumerate(combo)])
        total += weight * (max(rates) - min(rates))
    return total


def _sample(cells):
    """``(y_true, y_pred, groups)`` from ``{(group, label): (rows, predicted positive)}``."""
    y, p, s = [], [], []
    for (group, label), (rows, positive) in cells.items():
        y += [label] * rows
        p += [1] * positive + [0] * (rows - positive)
        s += [group] * rows
    return np.array(y), np.array(p), np.array(s)


def test_two_single_rows_half_positive_is_one_half():
    assert fair_violation_floor([0, 1], [1, 0], sensitive_features=["a", "b"]) == pytest.approx(
        0.5, abs=TOL
    )


def test_demographic_parity_matches_exact_enumeration():
    y, p, s = _sample({("a", 0): (2, 1), ("a", 1): (1, 1), ("b", 0): (3, 0), ("b", 1): (2, 1)})
    pooled = p.mean()  # 3 of 8
    exact = _rate_gap_distribution([3, 5], pooled)
    assert fair_violation_floor(y, p, sensitive_features=s) == pytest.approx(exact, abs=TOL)


def test_three_groups_take_the_largest_gap():
    y = np.zeros(9, dtype=int)
    p = np.array([1, 0, 0, 1, 1, 0, 0, 0, 1])
    s = np.array(["a"] * 2 + ["b"] * 3 + ["c"] * 4)
    exact = _rate_gap_distribution([2, 3, 4], p.mean())
    assert fair_violation_floor(y, p, sensitive_features=s) == pytest.approx(exact, abs=TOL)


def test_equalized_odds_matches_exact_enumeration():
    cells = {("a", 1): (3, 2), ("b", 1): (2, 0), ("a", 0): (4, 1), ("b", 0): (3, 1)}
    y, p, s = _sample(cells)
    tpr, fpr = p[y == 1].mean(), p[y == 0].mean()
    # max(|TPR gap|, |FPR gap|) of independent cells: E[max(A, B)] from the two distributions
    gaps = {}
    for label, rate in ((1, tpr), (0, fpr)):
        na, nb = cells[("a", label)][0], cells[("b", label)][0]
        dist = {}
        for i, j in itertools.product(range(na + 1), range(nb + 1)):
            gap = round(abs(i / na - j / nb), 12)
            dist[gap] = dist.get(gap, 0.0) + binom.pmf(i, na, rate) * binom.pmf(j, nb, rate)
        gaps[label] = dist
    exact = sum(pa * pb * max(a, b) for a, pa in gaps[1].items() for b, pb in gaps[0].items())
    floor = fair_violation_floor(y, p, sensitive_features=s, notion="equalized_odds")
    assert floor == pytest.approx(exact, abs=TOL)
    tpr_only = sum(g * w for g, w in gaps[1].items())
    opportunity = fair_violation_floor(y, p, sensitive_features=s, notion="equal_opportunity")
    assert opportunity == pytest.approx(tpr_only, abs=TOL)


def test_constant_predictions_have_no_floor():
    y, p, s = _sample({("a", 0): (5, 0), ("a", 1): (3, 0), ("b", 0): (4, 0), ("b", 1): (2, 0)})
    for notion in ("demographic_parity", "equalized_odds", "equal_opportunity"):
        assert fair_violation_floor(y, p, sensitive_features=s, notion=notion) == 0.0


def test_floor_shrinks_like_one_over_root_n():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    p = rng.integers(0, 2, 400)
    s = rng.integers(0, 2, 400)
    small = fair_violation_floor(y, p, sensitive_features=s, notion="equalized_odds")
    big = fair_violation_floor(
        np.tile(y, 16), np.tile(p, 16), sensitive_features=np.tile(s, 16), notion="equalized_odds"
    )
    assert big == pytest.approx(small / 4, rel=0.1)


def test_a_fair_classifier_measures_near_its_floor_on_average():
    """The floor is what exactly fair predictions measure: simulate them and compare."""
    rng = np.random.default_rng(1)
    s = np.repeat([0, 1], [300, 40])
    y = (rng.random(340) < np.where(s == 1, 0.4, 0.15)).astype(int)
    measured = {"demographic_parity": [], "equalized_odds": [], "equal_opportunity": []}
    metric = {
        "demographic_parity": demographic_parity_violation,
        "equalized_odds": equalized_odds_violation,
        "equal_opportunity": equal_opportunity_violation,
    }
    for _ in range(1500):  # exactly fair for equalized odds: the rate depends on y only
        p = (rng.random(340) < np.where(y == 1, 0.6, 0.1)).astype(int)
        for notion in ("equalized_odds", "equal_opportunity"):
            measured[notion].append(metric[notion](y, p, sensitive_features=s))
    for notion in ("equalized_odds", "equal_opportunity"):
        # the floor is taken at one draw's pooled rates, close to (0.6, 0.1) on 340 rows
        floor = fair_violation_floor(y, p, sensitive_features=s, notion=notion)
        assert np.mean(measured[notion]) == pytest.approx(floor, rel=0.12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"notion": "parity"}, "notion must be one of"),
        ({"n_draws": 0}, "n_draws must be a positive integer"),
        ({"n_draws": 2.5}, "n_draws must be a positive integer"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fair_violation_floor([0, 1], [1, 0], sensitive_features=[0, 1], **kwargs)


def test_misaligned_sensitive_features_are_rejected():
    with pytest.raises(ValueError, match="sensitive_features"):
        fair_violation_floor([0, 1, 1], [1, 0, 1], sensitive_features=[0, 1])


def test_probabilities_are_rejected():
    with pytest.raises(ValueError, match="hard class predictions"):
        fair_violation_floor([0, 1, 1], [0.2, 0.7, 0.9], sensitive_features=[0, 1, 1])
