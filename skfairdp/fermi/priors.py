"""DP-FERMI's group priors: the ``rho`` rules and the parsing of public ``group_priors``.

``rho`` is DP-FERMI's public lower bound on every group's frequency; the
sensitivity bounds of its W-gradients use priors clamped at it. Priors the user
declares below it are an error; priors estimated from the data below it are
clamped, with a warning (:func:`check_priors_against_rho`).
:class:`~skfairdp.FederatedDPFermiClassifier` applies the same rules.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..fairness.groups import _MAX_LISTED, _format_label

__all__ = ["check_min_group_fraction", "check_priors_against_rho", "public_priors"]


def check_min_group_fraction(
    fractions: Any, rho: float, labels: Sequence[Any] | None = None
) -> np.ndarray:
    """Check that every group's (estimated) fraction is at least ``rho``.

    Parameters
    ----------
    fractions : array-like of float, shape (n_groups,)
        Estimated fraction of rows in each group (may be noisy, so values can
        lie outside ``[0, 1]``).
    rho : float
        Public lower bound on the group fractions, in ``[0, 1)``.
    labels : sequence or None, default=None
        Group labels for the error message (e.g. ``encoder.group_labels_``);
        defaults to the group codes.

    Returns
    -------
    fractions : ndarray of float64
        The validated fractions.

    Raises
    ------
    ValueError
        If a fraction is below ``rho``; the message names the group(s).
    """
    fractions = np.asarray(fractions, dtype=np.float64)
    if fractions.ndim != 1 or not np.all(np.isfinite(fractions)):
        raise ValueError(f"fractions must be a finite 1-D array; got {fractions!r}.")
    if not (isinstance(rho, numbers.Real) and 0.0 <= float(rho) < 1.0):
        raise ValueError(f"rho (the minimum group fraction) must be in [0, 1); got {rho!r}.")
    if labels is None:
        labels = [f"group {g}" for g in range(fractions.size)]
    elif len(labels) != fractions.size:
        raise ValueError(f"got {len(labels)} labels for {fractions.size} group fractions.")
    low = np.flatnonzero(fractions < rho)
    if low.size:
        shown = "; ".join(
            f"{_format_label(labels[g])} (fraction {fractions[g]:.4g})" for g in low[:_MAX_LISTED]
        )
        more = f"; and {low.size - _MAX_LISTED} more" if low.size > _MAX_LISTED else ""
        raise ValueError(
            f"{low.size} group(s) have an estimated fraction below the minimum group "
            f"fraction rho={float(rho):g}: {shown}{more}. Merge or drop small groups, "
            "or lower rho."
        )
    return fractions


def check_priors_against_rho(
    priors: Any,
    rho: float,
    labels: Sequence[Sequence[Any]],
    *,
    declared: bool,
    source: str,
    remedy: str,
    stacklevel: int = 2,
) -> None:
    """Apply the rule for group priors below ``rho``: refuse declared ones, warn on counted ones.

    Priors the user declared as public (``group_priors=...``) that fall below ``rho``
    contradict it and raise. Priors counted from the data (exactly at ε = ∞, or from a
    noisy histogram) are clamped at ``rho`` by the caller like every prior, so the
    sensitivity bounds hold; only that group's fairness weighting is off, which is
    warned about.

    Parameters
    ----------
    priors : array-like of float, shape (n_blocks, n_groups)
        One row of group fractions per block (one block for demographic parity,
        one per class for the conditional notions).
    rho : float
        The public minimum group fraction.
    labels : sequence of sequences
        Group labels for each row's message.
    declared : bool
        Whether the user passed ``priors`` as public.
    source, remedy : str
        How the fractions were obtained and what the user can do, for the warning
        ("These fractions {source} and were clamped at rho; for an accurate fairness
        weighting {remedy}.").
    stacklevel : int, default=2
        The warning's stack level as seen from the caller.

    Raises
    ------
    ValueError
        If ``declared`` and a prior is below ``rho``.
    """
    try:
        for row, row_labels in zip(np.atleast_2d(priors), labels, strict=True):
            check_min_group_fraction(row, rho, row_labels)
    except ValueError as exc:
        if declared:
            raise  # the user's public priors contradict rho
        warnings.warn(
            f"{exc} These fractions {source} and were clamped at rho={float(rho):g}; for an "
            f"accurate fairness weighting {remedy}.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def public_priors(
    spec: Any,
    *,
    fairness: str,
    group_labels: Sequence[Any],
    classes: Sequence[Any],
) -> np.ndarray:
    """Public ``group_priors`` as one row of group frequencies per W block.

    Parameters
    ----------
    spec : array-like or dict
        Demographic parity: a vector of ``k`` frequencies (in the order of
        ``group_labels``) or a mapping group label -> frequency. Conditional
        notions: a mapping class -> such a vector or mapping, ``p(S | Y=class)``.
    fairness : {"demographic_parity", "equalized_odds", "equal_opportunity"}
    group_labels : sequence
        The encoder's group labels (``group_encoder_.group_labels_``).
    classes : sequence
        ``classes_``; equal opportunity uses the last one.

    Returns
    -------
    ndarray of shape (n_blocks, n_groups)
    """
    labels = list(group_labels)
    n_groups = len(labels)

    def as_vector(row, where):
        if isinstance(row, dict):
            missing = [g for g in labels if g not in row]
            if missing:
                raise ValueError(f"group_priors{where} has no entry for groups {missing}")
            vec = np.array([row[g] for g in labels], dtype=float)
        else:
            vec = np.asarray(row, dtype=float).ravel()
        if vec.shape != (n_groups,) or np.any(vec < 0) or not np.isclose(vec.sum(), 1.0):
            raise ValueError(
                f"group_priors{where} must give {n_groups} non-negative frequencies summing "
                f"to 1 (one per group {labels}); got {vec.tolist()}"
            )
        return vec

    if fairness == "demographic_parity":
        return as_vector(spec, "")[None, :]
    if not isinstance(spec, dict) or not all(c in spec for c in classes):
        raise ValueError(
            f"with fairness={fairness!r}, group_priors must map each class in "
            f"{list(classes)} to that class's group frequencies p(S | Y=class)"
        )
    if fairness == "equal_opportunity":
        return as_vector(spec[classes[-1]], f"[{classes[-1]!r}]")[None, :]
    return np.stack([as_vector(spec[c], f"[{c!r}]") for c in classes])
