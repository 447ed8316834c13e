"""FairModelSearch on the zoo (issue 36): a stated bound, a total epsilon, a certified model.

For each table, notion, bound and seed: the zoo's 75/25 split (``zoo.split``); one
``FairModelSearch(notion, bound, epsilon=1)`` fitted on the training rows (which it
splits into its own training, validation and certification parts); hard predictions
of the held-out test rows, which the search never saw. Recorded per search: the
selected family and knob, whether it qualified, the certificate (point and interval
of the violation and the accuracy), the test error and violation, whether the
certificate's interval covers the test violation, the majority class's error.

Bounds: 0.05 and the table's floor + 0.02 (``floor``: the mean test-split violation
floor of the zoo's ExpGrad anchor on that table and notion, from ``results/zoo.csv``).

Commands (from the repository root)::

    python experiments/fair_search_zoo.py run [--tables hi german] [--seeds 0 1] [--jobs 1]
    python experiments/fair_search_zoo.py report    # results/fair_search_zoo.md

``report`` compares each cell with the zoo's hindsight best: the most accurate single
candidate (each estimator's grid at full epsilon = 1 in ``results/zoo.csv``) whose mean
test violation meets the bound.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from _results_csv import append, completed  # noqa: E402

RESULTS = Path(__file__).parent / "results"
CSV = RESULTS / "fair_search_zoo.csv"
KEY = ("table", "notion", "bound", "seed")
FIELDS = [
    *KEY, "family", "knob", "qualified", "inner_epsilon", "epsilon_spent",
    "cert_violation", "cert_lower", "cert_upper", "cert_accuracy", "cert_meets_bound",
    "test_error", "test_violation", "covered", "majority_error", "fit_seconds", "basis",
    "strategy",
]  # fmt: skip
NOTIONS = ("demographic_parity", "equalized_odds")
SEEDS = (0, 1, 2, 3, 4)


def zoo_rows() -> pd.DataFrame:
    """The zoo's fits: ``zoo.csv`` and, if present, the held-out tables' ``zoo_holdout.csv``."""
    files = [RESULTS / "zoo.csv", RESULTS / "zoo_holdout.csv"]
    return pd.concat([pd.read_csv(f) for f in files if f.exists()], ignore_index=True)


def bounds(table: str, notion: str) -> tuple[float, ...]:
    """0.05 and the table's floor + 0.02 (the zoo's ExpGrad anchor's mean test floor)."""
    zoo = zoo_rows()
    rows = zoo[(zoo.table == table) & (zoo.notion == notion) & (zoo.method == "expgrad")]
    floor = float(rows.test_floor.mean()) if len(rows) else 0.0
    return 0.05, round(floor + 0.02, 3)


