"""RaCO-DP's ``enforce_tolerance``: one accounted check after training, a mix with a constant.

The check's release is tested against a noise scale the test derives from the budget
(not the constant the code states); the mix against the upper bounds it must meet;
the fitted predictor against its tolerance on the training rows (issue 34).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from skfairdp import RaCODPClassifier
from skfairdp._fit import constant_check
from skfairdp.fairness import Cells, FalseNegativeRate, RateConstraint
from skfairdp.fairness.metrics import demographic_parity_violation, equalized_odds_violation
from skfairdp.fairness.rates import DemographicParity, compile_rate_constraints
from skfairdp.raco import enforcement
from skfairdp.raco.enforcement import mixing_weight, row_uniforms


def _minority_data(n=1200, share=0.05, seed=0):
    """A minority with a higher base rate: an unconstrained model has a DP gap near 0.4."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < share).astype(int)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 1.5 * s
    y = (X[:, 0] + rng.normal(size=n) > 0.3).astype(int)
    return X, y, s


def _cells(pred, y, s, n_groups, n_classes=2):
    """Counts per (group, true label) cell (rows) and predicted class (columns)."""
    H = np.zeros((n_groups * n_classes, n_classes))
    np.add.at(H, (s * n_classes + y, pred), 1.0)
    return H


def _set_rates(H, program):
    """Each set's class rates and size from per-(group, label) cell counts."""
    parts = np.zeros((program.n_parts, H.shape[1]))
    np.add.at(parts, program.part_of_cell.reshape(-1), H)
    sums = program.membership.astype(float) @ parts
    n = np.maximum(sums.sum(axis=1), 1.0)
    return sums / n[:, None], n


def _run_predictions(est, X):
    """The run's own model (the mix switched off)."""
    mixing = est.tolerance_mixing_
    est.tolerance_mixing_ = 0.0
    try:
        return est.predict(X)
    finally:
        est.tolerance_mixing_ = mixing


# --------------------------------------------------------------------------- the mix
def test_mixing_weight_exact_counts_two_groups():
    """Exact counts: the DP gap is read exactly, p = (v - gamma) / v, the cheaper constant."""
    program = compile_rate_constraints(DemographicParity(0.05), [0, 1], [0, 1])
    # group 0: 100 rows (60 label 0), predicted positive 20 of them; group 1: 50 rows
    # (10 label 0), predicted positive 30 of them
    H = np.array([[50.0, 10.0], [30.0, 10.0], [5.0, 5.0], [15.0, 25.0]])
    check = mixing_weight(H, program, 0.0, 2)
    gap = 30 / 50 - 20 / 100
    assert check.values.max() == pytest.approx(gap)
    np.testing.assert_allclose(check.upper, check.values)
    # the smallest p with E|(1 - p) gap + e| <= 0.05, e ~ N(0, p (1 - p) v), v from the 0.4
    # of group 1 (50 rows) and the 0.8 of group 0 (100 rows) predicted 0 that may flip to 1;
    # the folded normal's mean by simulation (seeded), solved on a grid
    v = 0.4 / 50 + 0.8 / 100
    e = np.random.default_rng(0).normal(size=200_000)
    grid = np.linspace((gap - 0.05) / gap, 1.0, 401)
    mean = [np.abs((1 - p) * gap + math.sqrt(p * (1 - p) * v) * e).mean() for p in grid]
    expected = grid[np.argmax(np.array(mean) <= 0.05)]
    assert check.mixing == pytest.approx(expected, abs=5e-3)
    assert check.mixing > (gap - 0.05) / gap + 0.01  # the coins' term counts
    # error: 10 + 30 + 5 + 15 wrong of 150; the constant 0 errs on the 80 label-1 rows,
    # the constant 1 on the 70 label-0 rows: the mix with 1 errs less
    assert check.error == pytest.approx(60 / 150)
    assert check.constant_class == 1
    # a gap within the bound mixes nothing
    assert mixing_weight(H, compile_rate_constraints(DemographicParity(0.5), [0, 1], [0, 1]),
                         0.0, 2).mixing == 0.0  # fmt: skip


