"""fairlearn's ``control_features``: one table cell per (control level, group).

Each row falls in exactly one (control, sensitive) cell, so the frame's single
Gaussian release of the cell table keeps its sensitivity (parallel composition):
control features cost no extra privacy. Which control levels exist is read from
the rows, as fairlearn does (like the groups without ``sensitive_values``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..fairness.groups import sorted_categories
from ..fairness.inputs import read_sensitive_features, unique_values


def encode_control(control_features: Any, n_samples: int) -> tuple[np.ndarray, pd.Index]:
    """Codes of the control levels and their index (fairlearn's ``control_feature_<i>`` names).

    Every combination of the columns' values is a level (as fairlearn); one level is fine.
    """
    try:
        names, columns, _ = read_sensitive_features(control_features, n_samples, other="y_true")
    except (ValueError, TypeError) as error:
        message = str(error).replace("sensitive_features", "control_features")
        raise type(error)(message) from error
    names = [
        name.replace("sensitive_feature_", "control_feature_", 1)
        if name.startswith("sensitive_feature_") else name
        for name in names
    ]  # fmt: skip
    codes = np.zeros(n_samples, dtype=np.int64)
    categories = []
    for column in columns:
        values = sorted_categories(unique_values("control_features", column))
        lookup = {value: k for k, value in enumerate(values)}
        codes = codes * len(values) + np.array([lookup[v] for v in column], dtype=np.int64)
        categories.append(values)
    if len(names) > 1:
        return codes, pd.MultiIndex.from_product(categories, names=names)
    return codes, pd.Index(categories[0], name=names[0])


def combine(
    control_codes: np.ndarray, control: pd.Index, group_codes: np.ndarray, groups: pd.Index
) -> tuple[np.ndarray, pd.MultiIndex, np.ndarray]:
    """Cell codes (control-major), the (control..., sensitive...) index, each cell's level."""
    n_groups = len(groups)
    cells = control_codes * n_groups + group_codes
    tuples = [
        (c if isinstance(c, tuple) else (c,)) + (g if isinstance(g, tuple) else (g,))
        for c in control
        for g in groups
    ]
    names = list(control.names) + list(groups.names)
    shared = sorted(set(control.names) & set(groups.names), key=str)
    if shared:
        raise ValueError(f"control_features and sensitive_features share the names {shared}")
    index = pd.MultiIndex.from_tuples(tuples, names=names)
    level_of_cell = np.repeat(np.arange(len(control)), n_groups)
    return cells, index, level_of_cell


def to_pandas(values: Any) -> Any:
    """A polars (or other narwhals-supported) frame or series as pandas; anything else as is.

    fairlearn 0.14+ reads such inputs through narwhals; column and series names survive.
    """
    if values is None or isinstance(values, (pd.DataFrame, pd.Series, np.ndarray, list, tuple)):
        return values
    try:
        import narwhals.stable.v1 as nw
    except ImportError:  # pragma: no cover - narwhals comes with fairlearn
        return values
    try:
        native = nw.from_native(values, allow_series=True, eager_only=True)
    except TypeError:
        return values
    return native.to_pandas()
