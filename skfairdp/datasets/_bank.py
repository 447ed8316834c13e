"""Loader for the UCI Bank Marketing dataset (``bank.csv``) bundled with :mod:`skfairdp`."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from ._base import _as_str_series, _assemble, _check_sensitive_feature, _read_bundled_csv

__all__ = ["load_bank_marketing"]

BANK_NUMERIC = ["age", "balance", "day", "duration", "campaign", "pdays", "previous"]
BANK_CATEGORICAL = [
    "job",
    "marital",
    "education",
    "default",
    "housing",
    "loan",
    "contact",
    "month",
    "poutcome",
]
BANK_TARGET = "y"
BANK_TARGET_NAMES = np.array(["no", "yes"], dtype=object)
BANK_GROUPINGS = ("age", "marital")
# Privileged ages [25, 60): Le Quy et al. (2022), as adopted by AIF360's BankDataset.
BANK_AGE_RANGE = (25, 60)

_BANK_DESCR = """\
.. _bank_marketing_dataset:

UCI Bank Marketing dataset (bank.csv)
-------------------------------------

**Data Set Characteristics:**

:Number of Instances: 4,521 clients contacted by phone in the direct
    marketing campaigns of a Portuguese bank (May 2008 - November 2010):
    UCI's ``bank.csv``, a random 10 % sample of the 45,211 rows of
    ``bank-full.csv``.
:Number of Attributes: 16 (7 integer, 9 categorical) and the binary target
    ``y``; one attribute is the group.
:Features:
    - age: int, years (19-87)
    - job: categorical (12 levels, including "unknown")
    - marital: married, single, divorced (divorced includes widowed)
    - education: primary, secondary, tertiary, unknown
    - default: has credit in default? (yes/no)
    - balance: int, average yearly balance (euros)
    - housing: has a housing loan? (yes/no)
    - loan: has a personal loan? (yes/no)
    - contact: cellular, telephone, unknown
    - day: int, last contact day of the month
    - month: last contact month (jan ... dec)
    - duration: int, last contact duration (seconds)
    - campaign: int, contacts during this campaign
    - pdays: int, days since the last contact of a previous campaign
      (-1: not previously contacted)
    - previous: int, contacts before this campaign
    - poutcome: outcome of the previous campaign (failure, other, success,
      unknown)
:Sensitive attribute: age by default, binarised as "25-59" (4,280 rows)
    vs. "<25 or >=60" (241), following Le Quy et al. (2022) and AIF360's
    ``BankDataset``; ``age`` then leaves the features.  With
    ``sensitive_feature="marital"`` it is "married" (2,797) vs. "not
    married" (1,724: single or divorced) and ``marital`` leaves the features.
:Target: y, subscribed a term deposit: 1 = yes (521, 11.5 %), 0 = no.
    Positive rates 10.6 % for "25-59" and 28.2 % for "<25 or >=60"; 9.9 %
    for "married" and 14.2 % for "not married".
:Missing values: none as such; "unknown" is kept as a level of job,
    education, contact and poutcome.
:Creators: Sergio Moro, Paulo Rita and Paulo Cortez.
:Source: UCI Machine Learning Repository,
    https://archive.ics.uci.edu/dataset/222/bank+marketing
:Licence: Creative Commons Attribution 4.0 International (CC BY 4.0).

The bundled copy is UCI's ``bank.csv`` with UCI's column names and values,
in file order.  ``duration`` is known only after the call; UCI advises to
drop it for a realistic predictive model.  It is kept, as in the fairness
benchmarks (AIF360 keeps it too): it makes the task markedly easier than
predicting the majority class.

With ``preprocess=True`` the integer attributes are z-scored and the
categorical ones one-hot encoded (columns such as ``"job_admin."``):
50 columns with the age groups, 48 with the marital groups.

.. topic:: References

    - Moro, S., Rita, P. and Cortez, P. (2012). Bank Marketing [Dataset].
      UCI Machine Learning Repository. https://doi.org/10.24432/C5K306
    - Moro, S., Cortez, P. and Rita, P. (2014). A data-driven approach to
      predict the success of bank telemarketing. Decision Support Systems,
      62, 22-31. https://doi.org/10.1016/j.dss.2014.03.001
    - Le Quy, T., Roy, A., Iosifidis, V., Zhang, W. and Ntoutsi, E. (2022).
      A survey on datasets for fairness-aware machine learning. WIREs Data
      Mining and Knowledge Discovery, 12(3), e1452.
      https://doi.org/10.1002/widm.1452
