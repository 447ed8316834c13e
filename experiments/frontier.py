"""Private trade-offs beside the non-private frontier, on every bundled dataset (issue 12).

For each bundled dataset, each fairness notion (demographic parity, equalized
odds) and epsilon in {0.5, 1, 3, inf}: the error / hard test violation of

* ``DPFermiClassifier`` over its fairness-weight grid,
* ``RaCODPClassifier`` over its tolerance grid,
* ``CGOOReduction`` over its difference-bound grid,
* ``DPThresholdOptimizer`` on a ``DPSGDClassifier`` (defaults) within the one epsilon,

beside the non-private frontier of fairlearn's ``ExponentiatedGradient``
(LogisticRegression, bound grid) and ``ThresholdOptimizer`` (LogisticRegression,
``tol`` grid; it reads the group at prediction time). A ``defaults`` experiment
fits every estimator with its default settings at epsilon = 1 beside the
majority-class predictor.

Protocol: 75/25 ``train_test_split(random_state=seed, stratify=group)``;
``random_state=seed``; delta = 1e-5; metrics from hard predictions (``predict``,
randomised classifiers drawing with ``random_state=seed``) on the test split,
and the hard training violation. Every fit is appended to
``results/frontier.csv`` as it finishes (``--resume`` skips those present);
``report`` writes ``results/frontier.md`` and ``results/frontier.png``.

Examples::

    python experiments/frontier.py run --seeds 0 1 2 3 4
    python experiments/frontier.py run --datasets german communities-crime --methods raco --seeds 0
    python experiments/frontier.py run --experiment defaults --seeds 0 1 2
    python experiments/frontier.py report
"""

from __future__ import annotations

import argparse
import inspect
import math
import time
import warnings
from pathlib import Path

import numpy as np
from _results_csv import append, completed
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skfairdp.fairness.metrics import demographic_parity_violation, equalized_odds_violation

RESULTS = Path(__file__).parent / "results"
CSV = RESULTS / "frontier.csv"
FIELDS = [
    "experiment", "dataset", "n_train", "method", "notion", "epsilon", "param", "seed",
    "test_error", "test_violation", "train_error", "train_violation", "majority_error",
    "epsilon_spent", "fit_seconds",
]  # fmt: skip
NOTIONS = {
    "demographic_parity": demographic_parity_violation,
    "equalized_odds": equalized_odds_violation,
}
EPSILONS = (0.5, 1.0, 3.0, math.inf)
DELTA = 1e-5

#: Each private method's grid (the knob that trades error for fairness).
GRIDS = {
    "dpfermi": (0.0, 1.0, 4.0, 16.0, 64.0),
    "raco": (0.02, 0.05, 0.1),
    "cgoo": (0.01, 0.02, 0.05),
    "expgrad": (0.01, 0.02, 0.05),
    "threshold": (0.0, 0.02, 0.05),
    "threshold_hgb": (0.0, 0.02, 0.05),
    # DP-SGD logistic regression + DPThresholdOptimizer within the one epsilon (no knob)
    "dpto": (0.0,),
}
#: Denser grids where the issue's comparison with ExpGrad is judged (Adult at eps = 1): the
#: best error "at a given violation" is read off grid points, so a coarse grid would score
#: the grid, not the estimator (lambda 1 -> 4 jumps from violation 0.10 to 0.045 there).
DENSE_GRIDS = {
    "adult": {
        "dpfermi": (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0),
        # 0.03, 0.04, 0.07: with the tolerance margin (issue 24) gamma no longer lands on the
        # violation it names (Adult EO at gamma = 0.05: 0.048, at 0.02: 0.026)
        "raco": (0.01, 0.02, 0.03, 0.04, 0.05, 0.07, 0.1),
    },
}
PRIVATE = ("dpfermi", "raco", "cgoo", "dpto")


def _grid(dataset: str, method: str) -> tuple:
    return DENSE_GRIDS.get(dataset, {}).get(method, GRIDS[method])


NON_PRIVATE = ("expgrad", "threshold", "threshold_hgb")
#: The non-private methods that post-process a base model at predict time (use the group).
THRESHOLD = ("threshold", "threshold_hgb")
#: Every method that reads the group at predict time.
GROUP_AT_PREDICT = (*THRESHOLD, "dpto")


