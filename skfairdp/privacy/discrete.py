"""Exact discrete Gaussian and geometric noise from the OS CSPRNG (floating-point-safe noise).

Textbook floating-point noise (Box-Muller or inverse-CDF Laplace on float uniforms)
leaks through the low bits of the released float: which floats can come out depends
on the exact input (Mironov, CCS 2012; Jin et al., S&P 2022). Under
``secure_mode=True`` the closed-form releases of :mod:`skfairdp.privacy.mechanisms`
instead add *integer* noise to an integer statistic, drawn here with exact rational
arithmetic (no floating-point operation touches a probability) from ``os.urandom``:

- :func:`discrete_gaussian`: the discrete Gaussian ``N_Z(0, sigma^2)``,
  ``P[Y = y] ∝ exp(-y^2 / (2 sigma^2))`` on the integers, by Canonne, Kamath & Steinke
  (NeurIPS 2020, "The Discrete Gaussian for Differential Privacy"), Algorithms 1-3:
  ``Bernoulli(exp(-gamma))`` from ``Bernoulli(gamma / K)`` draws, a discrete Laplace
  proposal, and rejection.
- :func:`two_sided_geometric`: ``floor(L)`` for a continuous ``L ~ Laplace(0, t)``,
  i.e. ``G`` or ``-1 - G`` with ``P[G = g] ∝ exp(-g / t)``; the Laplace releases
  use it (see :func:`skfairdp.privacy.grid.laplace_release` for why not the discrete
  Laplace itself).

The releases of :mod:`skfairdp.privacy.grid` draw the same two distributions faster by
table inversion (:mod:`skfairdp.privacy.cdt`, within total variation ``2**-278``); the
exact samplers here are its tests' reference and the benchmark's third column.

Every draw is vectorised over the sample: each rejection loop runs over the samples
still pending, all of which are at the same step, so a loop costs a few numpy calls
whatever the sample size; a ``Bernoulli(n/m)`` is one ``uniform below m`` (32- or
64-bit words, Lemire's unbiased rejection) compared with ``n``. The variance is an
exact rational ``sigma2``; :func:`round_up_sigma2` rounds a float's square *up* to the
form the fast path needs (more noise than asked, never less). Parameters beyond the
fast path's 64-bit range fall back to :func:`discrete_gaussian_reference`, a
one-sample-at-a-time transcription of the paper's algorithm on Python integers
(also the tests' independent second implementation).
"""

from __future__ import annotations

import math
import os
import secrets
from fractions import Fraction

import numpy as np

__all__ = [
    "DyadicVariance",
    "discrete_gaussian",
    "discrete_gaussian_reference",
    "round_up_sigma2",
    "two_sided_geometric",
]

_ONE = np.uint64(1)
# Denominators of the Gaussian acceptance stay below 2**_DEN_BITS, so that D * K fits
# in 64 bits for K < 2**(64 - _DEN_BITS) (K > 2**13 has probability < 1 / 8192!).
_DEN_BITS = 50
# ... and, when the variance allows it, below 2**32, so that they are drawn from 32-bit words
_NARROW_BITS = 32
# |y| * 2**k - a is squared in int64: the fast path needs it below 2**31.
_SQUARE_LIMIT = 1 << 31


def _uniform_below(m: np.ndarray) -> np.ndarray:
    """One exact uniform draw from ``{0, ..., m_i - 1}`` per entry of ``m`` (uint64, >= 1).

    A word ``w`` of ``b`` bits (32 when every ``m_i < 2**32``, else 64) from
    ``os.urandom`` is kept when ``w >= 2**b mod m`` (then ``w mod m`` is uniform: the
    kept range holds a multiple of ``m`` values) and redrawn otherwise.
    """
    m = np.asarray(m, dtype=np.uint64).reshape(-1)
    if m.size == 0:
        return np.empty(0, dtype=np.uint64)
    if m.max() < np.uint64(1 << 32):  # 32-bit words, 32-bit arithmetic
        kind, m = np.uint32, m.astype(np.uint32)
        low = np.uint64(1 << 32) % m  # 2**32 mod m (below 2**32)
        low = low.astype(np.uint32)
    else:
        kind = np.uint64
        low = (~m + _ONE) % m  # 2**64 mod m (uint64 wraps)
    width = np.dtype(kind).itemsize
    out = np.empty(m.size, dtype=kind)
    w = np.frombuffer(os.urandom(width * m.size), dtype=kind)
    ok = w >= low
    if ok.all():
        np.remainder(w, m, out=out)
        return out.astype(np.uint64, copy=False)
    out[ok] = w[ok] % m[ok]
    todo = np.flatnonzero(~ok)
    while todo.size:
        w = np.frombuffer(os.urandom(width * todo.size), dtype=kind)
        ok = w >= low[todo]
        out[todo[ok]] = w[ok] % m[todo[ok]]
        todo = todo[~ok]
    return out.astype(np.uint64, copy=False)


