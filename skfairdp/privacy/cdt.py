"""Fast floating-point-safe integer noise: inversion of cumulative distribution tables.

The exact samplers of :mod:`skfairdp.privacy.discrete` run rejection loops as rounds of
numpy calls; for a histogram that costs 6-20x the floating-point noise ``secure_mode``
drew before. Here the same two distributions are drawn by *inversion*: a table of the
CDF in ``PRECISION``-bit fixed point (Python integers, computed once per scale and
cached), one 64-bit word of ``os.urandom`` per draw and per table, and a vectorised
``searchsorted``. No floating-point operation touches a probability.

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
sum (``< L 2**-280``, ``L <= 4``). The inversion itself is exact: a 64-bit word decides
unless it equals a table entry's top word (probability ``< size * 2**-64``); then the
draw's next ``PRECISION - 64`` bits decide, on Python integers. For accounting see
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

#: bits of a word that pick its bucket in a table's guide
GUIDE_BITS = 16

#: bits of the word each draw starts with (more only where the word ties with an entry)
WORD_BITS = 32

_GUIDE_SHIFT = np.uint32(WORD_BITS - GUIDE_BITS)
_GUIDE_MIN = 64  # fewer draws: searchsorted alone
_TOP_SHIFT = PRECISION - WORD_BITS
_LOW_BYTES = _TOP_SHIFT // 8
_WORD_MAX = (1 << WORD_BITS) - 1


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


def _words(size: int) -> np.ndarray:
    """``size`` uniform 32-bit words from ``os.urandom`` (uint32, writable)."""
    return np.frombuffer(bytearray(os.urandom(4 * size)), dtype=np.uint32)


class Table:
    """Inversion sampler of a distribution on ``offset, offset + 1, ...`` given by weights.

    Parameters
    ----------
    weights : list of int
        Nonnegative fixed-point weights (``WORK`` bits), proportional to the pmf.
    offset : int
        The value of the first weight.
    error_log2 : float
        log2 of a bound on the total variation between the normalised weights and the
        exact distribution (their rounding and the mass beyond the table).
    """

    __slots__ = ("offset", "size", "tv_log2", "_top", "_previous", "_low", "_guide", "_crowded")

    def __init__(self, weights: list[int], offset: int, error_log2: float):
        sums = list(accumulate(weights))
        total = sums[-1]
        cdf = [(s << PRECISION) // total for s in sums]  # F_k, F_last = 2**PRECISION
        self.offset, self.size = int(offset), len(cdf)
        top = [min(f >> _TOP_SHIFT, _WORD_MAX) for f in cdf]
        self._top = np.array(top, np.uint32)  # top(F_k)
        self._previous = np.array([0] + top, np.uint32)  # top(F_{k-1}); 0 before F_0
        self._low = cdf  # full precision, read only when a word ties with an entry
        # guide: _guide[j] = #{k : top(F_k) <= j 2**_GUIDE_SHIFT}, k's lower bound in bucket j
        starts = np.arange(1 << GUIDE_BITS, dtype=np.uint32) << _GUIDE_SHIFT
        guide = np.searchsorted(self._top, starts, side="right")
        guide = np.append(guide, self.size)  # the last bucket ends at top(F_last) = 2**32 - 1
        crowded = np.diff(guide) > 1  # buckets holding two entries or more
        self._crowded = crowded if crowded.any() else None
        self._guide = guide[:-1].astype(np.intp)
        # F_k rounded down by < 2**-PRECISION: TV to the weights' distribution < size 2**-P
        self.tv_log2 = math.log2(2.0 ** (error_log2) + self.size * 2.0**-PRECISION)

    def pmf_numerators(self) -> list[int]:
        """The sampled distribution exactly: ``P[offset + k] = out[k] / 2**PRECISION``."""
        return [b - a for a, b in zip([0] + self._low[:-1], self._low)]

    def sample(self, size: int) -> np.ndarray:
        """``size`` draws (int64)."""
        return self.index(_words(size)) + self.offset

    def index(self, words: np.ndarray) -> np.ndarray:
        """``k`` (int64) such that the draws that the uniform ``words`` start are ``offset + k``.

        ``k = #{j : top(F_j) <= word}`` (``top``: the first ``WORD_BITS`` bits), found in
        ``word``'s bucket of the guide (its first ``GUIDE_BITS`` bits) when the bucket
        holds at most one entry, else by ``searchsorted``. Where ``top(F_{k-1}) ==
        word`` the draw's next bits decide (:meth:`_resolve`).
        """
        if words.size < _GUIDE_MIN:
            k = np.searchsorted(self._top, words, side="right")
        else:
            bucket = words >> _GUIDE_SHIFT
            k = self._guide[bucket]
            k += self._top[k] <= words  # the bucket's one entry, if any
            if self._crowded is not None:
                crowded = np.flatnonzero(self._crowded[bucket])
                if crowded.size:
                    k[crowded] = np.searchsorted(self._top, words[crowded], side="right")
        tie = self._previous[k] == words
        if tie.any():
            for i in np.flatnonzero(tie):
                k[i] = self._resolve(int(words[i]))
        return k

    def _resolve(self, word: int) -> int:
        """The index for a draw whose top word is ``word``: ``PRECISION - 64`` more bits."""
        draw = (word << _TOP_SHIFT) | int.from_bytes(os.urandom(_LOW_BYTES), "little")
        return bisect_right(self._low, draw)  # first k with draw < F_k

    def __repr__(self) -> str:
        return f"Table(offset={self.offset}, size={self.size}, tv_log2={self.tv_log2:.1f})"


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


@functools.lru_cache(maxsize=64)
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
    half = _gaussian_weights(sigma2, ymax)
    weights = half[:0:-1] + half
    # beyond ymax: 2 sum_{y > ymax} exp(-y^2 / (2 s2)) <= 2 e^{-(ymax+1)^2 / (2 s2)} / (1 - r)
    # with r = e^{-(ymax+1)/s2}; the weights' sum is >= 1 (y = 0)
    s2 = float(sigma2)
    lead = -((ymax + 1) ** 2) / (2 * s2) / math.log(2)
    tail_log2 = 1 + lead - math.log2(-math.expm1(-(ymax + 1) / s2))
    rounding_log2 = math.log2(len(weights) * 8 * (ymax + 2) ** 2) - WORK
    return Table(weights, -ymax, math.log2(2.0**tail_log2 + 2.0**rounding_log2))


def _eta(m: Fraction) -> float:
    """``2 sum_{k >= 1} exp(-2 pi^2 k^2 m^2)`` (Poisson summation's relative error), log2."""
    first = -2 * math.pi**2 * float(m) ** 2 / math.log(2)
    return 1 + first + 1e-9  # the k >= 2 terms add a relative < exp(-6 pi^2 m^2)


@functools.lru_cache(maxsize=64)
def gaussian_plan(
    sigma2: Fraction, radix: int = RADIX, spread: int = SPREAD, base_max: int = BASE_MAX
) -> tuple[tuple[Table, ...], Table, float]:
    """How :func:`discrete_gaussian_cdt` draws ``N_Z(0, sigma2)``.

    Parameters
    ----------
    sigma2 : Fraction
        ``> 0``.
    radix, spread, base_max : int
        ``Y = radix * Q + R`` with ``R ~ N_Z(0, (spread radix)^2)`` while ``sigma >
        base_max``; needs ``spread > 4`` and ``base_max^2 (spread^2 - 16) >= spread^4
        radix^2`` (then ``sigma_3 >= 4 radix``).

    Returns
    -------
    levels : tuple of Table
        The ``R`` tables, outermost first.
    base : Table
        The innermost ``Q``'s table.
    eta_log2 : float
        log2 of the sum over levels of Poisson summation's ``eta`` (``-inf`` for one
        table): the draw's pmf is within ``exp(+-2.0001 * 2**eta_log2)`` pointwise of
        ``N_Z(0, sigma2)`` up to the tables' total variation.
    """
    sigma2, base_max2 = Fraction(sigma2), base_max**2
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    r2 = (spread * radix) ** 2
    if spread <= 4 or base_max2 * (spread**2 - 16) < spread**4 * radix**2:
        raise ValueError(f"radix={radix}, spread={spread}, base_max={base_max}: sigma_3 < 4 radix")
    levels, eta = [], 0.0
    while sigma2 > base_max2:
        q2 = (sigma2 - r2) / radix**2
        m2 = q2 * r2 / sigma2  # (sigma_3 / radix)^2 = radix^2 q2 r2 / (sigma2 radix^2)
        assert m2 >= 16
        eta += 2.0 ** _eta(Fraction(math.isqrt(math.floor(m2))))
        levels.append(gaussian_table(Fraction(r2)))
        sigma2 = q2
    return tuple(levels), gaussian_table(sigma2), math.log2(eta) if eta else -math.inf


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
    levels, base, _ = gaussian_plan(s2, radix, spread, base_max)
    size = int(size)
    words = _words(size * (len(levels) + 1)).reshape(-1, size)
    y = base.index(words[-1])
    offset = base.offset
    for table, w in zip(reversed(levels), words[-2::-1]):
        y *= radix
        y += table.index(w)
        offset = offset * radix + table.offset
    y += offset
    return y


# -- floor of a Laplace variable -----------------------------------------------------------


def _geometric_table(x: Fraction, count: int | None) -> Table:
    """``P[h] ∝ exp(-h x)`` on ``h = 0..count-1`` (``None``: ``h >= 0``, tail cut)."""
    rho = exp_neg_fixed(x, WORK)
    if count is None:  # exp(-count x) <= 2**-TAIL_BITS
        count = math.ceil(Fraction(TAIL_BITS) * Fraction(math.log(2)) / x) + 2
        xf = float(x)
        tail_log2 = -count * xf / math.log(2) - math.log2(-math.expm1(-xf)) + 1
    else:
        tail_log2 = -math.inf
    f, weights = 1 << WORK, []
    for _ in range(count):
        weights.append(f)
        f = f * rho >> WORK
    # rho within 2 units; f_h within 3 (h + 1) units; the weights' sum is >= 1
    rounding_log2 = math.log2(count * 3 * (count + 1)) - WORK
    tv = 2.0**tail_log2 + 2.0**rounding_log2
    return Table(weights, 0, math.log2(tv))


@functools.lru_cache(maxsize=64)
def geometric_plan(t: int, chunk_bits: int = CHUNK_BITS) -> tuple[Table, ...]:
    """The digit tables of ``G`` (``P[G = g] ∝ exp(-g / t)``), lowest digit first.

    ``G = sum_i B^i h_i`` with ``B = 2**chunk_bits``; the ``h_i`` are independent, ``P[h_i
    = h] ∝ exp(-h B^i / t)`` on ``0..B-1`` for all but the top digit, unbounded for it.

    Parameters
    ----------
    t : int
        ``>= 1``.
    chunk_bits : int

    Returns
    -------
    tuple of Table
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
    return tuple(tables)


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
    tables = geometric_plan(int(t), chunk_bits)
    size = int(size)
    raw = bytearray(os.urandom(4 * size * len(tables) + size))
    draws = np.frombuffer(raw, np.uint32, count=size * len(tables)).reshape(-1, size)
    g = tables[-1].index(draws[-1])  # offsets are 0
    for table, w in zip(reversed(tables[:-1]), draws[-2::-1]):
        g <<= chunk_bits
        g += table.index(w)
    # -1 - G is ~G: xor with 0 (a fair byte's top bit 0) or -1 (top bit 1)
    sign = np.frombuffer(raw, np.int8, offset=4 * size * len(tables)) >> 7
    np.bitwise_xor(g, sign, out=g)
    return g
