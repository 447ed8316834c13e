"""Every fairness estimator on every table of the zoo, judged by the worst table (issue 34).

The zoo is ``zoo_tables.ZOO`` (definitions in ``results/zoo_tables.md``). On each table,
for demographic parity and equalized odds, on hard predictions of held-out rows:

* at epsilon = 1, 5 seeds, over each knob's grid: ``DPFermiClassifier`` (fairness_weight
  1, 4, 16, 64), ``RaCODPClassifier`` (tolerance 0.02, 0.05, 0.1), ``CGOOReduction``
  (difference_bound 0.02, 0.05), ``DPThresholdOptimizer`` on a ``DPSGDClassifier`` within
  the same total epsilon (``tol`` None, and for demographic parity 0.02 and 0.05);
* at epsilon 0.5 and 3, 3 seeds: each estimator at its default setting;
* non-private anchors: fairlearn ``ExponentiatedGradient(LogisticRegression, bound 0.02)``,
  ``ThresholdOptimizer`` on LogisticRegression and on HistGradientBoosting, the majority
  class.

Protocol: one 75/25 ``train_test_split(random_state=seed)`` stratified by group and label;
``random_state=seed``; every other parameter at its default (``delta="auto"``, the
``"auto"`` schedules), so a row is what a user gets. Recorded per fit: hard test error and
violation, the hard training violation (fairlearn's max pairwise difference for any number
of groups), the test split's violation floor (``fair_violation_floor`` at the fit's
operating point), the majority class's test error, the spent epsilon and the fit time.

Commands (from the repository root)::

    python experiments/zoo.py run [--quick] [--jobs 2] [--tables hi aids2] [--methods raco]
    python experiments/zoo.py report [--csv results/zoo.csv]
    python experiments/zoo.py compare OLD NEW    # commits or CSV paths: cells that got worse
    python experiments/zoo.py run-target [--jobs 2]  # bounds set at the target (below)

``--quick``: seed 0, epsilon = 1, demographic parity, one or two settings per estimator, tables
subsampled to at most 5,000 rows (about 10 minutes on 2 cores); it writes
``results/zoo_quick.csv``. The full run appends to ``results/zoo.csv`` (``--resume`` skips
rows present). ``report`` writes the markdown summary beside the CSV with the issue's
worst-table targets as PASS/FAIL lines.

``run-target``: where a bounded estimator's grid stops short of a (table, notion)'s target
violation (RaCO-DP's loosest tolerance 0.1, CGOO's loosest bound 0.05, below ExpGrad's
test violation on small tables), the estimator with its bound set *at* the target, the
setting a user who states that bound would choose; 5 seeds, epsilon = 1, written to
``results/zoo_target.csv`` and reported in a section of its own (a reading aid: the
issue's target is judged on the grid alone).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import subprocess
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from _results_csv import append, completed  # noqa: E402
from frontier import _NonPrivate, _predict  # noqa: E402

RESULTS = Path(__file__).parent / "results"
NOTIONS = ("demographic_parity", "equalized_odds")
#: knob grids at epsilon = 1, ordered from the loosest to the strictest setting
GRID = {
    "dpfermi": (1.0, 4.0, 16.0, 64.0),
    "raco": (0.1, 0.05, 0.02),
    "cgoo": (0.05, 0.02),
    "dpto": (0.05, 0.02, 0.0),  # tol (0: None); equalized odds takes 0 only
}
#: each estimator's default setting (the one run at the other epsilons)
DEFAULT = {"dpfermi": 1.0, "raco": 0.05, "cgoo": 0.05, "dpto": 0.0}
ANCHORS = {"expgrad": 0.02, "threshold": 0.0, "threshold_hgb": 0.0, "majority": 0.0}
PRIVATE = tuple(GRID)
#: estimators whose knob is a bound on the violation (run-target sets it at the target)
BOUNDED = ("raco", "cgoo")
OTHER_EPSILONS = (0.5, 3.0)
SEEDS, OTHER_SEEDS = (0, 1, 2, 3, 4), (0, 1, 2)
QUICK_GRID = {"dpfermi": (4.0, 64.0), "raco": (0.05,), "cgoo": (0.05,), "dpto": (0.0,)}
QUICK_ROWS = 5_000
KEY = ("table", "notion", "method", "epsilon", "param", "seed")
FIELDS = [
    *KEY, "n_rows", "n_groups", "min_group_train", "test_error", "test_violation",
    "train_violation", "test_floor", "majority_error", "positive_rate", "epsilon_spent",
    "fit_seconds",
]  # fmt: skip


# --------------------------------------------------------------------------- plan
def plan(tables, methods, quick: bool, seeds=None, notions=None, stages=("grid", "epsilons")):
    """The fits to run: (table, notion, method, eps, param, seed).

    Stage ``"grid"`` (epsilon = 1 grids and the anchors, seed by seed) comes before stage
    ``"epsilons"`` (each default at epsilon 0.5 and 3).
    """
    grid = QUICK_GRID if quick else GRID
    notions = NOTIONS[:1] if quick else tuple(notions or NOTIONS)
    main_seeds = (0,) if quick else tuple(seeds or SEEDS)
    keep = set(methods or (*PRIVATE, *ANCHORS))
    for seed in main_seeds if "grid" in stages else ():
        for table in tables:
            for notion in notions:
                for method, params in grid.items():
                    for param in params if method in keep else ():
                        if _supported(method, notion, param):
                            yield table, notion, method, 1.0, param, seed
                for method, param in ANCHORS.items():
                    if method in keep and not (quick and method == "threshold_hgb"):
                        yield table, notion, method, math.inf, param, seed
    if quick or "epsilons" not in stages:
        return
    for seed in [seed for seed in OTHER_SEEDS if seeds is None or seed in seeds]:
        for table in tables:
            for notion in notions:
                for method in PRIVATE:
                    for eps in OTHER_EPSILONS if method in keep else ():
                        yield table, notion, method, eps, DEFAULT[method], seed


def _supported(method: str, notion: str, param: float) -> bool:
    """DPThresholdOptimizer's ``tol`` applies to single-rate constraints only."""
    return not (method == "dpto" and notion == "equalized_odds" and param > 0)


