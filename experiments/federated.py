"""FederatedDPFermiClassifier (SteFFLe) benchmarks: trade-offs, silos, speed, Flower.

One command runs the fits (appending each to ``<out>/federated.csv`` as it finishes;
``--resume`` keeps the rows already there) and writes ``federated.md``::

    python experiments/federated.py --seeds 0 1 2 3 4                # the full grid
    python experiments/federated.py --seeds 0 --runs tradeoff central --lambdas 0 8 \\
        --datasets credit-card --epsilons 1 --out /tmp/fed              # a reduced run
    python experiments/federated.py --runs speed flower                  # speed only
    python experiments/federated.py --report-only

Protocol: for seed ``s`` each dataset (``skfairdp.datasets.load_dataset``) is split
75/25, stratified by group, with ``random_state=s``; the training split is partitioned
into silos by Algorithm 3 (partition attribute: age) inside the estimator
(``random_state=s``); error and demographic-parity violation are measured on the test
split with hard predictions. Runs:

``tradeoff``
    ``FederatedDPFermiClassifier(fairness_weight=lambda, epsilon=eps, n_silos=3,
    heterogeneity=h, partition_feature=<age>, delta=1e-5, random_state=s)``, every
    other parameter at its default, h in {0, 0.75}, eps in {1, 3}.
``central``
    ``DPFermiClassifier`` with the same lambda, eps, delta and seed on the whole
    training split (the centralized reference).
``silos``
    Credit Card, eps = 1, N in {1, 3, 6, 12}, h in {0, 0.75}. N = 3 is the same fit as
    the ``tradeoff`` run's (same estimator, data and seed), so it is not fitted again:
    the report takes the ``tradeoff`` rows for it.
``speed``
    Time per round of the local backend (3 silos of batch m, history ``dur``, no
    calibration) against a ``DPFermiClassifier`` step on the same total batch 3m,
    Adult, lambda = 8, eps = 1: ``--speed-repeats`` paired fits (back to back, order
    alternating), reported as the median of the per-pair ratios.
``flower``
    The same fit on a loopback Flower deployment (SuperLink + 3 SuperNodes): seconds
    per round and bytes per round, against the local backend.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "experiments"))
from _results_csv import append, completed  # noqa: E402

DEFAULT_OUT = REPO / "experiments" / "results"
NAME = "federated"
DELTA = 1e-5
DATASETS = ("credit-card", "adult")
AGE = {"credit-card": "AGE", "adult": "age"}
EPSILONS = (1.0, 3.0)
HETEROGENEITY = (0.0, 0.75)
LAMBDAS = (0.0, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0, 16.0)
SILOS = (1, 3, 6, 12)
FIELDS = [
    "run", "dataset", "seed", "epsilon", "lam", "n_silos", "heterogeneity",
    "error", "dp_violation", "eps_spent_max", "fit_seconds", "rounds",
]  # fmt: skip
SPEED_FIELDS = ["backend", "repeat", "rounds", "seconds_per_round", "bytes_per_round"]


def _setup():
    torch.set_num_threads(1)
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


def load(name):
    from skfairdp.datasets import load_dataset

    bunch = load_dataset(name)
    X = np.ascontiguousarray(np.asarray(bunch.data, dtype=np.float32))
    _, s = np.unique(np.asarray(bunch.sensitive_features), return_inverse=True)
    age = list(bunch.feature_names).index(AGE[name])
    return X, np.asarray(bunch.target).astype(np.int64), s, age


def split(data, seed):
    from sklearn.model_selection import train_test_split

    X, y, s, _ = data
    return train_test_split(X, y, s, test_size=0.25, random_state=seed, stratify=s)


def evaluate(clf, parts):
    from skfairdp.metrics import demographic_parity_violation

    _, Xte, _, yte, _, ste = parts
    pred = clf.predict(Xte)
    return float(np.mean(pred != yte)), float(
        demographic_parity_violation(yte, pred, sensitive_features=ste)
    )


def fit_one(run, data, parts, *, eps, lam, seed, n_silos=3, h=0.0):
    from skfairdp import DPFermiClassifier
    from skfairdp.federated import FederatedDPFermiClassifier

    Xtr, _, ytr, _, str_, _ = parts
    start = time.perf_counter()
    if run == "central":
        clf = DPFermiClassifier(fairness_weight=lam, epsilon=eps, delta=DELTA, random_state=seed)
        clf.fit(Xtr, ytr, sensitive_features=str_)
        spent, rounds = clf.privacy_spent_.epsilon, clf.n_steps_
    else:
        clf = FederatedDPFermiClassifier(
            fairness_weight=lam, epsilon=eps, delta=DELTA, n_silos=n_silos, heterogeneity=h,
            partition_feature=data[3], random_state=seed,
        )  # fmt: skip
        clf.fit(Xtr, ytr, sensitive_features=str_)
        # the federation's guarantee: the weakest silo's epsilon (privacy_spent_ is a
        # PrivacySpent, not a mapping; silo_privacy_spent_ holds each silo's own)
        spent, rounds = clf.privacy_spent_.epsilon, clf.n_rounds_
    seconds = time.perf_counter() - start
    error, dp = evaluate(clf, parts)
    return {"error": error, "dp_violation": dp, "eps_spent_max": spent,
            "fit_seconds": seconds, "rounds": rounds}  # fmt: skip


def jobs(args):
    for dataset in args.datasets:
        for seed in args.seeds:
            for eps in args.epsilons:
                for lam in args.lambdas:
                    if "central" in args.runs:
                        yield ("central", dataset, seed, eps, lam, 1, 0.0)
                    if "tradeoff" in args.runs:
                        for h in args.heterogeneity:
                            yield ("tradeoff", dataset, seed, eps, lam, 3, h)
    if "silos" in args.runs:
        for seed in args.seeds:
            for n_silos in SILOS:
                if n_silos == 3:  # the tradeoff run's fit
                    continue
                for h in args.heterogeneity:
                    for lam in args.lambdas:
                        yield ("silos", "credit-card", seed, 1.0, lam, n_silos, h)


def run_fits(args):
    path = args.out / f"{NAME}.csv"
    key = ("run", "dataset", "seed", "epsilon", "lam", "n_silos", "heterogeneity")
    done = completed(path, key) if args.resume else set()
    cache = {}
    for job in jobs(args):
        run, dataset, seed, eps, lam, n_silos, h = job
        row_key = tuple(str(v) for v in (run, dataset, seed, eps, lam, n_silos, h))
        if row_key in done:
            continue
        if dataset not in cache:
            cache = {dataset: load(dataset)}
        data = cache[dataset]
        parts = split(data, seed)
        result = fit_one(run, data, parts, eps=eps, lam=lam, seed=seed, n_silos=n_silos, h=h)
        row = dict(zip(key, (run, dataset, seed, eps, lam, n_silos, h)), **result)
        append(path, FIELDS, row)
        print(row, flush=True)


def run_speed(args):
    """Local backend round vs centralized step on the same total batch (paired repeats).

    Each repeat fits both on the same rows with the same seed, back to back (their order
    alternates), so the two see about the same machine load; the report takes the median
    of the per-repeat ratios (the machine these run on is shared and loaded).
    """
    from skfairdp import DPFermiClassifier
    from skfairdp.federated import FederatedDPFermiClassifier

    data = load("adult")
    parts = split(data, 0)
    Xtr, _, ytr, _, str_, _ = parts
    m = 64
    path = args.out / f"{NAME}_speed.csv"
    for repeat in range(args.speed_repeats if "speed" in args.runs else 0):
        backends = ("local", "central") if repeat % 2 == 0 else ("central", "local")
        for backend in backends:
            if backend == "local":
                # one step per round: the silos vectorised (local steps run one silo
                # at a time), a round against one centralized step
                clf = FederatedDPFermiClassifier(
                    fairness_weight=8.0, epsilon=1.0, delta=DELTA, batch_size=m, max_epochs=2,
                    local_steps=1, random_state=repeat,
                ).fit(Xtr, ytr, sensitive_features=str_)  # fmt: skip
                steps = clf.n_rounds_
            else:
                clf = DPFermiClassifier(
                    fairness_weight=8.0, epsilon=1.0, delta=DELTA, batch_size=3 * m, max_epochs=2,
                    random_state=repeat,
                ).fit(Xtr, ytr, sensitive_features=str_)  # fmt: skip
                steps = clf.n_steps_
            seconds = sum(row["dur"] for row in clf.history_)
            append(path, SPEED_FIELDS, {"backend": backend, "repeat": repeat, "rounds": steps,
                   "seconds_per_round": seconds / steps, "bytes_per_round": ""})  # fmt: skip
    if "flower" in args.runs:
        run_flower(args, Xtr, ytr, str_, m)


def run_flower(args, Xtr, ytr, str_, m, rounds=6):
    """Seconds and bytes per round over Flower on loopback, against the local backend."""
    from skfairdp.federated import FederatedDPFermiClassifier

    path = args.out / f"{NAME}_speed.csv"
    rows = np.random.default_rng(0).choice(len(ytr), 3 * m * rounds, replace=False)
    kw = dict(fairness_weight=8.0, epsilon=1.0, delta=DELTA, batch_size=m, max_epochs=1,
              random_state=0)  # fmt: skip
    X, y, s = Xtr[rows], ytr[rows], str_[rows]
    local = FederatedDPFermiClassifier(**kw).fit(X, y, sensitive_features=s)
    flower = FederatedDPFermiClassifier(backend="flower", **kw).fit(X, y, sensitive_features=s)
    theta_gap = max(
        float((a - b).abs().max())
        for a, b in zip(local.module_.parameters(), flower.module_.parameters())
    )
    n_params = sum(p.numel() for p in local.module_.parameters())
    per_round_bytes = 3 * 4 * (n_params + local.W_.size)  # replies; the broadcast adds pinv
    for backend, seconds in (
        ("local-small", sum(r["dur"] for r in local.history_) / local.n_rounds_),
        ("flower-loopback", float(np.mean(flower.flower_round_seconds_))),
    ):
        append(path, SPEED_FIELDS, {"backend": backend, "repeat": 0, "rounds": local.n_rounds_,
               "seconds_per_round": seconds, "bytes_per_round": per_round_bytes})  # fmt: skip
    print({"flower_theta_gap_vs_local": theta_gap}, flush=True)


def central_error_at(central, violation):
    """Centralized error at violation ``violation``: (step, interpolated), nan below range.

    ``central`` holds one row per lambda (``dp``, ``error``: means over seeds). Step:
    the lowest error among the lambdas with violation at most ``violation``.
    Interpolated: the centralized Pareto points (no other point has both a lower
    violation and a lower error) joined by straight lines (what mixing two of the
    classifiers at random reaches), flat past the largest violation.
    """
    within = central[central["dp"] <= violation + 1e-12]
    if within.empty:
        return float("nan"), float("nan")
    pts = central.sort_values(["dp", "error"])
    front = pts[pts["error"] < pts["error"].cummin().shift(fill_value=np.inf)]
    interpolated = np.interp(violation, front["dp"], front["error"])
    return float(within["error"].min()), float(interpolated)


def target_gaps(agg, dataset, eps=1.0):
    """Federated (h = 0, N = 3) minus centralized error at the same violation, per lambda.

    Returns ``None`` without both runs, else one tuple per federated lambda:
    ``(lambda, dp, error, central_step, central_interpolated, gap, seeds)`` (see
    :func:`central_error_at`; ``gap`` against the lower of the two, nan when every
    centralized point has a larger violation).
    """
    at = (agg["dataset"] == dataset) & (agg["epsilon"] == eps)
    fed = agg[at & (agg["run"] == "tradeoff") & (agg["n_silos"] == 3)
              & (agg["heterogeneity"] == 0.0)]  # fmt: skip
    central = agg[at & (agg["run"] == "central")]
    if fed.empty or central.empty:
        return None
    seeds = int(central["seeds"].min())
    return [
        (lam, dp, err, *ref, err - min(ref), min(n, seeds))
        for lam, dp, err, n in zip(fed["lam"], fed["dp"], fed["error"], fed["seeds"])
        for ref in [central_error_at(central, dp)]
    ]


def comparisons(agg):
    """The issue's target, with a verdict, and the costs at matched lambdas.

    The target: h = 0, N = 3, eps = 1 within 0.01 error of centralized
    DPFermiClassifier at the same violation.
    """
    lines = []
    for dataset, eps in sorted(set(zip(agg["dataset"], agg["epsilon"]))):
        gaps = target_gaps(agg, dataset, eps)
        if not gaps:
            continue
        table = "\n".join(
            f"| {lam:g} | {dp:.4f} | {err:.4f} | {step:.4f} | {inter:.4f} | {gap:+.4f} |"
            if np.isfinite(gap)
            else f"| {lam:g} | {dp:.4f} | {err:.4f} | - | - | below every centralized dp |"
            for lam, dp, err, step, inter, gap, _ in gaps
        )
        valid = [row[5] for row in gaps if np.isfinite(row[5])]
        worst = max(valid) if valid else float("nan")
        verdict = "PASS" if valid and worst <= 0.01 else ("n/a" if not valid else "FAIL")
        seeds = min(row[6] for row in gaps)
        title = (
            f"### Target, {dataset}: h = 0, N = 3, eps = 1 within 0.01 error of centralized "
            "DPFermiClassifier at the same violation"
            if eps == 1.0
            else f"### {dataset}, eps = {eps:g} (no target): h = 0, N = 3 against centralized "
            "DPFermiClassifier at the same violation"
        )
        closing = (
            f"**{verdict}** (target <= +0.01)." if eps == 1.0 else "(the target is at eps = 1)."
        )
        lines += [
            title,
            "",
            "Centralized error at the federated point's violation (means over seeds), two "
            "ways: step, the lowest error among the centralized lambdas whose violation is "
            "at most the federated one; interpolated, along the centralized Pareto points "
            "joined by straight lines. Gap: federated error minus the lower of the two "
            "(-: every centralized point has a larger violation).",
            "",
            "| lambda | federated dp | federated error | centralized, step | "
            "centralized, interpolated | gap |",
            "|---:|---:|---:|---:|---:|---:|",
            table,
            "",
            f"Largest gap {worst:+.4f} over {len(valid)} comparable lambdas "
            f"(at least {seeds} seeds per point): {closing} Points below every centralized "
            "violation are outside the centralized curve's range and not compared.",
            "",
        ]
    return lines + costs(agg)


def costs(agg):
    """Mean error and violation differences at matched lambdas (eps = 1)."""
    key = ["dataset", "epsilon", "lam"]
    pick = agg.set_index(["run", "n_silos", "heterogeneity", *key])[["error", "dp"]]
    pairs = [
        ("federated (N=3, h=0) - centralized", ("tradeoff", 3, 0.0), ("central", 1, 0.0)),
        ("h=0.75 - h=0 (N=3)", ("tradeoff", 3, 0.75), ("tradeoff", 3, 0.0)),
    ]
    for h in HETEROGENEITY:  # the silos run's N = 3 is the tradeoff run's fit
        pairs += [
            (f"N={n} - N=1 (h={h:g})", ("tradeoff" if n == 3 else "silos", n, h), ("silos", 1, h))
            for n in SILOS[1:]
        ]
    rows = []
    for label, a, b in pairs:
        try:
            diff = (pick.loc[a] - pick.loc[b]).dropna()
        except KeyError:
            continue
        for (dataset, eps), d in diff.groupby(level=["dataset", "epsilon"]):
            rows.append({"comparison": label, "dataset": dataset, "epsilon": eps,
                         "lambdas": len(d), "d_error_mean": d["error"].mean(),
                         "d_error_max": d["error"].max(), "d_dp_mean": d["dp"].mean()})  # fmt: skip
    if not rows:
        return []
    import pandas as pd

    return [
        "## Costs at matched lambdas (mean over the lambdas both sides have)",
        "",
        pd.DataFrame(rows).round(4).to_markdown(index=False),
        "",
    ]


def plot(agg, path):
    """Error against DP violation per dataset (means over seeds; lambda along each curve)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted(agg["dataset"].unique())
    if not datasets:
        return
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4.5), squeeze=False)
    markers = {"central": "s", "tradeoff": "o", "silos": "^"}
    for ax, dataset in zip(axes[0], datasets):
        d = agg[agg["dataset"] == dataset]
        for (run, eps, n, h), g in d.groupby(["run", "epsilon", "n_silos", "heterogeneity"]):
            g = g.sort_values("lam")
            label = "centralized" if run == "central" else f"federated N={n} h={h:g}"
            style = markers[run] + ("-" if eps == 1.0 else "--")
            ax.plot(g["dp"], g["error"], style, label=f"{label} eps={eps:g}", ms=4)
        ax.set(title=dataset, xlabel="DP violation (test)", ylabel="error (test)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(args):
    import pandas as pd

    lines = [f"# {NAME}", "", "Command: `" + shlex.join(["python", *sys.argv]) + "`", ""]
    path = args.out / f"{NAME}.csv"
    if path.exists():
        df = pd.read_csv(path)
        group = ["run", "dataset", "epsilon", "n_silos", "heterogeneity", "lam"]
        agg = df.groupby(group).agg(
            error=("error", "mean"), error_sd=("error", "std"), dp=("dp_violation", "mean"),
            dp_sd=("dp_violation", "std"), eps_max=("eps_spent_max", "max"),
            seeds=("seed", "nunique"), fit_s=("fit_seconds", "mean"),
        )  # fmt: skip
        lines += ["## Error and DP violation (test, hard predictions; mean, sd over seeds)", ""]
        lines += [agg.round(4).to_markdown(), ""]
        lines += comparisons(agg.reset_index())
        plot(agg.reset_index(), args.out / f"{NAME}.png")
        lines += [f"Plot: `{NAME}.png` (error against DP violation, lambda along each curve).", ""]
    speed = args.out / f"{NAME}_speed.csv"
    if speed.exists():
        sp = pd.read_csv(speed)
        lines += ["## Time per round", "", sp.groupby("backend").agg(
            seconds_per_round=("seconds_per_round", "median"), repeats=("repeat", "nunique"),
            bytes_per_round=("bytes_per_round", "max"),
        ).to_markdown(), ""]  # fmt: skip
        per = sp.groupby("backend")["seconds_per_round"].median()
        if {"local", "central"} <= set(per.index):
            paired = sp.pivot_table(index="repeat", columns="backend", values="seconds_per_round")
            ratios = (paired["local"] / paired["central"]).dropna()
            q1, q3 = ratios.quantile(0.25), ratios.quantile(0.75)
            of_medians = per["local"] / per["central"]
            lines += [f"Local backend round / centralized step (same total batch): median "
                      f"{ratios.median():.2f} over {len(ratios)} paired repeats (quartiles "
                      f"{q1:.2f}-{q3:.2f}; ratio of the medians {of_medians:.2f}; target <= 1.5)",
                      ""]  # fmt: skip
        if {"flower-loopback", "local-small"} <= set(per.index):
            extra = per["flower-loopback"] - per["local-small"]
            lines += [f"Flower loopback round overhead: {extra * 1e3:.0f} ms (target <= 50 ms)",
                      ""]  # fmt: skip
    (args.out / f"{NAME}.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--lambdas", type=float, nargs="+", default=list(LAMBDAS))
    parser.add_argument("--heterogeneity", type=float, nargs="+", default=list(HETEROGENEITY))
    parser.add_argument("--runs", nargs="+", default=["tradeoff", "central", "silos", "speed"],
                        choices=["tradeoff", "central", "silos", "speed", "flower"])  # fmt: skip
    parser.add_argument("--speed-repeats", type=int, default=15,
                        help="paired local/central fits of the speed run")  # fmt: skip
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    _setup()
    if not args.report_only:
        run_fits(args)
        if "speed" in args.runs or "flower" in args.runs:
            run_speed(args)
    report(args)


if __name__ == "__main__":
    main()
