"""The table-inversion samplers of secure mode (:mod:`skfairdp.privacy.cdt`, issue 35).

Exact checks first: each table's sampled distribution (its integer CDF) and each
plan's (the exact convolution of its tables) against the true pmf computed with
mpmath at 500 bits, total variation within the bound the module claims (and that
bound below ``2**-280`` per table, ``2**-278`` per draw); the three-stage inversion
against ``bisect`` on the full draw, on crafted random bytes (ties at 16 and 48 bits,
the last entry). Then chi-square tests of the samplers at the releases' parameters
(level 1e-4: a correct sampler fails one with probability about 1e-4), and that every
secure release draws from them.
"""

from __future__ import annotations

import math
import os
from bisect import bisect_right
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
from scipy import stats

from skfairdp.preprocessing import DPStandardScaler
from skfairdp.privacy import RandomSource, cdt, discrete, grid, noisy_count, noisy_histogram

# six chi-square tests draw from os.urandom (unseeded): Bonferroni, so that the file fails
# by chance less than once in 10,000 runs (one test at 1e-4 each failed once in CI, p = 5e-5;
# 300 reruns of that test gave uniform p-values)
LEVEL = 1e-4 / 6
MP_BITS = 500


def _gaussian_pmf(sigma2: Fraction, ys) -> dict[int, mpmath.mpf]:
    """The exact ``N_Z(0, sigma2)`` pmf at ``ys`` (normaliser by Poisson summation: the
    sum over ``|y| <= 40 sigma + 40`` misses less than ``2**-1000``)."""
    s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
    r = int(40 * math.sqrt(float(sigma2))) + 40
    total = mpmath.fsum(mpmath.exp(-mpmath.mpf(y * y) / (2 * s2)) for y in range(-r, r + 1))
    return {y: mpmath.exp(-mpmath.mpf(y * y) / (2 * s2)) / total for y in ys}


def _table_tv(numerators: dict[int, int], exact: dict[int, mpmath.mpf]) -> mpmath.mpf:
    """Total variation between ``numerators / 2**PRECISION`` and ``exact`` (a pmf on a
    superset of the support, carrying all but a negligible mass)."""
    scale = mpmath.mpf(2) ** cdt.PRECISION
    inside = sum(abs(mpmath.mpf(numerators.get(y, 0)) / scale - p) for y, p in exact.items())
    return inside / 2


def _table_distribution(table: cdt.Table) -> dict[int, int]:
    return {table.offset + k: n for k, n in enumerate(table.pmf_numerators())}


@pytest.fixture(autouse=True)
def _precision():
    with mpmath.workprec(MP_BITS):
        yield


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 3), Fraction(5), Fraction(375, 2),
                               Fraction(1, 10**9), Fraction(2**40 + 1, 3)])  # fmt: skip
def test_exp_neg_fixed_is_within_two_units(x):
    bits = cdt.WORK
    exact = mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator) * mpmath.mpf(2) ** bits
    assert abs(cdt.exp_neg_fixed(x, bits) - exact) <= 2


@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(2), Fraction(1000, 7)])
def test_gaussian_table_is_within_its_total_variation_bound(sigma2):
    table = cdt.gaussian_table(sigma2)
    assert table.tv_log2 < -280
    r = table.size + 50  # the exact pmf well beyond the table's range
    tv = _table_tv(_table_distribution(table), _gaussian_pmf(sigma2, range(-r, r + 1)))
    assert tv <= mpmath.mpf(2) ** table.tv_log2


@pytest.mark.parametrize("x, count", [(Fraction(1, 40), 16), (Fraction(3, 7), None),
                                      (Fraction(1, 5000), 64)])  # fmt: skip
def test_geometric_table_is_within_its_total_variation_bound(x, count):
    table = cdt._geometric_table(x, count)
    assert table.tv_log2 < -280
    rho = mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator)
    if count is None:  # P[h] = (1 - rho) rho^h, h >= 0
        exact = {h: (1 - rho) * rho**h for h in range(table.size + 400)}
    else:
        exact = {h: (1 - rho) * rho**h / (1 - rho**count) for h in range(count)}
    assert _table_tv(_table_distribution(table), exact) <= mpmath.mpf(2) ** table.tv_log2


