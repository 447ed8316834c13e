"""Reproductions of each paper's headline comparison (``skfairdp benchmark``).

Every benchmark fits our estimator(s) on bundled data with sound accounting
(each fit's ``privacy_spent_`` is the guarantee of its own ``dp_event_``),
measures hard predictions on a held-out split over several seeds, and writes
``<name>.csv`` (one row per fit), ``<name>.md`` (means ± standard deviations
beside the published numbers, and the PASS/FAIL checks of its targets) and
``<name>.png`` (the trade-off plot); a quick run writes ``<name>_quick.*``, titled
"(quick run)".

This module only names the benchmarks, so that ``skfairdp --help`` stays fast;
each one lives in its own submodule, imported when it runs:

==================  ==========================================================================
``dpfermi``         DP-FERMI (Lowy, Gupta & Razaviyayn, ICLR 2023)
``raco``            RaCO-DP (private rate-constrained optimisation)
``global-scaling``  DPSGD-Global-Adapt (Esipova et al., ICLR 2023), Table 4
``cgoo``            CGOOReduction vs fairlearn and Jagielski et al. (2019)
``federated``       SteFFLe: federated DP-FERMI across silos (needs ``skfairdp.federated``)
``pipelines``       model classes of the private pipelines on Adult (issue 37): z-scores vs bins
==================  ==========================================================================

Examples
--------
>>> from skfairdp.benchmarks import BENCHMARKS
>>> sorted(BENCHMARKS)
['cgoo', 'dpfermi', 'federated', 'global-scaling', 'pipelines', 'raco']
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

__all__ = ["BENCHMARKS", "BenchmarkUnavailable", "run_benchmark"]

#: Benchmark name -> one-line description (shown by ``skfairdp benchmark --help``).
BENCHMARKS: dict[str, str] = {
    "dpfermi": "DP-FERMI on Adult, demographic parity: lambda sweep at eps 1 and inf",
    "raco": "RaCO-DP on Adult, demographic parity: tolerance sweep at eps 1, 3, 9",
    "global-scaling": "DPSGD-Global-Adapt on balanced Adult at eps 3.41: accuracy drop by group",
    "cgoo": "CGOOReduction on Adult, equalized odds at eps 1, vs fairlearn ExpGrad",
    "federated": "federated DP-FERMI (SteFFLe) on Credit Card, 3 silos, vs centralized",
    "pipelines": "private pipelines on raw Adult at total eps 1: z-scores vs uniform bins",
}


class BenchmarkUnavailable(RuntimeError):
    """A benchmark needs a part of skfairdp that this installation lacks."""


_MODULES = {
    "dpfermi": "dpfermi",
    "raco": "raco",
    "global-scaling": "global_scaling",
    "cgoo": "cgoo",
    "federated": "federated",
    "pipelines": "pipelines",
}


def run_benchmark(
    name: str,
    *,
    quick: bool = False,
    seeds: Sequence[int] | None = None,
    output: str | Path = "skfairdp-benchmarks",
    progress: bool = True,
) -> list[Path]:
    """Run one benchmark and write its CSV, markdown and PNG under ``output``.

    Parameters
    ----------
    name : str
        A key of :data:`BENCHMARKS`.
    quick : bool, default=False
        A small version (a subsample, one privacy level, few settings, one
        seed unless ``seeds`` is given) that finishes in minutes on 2 CPU
        cores; its numbers are a smoke test, not a reproduction.
    seeds : sequence of int, optional
        Seeds of the splits and fits; default ``0..4`` (``0`` with ``quick``).
    output : str or Path, default="skfairdp-benchmarks"
        Directory of the output files (created if needed).
    progress : bool, default=True
        Show a progress bar (tqdm when installed, else one line per fit) on stderr.

    Returns
    -------
    list of Path
        The files written: ``<stem>.csv``, ``<stem>.md`` and ``<stem>.png``; the stem
        is the benchmark's file name (``global_scaling`` for ``global-scaling``), with
        ``_quick`` appended for a quick run.

    Raises
    ------
    BenchmarkUnavailable
        When the benchmark needs a module this installation lacks
        (``federated`` without :mod:`skfairdp.federated`).
    """
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose from {sorted(BENCHMARKS)}")
    module = importlib.import_module(f".{_MODULES[name]}", __name__)
    return module.run(quick=quick, seeds=seeds, output=Path(output), progress=progress)
