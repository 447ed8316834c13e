"""Tests for the bundled datasets in :mod:`skfairdp.datasets`."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_series_equal
from sklearn.utils import Bunch

from skfairdp.datasets import (
    BENCHMARK_DATASETS,
    load_adult,
    load_bank_marketing,
    load_communities_crime,
    load_credit_card,
    load_dataset,
    load_german_credit,
)
from skfairdp.datasets._registry import SUBSAMPLE_SEED, stratified_subsample

ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "native-country",
]
CREDIT_NUMERIC = [
    "LIMIT_BAL",
    "AGE",
    *[f"BILL_AMT{i}" for i in range(1, 7)],
    *[f"PAY_AMT{i}" for i in range(1, 7)],
]
CREDIT_CATEGORICAL = ["EDUCATION", "MARRIAGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6"]
DATA_FILES = [
    "adult.csv.gz",
    "credit_card.csv.gz",
    "german_credit.csv.gz",
    "bank_marketing.csv.gz",
    "communities_crime.csv.gz",
]
LOADERS = [
    load_adult,
    load_credit_card,
    load_german_credit,
    load_bank_marketing,
    load_communities_crime,
]
# (loader, sensitive_feature) for every grouping a loader offers.
GROUPINGS = [
    (load_adult, "sex"),
    (load_adult, "race"),
    (load_credit_card, "sex"),
    (load_credit_card, "education"),
    (load_credit_card, "age"),
    (load_german_credit, "age"),
    (load_german_credit, "sex"),
    (load_bank_marketing, "age"),
    (load_bank_marketing, "marital"),
    (load_communities_crime, None),
]
GROUPING_IDS = [f"{loader.__name__}-{group}" for loader, group in GROUPINGS]


def _load(loader, group, **kwargs) -> Bunch:
    if group is not None:
        kwargs["sensitive_feature"] = group
    return loader(**kwargs)


def _assert_frames_identical(left: pd.DataFrame, right: pd.DataFrame) -> None:
    # DataFrame.equals is ~100x faster than assert_frame_equal on categoricals.
    assert list(left.columns) == list(right.columns)
    assert list(left.dtypes) == list(right.dtypes)
    assert left.index.equals(right.index)
    assert left.equals(right)


@pytest.fixture(scope="module")
def adult_raw() -> Bunch:
    return load_adult()


@pytest.fixture(scope="module")
def adult_pre() -> Bunch:
    return load_adult(preprocess=True)


@pytest.fixture(scope="module")
def credit_raw() -> Bunch:
    return load_credit_card()


@pytest.fixture(scope="module")
def credit_pre() -> Bunch:
    return load_credit_card(preprocess=True)


# --------------------------------------------------------------------------- #
# Packaging
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("filename", DATA_FILES)
def test_data_files_are_package_resources(filename: str) -> None:
    resource = resources.files("skfairdp.datasets").joinpath("data", filename)
    assert resource.is_file()
    with resource.open("rb") as handle:
        assert handle.read(2) == b"\x1f\x8b"  # gzip magic number


def test_data_files_are_compact() -> None:
    data_dir = resources.files("skfairdp.datasets").joinpath("data")
    for filename in DATA_FILES:
        size = len(data_dir.joinpath(filename).read_bytes())
        assert size < 1_500_000, (filename, size)


def test_every_data_file_is_declared_package_data() -> None:
    # setup.cfg ships ``data/*.csv.gz``; anything else in data/ would be left out.
    data_dir = resources.files("skfairdp.datasets").joinpath("data")
    names = sorted(entry.name for entry in data_dir.iterdir() if entry.is_file())
    assert names == sorted(DATA_FILES)


# --------------------------------------------------------------------------- #
# Bunch structure (both datasets, both modes)
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("loader", "group"), GROUPINGS, ids=GROUPING_IDS)
@pytest.mark.parametrize("preprocess", [False, True])
def test_bunch_structure(loader, group, preprocess: bool) -> None:
    bunch = _load(loader, group, preprocess=preprocess)
    assert isinstance(bunch, Bunch)
    for key in ("data", "target", "sensitive_features", "frame", "DESCR", "feature_names"):
        assert key in bunch
    assert isinstance(bunch.data, pd.DataFrame)
    assert isinstance(bunch.target, pd.Series)
    assert isinstance(bunch.sensitive_features, pd.Series)
    assert isinstance(bunch.frame, pd.DataFrame)
    assert bunch.feature_names == list(bunch.data.columns)
    assert all(isinstance(name, str) for name in bunch.feature_names)
    assert len(bunch.target_names) == 2

    n = len(bunch.data)
    assert len(bunch.target) == n == len(bunch.sensitive_features) == len(bunch.frame)
    assert bunch.data.index.equals(bunch.target.index)
    assert bunch.data.index.equals(bunch.sensitive_features.index)
    assert isinstance(bunch.data.index, pd.RangeIndex)

    # target: 0/1 integers
    assert pd.api.types.is_integer_dtype(bunch.target.dtype)
    assert set(np.unique(bunch.target)) == {0, 1}

    # sensitive column is in the frame but never a feature
    name = bunch.sensitive_feature_name
    assert bunch.sensitive_features.name == name
    assert name in bunch.frame.columns
    assert not any(col == name or col.startswith(f"{name}_") for col in bunch.data.columns)
    assert_series_equal(bunch.frame[name], bunch.sensitive_features)
    assert_series_equal(bunch.frame[bunch.target.name], bunch.target)
    _assert_frames_identical(bunch.frame[bunch.feature_names], bunch.data)
    assert bunch.target.name not in bunch.data.columns

    # binary groups, as strings, no missing values; preprocessed data complete
    assert bunch.sensitive_features.nunique() == 2
    assert all(isinstance(value, str) for value in bunch.sensitive_features.unique())
    assert not bunch.target.isna().any()
    if preprocess:
        assert (bunch.data.dtypes == np.float32).all()
        assert np.isfinite(bunch.data.to_numpy()).all()


DOIS = {
    load_adult: "10.24432/C5XW20",
    load_credit_card: "10.24432/C55S3H",
    load_german_credit: "10.24432/C5NC77",
    load_bank_marketing: "10.24432/C5K306",
    load_communities_crime: "10.24432/C53W3X",
}


@pytest.mark.parametrize("loader", LOADERS)
def test_descr_cites_dataset(loader) -> None:
    descr = loader().DESCR
    doi = DOIS[loader]
    assert doi in descr
    assert "CC BY 4.0" in descr
    assert "UCI" in descr
    assert doi in loader.__doc__


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("preprocess", [False, True])
def test_deterministic(loader, preprocess: bool) -> None:
    first, second = loader(preprocess=preprocess), loader(preprocess=preprocess)
    _assert_frames_identical(first.data, second.data)
    assert_series_equal(first.target, second.target)
    assert_series_equal(first.sensitive_features, second.sensitive_features)
    _assert_frames_identical(first.frame, second.frame)


@pytest.mark.parametrize("loader", LOADERS)
def test_returned_objects_are_independent(loader) -> None:
    first = loader(preprocess=True)
    first.data.iloc[:, 0] = 123.0
    first.target.iloc[:] = 0
    second = loader(preprocess=True)
    assert not (second.data.iloc[:, 0] == 123.0).any()
    assert second.target.sum() > 0


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("preprocess", [False, True])
def test_as_frame_false(loader, preprocess: bool) -> None:
    framed = loader(preprocess=preprocess)
    bunch = loader(preprocess=preprocess, as_frame=False)
    assert isinstance(bunch.data, np.ndarray)
    assert isinstance(bunch.target, np.ndarray)
    assert isinstance(bunch.sensitive_features, np.ndarray)
    assert bunch.frame is None
    assert bunch.data.shape == framed.data.shape
    np.testing.assert_array_equal(bunch.target, framed.target.to_numpy())
    np.testing.assert_array_equal(
        bunch.sensitive_features.astype(str), framed.sensitive_features.to_numpy().astype(str)
    )
    if preprocess:
        assert bunch.data.dtype == np.float32


# --------------------------------------------------------------------------- #
# Adult
# --------------------------------------------------------------------------- #
def test_adult_raw_shape_and_dtypes(adult_raw: Bunch) -> None:
    assert adult_raw.data.shape == (48_842, 13)
    assert adult_raw.frame.shape == (48_842, 15)
    for column in ADULT_NUMERIC:
        assert adult_raw.data[column].dtype == np.int64, column
    for column in ADULT_CATEGORICAL:
        assert isinstance(adult_raw.data[column].dtype, pd.CategoricalDtype), column
    assert set(adult_raw.data.columns) == set(ADULT_NUMERIC) | set(ADULT_CATEGORICAL)


def test_adult_raw_keeps_missing_values(adult_raw: Bunch) -> None:
    missing = adult_raw.data.isna().sum()
    assert missing["workclass"] == 2_799
    assert missing["occupation"] == 2_809
    assert missing["native-country"] == 857
    assert missing[ADULT_NUMERIC].sum() == 0
    assert adult_raw.data.dropna().shape[0] == 45_222
    for column in ADULT_CATEGORICAL:
        assert "?" not in adult_raw.data[column].cat.categories, column


def test_adult_raw_is_clean(adult_raw: Bunch) -> None:
    # whitespace stripped, combined train + test, test labels normalised
    for column in ADULT_CATEGORICAL:
        categories = [str(c) for c in adult_raw.data[column].cat.categories]
        assert all(c == c.strip() for c in categories), column
    assert set(adult_raw.sensitive_features.unique()) == {"Female", "Male"}
    assert int(adult_raw.target.sum()) == 11_687
    assert adult_raw.sensitive_features.value_counts().to_dict() == {
        "Male": 32_650,
        "Female": 16_192,
    }
    # first row of adult.data and first row of adult.test
    first = adult_raw.frame.iloc[0]
    assert (first["age"], first["workclass"], first["fnlwgt"]) == (39, "State-gov", 77_516)
    assert first["income"] == 0
    first_test = adult_raw.frame.iloc[32_561]
    assert (first_test["age"], first_test["fnlwgt"], first_test["race"]) == (25, 226_802, "Black")
    assert adult_raw.frame.iloc[32_563]["income"] == 1  # ">50K." in adult.test


def test_adult_preprocessed_shape_and_balance(adult_pre: Bunch) -> None:
    assert adult_pre.data.shape == (45_222, 102)
    assert adult_pre.target.mean() == pytest.approx(0.248, abs=5e-4)
    assert int(adult_pre.target.sum()) == 11_208
    assert adult_pre.sensitive_features.value_counts().to_dict() == {
        "Male": 30_527,
        "Female": 14_695,
    }


def test_adult_preprocessed_columns(adult_pre: Bunch) -> None:
    columns = adult_pre.feature_names
    assert columns[:6] == ADULT_NUMERIC
    dummies = columns[6:]
    assert len(dummies) == 96
    assert "workclass_Private" in dummies
    assert any(c.startswith("race_") for c in dummies)  # race stays a feature
    assert not any(c.startswith("sex") for c in columns)
    assert "workclass_Never-worked" not in dummies  # level only occurs in dropped rows
    counts = {c: sum(d.startswith(f"{c}_") for d in dummies) for c in ADULT_CATEGORICAL}
    assert counts == {
        "workclass": 7,
        "education": 16,
        "marital-status": 7,
        "occupation": 14,
        "relationship": 6,
        "race": 5,
        "native-country": 41,
    }


def test_adult_preprocessed_values(adult_pre: Bunch) -> None:
    data = adult_pre.data
    assert not data.isna().any().any()
    assert (data.dtypes == np.float32).all()
    assert np.isfinite(data.to_numpy()).all()
    numeric = data[ADULT_NUMERIC].to_numpy(dtype=np.float64)
    np.testing.assert_allclose(numeric.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(numeric.std(axis=0), 1.0, atol=1e-5)
    dummies = data.iloc[:, 6:].to_numpy()
    assert set(np.unique(dummies)) == {0.0, 1.0}
    # exactly one active level per categorical column
    for column in ADULT_CATEGORICAL:
        block = data.filter(like=f"{column}_", axis=1).to_numpy()
        np.testing.assert_array_equal(block.sum(axis=1), 1.0)


def test_adult_preprocessed_matches_raw(adult_raw: Bunch, adult_pre: Bunch) -> None:
    complete = adult_raw.frame.dropna().reset_index(drop=True)
    assert_series_equal(complete["income"], adult_pre.target)
    assert_series_equal(complete["sex"], adult_pre.sensitive_features)
    age = complete["age"].to_numpy(dtype=np.float64)
    expected = (age - age.mean()) / age.std()
    np.testing.assert_allclose(adult_pre.data["age"].to_numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(
        adult_pre.data["workclass_Private"].to_numpy(),
        (complete["workclass"] == "Private").to_numpy(dtype=np.float32),
    )


# --------------------------------------------------------------------------- #
# Credit card
# --------------------------------------------------------------------------- #
def test_credit_raw_shape_and_dtypes(credit_raw: Bunch) -> None:
    assert credit_raw.data.shape == (30_000, 22)
    assert credit_raw.frame.shape == (30_000, 25)
    assert "ID" not in credit_raw.data.columns
    assert "ID" in credit_raw.frame.columns
    assert credit_raw.frame["ID"].tolist() == list(range(1, 30_001))
    for column in CREDIT_NUMERIC:
        assert credit_raw.data[column].dtype == np.int64, column
    for column in CREDIT_CATEGORICAL:
        assert isinstance(credit_raw.data[column].dtype, pd.CategoricalDtype), column
    assert not credit_raw.data.isna().any().any()
    # UCI codes are kept in the raw frame, including the undocumented ones
    assert list(credit_raw.data["EDUCATION"].cat.categories) == [0, 1, 2, 3, 4, 5, 6]
    assert list(credit_raw.data["MARRIAGE"].cat.categories) == [0, 1, 2, 3]


def test_credit_raw_first_row(credit_raw: Bunch) -> None:
    # first client in the UCI spreadsheet
    first = credit_raw.frame.iloc[0]
    assert first["ID"] == 1
    assert first["LIMIT_BAL"] == 20_000
    assert first["SEX"] == "female"  # UCI code 2
    assert (first["EDUCATION"], first["MARRIAGE"], first["AGE"]) == (2, 1, 24)
    assert (first["PAY_0"], first["PAY_6"]) == (2, -2)
    assert first["default payment next month"] == 1


@pytest.mark.parametrize("preprocess", [False, True])
def test_credit_balance_and_sensitive(preprocess: bool) -> None:
    bunch = load_credit_card(preprocess=preprocess)
    assert len(bunch.target) == 30_000
    assert int(bunch.target.sum()) == 6_636
    assert bunch.target.mean() == pytest.approx(0.221, abs=5e-4)
    counts = bunch.sensitive_features.value_counts().to_dict()
    assert counts == {"female": 18_112, "male": 11_888}
    assert (bunch.sensitive_features == "female").mean() == pytest.approx(0.604, abs=5e-4)


def test_credit_preprocessed_shape_and_columns(credit_pre: Bunch) -> None:
    assert credit_pre.data.shape == (30_000, 85)
    columns = credit_pre.feature_names
    assert columns[:14] == CREDIT_NUMERIC
    assert not any(c == "ID" or c.startswith("SEX") for c in columns)
    counts = {c: sum(d.startswith(f"{c}_") for d in columns[14:]) for c in CREDIT_CATEGORICAL}
    assert counts == {
        "EDUCATION": 4,
        "MARRIAGE": 3,
        "PAY_0": 11,
        "PAY_2": 11,
        "PAY_3": 11,
        "PAY_4": 11,
        "PAY_5": 10,
        "PAY_6": 10,
    }
    assert "EDUCATION_2" in columns
    assert "PAY_0_-1" in columns
    assert "EDUCATION_0" not in columns  # undocumented codes merged into "others"


def test_credit_preprocessed_values(credit_raw: Bunch, credit_pre: Bunch) -> None:
    data = credit_pre.data
    assert not data.isna().any().any()
    assert (data.dtypes == np.float32).all()
    numeric = data[CREDIT_NUMERIC].to_numpy(dtype=np.float64)
    np.testing.assert_allclose(numeric.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(numeric.std(axis=0), 1.0, atol=1e-5)
    for column in CREDIT_CATEGORICAL:
        block = data.filter(regex=rf"^{column}_-?\d+$", axis=1).to_numpy()
        np.testing.assert_array_equal(block.sum(axis=1), 1.0)
    raw_edu = credit_raw.data["EDUCATION"].astype(int)
    np.testing.assert_array_equal(
        data["EDUCATION_4"].to_numpy(), raw_edu.isin([0, 4, 5, 6]).to_numpy(dtype=np.float32)
    )
    raw_mar = credit_raw.data["MARRIAGE"].astype(int)
    np.testing.assert_array_equal(
        data["MARRIAGE_3"].to_numpy(), raw_mar.isin([0, 3]).to_numpy(dtype=np.float32)
    )
    assert_series_equal(credit_pre.target, credit_raw.target)
    assert_series_equal(credit_pre.sensitive_features, credit_raw.sensitive_features)


# --------------------------------------------------------------------------- #
# Group choice
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    ("loader", "bad"),
    [
        (load_adult, "gender"),
        (load_adult, "Race"),
        (load_credit_card, "marriage"),
        (load_german_credit, "race"),
        (load_bank_marketing, "education"),
        (load_adult, None),
    ],
)
def test_unknown_sensitive_feature_is_rejected(loader, bad) -> None:
    with pytest.raises(ValueError, match="sensitive_feature must be one of"):
        loader(sensitive_feature=bad)


@pytest.mark.parametrize(
    ("loader", "group", "counts", "positives"),
    [
        (load_adult, "race", {"White": 41_762, "non-White": 7_080}, {"White": 10_607}),
        (
            load_credit_card,
            "education",
            {"higher education": 24_615, "other": 5_385},
            {"higher education": 5_366, "other": 1_270},
        ),
        (load_credit_card, "age", {">25": 26_129, "<=25": 3_871}, {">25": 5_604, "<=25": 1_032}),
        (load_german_credit, "age", {">25": 810, "<=25": 190}, {">25": 590, "<=25": 110}),
        (load_german_credit, "sex", {"male": 690, "female": 310}, {"male": 499, "female": 201}),
        (
            load_bank_marketing,
            "age",
            {"25-59": 4_280, "<25 or >=60": 241},
            {"25-59": 453, "<25 or >=60": 68},
        ),
        (
            load_bank_marketing,
            "marital",
            {"married": 2_797, "not married": 1_724},
            {"married": 277, "not married": 244},
        ),
        (load_communities_crime, None, {">0.06": 970, "<=0.06": 1_023}, {">0.06": 518}),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_group_counts_match_source(loader, group, counts, positives) -> None:
    # Golden numbers computed from the raw UCI files (see each DESCR).
    bunch = _load(loader, group)
    assert bunch.sensitive_features.value_counts().to_dict() == counts
    per_group = bunch.target.groupby(bunch.sensitive_features).sum().to_dict()
    for name, value in positives.items():
        assert per_group[name] == value, name


def test_adult_race_grouping() -> None:
    raw = load_adult(sensitive_feature="race")
    assert raw.sensitive_feature_name == "race"
    assert "race" not in raw.data.columns
    assert "sex" in raw.data.columns
    assert isinstance(raw.data["sex"].dtype, pd.CategoricalDtype)
    sexed = load_adult()
    np.testing.assert_array_equal(raw.data["sex"].astype(str), sexed.sensitive_features)
    white = (sexed.data["race"] == "White").to_numpy()
    np.testing.assert_array_equal(raw.sensitive_features == "White", white)

    pre = load_adult(preprocess=True, sensitive_feature="race")
    assert pre.data.shape == (45_222, 99)
    assert pre.sensitive_features.value_counts().to_dict() == {"White": 38_903, "non-White": 6_319}
    assert int(pre.target[pre.sensitive_features == "non-White"].sum()) == 1_001
    assert not any(c.startswith("race") for c in pre.feature_names)
    assert {"sex_Female", "sex_Male"} <= set(pre.feature_names)
    # same rows and the other features as the default grouping
    default = load_adult(preprocess=True)
    shared = [c for c in default.feature_names if not c.startswith("race_")]
    np.testing.assert_array_equal(pre.data[shared].to_numpy(), default.data[shared].to_numpy())
    np.testing.assert_array_equal(
        pre.data["sex_Female"].to_numpy(), (default.sensitive_features == "Female").to_numpy()
    )


@pytest.mark.parametrize(
    ("group", "dropped", "n_columns"), [("education", "EDUCATION", 83), ("age", "AGE", 86)]
)
def test_credit_groupings(credit_raw: Bunch, group: str, dropped: str, n_columns: int) -> None:
    raw = load_credit_card(sensitive_feature=group)
    assert raw.sensitive_feature_name == dropped
    assert dropped not in raw.data.columns
    np.testing.assert_array_equal(raw.data["SEX"].astype(str), credit_raw.sensitive_features)
    if group == "education":
        higher = credit_raw.data["EDUCATION"].astype(int).isin([1, 2])
        np.testing.assert_array_equal(raw.sensitive_features == "higher education", higher)
    else:
        np.testing.assert_array_equal(raw.sensitive_features == ">25", credit_raw.data["AGE"] > 25)

    pre = load_credit_card(preprocess=True, sensitive_feature=group)
    assert pre.data.shape == (30_000, n_columns)
    assert not any(c == dropped or c.startswith(f"{dropped}_") for c in pre.feature_names)
    assert {"SEX_female", "SEX_male"} <= set(pre.feature_names)
    assert_series_equal(pre.target, credit_raw.target)


# --------------------------------------------------------------------------- #
# German credit
# --------------------------------------------------------------------------- #
GERMAN_NUMERIC = [
    "duration",
    "credit_amount",
    "installment_rate",
    "residence_since",
    "age",
    "existing_credits",
    "people_liable",
]


def test_german_raw() -> None:
    german = load_german_credit()
    assert german.data.shape == (1_000, 19)
    assert german.frame.shape == (1_000, 21)
    assert "age" not in german.data.columns
    assert "personal_status_sex" in german.data.columns
    assert int(german.target.sum()) == 700
    assert list(german.target_names) == ["bad", "good"]
    # first line of german.data: A11 6 A34 A43 1169 A65 A75 4 A93 ... 67 ... 1
    first = german.frame.iloc[0]
    assert (first["checking_account"], first["duration"], first["credit_amount"]) == (
        "A11",
        6,
        1_169,
    )
    assert (first["personal_status_sex"], first["age"], first["credit_risk"]) == ("A93", ">25", 1)
    assert german.frame.iloc[1]["credit_risk"] == 0  # class 2 = bad
    assert sorted(german.data["purpose"].cat.categories) == sorted(
        ["A40", "A41", "A410", "A42", "A43", "A44", "A45", "A46", "A48", "A49"]
    )
    for column in [c for c in GERMAN_NUMERIC if c != "age"]:
        assert german.data[column].dtype == np.int64, column


def test_german_preprocessed() -> None:
    by_age = load_german_credit(preprocess=True)
    by_sex = load_german_credit(preprocess=True, sensitive_feature="sex")
    assert by_age.data.shape == (1_000, 60)
    assert by_sex.data.shape == (1_000, 57)
    assert "age" not in by_age.feature_names
    assert "age" in by_sex.feature_names
    assert any(c.startswith("personal_status_sex_") for c in by_age.feature_names)
    assert not any(c.startswith("personal_status_sex") for c in by_sex.feature_names)
    numeric = by_sex.data[GERMAN_NUMERIC].to_numpy(dtype=np.float64)
    np.testing.assert_allclose(numeric.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(numeric.std(axis=0), 1.0, atol=1e-5)
    dummies = by_age.data.drop(columns=[c for c in GERMAN_NUMERIC if c != "age"])
    np.testing.assert_array_equal(dummies.to_numpy().sum(axis=1), 13.0)
    # sex is read off attribute 9: A92 (and A95) female, the other codes male
    raw = load_german_credit()
    female = raw.data["personal_status_sex"].isin(["A92", "A95"]).to_numpy()
    np.testing.assert_array_equal(by_sex.sensitive_features == "female", female)


# --------------------------------------------------------------------------- #
# Bank marketing
# --------------------------------------------------------------------------- #
def test_bank_raw() -> None:
    bank = load_bank_marketing()
    assert bank.data.shape == (4_521, 15)
    assert bank.frame.shape == (4_521, 17)
    assert "age" not in bank.data.columns
    assert int(bank.target.sum()) == 521
    assert not bank.data.isna().any().any()
    # "unknown" is a level, not a missing value
    assert "unknown" in bank.data["poutcome"].cat.categories
    assert int((bank.data["poutcome"] == "unknown").sum()) == 3_705
    # first line of UCI's bank.csv
    first = bank.frame.iloc[0]
    assert (first["job"], first["marital"], first["balance"], first["duration"]) == (
        "unemployed",
        "married",
        1_787,
        79,
    )
    assert (first["age"], first["y"]) == ("25-59", 0)
    by_marital = load_bank_marketing(sensitive_feature="marital")
    assert "marital" not in by_marital.data.columns
    assert "age" in by_marital.data.columns
    ages = by_marital.data["age"]
    np.testing.assert_array_equal(bank.sensitive_features == "25-59", (ages >= 25) & (ages < 60))


def test_bank_preprocessed() -> None:
    by_age = load_bank_marketing(preprocess=True)
    by_marital = load_bank_marketing(preprocess=True, sensitive_feature="marital")
    assert by_age.data.shape == (4_521, 50)
    assert by_marital.data.shape == (4_521, 48)
    assert "age" not in by_age.feature_names
    assert not any(c.startswith("marital") for c in by_marital.feature_names)
    assert {"month_may", "poutcome_unknown", "duration"} <= set(by_age.feature_names)


# --------------------------------------------------------------------------- #
# Communities and crime
# --------------------------------------------------------------------------- #
def test_crime() -> None:
    crime = load_communities_crime()
    assert crime.data.shape == (1_993, 98)
    assert crime.frame.shape == (1_993, 104)
    assert crime.sensitive_feature_name == "racepctblack"
    assert "racePctWhite" in crime.data.columns  # a strong proxy stays a feature
    for column in ("state", "communityname", "fold", "ViolentCrimesPerPop"):
        assert column not in crime.data.columns
        assert column in crime.frame.columns
    values = crime.data.to_numpy()
    assert values.min() >= 0.0
    assert values.max() <= 1.0
    assert int(crime.target.sum()) == 653
    np.testing.assert_array_equal(crime.target, crime.frame["ViolentCrimesPerPop"] > 0.25)
    assert crime.frame["fold"].value_counts().sort_index().tolist() == [
        199,
        200,
        200,
        200,
        199,
        199,
        199,
        199,
        199,
        199,
    ]
    assert crime.frame["state"].nunique() == 46
    assert crime.frame.iloc[0]["communityname"] == "Auburncity"
    assert not crime.frame.duplicated(["state", "communityname", "fold"]).any()

    pre = load_communities_crime(preprocess=True)
    assert pre.feature_names == crime.feature_names
    numeric = pre.data.to_numpy(dtype=np.float64)
    np.testing.assert_allclose(numeric.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(numeric.std(axis=0), 1.0, atol=1e-5)


# --------------------------------------------------------------------------- #
# Registry of benchmark datasets
# --------------------------------------------------------------------------- #
REGISTRY_SHAPES = {
    "adult": (45_222, 102),
    "adult-2k": (2_000, 102),
    "adult-race": (45_222, 99),
    "adult-race-5k": (5_000, 99),
    "credit-card": (30_000, 85),
    "credit-card-education": (30_000, 83),
    "credit-card-age": (30_000, 86),
    "german": (1_000, 60),
    "german-sex": (1_000, 57),
    "bank-marketing": (4_521, 50),
    "communities-crime": (1_993, 98),
}


def test_registry_names() -> None:
    assert BENCHMARK_DATASETS == tuple(REGISTRY_SHAPES)
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("compas")


@pytest.mark.parametrize("name", BENCHMARK_DATASETS)
def test_load_dataset(name: str) -> None:
    bunch = load_dataset(name)
    assert bunch.name == name
    assert bunch.data.shape == REGISTRY_SHAPES[name]
    assert bunch.data.dtype == np.float32
    assert bunch.data.flags.c_contiguous
    assert np.isfinite(bunch.data).all()
    assert bunch.target.dtype == np.int64
    assert set(np.unique(bunch.target)) == {0, 1}
    assert len(set(bunch.sensitive_features)) == 2
    assert len(bunch.feature_names) == bunch.data.shape[1]
    group = bunch.sensitive_feature_name
    assert not any(c == group or c.startswith(f"{group}_") for c in bunch.feature_names)
    X, y, s = load_dataset(name, return_X_y_s=True)
    np.testing.assert_array_equal(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)
    np.testing.assert_array_equal(s, bunch.sensitive_features)


@pytest.mark.parametrize(
    ("name", "full", "counts"),
    [
        (
            "adult-race-5k",
            "adult-race",
            {
                ("White", 0): 3_173,
                ("White", 1): 1_128,
                ("non-White", 0): 588,
                ("non-White", 1): 111,
            },
        ),
        (
            "adult-2k",
            "adult",
            {("Male", 0): 928, ("Male", 1): 422, ("Female", 0): 576, ("Female", 1): 74},
        ),
    ],
)
def test_subsample_is_stratified_and_deterministic(name: str, full: str, counts: dict) -> None:
    X, y, s = load_dataset(name, return_X_y_s=True)
    assert dict(pd.Series(list(zip(s, y))).value_counts()) == counts
    X_again, y_again, s_again = load_dataset(name, return_X_y_s=True)
    np.testing.assert_array_equal(X, X_again)
    np.testing.assert_array_equal(y, y_again)
    np.testing.assert_array_equal(s, s_again)
    # the subsample is a set of rows of the full preprocessed matrix
    X_full, y_full, s_full = load_dataset(full, return_X_y_s=True)
    strata = np.array([f"{g}|{t}" for g, t in zip(s_full, y_full)])
    rows = stratified_subsample(strata, len(y), SUBSAMPLE_SEED)
    np.testing.assert_array_equal(X, X_full[rows])
    np.testing.assert_array_equal(s, s_full[rows])


def test_subsample_golden_rows() -> None:
    # Pins the subsample: a change here changes the benchmark datasets.
    X, y, s = load_dataset("adult-race", return_X_y_s=True)
    strata = np.array([f"{g}|{t}" for g, t in zip(s, y)])
    rows = stratified_subsample(strata, 5_000, SUBSAMPLE_SEED)
    assert rows[:6].tolist() == [3, 10, 18, 21, 41, 48]
    assert int(rows.sum()) == 112_666_579


def test_stratified_subsample_properties() -> None:
    strata = np.repeat(np.array(["a", "b", "c", "d"]), [500, 300, 150, 50])
    for n in (1, 7, 100, 999, 1_000):
        rows = stratified_subsample(strata, n, seed=3)
        assert len(rows) == n
        assert len(np.unique(rows)) == n
        assert np.all(np.diff(rows) > 0)
        taken = pd.Series(strata[rows]).value_counts()
        for label, size in {"a": 500, "b": 300, "c": 150, "d": 50}.items():
            assert abs(taken.get(label, 0) - size * n / 1_000) < 1.0, (n, label)
    first = stratified_subsample(strata, 100, seed=0)
    np.testing.assert_array_equal(first, stratified_subsample(strata, 100, seed=0))
    assert not np.array_equal(first, stratified_subsample(strata, 100, seed=1))
    # ties in the remainders go to the first stratum in sorted order
    toy = stratified_subsample(np.array(["a", "a", "b", "b", "b", "c"]), 3, seed=0)
    assert pd.Series(np.array(["a", "a", "b", "b", "b", "c"])[toy]).value_counts().to_dict() == {
        "b": 2,
        "a": 1,
    }
    for bad in (0, 1_001):
        with pytest.raises(ValueError, match="n_samples"):
            stratified_subsample(strata, bad, seed=0)
    with pytest.raises(ValueError, match="seed"):
        stratified_subsample(strata, 10, seed=-1)


# --------------------------------------------------------------------------- #
# Offline
# --------------------------------------------------------------------------- #
def test_loading_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("a dataset loader tried to open a network connection")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for name in ("german", "bank-marketing", "communities-crime", "adult-race-5k"):
        assert len(load_dataset(name).target) > 0
    for loader in LOADERS:
        assert len(loader().target) > 0
