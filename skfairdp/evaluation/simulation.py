"""How often the intervals cover: many evaluations of a synthetic population, vectorised.

An evaluation of ``n_samples`` rows drawn from a population of known cell
probabilities is one multinomial draw of the (group x y_true x y_pred) table; its
release adds the Gaussian noise :class:`~skfairdp.metrics.PrivateMetricFrame`
would add at ``epsilon`` (same calibration, ``delta="auto"``). The intervals are
those of :mod:`.intervals` on each simulated release, computed for all releases at
once, so 1,000 evaluations take seconds. ``tests/test_private_metric_frame.py``
and ``experiments/private_metric_frame_coverage.py`` use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from ..privacy import resolve_delta
from . import intervals
from .metrics import METRICS
from .table import table_noise_multiplier

__all__ = ["Population", "noise_std", "simulate", "wilson_width"]


@dataclass(frozen=True)
class Population:
    """Groups with known shares, base rates and error rates of a classifier.

    Parameters
    ----------
    shares : tuple of float
        Each group's share of the population (summing to 1).
    base_rates : tuple of float
        ``P(y = 1 | group)``.
    tpr, fpr : tuple of float
        The classifier's ``P(y_hat = 1 | y = 1, group)`` and ``P(y_hat = 1 | y = 0, group)``.
    """

    shares: tuple[float, ...]
    base_rates: tuple[float, ...]
    tpr: tuple[float, ...]
    fpr: tuple[float, ...]

    def cells(self) -> np.ndarray:
        """Cell probabilities, shape ``(n_groups, 4)``: tn, fp, fn, tp."""
        share, base = np.asarray(self.shares), np.asarray(self.base_rates)
        tpr, fpr = np.asarray(self.tpr), np.asarray(self.fpr)
        within = np.stack(
            [(1 - base) * (1 - fpr), (1 - base) * fpr, base * (1 - tpr), base * tpr], axis=-1
        )
        return share[:, None] * within

    def by_group(self, metric: str) -> np.ndarray:
        """The population value of ``metric`` in each group."""
        return METRICS[metric](self.cells())

    def difference(self, metric: str) -> float:
        """The population's largest gap between groups (``between_groups``)."""
        values = self.by_group(metric)
        return float(values.max() - values.min())


def noise_std(epsilon: float, n_samples: int) -> float:
    """The std of each cell's noise that the frame adds at ``epsilon``, ``delta="auto"``."""
    if math.isinf(epsilon):
        return 0.0
    return table_noise_multiplier(epsilon, resolve_delta("auto", n_samples))


def wilson_width(successes: np.ndarray, trials: np.ndarray, confidence: float) -> np.ndarray:
    """Width of Wilson's score interval for a binomial proportion."""
    z = float(ndtri(0.5 + confidence / 2))
    trials = np.maximum(trials, 1e-12)
    p = successes / trials
    return 2 * z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials**2)) / (1 + z * z / trials)


#: The two counts (successes, trials) of a rate, as cell indices (tn, fp, fn, tp).
BINOMIAL = {
    "selection_rate": ((1, 3), (0, 1, 2, 3)),
    "true_positive_rate": ((3,), (2, 3)),
    "false_positive_rate": ((1,), (0, 1)),
    "accuracy": ((0, 3), (0, 1, 2, 3)),
}