# --------------------------------------------------------------------------- data
#: One entry per bundled table (its default grouping), plus Adult with race groups at
#: 5,000 rows (a few thousand rows with strong proxies of the group).
DATASETS = (
    "adult",
    "credit-card",
    "adult-race-5k",
    "bank-marketing",
    "communities-crime",
    "german",
)


#: Baselines whose default fit is too slow to run on large tables here: FairLens (a
#: comparison method of the Global-Adapt paper) takes per-sample Hessian-vector products,
#: 5-10 minutes per fit on 3,750 rows on the shared 2-core machine, so an hour or more on
#: Adult's 33,916. The defaults experiment skips it above this many rows.
SLOW_BASELINES = {"FairLensClassifier": 10_000}
#: Rows of each bundled table (public; for the skip above without loading the data).
DATASET_ROWS = {
    "adult": 45222, "adult-race": 45222, "credit-card": 30000, "credit-card-age": 30000,
    "credit-card-education": 30000,
}  # fmt: skip


def _load(name: str):
    from skfairdp.datasets import load_dataset

    X, y, s = load_dataset(name, return_X_y_s=True)
    return np.asarray(X, dtype=np.float32), np.asarray(y), np.asarray(s)


def _split(data, seed: int):
    X, y, s = data
    return train_test_split(X, y, s, test_size=0.25, random_state=seed, stratify=s)


# --------------------------------------------------------------------------- models
def _private_model(method: str, notion: str, eps: float, param: float, seed: int):
    from skfairdp import CGOOReduction, DPFermiClassifier, RaCODPClassifier

    common = {"epsilon": eps, "random_state": seed}
    if math.isfinite(eps):
        common["delta"] = DELTA
    if method == "dpfermi":
        return DPFermiClassifier(fairness=notion, fairness_weight=param, **common)
    if method == "raco":
        return RaCODPClassifier(notion, param, **common)
    if method == "cgoo":
        return CGOOReduction(constraints=notion, difference_bound=param, **common)
    if method == "dpto":
        from skfairdp import DPSGDClassifier
        from skfairdp.postprocessing import DPThresholdOptimizer

        return DPThresholdOptimizer(DPSGDClassifier(), constraints=notion, **common)
    raise ValueError(method)


def _default_models(seed: int) -> dict:
    from skfairdp import (
        CGOOReduction,
        DPFermiClassifier,
        DPSGDFClassifier,
        FairLensClassifier,
        GlobalScalingDPClassifier,
        RaCODPClassifier,
    )
    from skfairdp.dpsgd import DPSGDClassifier

    kw = {"epsilon": 1.0, "random_state": seed}
    return {
        "DPFermiClassifier": DPFermiClassifier(**kw),
        "RaCODPClassifier": RaCODPClassifier(**kw),
        "GlobalScalingDPClassifier": GlobalScalingDPClassifier(**kw),
        "CGOOReduction": CGOOReduction(**kw),
        "DPSGDClassifier": DPSGDClassifier(**kw),
        "DPSGDFClassifier": DPSGDFClassifier(**kw),
        "FairLensClassifier": FairLensClassifier(**kw),
    }


class _NonPrivate:
    """fairlearn's ExponentiatedGradient / ThresholdOptimizer behind one interface.

    ``threshold`` post-processes a logistic regression, ``threshold_hgb`` a
    histogram gradient-boosted model (the strong anchor of Cruz & Hardt 2023).
    """

    def __init__(self, method: str, notion: str, param: float, seed: int):
        from fairlearn.postprocessing import ThresholdOptimizer
        from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient

        self.method, self.seed = method, seed
        base = LogisticRegression(max_iter=1000)
        if method == "threshold_hgb":
            base = HistGradientBoostingClassifier(random_state=seed)
        if method == "expgrad":
            moment = {"demographic_parity": DemographicParity, "equalized_odds": EqualizedOdds}
            self.model = ExponentiatedGradient(base, moment[notion](difference_bound=param))
        else:
            self.model = ThresholdOptimizer(
                estimator=base,
                constraints=notion,
                predict_method="predict_proba",
                tol=param or None,
            )

    def fit(self, X, y, sensitive_features):
        # float64: fairlearn's ThresholdOptimizer fails on float32 scores with pandas 3
        self.model.fit(np.float64(X), y, sensitive_features=sensitive_features)
        return self

    def predict(self, X, sensitive_features):
        X = np.float64(X)
        if self.method in THRESHOLD:
            return self.model.predict(
                X, sensitive_features=sensitive_features, random_state=self.seed
            )
        return self.model.predict(X, random_state=self.seed)


