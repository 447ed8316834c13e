"""The search's input: rows, labels, the groups of the fairness statistics, the split size."""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.utils import indexable
from sklearn.utils.validation import _num_samples

from ..data.source import reject_source
from ..fairness import encode_sensitive_features
from ..fairness.routing import routing_hint

__all__ = ["check_search_input", "validation_rows"]


def check_search_input(X, y, sensitive_features, fairness: str | None) -> tuple:
    """``(X, y, groups, encoder)``: indexable rows, labels as an array, encoded groups.

    ``groups`` and ``encoder`` are None (one group) without ``fairness``; the
    encoder's ``n_groups_`` counts every group, not only those that land in the
    validation part.
    """
    reject_source(X, "PrivateSearchCV")
    X, y = indexable(X, y)
    y = np.asarray(y)
    n = _num_samples(X)
    if n == 0:
        raise ValueError("X has 0 samples: PrivateSearchCV needs rows to search on")
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]}")
    if fairness is None:
        return X, y, None, None
    if sensitive_features is None:
        raise ValueError(
            f"fairness={fairness!r} needs fit(X, y, sensitive_features=...). {routing_hint()}"
        )
    groups, encoder = encode_sensitive_features(sensitive_features, n)
    return X, y, groups, encoder


def validation_rows(
    validation_size: float | int, n_samples: int, name: str = "validation_size"
) -> int:
    """How many of ``n_samples`` rows a held-out part takes (``ValueError`` if no training
    rows remain); ``name`` is the parameter the error names."""
    n_val = (
        int(validation_size)
        if isinstance(validation_size, numbers.Integral)
        else math.ceil(float(validation_size) * n_samples)
    )
    if not 1 <= n_val < n_samples - 1:
        raise ValueError(f"{name}={validation_size!r} leaves no training rows")
    return n_val
