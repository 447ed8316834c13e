"""``skfairdp benchmark NAME``: runs :func:`skfairdp.benchmarks.run_benchmark`."""

from __future__ import annotations

import argparse
import sys
import time

from ..benchmarks import BENCHMARKS, BenchmarkUnavailable, run_benchmark
from ..benchmarks._common import ACCOUNTING_CHECK


def run_benchmark_command(args: argparse.Namespace) -> int:
    """Run one benchmark, or all of them in turn; returns the exit code.

    Every benchmark's checks (its markdown's ``- PASS``/``- FAIL`` lines) are printed as
    it finishes, and a summary counts them at the end. The exit code is 1 when a check
    failed (with ``--explore``, only when the privacy accounting check failed: a fit
    spent more than its epsilon), or when the one benchmark asked for is not available
    in this installation (the ``federated`` one without :mod:`skfairdp.federated`;
    under ``all`` it is skipped); 0 otherwise.
    """
    names = list(BENCHMARKS) if args.name == "all" else [args.name]
    skipped, checks = [], []
    for name in names:
        print(f"== benchmark {name}: {BENCHMARKS[name]}", flush=True)
        tic = time.perf_counter()
        try:
            paths = run_benchmark(
                name,
                quick=args.quick,
                seeds=args.seeds,
                output=args.output,
                progress=not args.no_progress,
            )
        except BenchmarkUnavailable as exc:
            print(f"skfairdp benchmark {name}: skipped: {exc}", file=sys.stderr, flush=True)
            skipped.append(name)
            continue
        print(f"   {time.perf_counter() - tic:.0f} s; wrote " + ", ".join(str(p) for p in paths))
        md = paths[1].read_text(encoding="utf-8")
        for line in md.splitlines():
            if line.startswith(("- PASS", "- FAIL")):
                print("   " + line[2:])
                checks.append((name, line[2:]))
    failed = [(name, line) for name, line in checks if line.startswith("FAIL")]
    return _summary(checks, failed, skipped, names, quick=args.quick, explore=args.explore)


def _summary(checks, failed, skipped, names, *, quick: bool, explore: bool) -> int:
    """Print the PASS/FAIL count and the failed checks; the exit code."""
    text = f"== summary{' (quick run)' if quick else ''}: "
    text += f"{len(checks) - len(failed)} PASS, {len(failed)} FAIL"
    if skipped:
        text += f"; skipped: {', '.join(skipped)}"
    print(text, flush=True)
    for name, line in failed:
        print(f"   {name}: {line}")
    bugs = [line for _, line in failed if line.startswith(f"FAIL: {ACCOUNTING_CHECK}")]
    if skipped and len(names) == 1:
        return 1
    if bugs:
        return 1
    if failed and explore:
        print("   --explore: the failed targets do not change the exit code")
        return 0
    return 1 if failed else 0
