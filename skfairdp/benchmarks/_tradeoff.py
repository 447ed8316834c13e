"""Report of an error-vs-violation trade-off benchmark: tables, comparison, plot."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._common import (
    Curve,
    accounting_line,
    finish,
    fmt_eps,
    fmt_interval,
    fmt_mean_sd,
    group_rows,
    md_table,
    mean_sd,
    preamble,
    quick_title,
)
from ._published import best_error_below

NOTION_COLUMN = {"dp": "dp_violation", "eo": "eo_violation"}
NOTION_NAME = {"dp": "demographic-parity violation", "eo": "equalized-odds violation"}
THRESHOLDS = (0.1, 0.05, 0.02)
INTERVAL_NOTE = (
    "Violations: mean ± sd over seeds, then [lower, upper]: the 95 % sampling interval of "
    "one test split's violation (`PrivateMetricFrame(..., epsilon=np.inf)`; the bundled data "
    "are public, so the values are exact and the interval covers the test split's sampling "
    "error only), seed means of the bounds. A violation whose interval reaches 0 is within "
    "that noise."
)

Published = Mapping[float, Sequence[tuple[str, Sequence[tuple[str, float, float]]]]]


def summarise(rows: Sequence[dict[str, Any]], notion: str) -> list[dict[str, Any]]:
    """One entry per (method, epsilon, setting): seed means and sds."""
    column = NOTION_COLUMN[notion]
    out = []
    for (method, epsilon, setting), group in group_rows(rows, ("method", "epsilon", "setting")):
        error = [r["error"] for r in group]
        violation = [r[column] for r in group]
        out.append(
            {
                "method": method,
                "epsilon": epsilon,
                "setting": setting,
                "seeds": len(group),
                "error": error,
                "violation": violation,
                "dp": [r["dp_violation"] for r in group],
                "eo": [r["eo_violation"] for r in group],
                "dp_interval": fmt_interval(group, "dp_violation"),
                "eo_interval": fmt_interval(group, "eo_violation"),
                "eps_spent": max(r["epsilon_spent"] for r in group),
                "seconds": sum(r["seconds"] for r in group) / len(group),
            }
        )
    return out


def report(
    rows: Sequence[dict[str, Any]],
    *,
    output: Path,
    stem: str,
    title: str,
    name: str,
    quick: bool,
    seeds: Sequence[int],
    protocol: str,
    notion: str,
    published: Published,
    notes: Sequence[str] = (),
    targets: Sequence[str] = (),
) -> list[Path]:
    """Write ``<stem>.csv``, ``<stem>.md`` and ``<stem>.png`` of a trade-off benchmark.

    A quick run's title (markdown and plot) ends with ``(quick run)``; its stem is the
    caller's (``quick_stem``).
    """
    title = quick_title(title, quick)
    summary = summarise(rows, notion)
    parts = [preamble(title, name, quick, seeds, protocol), *(f"- {n}" for n in notes), ""]
    parts += ["## Checks", "", accounting_line(rows), *targets, ""]
    parts += ["## Ours", ""]
    if any(s["dp_interval"] for s in summary):
        parts += [INTERVAL_NOTE, ""]
    parts.append(
        md_table(
            [
                "method",
                "ε",
                "setting",
                "seeds",
                "test error",
                "DP violation",
                "EO violation",
                "ε spent (max)",
                "fit s (mean)",
            ],
            [
                (
                    s["method"],
                    fmt_eps(s["epsilon"]),
                    s["setting"],
                    s["seeds"],
                    fmt_mean_sd(s["error"]),
                    _with_interval(fmt_mean_sd(s["dp"]), s["dp_interval"]),
                    _with_interval(fmt_mean_sd(s["eo"]), s["eo_interval"]),
                    "∞" if math.isinf(s["eps_spent"]) else f"{s['eps_spent']:.4f}",
                    f"{s['seconds']:.1f}",
                )
                for s in summary
            ],
        )  # fmt: skip
    )
    parts += ["", "## Published", ""]
    for epsilon, curves in published.items():
        for method, points in curves:
            text = "; ".join(
                (f"{label}: " if label else "") + f"{err:.4f} / {viol:.4f}"
                for label, err, viol in points
            )
            parts.append(f"- {method}, ε = {fmt_eps(epsilon)} (error / violation): {text}")
    parts += [
        "",
        f"## Lowest mean test error at mean {NOTION_NAME[notion]} ≤ v",
        "",
        "Ours: over the settings of each method (seed means); published: over the published "
        "points. Different splits, models and λ scales: compare frontiers, not settings.",
        "",
    ]
    header = ["method", "ε", *(f"v = {v:g}" for v in THRESHOLDS)]
    lines = []
    for (method, epsilon), group in group_rows(summary, ("method", "epsilon")):
        points = [(s["setting"], mean_sd(s["error"])[0], mean_sd(s["violation"])[0]) for s in group]
        lines.append((method, fmt_eps(epsilon), *(_best(points, v) for v in THRESHOLDS)))
    for epsilon, curves in published.items():
        for method, points in curves:
            lines.append(
                (f"{method} (published)", fmt_eps(epsilon), *(_best(points, v) for v in THRESHOLDS))
            )
    parts.append(md_table(header, lines))

    curves = []
    for (method, epsilon), group in group_rows(summary, ("method", "epsilon")):
        curves.append(
            Curve(
                label=f"{method}, ε = {fmt_eps(epsilon)} (ours)",
                x=[mean_sd(s["error"])[0] for s in group],
                y=[mean_sd(s["violation"])[0] for s in group],
                xerr=[mean_sd(s["error"])[1] for s in group],
                yerr=[mean_sd(s["violation"])[1] for s in group],
                annotations=[s["setting"] for s in group],
            )
        )
    for epsilon, published_curves in published.items():
        for method, points in published_curves:
            curves.append(
                Curve(
                    label=f"{method}, ε = {fmt_eps(epsilon)} (published)",
                    x=[p[1] for p in points],
                    y=[p[2] for p in points],
                    published=True,
                )
            )
    return finish(
        output,
        stem,
        rows,
        "\n".join(parts),
        curves,
        title=title,
        xlabel="test error (1 − accuracy)",
        ylabel=f"{NOTION_NAME[notion]} (test)",
    )


def _with_interval(text: str, interval: str) -> str:
    return f"{text} {interval}" if interval else text


def _best(points: Sequence[tuple[str, float, float]], threshold: float) -> str:
    best = best_error_below(points, threshold)
    if best is None:
        return "not reached"
    error, label = best
    return f"{error:.4f}" + (f" ({label})" if label else "")
