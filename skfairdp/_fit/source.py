"""A data source as the ``X`` of a fit: what the template reads from it, and its checks.

The source names its target, group and weight columns, so ``y``,
``sensitive_features`` and ``sample_weight`` must not be passed beside it. They
are read in one streaming pass into compact arrays; the groups are encoded from
their distinct combinations (a few rows), then mapped to the rows, so the
category map is the one the same columns in memory would give.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import is_regressor
from sklearn.utils.multiclass import check_classification_targets

__all__ = ["SourceGroups", "check_source_features", "read_source"]


@dataclass
class SourceGroups:
    """The group columns of a source: their distinct combinations and each row's."""

    table: pd.DataFrame
    index: np.ndarray

    def __len__(self) -> int:
        return len(self.index)


def read_source(estimator, source, y, sensitive_features, sample_weight):
    """``(y_enc, groups, sample_weight)`` of a fit on ``source``; sets ``classes_``, features.

    Returns
    -------
    y_enc : ndarray
        Class indices into ``classes_`` (int64), or a regressor's float32 targets.
    groups : SourceGroups or None
        ``None`` when the source names no sensitive features.
    sample_weight : ndarray of float64 or None
        The weight column, unchecked (the template checks it as in memory).
    """
    given = {"y": y, "sensitive_features": sensitive_features, "sample_weight": sample_weight}
    for name, value in given.items():
        if value is not None:
            column = "target" if name == "y" else name
            raise ValueError(
                f"{name} must not be passed when X is a {type(source).__name__}: the source "
                f"reads it from its {column}=... column. Name the column in the source instead."
            )
    n, n_features = source.shape
    if n < 2:
        raise ValueError(f"X: {source!r} has {n} row; a fit needs at least 2")
    from ..data.columns import group_combinations

    columns = source.read_columns(classification=not is_regressor(estimator))
    estimator.n_features_in_ = n_features
    estimator.feature_names_in_ = source.feature_names
    if is_regressor(estimator):
        y_enc = columns.y
    else:
        classes = columns.y.values
        try:
            check_classification_targets(classes)
        except ValueError as exc:
            raise ValueError(f"target: column {source.target!r} of {source!r}: {exc}") from exc
        if len(classes) < 2:
            raise ValueError(
                f"{type(estimator).__name__} needs at least 2 classes in y; the target column "
                f"{source.target!r} holds 1 class ({classes[0]!r})"
            )
        estimator.classes_ = classes
        y_enc = columns.y.codes.astype(np.int64)
    groups = None
    if columns.sensitive:
        groups = SourceGroups(*group_combinations(source.sensitive_features, columns.sensitive))
    return y_enc, groups, columns.sample_weight


def check_source_features(estimator, source) -> None:
    """A source given to ``predict``: the features the model was fitted on, in order."""
    expected = getattr(estimator, "feature_names_in_", None)
    if expected is not None and list(source.features) != list(expected):
        raise ValueError(
            f"X: the source's features {list(source.features)[:10]} are not the ones "
            f"{type(estimator).__name__} was fitted on ({list(expected)[:10]}, in this order)"
        )
    if source.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {source.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
