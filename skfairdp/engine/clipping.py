"""Flat L2 clipping of per-sample vectors, bounded whatever the values.

A per-sample contribution must stay within its clip norm for *every* input,
including rows whose float32 norm overflows (a feature of 2e19 is a valid
float32) and rows whose gradient is not finite at all. Two rules make that so:

* norms are computed in float64, where no float32 row can overflow; and
* a row with a non-finite entry is replaced by zeros before anything else
  (a data-independent substitute: its contribution is 0, within any bound).

Rows are kept as a power-of-two exponent times a row of norm below 1, so that
the clip factor ``C / ||g||`` of a huge row is folded into a moderate weight
instead of an underflowing one (scaling by ``2^k`` is exact in floating point).

A batch whose float32 norms are all finite and below :data:`TAME_NORM` takes the
plain float32 arithmetic (same numbers, fewer kernels); the choice changes how a
sum is computed, not what it is. One reduction and one host read decide it
(:func:`tame`): a row with a NaN or infinite entry has a non-finite norm, which
fails the test, so the same check also routes non-finite rows to the path that
zeroes them. On the tame path the clip factors stay float32 too (see
:func:`clipped_total`); float64 norms are only formed when asked for.
"""

from __future__ import annotations

import torch

# Float32 row norms below this (2^64) leave clip factors C / norm far from float32's
# underflow for any C > 1e-19, and squared norms far from overflow.
TAME_NORM = 2.0**64
# Clip norms for which float32 clip factors C / max(norm, C) of tame norms are normal
# float32 numbers (C / 2^64 >= 2^-126) and C itself is a float32 well below overflow.
_FLOAT32_CLIP_RANGE = (2.0**-62, TAME_NORM)


def tame(norms: torch.Tensor) -> bool:
    """Whether float32 ``norms`` are all finite and below :data:`TAME_NORM`.

    One reduction and one host read: the maximum of norms with a NaN is NaN, and
    ``NaN < TAME_NORM`` is false, as is ``inf < TAME_NORM``.
    """
    return norms.numel() == 0 or norms.max().item() < TAME_NORM


