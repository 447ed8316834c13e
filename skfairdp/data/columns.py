"""The small columns of a source, read in one streaming pass and kept as compact arrays.

Labels and group labels become codes into their sorted distinct values, stored in
the smallest integer type that holds them (one byte per row for up to 127 classes
or categories: 100M rows cost 100 MB per column); a regression target is float32,
sample weights float64 (as in memory). Distinct values are found chunk by chunk
with Arrow's dictionary encoding, so a column is never held as Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["Codes", "SourceColumns", "compact_codes", "group_combinations", "read_columns"]

#: More distinct labels than this in a classification target is an error (it is
#: a continuous column, or the wrong one).
MAX_CLASSES = 10_000


@dataclass
class Codes:
    """A column as codes into its sorted distinct ``values``."""

    values: np.ndarray
    codes: np.ndarray


@dataclass
class SourceColumns:
    """What a fit reads besides the features: ``y``, the group columns, the weights."""

    y: Codes | np.ndarray
    sensitive: list[Codes]
    sample_weight: np.ndarray | None


def compact_codes(codes: np.ndarray, n_values: int) -> np.ndarray:
    """``codes`` in the smallest signed integer type holding ``0 .. n_values - 1``."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_values - 1 <= np.iinfo(dtype).max:
            return codes.astype(dtype, copy=False)
    return codes.astype(np.int64, copy=False)


class _Factorizer:
    """Codes of one column, chunk by chunk (first-seen order), sorted at the end."""

    def __init__(self, name: str, argument: str, n_rows: int, limit: int | None = None):
        self.name, self.argument, self.limit = name, argument, limit
        self.index: dict = {}
        self.codes = np.empty(n_rows, dtype=np.int32)

    def add(self, array: pa.Array, start: int) -> None:
        if array.null_count:
            row = start + int(np.argmax(array.is_null().to_numpy(zero_copy_only=False)))
            raise ValueError(
                f"{self.argument}: column {self.name!r} has missing values (null), first at "
                f"row {row}. Remove those rows or encode the missing value as a category."
            )
        encoded = array.dictionary_encode()
        local = encoded.dictionary.to_pylist()
        mapping = np.array([self.index.setdefault(v, len(self.index)) for v in local], np.int32)
        if self.limit is not None and len(self.index) > self.limit:
            raise ValueError(
                f"{self.argument}: column {self.name!r} has more than {self.limit} distinct "
                "values; expected class labels (is it a continuous column?)"
            )
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        self.codes[start : start + len(array)] = mapping[indices]

    def finish(self) -> Codes:
        seen = list(self.index)
        order = _sorted_order(seen)
        rank = np.empty(len(seen), dtype=np.int32)
        rank[order] = np.arange(len(seen), dtype=np.int32)
        values = np.asarray([seen[i] for i in order])
        if values.dtype.kind == "O" or len(values) == 0:
            values = np.array([seen[i] for i in order], dtype=object)
        return Codes(values, compact_codes(rank[self.codes], len(seen)))


def _sorted_order(values: list) -> list[int]:
    try:
        return sorted(range(len(values)), key=values.__getitem__)
    except TypeError:  # not mutually comparable: a fixed order by type, then repr
        return sorted(range(len(values)), key=lambda i: (type(values[i]).__name__, repr(values[i])))


def read_columns(source, *, classification: bool) -> SourceColumns:
    """One pass over ``source``'s target, sensitive and weight columns.

    Parameters
    ----------
    source : ParquetSource
    classification : bool
        Labels (codes into the sorted classes) or a float32 regression target.
    """
    n = source.shape[0]
    names = [source.target, *source.sensitive_features]
    if source.sample_weight is not None:
        names.append(source.sample_weight)
    target = (
        _Factorizer(source.target, "target", n, MAX_CLASSES)
        if classification
        else np.empty(n, dtype=np.float32)
    )
    groups = [_Factorizer(name, "sensitive_features", n) for name in source.sensitive_features]
    weights = None if source.sample_weight is None else np.empty(n, dtype=np.float64)
    start = 0
    for batch in source.scan(names):
        m = batch.num_rows
        if start + m > n:
            raise RuntimeError(f"{source.path!r} has more rows than its metadata says ({n})")
        if classification:
            target.add(batch.column(0), start)
        else:
            target[start : start + m] = _floats(batch.column(0), source.target, "target", start)
        for k, factorizer in enumerate(groups):
            factorizer.add(batch.column(1 + k), start)
        if weights is not None:
            weights[start : start + m] = batch.column(len(names) - 1).to_numpy(zero_copy_only=False)
        start += m
    if start != n:
        raise RuntimeError(f"{source.path!r}: read {start} rows but the metadata says {n}")
    return SourceColumns(
        y=target.finish() if classification else target,
        sensitive=[f.finish() for f in groups],
        sample_weight=weights,
    )


def _floats(array: pa.Array, name: str, argument: str, start: int) -> np.ndarray:
    if not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)):
        raise TypeError(f"{argument}: column {name!r} has type {array.type}; expected numbers")
    values = array.to_numpy(zero_copy_only=False).astype(np.float32)
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(
            f"{argument}: column {name!r} holds a NaN, null or infinite value (first at row "
            f"{start + int(np.argmax(bad))}); expected finite numbers"
        )
    return values


def group_combinations(names, columns: list[Codes]) -> tuple[pd.DataFrame, np.ndarray]:
    """The distinct combinations of the group columns, and each row's combination.

    Returns
    -------
    table : DataFrame
        One row per combination present, one column per attribute (its name).
    index : ndarray of int
        Each row's position in ``table``.
    """
    if len(columns) == 1:
        (column,) = columns
        index = column.codes
        values = [column.values]
    else:
        dims = [len(c.values) for c in columns]
        joint = np.ravel_multi_index(tuple(c.codes.astype(np.int64) for c in columns), dims)
        present, index = np.unique(joint, return_inverse=True)
        index = compact_codes(index.reshape(-1), len(present))
        del joint
        cells = np.unravel_index(present, dims)
        values = [c.values[cell] for c, cell in zip(columns, cells, strict=True)]
    table = pd.DataFrame(
        {name: pd.Series(v.tolist(), dtype=object) for name, v in zip(names, values, strict=True)}
    )
    return table, index
