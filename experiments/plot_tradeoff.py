"""Plots of the trade-off benchmarks (x = test error, y = fairness violation).

Our curve: one point per lambda at the seed-mean (error, violation), error bars of
one std on both axes and a shaded band of ± one std of the violation. Published
points from the anchor file: DP-FERMI (dashed, its own lambda grid), Tran et al.
2021a (DP) or Jagielski et al. 2019 (EO) as curves, Tran et al. 2021b (PFLD) as a
star.

Used by ``tradeoff.py``; on its own it re-draws a plot from a CSV::

    python experiments/plot_tradeoff.py experiments/results/tradeoff_adult_dp.csv
    python experiments/plot_tradeoff.py experiments/results/eo.csv
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anchor import load_anchor, select  # noqa: E402

OURS = "tab:blue"
STYLE = {
    "DP-FERMI": dict(color="tab:green", ls="--", marker="s", ms=4, label="DP-FERMI (published)"),
    "Tran2021a": dict(color="tab:orange", ls=":", marker="^", ms=4, label="Tran et al. 2021a"),
    "Jagielski2019": dict(
        color="tab:purple", ls=":", marker="v", ms=4, label="Jagielski et al. 2019"
    ),
    "Tran2021b": dict(color="tab:red", ls="none", marker="*", ms=12, label="PFLD (Tran 2021b)"),
}
DATASET_LABEL = {"adult": "Adult", "credit-card": "Credit Card"}


def _eps_label(eps):
    return "ε = ∞" if math.isinf(eps) else f"ε = {eps:g}"


CONSTANT = 0.005  # predicted-positive rate within this of 0 or 1: a constant classifier


def _is_constant(rows):
    """Lambdas at which at least one seed collapsed to a constant classifier."""
    return rows["n_constant"] > 0


def _ours(ax, rows, label="ours (mean ± std over seeds)"):
    rows = rows.sort_values("lambda")
    const = rows[_is_constant(rows)]
    rows = rows[~_is_constant(rows)]
    for _, r in const.iterrows():
        _far(ax, f"ours λ={r['lambda']:g}", [r["err_mean"]], [r["viol_mean"]])
    x, y = rows["err_mean"].to_numpy(), rows["viol_mean"].to_numpy()
    _far(ax, "ours", x, y)
    ys = rows["viol_std"].to_numpy()
    ax.fill_between(x, y - ys, y + ys, color=OURS, alpha=0.18, lw=0)
    ax.errorbar(
        x,
        y,
        xerr=rows["err_std"].to_numpy(),
        yerr=ys,
        color=OURS,
        marker="o",
        ms=4,
        lw=1.5,
        capsize=2,
        label=label,
    )
    for xi, yi, lam in zip(x, y, rows["lambda"]):
        ax.annotate(
            f"{lam:g}",
            (xi, yi),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=7,
            color=OURS,
        )
    if not const.empty:
        ax.plot(
            const["err_mean"],
            const["viol_mean"],
            ls="none",
            marker="x",
            ms=7,
            color="grey",
            label="ours, λ with seeds collapsed to a constant classifier",
        )
        for err, group in const.groupby("err_mean"):
            lams = ", ".join(f"{v:g}" for v in group["lambda"])
            ax.annotate(
                f"λ={lams}",
                (err, float(group["viol_mean"].iloc[0])),
                textcoords="offset points",
                xytext=(-10, 8),
                fontsize=7,
                color="grey",
            )


def _far(ax, label, xs, ys):
    """Remember plotted points, so that _clip_x can list those it cuts off."""
    if not hasattr(ax, "_tradeoff_points"):
        ax._tradeoff_points = []
    ax._tradeoff_points += [(label, float(x), float(y)) for x, y in zip(xs, ys)]


def _clip_x(ax, right=0.30):
    """Keep the interesting range; list what falls beyond ``right`` in a note."""
    far = [
        f"{label}: err {x:.3f}, viol {y:.3f}"
        for label, x, y in getattr(ax, "_tradeoff_points", [])
        if x > right
    ]
    lo = ax.get_xlim()[0]
    ax.set_xlim(lo, min(ax.get_xlim()[1], right))
    if far:
        ax.text(
            0.98,
            0.5,
            f"off the plot (err > {right:.2f}):\n" + "\n".join(sorted(set(far))),
            transform=ax.transAxes,
            ha="right",
            va="center",
            fontsize=6,
            color="dimgrey",
        )


def _published(ax, points, methods, dataset, notion, eps):
    for m in methods:
        pts = select(points, method=m, dataset=dataset, notion=notion, eps=eps)
        if not pts:
            continue
        if m == "Jagielski2019":  # its first point is the shared lambda=0 run
            pts = sorted(pts, key=lambda p: p.error)
        ax.plot([p.error for p in pts], [p.violation for p in pts], **STYLE[m])
        _far(ax, STYLE[m]["label"], [p.error for p in pts], [p.violation for p in pts])


def _finish(ax, title, ylabel):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("test error (1 − accuracy)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))


def plot_dp(agg, points, path):
    epsilons = sorted(agg["eps"].unique(), key=lambda e: -e)
    fig, axes = plt.subplots(1, len(epsilons), figsize=(6 * len(epsilons), 4.8), squeeze=False)
    for ax, eps in zip(axes[0], epsilons):
        _ours(ax, agg[(agg["dataset"] == "adult") & (agg["eps"] == eps)])
        _published(ax, points, ("DP-FERMI", "Tran2021a", "Tran2021b"), "adult", "dp", eps)
        ax.axhline(0.01 if math.isinf(eps) else 0.02, color="grey", lw=0.8, ls="-.")
        ax.axvline(0.19, color="grey", lw=0.8, ls="-.")
        _finish(ax, f"Adult, demographic parity, {_eps_label(eps)}", "DP violation (test)")
        _clip_x(ax)
        ax.legend(fontsize=8)
    fig.suptitle(
        "DPFermiClassifier (logistic regression, defaults, δ=1e-5) vs published; "
        "labels: our λ; dash-dot: targets",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_eo(agg, points, path):
    datasets = [d for d in ("adult", "credit-card") if d in set(agg["dataset"])]
    epsilons = sorted(agg["eps"].unique())
    fig, axes = plt.subplots(
        len(datasets),
        len(epsilons),
        figsize=(5 * len(epsilons), 4.2 * len(datasets)),
        squeeze=False,
    )
    for i, dataset in enumerate(datasets):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            rows = agg[(agg["dataset"] == dataset) & (agg["eps"] == eps)]
            if not rows.empty:
                _ours(ax, rows)
            _published(ax, points, ("DP-FERMI", "Jagielski2019", "Tran2021b"), dataset, "eo", eps)
            _finish(
                ax,
                f"{DATASET_LABEL.get(dataset, dataset)}, equalized odds, {_eps_label(eps)}",
                "EO violation (test)",
            )
            _clip_x(ax, right=0.32)
            ax.legend(fontsize=7)
    fig.suptitle(
        "DPFermiClassifier, fairness='equalized_odds' (defaults, δ=1e-5) vs published; "
        "labels: our λ",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    import pandas as pd
    from tradeoff import aggregate

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python experiments/plot_tradeoff.py RESULTS.csv")
    csv_path = Path(argv[0])
    df = pd.read_csv(csv_path)
    agg = aggregate(df)
    points = load_anchor()
    plot = plot_dp if (df["fairness"] == "demographic_parity").all() else plot_eo
    plot(agg, points, csv_path.with_suffix(".png"))
    print(f"wrote {csv_path.with_suffix('.png')}")


if __name__ == "__main__":
    main()
