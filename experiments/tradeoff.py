"""Accuracy-fairness trade-off curves of DPFermiClassifier, beside the published ones.

Two experiments (logistic regression, every estimator parameter at its default
except ``fairness``, ``fairness_weight``, ``epsilon``, ``delta`` and
``random_state``):

``adult-dp``
    UCI Adult (``load_adult(preprocess=True)``, sensitive attribute ``sex``),
    demographic parity, a lambda sweep at each epsilon (default ``inf`` and 1),
    delta = 1e-5, privacy_unit = "record". Checks the targets listed in
    :data:`DP_TARGETS` and writes PASS/FAIL lines.
``eo``
    Equalized odds on Adult and Credit Card (``load_credit_card(preprocess=True)``),
    epsilon in {0.5, 1, 3}, one lambda grid per dataset.

Protocol: for seed ``s`` the data are split 75/25 by
``train_test_split(..., test_size=0.25, random_state=s)`` (``--split seed``, the
default: the split varies with the seed) or with a fixed ``random_state``
(``--split fixed --split-state 100``, the paper's protocol where only
initialisation, sampling and noise vary); the estimator gets ``random_state=s``.
Errors and violations are measured on the test split with hard predictions.

Every fit is appended to ``<out>/<name>.csv`` as soon as it finishes (so
``--resume`` continues an interrupted run); then ``<name>.md`` (aggregated
table, published points, target checks, the command line) and ``<name>.png``
are written. ``--report-only`` re-renders the markdown and plot from the CSV.

Examples::

    python experiments/tradeoff.py adult-dp --seeds 0 1 2 3 4
    python experiments/tradeoff.py eo --seeds 0 1 2
    python experiments/tradeoff.py adult-dp --seeds 0 --lambdas 0 1 4 --out /tmp/pilot
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import platform
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anchor import find_anchor_file, load_anchor, select  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "experiments" / "results"

DELTA = 1e-5
DP_LAMBDAS = (0, 1, 2, 4, 8, 12, 16, 24, 32)
DP_EPSILONS = ("inf", "1")
EO_EPSILONS = ("0.5", "1", "3")
EO_LAMBDAS = {"adult": (0, 2, 4, 8, 16, 32), "credit-card": (0, 1, 2, 4, 8, 16)}

# (epsilon, violation threshold, error threshold) for "the curve reaches violation
# <= v at error <= e", on the seed-mean per lambda; plus the lambda=0 start.
DP_TARGETS = ((math.inf, 0.01, 0.19), (1.0, 0.02, 0.19))
DP_START = (math.inf, 0.155, 0.01)  # epsilon, expected lambda=0 error, tolerance

FIELDS = [
    "experiment",
    "dataset",
    "fairness",
    "seed",
    "split_state",
    "eps",
    "delta",
    "lambda",
    "test_error",
    "test_violation",
    "test_dp_violation",
    "test_eo_violation",
    "test_positive_rate",
    "eps_spent",
    "delta_spent",
    "noise_multiplier",
    "dual_noise_multiplier",
    "n_steps",
    "fit_seconds",
    "n_train",
    "n_test",
    "lr",
    "lr_dual",
    "max_epochs",
    "batch_size",
    "dual_bound",
    "skfairdp_commit",
]

# Columns of CSVs written before DPFermiClassifier's lr_w/w_radius were renamed (same
# positions in FIELDS, so --resume may append to such a file; read back renamed).
LEGACY_COLUMNS = {"lr_w": "lr_dual", "w_radius": "dual_bound"}

DATASET_LABEL = {"adult": "Adult", "credit-card": "Credit Card"}
CONSTANT = 0.005  # predicted-positive rate within this of 0 or 1: a constant classifier


def _setup_runtime():
    torch.set_num_threads(1)
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def load_dataset(name):
    from skfairdp.datasets import load_adult, load_credit_card

    loader = {"adult": load_adult, "credit-card": load_credit_card}[name]
    bunch = loader(preprocess=True, as_frame=False)
    return (
        np.ascontiguousarray(bunch.data, dtype=np.float32),
        np.asarray(bunch.target),
        np.asarray(bunch.sensitive_features),
    )


def fit_one(data, *, experiment, dataset, fairness, seed, split_state, eps, lam, commit=""):
    """Fit one DPFermiClassifier and return its CSV row."""
    from sklearn.model_selection import train_test_split

    from skfairdp.fermi import DPFermiClassifier
    from skfairdp.metrics import demographic_parity_violation, equalized_odds_violation

    X, y, s = data
    Xtr, Xte, ytr, yte, s_tr, s_te = train_test_split(
        X, y, s, test_size=0.25, random_state=split_state
    )
    clf = DPFermiClassifier(
        fairness=fairness,
        fairness_weight=lam,
        epsilon=eps,
        delta=DELTA,
        privacy_unit="record",
        random_state=seed,
    )
    start = time.perf_counter()
    clf.fit(Xtr, ytr, sensitive_features=s_tr)
    seconds = time.perf_counter() - start
    pred = clf.predict(Xte)
    dp = demographic_parity_violation(yte, pred, sensitive_features=s_te)
    eo = equalized_odds_violation(yte, pred, sensitive_features=s_te)
    return {
        "experiment": experiment,
        "dataset": dataset,
        "fairness": fairness,
        "seed": seed,
        "split_state": split_state,
        "eps": eps,
        "delta": DELTA if not math.isinf(eps) else 0.0,
        "lambda": lam,
        "test_error": float(np.mean(pred != yte)),
        "test_violation": dp if fairness == "demographic_parity" else eo,
        "test_dp_violation": dp,
        "test_eo_violation": eo,
        "test_positive_rate": float(np.mean(pred == clf.classes_[-1])),
        "eps_spent": float(clf.privacy_spent_.epsilon),
        "delta_spent": float(clf.privacy_spent_.delta),
        "noise_multiplier": float(clf.noise_multiplier_),
        "dual_noise_multiplier": float(clf.dual_noise_multiplier_),
        "n_steps": int(clf.n_steps_),
        "fit_seconds": round(seconds, 3),
        "n_train": len(ytr),
        "n_test": len(yte),
        "lr": clf.lr,
        # the values the fit used ("auto" resolved)
        "lr_dual": clf.lr_dual_,
        "max_epochs": clf.max_epochs_,
        "batch_size": clf.batch_size_,
        "dual_bound": clf.dual_bound,
        "skfairdp_commit": commit,
    }


def _key(row):
    return (row["dataset"], float(row["eps"]), float(row["lambda"]), int(row["seed"]))


def run_grid(csv_path, jobs, *, resume):
    """Run the ``jobs`` (dicts of fit_one kwargs), appending rows to ``csv_path``."""
    done = set()
    if resume and csv_path.exists():
        done = {_key(r) for r in pd.read_csv(csv_path).to_dict("records")}
    elif csv_path.exists():
        csv_path.unlink()
    todo = [j for j in jobs if _key({**j, "lambda": j["lam"]}) not in done]
    print(f"{len(jobs)} fits planned, {len(jobs) - len(todo)} already in {csv_path}", flush=True)
    new_file = not csv_path.exists()
    cache = {}
    commit = library_commit()
    started = time.perf_counter()
    with open(csv_path, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        for i, job in enumerate(todo, 1):
            if job["dataset"] not in cache:
                cache[job["dataset"]] = load_dataset(job["dataset"])
            row = fit_one(cache[job["dataset"]], commit=commit, **job)
            writer.writerow(row)
            handle.flush()
            print(
                f"[{i}/{len(todo)} {time.perf_counter() - started:6.0f}s] {row['dataset']} "
                f"eps={row['eps']} lam={row['lambda']} seed={row['seed']}: "
                f"err={row['test_error']:.4f} viol={row['test_violation']:.4f} "
                f"eps_spent={row['eps_spent']:.4f} ({row['fit_seconds']:.1f}s)",
                flush=True,
            )


# --------------------------------------------------------------------------- #
# Aggregation and report
# --------------------------------------------------------------------------- #
def aggregate(df):
    df = df.assign(
        constant=(df["test_positive_rate"] <= CONSTANT) | (df["test_positive_rate"] >= 1 - CONSTANT)
    )
    g = df.groupby(["dataset", "eps", "lambda"], sort=True)
    out = g.agg(
        n_seeds=("seed", "nunique"),
        err_mean=("test_error", "mean"),
        err_std=("test_error", "std"),
        viol_mean=("test_violation", "mean"),
        viol_std=("test_violation", "std"),
        dp_mean=("test_dp_violation", "mean"),
        eo_mean=("test_eo_violation", "mean"),
        pos_rate=("test_positive_rate", "mean"),
        n_constant=("constant", "sum"),
        eps_spent_max=("eps_spent", "max"),
        delta_spent=("delta_spent", "max"),
        sigma=("noise_multiplier", "mean"),
        sigma_w=("dual_noise_multiplier", "mean"),
        fit_s=("fit_seconds", "mean"),
    ).reset_index()
    return out.fillna({"err_std": 0.0, "viol_std": 0.0})


def _fmt_eps(eps):
    return "∞" if math.isinf(eps) else f"{eps:g}"


def _fmt_sigma(x):
    return "—" if math.isinf(x) else f"{x:.3f}"


def best_at(agg_rows, threshold):
    """(error, lambda, violation) of the lowest-error row with mean violation <= threshold."""
    ok = agg_rows[agg_rows["viol_mean"] <= threshold]
    if ok.empty:
        return None
    r = ok.loc[ok["err_mean"].idxmin()]
    return float(r["err_mean"]), float(r["lambda"]), float(r["viol_mean"]), _constant(r)


def _constant(r):
    """Some seed of this lambda collapsed to a constant classifier."""
    return r["n_constant"] > 0


def best_published(points, threshold):
    ok = [p for p in points if p.violation <= threshold]
    return min(ok, key=lambda p: p.error) if ok else None


def _hit_cell(hit):
    if hit is None:
        return "not reached"
    return f"{hit[0]:.4f} (λ={hit[1]:g}" + (", collapsed seeds)" if hit[3] else ")")


def constant_note(agg_rows):
    const = agg_rows[agg_rows["n_constant"] > 0]
    if const.empty:
        return None
    parts = [
        f"λ = {r['lambda']:g}: {int(r['n_constant'])}/{int(r['n_seeds'])}"
        for _, r in const.iterrows()
    ]
    return (
        "seeds collapsed to a constant classifier (test predicted-positive rate "
        f"≤ {CONSTANT} or ≥ {1 - CONSTANT}) at " + "; ".join(parts)
    )


def _our_table(rows, notion):
    vname = "DP viol" if notion == "dp" else "EO viol"
    other = "EO viol" if notion == "dp" else "DP viol"
    lines = [
        f"| λ | seeds | test error (mean ± std) | {vname} (mean ± std) | {other} (mean) "
        "| pred. positive rate | ε spent (max) | δ | σ_θ | σ_W | fit s |",
        "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in rows.iterrows():
        other_v = r["eo_mean"] if notion == "dp" else r["dp_mean"]
        lines.append(
            f"| {r['lambda']:g} | {int(r['n_seeds'])} | {r['err_mean']:.4f} ± {r['err_std']:.4f} "
            f"| {r['viol_mean']:.4f} ± {r['viol_std']:.4f} | {other_v:.4f} | {r['pos_rate']:.3f} "
            f"| {_fmt_eps(r['eps_spent_max']) if not math.isinf(r['eps_spent_max']) else '∞'} "
            f"| {r['delta_spent']:g} | {_fmt_sigma(r['sigma'])} | {_fmt_sigma(r['sigma_w'])} "
            f"| {r['fit_s']:.1f} |"
        )
    return lines


def _published_lines(points, notion, dataset, eps):
    lines = []
    methods = (
        ("DP-FERMI", "Tran2021a", "Tran2021b")
        if notion == "dp"
        else ("DP-FERMI", "Jagielski2019", "Tran2021b")
    )
    for m in methods:
        pts = select(points, method=m, dataset=dataset, notion=notion, eps=eps)
        if not pts:
            continue
        body = "; ".join(
            (f"λ={p.lam:g}: " if p.lam is not None else "")
            + f"{p.error:.4f} / {p.violation:.4f}"
            + (f" (DP {p.extra['DP']:.4f}, EO {p.extra['EO']:.4f})" if "DP" in p.extra else "")
            for p in pts
        )
        lines.append(f"- **{pts[0].method}** (err / viol): {body}")
    return lines


def library_commit():
    """Short HEAD commit, with a mark when skfairdp/ differs from it (read at start)."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "skfairdp"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return commit + ("+modified" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _header(title, command, df, csv_name, png_name):
    commits = ", ".join(sorted(df["skfairdp_commit"].astype(str).unique()))
    settings = (
        df[["lr", "lr_dual", "max_epochs", "batch_size", "dual_bound"]]
        .astype(str)
        .drop_duplicates()
        .to_dict("records")
    )
    import sklearn

    split = sorted(df["split_state"].unique())
    seeds = sorted(df["seed"].unique())
    split_note = (
        "the split varies with the seed (`random_state=seed`)"
        if list(split) == list(seeds)
        else f"fixed split `random_state={split}`"
    )
    return [
        f"# {title}",
        "",
        "Reproduce (from the repository root):",
        "",
        "```",
        command,
        "```",
        "",
        f"- Data: CSV of every fit `{csv_name}`, plot `{png_name}`.",
        f"- Protocol: 75/25 `train_test_split(test_size=0.25)`, {split_note}; estimator "
        f"`DPFermiClassifier(fairness=..., fairness_weight=λ, epsilon=ε, delta={DELTA:g}, "
        f"privacy_unit='record', random_state=seed)`, all other parameters default "
        "(logistic regression). Test error = 1 − accuracy and violations on hard predictions "
        f"of the test split. Seeds: {', '.join(map(str, seeds))}. Means/stds over seeds "
        "(std with ddof=1).",
        f"- Code: skfairdp at {commits} (HEAD when the fits ran; `+modified`: the working "
        "tree's skfairdp/ differed from it). Estimator defaults in effect (lr, lr_dual, "
        f"max_epochs, batch_size, dual_bound): {settings}; torch {torch.__version__}, scikit-learn "
        f"{sklearn.__version__}, Python {platform.python_version()}; 1 torch thread; "
        f"{len(df)} fits, {df['fit_seconds'].sum() / 60:.1f} min of fitting "
        "(shared 2-core machine, timings are noisy).",
        "- Published points: `experiments/results/tradeoff_anchor-dpfermi-curves.txt` (copy of "
        "the research anchor file; authors' result files, 15 seeds, fixed split, their own "
        "hyper-parameters: batch 1024, 200 epochs, δ = 1/n²). Their λ is not on our scale.",
        "",
    ]


