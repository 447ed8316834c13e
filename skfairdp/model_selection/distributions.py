"""The number of runs ``K`` of the search: its distributions, their pmf, one secret draw.

Papernot & Steinke (2022, Section 2): ``K`` is drawn independently of the data
from a truncated negative binomial, Poisson, geometric or logarithmic
distribution of mean ``E[K]``; dp-accounting's ``RepeatAndSelectDpEvent`` names
each by its ``shape``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln

from ..privacy import RandomSource

__all__ = ["DISTRIBUTIONS", "draw_n_runs", "n_runs_pmf", "run_distribution_shape"]

DISTRIBUTIONS = ("truncated_negative_binomial", "poisson", "geometric", "logarithmic")


def run_distribution_shape(distribution: str, shape: float = 0.5) -> float:
    """dp-accounting's ``shape`` of a distribution of the number of runs.

    ``inf`` for Poisson, 1 for geometric, 0 for logarithmic, ``shape`` (``> 0``)
    for the truncated negative binomial.
    """
    if distribution == "poisson":
        return math.inf
    if distribution == "geometric":
        return 1.0
    if distribution == "logarithmic":
        return 0.0
    if distribution == "truncated_negative_binomial":
        shape = float(shape)
        if not (0 < shape < math.inf):
            raise ValueError(f"the truncated negative binomial needs 0 < shape < inf, got {shape}")
        return shape
    raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")


@functools.lru_cache(maxsize=64)
def _gamma(shape: float, mean: float) -> float:
    """The success probability of the truncated negative binomial of this mean (dp-accounting's)."""
    from dp_accounting.rdp.rdp_privacy_accountant import _gamma_truncated_negative_binomial

    return float(_gamma_truncated_negative_binomial(shape, mean))


def n_runs_pmf(k: ArrayLike, distribution: str, mean: float, shape: float = 0.5) -> np.ndarray:
    """``P[K = k]`` for the number of runs ``K`` (Papernot & Steinke 2022, Section 2).

    Parameters
    ----------
    k : int or array-like of int
    distribution : {"truncated_negative_binomial", "poisson", "geometric", "logarithmic"}
    mean : float
        ``E[K]``, at least 1.
    shape : float, default=0.5
        The truncated negative binomial's ``eta`` (other distributions ignore it).

    Returns
    -------
    ndarray of float
        Probabilities (``K >= 1``, except Poisson, where ``K = 0`` has mass ``e^-mean``).
    """
    k = np.atleast_1d(np.asarray(k, dtype=np.float64))
    eta = run_distribution_shape(distribution, shape)
    mean = float(mean)
    if mean < 1:
        raise ValueError(f"the mean number of runs must be >= 1, got {mean}")
    out = np.zeros_like(k)
    if math.isinf(eta):
        ok = k >= 0
        out[ok] = np.exp(-mean + k[ok] * math.log(mean) - gammaln(k[ok] + 1))
        return out
    gamma = _gamma(eta, mean)
    ok = k >= 1
    if gamma >= 1.0:  # mean 1: one run, always
        out[k == 1] = 1.0
        return out
    if eta == 0:
        out[ok] = np.exp(k[ok] * math.log1p(-gamma) - np.log(k[ok]) - math.log(-math.log(gamma)))
        return out
    log_norm = math.log(math.expm1(-eta * math.log(gamma)))  # gamma^-eta - 1
    out[ok] = np.exp(
        k[ok] * math.log1p(-gamma) + gammaln(k[ok] + eta) - math.lgamma(eta) - gammaln(k[ok] + 1)
        - log_norm
    )  # fmt: skip
    return out


def draw_n_runs(random: RandomSource, distribution: str, mean: float, shape: float = 0.5) -> int:
    """Draw the number of runs ``K`` by inverting its CDF at one uniform of ``random``.

    The uniform comes from the search's :class:`~skfairdp.privacy.RandomSource`
    (the OS CSPRNG in ``secure_mode``): ``K`` must stay secret, it is part of the
    mechanism's randomness.

    Parameters
    ----------
    random : RandomSource
    distribution, mean, shape
        See :func:`n_runs_pmf`.

    Returns
    -------
    int
    """
    u = float(random.uniform(1)[0])
    k = 0 if distribution == "poisson" else 1
    cdf, block = 0.0, 256
    while True:
        ks = np.arange(k, k + block)
        pmf = n_runs_pmf(ks, distribution, mean, shape)
        cum = cdf + np.cumsum(pmf)
        hit = np.flatnonzero(cum >= u)
        if hit.size:
            return int(ks[hit[0]])
        if pmf[-1] < 1e-300 or k > 10**7:  # u within rounding of 1: the tail's first value
            return int(ks[-1])
        cdf, k, block = float(cum[-1]), k + block, block * 2
