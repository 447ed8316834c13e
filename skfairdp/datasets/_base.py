"""Loaders for the tabular benchmark datasets bundled with :mod:`skfairdp`.

The data files live in ``skfairdp/datasets/data`` as gzip-compressed CSV files
(regenerated from the raw UCI files by ``experiments/make_datasets.py``) and are
read through :mod:`importlib.resources`, so the loaders work offline from an
installed package and never write anything to disk.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from importlib import resources

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

__all__ = ["load_adult", "load_credit_card"]

_DATA_PACKAGE = "skfairdp.datasets"

# --------------------------------------------------------------------------- #
# Dataset schemas
# --------------------------------------------------------------------------- #
ADULT_NUMERIC = [
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
]
ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "native-country",
]
ADULT_SENSITIVE = "sex"
ADULT_GROUPINGS = ("sex", "race")
ADULT_TARGET = "income"
ADULT_TARGET_NAMES = np.array(["<=50K", ">50K"], dtype=object)

CREDIT_ID = "ID"
CREDIT_NUMERIC = [
    "LIMIT_BAL",
    "AGE",
    *[f"BILL_AMT{i}" for i in range(1, 7)],
    *[f"PAY_AMT{i}" for i in range(1, 7)],
]
CREDIT_CATEGORICAL = ["EDUCATION", "MARRIAGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6"]
CREDIT_SENSITIVE = "SEX"
CREDIT_SEX_CODES = {1: "male", 2: "female"}
CREDIT_GROUPINGS = {"sex": "SEX", "education": "EDUCATION", "age": "AGE"}
# EDUCATION codes 1 (graduate school) and 2 (university).
CREDIT_HIGHER_EDUCATION = (1, 2)
CREDIT_TARGET = "default payment next month"
CREDIT_TARGET_NAMES = np.array(["no default", "default"], dtype=object)
# Codes that the UCI documentation does not define, merged into "others"
# (EDUCATION 4, MARRIAGE 3) by ``preprocess=True``.
CREDIT_UNDOCUMENTED_CODES = {"EDUCATION": {0: 4, 5: 4, 6: 4}, "MARRIAGE": {0: 3}}

# --------------------------------------------------------------------------- #
# Descriptions
# --------------------------------------------------------------------------- #
_ADULT_DESCR = """\
.. _adult_dataset:

UCI Adult (Census Income) dataset
---------------------------------

**Data Set Characteristics:**

:Number of Instances: 48,842 (32,561 from ``adult.data`` followed by 16,281
    from ``adult.test``); 45,222 without missing values.
:Number of Attributes: 13 features, 1 sensitive attribute (``sex``) and the
    binary target ``income``.
:Features:
    - age: int
    - workclass: categorical (8 levels; missing for 2,799 rows)
    - fnlwgt: int, census sampling weight
    - education: categorical (16 levels)
    - education-num: int
    - marital-status: categorical (7 levels)
    - occupation: categorical (14 levels; missing for 2,809 rows)
    - relationship: categorical (6 levels)
    - race: categorical (5 levels)
    - capital-gain: int
    - capital-loss: int
    - hours-per-week: int
    - native-country: categorical (41 levels; missing for 857 rows)
:Sensitive attribute: sex ("Female", "Male") by default; not part of
    ``data``.  With ``sensitive_feature="race"`` it is race, binarised as
    "White" (41,762 rows) vs. "non-White" (7,080: Black, Asian-Pac-Islander,
    Amer-Indian-Eskimo, Other), and sex becomes a feature instead.
:Target: income > 50K (1) vs. <= 50K (0).  Positive rate 23.9 % overall,
    24.8 % on the 45,222 complete rows.
:Missing values: the ``?`` marker of the raw files is NaN.
:Creator: Barry Becker and Ronny Kohavi (extraction from the 1994 US Census
    database).
:Source: UCI Machine Learning Repository,
    https://archive.ics.uci.edu/dataset/2/adult
:Licence: Creative Commons Attribution 4.0 International (CC BY 4.0).