"""


def load_bank_marketing(
    *, preprocess: bool = False, as_frame: bool = True, sensitive_feature: str = "age"
) -> Bunch:
    """Load the UCI Bank Marketing dataset (``bank.csv``) bundled with the package.

    4,521 clients of a Portuguese bank's phone campaigns, UCI's 10 % sample
    of the full table.  The target is whether the client subscribed a term
    deposit.  The default group is age: "25-59" vs. "<25 or >=60", the
    binarisation of Le Quy et al. [3]_; ``sensitive_feature="marital"``
    groups "married" vs. "not married" instead.  The grouped attribute is
    returned separately and is *not* one of the features.

    Parameters
    ----------
    preprocess : bool, default=False
        If False, return the raw table: the integer attributes as ``int64``
        and the categorical ones as ``category`` of UCI's strings
        ("unknown" is a level, not a missing value).  If True, return the
        numeric design matrix: ``age``, ``balance``, ``day``, ``duration``,
        ``campaign``, ``pdays`` and ``previous`` z-scored and the nine
        categorical attributes one-hot encoded (columns such as
        ``"month_may"``), as ``float32``: 50 columns for the age groups, 48
        for the marital groups.
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
    sensitive_feature : {"age", "marital"}, default="age"
        The group attribute.  ``"age"``: "25-59" (4,280) vs. "<25 or >=60"
        (241).  ``"marital"``: "married" (2,797) vs. "not married" (1,724).

    Returns
    -------
    sklearn.utils.Bunch
        Dictionary-like object with the attributes

        data : pandas.DataFrame of shape (4521, n_features)
            Features without the grouped attribute and the target (15 raw
            columns; 50 or 48 preprocessed).
        target : pandas.Series of shape (4521,)
            ``int64`` labels, 1 = subscribed.
        sensitive_features : pandas.Series of shape (4521,)
            The groups as strings (pandas' default string dtype), aligned
            with ``data``.
        frame : pandas.DataFrame or None
            ``data`` together with the sensitive and ``y`` (0/1) columns.
        feature_names : list of str
            Column names of ``data``.
        target_names : numpy.ndarray of str
            Class names ``["no", "yes"]``, indexed by ``target``.
        sensitive_feature_name : str
            ``"age"`` or ``"marital"``.
        DESCR : str
            Full description and citation of the dataset.

    Notes
    -----
    UCI also distributes the 45,211-row ``bank-full.csv`` and the 41,188-row
    ``bank-additional-full.csv``; no package on PyPI that we could find
    ships either, so the 10 % sample is bundled.  ``duration`` is kept
    although UCI advises dropping it for realistic prediction (it is known
    only after the call); drop the column yourself to study that setting.

    The standardisation statistics are computed on the whole loaded table
    and are not covered by any differential-privacy guarantee; see
    :func:`skfairdp.datasets.load_adult`.

    The dataset is distributed by the UCI Machine Learning Repository under
    the Creative Commons Attribution 4.0 International (CC BY 4.0) licence.

    References
    ----------
    .. [1] Moro, S., Rita, P. and Cortez, P. (2012).
       Bank Marketing [Dataset]. UCI Machine Learning Repository.
       https://doi.org/10.24432/C5K306
    .. [2] Moro, S., Cortez, P. and Rita, P. (2014). A data-driven approach
       to predict the success of bank telemarketing. Decision Support
       Systems, 62, 22-31. https://doi.org/10.1016/j.dss.2014.03.001
    .. [3] Le Quy, T., Roy, A., Iosifidis, V., Zhang, W. and Ntoutsi, E.
       (2022). A survey on datasets for fairness-aware machine learning.
       WIREs Data Mining and Knowledge Discovery, 12(3), e1452.
       https://doi.org/10.1002/widm.1452

    Examples
    --------
    >>> from skfairdp.datasets import load_bank_marketing
    >>> bank = load_bank_marketing(preprocess=True)
    >>> bank.data.shape
    (4521, 50)
    >>> bank.sensitive_features.value_counts().to_dict()
    {'25-59': 4280, '<25 or >=60': 241}
    """
    group = _check_sensitive_feature(sensitive_feature, BANK_GROUPINGS)
    raw = _read_bundled_csv(
        "bank_marketing.csv.gz",
        keep_default_na=False,
        dtype={
            **{column: "int64" for column in BANK_NUMERIC},
            **{column: object for column in (*BANK_CATEGORICAL, BANK_TARGET)},
        },
    )
    if set(raw.columns) != {*BANK_NUMERIC, *BANK_CATEGORICAL, BANK_TARGET}:
        raise RuntimeError(  # pragma: no cover - guards the data file
            f"unexpected columns in bank_marketing.csv.gz: {list(raw.columns)}"
        )
    target = raw[BANK_TARGET].map({"no": 0, "yes": 1})
    if target.isna().any():  # pragma: no cover - guards the data file
        raise RuntimeError("unexpected labels in bank_marketing.csv.gz")
    target = target.astype("int64").rename(BANK_TARGET)

    if group == "age":
        low, high = BANK_AGE_RANGE
        middle = raw["age"].between(low, high - 1)
        groups = middle.map({True: f"{low}-{high - 1}", False: f"<{low} or >={high}"})
    else:
        groups = raw["marital"].where(raw["marital"] == "married", "not married")
    sensitive = _as_str_series(groups, group)

    return _assemble(
        raw,
        numeric=[c for c in BANK_NUMERIC if c != group],
        categorical=[c for c in BANK_CATEGORICAL if c != group],
        target=target,
        sensitive=sensitive,
        preprocess=preprocess,
        as_frame=as_frame,
        target_names=BANK_TARGET_NAMES,
        descr=_BANK_DESCR,
    )