def test_a_model_that_errs_more_than_a_constant_gives_way_to_it():
    """The mix's error is linear in p: where the constant errs less, p = 1."""
    program = compile_rate_constraints(DemographicParity(0.5), [0, 1], [0, 1])
    # 90 % label 0; the model predicts 1 on half of them: error 0.5 against the constant's 0.1
    H = np.array([[45.0, 45.0], [5.0, 5.0], [45.0, 45.0], [5.0, 5.0]])
    check = mixing_weight(H, program, 0.0, 2)
    assert check.values.max() == 0.0  # within the bound: only the error moves the mix
    assert check.mixing == 1.0 and check.constant_class == 0


def test_noisy_counts_keep_the_model_only_where_it_beats_the_constant_by_z_sds():
    """With noisy counts the constant, which needs no data, wins near-ties.

    The model's error minus the constant's is a sum of released counts; the test derives
    that sum's sd (each count of std ``s``) and places the model's noisy error just inside
    and just outside ``z`` sds below the constant's.
    """
    program = compile_rate_constraints(DemographicParity(0.5), [0, 1], [0, 1])
    std, z, total = 3.0, enforcement.ENFORCE_Z, 400.0

    def counts(model_advantage):
        # per group 100 label-0 and 100 label-1 rows; the constant 0 errs on the 200
        # label-1 rows (0.5). The model predicts 1 on every label-1 row and on `fp` of
        # each group's label-0 rows: error 2 fp / 400.
        fp = (0.5 - model_advantage) * total / 2
        return np.array([[100 - fp, fp], [0.0, 100.0]] * 2)

    # error - constant_error = (label-0 rows predicted 1 - label-1 rows predicted 1) / total:
    # two counts per group, coefficient +1 and -1 (the same four for the constant 1)
    sd = std * math.sqrt(4) / total
    inside = mixing_weight(counts(0.9 * z * sd), program, std, 2)
    outside = mixing_weight(counts(1.1 * z * sd), program, std, 2)
    assert inside.mixing == 1.0 and inside.constant_class == 0
    assert outside.mixing == 0.0
    # exact counts: any advantage keeps the model
    assert mixing_weight(counts(0.9 * z * sd), program, 0.0, 2).mixing == 0.0


def _realised_values(check, program, H, p, n_draws=20_000, seed=1):
    """``(n_draws, J)`` constraint values of the mix over simulated coins, by flipping counts.

    Derived here, not from the code's loadings: each set's rows predicted ``k != c``
    flip to ``c`` as ``Binomial(count, p)`` draws (the counts rounded), which move the
    set's rates; every constraint is its coefficients times the rates. The noisy upper
    bounds replace the values in expectation: ``(1 - p) U_j + p C_j``.
    """
    rates, n = _set_rates(H, program)
    c = check.constant_class
    A = program.coefficients  # (J, M, K)
    counts = np.rint(np.clip(rates, 0, 1) * n[:, None])
    rng = np.random.default_rng(seed)
    flips = rng.binomial(counts.astype(int)[None], p, size=(n_draws, *counts.shape)).astype(float)
    flips[:, :, c] = 0.0
    expected = p * counts
    expected[:, c] = 0.0
    moved = (flips - expected[None]) / n[None, :, None]  # (D, M, K): off its expectation
    delta = -moved
    delta[:, :, c] = moved.sum(axis=2)
    errors = np.einsum("jmk,dmk->dj", A, delta)
    const = A.sum(axis=1)[:, c]
    return ((1 - p) * check.upper + p * const)[None] + errors


def _expected_largest_gap_excess(check, program, H, p):
    """Mean over simulated coins of ``max_j (value_j - b_j)``."""
    values = _realised_values(check, program, H, p)
    return float((values - program.bounds[None]).max(axis=1).mean())


@pytest.mark.parametrize("seed", range(20))
def test_the_mix_meets_the_largest_gap_with_the_smallest_weight(seed):
    """The largest parity gap (fairlearn's difference), in expectation over the coins."""
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(2, 7))
    gamma = float(rng.uniform(0.0, 0.2))
    program = compile_rate_constraints(DemographicParity(gamma), list(range(n_groups)), [0, 1])
    H = rng.integers(0, 200, size=(2 * n_groups, 2)).astype(float)
    std = float(rng.uniform(0, 10))
    check = mixing_weight(H, program, std, 2)
    assert np.all(check.upper >= check.values)
    if check.mixing == 0.0:
        assert np.all(check.upper <= program.bounds)
        return
    # integration error of both: about 1e-3 (2,047 Sobol' points in the code, 20,000 draws here)
    assert _expected_largest_gap_excess(check, program, H, check.mixing) <= 3e-3
    if check.mixing < 1.0:  # a clearly smaller weight leaves the largest gap unmet
        smaller = max(check.mixing - 0.05, 0.0)
        assert _expected_largest_gap_excess(check, program, H, smaller) > 3e-3


