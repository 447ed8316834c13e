"""Fast floating-point-safe integer noise: inversion of cumulative distribution tables.

The exact samplers of :mod:`skfairdp.privacy.discrete` run rejection loops as rounds of
numpy calls; for a histogram that costs 6-20x the floating-point noise ``secure_mode``
drew before. Here the same two distributions are drawn by *inversion*: a table of the
CDF in ``PRECISION``-bit fixed point (Python integers, computed once per scale and
cached), a 16-bit word of ``os.urandom`` per draw and per table looked up among all
``2**16`` words, 32 bits more for the few draws it leaves ambiguous. No floating-point
operation touches a probability.

- :func:`discrete_gaussian_cdt`: ``N_Z(0, sigma2)``. A single table would need ``~40
  sigma`` entries (``sigma`` is ``2**14``-``2**24`` in grid units), so for ``sigma >
  BASE_MAX`` the draw is ``Y = RADIX * Q + R`` with ``R ~ N_Z(0, (SPREAD * RADIX)**2)``
  (one table shared by every scale) and ``Q ~ N_Z(0, (sigma2 - (SPREAD RADIX)**2) /
  RADIX**2)`` drawn the same way, recursively. By Poisson summation ``P[Y = y]`` is within a
  factor ``(1 + eta) / (1 - eta)`` either way of ``N_Z(0, sigma2)``'s, with ``eta = 2
  sum_k exp(-2 pi^2 k^2 m^2)``, ``m = sigma_3 / RADIX``, ``sigma_3^2 = RADIX^2 sigma_Q^2
  sigma_R^2 / sigma2`` (``m >= 4.75``, ``eta < 1e-190`` here: :func:`gaussian_plan`).
- :func:`two_sided_geometric_cdt`: ``floor(L)`` for ``L ~ Laplace(0, t)``: a fair sign,
  then ``G`` or ``-1 - G`` with ``P[G = g] ∝ exp(-g / t)``. ``G``'s base-``2**CHUNK_BITS``
  digits are *independent* (``exp(-g / t)`` factorises over them), each a table; the top
  digit is unbounded (tail cut).

What is not exact. Each table's CDF entry is rounded down to a multiple of
``2**-PRECISION`` from weights computed with ``WORK`` bits, and the table stops where the
remaining mass is below ``2**-TAIL_BITS``: a table's distribution is within total variation
``Table.tv_log2`` (``< 2**-280``) of the exact one, and a draw of ``L`` tables within the
sum (``< L 2**-280``, ``L <= 4``). The inversion itself is exact (:class:`Table`): the
first 16 bits of the uniform decide unless they equal an entry's, then 48 bits unless
they equal an entry's (probability ``< size * 2**-48``), then all ``PRECISION``, on
Python integers. For accounting see
doc/privacy.md ("Floating-point-safe noise"): ``n`` released cells add at most ``n (1 +
e^epsilon) 2**-278`` to ``delta``, not recorded.
"""

from __future__ import annotations

import functools
import math
import os
from bisect import bisect_right
from fractions import Fraction
from itertools import accumulate

import numpy as np

__all__ = [
    "Plan",
    "Table",
    "discrete_gaussian_cdt",
    "gaussian_plan",
    "gaussian_table",
    "geometric_plan",
    "two_sided_geometric_cdt",
]

#: bits of each CDF entry (fixed point); a draw is compared with them lexicographically
PRECISION = 320
#: working bits of the weights (the recurrences' rounding stays far below 2**-PRECISION)
WORK = PRECISION + 64
#: a table stops where the mass it leaves out is below 2**-TAIL_BITS (times a small factor)
TAIL_BITS = 300
#: a discrete Gaussian with sigma above BASE_MAX is drawn as RADIX * Q + R
RADIX = 64
#: R's standard deviation in units of RADIX
SPREAD = 5
#: largest sigma drawn from one table
BASE_MAX = 1024
#: bits of each digit of the geometric variable
CHUNK_BITS = 12

#: bits a draw starts with: one 16-bit word, looked up in a table of all 2**16 words
FIRST_BITS = 16
#: bits a draw has after its second stage (a 32-bit word more, where the first is ambiguous)
SECOND_BITS = 48

_SECOND_SHIFT = PRECISION - SECOND_BITS
_LOW_BYTES = _SECOND_SHIFT // 8
_AMBIGUOUS = (1 << 16) - 1  # a lookup entry: the first 16 bits do not decide


