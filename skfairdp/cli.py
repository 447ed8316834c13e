"""The ``skfairdp`` command.

``skfairdp demo`` (or ``python -m skfairdp demo``) fits
:class:`~skfairdp.DPFermiClassifier` on the bundled UCI Adult data for a few
fairness weights at one privacy budget, prints a table of test accuracy,
demographic-parity violation and privacy spent, and saves the
accuracy/fairness trade-off plot as a PNG.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from . import __version__
from .fermi import DPFermiClassifier

DEFAULT_WEIGHTS = (0.0, 1.0, 2.0, 4.0, 8.0)
DEFAULT_OUTPUT = "skfairdp-demo"
PLOT_NAME = "dpfermi_adult_tradeoff.png"
TABLE_NAME = "dpfermi_adult_tradeoff.csv"

# Published DP-FERMI demographic-parity curves on Adult (logistic regression, mean
# of 15 seeds; Lowy, Gupta & Razaviyayn 2023, from the authors' result files; see
# shared/research/anchor-dpfermi-curves.txt): epsilon -> [(lambda, error, violation)].
# Their binary regulariser is a single-column variant of ERMI and their split,
# delta and accounting differ (doc/dpfermi.md), so their lambdas are not ours.
PUBLISHED_ADULT_DP = {
    0.5: [(0, 0.1664, 0.1956), (0.25, 0.1671, 0.1458), (0.5, 0.1718, 0.1001),
          (0.75, 0.1794, 0.0590), (1, 0.1876, 0.0287)],
    1.0: [(0, 0.1585, 0.2017), (0.25, 0.1604, 0.1417), (0.5, 0.1663, 0.0983),
          (0.75, 0.1763, 0.0455), (1, 0.1869, 0.0099)],
    3.0: [(0, 0.1574, 0.1964), (0.25, 0.1599, 0.1398), (0.5, 0.1672, 0.0881),
          (0.75, 0.1779, 0.0432), (1, 0.1880, 0.0118)],
    9.0: [(0, 0.1571, 0.1932), (0.25, 0.1587, 0.1417), (0.5, 0.1663, 0.0937),
          (0.75, 0.1751, 0.0455), (1, 0.1885, 0.0071)],
    math.inf: [(0, 0.1555, 0.1980), (0.25, 0.1576, 0.1399), (0.5, 0.1648, 0.0895),
               (0.75, 0.1764, 0.0417), (1, 0.1869, 0.0055)],
}  # fmt: skip


@dataclass
class DemoRow:
    """One fit of the demo."""

    fairness_weight: float
    test_accuracy: float
    dp_violation: float
    epsilon_spent: float
    delta: float
    fit_seconds: float


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 (or inf), got {text}")
    return value


def _weight(text: str) -> float:
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"fairness weights must be finite and >= 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _epochs(text: str) -> int | str:
    """``"auto"`` (the estimator's rule in ``n``) or a positive number of epochs."""
    return "auto" if text == "auto" else _positive_int(text)


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``skfairdp`` command."""
    parser = argparse.ArgumentParser(
        prog="skfairdp",
        description="Differentially private and fair classifiers with a scikit-learn API.",
    )
    parser.add_argument("--version", action="version", version=f"skfairdp {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="fit DPFermiClassifier on bundled Adult data and plot the fairness trade-off",
        description=(
            "Fit DPFermiClassifier (privacy_unit='record', demographic parity) on the bundled "
            "UCI Adult data (75/25 stratified split) once per fairness weight, print test "
            "accuracy, demographic-parity violation and the privacy spent, and save the "
            "trade-off plot (test error vs. DP violation) and the table under --output."
        ),
    )
    demo.add_argument(
        "--epsilon",
        type=_positive_float,
        default=1.0,
        help="privacy budget of each fit (default: 1; 'inf' trains without noise)",
    )
    demo.add_argument(
        "--delta", type=_positive_float, default=1e-5, help="delta of each fit (default: 1e-5)"
    )
    demo.add_argument(
        "--weights",
        type=_weight,
        nargs="+",
        default=list(DEFAULT_WEIGHTS),
        metavar="LAMBDA",
        help="fairness weights to fit, one fit each (default: 0 1 2 4 8)",
    )
    demo.add_argument(
        "--max-epochs",
        type=_epochs,
        default=DPFermiClassifier().max_epochs,
        help="epochs per fit, or 'auto' (default: DPFermiClassifier's default, %(default)s)",
    )
    demo.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the train/test split and of each fit's random_state (default: 0)",
    )
    demo.add_argument(
        "--output",
        default=DEFAULT_OUTPUT,
        metavar="DIR",
        help=f"directory for the PNG plot and CSV table (default: ./{DEFAULT_OUTPUT}/)",
    )
    demo.add_argument(
        "--threads",
        type=_non_negative_int,
        default=1,
        help=(
            "torch CPU threads during the fits (default: 1, fastest for this small model, "
            "especially on a busy machine; 0 keeps torch's default)"
        ),
    )
    demo.add_argument(
        "--no-progress", action="store_true", help="do not show progress bars (stderr)"
    )
    demo.set_defaults(handler=run_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skfairdp`` console script and ``python -m skfairdp``."""
    parser = build_parser()
    args = parser.parse_args(None if argv is None else [str(a) for a in argv])
    if args.command is None:
        parser.print_help()
        return 2
    return args.handler(args)


# -- demo ------------------------------------------------------------------------
def run_demo(args: argparse.Namespace) -> int:
    """Run ``skfairdp demo``; returns the exit code."""
    import numpy as np
    import torch
    from sklearn.model_selection import train_test_split
    from tqdm.auto import tqdm

    from .datasets import load_adult
    from .metrics import demographic_parity_violation

    adult = load_adult(preprocess=True)
    X = adult.data.to_numpy(dtype=np.float32)
    y = adult.target.to_numpy()
    s = adult.sensitive_features.to_numpy()
    X_train, X_test, y_train, y_test, s_train, s_test = train_test_split(
        X, y, s, test_size=0.25, stratify=y, random_state=args.seed
    )
    print(
        f"DPFermiClassifier on UCI Adult (bundled): {len(y_train):,} train / {len(y_test):,} "
        f"test rows, {X.shape[1]} features, sensitive feature "
        f"{adult.sensitive_feature_name!r} (not a model input)"
    )
    print(
        f"epsilon={args.epsilon:g}, delta={args.delta:g}, privacy_unit='record', "
        f"fairness='demographic_parity', max_epochs={args.max_epochs}, seed={args.seed}"
    )
    sys.stdout.flush()

    rows: list[DemoRow] = []
    previous_threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    try:
        bar = tqdm(args.weights, desc="fairness weights", disable=args.no_progress)
        for weight in bar:
            bar.set_postfix(fairness_weight=f"{weight:g}")
            clf = DPFermiClassifier(
                fairness_weight=weight,
                epsilon=args.epsilon,
                delta=args.delta,
                privacy_unit="record",
                max_epochs=args.max_epochs,
                random_state=args.seed,
                verbose=0 if args.no_progress else 1,
            )
            tic = time.perf_counter()
            clf.fit(X_train, y_train, sensitive_features=s_train)
            seconds = time.perf_counter() - tic
            y_pred = clf.predict(X_test)
            rows.append(
                DemoRow(
                    fairness_weight=weight,
                    test_accuracy=float(np.mean(y_pred == y_test)),
                    dp_violation=demographic_parity_violation(
                        y_test, y_pred, sensitive_features=s_test
                    ),
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
    summary = f"{len(rows)} fit{'s' if len(rows) != 1 else ''} in {total:.1f} s."
    if len(rows) > 1:
        summary += (
            " Each fit spends its own budget: together they cost more than one fit "
            "(compose their dp_event_, see doc/privacy.md)."
        )
    print(summary)
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
        "fairness_weight",
        "test_accuracy",
        "dp_violation",
        "epsilon_spent",
        "delta",
        "fit_seconds",
    )
    lines = [
        (
            f"{r.fairness_weight:g}",
            f"{r.test_accuracy:.4f}",
            f"{r.dp_violation:.4f}",
            f"{r.epsilon_spent:.4f}",
            f"{r.delta:.0e}" if r.delta else "0",
            f"{r.fit_seconds:.1f}",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    out += ["  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in lines]
    return "\n".join(out)


def write_csv(rows: Sequence[DemoRow], path: str) -> None:
    """Write the demo's results to ``path`` as CSV."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(DemoRow.__dataclass_fields__))
        for r in rows:
            writer.writerow(
                [
                    r.fairness_weight,
                    f"{r.test_accuracy:.6f}",
                    f"{r.dp_violation:.6f}",
                    f"{r.epsilon_spent:.6f}",
                    r.delta,
                    f"{r.fit_seconds:.3f}",
                ]
            )


def plot_tradeoff(rows: Sequence[DemoRow], path: str, *, epsilon: float, delta: float) -> None:
    """Save the trade-off plot (test error vs. DP violation, one point per weight) as PNG.

    Uses matplotlib's object-oriented API with the Agg canvas, so it needs no
    display and leaves pyplot's global state alone.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.6), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    errors = [1.0 - r.test_accuracy for r in rows]
    violations = [r.dp_violation for r in rows]
    eps_text = "∞" if math.isinf(epsilon) else f"{epsilon:g}"
    ax.plot(
        errors,
        violations,
        "o-",
        color="tab:blue",
        lw=1.5,
        ms=6,
        label=f"skfairdp DPFermiClassifier (one seed), ε = {eps_text}",
    )
    for i, (r, x, v) in enumerate(zip(rows, errors, violations)):
        ax.annotate(  # alternate above-right / below-left, so close points stay legible
            f"λ={r.fairness_weight:g}",
            (x, v),
            textcoords="offset points",
            xytext=(6, 4) if i % 2 == 0 else (-6, -12),
            ha="left" if i % 2 == 0 else "right",
            fontsize=8,
            color="tab:blue",
        )
    published = PUBLISHED_ADULT_DP.get(float(epsilon))
    if published is not None:
        ax.plot(
            [p[1] for p in published],
            [p[2] for p in published],
            "s--",
            color="tab:gray",
            lw=1,
            ms=4,
            alpha=0.8,
            label=(
                f"published DP-FERMI, ε = {eps_text} (Lowy et al. 2023):\n"
                "15-seed mean, DP of s only, own λ scale"
            ),
        )
    ax.set_xlabel("test error (1 − accuracy)")
    ax.set_ylabel("demographic-parity violation (test)")
    delta_text = "" if math.isinf(epsilon) else f", δ = {delta:g}"
    ax.set_title(f"Adult: accuracy–fairness trade-off at ε = {eps_text}{delta_text}", fontsize=11)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.savefig(path)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
