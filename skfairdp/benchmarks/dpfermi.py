"""DP-FERMI (Lowy, Gupta & Razaviyayn, ICLR 2023): Adult, demographic parity.

The paper's headline figure: test error against demographic-parity violation on
Adult (sensitive attribute ``sex``) as the fairness weight λ grows, privately
(ε = 1) and without noise (ε = ∞), beside the published DP-FERMI curve and its
baselines Tran et al. 2021a and PFLD (Tran et al. 2021b).
``DPFermiClassifier`` at its defaults (logistic regression,
``privacy_unit="record"``, δ = 1e-5) on our λ scale (documented range 0–64).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ._common import DELTA, Task, quick_stem, resolve_seeds, run_tasks
from ._published import published
from ._tradeoff import report

FULL = {"epsilons": (1.0, float("inf")), "lambdas": (0.0, 1.0, 4.0, 16.0, 64.0), "n": None}
QUICK = {"epsilons": (1.0,), "lambdas": (0.0, 16.0), "n": 4000, "max_epochs": 10}


def tasks(quick: bool, seeds: Sequence[int]) -> list[Task]:
    """The fits of the benchmark."""
    from ..fermi import DPFermiClassifier

    grid = QUICK if quick else FULL
    extra = {"max_epochs": grid["max_epochs"]} if "max_epochs" in grid else {}
    return [
        Task(
            method="DPFermiClassifier",
            setting=f"λ={lam:g}",
            value=lam,
            epsilon=eps,
            seed=seed,
            n_samples=grid["n"],
            make=lambda lam=lam, eps=eps, seed=seed: DPFermiClassifier(
                fairness_weight=lam, epsilon=eps, delta=DELTA, random_state=seed, **extra
            ),
        )
        for eps in grid["epsilons"]
        for lam in grid["lambdas"]
        for seed in seeds
    ]


def run(*, quick: bool, seeds: Sequence[int] | None, output: Path, progress: bool) -> list[Path]:
    """Run the benchmark; write ``dpfermi.csv``, ``dpfermi.md`` and ``dpfermi.png``."""
    seeds = resolve_seeds(seeds, quick)
    output.mkdir(parents=True, exist_ok=True)
    todo = tasks(quick, seeds)
    stem = quick_stem("dpfermi", quick)
    rows = run_tasks(todo, output / f"{stem}.csv", desc="dpfermi", progress=progress)
    epsilons = sorted({t.epsilon for t in todo})
    methods = ("DP-FERMI", "Tran et al. 2021a", "PFLD (Tran et al. 2021b)")
    return report(
        rows,
        output=output,
        stem=stem,
        title="DP-FERMI on Adult: test error vs demographic-parity violation",
        name="dpfermi",
        quick=quick,
        seeds=seeds,
        protocol=(
            "bundled Adult (`load_dataset('adult')`, sensitive attribute sex, not a model "
            "input), 75/25 split stratified by (group, label) with `random_state=seed`; "
            "`DPFermiClassifier(fairness_weight=λ, epsilon=ε, delta=1e-5, "
            "random_state=seed)`, other parameters at their defaults (logistic regression, "
            "record-level DP); hard predictions on the test split."
        ),
        notion="dp",
        published={
            eps: [(m, published(m, "dp", "adult", eps)) for m in methods] for eps in epsilons
        },
        notes=[
            "Published: the authors' result files (15 seeds, their fixed split, batch 1024, "
            "200 epochs, δ = 1/n², their binary single-column regulariser); their λ is not "
            "on our scale (ours: 0–64, doc/dpfermi.md)."
        ],
    )
