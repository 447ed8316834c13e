"""DPSGD-Global-Adapt (Esipova et al., ICLR 2023), Table 4: Adult at ε = 3.41.

The paper's headline: plain DP-SGD's clipping hurts the minority group more
(accuracy drop π_k = acc_k(non-private) − acc_k(private) differs between the
groups), and DPSGD-Global-Adapt removes that disparity. Set-up of its App. B.2:
Adult with the men down-sampled to the number of women, an 80/20 split, MLP
256-256 tanh, batch 256, 20 epochs, C0 = 0.5, δ = 1e-6, each method's
published hyper-parameters, every private fit calibrated to ε = 3.41 by the
accountant (joint accounting of the noisy counts). FairLens (45 min per seed
on one core) is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._common import (
    CONFIDENCE,
    Curve,
    Task,
    accounting_line,
    evaluation_frame,
    finish,
    fmt_interval,
    fmt_mean_sd,
    group_rows,
    md_table,
    mean_sd,
    preamble,
    quick_stem,
    quick_title,
    resolve_seeds,
    run_tasks,
    target_line,
)
from ._published import GLOBAL_ADAPT_TABLE4

EPSILON, DELTA = 3.41, 1e-6
FULL = {"hidden": (256, 256), "epochs": 20, "n": None}
QUICK = {"hidden": (), "epochs": 5, "n": 4000}
METHODS = ("non-private", "DPSGD", "DPSGD-F", "DPSGD-Global", "DPSGD-Global-Adapt")


def _make(method: str, seed: int, grid: dict[str, Any]):
    from ..baselines import DPSGDFClassifier
    from ..dpsgd.global_scaling import GlobalScalingDPClassifier

    common = dict(
        hidden_layer_sizes=grid["hidden"], activation="tanh", batch_size=256,
        max_epochs=grid["epochs"], random_state=seed,
    )  # fmt: skip
    private = dict(epsilon=EPSILON, delta=DELTA, max_grad_norm=0.5, **common)
    if method == "non-private":
        return GlobalScalingDPClassifier(variant="clip", epsilon=np.inf, lr=0.01, **common)
    if method == "DPSGD":
        return GlobalScalingDPClassifier(variant="clip", lr=0.01, **private)
    if method == "DPSGD-F":
        return DPSGDFClassifier(lr=0.01, count_noise_multiplier=10.0, **private)
    if method == "DPSGD-Global":
        return GlobalScalingDPClassifier(variant="global", lr=1.0, z_init=50.0, **private)
    return GlobalScalingDPClassifier(
        variant="adapt", lr=0.2, z_init=50.0, count_noise_multiplier=10.0, z_lr=0.1,
        z_threshold=1.0, **private,
    )  # fmt: skip


_BALANCED: dict[tuple[int, int | None], tuple[np.ndarray, ...]] = {}


def balanced_split(task: Task) -> tuple[np.ndarray, ...]:
    """Adult with as many men as women (drawn with the seed), split 80/20 by group."""
    key = (task.seed, task.n_samples)
    if key not in _BALANCED:
        from sklearn.model_selection import train_test_split

        from ..datasets import load_dataset

        X, y, s = load_dataset("adult", return_X_y_s=True)
        rng = np.random.default_rng(task.seed)
        female = np.flatnonzero(s == "Female")
        male = rng.choice(np.flatnonzero(s == "Male"), size=len(female), replace=False)
        keep = np.sort(np.concatenate([female, male]))
        if task.n_samples is not None and task.n_samples < len(keep):
            keep = np.sort(rng.choice(keep, size=task.n_samples, replace=False))
        _BALANCED[key] = tuple(
            train_test_split(
                X[keep], y[keep], s[keep], test_size=0.2, random_state=task.seed, stratify=s[keep]
            )
        )
    return _BALANCED[key]


def _evaluate(estimator, task: Task, split) -> dict[str, float]:
    X_test, y_test, s_test = split[1], split[3], split[5]
    y_pred = estimator.predict(X_test)
    correct = y_pred == y_test
    lower, upper = evaluation_frame(y_test, y_pred, s_test, "accuracy").interval(
        "by_group", CONFIDENCE
    )  # the test split's sampling interval of each group's accuracy
    out = {
        "acc_male": 100.0 * float(correct[s_test == "Male"].mean()),
        "acc_female": 100.0 * float(correct[s_test == "Female"].mean()),
        "acc_all": 100.0 * float(correct.mean()),
        "error": float(1.0 - correct.mean()),
    }
    for group, key in (("Male", "acc_male"), ("Female", "acc_female")):
        out[f"{key}_lower"], out[f"{key}_upper"] = 100 * lower[group], 100 * upper[group]
    return out


def tasks(quick: bool, seeds: Sequence[int]) -> list[Task]:
    """The fits of the benchmark."""
    grid = QUICK if quick else FULL
    return [
        Task(
            method=method,
            setting="paper",
            value=0.0,
            epsilon=np.inf if method == "non-private" else EPSILON,
            seed=seed,
            dataset="adult-balanced",
            n_samples=grid["n"],
            uses_groups=method == "DPSGD-F",
            make=lambda method=method, seed=seed: _make(method, seed, grid),
        )
        for seed in seeds
        for method in METHODS
    ]


def _add_gaps(rows: list[dict[str, Any]]) -> None:
    """π_M, π_F (drop from the same seed's non-private model) and π_MF = |π_M − π_F|."""
    base = {r["seed"]: r for r in rows if r["method"] == "non-private"}
    for r in rows:
        b = base.get(r["seed"])
        if r["method"] == "non-private" or b is None:
            continue
        r["pi_male"] = b["acc_male"] - r["acc_male"]
        r["pi_female"] = b["acc_female"] - r["acc_female"]
        r["pi_mf"] = abs(r["pi_male"] - r["pi_female"])


def run(*, quick: bool, seeds: Sequence[int] | None, output: Path, progress: bool) -> list[Path]:
    """Run the benchmark; write ``global_scaling.csv``, ``.md`` and ``.png`` (``_quick``)."""
    seeds = resolve_seeds(seeds, quick)
    output.mkdir(parents=True, exist_ok=True)
    grid = QUICK if quick else FULL
    stem = quick_stem("global_scaling", quick)
    rows = run_tasks(
        tasks(quick, seeds),
        output / f"{stem}.csv",
        desc="global-scaling",
        progress=progress,
        evaluate=_evaluate,
        split=balanced_split,
    )
    _add_gaps(rows)
    title = quick_title(
        "DPSGD-Global-Adapt on balanced Adult at ε = 3.41: who pays for privacy", quick
    )
    model = "logistic regression" if not grid["hidden"] else f"MLP {grid['hidden']} tanh"
    parts = [
        preamble(
            title,
            "global-scaling",
            quick,
            seeds,
            "bundled Adult, men down-sampled (seeded) to the number of women, 80/20 split "
            f"stratified by sex; {model}, batch 256, {grid['epochs']} epochs, C0 = 0.5, "
            "ε = 3.41, δ = 1e-6; the paper's hyper-parameters (lr 0.01 for non-private, "
            "DPSGD and DPSGD-F; Global lr 1, Z 50; Adapt lr 0.2, Z_init 50, σ_2 10, η_Z 0.1, "
            "τ 1). π_k = accuracy of the same seed's non-private model minus the private "
            "one's on group k (points); π_MF = |π_M − π_F|.",
        ),
        "",
        "## Checks",
        "",
        accounting_line(rows),
    ]
    by_method = dict(group_rows(rows, ("method",)))
    adapt = [r["pi_mf"] for r in by_method.get(("DPSGD-Global-Adapt",), []) if "pi_mf" in r]
    dpsgd = [r["pi_mf"] for r in by_method.get(("DPSGD",), []) if "pi_mf" in r]
    if adapt and dpsgd:
        a, d = mean_sd(adapt)[0], mean_sd(dpsgd)[0]
        parts.append(
            target_line("Adapt's π_MF", a, d, "target: below DPSGD's π_MF", strict=True, digits=2)
        )
        parts.append(target_line("Adapt's π_MF", a, 1.0, "target ≤ 1 point", digits=2))
    parts += ["", "## Ours (accuracy in %, π in points)", ""]
    parts += [
        "Group accuracies: mean ± sd over seeds, then [lower, upper]: the 95 % sampling "
        "interval of one test split's group accuracy (`PrivateMetricFrame(..., "
        "epsilon=np.inf)`, exact values on public data), seed means of the bounds.",
        "",
    ]
    lines = []
    for (method,), group in by_method.items():
        gaps = [r for r in group if "pi_mf" in r]
        lines.append(
            (
                method,
                len(group),
                f"{fmt_mean_sd([r['acc_male'] for r in group], 1)} "
                f"{fmt_interval(group, 'acc_male', 1)}".rstrip(),
                f"{fmt_mean_sd([r['acc_female'] for r in group], 1)} "
                f"{fmt_interval(group, 'acc_female', 1)}".rstrip(),
                fmt_mean_sd([r["acc_all"] for r in group], 1),
                fmt_mean_sd([r["pi_male"] for r in gaps], 1) if gaps else "",
                fmt_mean_sd([r["pi_female"] for r in gaps], 1) if gaps else "",
                fmt_mean_sd([r["pi_mf"] for r in gaps], 1) if gaps else "",
                f"{max(r['epsilon_spent'] for r in group):.3f}",
                f"{np.mean([r['seconds'] for r in group]):.1f}",
            )
        )
    parts.append(
        md_table(
            [
                "method",
                "seeds",
                "acc men",
                "acc women",
                "acc all",
                "π_M",
                "π_F",
                "π_MF",
                "ε spent (max)",
                "fit s",
            ],
            lines,
        )  # fmt: skip
    )
    parts += ["", "## Published (Esipova et al. 2023, Table 4; their split, M = group 0)", ""]
    parts.append(
        md_table(
            ["method", "acc men", "acc women", "π_MF"],
            [
                (m, f"{am:.1f}", f"{af:.1f}", "" if pi is None else f"{pi:.1f}")
                for m, (am, af, pi) in GLOBAL_ADAPT_TABLE4.items()
            ],
        )
    )
    curves = []
    for (method,), group in by_method.items():
        gaps = [r for r in group if "pi_mf" in r]
        if not gaps:
            continue
        err, err_sd = mean_sd([r["error"] for r in gaps])
        pi, pi_sd = mean_sd([r["pi_mf"] for r in gaps])
        curves.append(Curve(f"{method} (ours)", [err], [pi], [err_sd], [pi_sd]))
    for method, (am, af, pi) in GLOBAL_ADAPT_TABLE4.items():
        if pi is not None and method in METHODS:
            curves.append(
                Curve(f"{method} (published)", [1 - (am + af) / 200], [pi], published=True)
            )
    return finish(
        output,
        stem,
        rows,
        "\n".join(parts),
        curves,
        title=title,
        xlabel="test error (1 − accuracy)",
        ylabel="π_MF: gap between the groups' accuracy drops (points)",
    )
