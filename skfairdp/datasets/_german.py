"""Loader for the UCI Statlog (German Credit Data) dataset bundled with :mod:`skfairdp`."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from ._base import _as_str_series, _assemble, _check_sensitive_feature, _read_bundled_csv

__all__ = ["load_german_credit"]

GERMAN_NUMERIC = [
    "duration",
    "credit_amount",
    "installment_rate",
    "residence_since",
    "age",
    "existing_credits",
    "people_liable",
]
GERMAN_CATEGORICAL = [
    "checking_account",
    "credit_history",
    "purpose",
    "savings",
    "employment_since",
    "personal_status_sex",
    "other_debtors",
    "property",
    "other_installment_plans",
    "housing",
    "job",
    "telephone",
    "foreign_worker",
]
GERMAN_TARGET = "credit_risk"
GERMAN_TARGET_NAMES = np.array(["bad", "good"], dtype=object)
# The raw file codes the class as 1 = good, 2 = bad.
GERMAN_TARGET_CODES = {1: 1, 2: 0}
GERMAN_GROUPINGS = ("age", "sex")
# Attribute 9 ("personal status and sex") codes both; A95 (female, single)
# does not occur in the data.
GERMAN_SEX_CODES = {"A91": "male", "A92": "female", "A93": "male", "A94": "male", "A95": "female"}
GERMAN_AGE_THRESHOLD = 25

_GERMAN_DESCR = """\
.. _german_credit_dataset:

UCI Statlog (German Credit Data) dataset
----------------------------------------

**Data Set Characteristics:**

:Number of Instances: 1,000 loan applicants of a German bank.
:Number of Attributes: 20 attributes (7 integer, 13 categorical) and the
    binary target ``credit_risk``; one attribute is the group.
:Features (UCI attribute number, UCI codes in the raw table):
    - checking_account (1): A11 < 0 DM, A12 0-200 DM, A13 >= 200 DM or
      salary assignment, A14 no checking account
    - duration (2): int, months
    - credit_history (3): A30 no credits / all paid back duly, A31 all at
      this bank paid back duly, A32 existing credits paid back duly till
      now, A33 delay in paying off in the past, A34 critical account / other
      credits existing
    - purpose (4): A40 car (new), A41 car (used), A42 furniture/equipment,
      A43 radio/television, A44 domestic appliances, A45 repairs,
      A46 education, A48 retraining, A49 business, A410 others (A47 does
      not occur)
    - credit_amount (5): int, DM
    - savings (6): A61 < 100 DM, A62 100-500 DM, A63 500-1000 DM,
      A64 >= 1000 DM, A65 unknown / none
    - employment_since (7): A71 unemployed, A72 < 1 year, A73 1-4 years,
      A74 4-7 years, A75 >= 7 years
    - installment_rate (8): int 1-4, in % of disposable income
    - personal_status_sex (9): A91 male divorced/separated, A92 female
      divorced/separated/married, A93 male single, A94 male
      married/widowed (A95 female single does not occur)
    - other_debtors (10): A101 none, A102 co-applicant, A103 guarantor
    - residence_since (11): int 1-4
    - property (12): A121 real estate, A122 building society savings /
      life insurance, A123 car or other, A124 unknown / none
    - age (13): int, years (19-75)
    - other_installment_plans (14): A141 bank, A142 stores, A143 none
    - housing (15): A151 rent, A152 own, A153 for free
    - existing_credits (16): int 1-4, at this bank
    - job (17): A171 unemployed / unskilled non-resident, A172 unskilled
      resident, A173 skilled employee / official, A174 management /
      self-employed / highly qualified
    - people_liable (18): int 1-2, people liable to provide maintenance for
    - telephone (19): A191 none, A192 yes, registered
    - foreign_worker (20): A201 yes, A202 no
:Sensitive attribute: age by default, binarised as ">25" (810 rows) vs.
    "<=25" (190), the grouping of Kamiran and Calders; ``age`` then leaves
    the features.  With ``sensitive_feature="sex"`` it is sex, derived from
    attribute 9: "male" (690) vs. "female" (310); ``personal_status_sex``
    then leaves the features (it determines sex) and ``age`` stays.
:Target: credit_risk, 1 = good (700), 0 = bad (300).  The raw file codes
    good as 1 and bad as 2.  UCI also gives a cost matrix (classifying a bad
    customer as good costs 5, the reverse 1) that this loader does not use.
:Missing values: none.
:Creator: Hans Hofmann, Universitat Hamburg.
:Source: UCI Machine Learning Repository,
    https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data
:Licence: Creative Commons Attribution 4.0 International (CC BY 4.0).

The bundled copy is UCI's ``german.data`` (the symbolic version) with
descriptive column names, in file order.

Positive (good) rates: 72.8 % for ">25" and 57.9 % for "<=25"; 72.3 % for
"male" and 64.8 % for "female".

With ``preprocess=True`` the integer attributes are z-scored and the
categorical ones one-hot encoded (columns such as
``"checking_account_A11"``): 60 columns with the age groups, 57 with the sex
groups.

.. topic:: References

    - Hofmann, H. (1994). Statlog (German Credit Data) [Dataset]. UCI
      Machine Learning Repository. https://doi.org/10.24432/C5NC77
    - Kamiran, F. and Calders, T. (2009). Classifying without
      discriminating. In 2nd International Conference on Computer, Control
      and Communication (IC4). https://doi.org/10.1109/IC4.2009.4909197