def _predict(model, X, s, seed):
    if isinstance(model, _NonPrivate):
        return model.predict(X, s)
    if "sensitive_features" in inspect.signature(model.predict).parameters:
        return model.predict(X, sensitive_features=s, random_state=seed)
    if "random_state" in inspect.signature(model.predict).parameters:
        return model.predict(X, random_state=seed)
    return model.predict(X)


def _fit(model, X, y, s):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "sensitive_features" in inspect.signature(model.fit).parameters:
            model.fit(X, y, sensitive_features=s)
        else:
            model.fit(X, y)
    return time.perf_counter() - start


def _row(experiment, dataset, method, notion, eps, param, seed, split, model, seconds):
    Xtr, Xte, ytr, yte, s_tr, s_te = split
    violation = NOTIONS[notion]
    pred_te = _predict(model, Xte, s_te, seed)
    pred_tr = _predict(model, Xtr, s_tr, seed)
    spent = getattr(model, "privacy_spent_", None)
    return {
        "experiment": experiment,
        "dataset": dataset,
        "n_train": len(ytr),
        "method": method,
        "notion": notion,
        "epsilon": eps,
        "param": param,
        "seed": seed,
        "test_error": float(np.mean(pred_te != yte)),
        "test_violation": violation(yte, pred_te, sensitive_features=s_te),
        "train_error": float(np.mean(pred_tr != ytr)),
        "train_violation": violation(ytr, pred_tr, sensitive_features=s_tr),
        "majority_error": float(np.mean(yte != np.bincount(ytr).argmax())),
        "epsilon_spent": math.inf if spent is None else spent.epsilon,
        "fit_seconds": seconds,
    }


# --------------------------------------------------------------------------- runs
def _plan(experiment, datasets, methods, notions, epsilons, seeds, estimators=None):
    for dataset in datasets:
        for seed in seeds:
            if experiment == "defaults":
                for name in estimators or _default_models(seed):
                    too_slow = SLOW_BASELINES.get(name, math.inf)
                    if DATASET_ROWS.get(dataset, 0) > too_slow:
                        continue
                    yield dataset, name, "demographic_parity", 1.0, "default", seed
                continue
            for notion in notions:
                for method in methods:
                    for param in _grid(dataset, method):
                        if method in NON_PRIVATE:
                            if method in THRESHOLD and notion == "equalized_odds" and param:
                                continue  # fairlearn: relaxed constraints only for parity
                            yield dataset, method, notion, math.inf, param, seed
                            continue
                        for eps in epsilons:
                            yield dataset, method, notion, eps, param, seed


KEY = ("experiment", "dataset", "method", "notion", "epsilon", "param", "seed")


def _done() -> set:
    return completed(CSV, KEY)


def _append(row: dict) -> None:
    append(CSV, FIELDS, row)
    print(
        f"{row['dataset']:14s} {row['method']:26s} {row['notion']:18s} eps={row['epsilon']:<4} "
        f"p={row['param']!s:<7} seed={row['seed']} err={row['test_error']:.4f} "
        f"viol={row['test_violation']:.4f} train_viol={row['train_violation']:.4f} "
        f"({row['fit_seconds']:.1f}s)",
        flush=True,
    )


def run(experiment, datasets, methods, notions, epsilons, seeds, resume, estimators=None) -> None:
    RESULTS.mkdir(exist_ok=True)
    done = _done() if resume else set()
    cache: dict = {}
    for dataset, method, notion, eps, param, seed in _plan(
        experiment, datasets, methods, notions, epsilons, seeds, estimators
    ):
        key = (experiment, dataset, method, notion, str(eps), str(param), str(seed))
        if key in done:
            continue
        if dataset not in cache:
            cache = {dataset: _load(dataset)}  # one dataset in memory at a time
        split = _split(cache[dataset], seed)
        if experiment == "defaults":
            model = _default_models(seed)[method]
        elif method in NON_PRIVATE:
            model = _NonPrivate(method, notion, param, seed)
        else:
            model = _private_model(method, notion, eps, param, seed)
        try:
            seconds = _fit(model, split[0], split[2], split[4])
        except ValueError as exc:  # e.g. a group below rho: recorded, not fatal to the run
            print(f"{dataset} {method} {notion} eps={eps} p={param} seed={seed}: {exc}", flush=True)
            _append_failure(experiment, dataset, method, notion, eps, param, seed, split)
            continue
        _append(_row(experiment, dataset, method, notion, eps, param, seed, split, model, seconds))


