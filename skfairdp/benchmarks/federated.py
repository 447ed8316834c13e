"""SteFFLe (federated DP-FERMI, Gupta et al. 2024): Credit Card across 3 silos.

The paper's headline figure (its Fig. 1): test error against
demographic-parity violation on Credit Card with N = 3 silos under inter-silo
record-level DP at ε = 1, as the fairness weight grows. Here
``FederatedDPFermiClassifier`` (i.i.d. silos, h = 0, local backend) beside the
centralized ``DPFermiClassifier`` on the same rows (the cost of federation:
each silo noises its own third of the data), and the published DP-FERMI /
PFLD points. The paper itself publishes figures only (quoted in the report).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from . import BenchmarkUnavailable
from ._common import DELTA, Task, quick_stem, resolve_seeds, run_tasks
from ._published import STEFFLE_CLAIMS, published
from ._tradeoff import report

FULL = {"lambdas": (0.0, 1.0, 4.0, 16.0), "n": None, "silos": 3}
QUICK = {"lambdas": (0.0, 4.0), "n": 4000, "silos": 3, "max_epochs": 5}


class FederatedUnavailable(BenchmarkUnavailable):
    """Raised when ``skfairdp.federated`` is not installed in this version."""


def _federated_class():
    try:
        from ..federated import FederatedDPFermiClassifier
    except ImportError as exc:
        raise FederatedUnavailable(
            "the 'federated' benchmark needs skfairdp.federated (FederatedDPFermiClassifier), "
            f"which this installation does not provide ({exc})"
        ) from exc
    return FederatedDPFermiClassifier


def tasks(quick: bool, seeds: Sequence[int]) -> list[Task]:
    """The fits of the benchmark."""
    from ..fermi import DPFermiClassifier

    federated = _federated_class()
    grid = QUICK if quick else FULL
    extra = {"max_epochs": grid["max_epochs"]} if "max_epochs" in grid else {}
    out = []
    for lam in grid["lambdas"]:
        for seed in seeds:
            common = dict(fairness_weight=lam, epsilon=1.0, delta=DELTA, random_state=seed)
            out.append(
                Task(
                    method=f"FederatedDPFermiClassifier ({grid['silos']} silos, h=0)",
                    setting=f"λ={lam:g}",
                    value=lam,
                    epsilon=1.0,
                    seed=seed,
                    dataset="credit-card",
                    n_samples=grid["n"],
                    make=lambda common=common: federated(
                        n_silos=grid["silos"], heterogeneity=0.0, **common, **extra
                    ),
                )
            )
            out.append(
                Task(
                    method="DPFermiClassifier (centralized)",
                    setting=f"λ={lam:g}",
                    value=lam,
                    epsilon=1.0,
                    seed=seed,
                    dataset="credit-card",
                    n_samples=grid["n"],
                    make=lambda common=common: DPFermiClassifier(**common, **extra),
                )
            )
    return out


def run(*, quick: bool, seeds: Sequence[int] | None, output: Path, progress: bool) -> list[Path]:
    """Run the benchmark; write ``federated.csv``, ``federated.md`` and ``federated.png``."""
    seeds = resolve_seeds(seeds, quick)
    todo = tasks(quick, seeds)  # raises FederatedUnavailable before creating anything
    output.mkdir(parents=True, exist_ok=True)
    stem = quick_stem("federated", quick)
    rows = run_tasks(todo, output / f"{stem}.csv", desc="federated", progress=progress)
    methods = ("DP-FERMI", "PFLD (Tran et al. 2021b)")
    return report(
        rows,
        output=output,
        stem=stem,
        title="Federated DP-FERMI on Credit Card (3 silos, ε = 1) vs centralized",
        name="federated",
        quick=quick,
        seeds=seeds,
        protocol=(
            "bundled Credit Card (sensitive attribute sex, not a model input), 75/25 split "
            "stratified by (group, label) with `random_state=seed`; "
            "`FederatedDPFermiClassifier(n_silos=3, heterogeneity=0, fairness_weight=λ, "
            "epsilon=1, delta=1e-5, random_state=seed)` (every silo meets ε = 1 on its own "
            "records) and `DPFermiClassifier` with the same parameters on the pooled rows; "
            "hard predictions on the test split."
        ),
        notion="dp",
        published={1.0: [(m, published(m, "dp", "credit-card", 1.0)) for m in methods]},
        notes=[STEFFLE_CLAIMS],
    )
