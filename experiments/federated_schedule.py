"""FederatedDPFermiClassifier's "auto" schedule: fewer, larger rounds at equal quality.

Compares the schedule the federated estimator had before issue 27 (DP-FERMI's rules at
the mean silo size: batch ``n/N / 128`` in [32, 256], 40 epochs, at least 1,000 rounds,
``lr=0.1``, one step per round) with candidate schedules ``R<R>E<E>L<lr>[K<K>]`` of ``R``
rounds per epoch of ``K`` local steps each (batch ``ceil((n/N) / (R K))``; ``K`` 1 when
omitted), ``E`` epochs and step ``lr``, on the local backend. Each fit appends a row to
``<out>/federated_schedule.csv`` (``--resume`` keeps the rows there); the report
``federated_schedule.md`` gives means over seeds and the gap of each candidate to
"before"::

    python experiments/federated_schedule.py --seeds 0 1 2 3 4
    python experiments/federated_schedule.py --seeds 0 --candidates before R5E20L8 \\
        --datasets adult --out /tmp/sched
    python experiments/federated_schedule.py --report-only

Protocol as ``experiments/federated.py``: split 75/25 stratified by group with
``random_state=s``, 3 i.i.d. silos (Algorithm 3, h = 0), epsilon = 1, delta = 1e-5,
``fairness_weight`` in ``--lambdas`` (1.0 is the default), every other parameter at
its default; error and demographic-parity violation on the test split. ``auto`` is
the estimator's defaults as they are now (after this change: the chosen candidate).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "experiments"))
from _results_csv import append, completed  # noqa: E402
from federated import DELTA, _setup, evaluate, load, split  # noqa: E402

DEFAULT_OUT = REPO / "experiments" / "results"
NAME = "federated_schedule"
FIELDS = [
    "candidate", "dataset", "seed", "lam", "n_train", "batch_size", "max_epochs", "lr",
    "rounds", "error", "dp_violation", "eps_spent", "fit_seconds",
]  # fmt: skip
CANDIDATES = ("before", "auto", "R4E15L8", "R4E20L8", "R4E15L4K2", "R4E15L2K4")


def params(candidate: str, n_train: int, n_silos: int = 3) -> dict:
    """The estimator parameters of ``candidate`` for a training set of ``n_train`` rows."""
    from skfairdp._fit.schedules import fermi_batch_size, fermi_max_epochs

    n_ref = max(1, round(n_train / n_silos))
    if candidate == "auto":
        return {}
    if candidate == "before":
        batch = fermi_batch_size(n_ref)
        return {
            "batch_size": batch, "max_epochs": fermi_max_epochs(n_ref, batch), "lr": 0.1,
            "local_steps": 1,
        }  # fmt: skip
    found = re.fullmatch(r"R(\d+)E(\d+)L([\d.]+)(?:K(\d+))?", candidate)
    if found is None:
        raise ValueError(
            f"candidate {candidate!r}: 'before', 'auto' or R<rounds>E<epochs>L<lr>[K<steps>]"
        )
    per_epoch, epochs, lr = int(found[1]), int(found[2]), float(found[3])
    steps = int(found[4] or 1)
    return {
        "batch_size": math.ceil(n_ref / (per_epoch * steps)), "max_epochs": epochs, "lr": lr,
        "local_steps": steps,
    }  # fmt: skip


def fit_one(candidate, data, parts, *, lam, seed):
    from skfairdp.federated import FederatedDPFermiClassifier

    Xtr, _, ytr, _, str_, _ = parts
    start = time.perf_counter()
    clf = FederatedDPFermiClassifier(
        fairness_weight=lam, epsilon=1.0, delta=DELTA, random_state=seed,
        **params(candidate, len(ytr)),
    )  # fmt: skip
    clf.fit(Xtr, ytr, sensitive_features=str_)
    seconds = time.perf_counter() - start
    error, dp = evaluate(clf, parts)
    lr = clf.lr_ if hasattr(clf, "lr_") else clf.lr
    return {
        "n_train": len(ytr), "batch_size": clf.batch_size_, "max_epochs": clf.max_epochs_,
        "lr": lr, "rounds": clf.n_rounds_, "error": error, "dp_violation": dp,
        "eps_spent": clf.privacy_spent_.epsilon, "fit_seconds": seconds,
    }  # fmt: skip


def run(args):
    path = args.out / f"{NAME}.csv"
    done = completed(path, ("candidate", "dataset", "seed", "lam")) if args.resume else set()
    if not args.resume and path.exists():
        path.unlink()
    for dataset in args.datasets:
        data = load(dataset)
        for seed in args.seeds:
            parts = split(data, seed)
            for lam in args.lambdas:
                for candidate in args.candidates:
                    key = (candidate, dataset, str(seed), str(lam))
                    if key in done:
                        continue
                    row = fit_one(candidate, data, parts, lam=lam, seed=seed)
                    row.update(candidate=candidate, dataset=dataset, seed=seed, lam=lam)
                    append(path, FIELDS, row)
                    print(
                        f"{dataset} seed={seed} lam={lam} {candidate}: rounds={row['rounds']} "
                        f"error={row['error']:.4f} dp={row['dp_violation']:.4f} "
                        f"({row['fit_seconds']:.1f} s)",
                        flush=True,
                    )


def report(args):
    rows = list(csv.DictReader((args.out / f"{NAME}.csv").open()))
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["lam"], r["candidate"]), []).append(r)
    lines = [
        "# FederatedDPFermiClassifier: the auto schedule (issue 27)",
        "",
        "Written by `experiments/federated_schedule.py` (local backend, 3 i.i.d. silos, "
        "epsilon = 1, delta = 1e-5, 75/25 split). Means over seeds; `d error` and `d dp` are "
        "the mean paired differences to `before` (the defaults before issue 27), with "
        "their standard errors over seeds. `seeds` 0-4 are the issue's; where more seeds "
        "ran, a second row pools all of them. `auto` is the estimator's defaults (60 rounds "
        "of 3 local steps); `R<R>E<E>L<lr>K<K>`: `R` rounds per epoch of `K` local steps, "
        "`E` epochs, step `lr` (`K` 1 when omitted).",
        "",
        "| dataset | lambda | candidate | seeds | rounds | batch | epochs | lr | error | dp "
        "violation | d error | d dp | fit s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    subsets = []
    for (dataset, lam, candidate), group in sorted(groups.items()):
        first5 = [r for r in group if int(r["seed"]) < 5]
        subsets.append((dataset, lam, candidate, first5))
        if len(first5) < len(group):
            subsets.append((dataset, lam, candidate, group))
    for dataset, lam, candidate, group in subsets:
        base = {r["seed"]: r for r in groups.get((dataset, lam, "before"), [])}
        err = np.array([float(r["error"]) for r in group])
        dp = np.array([float(r["dp_violation"]) for r in group])
        paired = [(float(r["error"]) - float(base[r["seed"]]["error"]),
                   float(r["dp_violation"]) - float(base[r["seed"]]["dp_violation"]))
                  for r in group if r["seed"] in base]  # fmt: skip
        if paired and candidate != "before":
            d = np.array(paired)
            se = d.std(axis=0, ddof=1) / math.sqrt(len(d)) if len(d) > 1 else [math.nan] * 2
            gaps = f"{d[:, 0].mean():+.4f} ± {se[0]:.4f} | {d[:, 1].mean():+.4f} ± {se[1]:.4f}"
        else:
            gaps = "| "
        first = group[0]
        lines.append(
            f"| {dataset} | {lam} | {candidate} | {_seed_range(group)} | {first['rounds']} | "
            f"{first['batch_size']} | {first['max_epochs']} | {float(first['lr']):g} | "
            f"{err.mean():.4f} | {dp.mean():.4f} | {gaps} | "
            f"{np.mean([float(r['fit_seconds']) for r in group]):.1f} |"
        )
    (args.out / f"{NAME}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _seed_range(group) -> str:
    seeds = sorted(int(r["seed"]) for r in group)
    return (
        f"{seeds[0]}-{seeds[-1]}"
        if seeds == list(range(seeds[0], seeds[-1] + 1))
        else (",".join(map(str, seeds)))
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--datasets", nargs="+", default=["adult", "credit-card"])
    parser.add_argument("--lambdas", type=float, nargs="+", default=[1.0])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    _setup()
    if not args.report_only:
        run(args)
    report(args)


if __name__ == "__main__":
    main()
