"""RaCO-DP's group-parity constraints bound the largest pairwise gap (issue 34).

``tolerance`` bounds fairlearn's ``demographic_parity_difference`` /
``equalized_odds_difference`` for any number of groups; the one-vs-rest form
stays available as ``"*_vs_rest"``.
"""

import math

import numpy as np
import pytest
import torch
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

from skfairdp.fairness.rates import (
    DemographicParity,
    EqualizedOdds,
    compile_rate_constraints,
    resolve_constraints,
)
from skfairdp.privacy import RandomSource
from skfairdp.raco import RaCODPClassifier
from skfairdp.raco.problem import RacoProblem

GROUPS = ["a", "b", "c", "d"]


def _hand_made(seed=0, n=400):
    """Four groups whose positive rates are 0.2, 0.5, 0.35, 0.45 (hard predictions)."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(4), n // 4)
    rate = np.array([0.2, 0.5, 0.35, 0.45])[groups]
    y_pred = (rng.random(n) < rate).astype(int)
    y_true = (rng.random(n) < 0.5).astype(int)
    return y_true, y_pred, groups


def test_pairwise_demographic_parity_value_is_fairlearns_difference():
    y_true, y_pred, groups = _hand_made()
    program = compile_rate_constraints(DemographicParity(0.05), GROUPS, [0, 1])
    assert program.n_constraints == 4 * 3 * 2 and program.n_parts == 4
    values = program.evaluate(y_pred, groups, y_true)
    fl = demographic_parity_difference(
        y_true, y_pred, sensitive_features=np.asarray(GROUPS)[groups]
    )
    assert values.max() == pytest.approx(fl, abs=1e-12)
    # the one-vs-rest form bounds something else: its largest value is smaller here
    rest = compile_rate_constraints(DemographicParity(0.05, versus="rest"), GROUPS, [0, 1])
    assert rest.evaluate(y_pred, groups, y_true).max() < fl - 0.05


def test_pairwise_equalized_odds_value_is_fairlearns_difference():
    y_true, y_pred, groups = _hand_made(1)
    program = compile_rate_constraints(EqualizedOdds(0.05), GROUPS, [0, 1])
    assert program.n_constraints == 2 * 2 * 4 * 3 and program.n_parts == 8
    values = program.evaluate(y_pred, groups, y_true)
    fl = equalized_odds_difference(y_true, y_pred, sensitive_features=np.asarray(GROUPS)[groups])
    assert values.max() == pytest.approx(fl, abs=1e-12)


def test_pairwise_weights_are_the_gradient_of_the_constraint():
    """With lambda on one pair constraint, each row's weight is B times d Gamma / d prediction."""
    program = compile_rate_constraints(DemographicParity(0.05), GROUPS, [0, 1])
    j = program.names.index("DP[group='b' vs 'd', yhat=1]")
    lam = torch.zeros(program.n_constraints)
    lam[j] = 1.0
    rng = np.random.default_rng(0)
    n, batch = 200, 200.0
    part = torch.as_tensor(rng.integers(0, 4, n))
    soft = torch.as_tensor(rng.dirichlet([1.0, 1.0], n), dtype=torch.float32).requires_grad_()
    problem = RacoProblem(
        membership=torch.as_tensor(program.membership),
        coefficients=torch.as_tensor(program.coefficients),
        bounds=torch.as_tensor(program.bounds),
        temperature=1.0,
        lr_dual=0.5,
        dual_bound=None,
        histogram_noise=None,
        histogram_scale=math.inf,
        expected_batch_size=batch,
        random=RandomSource(0),
        dual_rates="soft",
    )
    problem.state = dict(problem.state, **{"lambda": lam})
    logits = torch.log(soft.detach())
    (_, weights), stats = problem.release_batch_statistics(
        logits, torch.zeros(n, dtype=torch.long), part
    )
    # the constraint's value as a function of the soft predictions, counts held fixed
    H = torch.zeros(4, 2).index_add(0, part, soft)
    counts = torch.bincount(part, minlength=4).float().unsqueeze(1)
    S = torch.as_tensor(program.membership, dtype=torch.float32)
    rates = (S @ H) / (S @ counts)
    value = (torch.as_tensor(program.coefficients[j], dtype=torch.float32) * rates).sum()
    assert float(stats["values"][j]) == pytest.approx(float(value.detach()), abs=1e-5)
    (grad,) = torch.autograd.grad(value, soft)
    torch.testing.assert_close(weights, batch * grad, atol=1e-4, rtol=1e-4)
    # only the pair's two groups are steered
    touched = torch.unique(part[(weights.abs() > 0).any(dim=1)])
    assert len(touched) == 2


