"""TEST-ONLY estimators that derive groups from X when ``sensitive_features`` is omitted.

scikit-learn's estimator checks call ``fit(X, y)`` and never pass
``sensitive_features``. These subclasses of the estimators whose ``fit`` takes
groups let the checks exercise the group paths (fairness terms, histograms,
per-group clipping): when no groups are given, the groups are the lower/upper
half of X's first column. Ranks (not a median threshold) guarantee two groups of
at least floor(n/2) rows even with ties. Invalid X is passed through untouched,
so that ``fit`` raises the validation error the checks expect.

They change nothing else (same ``__init__``, same parameter constraints).
"""

import numpy as np
from sklearn.utils import check_array

from skfairdp import (
    CGOOReduction,
    DPFermiClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    RaCODPClassifier,
)


def first_column_groups(X):
    """Two groups (0/1) from the rank of X's first column; None if X is invalid."""
    try:
        column = check_array(X, dtype=np.float64, accept_sparse="csc")[:, [0]]
        column = np.asarray(column.todense() if hasattr(column, "todense") else column).ravel()
    except Exception:  # let the estimator's own validation report it
        return None
    rank = np.argsort(np.argsort(column, kind="stable"), kind="stable")
    return (rank >= len(column) // 2).astype(int)


class _FirstColumnFit:
    """``fit`` that fills in :func:`first_column_groups` when no groups are given."""

    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        if sensitive_features is None:
            sensitive_features = first_column_groups(X)
        return super().fit(X, y, sensitive_features=sensitive_features, sample_weight=sample_weight)


class FirstColumnGroups(_FirstColumnFit, DPFermiClassifier):
    """TEST-ONLY: :class:`DPFermiClassifier` with groups from X's first column."""


class FirstColumnGroupsRaCO(_FirstColumnFit, RaCODPClassifier):
    """TEST-ONLY: :class:`RaCODPClassifier` with groups from X's first column."""


class FirstColumnDPSGDF(_FirstColumnFit, DPSGDFClassifier):
    """TEST-ONLY: :class:`DPSGDFClassifier` with groups from X's first column."""


class FirstColumnFairLens(_FirstColumnFit, FairLensClassifier):
    """TEST-ONLY: :class:`FairLensClassifier` with groups from X's first column."""


class FirstColumnCGOO(CGOOReduction):
    """TEST-ONLY: :class:`CGOOReduction` with groups from X's first column.

    Its ``fit`` takes no ``sample_weight`` (nor does the reduction's). The
    reduction requires groups before it reads X, so for an invalid X it gets
    alternating groups of the right length and reports X's own error.
    """

    def fit(self, X, y, *, sensitive_features=None):
        if sensitive_features is None:
            sensitive_features = first_column_groups(X)
        if sensitive_features is None:
            sensitive_features = np.arange(len(X)) % 2
        return super().fit(X, y, sensitive_features=sensitive_features)


WRAPPERS = [
    FirstColumnGroups,
    FirstColumnGroupsRaCO,
    FirstColumnDPSGDF,
    FirstColumnFairLens,
    FirstColumnCGOO,
]