The bundled copy combines the raw UCI files ``adult.data`` and ``adult.test``
(in that order), strips surrounding whitespace, drops the comment line of
``adult.test`` and the trailing ``.`` of its labels, and keeps ``?`` as a
missing value.  No rows are removed.

With ``preprocess=True`` the rows with missing values are dropped
(45,222 rows remain: 30,527 Male, 14,695 Female), the six numeric features
are z-scored and the seven categorical features one-hot encoded, giving the
102-column design matrix used by the differentially-private fair-learning
papers this package reproduces.  With ``sensitive_feature="race"`` the
complete rows split into 38,903 White and 6,319 non-White (positive rates
26.2 % and 15.8 %) and the design matrix has 99 columns (the five ``race_*``
indicators are replaced by ``sex_Female`` and ``sex_Male``).

.. topic:: References

    - Becker, B. and Kohavi, R. (1996). Adult [Dataset]. UCI Machine
      Learning Repository. https://doi.org/10.24432/C5XW20
    - Kohavi, R. (1996). Scaling up the accuracy of naive-Bayes
      classifiers: a decision-tree hybrid. In Proceedings of the Second
      International Conference on Knowledge Discovery and Data Mining
      (KDD-96), pp. 202-207.
"""

_CREDIT_DESCR = """\
.. _credit_card_dataset:

UCI Default of Credit Card Clients dataset
------------------------------------------

**Data Set Characteristics:**

:Number of Instances: 30,000 credit-card clients of a Taiwanese bank
    (April-September 2005).
:Number of Attributes: 22 features, 1 sensitive attribute (``SEX``), the
    client ``ID`` (in ``frame`` only) and the binary target.
:Features:
    - LIMIT_BAL: int, amount of given credit (NT dollars)
    - EDUCATION: categorical code (1 = graduate school, 2 = university,
      3 = high school, 4 = others; 0, 5 and 6 are undocumented)
    - MARRIAGE: categorical code (1 = married, 2 = single, 3 = others;
      0 is undocumented)
    - AGE: int, years
    - PAY_0, PAY_2, ..., PAY_6: categorical repayment status in September,
      August, ..., April 2005 (-2 .. 8; -1 = paid duly, k > 0 = payment
      delayed k months)
    - BILL_AMT1, ..., BILL_AMT6: int, bill statement September, ..., April
      2005 (NT dollars)
    - PAY_AMT1, ..., PAY_AMT6: int, amount paid September, ..., April 2005
      (NT dollars)
:Sensitive attribute: SEX by default, UCI coding 1 = male, 2 = female,
    returned as the strings "male" (11,888) and "female" (18,112; share
    0.604); not part of ``data``.  ``sensitive_feature="education"`` groups
    EDUCATION into "higher education" (codes 1 and 2, graduate school or
    university: 24,615) vs. "other" (high school, others and the
    undocumented codes: 5,385); ``sensitive_feature="age"`` groups AGE into
    ">25" (26,129) vs. "<=25" (3,871).  The grouped column then leaves the
    features and SEX becomes a feature (strings "female" / "male").
:Target: default payment next month, 1 = yes (22.12 %), 0 = no.
:Missing values: none.
:Creator: I-Cheng Yeh.
:Source: UCI Machine Learning Repository,
    https://archive.ics.uci.edu/dataset/350/default+of+credit+card+clients
:Licence: Creative Commons Attribution 4.0 International (CC BY 4.0).

The bundled copy keeps the UCI column names, column order and integer codes.

With ``preprocess=True`` the undocumented codes are merged into "others"
(EDUCATION 0/5/6 -> 4, MARRIAGE 0 -> 3), the 14 numeric features are z-scored
and the 8 categorical features one-hot encoded, giving an 85-column design
matrix (without the merge plain one-hot encoding would give 89 columns).

.. topic:: References

    - Yeh, I.-C. (2009). Default of Credit Card Clients [Dataset]. UCI
      Machine Learning Repository. https://doi.org/10.24432/C55S3H
    - Yeh, I.-C. and Lien, C.-H. (2009). The comparisons of data mining
      techniques for the predictive accuracy of probability of default of
      credit card clients. Expert Systems with Applications, 36(2),
      2473-2480. https://doi.org/10.1016/j.eswa.2007.12.020
