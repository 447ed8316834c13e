"""``sensitive_features`` as fairlearn accepts it: formats, names, length, missing values.

The formats follow fairlearn's conventions: one attribute as a list of scalars, a
1-D array or a pandas Series; several attributes as a DataFrame, a 2-D array or
list of rows, or a dict of columns. An attribute's name is its Series name,
DataFrame column or dict key where that is a string, else
``"sensitive_feature_<i>"``. This module only reads the input; what the groups are
(categories, joint codes) is :mod:`.groups`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["read_sensitive_features"]

ARG = "sensitive_features"
MAX_LISTED = 10


# --------------------------------------------------------------------------
def default_name(index: int) -> str:
    return f"sensitive_feature_{index}"


def is_scalar(value: Any) -> bool:
    return pd.api.types.is_scalar(value) or value is None


def as_columns(sensitive_features: Any) -> tuple[list[str], list[np.ndarray], bool]:
    """Split ``sensitive_features`` into named 1-D object columns.

    Returns
    -------
    names : list of str
        One name per attribute.
    columns : list of ndarray of dtype object
        One 1-D column per attribute, all of the same length.
    explicit_names : bool
        Whether the names came from the data (DataFrame columns / dict keys)
        rather than being positional defaults.
    """
    if sensitive_features is None:
        raise ValueError(
            f"{ARG} is required: pass {ARG}=... to fit (one label per row of X, "
            "e.g. a pandas Series, or a DataFrame for several attributes)."
        )
    if isinstance(sensitive_features, (str, bytes)) or is_scalar(sensitive_features):
        raise ValueError(
            f"{ARG} must be array-like of shape (n_samples,) or "
            f"(n_samples, n_attributes), got the scalar {sensitive_features!r}. "
            "To use a column of a DataFrame X, pass X['column'] itself."
        )
    if isinstance(sensitive_features, pd.Series):
        name = sensitive_features.name
        name = name if isinstance(name, str) else default_name(0)
        return [name], [sensitive_features.to_numpy(dtype=object)], False
    if isinstance(sensitive_features, Mapping):
        try:
            sensitive_features = pd.DataFrame(dict(sensitive_features))
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"{ARG} given as a dict must map attribute names to columns of equal "
                f"length; it could not be converted to a DataFrame: {exc}"
            ) from exc
    if isinstance(sensitive_features, pd.DataFrame):
        if sensitive_features.shape[1] == 0:
            raise ValueError(f"{ARG} is a DataFrame with no columns; expected >= 1 attribute.")
        names = [
            col if isinstance(col, str) else default_name(i)
            for i, col in enumerate(sensitive_features.columns)
        ]
        if len(set(names)) != len(names):
            raise ValueError(f"{ARG} has duplicate attribute names: {names}.")
        columns = [
            sensitive_features.iloc[:, i].to_numpy(dtype=object)
            for i in range(sensitive_features.shape[1])
        ]
        return names, columns, True

    if isinstance(sensitive_features, list) and all(is_scalar(v) for v in sensitive_features):
        array = np.empty(len(sensitive_features), dtype=object)
        array[:] = sensitive_features
    else:
        try:
            array = np.asarray(sensitive_features, dtype=object)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(
                f"{ARG} could not be read as an array of shape (n_samples,) or "
                f"(n_samples, n_attributes): {exc}"
            ) from exc
        if isinstance(sensitive_features, list) and array.ndim == 1:
            raise ValueError(
                f"{ARG} given as a list must hold scalars (one attribute) or rows of "
                "equal length (several attributes); got rows of unequal length."
            )
    if array.ndim == 0:  # a set, generator, scipy.sparse matrix, ... (not a sequence of rows)
        hint = (
            " Convert it with .toarray() first." if hasattr(sensitive_features, "toarray") else ""
        )
        raise ValueError(
            f"{ARG} must be array-like of shape (n_samples,) or (n_samples, n_attributes) "
            "(a list, numpy array, pandas Series/DataFrame or dict of columns); got a "
            f"{type(sensitive_features).__name__}.{hint}"
        )
    if array.ndim == 1:
        return [default_name(0)], [array], False
    if array.ndim == 2:
        if array.shape[1] == 0:
            raise ValueError(f"{ARG} has shape {array.shape}; expected >= 1 attribute column.")
        names = [default_name(i) for i in range(array.shape[1])]
        return names, [array[:, i] for i in range(array.shape[1])], False
    raise ValueError(
        f"{ARG} must be 1-D (n_samples,) or 2-D (n_samples, n_attributes); "
        f"got an array with {array.ndim} dimensions (shape {array.shape})."
    )


def check_column(name: str, column: np.ndarray) -> None:
    """Reject missing values in one attribute column."""
    missing = np.asarray(pd.isna(column), dtype=bool)
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{ARG} contains {int(missing.sum())} missing value(s) (NaN/None/pd.NA) in "
            f"attribute {name!r} (first at row {first}). Remove those rows or encode the "
            "missing value as an explicit category, e.g. 'unknown'."
        )


def unhashable_error(name: str, exc: TypeError) -> ValueError:
    return ValueError(
        f"{ARG} values must be hashable scalars (str, int, bool, ...); attribute "
        f"{name!r} contains an unhashable value: {exc}"
    )


def unique_values(name: str, column: np.ndarray) -> np.ndarray:
    try:
        return pd.unique(column)
    except TypeError as exc:
        raise unhashable_error(name, exc) from exc


def check_n_samples(n_rows: int, n_samples: int | None, other: str = "X") -> None:
    if n_rows == 0:
        raise ValueError(f"{ARG} is empty; expected one label per row of {other}.")
    if n_samples is not None and n_rows != n_samples:
        raise ValueError(f"{ARG} has {n_rows} rows but {other} has {n_samples}")


def read_sensitive_features(
    sensitive_features: Any, n_samples: int | None, other: str = "X"
) -> tuple[list[str], list[np.ndarray], bool]:
    """Parse and validate ``sensitive_features`` (format, length, missing values)."""
    names, columns, explicit = as_columns(sensitive_features)
    check_n_samples(len(columns[0]), n_samples, other)
    for name, column in zip(names, columns, strict=True):
        check_column(name, column)
    return names, columns, explicit
