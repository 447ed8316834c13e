"""The ``skfairdp`` command (also ``python -m skfairdp``).

- ``skfairdp demo``: every estimator on the bundled UCI Adult data at one
  privacy budget, one table and one accuracy/fairness trade-off plot.
- ``skfairdp benchmark NAME``: re-runs a paper's headline comparison on bundled
  data (:mod:`skfairdp.benchmarks`), writing CSV, markdown and PNG.

This module imports only the standard library, so ``skfairdp --help`` answers
at once; each command imports torch and scikit-learn when it runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from .. import __version__
from ..benchmarks import BENCHMARKS
from .names import (
    DEFAULT_BENCHMARK_OUTPUT,
    DEFAULT_BOUNDS,
    DEFAULT_DEMO_ESTIMATORS,
    DEFAULT_OUTPUT,
    DEFAULT_TOLERANCES,
    DEFAULT_WEIGHTS,
    DEMO_ESTIMATORS,
    PLOT_NAME,
    TABLE_NAME,
)

__all__ = ["DEMO_ESTIMATORS", "PLOT_NAME", "TABLE_NAME", "build_parser", "main"]


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


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
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
    _add_demo(commands)
    _add_benchmark(commands)
    return parser


def _add_demo(commands) -> None:
    demo = commands.add_parser(
        "demo",
        help="every estimator on bundled Adult at one epsilon: a table and a trade-off plot",
        description=(
            "Fit each estimator (logistic regression, privacy_unit='record') on the bundled "
            "UCI Adult data (75/25 stratified split; sensitive feature sex, not a model "
            "input) at one privacy budget: DPFermiClassifier once per fairness weight, "
            "RaCODPClassifier once per tolerance, CGOOReduction once per bound, "
            "GlobalScalingDPClassifier and DPSGDClassifier once. Print test error, "
            "demographic-parity violation with its 95% sampling interval (an exact "
            "PrivateMetricFrame: the bundled data are public), privacy spent and fit time, "
            "and save the table "
            "and the trade-off plot (test error vs DP violation) under --output."
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
        "--estimators",
        nargs="+",
        choices=list(DEMO_ESTIMATORS),
        default=list(DEFAULT_DEMO_ESTIMATORS),
        metavar="NAME",
        help=(
            "estimators to fit, from: " + ", ".join(DEMO_ESTIMATORS) + " (default: "
            + " ".join(DEFAULT_DEMO_ESTIMATORS) + "; dpsgdf and fairlens are the baselines of "
            "the Global-Adapt paper, and FairLens's epsilon is not a guarantee)"
        ),
    )  # fmt: skip
    demo.add_argument(
        "--weights",
        type=_weight,
        nargs="+",
        default=list(DEFAULT_WEIGHTS),
        metavar="LAMBDA",
        help="DPFermiClassifier fairness weights, one fit each (default: 0 1 4 16 64)",
    )
    demo.add_argument(
        "--tolerances",
        type=_fraction,
        nargs="+",
        default=list(DEFAULT_TOLERANCES),
        metavar="GAMMA",
        help="RaCODPClassifier tolerances, one fit each (default: 0.02 0.05 0.1)",
    )
    demo.add_argument(
        "--bounds",
        type=_fraction,
        nargs="+",
        default=list(DEFAULT_BOUNDS),
        metavar="BOUND",
        help="CGOOReduction difference bounds, one fit each (default: 0.02)",
    )
    demo.add_argument(
        "--max-epochs",
        type=_epochs,
        default=None,
        help=(
            "epochs of every SGD fit (CGOOReduction: of each oracle fit), or 'auto'; "
            "default: each estimator's own default"
        ),
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
            "torch CPU threads during the fits (default: 1, fastest for these small models, "
            "especially on a busy machine; 0 keeps torch's default)"
        ),
    )
    demo.add_argument(
        "--no-progress", action="store_true", help="do not show progress bars (stderr)"
    )
    demo.set_defaults(handler=_run_demo)


def _add_benchmark(commands) -> None:
    names = ", ".join(f"{k} ({v})" for k, v in BENCHMARKS.items())
    bench = commands.add_parser(
        "benchmark",
        help="re-run a paper's headline comparison; writes CSV, markdown and PNG",
        description=(
            "Re-run each paper's headline comparison on bundled data with sound accounting "
            "(every private fit spends at most its epsilon), over several seeds, and write "
            "NAME.csv (one row per fit), NAME.md (means ± sd beside the published numbers) "
            f"and NAME.png under --output (NAME_quick.* with --quick). Benchmarks: {names}; "
            "'all' runs them in turn. Ends with a PASS/FAIL count of the checks; exits 1 "
            "when a check failed (see --explore)."
        ),
    )
    bench.add_argument("name", choices=[*BENCHMARKS, "all"], help="which benchmark")
    bench.add_argument(
        "--quick",
        action="store_true",
        help=(
            "a small version (subsample, few settings, short training, seed 0): minutes on "
            "2 cores; a smoke test, not a reproduction"
        ),
    )
    bench.add_argument(
        "--seeds",
        type=_non_negative_int,
        nargs="+",
        default=None,
        metavar="SEED",
        help="seeds of the splits and fits (default: 0 1 2; with --quick: 0)",
    )
    bench.add_argument(
        "--output",
        default=DEFAULT_BENCHMARK_OUTPUT,
        metavar="DIR",
        help=f"directory of the results (default: ./{DEFAULT_BENCHMARK_OUTPUT}/)",
    )
    bench.add_argument(
        "--explore",
        action="store_true",
        help=(
            "an exploratory run: report failed targets (FAIL) but exit 0; a failed privacy "
            "accounting check (a fit spending more than its epsilon) still exits 1"
        ),
    )
    bench.add_argument(
        "--no-progress", action="store_true", help="do not show progress bars (stderr)"
    )
    bench.set_defaults(handler=_run_benchmark)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skfairdp`` console script and ``python -m skfairdp``."""
    parser = build_parser()
    args = parser.parse_args(None if argv is None else [str(a) for a in argv])
    if args.command is None:
        parser.print_help()
        return 2
    return args.handler(args)


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)


def _run_benchmark(args: argparse.Namespace) -> int:
    from .benchmark import run_benchmark_command

    return run_benchmark_command(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
