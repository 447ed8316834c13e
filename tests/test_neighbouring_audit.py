"""Black-box neighbouring-dataset tests of the simplest releases (issue 28, item 1b).

For a noisy count, PrivateMetricFrame's table and DPStandardScaler's moments: the
worst-case neighbouring pair for the unit (add one row of the largest weight, at the
declared bound), many runs of the real release on each, a threshold attack chosen on
the first half of the runs and evaluated once on the second (as
:func:`skfairdp.audit.run_audit` does, with its :func:`~skfairdp.audit.choose_rule` and
:func:`~skfairdp.audit.epsilon_lower_bound`), and an epsilon lower bound by exact
Clopper-Pearson bounds at confidence ``1 - 1e-4``:

- the release as shipped: the lower bound is at most the claimed epsilon (it holds
  with probability >= 1 - 1e-4 whenever the claim is true, whatever the seed);
- the same release under-noised (its noise multiplier divided by ``UNDER``): the lower
  bound exceeds the claim, which shows that the test has power.

The number of runs is set by that power: at ``eps = 1`` (multiplier ~3.7) the worst pair
is ~0.27 noise standard deviations apart and the shipped releases leave a threshold
attack little to find; divided by 8, ~2.2 standard deviations, for which 1000-1500 runs
a side give a bound of ~2-2.5 (simulated with Gaussian scores: 1000 runs 2.0-2.5, 1500
runs 2.3-2.6), well above the claim of 1. Measured (seeded): shipped 0.00 / under-noised
1.95 (count), 0.00 / 2.63 (table), 0.00 / 1.56 (scaler, read through mean_ and var_).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import skfairdp.evaluation.table as evaluation_table
import skfairdp.preprocessing._step as step_module
from skfairdp.audit import choose_rule, epsilon_lower_bound
from skfairdp.preprocessing import DPStandardScaler
from skfairdp.preprocessing._step import PrivateStep
from skfairdp.privacy import (
    RandomSource,
    calibrate_noise_multiplier,
    epsilon_spent,
    gaussian_release_event,
    noisy_count,
)

CONFIDENCE = 1 - 1e-4
UNDER = 8.0  # the under-noised variant's multiplier is the shipped one / UNDER


def audit(scores_in: np.ndarray, scores_out: np.ndarray, delta: float) -> float:
    """Epsilon lower bound: rule chosen on the first half of each side, bound on the rest."""
    half = len(scores_in) // 2
    rule, _ = choose_rule(scores_in[:half], scores_out[:half], delta=delta, confidence=CONFIDENCE)
    eval_in, eval_out = scores_in[half:], scores_out[half:]
    tp, fp = int(rule.guess_in(eval_in).sum()), int(rule.guess_in(eval_out).sum())
    return epsilon_lower_bound(
        tp, len(eval_in), fp, len(eval_out), delta=delta, confidence=CONFIDENCE
    )


@pytest.mark.parametrize("under", [False, True], ids=["shipped", "under-noised"])
def test_noisy_count(under):
    """A count of rows (add/remove one row moves it by 1) calibrated to eps = 1: 1500 runs
    a side, 750 of them evaluating."""
    epsilon, delta, runs = 1.0, 1e-5, 1500
    z = calibrate_noise_multiplier(epsilon, delta, gaussian_release_event, accountant="pld")
    claimed = epsilon_spent(gaussian_release_event(z), delta, accountant="pld").epsilon
    assert claimed <= epsilon + 1e-9
    z_run = z / UNDER if under else z
    random = RandomSource(0)
    # the release of each run on D (100 rows) and D' (101 rows); one call = `runs` releases
    out_d, _ = noisy_count(torch.full((runs,), 100.0, dtype=torch.float64), z_run, random)
    out_dp, _ = noisy_count(torch.full((runs,), 101.0, dtype=torch.float64), z_run, random)
    bound = audit(out_dp.numpy(), out_d.numpy(), delta)
    if under:
        assert bound > epsilon, bound
    else:
        assert bound <= claimed, bound


@pytest.mark.parametrize("under", [False, True], ids=["shipped", "under-noised"])
def test_private_metric_frame_table(monkeypatch, under):
    """PrivateMetricFrame's release (``release_table``) with weights up to 2: D' adds a row of
    weight 2 to one cell. 1500 runs a side (one release of a (1500, 4) table each side)."""
    original = functools.cache(evaluation_table.table_noise_multiplier)
    monkeypatch.setattr(
        evaluation_table,
        "table_noise_multiplier",
        (lambda eps, delta: original(eps, delta) / UNDER) if under else original,
    )
    epsilon, delta, runs, W = 1.0, 1e-5, 1500, 2.0
    base = np.tile([[30.0, 12.5, 7.0, 40.25]], (runs, 1))  # one group's cells, per run
    neighbour = base.copy()
    neighbour[:, 3] += W  # one more true positive of weight W
    releases = []
    for table in (neighbour, base):
        releases.append(
            evaluation_table.release_table(
                table,
                epsilon=epsilon,
                delta=delta,
                n_samples=1000,
                weighted=True,
                max_sample_weight=W,
                random=RandomSource(len(releases)),
            )  # fmt: skip
        )
    claimed = epsilon_spent(releases[1].event, delta, accountant="pld").epsilon
    assert claimed <= epsilon + 1e-9 or under
    bound = audit(releases[0].table[:, 3], releases[1].table[:, 3], delta)
    if under:
        assert bound > epsilon, bound
    else:
        assert bound <= epsilon, bound


@pytest.mark.parametrize("under", [False, True], ids=["shipped", "under-noised"])
def test_scaler_moments(monkeypatch, under):
    """DPStandardScaler on one column in [0, 10]: D = 50 rows at the middle, D' adds a row at
    the upper bound (it moves both released sums by 1, the worst row). 1000 fits a side;
    the attack reads the fitted mean_ and var_ only."""
    calibrate = PrivateStep._noise_multiplier
    cached = functools.cache(
        lambda eps, delta: calibrate(DPStandardScaler((0, 1), epsilon=eps), delta)
    )
    price = functools.cache(step_module.epsilon_spent)  # the price of the same event, once
    monkeypatch.setattr(step_module, "epsilon_spent", lambda e, d, **kw: price(e, d, **kw))
    monkeypatch.setattr(
        PrivateStep,
        "_noise_multiplier",
        lambda self, delta: cached(float(self.epsilon), delta) / (UNDER if under else 1.0),
    )
    epsilon, runs = 1.0, 1000
    D = np.full((50, 1), 5.0)
    D_prime = np.vstack([D, [[10.0]]])
    scores, spent = [], []
    for X in (D_prime, D):
        side = []
        for seed in range(runs):
            sc = DPStandardScaler(bounds=(0.0, 10.0), epsilon=epsilon, delta=1e-5)
            sc.set_params(random_state=seed + (0 if X is D else runs)).fit(X)
            side.append(float((sc.mean_[0] - 5.0) / 5.0 + sc.var_[0] / 25.0))
        scores.append(np.array(side))
        spent.append(sc.privacy_spent_.epsilon)
    bound = audit(scores[0], scores[1], 1e-5)
    if under:
        assert bound > epsilon, bound
    else:
        assert spent[1] <= epsilon + 1e-9
        assert bound <= epsilon, bound