def simulate(
    population: Population,
    n_samples: int,
    epsilon: float,
    *,
    metrics: tuple[str, ...] = ("selection_rate", "true_positive_rate"),
    n_evaluations: int = 1000,
    n_draws: int = 4000,
    confidence: float = 0.95,
    n_oracle: int = 100_000,
    seed: int = 0,
    chunk: int = 100,
) -> list[dict]:
    """Coverage and width of the by-group and difference intervals over simulated evaluations.

    Parameters
    ----------
    population : Population
    n_samples : int
        Rows of each evaluation.
    epsilon : float
        The release's budget (``inf``: exact counts).
    metrics : tuple of str
        Names of :data:`~skfairdp.evaluation.metrics.METRICS`.
    n_evaluations, n_draws : int
        Simulated evaluations; posterior draws of each.
    confidence : float
    n_oracle : int
        Simulated releases behind the oracle interval's width.
    seed : int
        Seeds everything: the result is deterministic.
    chunk : int
        Evaluations per vectorised block (memory: ``chunk * n_draws * 4 * n_groups``).

    Returns
    -------
    list of dict
        One row per metric and target (each group, then ``"difference"``): the
        population ``value``, ``coverage`` (fraction of evaluations whose interval
        holds it), ``covered`` (their number), ``above_upper`` and ``below_lower``
        (the evaluations whose upper bound lies below it, whose lower bound above
        it: each end's misses), ``mean_width``, ``oracle_width``
        (the central ``confidence`` range of the plug-in estimate at the true
        population: the width an interval would have if the estimate's own
        distribution were known), ``wilson_width`` (mean Wilson width at the
        simulated true counts, epsilon=inf and binomial rates only; else NaN)
        and ``noise_dominated`` (fraction of evaluations flagging it; for the
        difference, flagging either group).
    """
    rng = np.random.default_rng(seed)
    cells = population.cells()
    n_groups = cells.shape[0]
    sigma = noise_std(epsilon, n_samples)

    def release(size: int) -> tuple[np.ndarray, np.ndarray]:
        counts = rng.multinomial(n_samples, cells.ravel(), size=size).reshape(size, n_groups, 4)
        return counts.astype(np.float64), counts + sigma * rng.standard_normal(counts.shape)

    counts, noisy = release(n_evaluations)
    oracle = np.maximum(release(n_oracle)[1], 0.0)
    shape = (len(metrics), n_evaluations, n_groups)
    low, high, flags = np.empty(shape), np.empty(shape), np.zeros(shape, dtype=bool)
    diff_low, diff_high = np.empty(shape[:2]), np.empty(shape[:2])
    for start in range(0, n_evaluations, chunk):
        block = slice(start, start + chunk)
        posterior = intervals.draw_posterior(noisy[block], sigma, n_draws, rng)
        sampling = intervals.sampling_only(noisy[block], n_draws, rng) if sigma > 0 else None
        clipped = np.maximum(noisy[block], 0.0)
        for k, name in enumerate(metrics):
            metric = METRICS[name]
            groups, pooled = posterior.by_group(metric), posterior.overall(metric)
            low[k, block], high[k, block] = intervals.equal_tailed(groups, confidence)
            diff_low[k, block], diff_high[k, block] = intervals.difference_interval(
                groups, pooled, metric(clipped), metric(clipped.sum(axis=-2)), "between_groups",
                confidence, test=intervals.GapTest(noisy[block], sigma, metric),
                max_gap=math.inf if metric.is_count else 1.0,
            )  # fmt: skip
            if sampling is not None:
                flags[k, block] = intervals.noise_dominated(
                    groups, metric.function(sampling.rates), True
                )
    rows = []
    alpha = 1 - confidence
    for k, name in enumerate(metrics):
        truth = population.by_group(name)
        estimates = METRICS[name](oracle)
        tails = np.nanquantile(estimates, [alpha / 2, 1 - alpha / 2], axis=0)
        oracle_width = tails[1] - tails[0]
        wilson = np.full(n_groups, np.nan)
        if sigma == 0 and name in BINOMIAL:
            hits, trials = (counts[..., list(idx)].sum(axis=-1) for idx in BINOMIAL[name])
            wilson = wilson_width(hits, trials, confidence).mean(axis=0)
        for g in range(n_groups):
            rows.append(_row(name, f"group {g}", truth[g], low[k, :, g], high[k, :, g],
                             oracle_width[g], wilson[g], flags[k, :, g].mean()))  # fmt: skip
        gap = float(truth.max() - truth.min())
        oracle_gap = np.nanmax(estimates, axis=-1) - np.nanmin(estimates, axis=-1)
        gap_width = float(np.diff(np.nanquantile(oracle_gap, [alpha / 2, 1 - alpha / 2]))[0])
        rows.append(_row(name, "difference", gap, diff_low[k], diff_high[k], gap_width, np.nan,
                         flags[k].any(axis=-1).mean()))  # fmt: skip
    for row in rows:
        row.update(n_samples=n_samples, epsilon=epsilon, noise_std=sigma,
                   shares="/".join(f"{s:g}" for s in population.shares))  # fmt: skip
    return rows


def _row(metric, target, value, low, high, oracle_width, wilson, flagged) -> dict:
    inside = (low <= value) & (value <= high)
    return {
        "metric": metric,
        "target": target,
        "value": float(value),
        "covered": int(inside.sum()),
        "coverage": float(inside.mean()),
        "above_upper": int((high < value).sum()),
        "below_lower": int((low > value).sum()),
        "mean_width": float((high - low).mean()),
        "oracle_width": float(oracle_width),
        "wilson_width": float(wilson),
        "noise_dominated": float(flagged),
    }
