"""Intervals for population metrics from a noisy count table: sampling error and DP noise.

The model (doc/evaluation.md):

- the evaluation rows are drawn i.i.d. from a population; the count of cell
  ``c`` (a group, a true label, a prediction) is Poisson with mean
  ``lambda_c``, so the population's cell probabilities are ``lambda /
  sum(lambda)`` and every population metric is a function of ``lambda`` (the
  Poisson view of the multinomial: the number of rows need not be known);
- the release adds known Gaussian noise: ``m_c = n_c + N(0, sigma^2)``;
- group membership and labels are exact.

The posterior of ``lambda`` given the released ``m`` is drawn in two steps,
vectorised over cells and draws: a cell's true count given its noisy count,
``p(n | m) ∝ n^(a - 1) exp(-(m - n)^2 / (2 sigma^2))`` on ``n >= 0`` (by inverse
CDF on a grid in ``t = n^a``, where the density is smooth), then
``lambda | n ~ Gamma(n + a)``, with Jeffreys' ``a = 1/2`` (a ``Dirichlet(n + 1/2)``
posterior for the cell probabilities). The prior on ``n`` is the one the
``Gamma(a)`` prior on ``lambda`` implies for large counts, so that sums of cells
(a group's positives, its size) are not pulled upwards by the noise. Without
noise (``sigma = 0``) the first step is the identity, and a rate's interval is
Jeffreys' Beta interval. Each interval is the equal-tailed posterior interval
of the metric's draws, except where a maximum over groups makes that interval
biased (differences and ratios, see :func:`difference_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, gammaln, ndtr, ndtri

__all__ = [
    "Posterior",
    "difference_interval",
    "GapTest",
    "folded_interval",
    "draw_posterior",
    "equal_tailed",
    "noisy_proportion_draws",
    "ratio_interval",
    "true_count_draws",
]

#: Jeffreys' prior: lambda ~ Gamma(1/2) per cell.
PRIOR = 0.5
#: Grid points of each cell's true-count posterior.
GRID = 400
#: The grid spans the noisy count +- this many noise stds.
SPAN = 8.0
#: Noise dominates a value when its posterior std exceeds the sampling-only one by this factor
#: (the noise then contributes more than half of the variance).
NOISE_DOMINATES = np.sqrt(2.0)


def true_count_draws(
    noisy: np.ndarray, sigma: float, n_draws: int, rng: np.random.Generator, prior: float = PRIOR
) -> np.ndarray:
    """Draws of the true counts given the noisy ones, shape ``(n_draws, *noisy.shape)``.

    ``p(n | m) ∝ n^(prior - 1) exp(-(m - n)^2 / (2 sigma^2))`` on ``n >= 0``;
    ``sigma = 0``: ``max(m, 0)`` repeated.
    """
    noisy = np.asarray(noisy, dtype=np.float64)
    if sigma == 0:
        return np.broadcast_to(np.maximum(noisy, 0.0), (n_draws, *noisy.shape)).copy()
    m = noisy.reshape(-1)
    low = np.maximum(m - SPAN * sigma, 0.0) ** prior
    high = (np.maximum(m, 0.0) + SPAN * sigma) ** prior
    t = low[:, None] + (high - low)[:, None] * np.linspace(0.0, 1.0, GRID)
    log_density = -0.5 * ((m[:, None] - _power(t, 1.0 / prior)) / sigma) ** 2
    density = np.exp(log_density - log_density.max(axis=1, keepdims=True))
    cdf = np.cumsum(0.5 * (density[:, 1:] + density[:, :-1]), axis=1)
    cdf = np.concatenate([np.zeros((m.size, 1)), cdf / cdf[:, -1:]], axis=1)
    # inverse CDF of every cell at once: cell i's CDF shifted to [i, i + 1]
    rows = np.arange(m.size, dtype=np.float64)[:, None]
    flat, t = (cdf + rows).ravel(), t.ravel()
    u = (rng.random((m.size, n_draws)) + rows).ravel()
    right = np.searchsorted(flat, u, side="right")
    np.clip(right, 1, flat.size - 1, out=right)
    left = right - 1
    step = flat[right] - flat[left]
    step[step == 0] = np.inf  # a flat stretch of the CDF: take its left end
    u -= flat[left]
    u /= step
    u *= t[right] - t[left]
    u += t[left]
    counts = _power(u.reshape(m.size, n_draws), 1.0 / prior)
    return counts.T.reshape(n_draws, *noisy.shape)


def _power(values: np.ndarray, exponent: float) -> np.ndarray:
    return np.square(values) if exponent == 2.0 else values**exponent


@dataclass(frozen=True)
class Posterior:
    """Posterior draws for a table of shape ``(..., n_groups, 4)``.

    Attributes
    ----------
    counts : ndarray of shape (n_draws, ..., n_groups, 4)
        The evaluation sample's true counts (uncertain only through the noise).
    rates : ndarray of shape (n_draws, ..., n_groups, 4)
        The population's cell intensities ``lambda`` (any positive scale: every
        metric but the count is a ratio of them).
    """

    counts: np.ndarray
    rates: np.ndarray

    def by_group(self, metric) -> np.ndarray:
        """Draws of ``metric`` in each group, shape ``(n_draws, ..., n_groups)``."""
        return metric(self.counts if metric.is_count else self.rates)

    def overall(self, metric) -> np.ndarray:
        """Draws of ``metric`` on the pooled table, shape ``(n_draws, ...)``."""
        cells = self.counts if metric.is_count else self.rates
        return metric(cells.sum(axis=-2))


def draw_posterior(
    noisy: np.ndarray, sigma: float, n_draws: int, rng: np.random.Generator, prior: float = PRIOR
) -> Posterior:
    """Posterior draws of the true counts and the population intensities given ``noisy``.

    Parameters
    ----------
    noisy : ndarray of shape (..., n_groups, 4)
        Released counts (leading axes: independent tables, e.g. simulated evaluations).
    sigma : float
        Std of each cell's Gaussian noise (0: exact counts).
    n_draws : int
    rng : numpy Generator
    prior : float, default=0.5
        Gamma prior shape of each cell's intensity.

    Returns
    -------
    Posterior
    """
    counts = true_count_draws(noisy, sigma, n_draws, rng, prior)
    return Posterior(counts, rng.standard_gamma(counts + prior))


def sampling_only(
    noisy: np.ndarray, n_draws: int, rng: np.random.Generator, prior: float = PRIOR
) -> Posterior:
    """The posterior as if the clipped noisy counts were exact (sampling error only)."""
    counts = np.broadcast_to(np.maximum(noisy, 0.0), (n_draws, *np.shape(noisy)))
    return Posterior(counts, rng.standard_gamma(counts + prior))


def noisy_proportion_draws(
    noisy: float, n: int, sigma: float, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Posterior draws of a population proportion from a noisy count of ``n`` public trials.

    The count ``c`` of successes among ``n`` rows is released as ``c + N(0, sigma^2)``.
    With Jeffreys' ``Beta(1/2, 1/2)`` prior on the proportion ``p``, ``c`` is a priori
    beta-binomial; its posterior given the noisy count is exact on ``0..n``, and
    ``p | c ~ Beta(c + 1/2, n - c + 1/2)``. ``sigma = 0``: Jeffreys' interval.
    """
    counts = np.arange(n + 1, dtype=np.float64)
    log_prior = (
        gammaln(n + 1) - gammaln(counts + 1) - gammaln(n - counts + 1)
        + betaln(counts + PRIOR, n - counts + PRIOR)
    )  # fmt: skip
    if sigma > 0:
        log_prior = log_prior - 0.5 * ((noisy - counts) / sigma) ** 2
    else:
        log_prior = np.where(counts == np.clip(np.rint(noisy), 0, n), log_prior, -np.inf)
    weights = np.exp(log_prior - log_prior.max())
    c = rng.choice(counts, size=n_draws, p=weights / weights.sum())
    return rng.beta(c + PRIOR, n - c + PRIOR)