# --------------------------------------------------------------------------- one fit
@lru_cache(maxsize=2)
def _table(name: str, quick: bool):
    from zoo_tables import load_zoo_table

    from skfairdp.datasets._registry import stratified_subsample

    bunch = load_zoo_table(name)
    X, y, s = bunch.data, np.asarray(bunch.target), np.asarray(bunch.sensitive_features)
    if quick and len(y) > QUICK_ROWS:
        rows = stratified_subsample(_strata(y, s), QUICK_ROWS, seed=0)
        X, y, s = X[rows], y[rows], s[rows]
    return np.ascontiguousarray(X, dtype=np.float32), y, s


def _strata(y, s):
    joint = np.array([f"{g}|{t}" for g, t in zip(s, y)])
    _, counts = np.unique(joint, return_counts=True)
    return joint if counts.min() >= 4 else s


def split(name: str, seed: int, quick: bool = False):
    """75/25 split of a zoo table stratified by group and label (by group alone if a
    (group, label) cell has fewer than 4 rows)."""
    from sklearn.model_selection import train_test_split

    X, y, s = _table(name, quick)
    return train_test_split(X, y, s, test_size=0.25, random_state=seed, stratify=_strata(y, s))


def _model(method, notion, eps, param, seed):
    from skfairdp import CGOOReduction, DPFermiClassifier, DPSGDClassifier, RaCODPClassifier
    from skfairdp.postprocessing import DPThresholdOptimizer

    common = {"epsilon": eps, "random_state": seed}
    if method == "dpfermi":
        return DPFermiClassifier(notion, fairness_weight=param, **common)
    if method == "raco":
        return RaCODPClassifier(notion, param, **common)
    if method == "cgoo":
        return CGOOReduction(constraints=notion, difference_bound=param, **common)
    if method == "dpto":
        return DPThresholdOptimizer(
            DPSGDClassifier(), constraints=notion, tol=param or None, **common
        )
    return _NonPrivate(method, notion, param, seed)