def exp_neg_fixed(x: Fraction, bits: int) -> int:
    """``exp(-x) * 2**bits`` rounded to an integer within 2 units, for a rational ``x >= 0``.

    ``exp(-x) = exp(-x / 2**k)**(2**k)`` with ``x / 2**k < 1``: a Taylor series on
    integers with ``bits + 2k + 32`` working bits, then ``k`` squarings.
    """
    x = Fraction(x)
    if x < 0:
        raise ValueError(f"x must be >= 0, got {x}")
    if x == 0:
        return 1 << bits
    k = max(0, x.numerator.bit_length() - x.denominator.bit_length() + 1)  # x / 2**k < 1
    work = bits + 2 * k + 32
    y = (x.numerator << work) // (x.denominator << k)
    total = term = 1 << work
    i = 1
    while term:
        term = (term * y >> work) // i
        total += -term if i & 1 else term
        i += 1
    for _ in range(k):
        total = total * total >> work
    return total >> (work - bits)


def _top(cdf: list[int], bits: int) -> list[int]:
    """The first ``bits`` bits of each ``F_k`` (``F_last = 2**PRECISION`` to ``2**bits - 1``)."""
    shift, most = PRECISION - bits, (1 << bits) - 1
    return [min(f >> shift, most) for f in cdf]