def equal_tailed(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The equal-tailed interval of draws along axis 0."""
    alpha = 1.0 - confidence
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high


def _pick(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[..., index]`` with ``index`` of shape ``values.shape[1:-1]`` (per table)."""
    shaped = np.broadcast_to(index[None, ..., None], (values.shape[0], *index.shape, 1))
    return np.take_along_axis(values, shaped, axis=-1)[..., 0]


def _ignore_nan(points: np.ndarray, fill: float) -> np.ndarray:
    return np.where(np.isnan(points), fill, points)


def folded_interval(
    center: np.ndarray, scale: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Neyman's interval for ``|delta|`` from ``d ~ N(delta, scale^2)`` with ``|d| = center``.

    ``|d|`` is folded normal; its law depends on ``|delta|`` only, and grows with
    it, so inverting its equal-tailed tests gives an interval of exact coverage
    (Bayesian quantiles of ``|delta|`` over-cover when the sign is uncertain: the
    posterior's mass on the other sign widens the upper tail).
    """
    alpha = 1.0 - confidence
    scale = np.maximum(scale, 1e-300)
    # below |d| = 0.0314 scale (alpha = 0.05) the interval is [0, 0]: no |delta| accepts so
    # small a |d|. Read it as 0.035 scale, whose upper bound is about 0.46 scale.
    floor = 1.1 * scale * ndtri(0.5 + alpha / 4)
    center, scale = np.broadcast_arrays(np.maximum(np.abs(center), floor), scale)

    def below(theta: np.ndarray) -> np.ndarray:  # P_theta(|d| <= center)
        return ndtr((center - theta) / scale) - ndtr((-center - theta) / scale)

    def solve(level: float) -> np.ndarray:
        # below() decreases in theta: bisection of below(theta) = level on [0, center + 10 scale]
        lo, hi = np.zeros_like(center), center + 10 * scale
        for _ in range(60):
            mid = (lo + hi) / 2
            go_up = below(mid) > level
            lo, hi = np.where(go_up, mid, lo), np.where(go_up, hi, mid)
        return np.where(below(np.zeros_like(center)) > level, (lo + hi) / 2, 0.0)

    return solve(1 - alpha / 2), solve(alpha / 2)


def difference_interval(
    group_draws: np.ndarray,
    overall_draws: np.ndarray,
    group_points: np.ndarray,
    overall_point: np.ndarray,
    method: str,
    confidence: float,
    *,
    test: GapTest | None = None,
    max_gap: float = math.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """Interval of fairlearn's ``difference`` (largest absolute gap) in the population.

    The gap is a maximum of absolute values, whose posterior draws sit above the
    true gap when the groups are close (an equal-tailed interval would exclude a
    true 0). Where the signed gap between the two values the point estimate
    compares (``max`` and ``min``, two distinct groups even when the points tie;
    for ``"to_overall"``, the farthest group and the overall value) has a clear sign
    (its equal-tailed interval excludes 0), the lower bound is that interval's, and
    the upper bound the upper quantile of the draws of the largest gap. Otherwise,
    with two groups, the interval is :func:`folded_interval` of the signed gap's
    posterior mean and std, its upper bound raised to the signed gap's upper
    quantile where that is higher (near a rate of 0 or 1 the posterior mean is
    pulled towards 0: a true gap of 0.02 between a group at 0 and one at 0.02 lay
    above the folded upper bound in 8.4 % of releases at epsilon 1); with more
    groups the lower bound is 0 and the upper bound as above (conservative).

    The posterior alone cannot decide the sign near a rate of 0 or 1: each group's
    draws are kept inside ``[0, 1]`` and pushed inward, the small group's more, so
    the signed gap's draws sit away from 0 while the true gap is 0 (a constant
    predictor's interval excluded 0 in 20-35 % of releases at 95 %). With ``test``
    (the released table and its noise std), the sign counts as clear only when a
    frequentist test on the *unclipped* noisy counts rejects a zero gap for every
    pair of groups at once (:class:`GapTest`); otherwise the lower bound is 0. Where
    it does, the lower bound is the smaller of the two methods' (the posterior's and
    the test's). The upper bound is the posterior's (a true gap of 0 cannot lie
    above it), except with two groups where sampling makes more than half of the
    test's variance: there the test's own folded interval is nearly exact, and the
    upper bound is the larger of the two (at epsilon = inf, a group of no positives
    has its draws pushed up from 0 and the gap's down: a true gap of 0.05 lay above
    the posterior's upper bound in 8.5 % of releases). For this upper bound the
    test reads weights as frequency weights, like the posterior (a cell's sampling
    variance is its count, not ``weight`` times it).

    Parameters
    ----------
    group_draws : ndarray of shape (n_draws, ..., n_groups)
    overall_draws : ndarray of shape (n_draws, ...)
    group_points, overall_point : the point values (NaN groups are left out)
    method : {"between_groups", "to_overall"}
    confidence : float
    test : GapTest, optional
        The release behind the draws, for the frequentist sign test (recommended;
        without it the sign is read from the posterior alone).
    max_gap : float, default=inf
        The largest gap the metric allows (1 for a rate): the upper bound is clipped
        there (the folded interval's is not bounded, and on groups of a dozen rows at
        epsilon = 0.2 it reached 1.3).

    Returns
    -------
    (lower, upper) : ndarrays of shape (...)
    """
    alpha = 1.0 - confidence
    valid = ~np.isnan(group_points)
    if method == "between_groups":
        high, low = _extremes(group_points)
        signed = _pick(group_draws, high) - _pick(group_draws, low)
        largest = np.where(valid, group_draws, -np.inf).max(axis=-1) - np.where(
            valid, group_draws, np.inf
        ).min(axis=-1)
    else:
        gaps = group_draws - overall_draws[..., None]
        point_gaps = np.abs(group_points - overall_point[..., None])
        far = np.argmax(_ignore_nan(point_gaps, -np.inf), axis=-1)
        side = np.sign(_pick(group_points[None], far)[0] - overall_point)
        signed = np.where(side < 0, -1.0, 1.0) * _pick(gaps, far)
        largest = np.where(valid, np.abs(gaps), -np.inf).max(axis=-1)
    sure = np.quantile(signed, alpha / 2, axis=0)
    lower = np.maximum(sure, 0.0)
    upper = np.quantile(largest, 1 - alpha / 2, axis=0)
    two_groups = method == "between_groups" and valid.sum(axis=-1).max(initial=0) <= 2
    if two_groups:
        folded_low, folded_high = folded_interval(signed.mean(axis=0), signed.std(axis=0),
                                                  confidence)  # fmt: skip
        # the posterior mean of the signed gap is pulled towards 0 where a group's rate is
        # near 0 or 1 (its draws kept inside [0, 1]); its own upper quantile is not
        folded_high = np.maximum(folded_high, np.quantile(signed, 1 - alpha / 2, axis=0))
        lower, upper = np.where(sure > 0, lower, folded_low), np.where(sure > 0, upper, folded_high)
    # one group (fairlearn accepts it): no gap to bound, the difference is 0 exactly
    single = valid.sum(axis=-1) <= 1
    lower, upper = np.where(single, 0.0, lower), np.where(single, 0.0, upper)
    upper = np.minimum(upper, max_gap)
    if test is None:
        return lower, upper
    if method == "between_groups":
        gap, sampling, noise = test.variances(
            lambda values, overall: _pick(values, high) - _pick(values, low)
        )
        pairs = valid.sum(axis=-1) * (valid.sum(axis=-1) - 1) / 2
    else:
        gap, sampling, noise = test.variances(lambda values, overall: np.where(
            side < 0, -1.0, 1.0) * (_pick(values, far) - overall))  # fmt: skip
        pairs = valid.sum(axis=-1)
    se = np.sqrt(sampling + noise)
    critical = ndtri(1 - alpha / (2 * np.maximum(pairs, 1)))
    tested = gap - critical * se
    clear = np.isfinite(tested) & (tested > 0)
    lower = np.where(clear, np.minimum(lower, tested), 0.0)
    if two_groups:
        # where sampling makes most of the test's variance, its inverted upper bound is
        # nearly exact, and the posterior's can sit low (a group of no positives: its
        # draws are pushed up from 0, the gap's down). Weights are read as frequency
        # weights here, as by the posterior: the bound w * mean would widen a weighted
        # frame's upper end by up to sqrt(w) where no coverage asks for it.
        sampling = sampling / test.weight if test.weight > 0 else sampling
        _, tested_high = folded_interval(gap, np.sqrt(sampling + noise), confidence)
        take = (sampling > noise) & np.isfinite(tested_high) & ~single
        upper = np.where(take, np.minimum(np.maximum(upper, tested_high), max_gap), upper)
    return np.maximum(lower, 0.0), upper


def _extremes(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The groups of the largest and the smallest point, distinct where two are valid.

    Tied points (two groups both at a clipped rate of 0) would otherwise pick one group
    twice: a signed gap of exactly 0 and an interval of width 0 whatever the release.
    """
    high = np.argmax(_ignore_nan(points, -np.inf), axis=-1)
    others = np.where(np.arange(points.shape[-1]) == high[..., None], np.inf,
                      _ignore_nan(points, np.inf))  # fmt: skip
    return high, np.argmin(others, axis=-1)


@dataclass(frozen=True)
class GapTest:
    """A normal test of a gap between metric values from the unclipped noisy counts.

    Each released cell is ``m_c = n_c + N(0, sigma^2)`` with ``n_c`` Poisson (the
    module's model): ``m_c`` is unbiased for ``lambda_c`` with variance ``lambda_c
    w + sigma^2`` (``w`` bounds a row's weight: a weighted cell's variance is at
    most ``w`` times its mean). A gap ``h(m)`` (a smooth function of the cells:
    two groups' metrics, or a group's and the pooled one) is then approximately
    normal with variance ``sum_c (dh/dm_c)^2 (w max(m_c, 0) + sigma^2)`` (delta
    method, gradient by central differences). Unclipped, ``h(m)`` is not pushed
    away from 0 at a rate of 0 or 1, where the noise is all the variance and the
    test is exact.

    Parameters
    ----------
    noisy : ndarray of shape (..., n_groups, 4)
        The released table (unclipped).
    sigma : float
        Each cell's noise std.
    metric : callable
        ``cells (..., 4) -> values (...)``.
    weight : float, default=1.0
        The bound on a row's weight (``max_sample_weight``).
    """

    noisy: np.ndarray
    sigma: float
    metric: object
    weight: float = 1.0

    def gap(self, signed) -> tuple[np.ndarray, np.ndarray]:
        """``h(m)`` and its standard error, for ``signed(values, overall) -> (...)``.

        ``values`` has shape ``(k, ..., n_groups)`` and ``overall`` ``(k, ...)`` for
        ``k`` tables (the released one and its perturbations).
        """
        h, sampling, noise = self.variances(signed)
        return h, np.sqrt(sampling + noise)

    def variances(self, signed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``h(m)`` and the two parts of its variance: sampling (``w max(m, 0)``) and noise."""
        noisy = np.asarray(self.noisy, dtype=np.float64)
        cells = noisy.shape[-2] * noisy.shape[-1]
        step = 1e-3 * (1.0 + np.abs(noisy))
        basis = np.eye(cells).reshape(cells, *([1] * (noisy.ndim - 2)), *noisy.shape[-2:])
        tables = np.concatenate([noisy[None], noisy + basis * step, noisy - basis * step])
        with np.errstate(divide="ignore", invalid="ignore"):
            h = signed(self.metric(tables), self.metric(tables.sum(axis=-2)))
        up, down = h[1 : cells + 1], h[cells + 1 :]
        spread = step.reshape(*noisy.shape[:-2], cells)
        spread = np.moveaxis(spread, -1, 0)
        gradient = (up - down) / (2 * spread)
        variance = self.weight * np.maximum(noisy, 0.0) + self.sigma**2
        variance = np.moveaxis(variance.reshape(*noisy.shape[:-2], cells), -1, 0)
        squared = gradient**2
        noise = self.sigma**2 * np.sum(squared, axis=0)
        return h[0], np.sum(squared * variance, axis=0) - noise, noise


def ratio_interval(
    group_draws: np.ndarray,
    overall_draws: np.ndarray,
    group_points: np.ndarray,
    overall_point: np.ndarray,
    method: str,
    confidence: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Interval of fairlearn's ``ratio`` (smallest ratio, at most 1) in the population.

    The mirror of :func:`difference_interval`: the lower bound is the lower
    quantile of the draws of the smallest ratio; the upper bound that of the
    ratio of the two values the point estimate compares (``min / max``; for
    ``"to_overall"``, the farthest group and the overall value), at most 1 -- the
    smallest ratio is at most that one.
    """
    alpha = 1.0 - confidence
    valid = ~np.isnan(group_points)
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "between_groups":
            high, low = (np.argmax(_ignore_nan(group_points, -np.inf), axis=-1),
                         np.argmin(_ignore_nan(group_points, np.inf), axis=-1))  # fmt: skip
            compared = _pick(group_draws, low) / _pick(group_draws, high)
            smallest = np.where(valid, group_draws, np.inf).min(axis=-1) / np.where(
                valid, group_draws, -np.inf
            ).max(axis=-1)
        else:
            ratios = _at_most_one(group_draws / overall_draws[..., None])
            point_ratios = _at_most_one(group_points / overall_point[..., None])
            far = np.argmin(_ignore_nan(point_ratios, np.inf), axis=-1)
            compared = _pick(ratios, far)
            smallest = np.where(valid, ratios, np.inf).min(axis=-1)
    smallest, compared = np.nan_to_num(smallest, nan=0.0), np.nan_to_num(compared, nan=0.0)
    lower = np.quantile(smallest, alpha / 2, axis=0)
    upper = np.minimum(np.quantile(compared, 1 - alpha / 2, axis=0), 1.0)
    return lower, upper


def _at_most_one(ratio: np.ndarray) -> np.ndarray:
    return np.where(ratio > 1, 1.0 / ratio, ratio)


def noise_dominated(private: np.ndarray, sampling: np.ndarray, noisy: bool) -> np.ndarray:
    """Whether the DP noise contributes more than half of a value's posterior variance."""
    if not noisy:
        return np.zeros(private.shape[1:], dtype=bool)
    return private.std(axis=0) > NOISE_DOMINATES * sampling.std(axis=0)