def _bernoulli_exp_fraction(r: np.ndarray, d: np.ndarray, width: int = 2) -> np.ndarray:
    """Exact ``Bernoulli(exp(-r_i / d_i))`` for ``0 <= r_i <= d_i`` (CKS Algorithm 1).

    ``K = 1, 2, ...`` while ``Bernoulli(gamma / K)`` succeeds; the result is whether
    the final ``K`` is odd. The first ``width`` draws of every entry are made at once
    (a ``(n, width)`` block of ``Bernoulli(r / (d K))``); the few entries whose block
    all succeeded (probability ``gamma^width / width!``) go on one ``K`` at a time.
    """
    r = np.asarray(r, dtype=np.uint64).reshape(-1)
    d = np.asarray(d, dtype=np.uint64).reshape(-1)
    n = r.size
    if n == 0:
        return np.empty(0, dtype=bool)
    ks = np.arange(1, width + 1, dtype=np.uint64)
    block = _uniform_below((d[:, None] * ks).reshape(-1)).reshape(n, width) < r[:, None]
    stop = np.argmin(block, axis=1)  # first failure: K = stop + 1
    out = stop % 2 == 0
    todo = np.flatnonzero(block[np.arange(n), stop])  # no failure in the block
    k = width + 1
    limit = (1 << 64) // int(d.max())
    while todo.size:
        if k >= limit:  # d * K would overflow: probability below 1 / limit!
            raise RuntimeError("Bernoulli(exp(-gamma)) ran past its 64-bit range")
        go_on = _uniform_below(d[todo] * np.uint64(k)) < r[todo]
        out[todo[~go_on]] = bool(k & 1)
        todo = todo[go_on]
        k += 1
    return out


# Bernoulli(exp(-1)) continues at K with probability 1/K: the digits of one uniform
# draw below 12! in the factorial number system are independent uniforms on
# {0..1}, {0..2}, ..., {0..11} (K = 2..12), so one 32-bit word decides K up to 12.
_RADIX_TOP = 12
_FACTORIAL = math.factorial(_RADIX_TOP)


def _bernoulli_exp_minus_one(n: int) -> np.ndarray:
    """``n`` exact ``Bernoulli(exp(-1))`` draws (CKS Algorithm 1 with ``gamma = 1``)."""
    q = _uniform_below(np.full(n, _FACTORIAL, dtype=np.uint64))
    out = np.empty(n, dtype=bool)
    todo = np.arange(n)  # K = 1 always continues (Bernoulli(1/1))
    for k in range(2, _RADIX_TOP + 1):
        q, digit = np.divmod(q, np.uint64(k))
        stops = digit != 0
        out[todo[stops]] = bool(k & 1)
        todo, q = todo[~stops], q[~stops]
        if not todo.size:
            return out
    # all digits 0: probability 1/12! per entry
    k = _RADIX_TOP + 1
    while todo.size:
        go_on = _uniform_below(np.full(todo.size, k, dtype=np.uint64)) == 0
        out[todo[~go_on]] = bool(k & 1)
        todo = todo[go_on]
        k += 1
    return out


def _exp_minus_one_run(n: int, width: int = 2) -> np.ndarray:
    """Leading successes of i.i.d. ``Bernoulli(exp(-1))``: ``P[V >= v] = exp(-v)`` (int64)."""
    v = np.zeros(n, dtype=np.int64)
    live = np.arange(n)
    while live.size:
        b = _bernoulli_exp_minus_one(live.size * width).reshape(live.size, width)
        lead = np.where(b.all(axis=1), width, np.argmin(b, axis=1))
        v[live] += lead
        live = live[lead == width]
    return v


