"""Tests for skfairdp.fairness.metrics, against fairlearn and hand computations."""

import itertools

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    equalized_odds_difference,
    true_positive_rate,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skfairdp.metrics import (
    demographic_parity_violation,
    equal_opportunity_violation,
    equalized_odds_violation,
)

# ------------------------------------------------------------------ golden


def test_golden_example_demographic_parity_is_one():
    s = [0, 0, 1, 1]
    p = np.array([0.9, 0.7, 0.2, 0.4])
    y_pred = (p >= 0.5).astype(int)
    assert y_pred.tolist() == [1, 1, 0, 0]
    assert demographic_parity_violation([1, 0, 1, 0], y_pred, sensitive_features=s) == 1.0


# ------------------------------------------------- binary vs fairlearn


@st.composite
def binary_problems(draw):
    """Random binary labels with 1-D or 2-D sensitive features."""
    n = draw(st.integers(4, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    n_groups = draw(st.integers(2, 4))
    two_d = draw(st.booleans())
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, 2, n)
    y_pred = np.where(rng.random(n) < draw(st.floats(0, 1)), y_true, rng.integers(0, 2, n))
    if two_d:
        sf = pd.DataFrame(
            {
                "a": rng.choice(["x", "y"], n),
                "b": rng.integers(0, n_groups, n),
            }
        )
    else:
        sf = pd.Series(rng.integers(0, n_groups, n).astype(str), name="g")
    return y_true, y_pred, sf


def _groups(sf):
    return sf.astype(str).agg("|".join, axis=1) if isinstance(sf, pd.DataFrame) else sf


@settings(max_examples=100, deadline=None)
@given(binary_problems())
def test_demographic_parity_matches_fairlearn(problem):
    y_true, y_pred, sf = problem
    expected = demographic_parity_difference(y_true, y_pred, sensitive_features=sf)
    got = demographic_parity_violation(y_true, y_pred, sensitive_features=sf)
    assert got == pytest.approx(expected, abs=1e-12)


def _each_group_has_both_labels(y_true, sf):
    counts = pd.crosstab(np.asarray(_groups(sf)), y_true)
    return counts.shape[1] == 2 and bool((counts > 0).all(axis=None))


@settings(max_examples=100, deadline=None)
@given(binary_problems())
def test_equalized_odds_matches_fairlearn(problem):
    y_true, y_pred, sf = problem
    assume(_each_group_has_both_labels(y_true, sf))
    expected = equalized_odds_difference(y_true, y_pred, sensitive_features=sf)
    got = equalized_odds_violation(y_true, y_pred, sensitive_features=sf)
    assert got == pytest.approx(expected, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(binary_problems())
def test_equal_opportunity_matches_fairlearn_tpr_gap(problem):
    y_true, y_pred, sf = problem
    assume(_each_group_has_both_labels(y_true, sf))
    frame = MetricFrame(
        metrics=true_positive_rate, y_true=y_true, y_pred=y_pred, sensitive_features=sf
    )
    got = equal_opportunity_violation(y_true, y_pred, sensitive_features=sf)
    assert got == pytest.approx(frame.difference(), abs=1e-12)
    assert equal_opportunity_violation(
        y_true, y_pred, sensitive_features=sf, pos_label=1
    ) == pytest.approx(got, abs=1e-15)


# ------------------------------------- multi-class vs a loop reference


def _reference(y_true, y_pred, groups, kind):
    """Literal definitions with Python loops (skipping empty cells)."""
    y_true, y_pred, groups = map(np.asarray, (y_true, y_pred, groups))
    classes = np.union1d(y_true, y_pred)
    worst = 0.0
    for c in classes:
        conditions = {
            "dp": [np.ones_like(y_true, dtype=bool)],
            "eo": [y_true == c, y_true != c],
            "eopp": [y_true == c],
        }[kind]
        for cond in conditions:
            rates = []
            for g in np.unique(groups):
                mask = (groups == g) & cond
                if mask.any():
                    rates.append(np.mean(y_pred[mask] == c))
            for a, b in itertools.combinations(rates, 2):
                worst = max(worst, abs(a - b))
    return worst


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 5),
    st.integers(1, 4),
    st.integers(1, 80),
    st.integers(0, 2**32 - 1),
)
def test_multiclass_matches_loop_reference(n_classes, n_groups, n, seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, n_classes, n)
    y_pred = rng.integers(0, n_classes, n)
    s = rng.integers(0, n_groups, n)
    for kind, metric in [
        ("dp", demographic_parity_violation),
        ("eo", equalized_odds_violation),
    ]:
        expected = _reference(y_true, y_pred, s, kind)
        assert metric(y_true, y_pred, sensitive_features=s) == pytest.approx(expected, abs=1e-12)
    if len(np.union1d(y_true, y_pred)) > 2:
        expected = _reference(y_true, y_pred, s, "eopp")
        got = equal_opportunity_violation(y_true, y_pred, sensitive_features=s)
        assert got == pytest.approx(expected, abs=1e-12)


# -------------------------------------------------- hand-computed cases


