"""A difference interval's upper end near a rate of 0 (issue 35).

Two holes let a true gap lie above the 95 % interval of ``difference()`` far more often
than its nominal 2.5 %:

- with two groups and a sign the posterior cannot tell, the upper bound was Neyman's for a
  folded normal centred on the signed gap's posterior mean, which a group at a rate near 0
  pulls towards 0 (its draws are kept inside ``[0, 1]`` and pushed up): a gap of 0.02 between
  a group of 1,620 rows at 0.02 and one of 180 at 0, at epsilon 1, lay above the interval in
  8-10 % of releases;
- when both groups' points tie (both clipped to 0), the same group was taken as the largest
  and the smallest: a signed gap of exactly 0 and an interval of width 0, whatever the
  release (a true-positive-rate gap of 0.02 lay above it in a third of exact evaluations).
- exact counts (epsilon = inf), the gap's upper bound from the posterior draws, whose
  Jeffreys-type prior pushes a group of no positives up from 0 and the gap down: a gap of
  0.05 (1,620 rows at 0.05, 180 at 0) lay above it in 8.5 % of evaluations. Where sampling
  makes most of the gap test's variance, the test's folded interval now bounds it too.

Each check counts the releases whose upper bound lies below the population's gap. A 95 %
equal-tailed interval's upper bound misses in 2.5 % of releases; these are posterior
intervals, so each check allows a stated share (measured after the fix: 0-2 % in the first
two, 4.1 % in the third, checked on more releases), and fails with a false-alarm rate below
1e-4 over the file's checks (the binomial tail, computed here).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from skfairdp.evaluation.simulation import Population, simulate
from skfairdp.metrics import PrivateMetricFrame

#: (name, population, rows, epsilon, metric, gap, allowed share of misses, releases)
SETTINGS = [
    ("large group at 0.02, small at 0, eps 1",
     Population((0.1, 0.9), (0.3, 0.5), (0.0, 0.02), (0.0, 0.02)), 1800, 1.0, "selection_rate",
     0.02, 0.035, 1000),
    ("tied points: small group's tpr 0.02, large's 0, exact",
     Population((0.1, 0.9), (0.3, 0.5), (0.02, 0.0), (0.02, 0.0)), 1800, math.inf,
     "true_positive_rate", 0.02, 0.035, 1000),
    ("large group at 0.05, small at 0, exact",
     Population((0.1, 0.9), (0.3, 0.5), (0.0, 0.05), (0.0, 0.05)), 1800, math.inf,
     "selection_rate", 0.05, 0.05, 4000),
]  # fmt: skip


def most_misses(releases: int, share: float) -> int:
    """The most upper-end misses an interval missing in at most ``share`` of releases shows,
    but with probability below 1e-4 / len(SETTINGS)."""
    return int(stats.binom.isf(1e-4 / len(SETTINGS), releases, share))


def test_the_thresholds_have_the_stated_false_alarm_rate():
    for *_, share, releases in SETTINGS:
        k = most_misses(releases, share)
        assert len(SETTINGS) * stats.binom.sf(k, releases, share) < 1e-4
        assert k / releases < 0.075  # the old upper bounds: 8.5-10 % and a third


@pytest.mark.parametrize(("name", "population", "rows", "epsilon", "metric", "gap", "share",
                          "releases"), SETTINGS, ids=[s[0] for s in SETTINGS])  # fmt: skip
def test_the_upper_end_holds_a_gap_near_zero(
    name, population, rows, epsilon, metric, gap, share, releases
):
    result = simulate(population, rows, epsilon, metrics=(metric,), n_evaluations=releases,
                      n_draws=1000, n_oracle=100, seed=35)  # fmt: skip
    difference = result[-1]
    assert difference["target"] == "difference"
    assert difference["value"] == pytest.approx(gap)
    assert difference["above_upper"] <= most_misses(releases, share), (name, difference)


def test_a_rate_gap_interval_stays_within_one():
    """Small groups at a small epsilon: the folded interval's upper end went above 1 (1.13
    here before), though a gap between two rates is at most 1."""
    highest = 0.0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        s = (rng.random(60) < 0.2).astype(int)
        y, pred = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = PrivateMetricFrame(
                metrics={"tpr": "true_positive_rate", "selection": "selection_rate"},
                y_true=y, y_pred=pred, sensitive_features=s, epsilon=0.2, random_state=seed,
            )  # fmt: skip
            lower, upper = frame.interval("difference")
        assert np.all(np.asarray(lower) >= 0.0)
        highest = max(highest, float(np.max(np.asarray(upper))))
    assert 0.9 < highest <= 1.0