def _append_failure(experiment, dataset, method, notion, eps, param, seed, split) -> None:
    """A fit that raised: its row carries NaN metrics (the report shows them as failed)."""
    row = dict.fromkeys(FIELDS, math.nan)
    row.update(experiment=experiment, dataset=dataset, n_train=len(split[2]), method=method,
               notion=notion, epsilon=eps, param=param, seed=seed)  # fmt: skip
    append(CSV, FIELDS, row)


# --------------------------------------------------------------------------- report
def _summary(df):
    keys = ["experiment", "dataset", "n_train", "method", "notion", "epsilon", "param"]
    return (
        df.groupby(keys)
        .agg(
            seeds=("seed", "nunique"),
            error=("test_error", "mean"),
            error_sd=("test_error", "std"),
            violation=("test_violation", "mean"),
            violation_sd=("test_violation", "std"),
            train_violation=("train_violation", "mean"),
            majority_error=("majority_error", "mean"),
            seconds=("fit_seconds", "mean"),
        )
        .reset_index()
    )


def _fmt(mean, sd) -> str:
    return f"{mean:.4f} ± {0.0 if math.isnan(sd) else sd:.4f}"


def _best_within(points, violation):
    """The lowest-error row of ``points`` at mean violation <= ``violation``, or None."""
    reach = points[points.violation <= violation + 1e-12]
    return None if reach.empty else reach.sort_values("error").iloc[0]


def _floors():
    """RaCO-DP eps=1's mean test floor per (dataset, notion, gamma), from violation_floor.py."""
    import pandas as pd

    path = RESULTS / "violation_floor.csv"
    if not path.exists():
        return pd.Series(dtype=float)
    df = pd.read_csv(path)
    df = df[(df.method == "raco") & (df.epsilon == 1.0)]
    return df.groupby(["dataset", "notion", "gamma"]).test_floor.mean()


