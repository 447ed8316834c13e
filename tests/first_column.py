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
from sklearn.base import is_regressor
from sklearn.utils import check_array

from skfairdp import (
    CGOOReduction,
    DPFermiClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    FederatedDPFermiClassifier,
    RaCODPClassifier,
)
from skfairdp.postprocessing import DPThresholdOptimizer


def _first_column(X):
    """X's first column as a 1-D float64 array; None if X is invalid."""
    try:
        column = check_array(X, dtype=np.float64, accept_sparse="csc")[:, [0]]
    except Exception:  # let the estimator's own validation report it
        return None
    return np.asarray(column.todense() if hasattr(column, "todense") else column).ravel()


def _upper_half(values):
    rank = np.argsort(np.argsort(values, kind="stable"), kind="stable")
    return (rank >= len(values) // 2).astype(int)


def first_column_groups(X):
    """Two groups (0/1) from the rank of X's first column; None if X is invalid."""
    column = _first_column(X)
    return None if column is None else _upper_half(column)


def first_column_groups_per_label(X, y):
    """:func:`first_column_groups` with every (group, label) cell filled.

    A classification reduction needs rows in every cell: for a label whose rows
    all fall in one group, its row nearest the other group moves there (labels with
    at least 2 rows). The groups stay those of the first column otherwise, so a
    fairness constraint on them still binds. None if X or y is invalid.
    """
    column = _first_column(X)
    try:
        labels = np.asarray(y).astype(str).ravel()
    except Exception:
        return None
    if column is None or labels.shape[0] != column.shape[0]:
        return None
    groups = _upper_half(column)
    for label in np.unique(labels):
        rows = np.flatnonzero(labels == label)
        if len(rows) >= 2 and len(np.unique(groups[rows])) == 1:
            order = rows[np.argsort(column[rows], kind="stable")]
            nearest = order[-1] if groups[rows[0]] == 0 else order[0]
            groups[nearest] = 1 - groups[nearest]
    return groups


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

    A classification reduction needs rows in every (group, label) cell, so its
    groups are ranked within each label. The reduction requires groups before it
    reads X, so for an invalid X it gets alternating groups of the right length
    and reports X's own error.
    """

    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        if sensitive_features is None:
            sensitive_features = (
                first_column_groups(X)
                if is_regressor(self)
                else first_column_groups_per_label(X, y)
            )
        if sensitive_features is None:
            sensitive_features = np.arange(len(X)) % 2
        return super().fit(X, y, sensitive_features=sensitive_features, sample_weight=sample_weight)


class FirstColumnFederated(FederatedDPFermiClassifier):
    """TEST-ONLY: :class:`FederatedDPFermiClassifier` with groups from X's first column.

    Its ``fit`` takes ``silo_ids``, not ``sample_weight``.
    """

    def fit(self, X, y, *, sensitive_features=None, silo_ids=None):
        if sensitive_features is None:
            sensitive_features = first_column_groups(X)
        return super().fit(X, y, sensitive_features=sensitive_features, silo_ids=silo_ids)


class FirstColumnThresholdOptimizer(DPThresholdOptimizer):
    """TEST-ONLY: :class:`DPThresholdOptimizer` with groups from X's first column.

    Groups are needed at predict time too: there they are the ranks of the first
    column of the rows given to ``predict`` (or alternating rows for invalid X).
    Not in :data:`WRAPPERS` (its checks run in tests/test_postprocessing.py until it is
    exported from ``skfairdp``).
    """

    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        if sensitive_features is None:
            sensitive_features = first_column_groups_per_label(X, y)
        if sensitive_features is None:
            sensitive_features = np.arange(len(X)) % 2
        return super().fit(X, y, sensitive_features=sensitive_features, sample_weight=sample_weight)

    def _pmf_predict(self, X, *, sensitive_features=None):
        if sensitive_features is None:
            sensitive_features = first_column_groups(X)
        if sensitive_features is None:
            sensitive_features = np.arange(len(X)) % 2
        return super()._pmf_predict(X, sensitive_features=sensitive_features)


WRAPPERS = [
    FirstColumnGroups,
    FirstColumnGroupsRaCO,
    FirstColumnDPSGDF,
    FirstColumnFairLens,
    FirstColumnCGOO,
    FirstColumnFederated,
]