def fit_one(key, quick: bool = False) -> dict:
    """Fit and score one (table, notion, method, epsilon, param, seed) cell."""
    import torch

    from skfairdp.fairness.metrics import demographic_parity_violation, equalized_odds_violation
    from skfairdp.metrics import fair_violation_floor

    torch.set_num_threads(1)
    table, notion, method, eps, param, seed = key
    Xtr, Xte, ytr, yte, s_tr, s_te = split(table, seed, quick)
    majority = np.bincount(ytr).argmax()
    start = time.perf_counter()
    spent = math.inf
    if method == "majority":
        pred_tr, pred_te = np.full_like(ytr, majority), np.full_like(yte, majority)
        spent = 0.0
    else:
        model = _model(method, notion, eps, param, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(Xtr, ytr, sensitive_features=s_tr)
            pred_tr, pred_te = _predict(model, Xtr, s_tr, seed), _predict(model, Xte, s_te, seed)
        if hasattr(model, "privacy_spent_"):
            spent = float(model.privacy_spent_.epsilon)
    seconds = time.perf_counter() - start
    violation = {
        "demographic_parity": demographic_parity_violation,
        "equalized_odds": equalized_odds_violation,
    }[notion]
    _, group_counts = np.unique(s_tr, return_counts=True)
    row = dict(zip(KEY, key))
    row.update(
        n_rows=len(ytr) + len(yte), n_groups=len(group_counts),
        min_group_train=int(group_counts.min()),
        test_error=float(np.mean(pred_te != yte)),
        test_violation=violation(yte, pred_te, sensitive_features=s_te),
        train_violation=violation(ytr, pred_tr, sensitive_features=s_tr),
        test_floor=fair_violation_floor(
            yte, pred_te, sensitive_features=s_te, notion=notion, n_draws=2000
        ),
        majority_error=float(np.mean(yte != majority)),
        positive_rate=float(np.mean(pred_te == 1)), epsilon_spent=spent, fit_seconds=seconds,
    )  # fmt: skip
    return row


def _fit_quick(key):
    return fit_one(key, quick=True)


def run(args) -> None:
    from zoo_tables import ZOO

    csv = Path(args.csv or RESULTS / ("zoo_quick.csv" if args.quick else "zoo.csv"))
    csv.parent.mkdir(exist_ok=True)
    if args.quick and not args.resume and csv.exists():
        csv.unlink()
    done = completed(csv, KEY) if args.resume else set()
    keys = [
        key
        for key in plan(
            args.tables or ZOO, args.methods, args.quick, args.seeds, args.notions, args.stages
        )
        if tuple(map(str, key)) not in done
    ]  # fmt: skip
    print(f"zoo: {len(keys)} fits -> {csv}", flush=True)
    start = time.perf_counter()
    work = _fit_quick if args.quick else fit_one
    with ProcessPoolExecutor(args.jobs) as pool:
        for i, row in enumerate(pool.map(work, keys, chunksize=1), 1):
            append(csv, FIELDS, row)
            print(
                f"[{i}/{len(keys)} {time.perf_counter() - start:6.0f}s] {row['table']:18s} "
                f"{row['notion'][:2]} {row['method']:13s} eps={row['epsilon']:<4} "
                f"p={row['param']:<5} seed={row['seed']} err={row['test_error']:.4f} "
                f"viol={row['test_violation']:.4f} train={row['train_violation']:.4f} "
                f"maj={row['majority_error']:.4f} ({row['fit_seconds']:.1f}s)",
                flush=True,
            )
    print(f"zoo: done in {time.perf_counter() - start:.0f} s", flush=True)


def target_keys(summary: pd.DataFrame, seeds=SEEDS):
    """(table, notion, method, 1.0, target, seed) for each bounded estimator whose grid's
    loosest bound is below the (table, notion)'s target violation (:func:`best_gaps`)."""
    gaps = best_gaps(summary)
    for row in gaps.itertuples():
        if row.method in BOUNDED and row.target_violation > max(GRID[row.method]) + 1e-9:
            for seed in seeds:
                yield row.table, row.notion, row.method, 1.0, round(row.target_violation, 3), seed


def run_target(args) -> None:
    grid_csv = Path(args.grid_csv or RESULTS / "zoo.csv")
    csv = Path(args.csv or RESULTS / "zoo_target.csv")
    done = completed(csv, KEY) if csv.exists() else set()
    keys = [
        key for key in target_keys(summarise(pd.read_csv(grid_csv)))
        if tuple(map(str, key)) not in done
    ]  # fmt: skip
    print(f"zoo: {len(keys)} fits at the target -> {csv}", flush=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        for i, row in enumerate(pool.map(fit_one, keys, chunksize=1), 1):
            append(csv, FIELDS, row)
            print(f"[{i}/{len(keys)} {time.perf_counter() - start:6.0f}s] {row['table']} "
                  f"{row['notion'][:2]} {row['method']} bound={row['param']} "
                  f"seed={row['seed']} err={row['test_error']:.4f} "
                  f"viol={row['test_violation']:.4f}", flush=True)  # fmt: skip
    print(f"zoo: done in {time.perf_counter() - start:.0f} s", flush=True)


# --------------------------------------------------------------------------- report
CELL = ["table", "notion", "method", "epsilon", "param"]


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and seed sd of every (table, notion, method, epsilon, param) cell."""
    agg = df.groupby(CELL).agg(
        seeds=("seed", "nunique"), n_rows=("n_rows", "first"),
        min_group_train=("min_group_train", "first"),
        error=("test_error", "mean"), error_sd=("test_error", "std"),
        violation=("test_violation", "mean"), violation_sd=("test_violation", "std"),
        train_violation=("train_violation", "mean"),
        train_violation_sd=("train_violation", "std"),
        floor=("test_floor", "mean"), majority=("majority_error", "mean"),
        positive_rate=("positive_rate", "mean"), epsilon_spent=("epsilon_spent", "max"),
        seconds=("fit_seconds", "mean"),
    )  # fmt: skip
    return agg.reset_index().fillna({"error_sd": 0.0, "violation_sd": 0.0,
                                     "train_violation_sd": 0.0})  # fmt: skip


def _at_one(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[(summary.epsilon == 1.0) & summary.method.isin(PRIVATE)]


def check_majority(summary: pd.DataFrame) -> pd.DataFrame:
    """Private cells (every epsilon) whose mean test error is above the majority class's."""
    private = summary[summary.method.isin(PRIVATE)]
    return private[private.error > private.majority]


def _beyond_sd(above: pd.DataFrame) -> str:
    """How many cells above the majority class are more than one seed sd above it, and
    the largest excess (a reading aid: the target counts every cell above)."""
    if above.empty:
        return "none"
    excess = above.error - above.majority
    beyond = above[excess > above.error_sd]
    worst = above.loc[excess.idxmax()]
    return (
        f"{len(beyond)} by more than the seed sd; largest +{excess.max():.4f}: "
        f"{worst.method} {worst.param:g} on {worst.table}, {worst.notion}, "
        f"epsilon {worst.epsilon:g}"
    )


def check_monotone(summary: pd.DataFrame) -> pd.DataFrame:
    """Knob steps where the violation rises as the setting gets stricter, beyond the seed sd."""
    bad = []
    for (table, notion, method), cell in _at_one(summary).groupby(["table", "notion", "method"]):
        order = GRID[method]
        cell = cell.set_index("param").reindex([p for p in order if p in set(cell.param)])
        for looser, stricter in zip(cell.index[:-1], cell.index[1:]):
            a, b = cell.loc[looser], cell.loc[stricter]
            allowed = max(a.violation_sd, b.violation_sd)
            if b.violation > a.violation + allowed:
                bad.append({
                    "table": table, "notion": notion, "method": method, "looser": looser,
                    "stricter": stricter, "violation_looser": a.violation,
                    "violation_stricter": b.violation, "sd": allowed,
                    "floor_stricter": b.floor, "train_looser": a.train_violation,
                    "train_stricter": b.train_violation,
                })  # fmt: skip
    return pd.DataFrame(bad)


def check_raco(summary: pd.DataFrame) -> pd.DataFrame:
    """RaCO cells against its tolerance: training <= gamma + 0.01 everywhere; test <= gamma
    + 0.02 where every group has >= 1,000 training rows."""
    raco = _at_one(summary)
    raco = raco[raco.method == "raco"].copy()
    raco["train_ok"] = raco.train_violation <= raco.param + 0.01
    raco["test_checked"] = raco.min_group_train >= 1000
    raco["test_ok"] = ~raco.test_checked | (raco.violation <= raco.param + 0.02)
    return raco


def best_gaps(summary: pd.DataFrame) -> pd.DataFrame:
    """Each estimator's best setting at the violation ExpGrad(LR, 0.02) reaches.

    The target violation of a (table, notion) is the larger of ExpGrad's mean test
    violation and its test floor + 0.02 (the floor at ExpGrad's operating point: a target
    that does not move when the private fits change); among an estimator's epsilon = 1 settings
    whose mean test violation is within it, the lowest mean error; its gap to ExpGrad's
    error against the allowance (0.01 on tables of >= 10,000 rows, 0.02 below).
    """
    rows = []
    for (table, notion), cell in summary.groupby(["table", "notion"]):
        anchor = cell[(cell.method == "expgrad") & np.isinf(cell.epsilon)]
        if anchor.empty:
            continue
        anchor = anchor.iloc[0]
        private = cell[(cell.epsilon == 1.0) & cell.method.isin(PRIVATE)]
        target = max(anchor.violation, anchor.floor + 0.02)
        allowance = 0.01 if anchor.n_rows >= 10_000 else 0.02
        for method, settings in private.groupby("method"):
            ok = settings[settings.violation <= target]
            best = ok.loc[ok.error.idxmin()] if not ok.empty else None
            closest = settings.loc[settings.violation.idxmin()]
            gap = best.error - anchor.error if best is not None else math.inf
            rows.append({
                "table": table, "notion": notion, "method": method, "n_rows": anchor.n_rows,
                "target_violation": target, "expgrad_error": anchor.error,
                "best_param": best.param if best is not None else None,
                "best_error": best.error if best is not None else math.nan,
                "best_violation": best.violation if best is not None else math.nan,
                "closest_violation": closest.violation, "gap": gap, "allowance": allowance,
                "ok": gap <= allowance,
            })  # fmt: skip
    return pd.DataFrame(rows)


def worst_tables(gaps: pd.DataFrame) -> pd.DataFrame:
    """The worst table of each (method, notion): the largest gap to ExpGrad."""
    idx = gaps.groupby(["method", "notion"]).gap.idxmax()
    worst = gaps.loc[idx, ["method", "notion", "table", "gap", "allowance", "best_param"]]
    passed = gaps.groupby(["method", "notion"]).ok.agg(["sum", "count"]).reset_index()
    return worst.merge(passed, on=["method", "notion"]).rename(
        columns={"sum": "tables_ok", "count": "tables"}
    )


def _fmt(df: pd.DataFrame) -> str:
    return df.to_markdown(index=False, floatfmt=".3f") if not df.empty else "(none)"


def _below_floor(mono: pd.DataFrame) -> str:
    """A reading aid for the monotone target (which counts every rise): how many rises end
    at or below the stricter setting's test floor, the violation a predictor with no
    gap at all shows on those test rows, and whether the training violation fell."""
    if mono.empty:
        return ""
    floor = mono[mono.violation_stricter <= mono.floor_stricter]
    fell = mono[mono.train_stricter < mono.train_looser]
    return (
        f"; {len(floor)} of them end at or below the test floor, and on {len(fell)} the "
        "training violation falls"
    )


def at_target(gaps: pd.DataFrame, target: pd.DataFrame) -> pd.DataFrame:
    """Each (table, notion, method) of ``run-target``: its bound at the target violation,
    against ExpGrad's error and the allowance of :func:`best_gaps`."""
    rows = []
    for r in target.itertuples():
        g = gaps[(gaps.table == r.table) & (gaps.notion == r.notion) & (gaps.method == r.method)]
        if g.empty:
            continue
        g = g.iloc[0]
        gap = r.error - g.expgrad_error
        reached = r.violation <= g.target_violation
        rows.append({
            "table": r.table, "notion": r.notion, "method": r.method, "bound": r.param,
            "seeds": r.seeds, "error": r.error, "error_sd": r.error_sd,
            "violation": r.violation, "violation_sd": r.violation_sd,
            "expgrad_error": g.expgrad_error, "gap": gap, "allowance": g.allowance,
            "grid_gap": g.gap, "ok": bool(reached and gap <= g.allowance),
        })  # fmt: skip
    return pd.DataFrame(rows)


def privacy_floor(gaps: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """(table, notion) cells where no private fit at epsilon = 1 (any estimator, any
    setting, at any violation) errs within the allowance of ExpGrad's error."""
    best = _at_one(summary).groupby(["table", "notion"]).error.min().rename("best_private")
    cells = gaps.groupby(["table", "notion"])[["expgrad_error", "allowance"]].first()
    cells = cells.join(best)
    return cells[cells.best_private > cells.expgrad_error + cells.allowance].reset_index()


def _target_section(gaps, target, summary) -> list[str]:
    at = at_target(gaps, target)
    floor = privacy_floor(gaps, summary)
    combined = gaps.merge(
        at[["table", "notion", "method", "ok"]],
        how="left",
        on=["table", "notion", "method"],
        suffixes=("", "_target"),
    )
    either = combined.ok | combined.ok_target.fillna(False).astype(bool)
    return [
        "", "## Reading aids: where the grid stops short, and where privacy alone costs more",
        "", "Not the target (the target above is judged on the issue's grid alone).", "",
        f"- Bound set at the target violation where the grid's loosest bound is below it "
        f"(`run-target`, {len(at)} (table, notion, estimator) cells): {int(at.ok.sum())} "
        f"within the allowance; over the grid and that setting together, "
        f"{int(either.sum())}/{len(gaps)} cells pass.",
        f"- Privacy floor: on {len(floor)} (table, notion) cells no private fit at "
        "epsilon = 1 (any estimator, any setting, any violation) errs within the allowance "
        "of ExpGrad's error"
        + (": " + ", ".join(f"{r.table} {r.notion}" for r in floor.itertuples())
           if len(floor) else "") + ".",
        "", _fmt(at),
    ]  # fmt: skip


def report(args) -> None:
    csv = Path(args.csv or RESULTS / "zoo.csv")
    df = pd.read_csv(csv)
    summary = summarise(df)
    gaps = best_gaps(summary)
    raco = check_raco(summary)
    above, mono = check_majority(summary), check_monotone(summary)
    lines = [
        f"# The zoo: {df.table.nunique()} tables, {len(df)} fits ({csv.name})", "",
        "Generated by `python experiments/zoo.py report`; hard predictions on held-out rows,",
        "means over seeds (sd beside). Definitions of the tables: `zoo_tables.md`.", "",
        "## Targets (epsilon = 1 grids; every epsilon for the majority check)", "",
        f"- {'PASS' if above.empty else 'FAIL'}: no private setting's mean error above the "
        f"majority class ({len(above)} cells above; {_beyond_sd(above)})",
        f"- {'PASS' if mono.empty else 'FAIL'}: violation monotone in each knob within the "
        f"seed sd ({len(mono)} steps rise{_below_floor(mono)})",
    ]  # fmt: skip
    if not raco.empty:
        lines += [
            f"- {'PASS' if raco.train_ok.all() else 'FAIL'}: RaCO training violation <= gamma"
            f" + 0.01 ({int(raco.train_ok.sum())}/{len(raco)} cells)",
            f"- {'PASS' if raco.test_ok.all() else 'FAIL'}: RaCO test violation <= gamma + "
            f"0.02 where every group has >= 1,000 training rows "
            f"({int((raco.test_checked & raco.test_ok).sum())}/{int(raco.test_checked.sum())})",
        ]
    if not gaps.empty:
        lines.append(
            f"- {'PASS' if gaps.ok.all() else 'FAIL'}: best setting at ExpGrad's violation "
            f"within 0.01 (>= 10k rows) / 0.02 of its error ({int(gaps.ok.sum())}/{len(gaps)})"
        )
        lines += [
            "",
            "## Worst table of each estimator (gap to ExpGrad(LR, 0.02))",
            "",
            _fmt(worst_tables(gaps)),
            "",
            "## Every table's gap",
            "",
            _fmt(gaps),
        ]
    target_csv = csv.with_name(csv.stem + "_target.csv")
    if not gaps.empty and target_csv.exists():
        lines += _target_section(gaps, summarise(pd.read_csv(target_csv)), summary)
    lines += [
        "",
        "## Cells above the majority class",
        "",
        _fmt(above),
        "",
        "## Knob steps where the violation rises",
        "",
        _fmt(mono),
    ]
    if not raco.empty:
        lines += ["", "## RaCO against its tolerance", "", _fmt(raco[[
            "table", "notion", "param", "train_violation", "train_violation_sd", "violation",
            "violation_sd", "min_group_train", "train_ok", "test_ok"]])]  # fmt: skip
    lines += ["", "## Every cell", "", _fmt(summary.drop(columns=["seconds"]))]
    out = csv.with_suffix(".md")
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:14]))
    print(f"wrote {out}")