def _bernoulli_exp(m: np.ndarray, r: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Exact ``Bernoulli(exp(-(m_i + r_i / d_i)))``, integers ``m >= 0``, ``0 <= r < d``.

    ``exp(-m - f) = exp(-1)^m exp(-f)``: ``Bernoulli(exp(-f))`` and, where it
    succeeds, ``m`` successes of ``Bernoulli(exp(-1))`` in a row (CKS Algorithm 1,
    ``gamma > 1``).
    """
    out = _bernoulli_exp_fraction(r, d)
    m = np.asarray(m, dtype=np.int64).reshape(-1)
    need = np.flatnonzero(out & (m > 0))
    if need.size:
        out[need] = _exp_minus_one_run(need.size) >= m[need]
    return out


def _batch(pending: int, rate: float) -> int:
    """Candidates to draw for ``pending`` samples kept at ``rate``: usually one round does."""
    return int(pending / rate * 1.1) + 16


def _geometric(t: int, n: int) -> np.ndarray:
    """``n`` draws of ``G`` with ``P[G = g] ∝ exp(-g / t)`` on ``g >= 0`` (integer ``t >= 1``).

    CKS Algorithm 2 without the sign: ``U`` uniform on ``{0, ..., t-1}`` kept with
    probability ``exp(-U / t)``, plus ``t V`` with ``P[V >= v] = exp(-v)``. Candidates
    are drawn in bulk and the first ``n`` kept ones (in draw order, which does not
    depend on their values) are used.
    """
    kept: list[np.ndarray] = []
    have = 0
    while have < n:
        size = _batch(n - have, 0.63)  # E[exp(-U/t)] >= 1 - 1/e
        u = _uniform_below(np.full(size, t, dtype=np.uint64))
        u = u[_bernoulli_exp_fraction(u, np.full(size, t, dtype=np.uint64))][: n - have]
        kept.append(u.astype(np.int64))
        have += u.size
    u = np.concatenate(kept) if len(kept) > 1 else kept[0]
    return u + t * _exp_minus_one_run(n)


def _signs(n: int) -> np.ndarray:
    """``n`` fair coin flips (bool) from ``os.urandom``."""
    return np.unpackbits(np.frombuffer(os.urandom((n + 7) // 8), dtype=np.uint8))[:n].astype(bool)


def two_sided_geometric(t: int, size: int) -> np.ndarray:
    """``floor(L)`` for i.i.d. continuous ``L ~ Laplace(0, t)``, drawn exactly (int64).

    ``P[W = w] ∝ exp(-w / t)`` for ``w >= 0`` and ``exp(-(-1 - w) / t)`` for ``w <= -1``:
    a fair sign, then ``G`` or ``-1 - G`` with :func:`_geometric`'s ``G``. Mean ``-1/2``.

    Parameters
    ----------
    t : int
        Scale, a positive integer.
    size : int
        Number of draws.

    Returns
    -------
    ndarray of int64
    """
    t, size = int(t), int(size)
    if t < 1:
        raise ValueError(f"t must be a positive integer, got {t}")
    g = _geometric(t, size)
    return np.where(_signs(size), -1 - g, g)


class DyadicVariance:
    """A variance ``sigma2 = t * a / 2**k`` in the form the vectorised sampler uses.

    ``t = floor(sqrt(sigma2)) + 1`` is the discrete Laplace proposal's scale (CKS
    Algorithm 3), ``sigma2 / t = a / 2**k``, and the Gaussian acceptance
    ``exp(-(|y| - sigma2/t)^2 / (2 sigma2))`` is ``exp(-(|y| 2^k - a)^2 / D)`` with the
    integer ``D = 2^(k+1) t a``.

    Parameters
    ----------
    t, a, k : int
    """

    __slots__ = ("t", "a", "k", "den")

    def __init__(self, t: int, a: int, k: int):
        self.t, self.a, self.k = int(t), int(a), int(k)
        self.den = (2 << self.k) * self.t * self.a

    @property
    def sigma2(self) -> Fraction:
        """The exact variance parameter."""
        return Fraction(self.t * self.a, 1 << self.k)

    @property
    def fast(self) -> bool:
        """Whether the vectorised 64-bit path applies."""
        return self.den < (1 << _DEN_BITS)

    def __repr__(self) -> str:
        return f"DyadicVariance(t={self.t}, a={self.a}, k={self.k})"


def round_up_sigma2(sigma2) -> DyadicVariance:
    """The smallest ``t a / 2**k >= sigma2`` whose acceptance denominator fits 32 (or 50) bits.

    Parameters
    ----------
    sigma2 : float, int or Fraction
        The variance asked for, ``> 0`` (a float is read exactly, as the binary
        rational it is).

    Returns
    -------
    DyadicVariance
        Never below ``sigma2``; above it by at most ``t / 2**k``, relative at most
        ``~1 / sigma`` (``2**-14`` for the grid releases' ``sigma >= 2**14``) where a
        denominator below ``2**32`` exists, else ``~2**-23``.
    """
    s2 = Fraction(sigma2)
    if not s2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    t = math.isqrt(math.floor(s2)) + 1  # floor(sqrt(s2)) + 1 (s2 >= 0)
    # D = 2^(k+1) t a ~ 2^(2k+1) sigma2: start a little above the k where it is 2^32
    log2_s2 = s2.numerator.bit_length() - s2.denominator.bit_length()
    top = max(0, min(62, (_NARROW_BITS - 1 - log2_s2) // 2 + 2))
    for bits in (_NARROW_BITS, _DEN_BITS):  # 32-bit words if possible, else 64-bit
        for k in range(top if bits == _NARROW_BITS else 62, -1, -1):
            v = DyadicVariance(t, -((-s2.numerator << k) // (s2.denominator * t)), k)
            if v.den < (1 << bits):
                return v
    return DyadicVariance(t, -((-s2.numerator) // (s2.denominator * t)), 0)  # reference path


def discrete_gaussian(sigma2, size: int) -> np.ndarray:
    """``size`` exact i.i.d. draws of the discrete Gaussian ``N_Z(0, sigma2)`` (int64).

    CKS Algorithm 3, vectorised: ``Y`` from the discrete Laplace of scale ``t``
    (Algorithm 2: :func:`_geometric` and a sign, ``-0`` rejected), kept with
    probability ``exp(-(|Y| - sigma2/t)^2 / (2 sigma2))``; rejected entries retry.

    Parameters
    ----------
    sigma2 : DyadicVariance, float, int or Fraction
        The variance parameter (``sigma^2``, not the exact variance of the output,
        which is slightly smaller). Anything but a :class:`DyadicVariance` is first
        rounded up by :func:`round_up_sigma2`.
    size : int

    Returns
    -------
    ndarray of int64
    """
    v = sigma2 if isinstance(sigma2, DyadicVariance) else round_up_sigma2(sigma2)
    size = int(size)
    if not v.fast:
        return np.array([discrete_gaussian_reference(v.sigma2) for _ in range(size)], np.int64)
    t, a, k, den = v.t, v.a, v.k, np.uint64(v.den)
    g_max = (_SQUARE_LIMIT + a) >> k
    found: list[np.ndarray] = []
    have, rate = 0, 0.5
    while have < size:
        n = _batch(size - have, rate)
        g = _geometric(t, n)
        negative = _signs(n)
        valid = ~(negative & (g == 0))  # -0: Algorithm 2 rejects it
        # |y| 2^k - a stays below 2**31 in size (a < 2**25 on the fast path) up to g_max
        small = g <= g_max
        accept = np.zeros(n, dtype=bool)
        fast = np.flatnonzero(valid & small)
        e = np.abs(g[fast] * (1 << k) - a).astype(np.uint64)
        e2 = e * e
        accept[fast] = _bernoulli_exp(
            (e2 // den).astype(np.int64), e2 % den, np.full(fast.size, den)
        )
        for i in np.flatnonzero(valid & ~small):  # |y| beyond ~128 sigma: exact, on ints
            accept[i] = _accept_reference(int(g[i]), v.sigma2, t)
        y = np.where(negative, -g, g)[accept][: size - have]
        found.append(y)
        have += y.size
        rate = max(accept.mean(), 0.05)
    return np.concatenate(found) if len(found) > 1 else found[0]


# -- the paper's algorithms one sample at a time, on Python integers ----------------------


def _bernoulli_fraction_reference(p: Fraction) -> bool:
    return secrets.randbelow(p.denominator) < p.numerator


def _bernoulli_exp_reference(gamma: Fraction) -> bool:
    """CKS Algorithm 1: ``Bernoulli(exp(-gamma))`` for a rational ``gamma >= 0``."""
    while gamma > 1:
        if not _bernoulli_exp_reference(Fraction(1)):
            return False
        gamma -= 1
    k = 1
    while _bernoulli_fraction_reference(gamma / k):
        k += 1
    return k % 2 == 1


def _discrete_laplace_reference(t: int) -> int:
    """CKS Algorithm 2 with ``s = 1``: ``P[Y = y] ∝ exp(-|y| / t)``."""
    while True:
        u = secrets.randbelow(t)
        if not _bernoulli_exp_reference(Fraction(u, t)):
            continue
        v = 0
        while _bernoulli_exp_reference(Fraction(1)):
            v += 1
        x = u + t * v
        negative = secrets.randbits(1) == 1
        if negative and x == 0:
            continue
        return -x if negative else x


def _accept_reference(abs_y: int, sigma2: Fraction, t: int) -> bool:
    return _bernoulli_exp_reference((abs_y - sigma2 / t) ** 2 / (2 * sigma2))


def discrete_gaussian_reference(sigma2) -> int:
    """One exact draw of ``N_Z(0, sigma2)``: CKS Algorithm 3 on Python integers.

    Parameters
    ----------
    sigma2 : float, int or Fraction
        Read exactly; ``> 0``.

    Returns
    -------
    int
    """
    s2 = Fraction(sigma2)
    if not s2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    t = math.isqrt(math.floor(s2)) + 1
    while True:
        y = _discrete_laplace_reference(t)
        if _accept_reference(abs(y), s2, t):
            return y
