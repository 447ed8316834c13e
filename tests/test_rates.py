"""Rate-constraint vocabulary: encodings, global partition, figure-1 fixture, sensitivity."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from skfairdp.fairness.rates import (
    Cells,
    DemographicParity,
    EqualizedOdds,
    EqualOpportunity,
    FalseNegativeRate,
    RateConstraint,
    compile_rate_constraints,
    resolve_constraints,
    subset_rates,
)
from skfairdp.raco.problem import soft_histogram


def _soft(n, k, seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k))
    p = np.exp(logits)
    return p / p.sum(1, keepdims=True)


# --------------------------------------------------------------------------- A3
def test_figure_1_fixture():
    """Paper Fig. 1: unions of parts D1=(2,4), D2=(8,4), D3=(7,14).

    The figure prints (13/27, 14/27) for I4 = {1, 3}; the counts give (9/27, 18/27).
    """
    H = np.array([[2.0, 4.0], [8.0, 4.0], [7.0, 14.0]])
    subsets = {
        "I1": [0],
        "I2": [1, 2],
        "I3": [1],
        "I4": [0, 2],
        "I5": [2],
        "I6": [0, 1],
    }
    S = np.zeros((len(subsets), 3), dtype=bool)
    for m, parts in enumerate(subsets.values()):
        S[m, parts] = True
    rates, counts = subset_rates(H, S)
    expected = {
        "I1": (2 / 6, 4 / 6),
        "I2": (15 / 33, 18 / 33),
        "I3": (8 / 12, 4 / 12),
        "I4": (9 / 27, 18 / 27),
        "I5": (7 / 21, 14 / 21),
        "I6": (10 / 18, 8 / 18),
    }
    np.testing.assert_allclose(rates, np.array(list(expected.values())))
    np.testing.assert_allclose(counts, [6, 33, 12, 27, 21, 18])
    assert not np.allclose(rates[3], (13 / 27, 14 / 27))  # the figure's typo


# --------------------------------------------------------------------------- A2
def test_demographic_parity_binary_encoding_and_mirrors():
    program = compile_rate_constraints(DemographicParity(0.05), ["a", "b"], [0, 1])
    assert program.n_constraints == 4 and program.n_parts == 2
    assert program.uses_groups and not program.uses_labels
    proba = _soft(50, 2, 0)
    groups = np.random.default_rng(1).integers(0, 2, 50)
    labels = np.zeros(50, dtype=int)
    H = program.histogram(proba, program.parts(groups, labels))
    values = program.constraint_values(H)
    # direct soft rates
    direct = {}
    for zi in range(2):
        for k in range(2):
            direct[(zi, k)] = proba[groups == zi, k].mean() - proba[groups != zi, k].mean()
    np.testing.assert_allclose(
        values, [direct[(0, 0)], direct[(0, 1)], direct[(1, 0)], direct[(1, 1)]]
    )
    # mirror identities of soft rates
    assert values[0] == pytest.approx(-values[1])
    assert values[0] == pytest.approx(-values[2])
    assert values[1] == pytest.approx(-values[3])


def test_family_sizes():
    groups, classes = ["a", "b", "c"], [0, 1, 2]
    dp = compile_rate_constraints(DemographicParity(0.1), groups, classes)
    # pairs of groups (the default, issue 34): J = |Z| (|Z| - 1) K, Q = |Z|
    assert (dp.n_constraints, dp.n_parts) == (18, 3)
    dp_rest = compile_rate_constraints(DemographicParity(0.1, versus="rest"), groups, classes)
    assert (dp_rest.n_constraints, dp_rest.n_parts) == (9, 3)  # J = |Z| K, Q = |Z|
    eo = compile_rate_constraints(EqualizedOdds(0.1), groups, classes)
    assert (eo.n_constraints, eo.n_parts) == (54, 9)  # J = K^2 |Z| (|Z| - 1), Q = K |Z|
    eo_rest = compile_rate_constraints(EqualizedOdds(0.1, versus="rest"), groups, classes)
    assert (eo_rest.n_constraints, eo_rest.n_parts) == (27, 9)  # J = K^2 |Z|, Q = K |Z|
    eopp = compile_rate_constraints(EqualOpportunity(0.1), groups, classes)
    assert (eopp.n_constraints, eopp.n_parts) == (18, 4)  # K |Z| (|Z| - 1); cells of y=2 + rest
    eopp_rest = compile_rate_constraints(EqualOpportunity(0.1, versus="rest"), groups, classes)
    assert (eopp_rest.n_constraints, eopp_rest.n_parts) == (9, 4)
    fnr_all = compile_rate_constraints(FalseNegativeRate(0.2, classes=classes), groups, classes)
    assert (fnr_all.n_constraints, fnr_all.n_parts) == (3, 3)  # paper form: J = K, Q = K
    assert fnr_all.uses_labels and not fnr_all.uses_groups


def test_false_negative_rate_binary_equals_soft_fnr():
    program = compile_rate_constraints(FalseNegativeRate(0.3), [None], [0, 1])
    assert program.n_constraints == 1  # positive class only by default
    proba = _soft(80, 2, 2)
    y = np.random.default_rng(3).integers(0, 2, 80)
    H = program.histogram(proba, program.parts(np.zeros(80, dtype=int), y))
    (value,) = program.constraint_values(H)
    assert value == pytest.approx(proba[y == 1, 0].mean())
    both = compile_rate_constraints(FalseNegativeRate(0.3, classes=[0, 1]), [None], [0, 1])
    H2 = both.histogram(proba, both.parts(np.zeros(80, dtype=int), y))
    np.testing.assert_allclose(
        both.constraint_values(H2), [proba[y == 0, 1].mean(), proba[y == 1, 0].mean()]
    )


def test_common_partition_is_built_from_atoms():
    """DP (by group) + FNR (by label) -> parts are the (group, label) cells (Remark 1)."""
    program = compile_rate_constraints(
        [DemographicParity(0.05), FalseNegativeRate(0.3)], ["a", "b"], [0, 1]
    )
    assert program.n_parts == 4
    assert program.n_constraints == 5
    assert sorted(program.part_of_cell.ravel().tolist()) == [0, 1, 2, 3]
    # a constraint on one cell only: that cell is an atom, the rest merges
    one = RateConstraint([(Cells(groups=["a"], labels=[0]), {1: 1.0})], bound=0.1)
    prog = compile_rate_constraints(one, ["a", "b", "c"], [0, 1])
    assert prog.n_parts == 2
    assert prog.part_of_cell[0, 0] != prog.part_of_cell[1, 0]
    assert len(set(prog.part_of_cell.ravel().tolist()) - {prog.part_of_cell[0, 0]}) == 1


def test_custom_constraint_hard_evaluation():
    """Upper bound on the women's false positive rate, evaluated on hard predictions."""
    fpr_women = RateConstraint(
        [(Cells(groups=["F"], labels=["no"]), {"yes": 1.0})], bound=0.1, name="FPR women"
    )
    program = compile_rate_constraints([fpr_women], ["F", "M"], ["no", "yes"])
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 2, 200)
    y = rng.integers(0, 2, 200)  # encoded: 0 = "no"
    pred = rng.integers(0, 2, 200)
    (value,) = program.evaluate(pred, groups, y)
    mask = (groups == 0) & (y == 0)
    assert value == pytest.approx(np.mean(pred[mask] == 1))
    assert program.names == ["FPR women"]
    assert program.violation([value]) == pytest.approx(max(0.0, value - 0.1))


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="group 'X'"):
        compile_rate_constraints(
            RateConstraint([(Cells(groups=["X"]), {1: 1.0})], 0.1), ["a", "b"], [0, 1]
        )
    with pytest.raises(ValueError, match="only 1 group"):
        compile_rate_constraints(DemographicParity(0.1), ["a"], [0, 1])
    with pytest.raises(ValueError, match="constraints: unknown constraint name 'parity'"):
        resolve_constraints("parity", 0.1)
    with pytest.raises(ValueError, match="tolerance"):
        DemographicParity(-0.1)
    with pytest.raises(ValueError, match="bound"):
        FalseNegativeRate(1.5)
    with pytest.raises(TypeError, match="Cells"):
        RateConstraint([("a", {1: 1.0})], 0.1)