def _targets(stats) -> list[str]:
    """The issue's targets, each with its verdict, from the summary table."""
    out = []
    grid = stats[stats.experiment == "grid"]
    grid = grid.assign(param=grid.param.astype(float))  # "default" only in the defaults rows
    raco = grid[grid.method == "raco"]
    for _, r in raco[raco.epsilon == math.inf].iterrows():
        ok = r.train_violation <= r.param + 0.01
        out.append(
            f"- RaCO eps=inf {r.dataset} {r.notion} gamma={r.param}: hard train violation "
            f"{r.train_violation:.4f} <= {r.param + 0.01:.2f}: {'PASS' if ok else 'FAIL'}"
        )
    big = raco[(raco.epsilon == 1.0) & (raco.n_train >= 0.75 * 3000) & raco.param.isin([0.05, 0.1])]
    expgrad = grid[grid.method == "expgrad"].set_index(["dataset", "notion", "param"])
    floors = _floors()
    for _, r in big.iterrows():
        ok = r.violation <= r.param + 0.03
        # the non-private reference at the same bound shows how much of a miss the
        # test split's small cells alone produce
        key = (r.dataset, r.notion, r.param)
        reference = (
            f" (non-private ExpGrad at bound {r.param}: test violation "
            f"{_fmt(expgrad.loc[key].violation, expgrad.loc[key].violation_sd)})"
            if key in expgrad.index
            else ""
        )
        if key in floors.index:
            reference += f"; the test split's floor at its operating point: {floors.loc[key]:.4f}"
        out.append(
            f"- RaCO eps=1 {r.dataset} {r.notion} gamma={r.param}: hard test violation "
            f"{_fmt(r.violation, r.violation_sd)} <= {r.param + 0.03:.2f}: "
            f"{'PASS' if ok else 'FAIL'}{reference}"
        )
    for notion in NOTIONS:
        eg = grid[(grid.dataset == "adult") & (grid.method == "expgrad") & (grid.notion == notion)]
        for method in ("dpfermi", "raco"):
            ours = grid[
                (grid.dataset == "adult")
                & (grid.method == method)
                & (grid.notion == notion)
                & (grid.epsilon == 1.0)
            ]
            if ours.empty:
                out.append(f"- Adult eps=1 {notion} {method}: not run yet")
                continue
            for _, e in eg.iterrows():
                best = _best_within(ours, e.violation)
                if best is None:
                    out.append(
                        f"- Adult eps=1 {notion} {method}: nothing reaches ExpGrad's violation "
                        f"{e.violation:.4f} (bound {e.param}): FAIL"
                    )
                    continue
                ok = best.error <= e.error + 0.005
                out.append(
                    f"- Adult eps=1 {notion} {method}: error {best.error:.4f} at violation "
                    f"{best.violation:.4f} (param {best.param}) vs ExpGrad {e.error:.4f} at "
                    f"{e.violation:.4f} (bound {e.param}), within 0.005: "
                    f"{'PASS' if ok else 'FAIL'}"
                )
    fermi = grid[grid.method == "dpfermi"].sort_values("param")
    for (dataset, notion, eps), g in fermi.groupby(["dataset", "notion", "epsilon"]):
        n_lambdas = len(_grid(dataset, "dpfermi"))
        if g.seeds.min() < 3 or len(g) < n_lambdas:
            out.append(
                f"- DP-FERMI {dataset} {notion} eps={eps}: INCOMPLETE ({len(g)} of "
                f"{n_lambdas} lambdas, fewest seeds {g.seeds.min()}; 3 needed)"
            )
            continue
        v, sd = g.violation.to_numpy(), np.nan_to_num(g.violation_sd.to_numpy())
        rises = [
            f"{g.param.iloc[i]}->{g.param.iloc[i + 1]}"
            for i in range(len(v) - 1)
            if v[i + 1] > v[i] + max(sd[i], sd[i + 1])
        ]
        out.append(
            f"- DP-FERMI {dataset} {notion} eps={eps}: violation non-increasing in lambda within "
            f"seed spread: {'PASS' if not rises else 'FAIL (' + ', '.join(rises) + ')'}"
        )
    defaults = stats[stats.experiment == "defaults"]
    for _, r in defaults[defaults.n_train >= 0.75 * 1000].iterrows():
        ok = r.error <= r.majority_error
        out.append(
            f"- defaults eps=1 {r.dataset} {r.method}: error {_fmt(r.error, r.error_sd)} vs "
            f"majority {r.majority_error:.4f}: {'PASS' if ok else 'FAIL'}"
        )
    return out


def _gaps(stats):
    """Each private curve against ExpGrad: best error at no larger violation, per bound."""
    import pandas as pd

    grid = stats[stats.experiment == "grid"]
    grid = grid.assign(param=grid.param.astype(float))
    rows = []
    for (dataset, notion), d in grid.groupby(["dataset", "notion"]):
        eg = d[d.method == "expgrad"].sort_values("param")
        for (method, eps), ours in d[d.method.isin(PRIVATE)].groupby(["method", "epsilon"]):
            row = {"dataset": dataset, "notion": notion, "method": method, "epsilon": eps,
                   "seeds": int(ours.seeds.min())}  # fmt: skip
            for _, e in eg.iterrows():
                best = _best_within(ours, e.violation)
                row[f"ExpGrad {e.param:g}"] = (
                    "none" if best is None else f"{best.error - e.error:+.4f}"
                )
            rows.append(row)
    return pd.DataFrame(rows)