def fit_one(key) -> dict:
    import torch
    import zoo

    from skfairdp.fairness.metrics import demographic_parity_violation, equalized_odds_violation
    from skfairdp.model_selection import FairModelSearch

    torch.set_num_threads(1)
    table, notion, bound, seed = key
    Xtr, Xte, ytr, yte, s_tr, s_te = zoo.split(table, seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = FairModelSearch(notion, bound, epsilon=1.0, random_state=seed)
        search.fit(Xtr, ytr, sensitive_features=s_tr)
        pred = search.predict(Xte, sensitive_features=s_te)
    violation = {
        "demographic_parity": demographic_parity_violation,
        "equalized_odds": equalized_odds_violation,
    }[notion](yte, pred, sensitive_features=s_te)
    cert = search.certificate_
    lower, upper = cert.violation_interval
    majority = np.bincount(ytr).argmax()
    return dict(
        zip(KEY, key), family=search.best_params_["family"], knob=search.best_params_["knob"],
        qualified=search.qualified_, inner_epsilon=search.inner_epsilon_,
        epsilon_spent=search.privacy_spent_.epsilon, cert_violation=cert.violation,
        cert_lower=lower, cert_upper=upper, cert_accuracy=cert.accuracy,
        cert_meets_bound=cert.meets_bound, test_error=float(np.mean(pred != yte)),
        test_violation=float(violation), covered=bool(lower <= violation <= upper),
        majority_error=float(np.mean(yte != majority)),
        fit_seconds=time.perf_counter() - start,
        basis=getattr(search, "selection_basis_", ""),
        strategy=getattr(search, "strategy_", "search"),
    )  # fmt: skip


def run(args) -> None:
    from zoo_tables import ZOO

    done = completed(Path(args.csv), KEY)
    keys = [
        (table, notion, bound, seed)
        for seed in args.seeds
        for table in args.tables or ZOO
        for notion in args.notions
        for bound in bounds(table, notion)
        if tuple(map(str, (table, notion, bound, seed))) not in done
    ]
    print(f"fair_search_zoo: {len(keys)} searches -> {args.csv}", flush=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        for i, row in enumerate(pool.map(fit_one, keys, chunksize=1), 1):
            append(Path(args.csv), FIELDS, row)
            print(
                f"[{i}/{len(keys)} {time.perf_counter() - start:6.0f}s] {row['table']:18s} "
                f"{row['notion'][:2]} b={row['bound']:<5} seed={row['seed']} "
                f"{row['family']}({row['knob']}) q={row['qualified']} "
                f"err={row['test_error']:.3f} viol={row['test_violation']:.3f} "
                f"cert=[{row['cert_lower']:.3f},{row['cert_upper']:.3f}] "
                f"maj={row['majority_error']:.3f} ({row['fit_seconds']:.0f}s)",
                flush=True,
            )


#: the zoo's private estimators a search without the group at prediction time can pick
#: (DPThresholdOptimizer needs the group; expgrad and the thresholds are not private)
HINDSIGHT_METHODS = ("dpfermi", "raco", "cgoo")


def hindsight(zoo: pd.DataFrame, table: str, notion: str, bound: float) -> float:
    """The most accurate single candidate (mean over seeds, epsilon = 1) meeting the bound.

    Among ``HINDSIGHT_METHODS``' every knob value in the zoo (a larger grid than the
    search's default space), the search's setting (``group_at_predict=False``).
    """
    rows = zoo[(zoo.table == table) & (zoo.notion == notion) & (zoo.epsilon == 1.0)]
    rows = rows[rows.method.isin(HINDSIGHT_METHODS)]
    cells = rows.groupby(["method", "param"])[["test_error", "test_violation"]].mean()
    ok = cells[cells.test_violation <= bound]
    return float(ok.test_error.min()) if len(ok) else float("nan")


def check_targets(df: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """Issue 36's four targets, as PASS/FAIL lines (searches and cells as in the report)."""
    feasible = cells.dropna(subset=["hindsight_error"])[["table", "notion", "bound"]]
    searches = df.merge(feasible, on=["table", "notion", "bound"])
    meets = float(np.mean(searches.test_violation <= searches.bound)) if len(searches) else 1.0
    covered = float(df.covered.mean())
    excess = cells.dropna(subset=["excess_over_hindsight"])
    worst = excess.loc[excess.excess_over_hindsight.idxmax()]
    above = cells.loc[cells.above_majority.idxmax()]

    def line(ok: bool, text: str) -> str:
        return f"- {'PASS' if ok else 'FAIL'}: {text}"

    return [
        line(meets >= 0.9, f"meets the bound on test in {meets:.2f} of {len(searches)} searches "
             "where a candidate at full epsilon meets it (target 0.90)"),
        line(covered >= 0.9, f"the certificate covers the test violation in {covered:.2f} of "
             f"{len(df)} searches (target 0.90)"),
        line(worst.excess_over_hindsight <= 0.01, "error within 0.01 of the hindsight best: "
             f"{int((excess.excess_over_hindsight <= 0.01).sum())} of {len(excess)} cells; worst "
             f"{worst.excess_over_hindsight:+.3f} ({worst.table}, {worst.notion}, bound "
             f"{worst.bound:g})"),
        line(above.above_majority <= 0, "never above the majority class: worst "
             f"{above.above_majority:+.4f} ({above.table}, {above.notion}, bound {above.bound:g})"),
    ]  # fmt: skip


def report(args) -> None:
    df = pd.read_csv(args.csv)
    zoo = zoo_rows()
    cells = (
        df.groupby(["table", "notion", "bound"])
        .agg(seeds=("seed", "size"), error=("test_error", "mean"),
             violation=("test_violation", "mean"), meets=("test_violation",
             lambda v: float(np.mean(v <= df.loc[v.index, "bound"]))),
             covered=("covered", "mean"), qualified=("qualified", "mean"),
             majority=("majority_error", "mean"), seconds=("fit_seconds", "mean"))
        .reset_index()
    )  # fmt: skip
    cells["hindsight_error"] = [
        hindsight(zoo, t, n, b) for t, n, b in zip(cells.table, cells.notion, cells.bound)
    ]
    cells["excess_over_hindsight"] = cells.error - cells.hindsight_error
    cells["above_majority"] = cells.error - cells.majority
    targets = check_targets(df, cells)
    basis = df.basis.fillna("").value_counts() if "basis" in df else pd.Series(dtype=int)
    lines = [
        "# FairModelSearch on the zoo (issue 36)",
        "",
        "Generated by `python experiments/fair_search_zoo.py report`: total epsilon = 1, hard",
        "predictions of held-out test rows the search never saw; `meets`: share of seeds whose",
        "test violation is within the bound; `covered`: share whose certificate interval covers",
        "the test violation; `hindsight_error`: the most accurate single zoo candidate at full",
        "epsilon = 1 whose mean test violation meets the bound.",
        "",
        f"- searches: {len(df)}; cells: {len(cells)}; seeds: "
        f"{', '.join(f'{k}: {v}' for k, v in df.groupby('seed').size().items())} searches",
        f"- qualified: {int(df.qualified.sum())} of {len(df)}; the majority class returned in "
        f'{int((df.family == "majority").sum())} (doc/model_selection.md, "Where it cannot '
        'qualify": at epsilon = 100 nothing qualifies on the small tables either)',
        f"- meets the bound on test: {df.eval('test_violation <= bound').mean():.2f} of searches",
        f"- certificate covers the test violation: {df.covered.mean():.2f} of searches",
        f"- worst excess over hindsight: {cells.excess_over_hindsight.max():.3f}",
        f"- worst error above the majority class: {cells.above_majority.max():+.3f}",
        "- why the selected run won (`selection_basis_`): "
        + (", ".join(f"{k}: {v}" for k, v in basis.items()) or "not recorded"),
        "",
        "## Issue 36's targets",
        "",
        *targets,
        "",
        cells.round(3).to_markdown(index=False),
        "",
    ]
    out = Path(args.csv).with_suffix(".md")
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tables", nargs="*")
    r.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    r.add_argument("--notions", nargs="*", default=list(NOTIONS), choices=NOTIONS)
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--csv", default=str(CSV))
    p = sub.add_parser("report")
    p.add_argument("--csv", default=str(CSV))
    args = parser.parse_args(argv)
    {"run": run, "report": report}[args.command](args)


if __name__ == "__main__":
    main()