# --------------------------------------------------------------------------- compare
def _read(source: str, csv_path: str) -> pd.DataFrame:
    if Path(source).is_file():
        return pd.read_csv(source)
    text = subprocess.run(
        ["git", "show", f"{source}:{csv_path}"], check=True, capture_output=True, text=True
    ).stdout
    return pd.read_csv(io.StringIO(text))


def compare_frames(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Cells of both runs whose mean error or violation got worse beyond the seed sd.

    A cell is worse when its mean rose by more than the larger of the two runs' seed sds
    (and by more than 0.002, below which nothing is reported).
    """
    a, b = summarise(old), summarise(new)
    both = a.merge(b, on=CELL, suffixes=("_old", "_new"))
    worse = []
    for _, r in both.iterrows():
        for metric in ("error", "violation"):
            rise = r[f"{metric}_new"] - r[f"{metric}_old"]
            sd = max(r[f"{metric}_sd_old"], r[f"{metric}_sd_new"])
            if rise > max(sd, 0.002):
                worse.append({**{k: r[k] for k in CELL}, "metric": metric,
                              "old": r[f"{metric}_old"], "new": r[f"{metric}_new"],
                              "rise": rise, "sd": sd})  # fmt: skip
    return pd.DataFrame(worse)


def compare(args) -> None:
    path = os.path.relpath(Path(args.csv or RESULTS / "zoo.csv").resolve(), _repo_root())
    worse = compare_frames(_read(args.old, path), _read(args.new, path))
    print(f"{len(worse)} cells worse beyond the seed sd ({args.old} -> {args.new})")
    if not worse.empty:
        print(_fmt(worse.sort_values(["table", "method", "notion"])))


def _repo_root() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], check=True, capture_output=True, text=True
    ).stdout.strip()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--tables", nargs="*")
    p.add_argument("--methods", nargs="*", choices=[*PRIVATE, *ANCHORS])
    p.add_argument("--seeds", nargs="*", type=int)
    p.add_argument("--notions", nargs="*", choices=NOTIONS)
    p.add_argument(
        "--stages", nargs="*", choices=("grid", "epsilons"), default=("grid", "epsilons")
    )
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--csv")
    p = sub.add_parser("run-target")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--csv", help="default results/zoo_target.csv")
    p.add_argument("--grid-csv", help="the grid's results (default results/zoo.csv)")
    p = sub.add_parser("report")
    p.add_argument("--csv")
    p = sub.add_parser("compare")
    p.add_argument("old", help="a commit or a CSV path")
    p.add_argument("new", help="a commit or a CSV path")
    p.add_argument("--csv", help="the CSV's path inside the repository (default results/zoo.csv)")
    args = parser.parse_args(argv)
    {"run": run, "run-target": run_target, "report": report, "compare": compare}[args.command](args)


if __name__ == "__main__":
    main()
