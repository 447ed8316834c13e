"""Objectives and constraints of the CGOO reduction (skfairdp.reductions.objectives/constraints).

Deterministic: golden values computed by hand, identities, and convexity checked on
random chords drawn from fixed seeds.  Cells are ``z = 2 * group + label``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

from skfairdp.fairness.metrics import (
    demographic_parity_violation,
    equal_opportunity_violation,
    equalized_odds_violation,
)
from skfairdp.reductions.constraints import (
    CONSTRAINTS,
    Constraint,
    boltzmann_smooth_max,
    default_smoothing,
    linear_gap_matrix,
    log_sum_exp_max,
    resolve_constraint,
    softplus_penalty,
)
from skfairdp.reductions.objectives import (
    OBJECTIVES,
    Objective,
    check_statistics,
    concave_geometric_mean,
    concave_harmonic_mean,
    error_rate,
    group_error_rates,
    group_false_positive_rates,
    group_positive_rates,
    group_true_positive_rates,
    linear_objective_vector,
    make_objective,
    q_mean,
    resolve_objective,
    true_negative_rate,
    true_positive_rate,
)

F64 = torch.float64

# Two groups; cells (g0,y0), (g0,y1), (g1,y0), (g1,y1).
Q2 = torch.tensor([0.3, 0.2, 0.1, 0.4], dtype=F64)
J2 = torch.tensor([0.06, 0.15, 0.05, 0.2], dtype=F64)


def t64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


def random_cells(generator: torch.Generator, n_groups: int) -> torch.Tensor:
    """Positive cell proportions summing to 1."""
    raw = torch.rand(2 * n_groups, generator=generator, dtype=F64) + 0.05
    return raw / raw.sum()


def random_positives(generator: torch.Generator, cells: torch.Tensor) -> torch.Tensor:
    """Feasible ``0 <= J <= q``: a uniform fraction of each cell, often exactly 0 or q_z."""
    u = torch.rand(cells.shape[0], generator=generator, dtype=F64)
    snap = torch.rand(cells.shape[0], generator=generator, dtype=F64)
    u = torch.where(snap < 0.15, torch.zeros_like(u), u)
    u = torch.where(snap > 0.85, torch.ones_like(u), u)
    u = torch.where((snap > 0.4) & (snap < 0.5), u * 1e-3, u)  # tiny recalls (kappa region)
    return u * cells


def all_constraints() -> dict[str, Constraint]:
    return dict(CONSTRAINTS)


def all_objectives() -> dict[str, Objective]:
    objectives = dict(OBJECTIVES)
    objectives["neg_g_mean_kappa_0.05"] = make_objective("neg_g_mean", kappa=0.05)
    objectives["neg_h_mean_kappa_0.05"] = make_objective("neg_h_mean", kappa=0.05)
    objectives["worst_group_error_t5"] = make_objective("worst_group_error", temperature=5.0)
    return objectives


# --------------------------------------------------------------------------------------------
# Golden values
# --------------------------------------------------------------------------------------------


def test_golden_derived_statistics():
    # FPR = (0.06/0.3, 0.05/0.1), TPR = (0.15/0.2, 0.2/0.4), PR = (0.21/0.5, 0.25/0.5)
    torch.testing.assert_close(group_false_positive_rates(J2, Q2), t64([0.2, 0.5]))
    torch.testing.assert_close(group_true_positive_rates(J2, Q2), t64([0.75, 0.5]))
    torch.testing.assert_close(group_positive_rates(J2, Q2), t64([0.42, 0.5]))
    # err = (0.06 + 0.2 - 0.15) + (0.05 + 0.4 - 0.2) = 0.11 + 0.25
    assert error_rate(J2, Q2).item() == pytest.approx(0.36, abs=1e-15)
    torch.testing.assert_close(group_error_rates(J2, Q2), t64([0.22, 0.5]))
    # TPR = 0.35 / 0.6 = 7/12, TNR = 1 - 0.11 / 0.4 = 29/40
    assert true_positive_rate(J2, Q2).item() == pytest.approx(7 / 12, abs=1e-15)
    assert true_negative_rate(J2, Q2).item() == pytest.approx(29 / 40, abs=1e-15)


def test_golden_objectives():
    tpr, tnr = 7 / 12, 29 / 40
    expected = {
        "error_rate": 0.36,
        "balanced_error": ((1 - tpr) + (1 - tnr)) / 2,  # 0.3458333...
        "neg_g_mean": -math.sqrt(tpr * tnr),  # -0.650320...
        "neg_h_mean": -2 * tpr * tnr / (tpr + tnr),  # -0.646497...
        "q_mean": math.sqrt(((1 - tpr) ** 2 + (1 - tnr) ** 2) / 2),  # 0.353013...
    }
    assert expected["balanced_error"] == pytest.approx(0.3458333333333333)
    assert expected["neg_g_mean"] == pytest.approx(-0.6503204338)
    assert expected["neg_h_mean"] == pytest.approx(-0.6464968153)
    assert expected["q_mean"] == pytest.approx(0.3530128263)
    for name, value in expected.items():
        assert OBJECTIVES[name](J2, Q2).item() == pytest.approx(value, abs=1e-14), name
    # Smooth max of group errors (0.22, 0.5) at temperature 50.
    worst = OBJECTIVES["worst_group_error"](J2, Q2).item()
    assert worst == pytest.approx(0.5 + math.log1p(math.exp(-50 * 0.28)) / 50, abs=1e-15)
    assert 0.5 <= worst <= 0.5 + math.log(2) / 50


def test_golden_gaps():
    torch.testing.assert_close(CONSTRAINTS["demographic_parity"].gaps(J2, Q2), t64([-0.08, 0.08]))
    # [TPR_0 - TPR_1, FPR_0 - FPR_1] then negatives
    torch.testing.assert_close(
        CONSTRAINTS["equalized_odds"].gaps(J2, Q2), t64([0.25, -0.3, -0.25, 0.3])
    )
    torch.testing.assert_close(
        CONSTRAINTS["true_positive_rate_parity"].gaps(J2, Q2), t64([0.25, -0.25])
    )
    torch.testing.assert_close(CONSTRAINTS["bounded_group_loss"].gaps(J2, Q2), t64([0.22, 0.5]))
    assert CONSTRAINTS["equalized_odds"].violation(J2, Q2).item() == pytest.approx(0.3)
    smooth = CONSTRAINTS["equalized_odds"].smooth_violation(J2, Q2, 100.0).item()
    assert 0.3 <= smooth <= 0.3 + math.log(4) / 100


def test_gaps_three_groups_pair_order_and_count():
    q = t64([0.1, 0.1, 0.2, 0.2, 0.25, 0.15])
    j = q * t64([0.1, 0.6, 0.3, 0.9, 0.5, 0.2])  # FPR = (.1,.3,.5), TPR = (.6,.9,.2)
    # pairs (0,1), (0,2), (1,2)
    torch.testing.assert_close(
        CONSTRAINTS["true_positive_rate_parity"].gaps(j, q),
        t64([-0.3, 0.4, 0.7, 0.3, -0.4, -0.7]),
    )
    eo = CONSTRAINTS["equalized_odds"].gaps(j, q)  # TPR pairs, FPR pairs, then negatives
    plus = t64([-0.3, 0.4, 0.7, -0.2, -0.4, -0.2])
    torch.testing.assert_close(eo, torch.cat([plus, -plus]))
    assert eo.max().item() == pytest.approx(0.7)


def test_single_group_has_one_zero_gap():
    q, j = t64([0.4, 0.6]), t64([0.1, 0.3])
    for name in ("demographic_parity", "equalized_odds", "true_positive_rate_parity"):
        constraint = CONSTRAINTS[name]
        torch.testing.assert_close(constraint.gaps(j, q), t64([0.0]))
        A, b = linear_gap_matrix(constraint, q)
        assert A.shape == (1, 2) and torch.all(A == 0) and torch.all(b == 0)


def test_violations_match_fairness_metrics():
    rng = np.random.default_rng(0)
    n = 600
    groups = rng.integers(0, 3, n)
    y_true = rng.integers(0, 2, n)
    y_pred = (rng.random(n) < 0.3 + 0.2 * groups + 0.2 * y_true).astype(int)
    cell = 2 * groups + y_true
    q = torch.as_tensor(np.bincount(cell, minlength=6) / n, dtype=F64)
    j = torch.as_tensor(np.bincount(cell, weights=y_pred, minlength=6) / n, dtype=F64)
    kwargs = {"sensitive_features": groups}
    expected = {
        "demographic_parity": demographic_parity_violation(y_true, y_pred, **kwargs),
        "equalized_odds": equalized_odds_violation(y_true, y_pred, **kwargs),
        "true_positive_rate_parity": equal_opportunity_violation(y_true, y_pred, **kwargs),
    }
    for name, value in expected.items():
        assert value > 0.05
        assert CONSTRAINTS[name].violation(j, q).item() == pytest.approx(value, abs=1e-12), name
    errors = [np.mean(y_pred[groups == g] != y_true[groups == g]) for g in range(3)]
    assert CONSTRAINTS["bounded_group_loss"].violation(j, q).item() == pytest.approx(
        max(errors), abs=1e-12
    )
    assert error_rate(j, q).item() == pytest.approx(np.mean(y_pred != y_true), abs=1e-12)


# --------------------------------------------------------------------------------------------
# Identities
# --------------------------------------------------------------------------------------------


def test_error_is_size_weighted_group_error():
    generator = torch.Generator().manual_seed(1)
    for n_groups in (1, 2, 3, 5):
        for _ in range(50):
            q = random_cells(generator, n_groups)
            j = random_positives(generator, q)
            sizes = q[0::2] + q[1::2]
            total = (sizes * group_error_rates(j, q)).sum()
            assert total.item() == pytest.approx(error_rate(j, q).item(), abs=1e-14)


def test_hm_le_gm_le_am_of_recalls():
    generator = torch.Generator().manual_seed(2)
    for _ in range(500):
        q = random_cells(generator, 2)
        j = random_positives(generator, q)
        tpr, tnr = true_positive_rate(j, q).item(), true_negative_rate(j, q).item()
        hm = -OBJECTIVES["neg_h_mean"](j, q).item()
        gm = -OBJECTIVES["neg_g_mean"](j, q).item()
        am = 1.0 - OBJECTIVES["balanced_error"](j, q).item()
        assert am == pytest.approx((tpr + tnr) / 2, abs=1e-14)
        assert hm <= gm + 1e-14 and gm <= am + 1e-14
        if min(tpr, tnr) >= 1e-3:  # the exact region: the textbook formulas
            assert gm == pytest.approx(math.sqrt(tpr * tnr), abs=1e-14)
            assert hm == pytest.approx(2 * tpr * tnr / (tpr + tnr), abs=1e-14)


def test_concave_means_exact_region_and_extension():
    kappa = 0.01
    grid = torch.linspace(kappa, 1.0, 25, dtype=F64)
    a, b = torch.meshgrid(grid, grid, indexing="ij")
    torch.testing.assert_close(concave_geometric_mean(a, b, kappa), torch.sqrt(a * b))
    torch.testing.assert_close(concave_harmonic_mean(a, b, kappa), 2 * a * b / (a + b))
    # Outside the exact region the extensions are finite and at least the exact means.
    wide = torch.linspace(0.0, 1.0, 41, dtype=F64)
    a, b = torch.meshgrid(wide, wide, indexing="ij")
    gm, hm = concave_geometric_mean(a, b, kappa), concave_harmonic_mean(a, b, kappa)
    exact_hm = torch.where(a + b > 0, 2 * a * b / (a + b).clamp_min(1e-300), torch.zeros_like(a))
    assert torch.all(gm >= torch.sqrt(a * b) - 1e-15)
    assert torch.all(hm >= exact_hm - 1e-15)
    assert torch.all(hm <= gm + 1e-15)
    # Defined on all of R^2 (noisy statistics), continuous across the exact-region edge.
    assert concave_geometric_mean(t64(0.0), t64(1.0), kappa).item() == pytest.approx(0.05)
    edge = concave_geometric_mean(t64(kappa), t64(1.0), kappa).item()
    assert edge == pytest.approx(math.sqrt(kappa), abs=1e-15)
    assert concave_geometric_mean(t64(kappa * (1 - 1e-9)), t64(1.0), kappa).item() == (
        pytest.approx(edge, abs=1e-9)
    )
    for value in (concave_geometric_mean, concave_harmonic_mean):
        assert torch.isfinite(value(t64([-0.1, -0.2, 0.0]), t64([-0.3, 0.1, 0.0]), kappa)).all()


def test_concave_means_gradient_bounds():
    kappa = 1e-3
    generator = torch.Generator().manual_seed(3)
    a = (torch.rand(2000, generator=generator, dtype=F64) * 1.4 - 0.2).requires_grad_(True)
    b = (torch.rand(2000, generator=generator, dtype=F64) * 1.4 - 0.2).requires_grad_(True)
    for mean, bound in (
        (concave_geometric_mean, 0.5 / math.sqrt(kappa)),
        (concave_harmonic_mean, 2),
    ):
        ga, gb = torch.autograd.grad(mean(a, b, kappa).sum(), (a, b))
        for grad in (ga, gb):
            assert torch.isfinite(grad).all()
            assert grad.min().item() >= -1e-12 and grad.max().item() <= bound + 1e-9


def test_q_mean_sanity():
    q = Q2
    perfect = q * t64([0, 1, 0, 1])
    assert q_mean(perfect, q).item() == 0.0
    for trivial in (torch.zeros_like(q), q.clone()):
        assert q_mean(trivial, q).item() == pytest.approx(1 / math.sqrt(2), abs=1e-15)
    generator = torch.Generator().manual_seed(4)
    for _ in range(200):
        cells = random_cells(generator, 3)
        j = random_positives(generator, cells)
        misses = (1 - true_positive_rate(j, cells).item(), 1 - true_negative_rate(j, cells).item())
        value = q_mean(j, cells).item()
        # power-mean inequality: AM <= QM <= max
        assert OBJECTIVES["balanced_error"](j, cells).item() <= value + 1e-14
        assert value <= max(misses) + 1e-14


# --------------------------------------------------------------------------------------------
# Smoothing
# --------------------------------------------------------------------------------------------


def test_log_sum_exp_max_bounds():
    generator = torch.Generator().manual_seed(5)
    for m in (1, 2, 4, 12):
        for eta in (0.5, 10.0, 80.0, 1e4):
            values = torch.randn(200, m, generator=generator, dtype=F64)
            smooth = log_sum_exp_max(values, eta)
            top = values.amax(dim=-1)
            assert torch.all(smooth >= top - 1e-12)
            assert torch.all(smooth <= top + math.log(m) / eta + 1e-12)
    values = t64([0.3, -0.2, 0.1])
    assert log_sum_exp_max(values, math.inf).item() == 0.3
    assert torch.isfinite(log_sum_exp_max(t64([1e3, 2e3]), 1e3))  # no overflow
    with pytest.raises(ValueError):
        log_sum_exp_max(values, 0.0)


def test_default_smoothing_overestimates_by_a_quarter_of_the_bound():
    for bound in (0.01, 0.05, 0.2):
        for n_terms in (2, 4, 12, 40):
            eta = default_smoothing(bound, n_terms)
            assert math.log(n_terms) / eta == pytest.approx(bound / 4)
        assert default_smoothing(bound, 1) == default_smoothing(bound, 2) > 0
    for bad in ((0.0, 2), (-1.0, 2), (math.inf, 2), (0.05, 0), (0.05, 1.5)):
        with pytest.raises(ValueError):
            default_smoothing(*bad)


def test_softplus_penalty_is_a_stable_smooth_hinge():
    values = t64([-1e4, -3.0, -0.1, 0.0, 0.1, 3.0, 1e4])
    for mu in (1.0, 20.0, 1e3):
        penalty = softplus_penalty(values, mu)
        assert torch.isfinite(penalty).all()
        hinge = values.clamp_min(0.0)
        assert torch.all(penalty >= hinge) and torch.all(
            penalty <= hinge + math.log(2) / mu + 1e-12
        )
    assert softplus_penalty(0.0, 10.0).item() == pytest.approx(math.log(2) / 10)
    with pytest.raises(ValueError):
        softplus_penalty(values, -1.0)


def test_boltzmann_smooth_max_underestimates_and_is_not_convex():
    """Digest P4: the paper's smax (Def 1.14 / 8.8) is not a valid constraint surrogate."""
    # Under-estimates the max: smax^10(0.1, 0.05) = 0.0811 < 0.1, so "smax <= alpha" does
    # not imply "violation <= alpha".
    smax = boltzmann_smooth_max(t64([0.1, 0.05]), 10.0).item()
    assert smax == pytest.approx(0.08112, abs=1e-5)
    assert smax < 0.1
    # Not convex: on the gap vector (d, -d) of one pair it is d * tanh(eta * d), concave for
    # eta * d > ~1.2.  Chord from d = 0.1 to d = 0.5 at eta = 10: midpoint 0.2985 > 0.2880.
    x, y = t64([0.1, -0.1]), t64([0.5, -0.5])
    midpoint = boltzmann_smooth_max((x + y) / 2, 10.0).item()
    chord = (boltzmann_smooth_max(x, 10.0).item() + boltzmann_smooth_max(y, 10.0).item()) / 2
    assert midpoint == pytest.approx(0.3 * math.tanh(3), abs=1e-14)
    assert midpoint > chord + 0.01
    # Log-sum-exp on the same chord: convex and an over-estimate.
    lse = functools.partial(log_sum_exp_max, eta=10.0)
    assert lse((x + y) / 2).item() <= (lse(x).item() + lse(y).item()) / 2
    assert lse(t64([0.1, 0.05])).item() >= 0.1


