"""RaCODPClassifier benchmarks: trade-off curves, FNR bound, and step time.

Experiments (logistic regression; RaCO with every parameter at its default except
``constraints``, ``tolerance``, ``epsilon``, ``delta`` and ``random_state``):

``adult-dp`` / ``credit-dp``
    Demographic parity, epsilon in {1, 3, 9} (and ``inf``: non-private SGDA on
    the same Lagrangian), delta = 1e-5, gamma in {0.01, 0.02, 0.05, 0.1, 0.15}.
``adult-fnr``
    ``constraints="false_negative_rate"``, gamma in {0.2, 0.3, 0.4}, epsilon = 1.
``adult-laplace``
    Demographic parity on Adult at epsilon = 1 with ``histogram_noise="laplace"``
    (sound joint accounting), gamma in {0.02, 0.05}.
``fermi``
    DPFermiClassifier (defaults, as in ``tradeoff.py``) at the same epsilons, a
    lambda sweep, on Adult and Credit Card (Adult at epsilon = 1 is read from
    ``results/tradeoff_adult_dp.csv``).
``speed``
    Time per private step of RaCO-DP vs plain DP-SGD (same model, same engine,
    batch 512, Adult), median of repeats.

Issue 12 (hard predictions, small data, defaults by n): ``issue12`` runs
RaCO-DP at its defaults (hard-rate dual, ``solution="average"``, ``"auto"``
schedule and dual steps), its ``solution="mixture"``, and fairlearn's
non-private ``ExponentiatedGradient(LogisticRegression(max_iter=1000))`` on the
bundled datasets (``skfairdp.datasets.load_dataset``), demographic parity and
equalized odds, gamma in {0.05, 0.1}, epsilon in {1, inf}; 75/25 splits
stratified by group; train and test hard violations, the majority-class error.
``adult-eo`` adds Adult equalized odds at epsilon = 1 for gamma in {0.01, 0.02,
0.025, 0.03} (5 seeds in the committed run). Results in
``results/raco_issue12.csv``; ``report12`` writes ``raco_issue12.md`` with the
target checks::

    python experiments/raco_tradeoff.py issue12 raco expgrad adult-eo --seeds 0 1 2
    python experiments/raco_tradeoff.py issue12 adult-eo --seeds 3 4 --resume
    python experiments/raco_tradeoff.py report12

Protocol as ``tradeoff.py``: 75/25 ``train_test_split(random_state=seed)``,
``random_state=seed`` for the estimator, hard predictions on the test split.
Every fit is appended to ``results/raco_tradeoff.csv`` as it finishes
(``--resume`` skips fits already there); ``report`` writes ``raco_tradeoff.md``
and ``raco_tradeoff.png`` with the PASS/FAIL target checks.

Examples::

    python experiments/raco_tradeoff.py run adult-dp adult-fnr credit-dp fermi adult-laplace
    python experiments/raco_tradeoff.py speed
    python experiments/raco_tradeoff.py report
"""

from __future__ import annotations

import argparse
import csv
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anchor import load_anchor, select  # noqa: E402
from tradeoff import _setup_runtime, library_commit, load_dataset  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "experiments" / "results"
CSV = OUT / "raco_tradeoff.csv"
DELTA = 1e-5
GAMMAS = (0.01, 0.02, 0.05, 0.1, 0.15)
EPSILONS = (1.0, 3.0, 9.0, math.inf)
FNR_GAMMAS = (0.2, 0.3, 0.4)
FERMI_LAMBDAS = (0, 2, 8, 24)
LAPLACE = "RaCO-DP (Laplace)"
LAPLACE_GAMMAS = (0.02, 0.05)
FIELDS = [
    "experiment",
    "method",
    "dataset",
    "constraint",
    "seed",
    "eps",
    "param",
    "test_error",
    "test_dp_violation",
    "test_fnr",
    "test_positive_rate",
    "eps_spent",
    "paper_eps",
    "noise_multiplier",
    "histogram_noise_multiplier",
    "n_steps",
    "fit_seconds",
    "skfairdp_commit",
]


def _fnr(y, pred, positive):
    pos = y == positive
    return float(np.mean(pred[pos] != positive)) if pos.any() else 0.0