def test_many_small_groups_the_largest_gap_counts():
    """Six groups of 30 rows: each gap alone meets the bound at a smaller mix than the
    largest of the 30 gaps does (the rule before issue 34's last round)."""
    program = compile_rate_constraints(DemographicParity(0.05), list(range(6)), [0, 1])
    H = np.tile([[10.0, 5.0], [5.0, 10.0]], (6, 1))  # 15 rows per cell, 30 per group
    H[0] = [14.0, 1.0]  # group 0 predicted positive far less often
    H[1] = [10.0, 5.0]
    check = mixing_weight(H, program, 0.0, 2)

    def each_alone(p):  # the largest of the gaps' own means over the coins (the old rule)
        return np.abs(_realised_values(check, program, H, p, n_draws=4000)).mean(axis=0).max()

    grid = np.linspace(0, 1, 201)
    alone = grid[np.argmax([each_alone(p) <= 0.05 for p in grid])]
    assert check.mixing > alone + 0.05
    assert _expected_largest_gap_excess(check, program, H, check.mixing) <= 3e-3
    assert _expected_largest_gap_excess(check, program, H, alone) > 0.01


def test_the_delta_method_sd_matches_simulated_noise():
    """The upper bound's sd: the sd of the noisy constraint values, simulated (seeded)."""
    program = compile_rate_constraints(DemographicParity(0.05), [0, 1], [0, 1])
    H = np.array([[400.0, 100.0], [50.0, 450.0], [30.0, 10.0], [10.0, 50.0]])
    std = 5.0
    sd = (mixing_weight(H, program, std, 2, z=1.0).upper - mixing_weight(H, program, 0.0, 2)
          .values)  # fmt: skip
    rng = np.random.default_rng(0)
    draws = np.array(
        [mixing_weight(H + rng.normal(0, std, H.shape), program, 0.0, 2).values
         for _ in range(4000)]
    )  # fmt: skip
    # each constraint's sd: its two rates' sds added (exact for disjoint groups: the
    # sum bounds the sd of the difference by at most sqrt(2))
    simulated = draws.std(axis=0)
    assert np.all(sd >= simulated * 0.95)
    assert np.all(sd <= simulated * math.sqrt(2) * 1.05)


def test_no_constant_meets_the_constraints_no_mix_and_a_warning():
    """At most 30 % positives (the constant 1 breaks it) and FNR <= 0.1 (the constant 0)."""
    X, y, s = _minority_data(n=600, share=0.3)
    cap = RateConstraint([(Cells(), {1: 1.0})], bound=0.3, name="positives")
    est = RaCODPClassifier([cap, FalseNegativeRate(0.1)], epsilon=np.inf, max_epochs=2,
                           random_state=0)  # fmt: skip
    with pytest.warns(UserWarning, match="no constant predictor meets every constraint"):
        est.fit(X, y, sensitive_features=s)
    assert est.tolerance_mixing_ == 0.0 and est.mixing_class_ is None
    assert est.tolerance_check_.constant_class is None


# --------------------------------------------------------------------------- the release
def _zcdp_rho(epsilon, delta):
    log_inv = math.log(1 / delta)
    return (math.sqrt(epsilon + log_inv) - math.sqrt(log_inv)) ** 2


def test_check_noise_has_the_scale_the_budget_share_gives():
    """Released minus exact counts, over four fits: chi-square at the derived scale."""
    eps, delta = 2.0, 1e-5
    sigma = 1.0 / math.sqrt(2 * enforcement.ENFORCE_SHARE * _zcdp_rho(eps, delta))
    residuals = []
    for seed in range(4):
        X, y, s = _minority_data(n=800, share=0.3, seed=seed)
        s = s + 2 * (X[:, 1] > 0)  # four groups: 16 cells of counts
        est = RaCODPClassifier(epsilon=eps, delta=delta, max_epochs=2, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y, sensitive_features=s)
        assert est.tolerance_check_.noise_multiplier == pytest.approx(sigma, rel=1e-9)
        exact = _cells(np.searchsorted(est.classes_, _run_predictions(est, X)), y, s, 4)
        residuals.append((est.tolerance_check_.counts - exact).ravel() / sigma)
        # the release is the event's last, at the derived scale, and within the budget
        assert est.dp_event_.events[-1] == dp_accounting.GaussianDpEvent(sigma)
        assert est.privacy_spent_.epsilon <= eps * (1 + 1e-9)
    r = np.concatenate(residuals)
    chi2 = float(np.sum(r**2))
    lo, hi = stats.chi2.ppf([5e-6, 1 - 5e-6], df=r.size)  # 1e-5 in all
    assert lo < chi2 < hi, (chi2, lo, hi)