def report_dp(df, points, command, out, name, notes=()):
    agg = aggregate(df)
    lines = _header(
        "DPFermiClassifier on Adult, demographic parity: error vs violation",
        command,
        df,
        f"{name}.csv",
        f"{name}.png",
    )
    lines += [f"- Note: {n}" for n in notes] + ([""] if notes else [])
    lines += ["## Targets (seed-mean per λ)", ""]
    eps0, expected, tol = DP_START
    start = agg[(agg["eps"] == eps0) & (agg["lambda"] == 0)]
    if not start.empty:
        e = float(start["err_mean"].iloc[0])
        ok = abs(e - expected) <= tol
        lines.append(
            f"- {'PASS' if ok else 'FAIL'}: ε = {_fmt_eps(eps0)}, λ = 0 starts near error "
            f"{expected} (±{tol}): error {e:.4f} (DP viol "
            f"{float(start['viol_mean'].iloc[0]):.4f}); published DP-FERMI 0.1555 / 0.1980."
        )
    for eps, vmax, emax in DP_TARGETS:
        rows = agg[agg["eps"] == eps]
        if rows.empty:
            continue
        hit = best_at(rows, vmax)
        if hit is not None and hit[0] <= emax:
            lines.append(
                f"- PASS: ε = {_fmt_eps(eps)} reaches DP violation ≤ {vmax} at test error ≤ "
                f"{emax}: λ = {hit[1]:g} gives error {hit[0]:.4f}, violation {hit[2]:.4f}."
            )
        else:
            sound = rows[rows["n_constant"] == 0]
            lo = sound.loc[sound["viol_mean"].idxmin()] if not sound.empty else None
            detail = (
                f"the lowest error with violation ≤ {vmax} is {hit[0]:.4f} (λ = {hit[1]:g}"
                + (", seeds collapsed to a constant classifier" if hit[3] else "")
                + f"), {hit[0] - emax:+.4f} over the error bound"
                if hit
                else f"no λ has mean violation ≤ {vmax}"
            )
            if lo is not None:
                detail += (
                    f"; without collapsed seeds the lowest mean violation is "
                    f"{lo['viol_mean']:.4f} ± {lo['viol_std']:.4f} (λ = {lo['lambda']:g}, error "
                    f"{lo['err_mean']:.4f}), {lo['viol_mean'] - vmax:+.4f} over the violation bound"
                )
            lines.append(
                f"- FAIL: ε = {_fmt_eps(eps)} does not reach DP violation ≤ {vmax} at test "
                f"error ≤ {emax}: {detail}."
            )
    for eps in sorted(agg["eps"].unique(), key=lambda e: -e):
        note = constant_note(agg[agg["eps"] == eps])
        if note:
            lines.append(f"- Note: ε = {_fmt_eps(eps)}: {note}.")
    private = df[~np.isinf(df["eps"])]
    if not private.empty:
        over = private[private["eps_spent"] > private["eps"] * (1 + 1e-9)]
        lines.append(
            f"- {'PASS' if over.empty else 'FAIL'}: every private fit spends ε ≤ target "
            f"(max ε_spent / ε = {(private['eps_spent'] / private['eps']).max():.6f}, δ = "
            f"{private['delta_spent'].max():g}); {len(over)} fits over."
        )
    lines.append("")
    for eps in sorted(agg["eps"].unique(), key=lambda e: -e):
        rows = agg[agg["eps"] == eps]
        lines += [f"## ε = {_fmt_eps(eps)}", "", "Ours:", ""]
        lines += _our_table(rows, "dp")
        lines += ["", "Published (anchor file), adult, same ε:", ""]
        lines += _published_lines(points, "dp", "adult", eps) or ["- none"]
        lines += ["", "Lowest mean test error at which the mean DP violation is ≤ v:", ""]
        lines += [
            "| v | ours | DP-FERMI (published) | Tran 2021a | PFLD |",
            "|---|---|---|---|---|",
        ]
        for v in (0.1, 0.05, 0.02, 0.01):
            cells = [_hit_cell(best_at(rows, v))]
            for m in ("DP-FERMI", "Tran2021a", "Tran2021b"):
                curve = select(points, method=m, dataset="adult", notion="dp", eps=eps)
                p = best_published(curve, v)
                cells.append(
                    (f"{p.error:.4f}" + (f" (λ={p.lam:g})" if p.lam is not None else ""))
                    if p
                    else "not reached"
                )
            lines.append(f"| {v} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [f"![trade-off]({name}.png)", ""]
    (out / f"{name}.md").write_text("\n".join(lines), encoding="utf-8")
    return agg


def report_eo(df, points, command, out, name, notes=()):
    agg = aggregate(df)
    lines = _header(
        "DPFermiClassifier, equalized odds: error vs EO violation (Adult, Credit Card)",
        command,
        df,
        f"{name}.csv",
        f"{name}.png",
    )
    lines += [f"- Note: {n}" for n in notes] + ([""] if notes else [])
    lines += [
        "## Summary: lowest mean test error at which the mean EO violation is ≤ v",
        "",
        "| dataset | ε | v | ours | DP-FERMI (published) | Jagielski 2019 | PFLD (EO obj.) |",
        "|---|---:|---:|---|---|---|---|",
    ]
    for dataset in sorted(agg["dataset"].unique()):
        for eps in sorted(agg[agg["dataset"] == dataset]["eps"].unique()):
            rows = agg[(agg["dataset"] == dataset) & (agg["eps"] == eps)]
            for v in (0.05, 0.02):
                cells = [_hit_cell(best_at(rows, v))]
                for m in ("DP-FERMI", "Jagielski2019", "Tran2021b"):
                    p = best_published(
                        select(points, method=m, dataset=dataset, notion="eo", eps=eps), v
                    )
                    cells.append(
                        (f"{p.error:.4f}" + (f" (λ={p.lam:g})" if p.lam is not None else ""))
                        if p
                        else "not reached"
                    )
                lines.append(
                    f"| {DATASET_LABEL.get(dataset, dataset)} | {_fmt_eps(eps)} | {v} | "
                    + " | ".join(cells)
                    + " |"
                )
    private = df[~np.isinf(df["eps"])]
    over = private[private["eps_spent"] > private["eps"] * (1 + 1e-9)]
    lines += [
        "",
        f"- {'PASS' if over.empty else 'FAIL'}: every fit spends ε ≤ target (max ε_spent / ε = "
        f"{(private['eps_spent'] / private['eps']).max():.6f}, δ = "
        f"{private['delta_spent'].max():g}).",
    ]
    for dataset in sorted(agg["dataset"].unique()):
        base = df[df["dataset"] == dataset]
        lines += ["", f"## {DATASET_LABEL.get(dataset, dataset)}", ""]
        lines.append(
            f"Trivial classifiers: predicting all-negative has test error ≈ "
            f"{_positive_rate(dataset):.4f} and EO violation 0."
        )
        for eps in sorted(base["eps"].unique()):
            rows = agg[(agg["dataset"] == dataset) & (agg["eps"] == eps)]
            lines += ["", f"### ε = {_fmt_eps(eps)}", "", "Ours:", ""]
            lines += _our_table(rows, "eo")
            note = constant_note(rows)
            if note:
                lines += ["", f"Note: {note}."]
            lines += ["", "Published (anchor file), same dataset and ε:", ""]
            lines += _published_lines(points, "eo", dataset, eps) or ["- none"]
    lines += ["", f"![trade-off]({name}.png)", ""]
    (out / f"{name}.md").write_text("\n".join(lines), encoding="utf-8")
    return agg


def _positive_rate(dataset):
    _, y, _ = load_dataset(dataset)
    return float(np.mean(y == np.max(y)))


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #
def _eps(text):
    return math.inf if text.lower() in ("inf", "infinity", "none") else float(text)


def build_jobs(args):
    split = (lambda s: s) if args.split == "seed" else (lambda s: args.split_state)
    jobs = []
    if args.experiment == "adult-dp":
        specs = [("adult", "demographic_parity", args.lambdas or DP_LAMBDAS)]
        epsilons = args.epsilons or DP_EPSILONS
    else:
        grids = {
            "adult": args.adult_lambdas or EO_LAMBDAS["adult"],
            "credit-card": args.credit_lambdas or EO_LAMBDAS["credit-card"],
        }
        specs = [(d, "equalized_odds", grids[d]) for d in args.datasets]
        epsilons = args.epsilons or EO_EPSILONS
    for dataset, fairness, lambdas in specs:
        for eps in map(_eps, epsilons):
            for lam in map(float, lambdas):
                for seed in args.seeds:
                    jobs.append(
                        dict(
                            experiment=args.experiment,
                            dataset=dataset,
                            fairness=fairness,
                            seed=seed,
                            split_state=split(seed),
                            eps=eps,
                            lam=lam,
                        )
                    )
    return jobs


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("experiment", choices=["adult-dp", "eo"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--epsilons", nargs="+", help="'inf' or numbers (adult-dp: inf 1; eo: 0.5 1 3)"
    )
    parser.add_argument("--lambdas", type=float, nargs="+", help=f"adult-dp: {DP_LAMBDAS}")
    parser.add_argument("--adult-lambdas", type=float, nargs="+", help="eo, Adult grid")
    parser.add_argument("--credit-lambdas", type=float, nargs="+", help="eo, Credit Card grid")
    parser.add_argument(
        "--datasets", nargs="+", default=["adult", "credit-card"], choices=["adult", "credit-card"]
    )
    parser.add_argument("--split", choices=["seed", "fixed"], default="seed")
    parser.add_argument("--split-state", type=int, default=100, help="with --split fixed")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--name", help="file stem (default tradeoff_adult_dp / eo)")
    parser.add_argument("--anchor", help="anchor file (default: see experiments/anchor.py)")
    parser.add_argument("--resume", action="store_true", help="keep fits already in the CSV")
    parser.add_argument("--report-only", action="store_true", help="re-render md/png from CSV")
    parser.add_argument(
        "--command", help="command line to print in the markdown (default: this one)"
    )
    parser.add_argument("--note", action="append", default=[], help="extra bullet in the md")
    args = parser.parse_args(argv)
    _setup_runtime()

    name = args.name or ("tradeoff_adult_dp" if args.experiment == "adult-dp" else "eo")
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / f"{name}.csv"
    if not args.report_only:
        run_grid(csv_path, build_jobs(args), resume=args.resume)
    df = pd.read_csv(csv_path).rename(columns=LEGACY_COLUMNS)
    points = load_anchor(args.anchor)
    print(f"anchor: {find_anchor_file(args.anchor)} ({len(points)} points)")
    command = args.command or "python experiments/tradeoff.py " + shlex.join(argv)

    from plot_tradeoff import plot_dp, plot_eo

    if args.experiment == "adult-dp":
        agg = report_dp(df, points, command, args.out, name, args.note)
        plot_dp(agg, points, args.out / f"{name}.png")
    else:
        agg = report_eo(df, points, command, args.out, name, args.note)
        plot_eo(agg, points, args.out / f"{name}.png")
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(agg[["dataset", "eps", "lambda", "n_seeds", "err_mean", "viol_mean", "viol_std"]])
    print(f"wrote {csv_path}, {args.out / (name + '.md')}, {args.out / (name + '.png')}")


if __name__ == "__main__":
    main()