"""


def load_german_credit(
    *, preprocess: bool = False, as_frame: bool = True, sensitive_feature: str = "age"
) -> Bunch:
    """Load the UCI Statlog (German Credit Data) dataset bundled with the package.

    1,000 loan applicants, 20 attributes, target good (1) or bad (0) credit
    risk.  The default group is age, ">25" vs. "<=25" as in Kamiran and
    Calders [2]_; ``sensitive_feature="sex"`` derives "male" / "female" from
    the personal-status attribute instead.  The grouped attribute is returned
    separately and is *not* one of the features.  This is the package's
    small-data case.

    Parameters
    ----------
    preprocess : bool, default=False
        If False, return the raw table: the integer attributes as ``int64``
        and the categorical ones as ``category`` of UCI's codes (``"A11"``
        ...; see ``DESCR``).  If True, return the numeric design matrix of
        the fair-classification literature: the integer attributes
        (``duration``, ``credit_amount``, ``installment_rate``,
        ``residence_since``, ``age``, ``existing_credits``,
        ``people_liable``) z-scored and the categorical ones one-hot encoded
        (columns such as ``"purpose_A43"``), as ``float32``: 60 columns for
        the age groups, 57 for the sex groups.
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
    sensitive_feature : {"age", "sex"}, default="age"
        The group attribute.  ``"age"``: ">25" (810) vs. "<=25" (190);
        ``age`` leaves the features.  ``"sex"``: "male" (690) vs. "female"
        (310), read off ``personal_status_sex``, which leaves the features.

    Returns
    -------
    sklearn.utils.Bunch
        Dictionary-like object with the attributes

        data : pandas.DataFrame of shape (1000, n_features)
            Features without the grouped attribute and the target (19 raw
            columns; 60 or 57 preprocessed).
        target : pandas.Series of shape (1000,)
            ``int64`` labels, 1 = good credit risk.
        sensitive_features : pandas.Series of shape (1000,)
            The groups as strings (pandas' default string dtype), aligned
            with ``data``.
        frame : pandas.DataFrame or None
            ``data`` together with the sensitive and ``credit_risk`` (0/1)
            columns.
        feature_names : list of str
            Column names of ``data``.
        target_names : numpy.ndarray of str
            Class names ``["bad", "good"]``, indexed by ``target``.
        sensitive_feature_name : str
            ``"age"`` or ``"sex"``.
        DESCR : str
            Full description and citation of the dataset.

    Notes
    -----
    The standardisation statistics are computed on the whole loaded table
    and are not covered by any differential-privacy guarantee; see
    :func:`skfairdp.datasets.load_adult`.

    The dataset is distributed by the UCI Machine Learning Repository under
    the Creative Commons Attribution 4.0 International (CC BY 4.0) licence.

    References
    ----------
    .. [1] Hofmann, H. (1994). Statlog (German Credit Data) [Dataset]. UCI
       Machine Learning Repository. https://doi.org/10.24432/C5NC77
    .. [2] Kamiran, F. and Calders, T. (2009). Classifying without
       discriminating. In 2nd International Conference on Computer, Control
       and Communication (IC4). https://doi.org/10.1109/IC4.2009.4909197

    Examples
    --------
    >>> from skfairdp.datasets import load_german_credit
    >>> german = load_german_credit(preprocess=True)
    >>> german.data.shape
    (1000, 60)
    >>> german.sensitive_features.value_counts().to_dict()
    {'>25': 810, '<=25': 190}
    """
    group = _check_sensitive_feature(sensitive_feature, GERMAN_GROUPINGS)
    raw = _read_bundled_csv(
        "german_credit.csv.gz",
        dtype={
            **{column: "int64" for column in (*GERMAN_NUMERIC, GERMAN_TARGET)},
            **{column: object for column in GERMAN_CATEGORICAL},
        },
    )
    if set(raw.columns) != {*GERMAN_NUMERIC, *GERMAN_CATEGORICAL, GERMAN_TARGET}:
        raise RuntimeError(  # pragma: no cover - guards the data file
            f"unexpected columns in german_credit.csv.gz: {list(raw.columns)}"
        )
    target = raw[GERMAN_TARGET].map(GERMAN_TARGET_CODES)
    sex = raw["personal_status_sex"].map(GERMAN_SEX_CODES)
    if target.isna().any() or sex.isna().any():  # pragma: no cover - guards the data file
        raise RuntimeError("unexpected codes in german_credit.csv.gz")
    target = target.astype("int64").rename(GERMAN_TARGET)

    if group == "age":
        older = raw["age"] > GERMAN_AGE_THRESHOLD
        groups = older.map({True: f">{GERMAN_AGE_THRESHOLD}", False: f"<={GERMAN_AGE_THRESHOLD}"})
        dropped = "age"
    else:
        groups = sex
        dropped = "personal_status_sex"
    sensitive = _as_str_series(groups, group)

    return _assemble(
        raw,
        numeric=[c for c in GERMAN_NUMERIC if c != dropped],
        categorical=[c for c in GERMAN_CATEGORICAL if c != dropped],
        target=target,
        sensitive=sensitive,
        preprocess=preprocess,
        as_frame=as_frame,
        target_names=GERMAN_TARGET_NAMES,
        descr=_GERMAN_DESCR,
    )