def test_the_mix_reads_the_released_counts(monkeypatch):
    """The consumer uses the released counts: a forced release decides the mix."""
    X, y, s = _minority_data(n=2000, share=0.5)
    fair = np.array([[300.0, 100.0], [100.0, 300.0], [300.0, 100.0], [100.0, 300.0]])
    unfair = np.array([[390.0, 10.0], [390.0, 10.0], [10.0, 390.0], [10.0, 390.0]])
    forced = {}

    def release(counts, random, *, noise_multiplier, sensitivity, recorder):
        recorder.record(dp_accounting.GaussianDpEvent(noise_multiplier))
        return counts.new_tensor(forced["H"]), None

    # the release is the check's shared helper's (skfairdp._fit.constant_check)
    monkeypatch.setattr(constant_check, "noisy_histogram", release)
    kw = dict(tolerance=0.1, epsilon=4.0, max_epochs=3, random_state=0)
    forced["H"] = fair
    quiet = RaCODPClassifier(**kw).fit(X, y, sensitive_features=s)
    forced["H"] = unfair
    with pytest.warns(UserWarning, match="enforce_tolerance"):
        moved = RaCODPClassifier(**kw).fit(X, y, sensitive_features=s)
    assert quiet.tolerance_mixing_ == 0.0
    np.testing.assert_array_equal(moved.tolerance_check_.counts, unfair)
    # the gap the forced counts say, 0.95, brought within 0.1 (+ 2 sds)
    assert moved.tolerance_mixing_ > 1 - 0.1 / 0.95 - 1e-9


def test_disabled_or_non_private_checks_release_nothing():
    X, y, s = _minority_data()
    off = RaCODPClassifier(max_epochs=2, random_state=0, enforce_tolerance=False)
    off.fit(X, y, sensitive_features=s)
    assert off.tolerance_check_ is None and off.tolerance_mixing_ == 0.0
    assert not any(
        isinstance(e, dp_accounting.GaussianDpEvent) for e in getattr(off.dp_event_, "events", [])
    )
    free = RaCODPClassifier(epsilon=np.inf, max_epochs=2, random_state=0)
    free.fit(X, y, sensitive_features=s)
    assert free.tolerance_check_.noise_multiplier == 0.0
    exact = _cells(np.searchsorted(free.classes_, _run_predictions(free, X)), y, s, 2)
    np.testing.assert_array_equal(free.tolerance_check_.counts, exact)


# --------------------------------------------------------------------------- the predictor
@pytest.mark.parametrize("notion", ["demographic_parity", "equalized_odds"])
def test_exact_check_meets_the_tolerance_on_the_training_rows(notion):
    """epsilon=inf, one short epoch: the run misses gamma, the mix meets it on training."""
    X, y, s = _minority_data(n=6000, share=0.4)
    metric = {"demographic_parity": demographic_parity_violation,
              "equalized_odds": equalized_odds_violation}[notion]  # fmt: skip
    est = RaCODPClassifier(notion, 0.02, epsilon=np.inf, max_epochs=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, sensitive_features=s)
    run = metric(y, _run_predictions(est, X), sensitive_features=s)
    mixed = metric(y, est.predict(X), sensitive_features=s)
    assert run > 0.05 and est.tolerance_mixing_ > 0
    # the coins' realisation: ~sqrt(p (1 - p) / n_group) on each rate
    assert mixed <= 0.02 + 0.03


def test_small_minority_at_epsilon_one_moves_toward_the_constant_with_a_warning():
    X, y, s = _minority_data()
    with pytest.warns(UserWarning, match="could not confirm the constraints"):
        est = RaCODPClassifier(tolerance=0.05, random_state=0).fit(X, y, sensitive_features=s)
    assert est.tolerance_mixing_ > 0.5
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert demographic_parity_violation(y, est.predict(X), sensitive_features=s) <= 0.05 + 0.03
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert proba[:, est.classes_ == est.mixing_class_].min() >= est.tolerance_mixing_ - 1e-12


