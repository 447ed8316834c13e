"""Shared pieces of the benchmarks: data splits, the fit loop, tables, plots."""

from __future__ import annotations

import csv
import datetime
import math
import platform
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DELTA = 1e-5
#: Three seeds by default: a full run of every benchmark is about 1.5 hours on 2 cores
#: with three (``--seeds 0 1 2 3 4`` for five).
FULL_SEEDS = (0, 1, 2)
QUICK_SEEDS = (0,)


@dataclass
class Task:
    """One fit of a benchmark: which estimator, on which data, with which seed."""

    method: str
    setting: str
    value: float
    epsilon: float
    seed: int
    make: Callable[[], Any]
    dataset: str = "adult"
    uses_groups: bool = True
    n_samples: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def resolve_seeds(seeds: Sequence[int] | None, quick: bool) -> tuple[int, ...]:
    """The seeds to run: the given ones, else one (quick) or five."""
    if seeds:
        return tuple(int(s) for s in seeds)
    return QUICK_SEEDS if quick else FULL_SEEDS


class Progress:
    """A progress bar over ``total`` fits: tqdm when installed, else plain lines."""

    def __init__(self, total: int, desc: str, enabled: bool = True) -> None:
        self.total, self.desc, self.enabled, self.done = total, desc, enabled, 0
        self._bar = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, desc=desc, file=sys.stderr)

    def update(self, label: str) -> None:
        """Count one finished fit, labelled ``label``."""
        self.done += 1
        if self._bar is not None:
            self._bar.set_postfix_str(label, refresh=False)
            self._bar.update(1)
        elif self.enabled:
            print(f"{self.desc}: {self.done}/{self.total} {label}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()


_SPLITS: dict[tuple[str, int | None, int], tuple[np.ndarray, ...]] = {}


def load_split(dataset: str, seed: int, n_samples: int | None = None) -> tuple[np.ndarray, ...]:
    """``X_train, X_test, y_train, y_test, s_train, s_test`` of a bundled dataset.

    A 75/25 split stratified by (group, label), ``random_state=seed``;
    ``n_samples`` first takes a deterministic subsample stratified the same way.
    """
    key = (dataset, n_samples, seed)
    if key not in _SPLITS:
        from sklearn.model_selection import train_test_split

        from ..datasets import load_dataset
        from ..datasets._registry import stratified_subsample

        X, y, s = load_dataset(dataset, return_X_y_s=True)
        strata = np.char.add(np.asarray(s).astype(str), np.asarray(y).astype(str))
        if n_samples is not None and n_samples < len(y):
            rows = stratified_subsample(strata, n_samples, seed=0)
            X, y, s, strata = X[rows], y[rows], s[rows], strata[rows]
        _SPLITS[key] = tuple(
            train_test_split(X, y, s, test_size=0.25, stratify=strata, random_state=seed)
        )
    return _SPLITS[key]


def hard_metrics(estimator: Any, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    """Test error and the fairness violations of ``estimator.predict(X)``, with intervals.

    ``<notion>_lower`` / ``_upper``: the violation's 95 % sampling interval
    (:func:`sampling_intervals`).
    """
    from ..metrics import demographic_parity_violation, equalized_odds_violation

    y_pred = estimator.predict(X)
    return {
        "error": float(np.mean(y_pred != y)),
        "dp_violation": demographic_parity_violation(y, y_pred, sensitive_features=s),
        "eo_violation": equalized_odds_violation(y, y_pred, sensitive_features=s),
        **sampling_intervals(y, y_pred, s),
    }


#: The confidence of the test metrics' sampling intervals in every report.
CONFIDENCE = 0.95


def evaluation_frame(y: np.ndarray, y_pred: np.ndarray, s: np.ndarray, metrics: Any):
    """The exact ``PrivateMetricFrame`` (``epsilon=inf``) of test predictions.

    The bundled data are public, so the values are exact (fairlearn's); the frame's
    intervals then cover the sampling error of the test split alone: a violation
    whose interval reaches 0 is within the test split's noise.
    """
    from ..metrics import PrivateMetricFrame

    return PrivateMetricFrame(
        metrics=metrics, y_true=y, y_pred=y_pred, sensitive_features=s, epsilon=np.inf,
        pos_label=np.unique(y)[-1], random_state=0,
    )  # fmt: skip


def sampling_intervals(y: np.ndarray, y_pred: np.ndarray, s: np.ndarray) -> dict[str, float]:
    """95 % sampling intervals of the test DP and EO violations (``dp_violation_lower``, ...)."""
    from ..evaluation.violations import NOTIONS, violation_interval

    rates = ("selection_rate", *NOTIONS["equalized_odds"])
    frame = evaluation_frame(y, y_pred, s, {m: m for m in rates})
    out = {}
    for prefix, notion in (("dp", "demographic_parity"), ("eo", "equalized_odds")):
        lower, upper = violation_interval(frame, notion, CONFIDENCE)
        out[f"{prefix}_violation_lower"], out[f"{prefix}_violation_upper"] = lower, upper
    return out


def fmt_interval(rows: Sequence[dict[str, Any]], column: str, digits: int = 4) -> str:
    """``"[lower, upper]"``: the seed means of ``column``'s interval bounds ("" without them)."""
    lower, upper = f"{column}_lower", f"{column}_upper"
    if not rows or any(lower not in r or upper not in r for r in rows):
        return ""
    low, high = (float(np.mean([r[key] for r in rows])) for key in (lower, upper))
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def run_tasks(
    tasks: Sequence[Task],
    csv_path: Path,
    *,
    desc: str,
    progress: bool,
    evaluate: Callable[[Any, Task, tuple[np.ndarray, ...]], dict[str, float]] | None = None,
    split: Callable[[Task], tuple[np.ndarray, ...]] | None = None,
) -> list[dict[str, Any]]:
    """Fit every task, one torch thread; append each row to ``csv_path`` as it finishes.

    ``split(task)`` returns the task's ``X_train, X_test, y_train, y_test, s_train,
    s_test`` (default :func:`load_split`); ``evaluate(estimator, task, split)`` its
    metrics (default :func:`hard_metrics` on the test part).
    """
    import torch

    rows: list[dict[str, Any]] = []
    bar = Progress(len(tasks), desc, progress)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for task in tasks:
            if split is None:
                data = load_split(task.dataset, task.seed, task.n_samples)
            else:
                data = split(task)
            X_train, X_test, y_train, y_test, s_train, s_test = data
            estimator = task.make()
            tic = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if task.uses_groups:
                    estimator.fit(X_train, y_train, sensitive_features=s_train)
                else:
                    estimator.fit(X_train, y_train)
            seconds = time.perf_counter() - tic
            spent = getattr(estimator, "privacy_spent_", None)
            row: dict[str, Any] = {
                "method": task.method,
                "dataset": task.dataset,
                "n_train": len(y_train),
                "setting": task.setting,
                "value": task.value,
                "epsilon": task.epsilon,
                "seed": task.seed,
                "epsilon_spent": math.inf if spent is None else float(spent.epsilon),
                "delta_spent": 0.0 if spent is None else float(spent.delta),
                "seconds": round(seconds, 3),
                **task.extra,
            }
            if evaluate is None:
                row.update(hard_metrics(estimator, X_test, y_test, s_test))
            else:
                row.update(evaluate(estimator, task, data))
            rows.append(row)
            write_csv(rows, csv_path)
            bar.update(f"{task.method} {task.setting} eps={task.epsilon:g} seed={task.seed}")
    finally:
        torch.set_num_threads(threads)
        bar.close()
    return rows


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` (dicts with the same keys, in order) as CSV."""
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(v) for k, v in row.items()})


def _csv_value(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.6g}"
    return value


def group_rows(
    rows: Iterable[dict[str, Any]], keys: Sequence[str]
) -> Iterator[tuple[tuple, list[dict[str, Any]]]]:
    """The rows grouped by ``keys``, groups in first-seen order."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    yield from groups.items()


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (``nan`` for a single value)."""
    values = np.asarray(values, dtype=float)
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
    return float(np.mean(values)), sd


def fmt_mean_sd(values: Sequence[float], digits: int = 4) -> str:
    """``"mean ± sd"`` (just the mean for one value)."""
    mean, sd = mean_sd(values)
    if math.isnan(sd):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def fmt_eps(epsilon: float) -> str:
    """ε as text, ``∞`` for infinity."""
    return "∞" if math.isinf(epsilon) else f"{epsilon:g}"


def md_table(header: Sequence[str], lines: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(v) for v in line) + " |" for line in lines]
    return "\n".join(out)


def preamble(title: str, name: str, quick: bool, seeds: Sequence[int], protocol: str) -> str:
    """The markdown header: how to reproduce, the protocol and the environment."""
    import sklearn
    import torch

    from .. import __version__

    command = f"skfairdp benchmark {name}" + (" --quick" if quick else "")
    if tuple(seeds) != (QUICK_SEEDS if quick else FULL_SEEDS):
        command += " --seeds " + " ".join(str(s) for s in seeds)
    lines = [
        f"# {title}",
        "",
        f"Reproduce: `{command}`",
        "",
        f"- Protocol: {protocol}",
        f"- Seeds: {', '.join(str(s) for s in seeds)}; mean ± sd (ddof = 1) over seeds.",
        f"- Written {datetime.date.today().isoformat()} by skfairdp {__version__}, torch "
        f"{torch.__version__}, scikit-learn {sklearn.__version__}, Python "
        f"{platform.python_version()}; 1 torch thread.",
    ]
    if quick:
        lines.append(
            "- **Quick run** (`--quick`): a subsample, few settings, short training. A smoke "
            "test of the pipeline, not a reproduction: compare the published numbers with a "
            "full run."
        )
    return "\n".join(lines)


#: The first words of the accounting check's line: a failure there is a bug, not a
#: missed target, and fails the command even with ``--explore``.
ACCOUNTING_CHECK = "privacy accounting:"
#: What ``--quick`` adds to the output files' names and to the titles.
QUICK_SUFFIX, QUICK_TITLE = "_quick", " (quick run)"


def quick_stem(stem: str, quick: bool) -> str:
    """The output files' stem: ``raco`` or, for a quick run, ``raco_quick``."""
    return stem + QUICK_SUFFIX if quick else stem


def quick_title(title: str, quick: bool) -> str:
    """The title of the markdown and the plot, marked ``(quick run)`` for a quick run."""
    return title + QUICK_TITLE if quick else title


def accounting_line(rows: Sequence[dict[str, Any]]) -> str:
    """A PASS/FAIL line: no private fit spent more than its target ε."""
    private = [r for r in rows if math.isfinite(r["epsilon"])]
    if not private:
        return "- No private fits."
    over = [r for r in private if r["epsilon_spent"] > r["epsilon"] * (1 + 1e-9)]
    worst = max(r["epsilon_spent"] / r["epsilon"] for r in private)
    if not over:
        return (
            f"- PASS: {ACCOUNTING_CHECK} every private fit spends ε ≤ its target (max "
            f"ε_spent / ε = {worst:.6f} over {len(private)} fits)."
        )
    return (
        f"- FAIL: {ACCOUNTING_CHECK} {len(over)} of {len(private)} private fits spend more "
        f"than their target ε (max ε_spent / ε = {worst:.6f} > 1)."
    )


def target_line(
    label: str, value: float, bound: float, target: str, *, strict: bool = False, digits: int = 4
) -> str:
    """A PASS/FAIL line that states the inequality which holds.

    ``PASS: {label} 0.0188 ≤ 0.04 ({target})``, or, when the target is missed,
    ``FAIL: {label} 0.1217 > 0.12 ({target})``: a FAIL line never prints the
    target's inequality as if it held. ``strict``: the target is ``value < bound``.
    """
    passed = value < bound if strict else value <= bound
    if passed:
        op = "<" if strict else "≤"
    else:
        op = "≥" if strict else ">"
    shown = f"{bound:.{digits}f}".rstrip("0").rstrip(".")
    return f"- {'PASS' if passed else 'FAIL'}: {label} {value:.{digits}f} {op} {shown} ({target})"


@dataclass
class Curve:
    """One line of a trade-off plot."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    xerr: Sequence[float] | None = None
    yerr: Sequence[float] | None = None
    published: bool = False
    annotations: Sequence[str] | None = None


def tradeoff_plot(
    path: Path, curves: Sequence[Curve], *, title: str, xlabel: str, ylabel: str
) -> None:
    """Save ours (solid, error bars) and published (dashed, grey shades) curves as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.8), dpi=130, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ours = [c for c in curves if not c.published]
    theirs = [c for c in curves if c.published]
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    markers = ["o", "^", "s", "D", "v", "P"]
    for i, c in enumerate(ours):
        ax.errorbar(
            c.x, c.y, xerr=_bars(c.xerr), yerr=_bars(c.yerr), fmt=markers[i % 6] + "-",
            color=colors[i % 6], ms=5, lw=1.4, capsize=2, label=c.label,
        )  # fmt: skip
        for text, x, y in zip(c.annotations or (), c.x, c.y):
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
    greys = ["0.35", "0.55", "0.7", "0.45"]
    for i, c in enumerate(theirs):
        ax.plot(
            c.x, c.y, "x--" if len(c.x) > 1 else "*", color=greys[i % 4], ms=6 if len(c.x) > 1
            else 11, lw=1, label=c.label,
        )  # fmt: skip
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.savefig(path)


def _bars(values: Sequence[float] | None) -> Sequence[float] | None:
    if values is None:
        return None
    cleaned = [0.0 if (v is None or math.isnan(v)) else v for v in values]
    return cleaned if any(cleaned) else None


def finish(
    output: Path, stem: str, rows: Sequence[dict[str, Any]], markdown: str, curves, **plot
) -> list[Path]:
    """Write ``<stem>.csv`` (again, complete), ``<stem>.md`` and ``<stem>.png``."""
    csv_path, md_path, png_path = (output / f"{stem}{ext}" for ext in (".csv", ".md", ".png"))
    write_csv(rows, csv_path)
    md_path.write_text(markdown.rstrip() + "\n", encoding="utf-8")
    tradeoff_plot(png_path, curves, **plot)
    return [csv_path, md_path, png_path]