def _plan_distribution(plan: cdt.Plan) -> dict[int, int]:
    """The exact law of ``constant + sum_j m_j k_j`` (numerators over ``2**(P * tables)``)."""
    law = {plan.constant: 1}
    for table, m in zip(plan.tables, plan.multipliers):
        step: dict[int, int] = {}
        parts = [(k * m, n) for k, n in enumerate(table.pmf_numerators()) if n]
        for y, a in law.items():
            for shift, n in parts:
                step[y + shift] = step.get(y + shift, 0) + a * n
        law = step
    return law


@pytest.mark.parametrize("sigma2", [Fraction(900), Fraction(4000), Fraction(1234567, 1000)])
def test_recursive_gaussian_plan_is_within_its_bounds(sigma2):
    """``Y = R_0 + 2 (R_1 + 2 Q)`` (radix 2): its exact law against ``N_Z(0, sigma2)``."""
    plan = cdt.gaussian_plan(sigma2, radix=2, spread=5, base_max=17)
    assert len(plan.tables) >= 2 and plan.eta_log2 < -400
    law = _plan_distribution(plan)
    r = max(abs(y) for y in law) + 50
    exact = _gaussian_pmf(sigma2, range(-r, r + 1))
    scale = mpmath.mpf(2) ** (cdt.PRECISION * len(plan.tables))
    tv = sum(abs(mpmath.mpf(law.get(y, 0)) / scale - p) for y, p in exact.items()) / 2
    eta = mpmath.mpf(2) ** plan.eta_log2
    assert tv <= mpmath.mpf(2) ** plan.tv_log2 + 2 * eta
    assert tv < mpmath.mpf(2) ** -278


def test_plan_of_the_releases_is_sound():
    """At the releases' scales: eta below 2**-450, the tables' total variation below 2**-278
    per draw (doc/privacy.md's accounting)."""
    for d in (1, 16, 4096, 10**6):
        plan = cdt.gaussian_plan(grid.gaussian_grid(1.0, 2.0, d)[2].sigma2)
        assert plan.tv_log2 < -278 and plan.eta_log2 < -450
        assert all(t.size < 2**16 - 1 for t in plan.tables)
        plan = cdt.geometric_plan(grid.laplace_grid(1.0, 2.0, d)[2])
        assert plan.tv_log2 < -278 and plan.flip


class _Bytes:
    """A stand-in for ``os.urandom`` that returns queued byte strings (sizes checked)."""

    def __init__(self, chunks):
        self.chunks = list(chunks)

    def __call__(self, n):
        chunk = self.chunks.pop(0)
        assert len(chunk) == n
        return chunk