def test_a_constant_that_wins_on_accuracy_is_named_as_the_cause():
    """Labels independent of the features: the constraints are met, yet the constant wins
    the accuracy check; the warning must say so, not that the constraints failed."""
    from skfairdp.raco.enforcement import mixing_reason

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (rng.random(3000) < 0.25).astype(int)
    s = rng.integers(0, 2, 3000)
    with pytest.warns(UserWarning, match="does not beat the constant") as caught:
        est = RaCODPClassifier(tolerance=0.1, random_state=0).fit(X, y, sensitive_features=s)
    assert not any("could not confirm" in str(w.message) for w in caught)
    check = est.tolerance_check_
    assert est.tolerance_mixing_ == 1.0 and np.max(check.upper - check.bounds) <= 0
    over = dataclasses.replace(check, upper=check.bounds + 0.01)  # bounds not confirmed
    assert "could not confirm" in mixing_reason(over, 0.1, 1.0, True)[0]


def test_mixed_predictions_are_deterministic_and_row_local():
    X, y, s = _minority_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = RaCODPClassifier(random_state=0).fit(X, y, sensitive_features=s)
    assert est.tolerance_mixing_ > 0
    pred = est.predict(X)
    perm = np.random.default_rng(1).permutation(len(X))
    np.testing.assert_array_equal(est.predict(X[perm]), pred[perm])
    np.testing.assert_array_equal(est.predict(X[:7]), pred[:7])
    np.testing.assert_array_equal(est.predict(X), pred)


def test_secure_mode_salts_from_the_os():
    X, y, s = _minority_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = RaCODPClassifier(secure_mode=True, max_epochs=2).fit(X, y, sensitive_features=s)
        b = RaCODPClassifier(secure_mode=True, max_epochs=2).fit(X, y, sensitive_features=s)
    assert a.mixing_salt_ != b.mixing_salt_


def test_row_uniforms_golden_uniform_and_unrelated_to_the_features():
    X = np.random.default_rng(0).normal(size=(20000, 3)).astype(np.float32)
    u = row_uniforms(X, salt=12345)
    np.testing.assert_allclose(u[:3], GOLDEN_UNIFORMS, rtol=0, atol=1e-15)
    assert stats.kstest(u, "uniform").pvalue > 1e-4
    # a fixed input: the checks are deterministic, not chance
    assert abs(np.corrcoef(u, X[:, 0])[0, 1]) < 0.03
    assert abs(u[X[:, 1] > 0].mean() - u[X[:, 1] <= 0].mean()) < 0.01
    # a different salt: other numbers; duplicate rows: the same number
    assert np.abs(row_uniforms(X, salt=1) - u).max() > 0.5
    np.testing.assert_array_equal(row_uniforms(np.vstack([X[:5], X[:5]]), 12345)[5:], u[:5])
    # integer-valued rows (all zeros, one-hot) still get spread numbers
    onehot = np.eye(8, dtype=np.float32)
    assert len(set(row_uniforms(np.vstack([onehot, np.zeros((1, 8))]), 0))) == 9


GOLDEN_UNIFORMS = [0.13327775059500313, 0.6741395292393602, 0.43269534495851103]


def test_the_warning_names_an_unresolvable_group_not_an_impossible_gap():
    """A rate gap is at most 1; an upper bound 98 over the tolerance (fresh-table probe
    3: a group with 6 positive rows) is a group whose noisy counts cannot be bounded."""
    from types import SimpleNamespace

    from skfairdp.raco.enforcement import mixing_reason

    bounds = np.array([0.05, 0.05])
    unresolved = SimpleNamespace(upper=np.array([0.08, 98.4]), bounds=bounds, error=0.1)
    reason, _ = mixing_reason(unresolved, 0.05, 1.0, private=True)
    assert "too small to bound its rate" in reason and "98" not in reason
    over = SimpleNamespace(upper=np.array([0.08, 0.20]), bounds=bounds, error=0.1)
    reason, _ = mixing_reason(over, 0.05, 1.0, private=True)
    assert "largest upper bound +0.150 over its bound" in reason
