"""The zoo's worst-table checks (experiments/zoo.py) on hand-made results."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "experiments"))

import zoo  # noqa: E402


def _rows(method, param, errors, violations, *, table="t", eps=1.0, train=None, n_rows=20_000,
          majority=0.3, floor=0.01, min_group=2_000):  # fmt: skip
    train = violations if train is None else train
    return [
        {"table": table, "notion": "demographic_parity", "method": method, "epsilon": eps,
         "param": param, "seed": seed, "n_rows": n_rows, "n_groups": 2,
         "min_group_train": min_group, "test_error": e, "test_violation": v,
         "train_violation": tv, "test_floor": floor, "majority_error": majority,
         "positive_rate": 0.3, "epsilon_spent": eps, "fit_seconds": 1.0}
        for seed, (e, v, tv) in enumerate(zip(errors, violations, train))
    ]  # fmt: skip


def _frame(*groups):
    return pd.DataFrame([row for group in groups for row in group])


def test_plan_sizes_and_stages():
    full = list(zoo.plan(["a", "b"], None, quick=False))
    per_table_notion = sum(len(p) for p in zoo.GRID.values()) + len(zoo.ANCHORS)
    eo_skipped = sum(p > 0 for p in zoo.GRID["dpto"])  # no tolerance with equalized odds
    expected = 2 * (
        5 * (2 * per_table_notion - eo_skipped) + 2 * 3 * len(zoo.PRIVATE) * len(zoo.OTHER_EPSILONS)
    )
    assert len(full) == expected
    assert not [k for k in full if k[2] == "dpto" and k[1] == "equalized_odds" and k[4] > 0]
    assert len(set(full)) == len(full)
    quick = list(zoo.plan(["a"], None, quick=True))
    assert {k[5] for k in quick} == {0} and {k[1] for k in quick} == {"demographic_parity"}
    assert all(k[3] == 1.0 for k in quick if k[2] in zoo.PRIVATE)
    only = list(zoo.plan(["a"], ["raco"], quick=False))
    assert {k[2] for k in only} == {"raco"}


def test_majority_check_flags_a_cell_above_the_constant_predictor():
    df = _frame(
        _rows("dpfermi", 4.0, [0.2, 0.2], [0.05, 0.05]),
        _rows("dpfermi", 64.0, [0.31, 0.33], [0.01, 0.01]),
    )
    above = zoo.check_majority(zoo.summarise(df))
    assert list(above.param) == [64.0]


def test_monotone_check_allows_the_seed_sd_and_flags_a_real_rise():
    noisy = _frame(
        _rows("raco", 0.1, [0.2] * 2, [0.05, 0.07]),
        _rows("raco", 0.05, [0.2] * 2, [0.05, 0.09]),  # rise 0.01 < sd 0.028
    )
    assert zoo.check_monotone(zoo.summarise(noisy)).empty
    rising = _frame(
        _rows("raco", 0.1, [0.2] * 2, [0.05, 0.05]),
        _rows("raco", 0.05, [0.2] * 2, [0.06, 0.06]),
        _rows("raco", 0.02, [0.2] * 2, [0.10, 0.10]),
    )
    bad = zoo.check_monotone(zoo.summarise(rising))
    assert list(zip(bad.looser, bad.stricter)) == [(0.1, 0.05), (0.05, 0.02)]


def test_raco_check_reads_training_rows_and_the_test_size_rule():
    df = _frame(
        _rows("raco", 0.05, [0.2] * 2, [0.08, 0.08], train=[0.055, 0.065]),
        _rows(
            "raco", 0.02, [0.2] * 2, [0.05, 0.05], train=[0.04, 0.04], table="small", min_group=300
        ),  # fmt: skip
    )
    raco = zoo.check_raco(zoo.summarise(df)).set_index("table")
    assert raco.loc["t", "train_ok"] and not raco.loc["t", "test_ok"]
    assert not raco.loc["small", "train_ok"] and raco.loc["small", "test_ok"]


def test_best_gap_uses_expgrad_violation_or_the_floor_and_the_size_allowance():
    df = _frame(
        _rows("expgrad", 0.02, [0.20, 0.20], [0.02, 0.02], eps=math.inf),
        _rows("dpfermi", 4.0, [0.205, 0.205], [0.06, 0.06]),  # too unfair
        _rows("dpfermi", 16.0, [0.215, 0.215], [0.025, 0.025]),  # within floor + 0.02
        _rows("raco", 0.02, [0.24, 0.24], [0.01, 0.01]),
    )
    gaps = zoo.best_gaps(zoo.summarise(df)).set_index("method")
    assert gaps.loc["dpfermi", "target_violation"] == pytest.approx(0.03)
    assert gaps.loc["dpfermi", "best_param"] == 16.0
    assert gaps.loc["dpfermi", "gap"] == pytest.approx(0.015)
    assert not gaps.loc["dpfermi", "ok"]  # 20,000 rows: allowance 0.01
    assert not gaps.loc["raco", "ok"]
    small = df.assign(n_rows=5_000)
    assert zoo.best_gaps(zoo.summarise(small)).set_index("method").loc["dpfermi", "ok"]
    worst = zoo.worst_tables(gaps.reset_index()).set_index("method")
    assert worst.loc["raco", "gap"] == pytest.approx(0.04)


def test_compare_names_cells_worse_beyond_the_seed_sd():
    old = _frame(_rows("cgoo", 0.02, [0.26, 0.27], [0.04, 0.05], table="hi"),
                 _rows("cgoo", 0.05, [0.25, 0.25], [0.05, 0.05], table="hi"))  # fmt: skip
    new = _frame(_rows("cgoo", 0.02, [0.32, 0.33], [0.03, 0.04], table="hi"),
                 _rows("cgoo", 0.05, [0.251, 0.252], [0.05, 0.05], table="hi"))  # fmt: skip
    worse = zoo.compare_frames(old, new)
    assert list(zip(worse.param, worse.metric)) == [(0.02, "error")]


def test_run_target_sets_the_bound_at_the_target_only_where_the_grid_stops_short():
    df = _frame(
        _rows("expgrad", 0.02, [0.20, 0.20], [0.15, 0.15], eps=math.inf, n_rows=5_000),
        _rows("raco", 0.1, [0.30, 0.30], [0.05, 0.05], n_rows=5_000),
        _rows("cgoo", 0.05, [0.29, 0.29], [0.04, 0.04], n_rows=5_000),
        _rows("dpfermi", 1.0, [0.26, 0.26], [0.14, 0.14], n_rows=5_000),
    )
    summary = zoo.summarise(df)
    keys = list(zoo.target_keys(summary, seeds=(0, 1)))
    assert {k[2] for k in keys} == {"raco", "cgoo"}  # bounded estimators only
    assert {k[4] for k in keys} == {0.15} and len(keys) == 4
    # target 0.15 is within every grid: no fits
    assert not list(
        zoo.target_keys(
            zoo.summarise(
                df.assign(test_violation=df.test_violation.where(df.method != "expgrad", 0.03))
            ),
            seeds=(0,),
        )
    )
    gaps = zoo.best_gaps(summary)
    target = zoo.summarise(_frame(
        _rows("raco", 0.15, [0.21, 0.21], [0.12, 0.12], n_rows=5_000),  # gap 0.01: ok
        _rows("cgoo", 0.15, [0.21, 0.21], [0.16, 0.16], n_rows=5_000),  # over the target
    ))  # fmt: skip
    at = zoo.at_target(gaps, target).set_index("method")
    assert at.loc["raco", "ok"] and not at.loc["cgoo", "ok"]
    assert at.loc["raco", "gap"] == pytest.approx(0.01)
    # the best private error at epsilon = 1 is 0.26 > 0.20 + 0.02: a privacy floor
    assert len(zoo.privacy_floor(gaps, summary)) == 1
    assert zoo.privacy_floor(gaps, summary.assign(error=summary.error - 0.05)).empty
