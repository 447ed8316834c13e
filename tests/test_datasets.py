"""Tests for the bundled datasets in :mod:`skfairdp.datasets`."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal, assert_series_equal
from sklearn.utils import Bunch

from skfairdp.datasets import load_adult, load_credit_card

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
@pytest.mark.parametrize("filename", ["adult.csv.gz", "credit_card.csv.gz"])
def test_data_files_are_package_resources(filename: str) -> None:
    resource = resources.files("skfairdp.datasets").joinpath("data", filename)
    assert resource.is_file()
    with resource.open("rb") as handle:
        assert handle.read(2) == b"\x1f\x8b"  # gzip magic number


def test_data_files_are_compact() -> None:
    data_dir = resources.files("skfairdp.datasets").joinpath("data")
    for filename in ("adult.csv.gz", "credit_card.csv.gz"):
        size = len(data_dir.joinpath(filename).read_bytes())
        assert size < 1_500_000, (filename, size)


# --------------------------------------------------------------------------- #
# Bunch structure (both datasets, both modes)
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("loader", [load_adult, load_credit_card])
@pytest.mark.parametrize("preprocess", [False, True])
def test_bunch_structure(loader, preprocess: bool) -> None:
    bunch = loader(preprocess=preprocess)
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
    assert_frame_equal(bunch.frame[bunch.feature_names], bunch.data)
    assert bunch.target.name not in bunch.data.columns


@pytest.mark.parametrize("loader", [load_adult, load_credit_card])
def test_descr_cites_dataset(loader) -> None:
    descr = loader().DESCR
    doi = "10.24432/C5XW20" if loader is load_adult else "10.24432/C55S3H"
    assert doi in descr
    assert "CC BY 4.0" in descr
    assert "UCI" in descr
    assert doi in loader.__doc__


@pytest.mark.parametrize("loader", [load_adult, load_credit_card])
@pytest.mark.parametrize("preprocess", [False, True])
def test_deterministic(loader, preprocess: bool) -> None:
    first, second = loader(preprocess=preprocess), loader(preprocess=preprocess)
    assert_frame_equal(first.data, second.data)
    assert_series_equal(first.target, second.target)
    assert_series_equal(first.sensitive_features, second.sensitive_features)
    assert_frame_equal(first.frame, second.frame)


@pytest.mark.parametrize("loader", [load_adult, load_credit_card])
def test_returned_objects_are_independent(loader) -> None:
    first = loader(preprocess=True)
    first.data.iloc[:, 0] = 123.0
    first.target.iloc[:] = 0
    second = loader(preprocess=True)
    assert not (second.data.iloc[:, 0] == 123.0).any()
    assert second.target.sum() > 0


@pytest.mark.parametrize("loader", [load_adult, load_credit_card])
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