def test_two_groups_pairs_and_vs_rest_are_the_same_program():
    for family in ("demographic_parity", "equalized_odds", "equal_opportunity"):
        (pairs,) = resolve_constraints(family, 0.05)
        (rest,) = resolve_constraints(family + "_vs_rest", 0.05)
        assert (pairs.versus, rest.versus) == ("pairs", "rest")
        a = compile_rate_constraints(pairs, ["a", "b"], [0, 1])
        b = compile_rate_constraints(rest, ["a", "b"], [0, 1])
        np.testing.assert_array_equal(a.coefficients, b.coefficients)
        np.testing.assert_array_equal(a.membership, b.membership)
        np.testing.assert_array_equal(a.part_of_cell, b.part_of_cell)


def test_versus_is_validated():
    with pytest.raises(ValueError, match="versus"):
        DemographicParity(0.05, versus="others")


def _four_groups(n=2400, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    X = rng.normal(size=(n, 3))
    shift = np.array([-1.0, -0.3, 0.3, 1.0])[g]
    y = (X[:, 0] + shift + 0.5 * rng.normal(size=n) > 0).astype(int)
    X = np.column_stack([X, shift + 0.3 * rng.normal(size=n)])
    return X, y, np.asarray(GROUPS)[g]


def test_four_groups_fit_bounds_fairlearns_difference_on_training_rows():
    X, y, s = _four_groups()
    gamma = 0.05
    free = RaCODPClassifier(tolerance=1.0, epsilon=math.inf, random_state=0)
    gap_free = demographic_parity_difference(
        y, free.fit(X, y, sensitive_features=s).predict(X), sensitive_features=s
    )
    assert gap_free > 0.4  # the constraint binds
    clf = RaCODPClassifier(tolerance=gamma, epsilon=math.inf, random_state=0)
    pred = clf.fit(X, y, sensitive_features=s).predict(X)
    assert demographic_parity_difference(y, pred, sensitive_features=s) <= gamma + 0.01
    assert len(clf.constraint_names_) == 24


def test_vs_rest_name_fits_and_costs_the_same():
    X, y, s = _four_groups(n=800)
    kw = dict(tolerance=0.05, epsilon=1.0, max_epochs=2, batch_size=50, random_state=0)
    pairs = RaCODPClassifier("demographic_parity", **kw).fit(X, y, sensitive_features=s)
    rest = RaCODPClassifier("demographic_parity_vs_rest", **kw).fit(X, y, sensitive_features=s)
    assert len(rest.constraint_names_) == 8
    assert all("vsRest" in name for name in rest.constraint_names_)
    assert rest.rate_program_.n_parts == pairs.rate_program_.n_parts == 4
    assert pairs.privacy_spent_ == rest.privacy_spent_
    assert pairs.n_steps_ == rest.n_steps_
    assert pairs.noise_multiplier_ == rest.noise_multiplier_


def test_pairwise_dual_walk_shrinks_with_the_group_count_and_reaches_the_problem():
    from skfairdp import RaCODPClassifier
    from skfairdp.raco import problem as raco_problem

    walk = raco_problem.pairwise_dual_walk
    assert walk(2, True) == walk(5, False) == raco_problem.DUAL_WALK
    assert walk(4, True) == pytest.approx(raco_problem.DUAL_WALK / math.sqrt(3))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    s = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, 400)]
    seen = []
    original = raco_problem.RacoProblem.__init__

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("dual_walk"))
        original(self, *args, **kwargs)

    raco_problem.RacoProblem.__init__ = spy
    try:
        for constraints in ("demographic_parity", "demographic_parity_vs_rest"):
            RaCODPClassifier(constraints, epsilon=1.0, max_epochs=1, random_state=0).fit(
                X, y, sensitive_features=s
            )
    finally:
        raco_problem.RacoProblem.__init__ = original
    assert seen == [pytest.approx(raco_problem.DUAL_WALK / math.sqrt(3)), raco_problem.DUAL_WALK]
