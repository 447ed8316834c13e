"""DP-FERMI's split/balanced penalty clip (issue 34): a large lambda on a small group.

The fixture: a 6 % minority with the higher base rate (0.57 vs 0.40) and a feature
that tells the groups apart. With the former joint clip (``loss + lambda psi`` clipped
as one row) lambda = 64 at epsilon = 1 slid the model to predicting ~90 % positive
(training error 0.50 against the majority class's 0.41); see doc/dpfermi.md.
"""

import numpy as np
import pytest

from skfairdp import DPFermiClassifier
from skfairdp.fermi.problem import penalty_clip_share


def _minority_table(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.06).astype(int)
    X = rng.normal(size=(n, 6))
    X[:, 0] += 0.8 * s
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.7, size=n) > 0.4).astype(int)
    return X, y, s


def _fit(lam, penalty_clip="balanced", max_epochs=10, **kw):
    X, y, s = _minority_table()
    clf = DPFermiClassifier(
        fairness_weight=lam, epsilon=1.0, delta=1e-5, penalty_clip=penalty_clip,
        max_epochs=max_epochs, random_state=0, **kw,
    )  # fmt: skip
    clf.fit(X, y, sensitive_features=s)
    pred = clf.predict(X)
    dp = abs(pred[s == 1].mean() - pred[s == 0].mean())
    return clf, float((pred != y).mean()), float(dp), min(y.mean(), 1 - y.mean())


def test_large_lambda_stays_below_the_majority_class():
    _, err, _, majority = _fit(64.0)
    assert err < majority - 0.03, (err, majority)


@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")
def test_joint_clip_reproduces_the_slide():
    # the paper-style joint clip is kept reachable (penalty_clip="joint"); on this
    # table it is what the issue measured: worse than the constant predictor
    _, err, _, majority = _fit(64.0, penalty_clip="joint", fallback_to_constant=False)
    assert err > majority, (err, majority)


def test_fallback_to_constant_catches_the_slide():
    # the same fit with the check after training (the default): the released counts
    # show the model worse than the constant, so predict gives the majority class
    with pytest.warns(UserWarning, match="fallback_to_constant"):
        clf, err, dp, majority = _fit(64.0, penalty_clip="joint")
    assert clf.constant_check_.falls_back and err == pytest.approx(majority) and dp == 0.0
    assert clf.constant_check_.error > clf.constant_check_.constant_error


def test_training_violation_does_not_rise_with_lambda():
    dps = [_fit(lam)[2] for lam in (4.0, 16.0, 64.0)]
    assert all(b <= a + 0.02 for a, b in zip(dps, dps[1:])), dps
    # (measured: 0.235 / 0.204 / 0.200; the loss keeps a fifth of C, so the fall is slow)
    assert dps[-1] < dps[0] - 0.02, dps


@pytest.mark.parametrize("penalty_clip", ["split", "joint"])
def test_split_clip_spends_what_the_joint_clip_spends(penalty_clip):
    # one release of sensitivity max_grad_norm per step either way: same multipliers, event, spend
    kw = dict(max_epochs=2)
    a = _fit(16.0, **kw)[0]
    b = _fit(16.0, penalty_clip=penalty_clip, **kw)[0]
    assert a.noise_multiplier_ == b.noise_multiplier_
    assert a.effective_noise_multiplier_ == b.effective_noise_multiplier_
    assert repr(a.dp_event_) == repr(b.dp_event_)
    assert a.privacy_spent_ == b.privacy_spent_


def test_split_sum_bounds_each_row_by_max_grad_norm():
    import torch

    from skfairdp.engine.clipping import ScaledRows
    from skfairdp.fermi.problem import ErmiProblem

    pinv = torch.tensor([[1.0 / 0.94**0.5, 1.0 / 0.06**0.5]])
    lam, C = 64.0, 1.5
    problem = ErmiProblem(
        W=torch.zeros(1, 2, 2), pinv=pinv, fairness_weight=lam, dual_bound=10.0, lr_dual=0.1,
        privacy_unit="record", penalty_clip="balanced", max_grad_norm=C,
        penalty_scale_max=lam * float(pinv.max()) ** 2,
    )  # fmt: skip
    n = 5
    s = torch.tensor([0, 1, 0, 1, 0])
    block = torch.zeros(n, dtype=torch.long)
    weight = torch.full((n,), lam)
    batch = (torch.zeros(n, dtype=torch.long), s, block, weight, weight, None, None)
    for i in range(n):  # one huge row at a time: loss part + penalty part <= C
        rows = torch.zeros(n, 7)
        rows[i] = 1e6
        problem._part = 0
        loss = problem._split_sum(ScaledRows(rows), None, *batch)[0]
        pen, sensitivity = problem._split_sum(ScaledRows(rows), None, *batch)
        assert sensitivity == C
        assert float((loss + pen).norm()) <= C * (1 + 1e-5)
    assert penalty_clip_share(4.0) == 0.5