def test_clamping_recalls_would_break_convexity():
    """Why neg_g_mean uses a concave extension instead of clamping the recalls at kappa."""
    kappa = 1e-3

    def clamped(a: float) -> float:
        return -math.sqrt(max(a, kappa) * 1.0)

    assert clamped(kappa) > (clamped(0.0) + clamped(2 * kappa)) / 2  # midpoint above chord

    def extended(a: float) -> float:
        return -concave_geometric_mean(t64(a), t64(1.0), kappa).item()

    assert extended(kappa) <= (extended(0.0) + extended(2 * kappa)) / 2


# --------------------------------------------------------------------------------------------
# Convexity on random chords
# --------------------------------------------------------------------------------------------


def _chords(seed: int, n_groups: int, count: int):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(count):
        q = random_cells(generator, n_groups)
        a, b = random_positives(generator, q), random_positives(generator, q)
        t = torch.rand((), generator=generator, dtype=F64).item()
        yield q, a, b, t


@pytest.mark.parametrize("n_groups", [2, 3])
@pytest.mark.parametrize("name", list(all_objectives()))
def test_objectives_convex_on_random_chords(name, n_groups):
    objective = all_objectives()[name]
    for q, a, b, t in _chords(10 + n_groups, n_groups, 400):
        middle = objective((1 - t) * a + t * b, q).item()
        chord = (1 - t) * objective(a, q).item() + t * objective(b, q).item()
        assert middle <= chord + 1e-12, (name, a, b, t)