"""


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
def _read_bundled_csv(filename: str, **read_csv_kwargs: object) -> pd.DataFrame:
    """Read one of the bundled ``data/*.csv.gz`` files.

    Parameters
    ----------
    filename : str
        File name inside ``skfairdp/datasets/data``.
    **read_csv_kwargs
        Passed to :func:`pandas.read_csv`.

    Returns
    -------
    pandas.DataFrame
        The parsed table.
    """
    resource = resources.files(_DATA_PACKAGE).joinpath("data", filename)
    with resource.open("rb") as handle:
        return pd.read_csv(handle, compression="gzip", **read_csv_kwargs)


def _as_sorted_category(series: pd.Series) -> pd.Series:
    """Convert ``series`` to a categorical with sorted, observed categories."""
    categories = sorted(series.dropna().unique().tolist())
    return series.astype(pd.CategoricalDtype(categories=categories))


def _as_str_series(series: pd.Series, name: str) -> pd.Series:
    """Return ``series`` as strings in pandas' default string dtype.

    That is ``object`` on pandas 2 and ``str`` on pandas 3.
    """
    return series.astype(str).rename(name)


def _check_sensitive_feature(value: object, allowed: Collection[str]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise a ``ValueError``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"sensitive_feature must be one of {list(allowed)}; got {value!r}")
    return value


def _standardize_and_encode(
    features: pd.DataFrame, numeric: list[str], categorical: list[str]
) -> pd.DataFrame:
    """Z-score ``numeric`` columns and one-hot encode ``categorical`` columns.

    Parameters
    ----------
    features : pandas.DataFrame
        Complete-case feature table (no missing values).
    numeric : list of str
        Columns standardised to mean 0 and (population, ``ddof=0``) standard
        deviation 1 over all rows of ``features``.
    categorical : list of str
        Columns expanded into one indicator column per observed level, named
        ``"<column>_<level>"``.

    Returns
    -------
    pandas.DataFrame
        ``float32`` design matrix: the numeric columns in the order given,
        followed by the indicator columns.
    """
    values = features[numeric].to_numpy(dtype=np.float64)
    mean = values.mean(axis=0)
    std = values.std(axis=0)
    std[std == 0.0] = 1.0
    scaled = pd.DataFrame((values - mean) / std, columns=numeric, index=features.index)

    blocks = [scaled.astype(np.float32)]
    if categorical:
        cats = features[categorical].copy()
        for column in categorical:
            cats[column] = _as_sorted_category(cats[column].astype(object))
        blocks.append(pd.get_dummies(cats, prefix_sep="_", dtype=np.float32))

    design = pd.concat(blocks, axis=1)
    design.columns = [str(column) for column in design.columns]
    return design


def _assemble(
    table: pd.DataFrame,
    *,
    numeric: list[str],
    categorical: list[str],
    target: pd.Series,
    sensitive: pd.Series,
    preprocess: bool,
    as_frame: bool,
    target_names: np.ndarray,
    descr: str,
    frame_before: Sequence[pd.DataFrame | pd.Series] = (),
    frame_after: Sequence[pd.DataFrame | pd.Series] = (),
) -> Bunch:
    """Build a loader's features, ``frame`` and returned :class:`~sklearn.utils.Bunch`.

    Parameters
    ----------
    table : pandas.DataFrame
        The loaded table, rows aligned with ``target`` and ``sensitive``; it
        holds the feature columns and may hold others.
    numeric : list of str
        Numeric feature columns of ``table``.
    categorical : list of str
        Categorical feature columns of ``table``.
    target : pandas.Series
        The labels.
    sensitive : pandas.Series
        The groups, named after the sensitive attribute.
    preprocess : bool
        If True, ``data`` is the ``float32`` design matrix of
        :func:`_standardize_and_encode` (``numeric`` then the indicators of
        ``categorical``).  If False, it is the feature columns in ``table``'s
        order, ``categorical`` ones as ``category`` with sorted levels.
    as_frame : bool
        If True, return pandas objects and fill in ``frame``; if False, NumPy
        arrays (``data`` as ``float32`` when every column is) and no frame.
    target_names : numpy.ndarray
        Class names indexed by ``target``; copied.
    descr : str
        The dataset's description.
    frame_before, frame_after : sequence of pandas objects, default=()
        Columns placed before ``data`` and after the sensitive and target
        columns in ``frame`` (identifiers, the continuous goal, ...).

    Returns
    -------
    sklearn.utils.Bunch
        ``data``, ``target``, ``sensitive_features``, ``frame``,
        ``feature_names``, ``target_names``, ``sensitive_feature_name`` and
        ``DESCR``.
    """
    if preprocess:
        data = _standardize_and_encode(table, numeric, categorical)
    else:
        data = table[[c for c in table.columns if c in numeric or c in categorical]].copy()
        for column in categorical:
            data[column] = _as_sorted_category(data[column])

    feature_names = list(data.columns)
    if not as_frame:
        dtype = np.float32 if all(data.dtypes == np.float32) else None
        return Bunch(
            data=data.to_numpy(dtype=dtype),
            target=target.to_numpy(),
            sensitive_features=sensitive.to_numpy(),
            frame=None,
            feature_names=feature_names,
            target_names=target_names.copy(),
            sensitive_feature_name=sensitive.name,
            DESCR=descr,
        )
    frame = pd.concat([*frame_before, data, sensitive, target, *frame_after], axis=1)
    return Bunch(
        data=data,
        target=target,
        sensitive_features=sensitive,
        frame=frame,
        feature_names=feature_names,
        target_names=target_names.copy(),
        sensitive_feature_name=sensitive.name,
        DESCR=descr,
    )


# --------------------------------------------------------------------------- #
# Public loaders
# --------------------------------------------------------------------------- #
def load_adult(
    *, preprocess: bool = False, as_frame: bool = True, sensitive_feature: str = "sex"
) -> Bunch:
    """Load the UCI Adult (Census Income) dataset bundled with the package.

    The bundled table combines the raw UCI ``adult.data`` and ``adult.test``
    files (48,842 rows, train rows first).  The sensitive attribute is
    ``sex`` by default; it is returned separately and is *not* one of the
    features (``race`` remains a feature).  With
    ``sensitive_feature="race"`` the groups are "White" and "non-White"
    instead, ``race`` leaves the features and ``sex`` joins them.  The target
    is 1 for income ``>50K`` and 0 for ``<=50K``.

    Parameters
    ----------
    preprocess : bool, default=False
        If False, return the raw table: numeric columns as ``int64``,
        categorical columns as ``category`` with the raw file's ``?`` as
        missing (NaN).  If True, return the numeric design matrix used by the
        differentially-private fair-learning papers that this package
        reproduces: rows with any missing value are dropped (45,222 rows
        remain), the numeric columns ``age``, ``fnlwgt``, ``education-num``,
        ``capital-gain``, ``capital-loss`` and ``hours-per-week`` are z-scored
        and ``workclass``, ``education``, ``marital-status``, ``occupation``,
        ``relationship``, ``race`` and ``native-country`` are one-hot encoded
        (columns such as ``"workclass_Private"``), giving 102 ``float32``
        columns (99 with ``sensitive_feature="race"``, where ``sex`` takes
        the place of ``race``).  The index is reset to a ``RangeIndex``.
        The z-scoring statistics (means and standard deviations of the whole
        table) and the category lists are computed from the data: they are
        outside any differential-privacy guarantee.  For a private pipeline,
        load the raw table and start the pipeline with
        :class:`~skfairdp.preprocessing.DPStandardScaler` and
        :class:`~skfairdp.preprocessing.DPOneHotEncoder`.
    as_frame : bool, default=True
        If True, ``data``, ``target`` and ``sensitive_features`` are pandas
        objects and ``frame`` is filled in.  If False, they are NumPy arrays
        and ``frame`` is None.
    sensitive_feature : {"sex", "race"}, default="sex"
        The group attribute.  ``"sex"``: "Female" / "Male".  ``"race"``:
        "White" vs. "non-White" (the four other race levels merged), the
        binary grouping of the fair-classification literature.

    Returns
    -------
    sklearn.utils.Bunch
        Dictionary-like object with the attributes

        data : pandas.DataFrame of shape (n_samples, n_features)
            Features without the sensitive column and the target
            (48,842 x 13 raw, 45,222 x 102 preprocessed; 45,222 x 99 with
            ``sensitive_feature="race"``).
        target : pandas.Series of shape (n_samples,)
            ``int64`` labels, 1 = income ``>50K``.
        sensitive_features : pandas.Series of shape (n_samples,)
            ``sex`` as the strings ``"Female"`` / ``"Male"``, or ``race`` as
            ``"White"`` / ``"non-White"`` (pandas' default string dtype, not
            categorical), aligned with ``data``.
        frame : pandas.DataFrame or None
            ``data`` together with the sensitive and ``income`` (0/1)
            columns.
        feature_names : list of str
            Column names of ``data``.
        target_names : numpy.ndarray of str
            Class names ``["<=50K", ">50K"]``, indexed by ``target``.
        sensitive_feature_name : str
            ``"sex"`` or ``"race"``.
        DESCR : str
            Full description and citation of the dataset.

    Notes
    -----
    The standardisation statistics are computed on the whole loaded table.
    Fitting a scaler (or choosing categories) on private data is *not* covered
    by the differential-privacy guarantee of any estimator trained on the
    result; the preprocessing is the published experimental protocol of the
    papers, provided for reproducibility.  For a privacy-clean pipeline use
    ``preprocess=False`` and :mod:`skfairdp.preprocessing` (declared bounds and
    categories, or noisy statistics with their own privacy cost).

    The dataset is distributed by the UCI Machine Learning Repository under
    the Creative Commons Attribution 4.0 International (CC BY 4.0) licence.

    References
    ----------
    .. [1] Becker, B. and Kohavi, R. (1996). Adult [Dataset]. UCI Machine
       Learning Repository. https://doi.org/10.24432/C5XW20

    Examples
    --------
    >>> from skfairdp.datasets import load_adult
    >>> adult = load_adult(preprocess=True)
    >>> adult.data.shape
    (45222, 102)
    >>> adult.sensitive_features.value_counts().to_dict()
    {'Male': 30527, 'Female': 14695}
    >>> load_adult(preprocess=True, sensitive_feature="race").data.shape
    (45222, 99)
    """
    group = _check_sensitive_feature(sensitive_feature, ADULT_GROUPINGS)
    columns = [*ADULT_NUMERIC, *ADULT_CATEGORICAL, ADULT_SENSITIVE, ADULT_TARGET]
    raw = _read_bundled_csv(
        "adult.csv.gz",
        na_values=[""],
        keep_default_na=False,
        dtype={
            **{column: "int64" for column in ADULT_NUMERIC},
            **{column: object for column in (*ADULT_CATEGORICAL, ADULT_SENSITIVE, ADULT_TARGET)},
        },
    )
    if set(raw.columns) != set(columns):  # pragma: no cover - guards the data file
        raise RuntimeError(f"unexpected columns in adult.csv.gz: {list(raw.columns)}")
    # In file order, so that the default grouping gives ADULT_CATEGORICAL's order.
    categorical = [c for c in raw.columns if c in (*ADULT_CATEGORICAL, ADULT_SENSITIVE)]
    categorical.remove(group)

    target_labels = raw[ADULT_TARGET].map({"<=50K": 0, ">50K": 1})
    if target_labels.isna().any():  # pragma: no cover - guards the data file
        raise RuntimeError("unexpected income labels in adult.csv.gz")
    raw[ADULT_TARGET] = target_labels.astype("int64")
    if preprocess:
        raw = raw.dropna(axis=0, how="any").reset_index(drop=True)

    target = raw[ADULT_TARGET].rename(ADULT_TARGET)
    groups = raw[group]
    if group == "race":
        groups = groups.where(groups == "White", "non-White")
    return _assemble(
        raw,
        numeric=ADULT_NUMERIC,
        categorical=categorical,
        target=target,
        sensitive=_as_str_series(groups, group),
        preprocess=preprocess,
        as_frame=as_frame,
        target_names=ADULT_TARGET_NAMES,
        descr=_ADULT_DESCR,
    )


def load_credit_card(
    *, preprocess: bool = False, as_frame: bool = True, sensitive_feature: str = "sex"
) -> Bunch:
    """Load the UCI Default of Credit Card Clients dataset bundled with the package.

    30,000 clients of a Taiwanese bank (Yeh and Lien, 2009).  The sensitive
    attribute is ``SEX`` by default (UCI coding 1 = male, 2 = female),
    returned separately as the strings ``"male"`` / ``"female"`` and *not*
    one of the features; ``EDUCATION`` or ``AGE``, binarised, can be the
    group instead.  The target is ``default payment next month``
    (1 = default).  The client ``ID`` is never a feature.

    Parameters
    ----------
    preprocess : bool, default=False
        If False, return the raw table with the UCI integer codes: the
        numeric columns as ``int64`` and ``EDUCATION``, ``MARRIAGE``,
        ``PAY_0`` and ``PAY_2`` ... ``PAY_6`` as ``category`` (of the integer
        codes).  If True, return the numeric design matrix used by the
        differentially-private fair-learning papers that this package
        reproduces: the codes that the UCI documentation leaves undefined are
        merged into "others" (``EDUCATION`` 0, 5, 6 -> 4; ``MARRIAGE``
        0 -> 3), the 14 numeric columns ``LIMIT_BAL``, ``AGE``,
        ``BILL_AMT1`` ... ``BILL_AMT6`` and ``PAY_AMT1`` ... ``PAY_AMT6`` are
        z-scored and the 8 categorical columns one-hot encoded (columns such
        as ``"EDUCATION_2"`` or ``"PAY_0_-1"``), giving 85 ``float32``
        columns.  There are no missing values, so all 30,000 rows are kept.
        The z-scoring statistics (means and standard deviations of the whole
        table) and the category lists are computed from the data: they are
        outside any differential-privacy guarantee.  For a private pipeline,
        load the raw table and start the pipeline with
        :class:`~skfairdp.preprocessing.DPStandardScaler` and
        :class:`~skfairdp.preprocessing.DPOneHotEncoder`.
    as_frame : bool, default=True
        If True, ``data``, ``target`` and ``sensitive_features`` are pandas
        objects and ``frame`` is filled in.  If False, they are NumPy arrays
        and ``frame`` is None.
    sensitive_feature : {"sex", "education", "age"}, default="sex"
        The group attribute.  ``"sex"``: ``SEX`` as "female" / "male".
        ``"education"``: ``EDUCATION`` as "higher education" (codes 1 and 2,
        graduate school or university) vs. "other" (high school, others and
        the undocumented codes 0, 5, 6).  ``"age"``: ``AGE`` as ">25" vs.
        "<=25", the age threshold of Kamiran and Calders [3]_.  The grouped
        column leaves the features; for ``"education"`` and ``"age"``,
        ``SEX`` becomes a categorical feature with the levels "female" /
        "male" (``SEX_female`` and ``SEX_male`` once one-hot encoded), so the
        design matrix has 83 (education) or 86 (age) columns.

    Returns
    -------
    sklearn.utils.Bunch
        Dictionary-like object with the attributes

        data : pandas.DataFrame of shape (n_samples, n_features)
            Features without ``ID``, ``SEX`` and the target
            (30,000 x 22 raw, 30,000 x 85 preprocessed).
        target : pandas.Series of shape (n_samples,)
            ``int64`` labels, 1 = default payment next month.
        sensitive_features : pandas.Series of shape (n_samples,)
            The groups as strings (pandas' default string dtype, not
            categorical), aligned with ``data``: ``"female"`` / ``"male"``
            by default.
        frame : pandas.DataFrame or None
            ``ID`` followed by ``data`` and the sensitive (strings) and
            target columns.
        feature_names : list of str
            Column names of ``data``.
        target_names : numpy.ndarray of str
            Class names ``["no default", "default"]``, indexed by ``target``.
        sensitive_feature_name : str
            ``"SEX"``, ``"EDUCATION"`` or ``"AGE"``.
        DESCR : str
            Full description and citation of the dataset.

    Notes
    -----
    The standardisation statistics are computed on the whole loaded table.
    Fitting a scaler (or choosing categories) on private data is *not* covered
    by the differential-privacy guarantee of any estimator trained on the
    result; the preprocessing is the published experimental protocol of the
    papers, provided for reproducibility.  For a privacy-clean pipeline use
    ``preprocess=False`` and :mod:`skfairdp.preprocessing` (declared bounds and
    categories, or noisy statistics with their own privacy cost).

    Plain one-hot encoding of the 8 categorical columns without merging the
    undocumented ``EDUCATION``/``MARRIAGE`` codes would give 89 columns.

    The dataset is distributed by the UCI Machine Learning Repository under
    the Creative Commons Attribution 4.0 International (CC BY 4.0) licence.

    References
    ----------
    .. [1] Yeh, I.-C. (2009). Default of Credit Card Clients [Dataset]. UCI
       Machine Learning Repository. https://doi.org/10.24432/C55S3H
    .. [2] Yeh, I.-C. and Lien, C.-H. (2009). The comparisons of data mining
       techniques for the predictive accuracy of probability of default of
       credit card clients. Expert Systems with Applications, 36(2),
       2473-2480. https://doi.org/10.1016/j.eswa.2007.12.020
    .. [3] Kamiran, F. and Calders, T. (2009). Classifying without
       discriminating. In 2nd International Conference on Computer, Control
       and Communication (IC4). https://doi.org/10.1109/IC4.2009.4909197

    Examples
    --------
    >>> from skfairdp.datasets import load_credit_card
    >>> credit = load_credit_card(preprocess=True)
    >>> credit.data.shape
    (30000, 85)
    >>> round(float((credit.sensitive_features == "female").mean()), 3)
    0.604
    >>> credit_edu = load_credit_card(sensitive_feature="education")
    >>> credit_edu.sensitive_features.value_counts().to_dict()
    {'higher education': 24615, 'other': 5385}
    """
    group = CREDIT_GROUPINGS[_check_sensitive_feature(sensitive_feature, CREDIT_GROUPINGS)]
    raw = _read_bundled_csv("credit_card.csv.gz", dtype="int64")
    expected = {CREDIT_ID, CREDIT_SENSITIVE, CREDIT_TARGET, *CREDIT_NUMERIC, *CREDIT_CATEGORICAL}
    if set(raw.columns) != expected:  # pragma: no cover - guards the data file
        raise RuntimeError(f"unexpected columns in credit_card.csv.gz: {list(raw.columns)}")

    sex = raw[CREDIT_SENSITIVE].map(CREDIT_SEX_CODES)
    if sex.isna().any():  # pragma: no cover - guards the data file
        raise RuntimeError("unexpected SEX codes in credit_card.csv.gz")
    if group == "EDUCATION":
        higher = raw[group].isin(CREDIT_HIGHER_EDUCATION)
        groups = higher.map({True: "higher education", False: "other"})
    elif group == "AGE":
        groups = (raw[group] > 25).map({True: ">25", False: "<=25"})
    else:
        groups = sex
    sensitive = _as_str_series(groups, group)
    target = raw[CREDIT_TARGET].rename(CREDIT_TARGET)

    # SEX is a feature unless it is the group; file order keeps the default layout.
    features = raw.assign(**{CREDIT_SENSITIVE: sex.astype(object)})
    if preprocess:
        for column, mapping in CREDIT_UNDOCUMENTED_CODES.items():
            features[column] = features[column].replace(mapping)
    return _assemble(
        features,
        numeric=[c for c in CREDIT_NUMERIC if c != group],
        categorical=[
            c for c in raw.columns if c in (*CREDIT_CATEGORICAL, CREDIT_SENSITIVE) and c != group
        ],
        target=target,
        sensitive=sensitive,
        preprocess=preprocess,
        as_frame=as_frame,
        target_names=CREDIT_TARGET_NAMES,
        descr=_CREDIT_DESCR,
        frame_before=[raw[[CREDIT_ID]]],
    )
