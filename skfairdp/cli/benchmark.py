"""``skfairdp benchmark NAME``: runs :func:`skfairdp.benchmarks.run_benchmark`."""

from __future__ import annotations

import argparse
import sys
import time

from ..benchmarks import BENCHMARKS, BenchmarkUnavailable, run_benchmark


def run_benchmark_command(args: argparse.Namespace) -> int:
    """Run one benchmark, or all of them in turn; returns the exit code.

    A benchmark whose estimator is not available in this installation (the
    ``federated`` one without :mod:`skfairdp.federated`) is reported on stderr;
    alone it exits with status 1, under ``all`` it is skipped.
    """
    names = list(BENCHMARKS) if args.name == "all" else [args.name]
    skipped = []
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
        checks = [line for line in md.splitlines() if line.startswith(("- PASS", "- FAIL"))]
        for line in checks:
            print("   " + line[2:])
    if skipped and len(names) == 1:
        return 1
    return 0