@pytest.mark.parametrize("n_groups", [2, 3])
@pytest.mark.parametrize("eta", [5.0, 200.0])
@pytest.mark.parametrize("name", list(all_constraints()))
def test_smooth_violations_convex_on_random_chords(name, eta, n_groups):
    constraint = all_constraints()[name]

    def smooth(j: torch.Tensor, q: torch.Tensor) -> float:
        return constraint.smooth_violation(j, q, eta).item()

    for q, a, b, t in _chords(20 + n_groups, n_groups, 300):
        middle = smooth((1 - t) * a + t * b, q)
        assert middle <= (1 - t) * smooth(a, q) + t * smooth(b, q) + 1e-12, (name, a, b, t)


def test_concave_means_concave_on_the_whole_plane():
    generator = torch.Generator().manual_seed(6)
    for mean in (concave_geometric_mean, concave_harmonic_mean):
        for _ in range(2000):
            a, b = torch.rand(2, 2, generator=generator, dtype=F64) * 1.6 - 0.3
            t = torch.rand((), generator=generator, dtype=F64)
            middle = mean(*((1 - t) * a + t * b), 0.02)
            assert middle >= (1 - t) * mean(*a, 0.02) + t * mean(*b, 0.02) - 1e-12


# --------------------------------------------------------------------------------------------
# Linear forms
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_groups", [1, 2, 4])
def test_linear_gap_matrix_agrees_with_gaps(n_groups):
    generator = torch.Generator().manual_seed(30 + n_groups)
    for name, constraint in CONSTRAINTS.items():
        assert constraint.linear
        for _ in range(20):
            q = random_cells(generator, n_groups)
            A, b = linear_gap_matrix(name, q)
            assert A.dtype == b.dtype == F64
            for j in (random_positives(generator, q), torch.randn(2 * n_groups, dtype=F64)):
                torch.testing.assert_close(A @ j + b, constraint.gaps(j, q), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_groups", [1, 2, 4])
def test_linear_objective_vector_agrees_with_objective(n_groups):
    generator = torch.Generator().manual_seed(40 + n_groups)
    for name in ("error_rate", "balanced_error"):
        objective = OBJECTIVES[name]
        assert objective.linear
        for _ in range(20):
            q = random_cells(generator, n_groups)
            c, c0 = linear_objective_vector(objective, q)
            assert c.shape == q.shape and c0.shape == () and c.dtype == F64
            for j in (random_positives(generator, q), torch.randn(2 * n_groups, dtype=F64)):
                assert (c @ j + c0).item() == pytest.approx(objective(j, q).item(), abs=1e-12)


def test_linear_forms_of_user_declared_linear_callables():
    def fpr_gaps(j: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        fpr = j[0::2] / q[0::2]
        return torch.stack([fpr[0] - fpr[1] - 0.01, fpr[1] - fpr[0] - 0.01])

    def weighted_error(j: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return 2 * j[0::2].sum() + (q[1::2] - j[1::2]).sum()

    A, b = linear_gap_matrix(Constraint("fpr", fpr_gaps, linear=True), Q2)
    torch.testing.assert_close(A @ J2 + b, fpr_gaps(J2, Q2), rtol=0, atol=1e-14)
    c, c0 = linear_objective_vector(Objective("w", weighted_error, True, None), Q2)
    assert (c @ J2 + c0).item() == pytest.approx(weighted_error(J2, Q2).item(), abs=1e-14)
    with pytest.raises(ValueError, match="not linear"):
        linear_gap_matrix(fpr_gaps, Q2)  # a bare callable is non-linear
    with pytest.raises(ValueError, match="not linear"):
        linear_objective_vector(weighted_error, Q2)


@pytest.mark.parametrize("name", ["neg_g_mean", "neg_h_mean", "q_mean", "worst_group_error"])
def test_linear_objective_vector_rejects_non_linear(name):
    assert not OBJECTIVES[name].linear
    with pytest.raises(ValueError, match="not linear"):
        linear_objective_vector(name, Q2)


# --------------------------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------------------------


def _gradient(function, positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    positives = positives.clone().requires_grad_(True)
    (gradient,) = torch.autograd.grad(function(positives, cells), positives)
    return gradient


@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_gradients_finite_at_trivial_and_perfect_classifiers(n_groups):
    generator = torch.Generator().manual_seed(50 + n_groups)
    q = random_cells(generator, n_groups)
    labels = torch.arange(2 * n_groups) % 2
    points = {
        "all-0": torch.zeros_like(q),
        "all-1": q.clone(),
        "perfect": q * labels,
        "inverted": q * (1 - labels),
    }
    for label, j in points.items():
        for name, objective in all_objectives().items():
            gradient = _gradient(objective, j, q)
            assert torch.isfinite(gradient).all(), (name, label)
        for name, constraint in CONSTRAINTS.items():
            for eta in (10.0, 1e3):

                def penalised(p, c, constraint=constraint, eta=eta):
                    return 50.0 * softplus_penalty(
                        constraint.smooth_violation(p, c, eta) - 0.05, eta
                    )

                gradient = _gradient(penalised, j, q)
                assert torch.isfinite(gradient).all(), (name, label, eta)
    # Lipschitz declaration of error_rate: |df/dJ_z| = 1.
    gradient = _gradient(OBJECTIVES["error_rate"], q / 2, q)
    assert OBJECTIVES["error_rate"].lipschitz == gradient.abs().max().item() == 1.0


# --------------------------------------------------------------------------------------------
# Resolution and validation
# --------------------------------------------------------------------------------------------


def test_callables_round_trip_through_resolve():
    def my_objective(j: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return (j - q / 2).pow(2).sum()

    def my_gaps(j: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return (j / q)[0::2] - 0.5

    objective = resolve_objective(my_objective)
    assert objective.function is my_objective and objective.name == "my_objective"
    assert objective.linear is False and objective.lipschitz is None
    assert objective(J2, Q2).item() == pytest.approx(my_objective(J2, Q2).item())
    assert resolve_objective(objective) is objective

    constraint = resolve_constraint(my_gaps)
    assert constraint.gaps is my_gaps and constraint.name == "my_gaps"
    assert constraint.linear is False
    torch.testing.assert_close(constraint.gaps(J2, Q2), my_gaps(J2, Q2))
    assert resolve_constraint(constraint) is constraint

    assert resolve_objective("q_mean") is OBJECTIVES["q_mean"]
    assert resolve_constraint("equalized_odds") is CONSTRAINTS["equalized_odds"]
    assert resolve_constraint(lambda j, q: j).name == "<lambda>"


def test_bad_names_list_valid_names():
    with pytest.raises(ValueError) as info:
        resolve_objective("accuracy")
    for name in OBJECTIVES:
        assert repr(name) in str(info.value)
    with pytest.raises(ValueError) as info:
        resolve_constraint("equal_odds")
    for name in CONSTRAINTS:
        assert repr(name) in str(info.value)
    with pytest.raises(ValueError, match="valid names"):
        make_objective("f1")
    with pytest.raises(TypeError):
        resolve_objective(3)
    with pytest.raises(TypeError):
        resolve_constraint(["demographic_parity", "equalized_odds"])


def test_parameter_and_shape_validation():
    for kappa in (0.0, 1.0, -1e-3):
        with pytest.raises(ValueError, match="kappa"):
            make_objective("neg_g_mean", kappa=kappa)
    for temperature in (0.0, math.inf, -1.0):
        with pytest.raises(ValueError, match="temperature"):
            make_objective("worst_group_error", temperature=temperature)
    with pytest.raises(ValueError, match="same shape"):
        check_statistics(torch.zeros(4, dtype=F64), torch.ones(6, dtype=F64))
    with pytest.raises(ValueError, match="even"):
        error_rate(torch.zeros(3, dtype=F64), torch.ones(3, dtype=F64) / 3)
    with pytest.raises(ValueError, match="1-D"):
        group_positive_rates(torch.zeros(2, 2, dtype=F64), torch.ones(2, 2, dtype=F64))
    assert check_statistics(J2, Q2) == 2
