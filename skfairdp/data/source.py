"""What a data source promises the fit template, and the error of everyone else.

This module imports neither pyarrow nor torch: the estimators ask
:func:`is_source` about every ``X`` they are given.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["DataSource", "is_source", "reject_source"]

#: The estimators whose fit reads a source (the fit template's).
TEMPLATE_ESTIMATORS = (
    "DPSGDClassifier, DPSGDRegressor, DPFermiClassifier, RaCODPClassifier, "
    "GlobalScalingDPClassifier, DPSGDFClassifier, FairLensClassifier"
)


class DataSource:
    """A table read in row chunks: the features ``X`` and, beside them, the fit's columns.

    Subclasses (:class:`~skfairdp.data.ParquetSource`) provide ``shape``
    (``(n_rows, n_features)``), ``feature_names``, ``iter_features()`` (``(start,
    float32 chunk)`` pairs in row order, finite values only), ``read_columns()``
    (target, sensitive features, sample weights) and ``sampler(...)`` (the
    out-of-core batches of one fit).
    """

    shape: tuple[int, int]

    def iter_features(self) -> Iterator[tuple[int, np.ndarray]]:  # pragma: no cover
        raise NotImplementedError


def is_source(X) -> bool:
    """Whether ``X`` is a :class:`DataSource` (without importing pyarrow)."""
    return isinstance(X, DataSource)


def reject_source(X, who: str) -> None:
    """Raise a TypeError naming ``who`` if ``X`` is a source it cannot read."""
    if is_source(X):
        raise TypeError(
            f"{who} does not accept a {type(X).__name__} as X: only the estimators on the "
            f"fit template ({TEMPLATE_ESTIMATORS}) read a table out of core. Load the rows "
            "into memory first (e.g. pandas.read_parquet(path)) and pass X, y and "
            "sensitive_features as arrays."
        )