def fit_one(data, *, experiment, method, dataset, constraint, seed, eps, param, commit):
    from sklearn.model_selection import train_test_split

    from skfairdp.fermi import DPFermiClassifier
    from skfairdp.metrics import demographic_parity_violation
    from skfairdp.raco import RaCODPClassifier

    X, y, s = data
    Xtr, Xte, ytr, yte, s_tr, s_te = train_test_split(X, y, s, test_size=0.25, random_state=seed)
    if method.startswith("RaCO-DP"):
        clf = RaCODPClassifier(
            constraints=constraint,
            tolerance=param,
            epsilon=eps,
            delta=DELTA,
            random_state=seed,
            histogram_noise="laplace" if method == LAPLACE else "gaussian",
        )
    else:
        clf = DPFermiClassifier(
            fairness="demographic_parity",
            fairness_weight=param,
            epsilon=eps,
            delta=DELTA,
            random_state=seed,
        )
    start = time.perf_counter()
    clf.fit(Xtr, ytr, sensitive_features=s_tr)
    seconds = time.perf_counter() - start
    pred = clf.predict(Xte)
    positive = clf.classes_[-1]
    return {
        "experiment": experiment,
        "method": method,
        "dataset": dataset,
        "constraint": constraint,
        "seed": seed,
        "eps": eps,
        "param": param,
        "test_error": float(np.mean(pred != yte)),
        "test_dp_violation": demographic_parity_violation(yte, pred, sensitive_features=s_te),
        "test_fnr": _fnr(yte, pred, positive),
        "test_positive_rate": float(np.mean(pred == positive)),
        "eps_spent": float(clf.privacy_spent_.epsilon),
        "paper_eps": float(getattr(clf, "paper_epsilon_", math.nan)),
        "noise_multiplier": float(clf.noise_multiplier_),
        "histogram_noise_multiplier": float(getattr(clf, "histogram_noise_multiplier_", math.nan)),
        "n_steps": int(clf.n_steps_),
        "fit_seconds": round(seconds, 3),
        "skfairdp_commit": commit,
    }


def jobs_for(name, seeds):
    out = []
    if name in ("adult-dp", "credit-dp"):
        dataset = "adult" if name == "adult-dp" else "credit-card"
        for eps in EPSILONS:
            for g in GAMMAS:
                for s in seeds:
                    out.append((name, "RaCO-DP", dataset, "demographic_parity", s, eps, g))
    elif name == "adult-fnr":
        for g in FNR_GAMMAS:
            for s in seeds:
                out.append((name, "RaCO-DP", "adult", "false_negative_rate", s, 1.0, g))
    elif name == "adult-laplace":
        for g in LAPLACE_GAMMAS:
            for s in seeds:
                out.append((name, LAPLACE, "adult", "demographic_parity", s, 1.0, g))
    elif name == "fermi":
        for dataset, epss in (("adult", (3.0, 9.0)), ("credit-card", (1.0, 3.0, 9.0))):
            for eps in epss:
                for lam in FERMI_LAMBDAS:
                    for s in seeds:
                        out.append(
                            ("fermi", "DP-FERMI", dataset, "demographic_parity", s, eps, lam)
                        )
    else:
        raise SystemExit(f"unknown experiment {name!r}")
    return out


def _key(row):
    return (
        row["method"],
        row["dataset"],
        row["constraint"],
        int(row["seed"]),
        float(row["eps"]),
        float(row["param"]),
    )