def test_multiclass_demographic_parity_by_hand():
    # group x predicts a, a, b, c -> rates a=.5, b=.25, c=.25
    # group y predicts a, b, b, b -> rates a=.25, b=.75, c=0
    y_pred = ["a", "a", "b", "c", "a", "b", "b", "b"]
    s = ["x"] * 4 + ["y"] * 4
    assert demographic_parity_violation(y_pred, y_pred, sensitive_features=s) == 0.5


def test_multiclass_equalized_odds_by_hand():
    y_true = np.array([0, 0, 1, 2, 0, 1, 1, 2])
    y_pred = np.array([0, 1, 1, 2, 0, 1, 0, 0])
    s = np.array(["x"] * 4 + ["y"] * 4)
    # class 2 given y=2: x 1/1, y 0/1 -> gap 1
    assert equalized_odds_violation(y_true, y_pred, sensitive_features=s) == 1.0
    # equal opportunity: class 0 | y=0: x 1/2, y 1/1 -> .5; class 1 | y=1: x 1, y 1/2 -> .5;
    # class 2 | y=2: 1 -> max 1
    assert equal_opportunity_violation(y_true, y_pred, sensitive_features=s) == 1.0
    assert equal_opportunity_violation(y_true, y_pred, sensitive_features=s, pos_label=1) == 0.5
    assert equal_opportunity_violation(y_true, y_pred, sensitive_features=s, pos_label=0) == 0.5


def test_equalized_odds_skips_groups_without_rows_in_a_cell():
    # group y has no positive rows: only the false-positive cell compares groups
    y_true = [1, 0, 0, 0]
    y_pred = [1, 1, 0, 0]
    s = ["x", "x", "y", "y"]
    # FPR: x 1/1, y 0/2 -> 1 ; TPR only defined for x -> skipped
    assert equalized_odds_violation(y_true, y_pred, sensitive_features=s) == 1.0
    assert equal_opportunity_violation(y_true, y_pred, sensitive_features=s) == 0.0


def test_binary_string_labels_and_default_pos_label():
    y_true = pd.Series(["no", "yes", "yes", "yes"])
    y_pred = ["no", "yes", "no", "yes"]
    s = np.array(["a", "a", "b", "b"])
    # TPR for "yes" (the larger label): a 1/1, b 1/2
    assert equal_opportunity_violation(y_true, y_pred, sensitive_features=s) == 0.5
    # TPR for "no": a 1/1, b undefined -> 0
    assert equal_opportunity_violation(y_true, y_pred, sensitive_features=s, pos_label="no") == 0
    with pytest.raises(ValueError, match="pos_label='maybe' is not a valid label"):
        equal_opportunity_violation(y_true, y_pred, sensitive_features=s, pos_label="maybe")


def test_joint_groups_from_dataframe():
    y = [0, 1, 0, 1, 1, 0, 1, 1]
    sf = pd.DataFrame({"a": [0, 0, 0, 0, 1, 1, 1, 1], "b": [0, 0, 1, 1, 0, 0, 1, 1]})
    # joint groups (0,0): .5, (0,1): .5, (1,0): .5, (1,1): 1
    assert demographic_parity_violation(y, y, sensitive_features=sf) == 0.5
    # marginal groups only: a=0 .5, a=1 .75
    assert demographic_parity_violation(y, y, sensitive_features=sf["a"]) == 0.25


def test_single_group_and_single_class_are_zero():
    assert demographic_parity_violation([0, 1], [1, 0], sensitive_features=["a", "a"]) == 0.0
    assert equalized_odds_violation([1, 1], [1, 1], sensitive_features=["a", "b"]) == 0.0
    assert equal_opportunity_violation([0, 0], [0, 0], sensitive_features=[0, 1]) == 0.0
    assert equal_opportunity_violation([0, 0], [0, 0], sensitive_features=[0, 1], pos_label=1) == 0


# ------------------------------------------------------------ validation


def test_input_validation():
    with pytest.raises(ValueError, match="sensitive_features has 3 rows but y_true has 2"):
        demographic_parity_violation([0, 1], [0, 1], sensitive_features=[0, 1, 0])
    with pytest.raises(ValueError, match="hard class predictions"):
        demographic_parity_violation([0, 1], [0.2, 0.7], sensitive_features=[0, 1])
    with pytest.raises(ValueError, match="sensitive_features is required"):
        equalized_odds_violation([0, 1], [0, 1], sensitive_features=None)
    with pytest.raises(ValueError, match="missing"):
        equalized_odds_violation([0, 1], [0, 1], sensitive_features=["a", None])
    with pytest.raises(ValueError):
        demographic_parity_violation([0, 1], [0, 1, 1], sensitive_features=[0, 1])


def test_large_input_is_vectorised():
    rng = np.random.default_rng(0)
    n = 300_000
    y = rng.integers(0, 3, n)
    s = rng.integers(0, 5, n)
    for metric in (
        demographic_parity_violation,
        equalized_odds_violation,
        equal_opportunity_violation,
    ):
        assert 0.0 <= metric(y, rng.permutation(y), sensitive_features=s) < 0.05
