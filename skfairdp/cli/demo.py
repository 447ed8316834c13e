"""``skfairdp demo``: every estimator on bundled Adult at one privacy budget.

Fits each estimator of :data:`skfairdp.cli.DEMO_ESTIMATORS` (logistic
regression, ``privacy_unit="record"``) on the bundled UCI Adult data, prints a
table of test error, demographic-parity violation with its 95 % sampling interval
(an exact ``PrivateMetricFrame``, ``epsilon=np.inf``: the bundled rows are public),
privacy spent and fit time, and saves the table (CSV) and the accuracy/fairness
trade-off plot (PNG, the intervals as error bars).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from .names import DEMO_ESTIMATORS, PLOT_NAME, TABLE_NAME

INTERVAL_NOTE = (
    "dp_95%_interval: the 95 % sampling interval of the test violation (PrivateMetricFrame "
    "at epsilon=inf: the bundled test rows are public, so the violation is exact; the "
    "interval covers the test split's sampling error). A violation whose interval reaches 0 "
    "is within that noise; two fits whose intervals overlap may not differ."
)


@dataclass
class DemoRow:
    """One fit of the demo."""

    estimator: str
    setting: str
    test_error: float
    dp_violation: float
    dp_violation_lower: float
    dp_violation_upper: float
    epsilon_spent: float
    delta: float
    fit_seconds: float


def _fits(args: argparse.Namespace) -> list[tuple[str, str, object, bool]]:
    """``(estimator name, setting, unfitted estimator, needs groups)`` per fit."""
    from .. import (
        CGOOReduction,
        DPFermiClassifier,
        DPSGDClassifier,
        DPSGDFClassifier,
        FairLensClassifier,
        GlobalScalingDPClassifier,
        RaCODPClassifier,
    )

    common = {"epsilon": args.epsilon, "delta": args.delta, "random_state": args.seed}
    epochs = {} if args.max_epochs is None else {"max_epochs": args.max_epochs}
    logistic = {"hidden_layer_sizes": ()}
    fits = []
    for name in args.estimators:
        if name == "dpfermi":
            for lam in args.weights:
                fits.append(
                    (
                        name,
                        f"λ={lam:g}",
                        DPFermiClassifier(fairness_weight=lam, **common, **epochs),
                        True,
                    )
                )
        elif name == "raco":
            for gamma in args.tolerances:
                fits.append(
                    (
                        name,
                        f"γ={gamma:g}",
                        RaCODPClassifier(tolerance=gamma, **common, **epochs),
                        True,
                    )
                )
        elif name == "cgoo":
            oracle = {}
            if args.max_epochs is not None:  # the default oracle, with these epochs
                oracle["estimator"] = DPSGDClassifier(
                    lr=0.5, batch_size=1024, max_epochs=args.max_epochs
                )
            for bound in args.bounds:
                clf = CGOOReduction(
                    constraints="demographic_parity", difference_bound=bound, **oracle, **common
                )
                fits.append((name, f"bound={bound:g}", clf, True))
        elif name == "global-scaling":
            clf = GlobalScalingDPClassifier(variant="adapt", **logistic, **common, **epochs)
            fits.append((name, "adapt", clf, False))
        elif name == "dpsgd":
            fits.append((name, "defaults", DPSGDClassifier(**common, **epochs), False))
        elif name == "dpsgdf":
            clf = DPSGDFClassifier(lr=0.1, **logistic, **common, **epochs)
            fits.append((name, "lr=0.1", clf, True))
        elif name == "fairlens":
            clf = FairLensClassifier(lr=0.1, **logistic, **common, **epochs)
            fits.append((name, "lr=0.1", clf, True))
    return fits


def run_demo(args: argparse.Namespace) -> int:
    """Run ``skfairdp demo``; returns the exit code."""
    import numpy as np
    import torch
    from sklearn.model_selection import train_test_split
    from tqdm.auto import tqdm

    from ..benchmarks._common import sampling_intervals
    from ..datasets import load_adult
    from ..metrics import demographic_parity_violation

    adult = load_adult(preprocess=True)
    X = adult.data.to_numpy(dtype=np.float32)
    y = adult.target.to_numpy()
    s = adult.sensitive_features.to_numpy()
    X_train, X_test, y_train, y_test, s_train, s_test = train_test_split(
        X, y, s, test_size=0.25, stratify=y, random_state=args.seed
    )
    print(
        f"UCI Adult (bundled): {len(y_train):,} train / {len(y_test):,} test rows, "
        f"{X.shape[1]} features, sensitive feature {adult.sensitive_feature_name!r} (not a "
        "model input)"
    )
    print(
        f"epsilon={args.epsilon:g}, delta={args.delta:g}, privacy_unit='record', logistic "
        f"regression, max_epochs={args.max_epochs or 'each default'}, seed={args.seed}"
    )
    sys.stdout.flush()

    fits = _fits(args)
    rows: list[DemoRow] = []
    previous_threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    try:
        bar = tqdm(fits, desc="fits", disable=args.no_progress, file=sys.stderr)
        for name, setting, clf, needs_groups in bar:
            bar.set_postfix_str(f"{name} {setting}")
            tic = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # e.g. FairLens' unbounded sensitivity
                if needs_groups:
                    clf.fit(X_train, y_train, sensitive_features=s_train)
                else:
                    clf.fit(X_train, y_train)
            seconds = time.perf_counter() - tic
            y_pred = clf.predict(X_test)
            intervals = sampling_intervals(y_test, y_pred, s_test)
            rows.append(
                DemoRow(
                    estimator=DEMO_ESTIMATORS[name][0],
                    setting=setting,
                    test_error=float(np.mean(y_pred != y_test)),
                    dp_violation=demographic_parity_violation(
                        y_test, y_pred, sensitive_features=s_test
                    ),
                    dp_violation_lower=intervals["dp_violation_lower"],
                    dp_violation_upper=intervals["dp_violation_upper"],
                    epsilon_spent=clf.privacy_spent_.epsilon,
                    delta=clf.privacy_spent_.delta,
                    fit_seconds=seconds,
                )
            )
        bar.close()
    finally:
        torch.set_num_threads(previous_threads)
    total = time.perf_counter() - started

    print()
    print(format_table(rows))
    print()
    print(INTERVAL_NOTE)
    summary = f"{len(rows)} fit{'s' if len(rows) != 1 else ''} in {total:.1f} s."
    if len(rows) > 1:
        summary += (
            " Each fit spends its own budget: together they cost more than one fit "
            "(skfairdp.privacy.spent composes them, see doc/privacy.md)."
        )
    print(summary)
    if "fairlens" in args.estimators:
        print("FairLensClassifier: its per-sample contributions are coupled, so its "
              "epsilon_spent is not a guarantee (doc/global_scaling.md).")  # fmt: skip
    os.makedirs(args.output, exist_ok=True)
    table_path = os.path.join(args.output, TABLE_NAME)
    write_csv(rows, table_path)
    plot_path = os.path.join(args.output, PLOT_NAME)
    plot_tradeoff(rows, plot_path, epsilon=args.epsilon, delta=args.delta)
    print(f"table: {table_path}")
    print(f"plot:  {plot_path}")
    return 0


def format_table(rows: Sequence[DemoRow]) -> str:
    """The demo's results as a fixed-width text table."""
    header = (
        "estimator",
        "setting",
        "test_error",
        "dp_violation",
        "dp_95%_interval",
        "epsilon_spent",
        "delta",
        "fit_seconds",
    )
    lines = [
        (
            r.estimator,
            r.setting,
            f"{r.test_error:.4f}",
            f"{r.dp_violation:.4f}",
            f"[{r.dp_violation_lower:.4f},{r.dp_violation_upper:.4f}]",
            f"{r.epsilon_spent:.4f}",
            f"{r.delta:.0e}" if r.delta else "0",
            f"{r.fit_seconds:.1f}",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    align = [str.ljust, str.ljust] + [str.rjust] * (len(header) - 2)
    out = ["  ".join(a(h, w) for a, h, w in zip(align, header, widths)).rstrip()]
    out += ["  ".join(a(v, w) for a, v, w in zip(align, line, widths)).rstrip() for line in lines]
    return "\n".join(out)


def write_csv(rows: Sequence[DemoRow], path: str) -> None:
    """Write the demo's results to ``path`` as CSV."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(DemoRow.__dataclass_fields__))
        for r in rows:
            writer.writerow(
                [
                    r.estimator,
                    r.setting,
                    f"{r.test_error:.6f}",
                    f"{r.dp_violation:.6f}",
                    f"{r.dp_violation_lower:.6f}",
                    f"{r.dp_violation_upper:.6f}",
                    f"{r.epsilon_spent:.6f}",
                    r.delta,
                    f"{r.fit_seconds:.3f}",
                ]
            )


def plot_tradeoff(rows: Sequence[DemoRow], path: str, *, epsilon: float, delta: float) -> None:
    """Save the trade-off plot (test error vs DP violation, one series per estimator).

    Uses matplotlib's object-oriented API with the Agg canvas, so it needs no
    display and leaves pyplot's global state alone.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..benchmarks._published import published

    fig = Figure(figsize=(7.0, 4.8), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    eps_text = "∞" if math.isinf(epsilon) else f"{epsilon:g}"
    markers = "os^DvPX"
    names = list(dict.fromkeys(r.estimator for r in rows))
    for i, name in enumerate(names):
        series = [r for r in rows if r.estimator == name]
        x = [r.test_error for r in series]
        v = [r.dp_violation for r in series]
        color = f"C{i}"
        ax.plot(x, v, markers[i % 7] + "-", color=color, lw=1.3, ms=6, label=name)
        below = [max(r.dp_violation - r.dp_violation_lower, 0.0) for r in series]
        above = [max(r.dp_violation_upper - r.dp_violation, 0.0) for r in series]
        ax.errorbar(x, v, yerr=[below, above], fmt="none", ecolor=color, lw=0.8, capsize=2)
        if len(series) > 1:
            for j, (r, xi, vi) in enumerate(zip(series, x, v)):
                ax.annotate(
                    r.setting, (xi, vi), textcoords="offset points",
                    xytext=(5, 3) if j % 2 == 0 else (-5, -11), ha="left" if j % 2 == 0
                    else "right", fontsize=7, color=color,
                )  # fmt: skip
    points = published("DP-FERMI", "dp", "adult", epsilon)
    if points:
        ax.plot(
            [p[1] for p in points], [p[2] for p in points], "x--", color="0.5", lw=1, ms=5,
            label=f"published DP-FERMI, ε = {eps_text} (Lowy et al. 2023;\n"
            "15-seed mean, own λ scale)",
        )  # fmt: skip
    ax.set_xlabel("test error (1 − accuracy)")
    ax.set_ylabel("demographic-parity violation (test)")
    delta_text = "" if math.isinf(epsilon) else f", δ = {delta:g}"
    ax.set_title(
        f"Adult: every estimator at ε = {eps_text}{delta_text} (one seed, logistic regression)",
        fontsize=10,
    )
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    fig.savefig(path)
