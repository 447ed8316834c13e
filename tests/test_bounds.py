"""Per-feature bounds (skfairdp.preprocessing.parse_bounds): every accepted form, and an
error naming the accepted forms and X's columns for anything ambiguous or mismatched."""

import numpy as np
import pandas as pd
import pytest

from skfairdp.preprocessing import DPStandardScaler, parse_bounds

NAMES = np.array(["age", "income"], dtype=object)
ACCEPTED = "accepts (lower, upper) with scalars or arrays of length"


def test_forms_that_mean_the_same():
    lower, upper = [18.0, 20000.0, 0.0], [90.0, 200000.0, 1.0]
    names = np.array(["age", "income", "share"], dtype=object)
    forms = [
        (lower, upper),
        (np.array(lower), np.array(upper)),
        [(18, 90), (20000, 200000), (0, 1)],
        np.array([[18, 90], [20000, 200000], [0, 1]]),
        {"income": (20000, 200000), "age": (18, 90), "share": (0, 1)},  # any key order
    ]
    for bounds in forms:
        got = parse_bounds(bounds, 3, names)
        np.testing.assert_array_equal(got[0], lower)
        np.testing.assert_array_equal(got[1], upper)
    # scalars (and length-1 arrays) hold for every column
    for bounds in [(0, 1), ([0], [1]), (0, [1, 2, 3])]:
        assert parse_bounds(bounds, 3)[0].tolist() == [0.0, 0.0, 0.0]
    # by position when X has no column names
    assert parse_bounds({1: (2, 3), 0: (0, 1)}, 2)[1].tolist() == [1.0, 3.0]


@pytest.mark.parametrize("names", [NAMES, None])
@pytest.mark.parametrize(
    "bounds",
    [
        [(18, 90), (20000, 200000)],  # the issue's: meant one pair per column
        ([18, 20000], [90, 200000]),  # the same numbers meant as (lower, upper)
        ([0, -10], [100, 10]),  # per-column reading invalid: still refused
        [(90, 18), (20000, 200000)],  # a pair typed the wrong way round
    ],
)
def test_two_columns_pair_of_pairs_is_ambiguous(bounds, names):
    with pytest.raises(ValueError, match="ambiguous with 2 columns") as info:
        parse_bounds(bounds, 2, names)
    message = str(info.value)
    keys = ("'age'", "'income'") if names is not None else ("0", "1")
    (a, b), (c, d) = bounds
    # both readings, spelled out as the dicts that would be unambiguous
    assert f"{{{keys[0]}: ({a:g}, {b:g}), {keys[1]}: ({c:g}, {d:g})}}" in message
    assert f"{{{keys[0]}: ({a:g}, {c:g}), {keys[1]}: ({b:g}, {d:g})}}" in message
    assert ACCEPTED in message
    assert ("'age', 'income'" in message) == (names is not None)
    if names is None:
        assert "keys: column positions" in message
    if bounds[0] == (90, 18):
        assert "(not valid bounds)" in message


def test_two_columns_readings_that_coincide_are_accepted():
    lower, upper = parse_bounds([(0, 1), (1, 2)], 2, NAMES)  # symmetric: both readings equal
    assert lower.tolist() == [0.0, 1.0] and upper.tolist() == [1.0, 2.0]


def test_the_issue_frame_per_column_dict():
    frame = pd.DataFrame({"age": [20.0, 40.0, 60.0], "income": [30000.0, 50000.0, 90000.0]})
    with pytest.raises(ValueError, match="ambiguous"):
        DPStandardScaler(bounds=[(18, 90), (20000, 200000)]).fit(frame)
    scaler = DPStandardScaler(bounds={"age": (18, 90), "income": (20000, 200000)}).fit(frame)
    np.testing.assert_array_equal(scaler.mean_, [54.0, 110000.0])
    assert np.all(np.abs(scaler.transform(frame)) <= 1.0)
    # the same dict, keyed by position, on the array
    by_position = DPStandardScaler(bounds={0: (18, 90), 1: (20000, 200000)}).fit(frame.to_numpy())
    np.testing.assert_array_equal(by_position.mean_, scaler.mean_)


@pytest.mark.parametrize(
    "bounds, expected",
    [
        (([0, 0, 0], [1, 1, 1]), r"gives 3 lower bounds, but X has 2 columns"),
        ((0, [1, 1, 1]), r"gives 3 upper bounds, but X has 2 columns"),
        ([(0, 1)] * 3, r"3 \(lower, upper\) pairs, but X has 2 columns"),
        ((0, 1, 2), r"\(lower, upper\) has 2 entries, not 3"),
        ((0, "a"), r"upper must be a number or a 1-D array of numbers"),
        ("ab", r"bounds must be a tuple, list or dict, got 'ab'"),
        ((1, 0), r"upper bound must be above its lower bound; column 'age' has lower 1"),
        ((0, np.inf), r"bounds must be finite; column 'age'"),
    ],
)
def test_mismatch_names_the_shapes_and_columns(bounds, expected):
    with pytest.raises(ValueError, match=expected) as info:
        parse_bounds(bounds, 2, NAMES)
    assert ACCEPTED in str(info.value) and "('age', 'income')" in str(info.value)
    assert "broadcast" not in str(info.value)


def test_wrong_number_of_features_through_the_scaler():
    frame = pd.DataFrame({"age": [20.0, 40.0], "income": [1.0, 2.0], "hours": [1.0, 2.0]})
    with pytest.raises(ValueError, match="gives 2 lower bounds, but X has 3 columns") as info:
        DPStandardScaler(bounds=([18, 0], [90, 1])).fit(frame)
    assert "'age', 'income', 'hours'" in str(info.value)


@pytest.mark.parametrize(
    "bounds, names, expected",
    [
        ({"age": (18, 90)}, NAMES, r"no bounds for column \['income'\]"),
        (
            {"age": (18, 90), "income": (0, 1), "hours": (0, 99)},
            NAMES,
            r"key \['hours'\] not among X's columns",
        ),
        ({0: (18, 90), 1: (0, 1)}, NAMES, r"no bounds for columns \['age', 'income'\]"),
        ({"age": (18, 90), "income": (0, 1)}, None, "X has no column names"),
        ({"age": 3, "income": (0, 1)}, NAMES, r"bounds\['age'\] must be a \(lower, upper\) pair"),
        ({"age": (90, 18), "income": (0, 1)}, NAMES, "column 'age' has lower 90, upper 18"),
    ],
)
def test_dict_missing_extra_or_bad_columns(bounds, names, expected):
    with pytest.raises(ValueError, match=expected) as info:
        parse_bounds(bounds, 2, names)
    assert ACCEPTED in str(info.value)


def test_dict_through_a_column_transformer():
    from sklearn.compose import make_column_transformer

    frame = pd.DataFrame({"age": [20.0, 40.0], "city": ["a", "b"], "income": [1.0, 3.0]})
    ct = make_column_transformer(
        (DPStandardScaler(bounds={"age": (0, 100), "income": (1, 3)}), ["age", "income"]),
        remainder="drop",
    )
    np.testing.assert_allclose(ct.fit_transform(frame), [[-0.6, -1.0], [-0.2, 1.0]])
    assert list(ct.get_feature_names_out()) == [
        "dpstandardscaler__age",
        "dpstandardscaler__income",
    ]