def clipped_sum(
    per_sample, max_norm: float, weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of per-sample rows, each first scaled to L2 norm at most ``max_norm`` (then weighted).

    Parameters
    ----------
    per_sample : Tensor of shape (B, P), or per-sample gradients
        One flattened vector per sample (all parameters together), or an object
        with ``norms()`` and ``weighted_sum(weights)`` (see
        :mod:`skfairdp.engine.per_sample`). Rows with a non-finite entry count
        as zero rows.
    max_norm : float
        Clipping threshold ``C``; the sum's add/remove sensitivity is ``C``.
    weights : Tensor of shape (B,), optional
        Non-negative sample weights applied *after* clipping: row ``i`` contributes
        ``w_i min(1, C / ||g_i||) g_i``, of norm at most ``w_i C``; with every
        ``w_i <= w_max`` the sensitivity is ``w_max C``.

    Returns
    -------
    total : Tensor of shape (P,)
    norms : Tensor of shape (B,)
        The unclipped norms (0 for a non-finite row), for diagnostics.
    """
    if isinstance(per_sample, torch.Tensor):
        per_sample = ScaledRows(per_sample)
    return clipped_total(per_sample, max_norm, weights), per_sample.norms()


def clipped_total(per_sample, max_norm: float, weights: torch.Tensor | None = None) -> torch.Tensor:
    """The ``total`` of :func:`clipped_sum` alone (what a private step needs).

    When ``per_sample`` reports float32 norms from its tame check (``tame_norms()``,
    see :class:`ScaledRows`) and there are no sample weights, the clip factors are
    computed from them in float32: every such norm is finite and below
    :data:`TAME_NORM`, so the factors are normal float32 numbers, and for a ``C``
    that float32 represents they are exactly the float64 factors rounded to float32
    (what the sum used before). Otherwise (huge or non-finite rows, objects without
    ``tame_norms``, sample weights, a ``C`` outside float32's comfortable range)
    the factors come from the float64 ``norms()``.
    """
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm!r}")
    if isinstance(per_sample, torch.Tensor):
        per_sample = ScaledRows(per_sample)
    if type(per_sample) is UnitRows and 1.0 <= max_norm < float("inf"):
        return per_sample.unclipped_total(weights)  # every factor is exactly 1 (see there)
    norms = None
    if weights is None and _FLOAT32_CLIP_RANGE[0] <= max_norm <= _FLOAT32_CLIP_RANGE[1]:
        tame_norms = getattr(per_sample, "tame_norms", None)
        norms = tame_norms() if tame_norms is not None else None
    if norms is None:
        norms = per_sample.norms()
    factors = clip_factors(norms, max_norm)
    if weights is not None:
        factors = factors * weights.to(factors.dtype)
    return per_sample.weighted_sum(factors)


def clip_factors(norms: torch.Tensor, max_norm: float) -> torch.Tensor:
    """``min(1, C / norm)`` per sample (1 for a zero norm, 0 for an infinite one).

    One correctly rounded division in the norms' dtype: for float32 norms and a
    ``C`` that float32 represents, the same numbers as dividing in float64 and
    rounding to float32 (the double rounding of a quotient is innocuous).
    """
    return torch.div(max_norm, norms.clamp(min=max_norm))


def scaled_row_norms(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float64 row norms, the rows' power-of-two exponents and the non-finite mask.

    Returns ``(norms, exponent, bad)``: ``norms`` (float64, 0 where ``bad``),
    ``exponent`` (int, ``>= 0``) such that ``rows * 2^-exponent`` has norm
    below 1 (or is unchanged when the norm already is), and ``bad`` marking rows
    with a non-finite entry or a norm that overflows float64.
    """
    norms = torch.linalg.vector_norm(rows, dim=1, dtype=torch.float64)
    return split_norms(norms)


def split_norms(norms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(norms, exponent, bad)`` of float64 norms; see :func:`scaled_row_norms`."""
    bad = ~torch.isfinite(norms)
    norms = norms.masked_fill(bad, 0.0)
    exponent = torch.frexp(norms).exponent.clamp_(min=0)
    return norms, exponent, bad


def scale_rows(rows: torch.Tensor, exponent: torch.Tensor, bad: torch.Tensor) -> torch.Tensor:
    """``rows * 2^-exponent`` with ``bad`` rows set to zero (exact, no rounding)."""
    shape = (-1,) + (1,) * (rows.dim() - 1)
    scaled = torch.ldexp(rows, -exponent.view(shape).to(rows.dtype))
    return scaled.masked_fill(bad.view(shape), 0.0)


def scaled_weights(weights: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    """Per-row weights for scaled rows: ``weights * 2^exponent``, in float64."""
    return torch.ldexp(weights.double(), exponent.double())


def to_finite(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Cast to ``dtype``, saturating at its largest finite value instead of overflowing.

    Used on per-row factors whose product with a scaled row is within the clip norm:
    a factor too large for ``dtype`` only multiplies a row that is (numerically) zero,
    so saturating it can only shrink that row's contribution, never make it NaN.
    """
    big = torch.finfo(dtype).max
    return values.clamp(min=-big, max=big).to(dtype)


class ScaledRows:
    """Per-sample rows ``(B, P)`` kept as ``2^k_i`` times a row of norm below 1.

    Non-finite rows are zeroed at construction. Implements the ``norms()`` /
    ``weighted_sum(weights)`` / ``dense()`` protocol of :func:`clipped_sum`;
    ``norms()`` are float64 and ``weighted_sum`` accepts float32 or float64
    weights, so ``||weights_i * row_i|| <= weights_i * norms_i`` holds for rows
    up to float32's maximum without overflow or underflow. ``tame_norms()`` is the
    float32 norms when the rows passed the :func:`tame` check (kept as they are),
    else None.
    """

    def __init__(self, rows: torch.Tensor):
        norms = torch.linalg.vector_norm(rows, dim=1)
        if rows.dtype == torch.float32 and tame(norms):
            self._tame, self._norms, self.exponent, self.scaled = norms, None, None, rows
            return
        self._tame = None
        self._norms, self.exponent, bad = scaled_row_norms(rows)
        self.scaled = scale_rows(rows, self.exponent, bad)

    def tame_norms(self) -> torch.Tensor | None:
        return self._tame

    def norms(self) -> torch.Tensor:
        if self._norms is None:
            self._norms = self._tame.double()
        return self._norms

    def weighted_sum(self, weights: torch.Tensor) -> torch.Tensor:
        if self.exponent is None:
            return weights.to(self.scaled.dtype) @ self.scaled
        factors = to_finite(scaled_weights(weights, self.exponent), self.scaled.dtype)
        return factors @ self.scaled

    def dense(self) -> torch.Tensor:
        """The rows, non-finite ones zeroed (entries may be as large as float32 allows)."""
        if self.exponent is None:
            return self.scaled
        exponent = self.exponent.view(-1, 1).double()
        return torch.ldexp(self.scaled.double(), exponent).to(self.scaled.dtype)


class UnitRows:
    """Per-sample rows ``(B, P)`` that are each a unit vector or zero, kept as indices.

    Row ``i`` is ``e_{column_i}`` where ``active_i`` and zero elsewhere: one entry 1 or
    none, so its L2 norm is exactly 1 or 0 by construction (no value of the data can
    make it larger), and :func:`clipped_total` clips it as it would the dense rows,
    from these exact norms. The weighted sum is an ``index_add`` (a histogram) instead
    of a product with a mostly-zero matrix: the same sums (unit weights give exact
    integer counts either way). Implements ``norms()`` / ``tame_norms()`` /
    ``weighted_sum(weights)`` / ``dense()`` of :func:`clipped_sum`.

    Parameters
    ----------
    column : Tensor of shape (B,), int64
        The column of each row's 1, in ``[0, n_columns)``.
    active : Tensor of shape (B,), bool
        Which rows are unit vectors (the others are zero).
    n_columns : int
        ``P``.
    """

    def __init__(self, column: torch.Tensor, active: torch.Tensor, n_columns: int):
        if column.dtype not in (torch.int64, torch.int32) or active.dtype != torch.bool:
            raise TypeError("UnitRows needs integer columns and a boolean active mask")
        self.column = column
        self.active = active
        self.n_columns = int(n_columns)
        self._norms = active.to(torch.float32)  # exactly 1.0 or 0.0

    def __len__(self) -> int:
        return self.column.shape[0]

    def tame_norms(self) -> torch.Tensor:
        """The exact norms (1 or 0) in float32: always finite and below :data:`TAME_NORM`."""
        return self._norms

    def norms(self) -> torch.Tensor:
        return self._norms.double()

    def weighted_sum(self, weights: torch.Tensor) -> torch.Tensor:
        """``sum_i weights_i row_i``: ``weights_i`` added at ``column_i`` of active rows."""
        values = self._norms * weights.to(torch.float32)
        total = values.new_zeros(self.n_columns)
        return total.index_add_(0, self.column, values)

    def unclipped_total(self, weights: torch.Tensor | None = None) -> torch.Tensor:
        """:func:`clipped_total` of these rows at any finite clip ``C >= 1``, in fewer kernels.

        Every norm is 0 or 1, so every clip factor ``C / max(norm, C)`` is ``C / C``,
        exactly 1 in float32 and float64 alike, and ``1 * weight`` is the weight: the
        clipped sum is the weighted sum itself, the same numbers (no clip, no rounding,
        skipped). Clips below 1 do clip, and take :func:`clipped_total`'s general path.
        """
        if weights is None:
            return self._norms.new_zeros(self.n_columns).index_add_(0, self.column, self._norms)
        return self.weighted_sum(weights)

    def dense(self) -> torch.Tensor:
        """The ``(B, P)`` rows."""
        rows = self._norms.new_zeros((len(self), self.n_columns))
        return rows.scatter_(1, self.column.unsqueeze(1), self._norms.unsqueeze(1))