def _draw_bytes(u: int) -> list[bytes]:
    """The bytes a one-table draw reads for the ``PRECISION``-bit uniform ``u``, stage by stage."""
    p = cdt.PRECISION
    return [
        (u >> (p - 16)).to_bytes(2, "little"),
        ((u >> (p - 48)) & 0xFFFFFFFF).to_bytes(4, "little"),
        (u & ((1 << (p - 48)) - 1)).to_bytes((p - 48) // 8, "big"),
    ]


def test_inversion_is_exact_at_every_stage(monkeypatch):
    """Draws on and next to CDF entries (ties at 16 and 48 bits) land where ``bisect`` says."""
    table = cdt.gaussian_table(Fraction(2))
    plan = cdt.Plan((table,), (1,))
    p = cdt.PRECISION
    cdf = table.cdf
    candidates = {0, (1 << p) - 1}
    candidates |= {(a + b) // 2 for a, b in zip(cdf, cdf[1:])}  # mid-entry: 16 bits decide
    for f in cdf[: len(cdf) // 2 + 3]:
        candidates |= {f, f - 1, f + 1, f | ((1 << (p - 16)) - 1), f & ~((1 << (p - 16)) - 1)}
        candidates |= {f & ~((1 << (p - 48)) - 1), (f & ~((1 << (p - 48)) - 1)) - 1}
    stages = set()
    for u in sorted(c for c in candidates if 0 <= c < 1 << p):
        fake = _Bytes(_draw_bytes(u))
        monkeypatch.setattr(cdt.os, "urandom", fake)
        assert plan.sample(1)[0] == table.offset + bisect_right(cdf, u), u
        stages.add(3 - len(fake.chunks))
    assert stages == {1, 2, 3}  # each stage decided some draw


@pytest.mark.parametrize(
    "sigma2, kwargs",
    [(Fraction(7, 2), {}), (Fraction(3 * 10**6), {}), (Fraction(2000), dict(radix=2, base_max=17))],
)
def test_discrete_gaussian_cdt_matches_the_pmf(sigma2, kwargs):
    """Chi-square on equal-probability bins of the exact pmf (one level of R or more)."""
    n = 30000
    samples = cdt.discrete_gaussian_cdt(sigma2, n, **kwargs)
    assert samples.dtype == np.int64
    r = int(12 * math.sqrt(float(sigma2))) + 2
    support = np.arange(-r, r + 1)
    pmf = np.exp(-(support.astype(float) ** 2) / (2 * float(sigma2)))
    cum = np.cumsum(pmf / pmf.sum())
    at = np.unique(np.searchsorted(cum, np.linspace(0, 1, 41)[1:-1]))  # ~40 equal bins
    expected = np.diff(np.concatenate([[0.0], cum[at], [1.0]])) * n  # (-inf, b1], (b1, b2], ...
    observed = np.bincount(np.searchsorted(support[at], samples), minlength=at.size + 1)
    assert stats.chisquare(observed, expected).pvalue > LEVEL


@pytest.mark.parametrize("t, chunk_bits", [(3, cdt.CHUNK_BITS), (50, 2), (70001, 4)])
def test_two_sided_geometric_cdt_is_floor_of_laplace(t, chunk_bits):
    n = 30000
    samples = cdt.two_sided_geometric_cdt(t, n, chunk_bits=chunk_bits)
    assert samples.dtype == np.int64
    # bins of equal probability under floor(L): quantiles of Laplace(0, t), floored
    edges = np.unique(np.floor(stats.laplace.ppf(np.linspace(0, 1, 41)[1:-1], scale=t)))
    cdf = stats.laplace.cdf(edges, scale=t)  # P[floor(L) < e] = P[L < e]
    expected = np.diff(np.concatenate([[0.0], cdf, [1.0]])) * n
    observed = np.bincount(np.searchsorted(edges, samples, side="right"), minlength=edges.size + 1)
    assert stats.chisquare(observed, expected).pvalue > LEVEL


def test_every_secure_release_draws_from_the_tables(monkeypatch):
    """Counts, histograms (both noises) and an estimator's fit go through ``Plan.sample``;
    the exact rejection samplers are not used."""
    calls = []
    sample = cdt.Plan.sample
    monkeypatch.setattr(cdt.Plan, "sample", lambda self, size: calls.append(size) or sample(
        self, size))  # fmt: skip

    def refuse(*args, **kwargs):
        raise AssertionError("the exact rejection sampler was used")

    monkeypatch.setattr(discrete, "discrete_gaussian", refuse)
    monkeypatch.setattr(discrete, "two_sided_geometric", refuse)
    secure = RandomSource(secure_mode=True)
    noisy_count(torch.tensor(3.0, dtype=torch.float64), 1.0, secure)
    noisy_histogram(torch.ones(5), secure, noise_multiplier=2.0)
    noisy_histogram(torch.ones(6), secure, laplace_scale=2.0)
    assert calls == [1, 5, 6]
    X = np.random.default_rng(0).normal(size=(200, 3))
    DPStandardScaler(bounds=(-3, 3), epsilon=1.0, secure_mode=True).fit(X)
    assert len(calls) > 3
    calls.clear()
    noisy_histogram(torch.ones(5), RandomSource(0), noise_multiplier=2.0)  # seeded: float
    assert calls == []


def test_tables_draw_from_os_urandom(monkeypatch):
    """Every bit of a secure draw comes from ``os.urandom`` (no seeded generator)."""
    fed, real = [], os.urandom

    def urandom(n):
        fed.append(n)
        return real(n)

    monkeypatch.setattr(cdt.os, "urandom", urandom)
    plan = cdt.gaussian_plan(Fraction(3 * 10**6))
    plan.sample(100)
    assert fed[0] == 2 * len(plan.tables) * 100
    with pytest.raises(ValueError, match="sigma2"):
        cdt.gaussian_plan(Fraction(0))
    with pytest.raises(ValueError, match="t must"):
        cdt.geometric_plan(0)