def _plot(stats, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = stats[stats.experiment == "grid"]
    datasets = sorted(grid.dataset.unique())
    if not datasets:
        return
    fig, axes = plt.subplots(
        len(datasets), len(NOTIONS), figsize=(10, 3.2 * len(datasets)), squeeze=False
    )
    colors = {"dpfermi": "C0", "raco": "C1", "cgoo": "C2", "dpto": "C3", "expgrad": "k",
              "threshold": "0.45", "threshold_hgb": "0.65"}  # fmt: skip
    markers = {"dpfermi": "o", "raco": "s", "cgoo": "^", "dpto": "D", "expgrad": "*",
               "threshold": "x", "threshold_hgb": "+"}  # fmt: skip
    # private curves: one colour per method, one line style per epsilon
    lines = {0.5: ":", 1.0: "-", 3.0: "--", math.inf: "-."}
    legend: dict = {}
    for i, dataset in enumerate(datasets):
        for j, notion in enumerate(NOTIONS):
            ax = axes[i][j]
            d = grid[(grid.dataset == dataset) & (grid.notion == notion)]
            for method in colors:
                for eps in EPSILONS if method in PRIVATE else (math.inf,):
                    g = d[(d.method == method) & (d.epsilon == eps)].sort_values("param")
                    if g.empty:
                        continue
                    label = method if method in NON_PRIVATE else f"{method} eps={eps:g}"
                    artist = ax.errorbar(
                        g.violation,
                        g.error,
                        xerr=g.violation_sd.fillna(0),
                        yerr=g.error_sd.fillna(0),
                        color=colors[method],
                        marker=markers[method],
                        linestyle="--" if method in NON_PRIVATE else lines[eps],
                        alpha=0.45 if method in PRIVATE and eps == math.inf else 1.0,
                        elinewidth=0.6,
                        markersize=4,
                        capsize=2,
                    )
                    legend.setdefault(label, artist)
            ax.set_title(f"{dataset}: {notion}", fontsize=9)
            ax.set_xlabel("hard test violation")
            ax.set_ylabel("test error")
            ax.grid(alpha=0.3)
    fig.legend(list(legend.values()), list(legend), loc="upper center", ncol=5, fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)


def report() -> None:
    import pandas as pd

    df = pd.read_csv(CSV)
    failed = df[df.test_error.isna()]
    df = df[df.test_error.notna()]
    stats = _summary(df)
    lines = [
        "# Private trade-offs beside the non-private frontier (issue 12)",
        "",
        "Written by `python experiments/frontier.py report` from `results/frontier.csv`. "
        "Hard predictions on 75/25 test splits stratified by group; mean ± sd over seeds; "
        "`train_violation` is the hard violation on the training split. Non-private rows "
        "(ExpGrad, ThresholdOptimizer) carry epsilon = inf. Plot: `frontier.png` "
        "(one colour per method; private epsilon 0.5 dotted, 1 solid, 3 dashed, inf faded).",
        "",
    ]
    show = stats.assign(
        error=[_fmt(m, s) for m, s in zip(stats.error, stats.error_sd)],
        violation=[_fmt(m, s) for m, s in zip(stats.violation, stats.violation_sd)],
    ).drop(columns=["error_sd", "violation_sd"])
    for (experiment, dataset, notion), table in show.groupby(
        ["experiment", "dataset", "notion"], sort=False
    ):
        lines += [
            f"## {experiment}: {dataset}, {notion}",
            "",
            table.drop(columns=["experiment", "dataset", "notion"]).to_markdown(
                index=False, floatfmt=".4f"
            ),
            "",
        ]
    if not failed.empty:
        lines += ["## Fits that raised (a ValueError, logged by `run`)", "",
                  failed[["experiment", "dataset", "method", "notion", "epsilon", "param",
                          "seed"]].to_markdown(index=False), ""]  # fmt: skip
    gaps = _gaps(stats)
    if not gaps.empty:
        lines += [
            "## Gap to ExpGrad",
            "",
            "For each ExpGrad bound (non-private, its mean test violation v and error e): the "
            "private curve's lowest mean test error among its grid points with mean test "
            "violation <= v, minus e (negative: better than ExpGrad); `none`: no grid point "
            "reaches v. `seeds`: fewest seeds behind a point.",
            "",
            gaps.to_markdown(index=False),
            "",
        ]
    lines += ["## Targets (issue 12)", ""] + _targets(stats)
    (RESULTS / "frontier.md").write_text("\n".join(lines) + "\n")
    _plot(stats, RESULTS / "frontier.png")
    print("\n".join(lines[-60:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--experiment", choices=("grid", "defaults"), default="grid")
    r.add_argument("--datasets", nargs="+", default=None)
    r.add_argument("--methods", nargs="+", default=list(GRIDS), choices=list(GRIDS))
    r.add_argument("--notions", nargs="+", default=list(NOTIONS), choices=list(NOTIONS))
    r.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    r.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    r.add_argument("--resume", action="store_true")
    r.add_argument(
        "--estimators",
        nargs="+",
        default=None,
        choices=list(_default_models(0)),
        help="defaults experiment: only these estimators (default: all)",
    )
    sub.add_parser("report")
    args = parser.parse_args()
    if args.command == "run":
        datasets = args.datasets or list(DATASETS)
        run(
            args.experiment,
            datasets,
            args.methods,
            args.notions,
            args.epsilons,
            args.seeds,
            args.resume,
            args.estimators,
        )
    else:
        report()


if __name__ == "__main__":
    main()