class Table:
    """Inversion sampler of a distribution on ``offset, offset + 1, ...`` given by weights.

    The draw is ``k = #{j : F_j <= U}`` for a uniform ``U`` in ``[0, 1)`` whose bits come
    from ``os.urandom`` as far as they are needed: its first 16 bits ``w`` decide ``k``
    unless ``w`` is the first 16 bits of ``F_{k-1}`` (a lookup over all ``2**16`` words
    says which), then its first 48 bits (a ``searchsorted``) unless they tie with
    ``F_{k-1}``'s, then all ``PRECISION`` (Python integers). ``F_j`` are multiples of
    ``2**-PRECISION``, so the result is exactly the inversion of ``U``.

    Parameters
    ----------
    weights : callable
        Returns the nonnegative fixed-point weights (``WORK`` bits, a list of int),
        proportional to the pmf. Called again for the full-precision CDF where 48 bits of
        a draw tie with an entry (probability below ``2**-32`` per draw), so that a table
        keeps only its numpy arrays (about ``10`` bytes per entry).
    offset : int
        The value of the first weight.
    error_log2 : float
        log2 of a bound on the total variation between the normalised weights and the
        exact distribution (their rounding and the mass beyond the table).
    """

    __slots__ = ("offset", "size", "tv_log2", "lookup", "top48", "_weights")

    def __init__(self, weights, offset: int, error_log2: float):
        self._weights = weights
        cdf = self.cdf
        self.offset, self.size = int(offset), len(cdf)
        if self.size >= _AMBIGUOUS:
            raise ValueError(f"a table holds fewer than {_AMBIGUOUS} entries, got {self.size}")
        self.top48 = np.array(_top(cdf, SECOND_BITS), np.uint64)
        top16 = np.array(_top(cdf, FIRST_BITS), np.uint16)
        words = np.arange(1 << FIRST_BITS, dtype=np.uint16)
        lookup = np.searchsorted(top16, words, side="right")  # #{j : top16(F_j) <= w}
        previous16 = np.concatenate([[0], top16])[lookup]  # top16(F_{k-1})
        lookup[(previous16 == words) & (lookup > 0)] = _AMBIGUOUS  # the next bits decide
        self.lookup = lookup.astype(np.uint16)
        # F_k rounded down by < 2**-PRECISION: TV to the weights' distribution < size 2**-P
        self.tv_log2 = math.log2(2.0**error_log2 + self.size * 2.0**-PRECISION)

    @property
    def cdf(self) -> list[int]:
        """``F_k = floor(2**PRECISION * (w_0 + ... + w_k) / sum(w))`` (recomputed)."""
        sums = list(accumulate(self._weights()))
        total = sums[-1]
        return [(s << PRECISION) // total for s in sums]  # F_last = 2**PRECISION

    def pmf_numerators(self) -> list[int]:
        """The sampled distribution exactly: ``P[offset + k] = out[k] / 2**PRECISION``."""
        cdf = self.cdf
        return [b - a for a, b in zip([0] + cdf[:-1], cdf)]

    def sample(self, size: int) -> np.ndarray:
        """``size`` draws (int64)."""
        return Plan((self,), (1,)).sample(size)

    def __repr__(self) -> str:
        return f"Table(offset={self.offset}, size={self.size}, tv_log2={self.tv_log2:.1f})"


class Plan:
    """``Y = constant + sum_j multipliers[j] * k_j``, ``k_j`` drawn from ``tables[j]``.

    All tables are read in one pass: their lookups side by side (one gather for every
    draw of every table), then one ``searchsorted`` over their 48-bit tops (prefixed by
    the table's number) for the draws whose 16 bits were ambiguous.

    Parameters
    ----------
    tables : sequence of Table
    multipliers : sequence of int
    flip : bool, default=False
        Replace ``Y`` by ``-1 - Y`` with probability 1/2 (a fair bit per draw).
    eta_log2 : float, default=-inf
        log2 of a pointwise relative error of the decomposition itself (not of the
        tables): :func:`gaussian_plan`.
    """

    __slots__ = ("tables", "multipliers", "constant", "flip", "tv_log2", "eta_log2", "_lookup",
                 "_top48", "_previous48", "_starts", "_shift", "_mult")  # fmt: skip

    def __init__(self, tables, multipliers, flip: bool = False, eta_log2: float = -math.inf):
        self.tables, self.multipliers = tuple(tables), tuple(int(m) for m in multipliers)
        self.eta_log2 = eta_log2
        self.constant = sum(m * t.offset for m, t in zip(self.multipliers, self.tables))
        self.flip = bool(flip)
        self.tv_log2 = math.log2(sum(2.0**t.tv_log2 for t in self.tables))
        self._lookup = np.concatenate([t.lookup for t in self.tables])
        self._shift = (np.arange(len(self.tables), dtype=np.uint32) << np.uint32(16))[:, None]
        self._top48 = np.concatenate(
            [(np.uint64(j) << np.uint64(48)) | t.top48 for j, t in enumerate(self.tables)]
        )
        self._previous48 = np.concatenate([[np.uint64(0)], self._top48])
        self._starts = np.cumsum([0] + [t.size for t in self.tables])[:-1]
        self._mult = np.array(self.multipliers, dtype=np.int64)

    def sample(self, size: int) -> np.ndarray:
        """``size`` draws (int64)."""
        n = len(self.tables)
        raw = os.urandom(2 * n * size + (size if self.flip else 0))
        words = np.frombuffer(raw, np.uint16, count=n * size).reshape(n, size)
        where = words + self._shift  # table j's word w: entry (j << 16) | w of the lookups
        k = self._lookup[where]
        ambiguous = np.flatnonzero(k == _AMBIGUOUS)
        if ambiguous.size:
            k.reshape(-1)[ambiguous] = self._refine(where.reshape(-1)[ambiguous])
        y = self._mult @ k if n > 1 else k[0].astype(np.int64) * self._mult[0]
        if self.constant:
            y += self.constant
        if self.flip:  # -1 - Y is ~Y: xor with 0 (a fair byte's top bit 0) or -1 (top bit 1)
            np.bitwise_xor(y, np.frombuffer(raw, np.int8, offset=2 * n * size) >> 7, out=y)
        return y

    def _refine(self, where: np.ndarray) -> np.ndarray:
        """Second stage: 32 more bits per draw; ``where`` is ``(j << 16) | w``."""
        more = np.frombuffer(os.urandom(4 * where.size), dtype=np.uint32)
        key = (where.astype(np.uint64) << np.uint64(32)) | more  # (j << 48) | 48 bits
        c = np.searchsorted(self._top48, key, side="right")
        table = (key >> np.uint64(48)).astype(np.intp)
        k = c - self._starts[table]
        for i in np.flatnonzero(self._previous48[c] == key):  # 48 bits tie: all of them
            low = int.from_bytes(os.urandom(_LOW_BYTES), "big")
            draw = ((int(key[i]) & ((1 << 48) - 1)) << _SECOND_SHIFT) | low
            k[i] = bisect_right(self.tables[table[i]].cdf, draw)  # #{j : F_j <= draw}
        return k

    def __repr__(self) -> str:
        return f"Plan({self.tables}, {self.multipliers}, flip={self.flip})"


# -- the discrete Gaussian -----------------------------------------------------------------


def _gaussian_weights(sigma2: Fraction, ymax: int) -> list[int]:
    """``exp(-y^2 / (2 sigma2)) * 2**WORK`` for ``y = 0..ymax`` (error < 4 (y+1)^2 units).

    ``f_{y+1} = f_y c_y`` with ``c_y = exp(-(2y + 1) / (2 sigma2)) = a b^y``.
    """
    a = exp_neg_fixed(1 / (2 * sigma2), WORK)
    b = exp_neg_fixed(1 / sigma2, WORK)
    f, c, out = 1 << WORK, a, [1 << WORK]
    for _ in range(ymax):
        f = f * c >> WORK
        c = c * b >> WORK
        out.append(f)
    return out


@functools.lru_cache(maxsize=32)
def gaussian_table(sigma2: Fraction) -> Table:
    """One table of ``N_Z(0, sigma2)`` on ``-ymax..ymax``, ``ymax ~ 20.4 sigma``.

    Parameters
    ----------
    sigma2 : Fraction
        ``> 0``.

    Returns
    -------
    Table
    """
    sigma2 = Fraction(sigma2)
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    # exp(-ymax^2 / (2 sigma2)) <= 2**-TAIL_BITS
    ymax = math.isqrt(math.ceil(2 * sigma2 * TAIL_BITS * Fraction(math.log(2)))) + 2
    size = 2 * ymax + 1
    # beyond ymax: 2 sum_{y > ymax} exp(-y^2 / (2 s2)) <= 2 e^{-(ymax+1)^2 / (2 s2)} / (1 - r)
    # with r = e^{-(ymax+1)/s2}; the weights' sum is >= 1 (y = 0)
    s2 = float(sigma2)
    lead = -((ymax + 1) ** 2) / (2 * s2) / math.log(2)
    tail_log2 = 1 + lead - math.log2(-math.expm1(-(ymax + 1) / s2))
    rounding_log2 = math.log2(size * 8 * (ymax + 2) ** 2) - WORK
    weights = functools.partial(_symmetric, _gaussian_weights, sigma2, ymax)
    return Table(weights, -ymax, math.log2(2.0**tail_log2 + 2.0**rounding_log2))


def _symmetric(half, *args) -> list[int]:
    """``half(*args)`` (weights of ``0..ymax``) mirrored onto ``-ymax..ymax``."""
    weights = half(*args)
    return weights[:0:-1] + weights


def _eta(m: Fraction) -> float:
    """``2 sum_{k >= 1} exp(-2 pi^2 k^2 m^2)`` (Poisson summation's relative error), log2."""
    first = -2 * math.pi**2 * float(m) ** 2 / math.log(2)
    return 1 + first + 1e-9  # the k >= 2 terms add a relative < exp(-6 pi^2 m^2)


@functools.lru_cache(maxsize=32)
def gaussian_plan(
    sigma2: Fraction, radix: int = RADIX, spread: int = SPREAD, base_max: int = BASE_MAX
) -> Plan:
    """How :func:`discrete_gaussian_cdt` draws ``N_Z(0, sigma2)``.

    ``Y = R_0 + radix (R_1 + radix (... + radix Q))``: while ``sigma > base_max``, ``R ~
    N_Z(0, (spread radix)^2)`` and the rest ``Q`` has variance ``(sigma2 - (spread
    radix)^2) / radix^2``. At each level ``P[Y = y] ∝ exp(-y^2 / (2 sigma2)) theta(y)``
    with ``theta(y) = sum_q exp(-(radix q - c_y)^2 / (2 sigma_3^2))`` (completing the
    square), ``sigma_3^2 = radix^2 sigma_Q^2 sigma_R^2 / sigma2``, and by Poisson
    summation ``theta(y) = sqrt(2 pi) (sigma_3 / radix) (1 +- eta)``, ``eta = 2 sum_{k>=1}
    exp(-2 pi^2 k^2 m^2)``, ``m = sigma_3 / radix``.

    Parameters
    ----------
    sigma2 : Fraction
        ``> 0``.
    radix, spread, base_max : int
        Needs ``spread > 4`` and ``base_max^2 (spread^2 - 16) >= spread^4 radix^2``
        (then ``m >= 4`` at every level).

    Returns
    -------
    Plan
        Its ``eta_log2`` is log2 of the sum of the levels' ``eta`` (``-inf`` for one
        table): the pmf of ``Y`` drawn from the exact tables is within a factor
        ``(1 + eta) / (1 - eta)`` either way of ``N_Z(0, sigma2)``'s, pointwise, with
        ``eta = 2**eta_log2``; its ``tv_log2`` bounds the tables' total variation.
    """
    sigma2, base_max2 = Fraction(sigma2), base_max**2
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    r2 = (spread * radix) ** 2
    if spread <= 4 or base_max2 * (spread**2 - 16) < spread**4 * radix**2:
        raise ValueError(f"radix={radix}, spread={spread}, base_max={base_max}: sigma_3 < 4 radix")
    tables, multipliers, eta, scale = [], [], 0.0, 1
    while sigma2 > base_max2:
        q2 = (sigma2 - r2) / radix**2
        m2 = q2 * r2 / sigma2  # (sigma_3 / radix)^2 = radix^2 q2 r2 / (sigma2 radix^2)
        assert m2 >= 16
        eta += 2.0 ** _eta(Fraction(math.isqrt(math.floor(m2))))
        tables.append(gaussian_table(Fraction(r2)))
        multipliers.append(scale)
        sigma2, scale = q2, scale * radix
    tables.append(gaussian_table(sigma2))
    multipliers.append(scale)
    return Plan(tables, multipliers, eta_log2=math.log2(eta) if eta else -math.inf)


def discrete_gaussian_cdt(
    sigma2, size: int, *, radix: int = RADIX, spread: int = SPREAD, base_max: int = BASE_MAX
) -> np.ndarray:
    """``size`` draws of ``N_Z(0, sigma2)`` (int64) by table inversion (module docstring).

    Parameters
    ----------
    sigma2 : float, int, Fraction or DyadicVariance
        The variance parameter, read exactly; ``> 0``.
    size : int
    radix, spread, base_max : int
        The decomposition (:func:`gaussian_plan`); the defaults are the releases'.

    Returns
    -------
    ndarray of int64
    """
    s2 = sigma2.sigma2 if hasattr(sigma2, "sigma2") else Fraction(sigma2)
    return gaussian_plan(s2, radix, spread, base_max).sample(int(size))


# -- floor of a Laplace variable -----------------------------------------------------------


def _geometric_table(x: Fraction, count: int | None) -> Table:
    """``P[h] ∝ exp(-h x)`` on ``h = 0..count-1`` (``None``: ``h >= 0``, tail cut)."""
    if count is None:  # exp(-count x) <= 2**-TAIL_BITS
        count = math.ceil(Fraction(TAIL_BITS) * Fraction(math.log(2)) / x) + 2
        xf = float(x)
        tail_log2 = -count * xf / math.log(2) - math.log2(-math.expm1(-xf)) + 1
    else:
        tail_log2 = -math.inf
    # rho within 2 units; f_h within 3 (h + 1) units; the weights' sum is >= 1
    rounding_log2 = math.log2(count * 3 * (count + 1)) - WORK
    tv = 2.0**tail_log2 + 2.0**rounding_log2
    return Table(functools.partial(_geometric_weights, x, count), 0, math.log2(tv))


def _geometric_weights(x: Fraction, count: int) -> list[int]:
    """``exp(-h x) * 2**WORK`` for ``h = 0..count-1`` (error < 3 (h + 1) units)."""
    rho = exp_neg_fixed(x, WORK)
    f, weights = 1 << WORK, []
    for _ in range(count):
        weights.append(f)
        f = f * rho >> WORK
    return weights


@functools.lru_cache(maxsize=32)
def geometric_plan(t: int, chunk_bits: int = CHUNK_BITS) -> Plan:
    """How :func:`two_sided_geometric_cdt` draws ``floor(L)``, ``L ~ Laplace(0, t)``.

    ``G = sum_i B^i h_i`` with ``B = 2**chunk_bits``; the digits ``h_i`` are independent,
    ``P[h_i = h] ∝ exp(-h B^i / t)`` on ``0..B-1`` for all but the top digit, unbounded
    for it (``P[G = g] ∝ exp(-g / t)`` factorises over the digits). Then ``G`` or ``-1 -
    G`` with probability 1/2 each.

    Parameters
    ----------
    t : int
        ``>= 1``.
    chunk_bits : int

    Returns
    -------
    Plan
    """
    t = int(t)
    if t < 1:
        raise ValueError(f"t must be a positive integer, got {t}")
    radix = 1 << chunk_bits
    limit = TAIL_BITS * math.log(2) * t  # G beyond: mass < 2**-TAIL_BITS
    tables, i = [], 0
    while radix ** (i + 1) < limit:
        tables.append(_geometric_table(Fraction(radix**i, t), radix))
        i += 1
    tables.append(_geometric_table(Fraction(radix**i, t), None))
    return Plan(tables, [radix**j for j in range(len(tables))], flip=True)


def two_sided_geometric_cdt(t: int, size: int, *, chunk_bits: int = CHUNK_BITS) -> np.ndarray:
    """``floor(L)`` for i.i.d. ``L ~ Laplace(0, t)`` (int64) by table inversion.

    Parameters
    ----------
    t : int
        Scale, a positive integer.
    size : int
    chunk_bits : int
        Bits of each digit (:func:`geometric_plan`); the default is the releases'.

    Returns
    -------
    ndarray of int64
    """
    return geometric_plan(int(t), chunk_bits).sample(int(size))
