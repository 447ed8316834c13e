"""The zoo of issue 34 (experiments/zoo_tables.py): every table loads, as defined."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "experiments"))

import zoo_tables  # noqa: E402
from zoo_tables import DEFINITIONS, HOLDOUT, ZOO, load_zoo_table  # noqa: E402

#: name -> (rows, features, rows of class 1, rows per group); a changed loader fails here
GOLDEN = {
    "adult": (45222, 102, 11208, {"Female": 14695, "Male": 30527}),
    "german": (1000, 60, 700, {"<=25": 190, ">25": 810}),
    "bank-marketing": (4521, 50, 521, {"25-59": 4280, "<25 or >=60": 241}),
    "credit-card": (30000, 85, 6636, {"female": 18112, "male": 11888}),
    "communities-crime": (1993, 98, 653, {"<=0.06": 1023, ">0.06": 970}),
    "hi": (22101, 18, 8265, {"black": 1241, "white": 20860}),
    "health-insurance": (8802, 17, 7052, {"afam-other|female": 762, "afam-other|male": 686,
                                          "cauc|female": 3407, "cauc|male": 3947}),
    "cps1988": (28155, 8, 13847, {"afam": 2232, "cauc": 25923}),
    "resume-names": (4870, 47, 392, {"afam": 2435, "cauc": 2435}),
    "hmda": (2380, 12, 2095, {"afam": 339, "other": 2041}),
    "college-distance": (4739, 12, 2907, {"afam": 786, "hispanic": 903, "other": 3050}),
    "aids2": (2843, 14, 1082, {"F": 89, "M": 2754}),
    "slid": (3987, 2, 1989, {"Female|English": 1636, "Female|French": 119, "Female|Other": 246,
                             "Male|English": 1608, "Male|French": 140, "Male|Other": 238}),
    "acs12": (1605, 10, 843, {"asian": 73, "black": 162, "other": 108, "white": 1262}),
    "gss7402": (9120, 7, 6993, {"cauc": 7335, "other": 1785}),
}  # fmt: skip
#: the held-out tables, loaded the same way (never used to choose a default)
GOLDEN_HOLDOUT = {
    "telco-churn": (7032, 39, 1869, {"other": 5890, "senior": 1142}),
    "crime1": (2725, 9, 755, {"black": 439, "other": 2286}),
    "hsb82": (7185, 5, 3591, {"No|Female": 2730, "No|Male": 2481, "Yes|Female": 1065,
                              "Yes|Male": 909}),
    "gss-vocab": (27360, 4, 10819, {"no": 2342, "yes": 25018}),
    "hr-attrition": (1470, 68, 237, {"Female": 588, "Male": 882}),
    "doctor-visits": (5190, 10, 1049, {"female": 2702, "male": 2488}),
    "card-applications": (1312, 8, 1017, {"30 and over": 730, "under 30": 582}),
    "smoke-ban": (10000, 9, 2423, {"female": 5637, "male": 4363}),
    "gss-happiness": (16148, 66, 4980, {"black|female": 1377, "black|male": 801,
                                        "nonblack|female": 7448, "nonblack|male": 6522}),
    "islr-wage": (2963, 18, 1474, {"1. White": 2480, "2. Black": 293, "3. Asian": 190}),
    "chile-vote": (1703, 12, 836, {"F": 814, "M": 889}),
    "card-wage": (2944, 29, 1473, {"black": 674, "other": 2270}),
}  # fmt: skip
GOLDEN_ALL = {**GOLDEN, **GOLDEN_HOLDOUT}
EVERY = ZOO + HOLDOUT

#: tables that must never enter the zoo: the maintainers' held-out candidates
HELD_BACK = ("Ecdat/", "NMES1988", "carData/Arrests", "compas", "plm/")


def test_zoo_names():
    assert ZOO == tuple(GOLDEN)
    assert len(ZOO) >= 12
    assert ZOO[:5] == zoo_tables.BUNDLED
    assert HOLDOUT == tuple(GOLDEN_HOLDOUT) and not set(HOLDOUT) & set(ZOO)
    assert set(DEFINITIONS) == set(EVERY)


@pytest.mark.parametrize("name", EVERY)
def test_table_loads_as_defined(name):
    rows, features, positives, groups = GOLDEN_ALL[name]
    bunch = load_zoo_table(name)
    X, y, s = bunch.data, bunch.target, bunch.sensitive_features

    assert X.shape == (rows, features) and len(bunch.feature_names) == features
    assert X.dtype == np.float32 and X.flags.c_contiguous
    assert np.isfinite(X).all()
    assert y.dtype == np.int64 and set(np.unique(y)) == {0, 1}
    assert int(y.sum()) == positives
    assert s.dtype.kind == "U" and s.shape == (rows,)
    levels, counts = np.unique(s, return_counts=True)
    assert dict(zip(levels.tolist(), counts.tolist())) == groups
    assert 2 <= len(groups) <= 6
    assert bunch.name == name
    for part in ("Label:", "Groups:", "Rows:", "Source:"):
        assert part in bunch.definition


@pytest.mark.parametrize("name", [n for n in EVERY if DEFINITIONS[n].recipe is not None])
def test_numeric_features_are_z_scored_and_the_rest_binary(name):
    bunch = load_zoo_table(name)
    recipe = DEFINITIONS[name].recipe
    k = len(recipe.numeric)
    numeric, rest = bunch.data[:, :k].astype(np.float64), bunch.data[:, k:]
    np.testing.assert_allclose(numeric.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(numeric.std(axis=0), 1.0, atol=1e-4)
    assert set(np.unique(rest)) <= {0.0, 1.0}
    # one-hot blocks: exactly one indicator per row
    offset = k + len(recipe.binary)
    for column in recipe.categorical:
        longer = [c for c in recipe.categorical if c != column and c.startswith(f"{column}_")]
        width = sum(
            f.startswith(f"{column}_") and not f.startswith(tuple(f"{c}_" for c in longer))
            for f in bunch.feature_names
        )  # ISLR Wage: health and health_ins
        np.testing.assert_array_equal(bunch.data[:, offset : offset + width].sum(axis=1), 1.0)
        offset += width
    assert offset == bunch.data.shape[1]


def test_hi_follows_the_issue_recipe():
    bunch = load_zoo_table("hi")
    s, y = bunch.sensitive_features, bunch.target
    assert len(y) == 22_101
    assert round(float(np.mean(s == "black")), 3) == 0.056
    assert y[s == "black"].mean() > y[s == "white"].mean()
    assert {"whrswk", "experience", "kidslt6", "kids618", "husby", "hhi", "hhi2",
            "hispanic"} <= set(bunch.feature_names)  # fmt: skip
    assert not {"race", "whi", "wght"} & set(bunch.feature_names)


def test_stored_files_match_their_checksums_and_sources():
    assert all(zoo_tables.check_stored().values())
    stored = {p.name for p in zoo_tables.DATA.glob("*.csv.gz")}
    assert stored == {f"{n}.csv.gz" for n in EVERY if DEFINITIONS[n].data_source is not None}
    for name in EVERY:
        source = DEFINITIONS[name].data_source
        if source is None:
            continue
        assert len(source.sha256) == 64
        with gzip.open(zoo_tables.DATA / f"{name}.csv.gz", "rt") as f:
            assert tuple(f.readline().strip().split(",")) == source.columns


def test_no_held_back_table_is_used():
    for name in EVERY:
        source = DEFINITIONS[name].data_source
        if source is None:
            continue
        assert source.archive in zoo_tables.ARCHIVES
        for held in HELD_BACK:
            if name == "hi":
                assert source.member.endswith("/Ecdat/HI.csv")
            else:
                assert held.lower() not in source.member.lower()


def test_unknown_name_is_refused():
    with pytest.raises(ValueError, match="unknown zoo table"):
        load_zoo_table("compas")
