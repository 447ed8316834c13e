"""Per-feature bounds as users write them, read one way or refused with the accepted shapes.

Every transformer that takes public per-feature bounds (:class:`DPStandardScaler`,
:class:`DPSimpleImputer`) reads them here, in one of three forms:

- ``(lower, upper)``: each a scalar (every column) or an array with one entry per column;
- a list of one ``(lower, upper)`` pair per column, in column order;
- a dict ``{column: (lower, upper)}`` with exactly the columns of ``X``: their names for
  a DataFrame, their positions ``0 .. d-1`` for an array.

With two columns a pair of pairs fits both sequence forms: ``[(18, 90), (20000, 200000)]``
is one pair per column, or lower = (18, 90) and upper = (20000, 200000). Unless the two
readings coincide, that is an error which spells out both as dicts, whichever of them is
valid bounds: a pair typed the wrong way round must not turn into the other reading.
"""

from __future__ import annotations

import numbers
import reprlib
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["parse_bounds"]

_SHOWN_COLUMNS = 8


def parse_bounds(
    bounds, n_features: int, feature_names=None, *, name: str = "bounds"
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(lower, upper)`` arrays of shape ``(n_features,)`` that ``bounds`` declares.

    Parameters
    ----------
    bounds : tuple, list or dict
        ``(lower, upper)`` with scalars or arrays of length ``n_features``; a list of
        ``n_features`` ``(lower, upper)`` pairs; or a dict ``{column: (lower, upper)}``
        keyed by the names in ``feature_names`` (by position when there are none).
    n_features : int
        Number of columns of ``X``.
    feature_names : array-like of str, optional
        ``X``'s column names (``feature_names_in_``), if it has any.
    name : str, default="bounds"
        The parameter's name, for the error messages.

    Returns
    -------
    lower, upper : ndarray of float64, shape (n_features,)
        Finite, with ``lower < upper`` in every column.

    Raises
    ------
    ValueError
        If ``bounds`` fits none of the forms, has another number of columns than ``X``,
        is ambiguous, or declares a non-finite bound or a lower bound not below its upper;
        the message lists the accepted forms with ``X``'s columns.
    """
    columns = _Columns(n_features, feature_names, name)
    if isinstance(bounds, Mapping):
        lower, upper = _from_dict(bounds, columns)
        columns.check(lower, upper, bounds)
        return lower, upper
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (Sequence, np.ndarray)):
        raise ValueError(f"{name} must be a tuple, list or dict, got {_short(bounds)}. {columns}")
    items = list(bounds)
    as_lower_upper, why_not_lower_upper = _lower_upper(items, n_features)
    as_pairs, why_not_pairs = _pairs(items, n_features)
    if as_lower_upper is None and as_pairs is None:
        reasons = [why_not_lower_upper if len(items) == 2 else None, why_not_pairs]
        why = "; ".join(r for r in reasons if r) or why_not_lower_upper
        raise ValueError(f"{name}={_short(bounds)}: {why}. {columns}")
    if as_lower_upper is None or as_pairs is None:
        lower, upper = as_lower_upper if as_pairs is None else as_pairs
        columns.check(lower, upper, bounds)
        return lower, upper
    return _resolve(as_lower_upper, as_pairs, columns, bounds)


class _Columns:
    """``X``'s columns as the messages name them, and the check of a reading."""

    def __init__(self, n_features: int, feature_names, name: str) -> None:
        self.n, self.name = n_features, name
        self.named = feature_names is not None
        self.keys = list(feature_names) if self.named else list(range(n_features))

    def label(self, j: int) -> str:
        return repr(self.keys[j]) if self.named else f"{j}"

    def as_dict(self, lower, upper) -> str:
        return "{" + ", ".join(
            f"{self.keys[j]!r}: ({_num(lower[j])}, {_num(upper[j])})" for j in range(self.n)
        ) + "}"  # fmt: skip

    def __str__(self) -> str:
        shown = ", ".join(repr(k) for k in self.keys[:_SHOWN_COLUMNS])
        shown += ", ..." if self.n > _SHOWN_COLUMNS else ""
        kind = "named" if self.named else "unnamed (key a dict by position)"
        return (
            f"X has {self.n} {kind} column{'s' if self.n != 1 else ''} ({shown}); {self.name} "
            f"accepts (lower, upper) with scalars or arrays of length {self.n}, a list of "
            f"{self.n} (lower, upper) pairs (one per column, in order), or a dict "
            "{column: (lower, upper)} with exactly these columns"
        )

    def problem(self, lower: np.ndarray, upper: np.ndarray) -> str | None:
        for j in range(self.n):
            if not (np.isfinite(lower[j]) and np.isfinite(upper[j])):
                return f"bounds must be finite; column {self.label(j)} has ({lower[j]}, {upper[j]})"
            if not lower[j] < upper[j]:
                return (
                    f"every upper bound must be above its lower bound; column {self.label(j)} "
                    f"has lower {_num(lower[j])}, upper {_num(upper[j])}"
                )
        return None

    def check(self, lower: np.ndarray, upper: np.ndarray, bounds) -> None:
        problem = self.problem(lower, upper)
        if problem is not None:
            raise ValueError(f"{self.name}={_short(bounds)}: {problem}. {self}")


def _scalar(value) -> float | None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        return None
    return float(value)


def _vector(item) -> np.ndarray | None:
    """``item`` as a 1-D float array (a scalar gives length 1), or None if it is not one."""
    value = _scalar(item)
    if value is not None:
        return np.array([value])
    if isinstance(item, (str, bytes, Mapping)) or not isinstance(item, (Sequence, np.ndarray)):
        return None
    values = [_scalar(v) for v in item]
    if any(v is None for v in values) or np.ndim(item) != 1:
        return None
    return np.array(values, dtype=np.float64)


def _lower_upper(items: list, n: int):
    """Reading as ``(lower, upper)``: the arrays, or None and why not."""
    if len(items) != 2:
        return None, f"(lower, upper) has 2 entries, not {len(items)}"
    parts = []
    for what, item in zip(("lower", "upper"), items):
        vector = _vector(item)
        if vector is None:
            return None, f"{what} must be a number or a 1-D array of numbers"
        if len(vector) not in (1, n):
            return None, (
                f"(lower, upper) gives {len(vector)} {what} bounds, but X has {n} "
                f"column{'s' if n != 1 else ''}"
            )
        parts.append(np.broadcast_to(vector, (n,)).copy())
    return tuple(parts), None


def _pairs(items: list, n: int):
    """Reading as one ``(lower, upper)`` pair per column: the arrays, or None and why not."""
    pairs = [_vector(item) for item in items]
    if not items or any(p is None or len(p) != 2 for p in pairs):
        return None, None
    if len(items) != n:
        return None, (
            f"{len(items)} (lower, upper) pairs, but X has {n} column{'s' if n != 1 else ''}"
        )
    table = np.array(pairs)
    return (table[:, 0].copy(), table[:, 1].copy()), None


def _resolve(as_lower_upper, as_pairs, columns: _Columns, bounds):
    """Two columns, a pair of pairs: the readings must coincide, else it is an error."""
    if all(np.array_equal(a, b) for a, b in zip(as_lower_upper, as_pairs)):
        columns.check(*as_pairs, bounds)
        return as_pairs

    def shown(reading) -> str:
        valid = columns.problem(*reading) is None
        return columns.as_dict(*reading) + ("" if valid else " (not valid bounds)")

    raise ValueError(
        f"{columns.name}={_short(bounds)} is ambiguous with {columns.n} columns: a pair of "
        f"pairs reads as one (lower, upper) pair per column, {shown(as_pairs)}, or as "
        f"(lower, upper), {shown(as_lower_upper)}. Pass the dict you mean"
        f"{'' if columns.named else ' (keys: column positions)'}. {columns}"
    )


def _from_dict(bounds: Mapping, columns: _Columns) -> tuple[np.ndarray, np.ndarray]:
    name = columns.name
    keys = list(bounds)
    if not columns.named and any(isinstance(k, str) for k in keys):
        raise ValueError(
            f"{name} is a dict keyed by column name, but X has no column names (an array, "
            f"not a DataFrame): key it by column position 0..{columns.n - 1}, or fit on a "
            "DataFrame (in a Pipeline whose earlier step returns an array, call "
            f'.set_output(transform="pandas") on the pipeline). {columns}'
        )
    wanted = columns.keys
    missing = [k for k in wanted if k not in bounds]
    extra = [k for k in keys if k not in wanted]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no bounds for column{'s' if len(missing) > 1 else ''} {missing}")
        if extra:
            parts.append(f"{'keys' if len(extra) > 1 else 'key'} {extra} not among X's columns")
        raise ValueError(f"{name}: {'; '.join(parts)}. {columns}")
    lower, upper = np.empty(columns.n), np.empty(columns.n)
    for j, key in enumerate(wanted):
        pair = _vector(bounds[key])
        if pair is None or len(pair) != 2:
            raise ValueError(
                f"{name}[{key!r}] must be a (lower, upper) pair of numbers, got "
                f"{_short(bounds[key])}. {columns}"
            )
        lower[j], upper[j] = pair
    return lower, upper


def _num(value: float) -> str:
    return f"{value:g}"


def _short(value) -> str:
    short = reprlib.Repr()
    short.maxlist = short.maxtuple = short.maxdict = _SHOWN_COLUMNS
    short.maxother = short.maxstring = 60
    return short.repr(value)