def run(args):
    _setup_runtime()
    OUT.mkdir(parents=True, exist_ok=True)
    done = set()
    if CSV.exists() and args.resume:
        done = {_key(r) for r in pd.read_csv(CSV).to_dict("records")}
    jobs = [j for name in args.experiments for j in jobs_for(name, args.seeds)]
    commit = library_commit()
    data = {}
    new_file = not CSV.exists() or not args.resume
    with open(CSV, "w" if new_file else "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        for i, (exp, method, dataset, constraint, seed, eps, param) in enumerate(jobs):
            key = (method, dataset, constraint, seed, float(eps), float(param))
            if key in done:
                continue
            if dataset not in data:
                data[dataset] = load_dataset(dataset)
            row = fit_one(
                data[dataset],
                experiment=exp,
                method=method,
                dataset=dataset,
                constraint=constraint,
                seed=seed,
                eps=eps,
                param=param,
                commit=commit,
            )
            writer.writerow(row)
            fh.flush()
            print(
                f"[{i + 1}/{len(jobs)}] {method} {dataset} eps={eps} param={param} seed={seed}: "
                f"err={row['test_error']:.4f} dp={row['test_dp_violation']:.4f} "
                f"fnr={row['test_fnr']:.4f} ({row['fit_seconds']:.1f}s)",
                flush=True,
            )


# --------------------------------------------------------------------------- speed
def speed(args):
    from skfairdp.engine import NoiseConfig, train
    from skfairdp.fairness import encode_sensitive_features
    from skfairdp.fairness.rates import DemographicParity, compile_rate_constraints
    from skfairdp.nn import build_module
    from skfairdp.privacy import PoissonSampler, RandomSource
    from skfairdp.raco.problem import RacoProblem

    _setup_runtime()
    X, y, s = load_dataset("adult")
    classes, y_enc = np.unique(y, return_inverse=True)
    codes, enc = encode_sensitive_features(s, len(y))
    program = compile_rate_constraints(DemographicParity(0.05), enc.group_labels_, classes)
    parts = program.parts(codes, y_enc)
    n, batch = len(y), args.batch_size
    Xt = torch.from_numpy(np.ascontiguousarray(X))

    class DpSgdProblem:
        """Plain DP-SGD: cross-entropy only (same engine, same fast path)."""

        private_primal = (True,)
        dual_clip = 1.0

        def prepare_batch(self, codes):
            return (codes[:, 0],)

        def primal_objectives(self, outputs, y):
            loss = torch.nn.functional.cross_entropy(outputs, y, reduction="none")
            return (loss,), {"loss": loss}

        def primal_output_gradients(self, outputs, y):
            log_p = torch.log_softmax(outputs, dim=1)
            loss = -log_p.gather(1, y.unsqueeze(1)).squeeze(1)
            grad = log_p.exp().scatter_add(1, y.unsqueeze(1), -torch.ones_like(loss)[:, None])
            return (grad,), {"loss": loss}

        def dual_contributions(self, outputs, *batch):
            return None

    def timed(kind, seed):
        random = RandomSource(seed)
        torch.manual_seed(seed)
        module = build_module(None, n_features=X.shape[1], n_outputs=2, hidden_layer_sizes=())
        if kind == "raco":
            problem = RacoProblem(
                membership=torch.as_tensor(program.membership),
                coefficients=torch.as_tensor(program.coefficients),
                bounds=torch.as_tensor(program.bounds),
                temperature=1.0,
                lr_dual=1.0,
                dual_bound=None,
                histogram_noise="gaussian",
                histogram_scale=6.0,
                expected_batch_size=float(batch),
                random=random,
            )
        else:
            problem = DpSgdProblem()
        packed = torch.as_tensor(np.stack([y_enc, parts], axis=1).astype(np.int64))
        sampler = PoissonSampler(n, batch / n, random)
        start = time.perf_counter()
        result = train(
            module,
            Xt,
            (packed,),
            problem,
            sampler=sampler,
            optimizer=torch.optim.SGD(module.parameters(), lr=0.1),
            noise=NoiseConfig(1.0, 3.0, None),
            random=random,
            max_epochs=args.epochs,
        )
        return (time.perf_counter() - start) / result.steps

    rows = []
    timed("dpsgd", 0), timed("raco", 0)  # warm-up (lazy imports, allocator)
    for rep in range(args.repeats):
        for kind in ("dpsgd", "raco"):  # interleaved: load changes hit both
            rows.append({"repeat": rep, "kind": kind, "seconds_per_step": timed(kind, rep)})
    df = pd.DataFrame(rows)
    df.to_csv(OUT / "raco_speed.csv", index=False)
    med = df.groupby("kind")["seconds_per_step"].median()
    ratio = med["raco"] / med["dpsgd"]
    lines = [
        "# RaCO-DP step time vs plain DP-SGD",
        "",
        "Reproduce: `python " + " ".join(shlex.quote(a) for a in sys.argv) + "`",
        "",
        f"- Adult ({n} rows, {X.shape[1]} features), logistic regression, Poisson batches of "
        f"expected size {batch}, {args.epochs} epochs per timing, {args.repeats} interleaved "
        "repeats after one warm-up each, 1 torch thread, shared 2-core machine (timings are "
        "noisy).",
        "- Both run through `skfairdp.engine.train` with the hand-written output-gradient fast "
        "path; RaCO adds the noisy Q x K histogram (from the step's own forward pass), the "
        "rates/weights and the dual step.",
        f"- Code: skfairdp at {library_commit()}.",
        "",
        "| step | median ms/step | all repeats (ms) |",
        "|---|---:|---|",
    ]
    for kind, label in (("dpsgd", "plain DP-SGD"), ("raco", "RaCO-DP (DP, Gaussian hist.)")):
        vals = df[df.kind == kind]["seconds_per_step"] * 1e3
        lines.append(
            f"| {label} | {med[kind] * 1e3:.3f} | " + ", ".join(f"{v:.3f}" for v in vals) + " |"
        )
    verdict = "PASS" if ratio <= 2.0 else "FAIL"
    lines += [
        "",
        f"- {verdict}: RaCO-DP / DP-SGD time per step = {ratio:.2f}x (target <= 2x; the paper "
        "reports about 1.7x).",
    ]
    (OUT / "raco_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


# --------------------------------------------------------------------------- report
def _agg(df):
    g = df.groupby(["method", "dataset", "constraint", "eps", "param"])
    out = g.agg(
        n=("seed", "count"),
        err=("test_error", "mean"),
        err_std=("test_error", "std"),
        dp=("test_dp_violation", "mean"),
        dp_std=("test_dp_violation", "std"),
        dp_max=("test_dp_violation", "max"),
        fnr=("test_fnr", "mean"),
        fnr_max=("test_fnr", "max"),
        eps_spent=("eps_spent", "max"),
        paper_eps=("paper_eps", "max"),
        z=("noise_multiplier", "mean"),
        steps=("n_steps", "mean"),
        secs=("fit_seconds", "mean"),
    )
    return out.reset_index()


def _fermi_eps1():
    path = OUT / "tradeoff_adult_dp.csv"
    if not path.exists():
        return pd.DataFrame()
    old = pd.read_csv(path)
    old = old[(old.eps == 1.0)]
    return pd.DataFrame(
        {
            "experiment": "fermi",
            "method": "DP-FERMI",
            "dataset": "adult",
            "constraint": "demographic_parity",
            "seed": old["seed"],
            "eps": 1.0,
            "param": old["lambda"],
            "test_error": old["test_error"],
            "test_dp_violation": old["test_dp_violation"],
            "test_fnr": np.nan,
            "eps_spent": old["eps_spent"],
            "paper_eps": np.nan,
            "noise_multiplier": old["noise_multiplier"],
            "n_steps": old["n_steps"],
            "fit_seconds": old["fit_seconds"],
        }
    )


def _fmt_eps(e):
    return "∞" if math.isinf(e) else f"{e:g}"


def report(args):
    df = pd.read_csv(CSV)
    df = pd.concat([df, _fermi_eps1()], ignore_index=True)
    agg = _agg(df)
    points = load_anchor()
    lines = [
        "# RaCODPClassifier benchmarks: demographic parity (Adult, Credit Card), FNR bound",
        "",
        "Reproduce (from the repository root):",
        "",
        "```",
        "python experiments/raco_tradeoff.py run adult-dp adult-fnr credit-dp fermi "
        "adult-laplace --seeds 0 1 2 3 4",
        "python experiments/raco_tradeoff.py speed",
        "python experiments/raco_tradeoff.py report",
        "```",
        "",
        "- Data: every fit in `raco_tradeoff.csv`; plot `raco_tradeoff.png`; step time in "
        "`raco_speed.md`.",
        "- Protocol: 75/25 `train_test_split(test_size=0.25, random_state=seed)`; "
        "`RaCODPClassifier(constraints=..., tolerance=γ, epsilon=ε, delta=1e-5, "
        "random_state=seed)`, every other parameter at its default (logistic regression, "
        "Gaussian histogram, sound joint accounting); ε = ∞ is non-private SGDA on the same "
        "soft Lagrangian (exact histogram). DP-FERMI: `DPFermiClassifier(fairness_weight=λ, "
        "epsilon=ε, delta=1e-5, random_state=seed)` at its defaults (record-level DP); Adult "
        "ε = 1 rows come from `tradeoff_adult_dp.csv`. Test error and hard violations on "
        "the test split; means over seeds.",
        f"- Code: skfairdp at {', '.join(sorted(set(map(str, df['skfairdp_commit'].dropna()))))}"
        " (`+modified`: working tree differed from that commit). Shared 2-core machine, "
        "1 torch thread.",
        "- *paper-style ε*: the same run accounted as the authors do (each release "
        "Poisson-amplified separately, then composed; PLD). It is lower than the sound ε and "
        "is not a guarantee (doc/raco.md).",
        "- Credit Card: the unconstrained model's DP violation is already ≈ 0.015, below every "
        "γ but 0.01, so the constraint barely binds and the curves are a cluster.",
        "- History: a first run with `max_grad_norm=1` (kept in `raco_tradeoff_C1.csv`) met the "
        "DP targets but not the FNR one (γ = 0.2: hard test FNR 0.268, clipping bias); the "
        "default became `max_grad_norm=3` and everything was re-run.",
        "",
    ]
    intro, lines = lines, []
    checks = []
    for dataset in ("adult", "credit-card"):
        raco = agg[
            (agg.method == "RaCO-DP")
            & (agg.dataset == dataset)
            & (agg.constraint == "demographic_parity")
        ]
        if raco.empty:
            continue
        label = {"adult": "Adult", "credit-card": "Credit Card"}[dataset]
        lines += [f"## {label}, demographic parity", ""]
        for eps in sorted(raco.eps.unique()):
            sub = raco[raco.eps == eps]
            lines += [
                f"### ε = {_fmt_eps(eps)}",
                "",
                "RaCO-DP:",
                "",
                "| γ | seeds | test error (mean ± std) | DP viol (mean ± std) | DP viol (max) "
                "| ≤ γ + 0.02 | ε spent (max) | paper-style ε | σ_grad | steps | fit s |",
                "|---:|---:|---|---|---:|:-:|---:|---:|---:|---:|---:|",
            ]
            for _, r in sub.iterrows():
                ok = "yes" if r.dp <= r.param + 0.02 else "**no**"
                lines.append(
                    f"| {r.param:g} | {r.n} | {r.err:.4f} ± {r.err_std:.4f} | {r.dp:.4f} ± "
                    f"{r.dp_std:.4f} | {r.dp_max:.4f} | {ok} | {_fmt_eps(r.eps_spent)} | "
                    f"{_fmt_eps(round(r.paper_eps, 4)) if not np.isnan(r.paper_eps) else '—'} | "
                    f"{r.z:.3g} | {r.steps:.0f} | {r.secs:.1f} |"
                )
            fermi = agg[(agg.method == "DP-FERMI") & (agg.dataset == dataset) & (agg.eps == eps)]
            if not fermi.empty:
                lines += [
                    "",
                    "DPFermiClassifier (ours, same ε, λ sweep): "
                    + "; ".join(
                        f"λ={r.param:g}: {r.err:.4f} / {r.dp:.4f}" for _, r in fermi.iterrows()
                    )
                    + " (error / DP viol, seed means).",
                ]
            pub = select(points, method="DP-FERMI", dataset=dataset, notion="dp", eps=eps)
            if pub:
                lines += [
                    "",
                    "Published DP-FERMI (anchor file; sensitive-attribute DP only, 15 seeds): "
                    + "; ".join(f"{p.error:.4f} / {p.violation:.4f}" for p in pub)
                    + ".",
                ]
            lines.append("")
            if eps == 1.0 and dataset == "adult":
                bad = sub[(sub.param >= 0.02) & (sub.dp > sub.param + 0.02)]
                checks.append(
                    (
                        bad.empty,
                        "Adult ε = 1: hard test DP violation ≤ γ + 0.02 for every γ ≥ 0.02 "
                        "(seed means: "
                        + ", ".join(f"γ={r.param:g}: {r.dp:.4f}" for _, r in sub.iterrows())
                        + ")",
                    )
                )
                ok = sub[sub.dp <= 0.02]
                best = ok.loc[ok.err.idxmin()] if not ok.empty else None
                checks.append(
                    (
                        best is not None and best.err <= 0.19,
                        "Adult ε = 1: test error at DP violation ≤ 0.02 is ≤ 0.19 ("
                        + (
                            f"γ={best.param:g}: error {best.err:.4f}, violation {best.dp:.4f}"
                            if best is not None
                            else "no γ reaches violation ≤ 0.02"
                        )
                        + ")",
                    )
                )
    fnr = agg[(agg.method == "RaCO-DP") & (agg.constraint == "false_negative_rate")]
    if not fnr.empty:
        lines += [
            "## Adult, false-negative-rate bound, ε = 1",
            "",
            "| γ | seeds | test error (mean ± std) | hard test FNR (mean) | FNR (max) | "
            "≤ γ + 0.03 | ε spent |",
            "|---:|---:|---|---:|---:|:-:|---:|",
        ]
        for _, r in fnr.iterrows():
            ok = r.fnr <= r.param + 0.03
            lines.append(
                f"| {r.param:g} | {r.n} | {r.err:.4f} ± {r.err_std:.4f} | {r.fnr:.4f} | "
                f"{r.fnr_max:.4f} | {'yes' if ok else '**no**'} | {_fmt_eps(r.eps_spent)} |"
            )
        lines.append("")
        checks.append(
            (
                bool((fnr.fnr <= fnr.param + 0.03).all()),
                "Adult FNR bound at ε = 1: hard test FNR ≤ γ + 0.03 for γ ∈ {0.2, 0.3, 0.4} "
                "(seed means: "
                + ", ".join(f"γ={r.param:g}: {r.fnr:.4f}" for _, r in fnr.iterrows())
                + ")",
            )
        )
    lap = agg[agg.method == LAPLACE]
    if not lap.empty:
        lines += [
            "## Adult, demographic parity, Laplace histogram (the paper's mechanism), ε = 1",
            "",
            '`histogram_noise="laplace"`, accounted soundly (joint PLD of the gradient and the '
            "histogram on their shared batch); compare with the Gaussian default above.",
            "",
            "| γ | seeds | test error (mean ± std) | DP viol (mean ± std) | ε spent (sound) "
            "| paper-style ε | σ_grad | Laplace scale | fit s |",
            "|---:|---:|---|---|---:|---:|---:|---:|---:|",
        ]
        hist = df[df.method == LAPLACE].groupby("param")["histogram_noise_multiplier"].mean()
        for _, r in lap.iterrows():
            lines.append(
                f"| {r.param:g} | {r.n} | {r.err:.4f} ± {r.err_std:.4f} | {r.dp:.4f} ± "
                f"{r.dp_std:.4f} | {_fmt_eps(r.eps_spent)} | {r.paper_eps:.4f} | {r.z:.3g} | "
                f"{hist[r.param]:.3g} | {r.secs:.1f} |"
            )
        lines.append("")
    over = df[
        df.method.str.startswith("RaCO-DP") & np.isfinite(df.eps) & (df.eps_spent > df.eps * 1.0001)
    ]
    checks.append((over.empty, f"every private RaCO fit spends ε ≤ target ({len(over)} fits over)"))
    speed_md = OUT / "raco_speed.md"
    if speed_md.exists():
        verdict = [
            x
            for x in speed_md.read_text().splitlines()
            if x.startswith("- PASS") or x.startswith("- FAIL")
        ]
        for v in verdict:
            checks.append((v.startswith("- PASS"), "Speed: " + v.split(": ", 1)[1]))
    head = ["## Targets", ""] + [f"- {'PASS' if ok else 'FAIL'}: {text}" for ok, text in checks]
    text = intro + head + [""] + lines
    (OUT / "raco_tradeoff.md").write_text("\n".join(text) + "\n")
    _plot(agg, points)
    print("\n".join(head))


def _plot(agg, points):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epss = [1.0, 3.0, 9.0]
    fig, axes = plt.subplots(2, 3, figsize=(14, 8), sharey="row")
    for i, dataset in enumerate(("adult", "credit-card")):
        for j, eps in enumerate(epss):
            ax = axes[i, j]
            for method, marker in (("RaCO-DP", "o"), ("DP-FERMI", "s")):
                sub = agg[
                    (agg.method == method)
                    & (agg.dataset == dataset)
                    & (agg.eps == eps)
                    & (agg.constraint == "demographic_parity")
                ].sort_values("param")
                if not sub.empty:
                    ax.plot(sub.dp, sub.err, marker=marker, label=f"{method} (ours)")
            ref = agg[
                (agg.method == "RaCO-DP")
                & (agg.dataset == dataset)
                & np.isinf(agg.eps)
                & (agg.constraint == "demographic_parity")
            ].sort_values("param")
            if not ref.empty:
                ax.plot(ref.dp, ref.err, "k:", marker=".", label="SGDA (ε=∞)")
            pub = select(points, method="DP-FERMI", dataset=dataset, notion="dp", eps=eps)
            if pub:
                ax.plot(
                    [p.violation for p in pub],
                    [p.error for p in pub],
                    "x--",
                    color="gray",
                    label="DP-FERMI (published)",
                )
            ax.set_title(f"{dataset}, ε = {eps:g}")
            ax.set_xlabel("test DP violation")
            ax.set_ylabel("test error")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "raco_tradeoff.png", dpi=110)


# --------------------------------------------------------------------------- issue 12
CSV12 = OUT / "raco_issue12.csv"
DATASETS12 = (
    "adult", "credit-card", "bank-marketing", "adult-2k", "communities-crime", "german",
)  # fmt: skip
NOTIONS12 = ("demographic_parity", "equalized_odds")
GAMMAS12 = (0.05, 0.1)
ADULT_EO_GAMMAS = (0.01, 0.02, 0.025, 0.03)
FIELDS12 = [
    "part", "method", "dataset", "n_rows", "constraint", "gamma", "eps", "seed",
    "train_error", "train_violation", "test_error", "test_violation", "test_dp", "test_eo",
    "majority_error", "eps_spent", "batch_size", "n_steps", "fit_seconds", "skfairdp_commit",
]  # fmt: skip


def _load12(name):
    from skfairdp.datasets import load_dataset as load_bundled

    X, y, s = load_bundled(name, return_X_y_s=True)
    return np.ascontiguousarray(X, dtype=np.float32), np.asarray(y), np.asarray(s)


def _violations(y, pred, s):
    from skfairdp.metrics import demographic_parity_violation, equalized_odds_violation

    return (
        float(demographic_parity_violation(y, pred, sensitive_features=s)),
        float(equalized_odds_violation(y, pred, sensitive_features=s)),
    )


def fit12(data, *, part, method, dataset, constraint, gamma, eps, seed, commit):
    """One fit of the issue-12 protocol; its CSV row."""
    from sklearn.model_selection import train_test_split

    X, y, s = data
    Xtr, Xte, ytr, yte, s_tr, s_te = train_test_split(
        X, y, s, test_size=0.25, random_state=seed, stratify=s
    )
    start = time.perf_counter()
    if method == "ExpGrad":
        from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient
        from sklearn.linear_model import LogisticRegression

        moment = {"demographic_parity": DemographicParity, "equalized_odds": EqualizedOdds}
        clf = ExponentiatedGradient(
            LogisticRegression(max_iter=1000),
            moment[constraint](difference_bound=gamma),
        )
        clf.fit(Xtr, ytr, sensitive_features=s_tr)
        predict = lambda X_: clf.predict(X_, random_state=seed)  # noqa: E731
        spent, batch, steps = math.inf, 0, 0
    else:
        from skfairdp.raco import RaCODPClassifier

        solution = "mixture" if method == "RaCO-DP mixture" else "average"
        clf = RaCODPClassifier(
            constraints=constraint, tolerance=gamma, epsilon=eps, delta=DELTA,
            random_state=seed, solution=solution,
        ).fit(Xtr, ytr, sensitive_features=s_tr)  # fmt: skip
        predict = clf.predict
        spent, batch, steps = clf.privacy_spent_.epsilon, clf.batch_size_, clf.n_steps_
    seconds = time.perf_counter() - start
    pred_tr, pred_te = predict(Xtr), predict(Xte)
    which = 0 if constraint == "demographic_parity" else 1
    train_v, test_v = _violations(ytr, pred_tr, s_tr), _violations(yte, pred_te, s_te)
    values, counts = np.unique(ytr, return_counts=True)
    majority = values[np.argmax(counts)]
    return {
        "part": part, "method": method, "dataset": dataset, "n_rows": len(y),
        "constraint": constraint, "gamma": gamma, "eps": eps, "seed": seed,
        "train_error": float(np.mean(pred_tr != ytr)), "train_violation": train_v[which],
        "test_error": float(np.mean(pred_te != yte)), "test_violation": test_v[which],
        "test_dp": test_v[0], "test_eo": test_v[1],
        "majority_error": float(np.mean(yte != majority)), "eps_spent": float(spent),
        "batch_size": int(batch), "n_steps": int(steps), "fit_seconds": round(seconds, 2),
        "skfairdp_commit": commit,
    }  # fmt: skip


def jobs12(part, seeds):
    methods = {"raco": "RaCO-DP", "mixture": "RaCO-DP mixture", "expgrad": "ExpGrad"}
    out = []
    if part == "adult-eo":
        for gamma in ADULT_EO_GAMMAS:
            for seed in seeds:
                out.append((part, "RaCO-DP", "adult", "equalized_odds", gamma, 1.0, seed))
        return out
    if part not in methods:
        raise SystemExit(f"unknown issue12 part {part!r}")
    epss = (math.inf,) if part == "expgrad" else (1.0, math.inf)
    for dataset in DATASETS12:
        for constraint in NOTIONS12:
            for gamma in GAMMAS12:
                for eps in epss:
                    for seed in seeds:
                        out.append((part, methods[part], dataset, constraint, gamma, eps, seed))
    return out


def run12(args):
    _setup_runtime()
    OUT.mkdir(parents=True, exist_ok=True)
    done = set()
    if CSV12.exists() and args.resume:
        done = {
            (r["method"], r["dataset"], r["constraint"], float(r["gamma"]), float(r["eps"]),
             int(r["seed"]))
            for r in pd.read_csv(CSV12).to_dict("records")
        }  # fmt: skip
    commit = library_commit()
    data = {}
    new_file = not CSV12.exists() or not args.resume
    jobs = [j for part in args.parts for j in jobs12(part, args.seeds)]
    with open(CSV12, "w" if new_file else "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS12)
        if new_file:
            writer.writeheader()
        for i, (part, method, dataset, constraint, gamma, eps, seed) in enumerate(jobs):
            if (method, dataset, constraint, float(gamma), float(eps), seed) in done:
                continue
            if dataset not in data:
                data[dataset] = _load12(dataset)
            row = fit12(
                data[dataset], part=part, method=method, dataset=dataset,
                constraint=constraint, gamma=gamma, eps=eps, seed=seed, commit=commit,
            )  # fmt: skip
            writer.writerow(row)
            fh.flush()
            print(
                f"[{i + 1}/{len(jobs)}] {method} {dataset} {constraint} γ={gamma} ε={eps} "
                f"seed={seed}: train {row['train_error']:.4f}/{row['train_violation']:.4f} "
                f"test {row['test_error']:.4f}/{row['test_violation']:.4f} "
                f"({row['fit_seconds']:.1f}s)",
                flush=True,
            )


def _notion(constraint):
    return {"demographic_parity": "DP", "equalized_odds": "EO"}.get(constraint, constraint)


def _pm(mean, sd):
    return f"{mean:.4f} ± {0.0 if np.isnan(sd) else sd:.4f}"


def report12(args):
    df = pd.read_csv(CSV12)
    keys = ["method", "dataset", "constraint", "gamma", "eps"]
    agg = (
        df.groupby(keys, sort=False)
        .agg(
            n=("seed", "count"), rows=("n_rows", "first"),
            tr_err=("train_error", "mean"), tr_v=("train_violation", "mean"),
            tr_v_max=("train_violation", "max"),
            err=("test_error", "mean"), err_sd=("test_error", "std"),
            v=("test_violation", "mean"), v_sd=("test_violation", "std"),
            maj=("majority_error", "mean"), spent=("eps_spent", "max"),
            batch=("batch_size", "mean"), steps=("n_steps", "mean"),
            secs=("fit_seconds", "mean"),
        )
        .reset_index()
    )  # fmt: skip
    seeds = sorted(df.seed.unique())
    lines = [
        "# RaCO-DP on hard predictions, small data and defaults by n (issue 12)",
        "",
        "Reproduce (from the repository root):",
        "",
        "```",
        "python experiments/raco_tradeoff.py issue12 raco expgrad adult-eo --seeds 0 1 2",
        "python experiments/raco_tradeoff.py issue12 adult-eo --seeds 3 4 --resume",
        "python experiments/raco_tradeoff.py report12",
        "```",
        "",
        "(`mixture` adds the `solution='mixture'` rows.) The previous run, before the dual "
        "step's noise was set per run (`DUAL_WALK`) and the clip rule was raised (commit "
        "fee9396: a per-step dual noise of 0.03, `max_grad_norm` n·ε/10,000 within [1, 3]; "
        "with the mixture rows), is kept in `raco_issue12_fee9396.csv`.",
        "",
        "- Data: every fit in `raco_issue12.csv`; datasets from `skfairdp.datasets."
        "load_dataset` (bundled, preprocessed; `adult-2k` is a deterministic 2,000-row "
        "stratified subsample of Adult).",
        "- Protocol: `train_test_split(test_size=0.25, random_state=seed, stratify=group)`; "
        "`RaCODPClassifier(constraints=..., tolerance=γ, epsilon=ε, delta=1e-5, "
        "random_state=seed)` with every other parameter at its default (hard-rate dual, "
        "`solution='average'`, `batch_size`, `max_epochs` and `lr_dual` `'auto'`); "
        "*RaCO-DP mixture* is the same with `solution='mixture'` (its `predict` draws, "
        "seeded). ExpGrad: fairlearn `ExponentiatedGradient(LogisticRegression(max_iter="
        "1000), DemographicParity/EqualizedOdds(difference_bound=γ))`, non-private, its "
        "`predict` draws with `random_state=seed`.",
        "- Every number is on **hard predictions** (`predict`); violation = the constraint's "
        "own notion (DP: largest difference of positive rates; EO: largest difference of "
        "TPR or FPR); mean ± sd over seeds "
        f"{', '.join(map(str, seeds))} (0, 1, 2 except Adult EO at ε = 1, γ ≤ 0.03); "
        "*train viol (max)* is the largest over seeds.",
        f"- Code: skfairdp at {', '.join(sorted(set(map(str, df['skfairdp_commit'].dropna()))))}"
        " (`+modified`: other files of the working tree differed). Shared 2-core machine, "
        "1 torch thread.",
        "",
    ]
    checks = []
    raco = agg[agg.method == "RaCO-DP"]
    main = raco[raco.gamma.isin(GAMMAS12)]
    inf = main[np.isinf(main.eps)]
    bad = inf[inf.tr_v > inf.gamma + 0.01]
    checks.append((
        bad.empty,
        "ε = ∞: mean hard TRAINING violation ≤ γ + 0.01 on every dataset, notion and γ "
        f"({len(inf) - len(bad)}/{len(inf)} cells"
        + ("" if bad.empty else "; over: " + ", ".join(
            f"{r.dataset} {_notion(r.constraint)} γ={r.gamma:g}: {r.tr_v:.4f}"
            for _, r in bad.iterrows()))
        + ")",
    ))  # fmt: skip
    big = main[(main.eps == 1.0) & (main.rows >= 3000)]
    bad = big[big.v > big.gamma + 0.03]
    checks.append((
        bad.empty,
        "ε = 1, datasets ≥ 3,000 rows: mean hard TEST violation ≤ γ + 0.03 for γ ∈ {0.05, 0.1}, "
        f"DP and EO ({len(big) - len(bad)}/{len(big)} cells"
        + ("" if bad.empty else "; over: " + ", ".join(
            f"{r.dataset} {_notion(r.constraint)} γ={r.gamma:g}: {r.v:.4f}"
            for _, r in bad.iterrows()))
        + ")",
    ))  # fmt: skip
    eo = raco[(raco.dataset == "adult") & (raco.constraint == "equalized_odds") & (raco.eps == 1.0)]
    ok = eo[eo.v <= 0.035]
    best = ok.loc[ok.err.idxmin()] if not ok.empty else None
    checks.append((
        best is not None and best.err <= 0.160,
        "Adult EO, ε = 1: test error ≤ 0.160 at test EO ≤ 0.035 ("
        + (f"γ={best.gamma:g}: error {best.err:.4f}, EO {best.v:.4f}" if best is not None
           else "no γ reaches EO ≤ 0.035")
        + "; all γ: " + ", ".join(f"γ={r.gamma:g}: {r.err:.4f}/{r.v:.4f}"
                                  for _, r in eo.sort_values("gamma").iterrows())
        + ")",
    ))  # fmt: skip
    default = raco[
        (raco.constraint == "demographic_parity") & (raco.gamma == 0.05) & (raco.eps == 1.0)
        & (raco.rows >= 1000)
    ]  # fmt: skip
    bad = default[default.err > default.maj]
    checks.append((
        bad.empty,
        "defaults (demographic parity, tolerance 0.05), ε = 1, datasets ≥ 1,000 rows: test "
        "error ≤ majority-class error ("
        + ", ".join(f"{r.dataset}: {r.err:.4f} vs {r.maj:.4f}" for _, r in default.iterrows())
        + ")",
    ))  # fmt: skip
    over = df[df.method.str.startswith("RaCO") & np.isfinite(df.eps) & (df.eps_spent > df.eps)]
    checks.append((over.empty, f"every private fit spends ε ≤ target ({len(over)} over)"))
    lines += ["## Targets", ""]
    lines += [f"- {'PASS' if ok_ else 'FAIL'}: {text}" for ok_, text in checks]
    lines.append("")
    for dataset in DATASETS12:
        sub = agg[agg.dataset == dataset]
        if sub.empty:
            continue
        lines += [
            f"## {dataset} ({int(sub.rows.iloc[0]):,} rows; majority-class test error "
            f"{sub.maj.iloc[0]:.4f})",
            "",
            "| notion | γ | ε | method | train error | train viol (mean / max) | test error "
            "| test viol | batch | steps | fit s |",
            "|---|---:|---:|---|---:|---|---|---|---:|---:|---:|",
        ]
        order = {"RaCO-DP": 0, "RaCO-DP mixture": 1, "ExpGrad": 2}
        sub = sub.assign(o=sub.method.map(order)).sort_values(["constraint", "gamma", "eps", "o"])
        for _, r in sub.iterrows():
            lines.append(
                f"| {_notion(r.constraint)} | {r.gamma:g} | "
                f"{_fmt_eps(r.eps)} | {r.method} | {r.tr_err:.4f} | {r.tr_v:.4f} / "
                f"{r.tr_v_max:.4f} | {_pm(r.err, r.err_sd)} | {_pm(r.v, r.v_sd)} | "
                f"{r.batch:.0f} | {r.steps:.0f} | {r.secs:.1f} |"
            )
        lines.append("")
    (OUT / "raco_issue12.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[: lines.index("## Targets") + len(checks) + 2]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("experiments", nargs="+")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--resume", action="store_true")
    p = sub.add_parser("speed")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5)
    sub.add_parser("report")
    p = sub.add_parser("issue12")
    p.add_argument("parts", nargs="+", help="raco, mixture, expgrad, adult-eo")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--resume", action="store_true")
    sub.add_parser("report12")
    args = parser.parse_args(argv)
    commands = {"run": run, "speed": speed, "report": report}
    commands.update({"issue12": run12, "report12": report12})
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
