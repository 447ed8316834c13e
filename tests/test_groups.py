"""Tests for skfairdp.fairness.groups (sensitive-feature encoding)."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from skfairdp.fairness import (
    GroupEncoder,
    encode_sensitive_features,
)
from skfairdp.fairness.groups import observed_group_codes, sorted_categories
from skfairdp.fermi.priors import check_min_group_fraction, check_priors_against_rho

# ----------------------------------------------------------------- formats


@pytest.mark.parametrize(
    "sf, categories",
    [
        (["b", "a", "b", "c"], ["a", "b", "c"]),
        (np.array([3, 1, 3, 2]), [1, 2, 3]),
        (pd.Series([True, False, True]), [False, True]),
        (pd.Series(["x", "y"], dtype="category"), ["x", "y"]),
        (pd.Series(["x", "y"], dtype="string"), ["x", "y"]),
        (np.array([[1], [0], [1]]), [0, 1]),
        ([1.5, 0.5], [0.5, 1.5]),
    ],
)
def test_one_attribute_formats(sf, categories):
    enc = GroupEncoder().fit(sf)
    assert enc.names_ == ["sensitive_feature_0"]
    assert enc.categories_[0].tolist() == categories
    assert enc.n_groups_ == len(categories)
    assert enc.group_labels_.tolist() == categories
    codes = enc.transform(sf)
    assert codes.dtype == np.int64
    values = np.asarray(sf, dtype=object).ravel()
    assert [categories[c] for c in codes] == values.tolist()


def test_series_name_is_attribute_name():
    enc = GroupEncoder().fit(pd.Series(["F", "M"], name="sex"))
    assert enc.names_ == ["sex"]
    assert enc.format_group(0) == "sex=F"


def test_dataframe_gives_joint_groups_in_mixed_radix():
    sf = pd.DataFrame({"sex": ["M", "F", "F", "M"], "race": ["b", "a", "c", "a"]})
    enc = GroupEncoder(allow_empty_groups=True).fit(sf)
    assert enc.names_ == ["sex", "race"]
    assert [c.tolist() for c in enc.categories_] == [["F", "M"], ["a", "b", "c"]]
    assert enc.n_groups_ == 6
    assert enc.group_labels_.tolist() == [
        ("F", "a"),
        ("F", "b"),
        ("F", "c"),
        ("M", "a"),
        ("M", "b"),
        ("M", "c"),
    ]
    codes = enc.transform(sf)
    # first attribute most significant: code = i_sex * 3 + i_race
    assert codes.tolist() == [1 * 3 + 1, 0 * 3 + 0, 0 * 3 + 2, 1 * 3 + 0]
    assert enc.format_group(5) == "sex=M, race=c"
    strict = GroupEncoder()
    with pytest.raises(ValueError, match=r"no rows for 2 of the 6 joint.*sex=F, race=b"):
        strict.fit(sf)  # not all 6 joint groups are present
    assert not hasattr(strict, "n_groups_")  # a failed fit leaves it unfitted


@pytest.mark.parametrize(
    "sf, names",
    [
        (np.array([[0, "a"], [1, "b"], [0, "b"], [1, "a"]], dtype=object), None),
        ([[0, "a"], [1, "b"], [0, "b"], [1, "a"]], None),
        ({"s": [0, 1, 0, 1], "r": ["a", "b", "b", "a"]}, ["s", "r"]),
        (pd.DataFrame([[0, "a"], [1, "b"], [0, "b"], [1, "a"]]), None),
    ],
)
def test_two_attribute_formats(sf, names):
    enc = GroupEncoder().fit(sf)
    expected = names or ["sensitive_feature_0", "sensitive_feature_1"]
    assert enc.names_ == expected
    assert enc.n_groups_ == 4
    assert sorted(enc.transform(sf).tolist()) == [0, 1, 2, 3]


def test_encoding_independent_of_order_of_appearance():
    sf = pd.DataFrame({"a": ["x", "y", "z", "x", "z", "y"], "b": [2, 1, 1, 2, 2, 1]})
    perm = [5, 3, 1, 0, 4, 2]
    enc1 = GroupEncoder(allow_empty_groups=True).fit(sf)
    enc2 = GroupEncoder(allow_empty_groups=True).fit(sf.iloc[perm])
    assert enc1.group_labels_.tolist() == enc2.group_labels_.tolist()
    np.testing.assert_array_equal(enc1.transform(sf), enc2.transform(sf))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "Z"]), st.just(2.5)),
        min_size=2,
        max_size=30,
    ),
    st.randoms(use_true_random=False),
)
def test_mixed_type_sort_is_deterministic(values, rnd):
    shuffled = list(values)
    rnd.shuffle(shuffled)
    distinct = list(pd.unique(np.array(values, dtype=object)))
    expected = sorted_categories(distinct)
    assert sorted_categories(list(pd.unique(np.array(shuffled, dtype=object)))) == expected
    numbers = [v for v in expected if not isinstance(v, str)]
    assert numbers == sorted(numbers)  # numbers first, in numeric order
    assert expected[len(numbers) :] == sorted(v for v in expected if isinstance(v, str))


def test_transform_unseen_category_names_it():
    enc = GroupEncoder().fit(["a", "b"])
    with pytest.raises(ValueError, match="'zebra'.*not in the fitted categories"):
        enc.transform(["a", "zebra"])


def test_transform_matches_columns_by_name():
    sf = pd.DataFrame({"sex": ["F", "M", "F", "M"], "race": ["a", "a", "b", "b"]})
    enc = GroupEncoder().fit(sf)
    np.testing.assert_array_equal(enc.transform(sf[["race", "sex"]]), enc.transform(sf))
    with pytest.raises(ValueError, match="attributes"):
        enc.transform(sf.rename(columns={"race": "age"}))
    with pytest.raises(ValueError, match="1 attribute"):
        enc.transform(sf["sex"])


def test_transform_checks_length_and_fitted():
    enc = GroupEncoder().fit([0, 1])
    with pytest.raises(ValueError, match="sensitive_features has 2 rows but X has 3"):
        enc.transform([0, 1], n_samples=3)
    with pytest.raises(Exception, match="not fitted"):
        GroupEncoder().transform([0, 1])


# --------------------------------------------------------- declared domain


def test_declared_values_fix_the_domain():
    enc = GroupEncoder(sensitive_values=["c", "a", "b"], allow_empty_groups=True)
    codes = enc.fit_transform(["a", "a", "b"])
    assert enc.categories_[0].tolist() == ["a", "b", "c"]
    assert enc.n_groups_ == 3
    assert codes.tolist() == [0, 0, 1]


@pytest.mark.parametrize(
    "declared", [[[0, 1], ["a", "b"]], {"r": ["b", "a"], "s": [1, 0]}], ids=["lists", "dict"]
)
def test_declared_values_several_attributes(declared):
    sf = pd.DataFrame({"s": [0, 1, 0, 1], "r": ["a", "b", "b", "a"]})
    enc = GroupEncoder(sensitive_values=declared).fit(sf)
    assert [c.tolist() for c in enc.categories_] == [[0, 1], ["a", "b"]]


def test_declared_empty_group_is_named():
    with pytest.raises(ValueError, match=r"no rows.*sex=other.*declare fewer values"):
        encode_sensitive_features(
            pd.Series(["F", "M"], name="sex"), 2, sensitive_values=["F", "M", "other"]
        )


def test_value_outside_declared_domain():
    with pytest.raises(ValueError, match="'x'.*declared sensitive_values"):
        GroupEncoder(sensitive_values=["a", "b"]).fit(["a", "b", "x"])


@pytest.mark.parametrize(
    "declared, sf, match",
    [
        (["a", "a", "b"], ["a", "b"], "duplicate"),
        ({"s": [0, 1]}, {"s": [0, 1], "r": [0, 1]}, "declares attributes"),
        ([[0, 1]], {"s": [0, 1], "r": [0, 1]}, "each of the 2"),
        ("ab", ["a", "b"], "must be a list"),
        ([None, "a"], ["a", "b"], "missing"),
    ],
)
def test_bad_declared_values(declared, sf, match):
    with pytest.raises(ValueError, match=match):
        GroupEncoder(sensitive_values=declared).fit(sf)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "sf, n, match",
    [
        (None, 3, "sensitive_features is required: pass sensitive_features=... to fit"),
        ([0, 1] * 5, 12, "sensitive_features has 10 rows but X has 12"),
        ([0, 1, np.nan], 3, "missing value"),
        (["a", None, "b"], 3, "missing value"),
        (pd.Series(["a", pd.NA, "b"], dtype="string"), 3, "missing value"),
        (pd.DataFrame({"a": [0, 1, 0], "b": [1.0, np.nan, 0.0]}), 3, "missing.*'b'"),
        (["a", "a", "a"], 3, "single group"),
        (np.zeros((3, 2, 2)), 3, "3 dimensions"),
        ("sex", 3, "scalar 'sex'"),
        ([], 0, "empty"),
        (np.zeros((3, 0)), 3, "attribute"),
        ([[0], [1, 2], [0]], 3, "unequal length"),
        ([[1, 2], [3, 4]], 2, "no rows"),
    ],
)
def test_errors_name_the_argument(sf, n, match):
    with pytest.raises(ValueError, match=match) as info:
        encode_sensitive_features(sf, n)
    assert "sensitive_features" in str(info.value) or "sensitive_values" in str(info.value)


def test_unhashable_values():
    sf = np.empty(2, dtype=object)
    sf[:] = [["a"], ["b"]]
    with pytest.raises(ValueError, match="hashable"):
        GroupEncoder().fit(sf)


def test_allow_empty_joint_groups():
    codes, enc = encode_sensitive_features([[1, 2], [3, 4]], 2, allow_empty_groups=True)
    assert enc.n_groups_ == 4
    assert codes.tolist() == [0, 3]


# ------------------------------------------------------------ misc / state


def test_no_counts_are_stored_and_encoder_pickles():
    _, enc = encode_sensitive_features(pd.Series(["F", "M", "M"], name="sex"), 3)
    fitted = {k for k in vars(enc) if k.endswith("_") and not k.startswith("__")}
    assert fitted == {"names_", "categories_", "n_groups_", "group_labels_"}
    enc2 = pickle.loads(pickle.dumps(enc))
    np.testing.assert_array_equal(enc2.transform(["M", "F"]), [1, 0])
    assert clone(enc).get_params() == {
        "sensitive_values": None,
        "allow_empty_groups": False,
        "allow_single_group": False,
    }


def test_observed_group_codes_allows_single_group():
    assert observed_group_codes(["a", "a"], 2).tolist() == [0, 0]
    codes = observed_group_codes(pd.DataFrame({"a": [0, 0, 1], "b": ["x", "y", "x"]}), 3)
    assert len(set(codes.tolist())) == 3
    with pytest.raises(ValueError, match="sensitive_features has 3 rows but y_true has 2"):
        observed_group_codes([0, 1, 0], 2)


# ------------------------------------------------------ minimum group size


def test_check_min_group_fraction():
    out = check_min_group_fraction([0.5, 0.3, 0.2], 0.1)
    np.testing.assert_array_equal(out, [0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match=r"rho=0\.05: Black \(fraction 0\.02\)"):
        check_min_group_fraction([0.9, 0.08, 0.02], 0.05, ["White", "Asian", "Black"])
    with pytest.raises(ValueError, match=r"\(F, b\)"):
        check_min_group_fraction([0.99, -0.01], 0.05, [("F", "a"), ("F", "b")])
    with pytest.raises(ValueError, match="group 1"):
        check_min_group_fraction([0.99, 0.01], 0.05)
    with pytest.raises(ValueError, match="rho"):
        check_min_group_fraction([0.5, 0.5], 1.5)
    with pytest.raises(ValueError, match="labels"):
        check_min_group_fraction([0.5, 0.5], 0.1, ["a"])


def test_check_priors_against_rho_raises_on_declared_warns_on_counted():
    priors = [[0.9, 0.1], [0.97, 0.03]]  # the second block's group "b" is below rho
    labels = [["a", "b"], ["a", "b"]]
    kw = {"source": "were counted", "remedy": "lower rho"}
    with pytest.raises(ValueError, match=r"rho=0\.05: b \(fraction 0\.03\)"):
        check_priors_against_rho(priors, 0.05, labels, declared=True, **kw)
    clamped = r"were counted and were clamped at rho=0\.05.*lower rho"
    with pytest.warns(UserWarning, match=clamped) as w:
        check_priors_against_rho(priors, 0.05, labels, declared=False, stacklevel=1, **kw)
    assert w[0].filename == __file__  # stacklevel counted from the caller: 1 is this line
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing below rho: silent
        check_priors_against_rho(priors, 0.02, labels, declared=True, **kw)
