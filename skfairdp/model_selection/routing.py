"""What each run's ``fit`` receives: the search's metadata, routed, and sliced to the training rows.

With metadata routing enabled, scikit-learn's router decides. Without it,
``sensitive_features`` goes to an estimator whose ``fit`` accepts it (it is the
scores' in any case), and a ``Pipeline`` gets old-style ``step__param`` names.
"""

from __future__ import annotations

import inspect

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing
from sklearn.utils._metadata_requests import _routing_enabled, process_routing
from sklearn.utils.validation import _num_samples

__all__ = ["routed_fit_params", "training_rows"]


def routed_fit_params(search, sensitive_features, fit_params: dict) -> dict:
    """The metadata ``search.estimator.fit`` receives (for all rows)."""
    params = dict(fit_params)
    if sensitive_features is not None:
        params["sensitive_features"] = sensitive_features
    if _routing_enabled():
        return dict(process_routing(search, "fit", **params).estimator.fit)
    final = search.estimator
    while isinstance(final, Pipeline):
        final = final.steps[-1][1]
    accepted = inspect.signature(final.fit).parameters
    if "sensitive_features" not in accepted and not any(
        p.kind is p.VAR_KEYWORD for p in accepted.values()
    ):
        params.pop("sensitive_features", None)  # used by the scores only
    if isinstance(search.estimator, Pipeline):
        last = search.estimator.steps[-1][0]
        return {f"{last}__{k}": v for k, v in params.items()}
    return params


def training_rows(routed: dict, indices: np.ndarray, n: int) -> dict:
    """Per-row metadata (length ``n``) sliced to ``indices``; other values pass unchanged."""
    return {name: _rows(value, indices, n) for name, value in routed.items()}


def _rows(value, indices, n):
    try:
        if _num_samples(value) == n:
            return _safe_indexing(value, indices)
    except TypeError:
        pass
    return value