def test_resolve_names_use_tolerance():
    (dp,) = resolve_constraints("demographic_parity", 0.07)
    assert isinstance(dp, DemographicParity) and dp.tolerance == 0.07
    both = resolve_constraints(["equalized_odds", FalseNegativeRate(0.2)], 0.03)
    assert isinstance(both[0], EqualizedOdds) and both[0].tolerance == 0.03
    assert both[1].bound == 0.2


# --------------------------------------------------------------------------- A1
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 30),
    k=st.integers(2, 5),
    q=st.integers(1, 6),
    tau=st.floats(0.1, 20.0),
    seed=st.integers(0, 10_000),
)
def test_histogram_sensitivity_is_one(n, k, q, tau, seed):
    """Adding one row changes the soft histogram by exactly 1 in L1 and <= 1 in L2."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n + 1, k, generator=g) * 5
    parts = torch.randint(0, q, (n + 1,), generator=g)
    proba = torch.softmax(tau * logits, dim=1)
    with_row = soft_histogram(proba, parts, q)
    without = soft_histogram(proba[:n], parts[:n], q)
    diff = (with_row - without).double()
    assert diff.abs().sum().item() == pytest.approx(1.0, abs=1e-5)
    assert torch.linalg.vector_norm(diff).item() <= 1.0 + 1e-6
