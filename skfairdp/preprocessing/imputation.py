"""The exact statistics :class:`DPSimpleImputer` releases, and the fill values read from them.

Each is a vector that one row moves by a bounded L2 distance (its sensitivity), whatever
the row's values; the fill values are post-processing of the noisy vector.
"""

from __future__ import annotations

import numpy as np

__all__ = ["binned_counts", "histogram_median", "mean_sums", "noisy_mean"]


def mean_sums(X: np.ndarray, missing: np.ndarray, lower, upper) -> np.ndarray:
    """``(sum_i u_ij, count_j)`` over the present entries of each column ``j`` (``2 d`` numbers).

    ``u = (clip(x, lower, upper) - middle) / half_width`` lies in ``[-1, 1]``, and a row
    adds 1 to at most each count: L2 sensitivity ``sqrt(2 d)`` under adding or removing
    a row. ``missing`` is the boolean mask of missing entries.
    """
    middle, half = (upper + lower) / 2, (upper - lower) / 2
    u = (np.clip(np.where(missing, middle, X), lower, upper) - middle) / half
    u[missing] = 0.0
    return np.concatenate([u.sum(axis=0), (~missing).sum(axis=0).astype(np.float64)])


def noisy_mean(noisy: np.ndarray, lower, upper) -> np.ndarray:
    """The mean of each column from the noisy :func:`mean_sums`, kept inside the bounds."""
    d = len(lower)
    middle, half = (upper + lower) / 2, (upper - lower) / 2
    ratio = noisy[:d] / np.maximum(noisy[d:], 1.0)
    return middle + half * np.clip(ratio, -1.0, 1.0)


def binned_counts(X: np.ndarray, missing: np.ndarray, lower, upper, n_bins: int) -> np.ndarray:
    """Counts of the present entries in ``n_bins`` equal bins of each column's bounds.

    Shape ``(d, n_bins)``; a value outside the bounds counts in the end bin (clipping).
    A row adds 1 to at most one bin per column: L2 sensitivity ``sqrt(d)``.
    """
    n, d = X.shape
    width = (upper - lower) / n_bins
    filled = np.where(missing, lower, X)
    bins = np.clip(np.floor((filled - lower) / width), 0, n_bins - 1).astype(np.int64)
    counts = np.zeros((d, n_bins))
    for j in range(d):
        counts[j] = np.bincount(bins[~missing[:, j], j], minlength=n_bins)
    return counts


def histogram_median(noisy: np.ndarray, lower, upper) -> np.ndarray:
    """The median of each column from its noisy bin counts (``(d, n_bins)``).

    Negative noisy counts are set to 0; the median is where the cumulative count
    reaches half the total, linearly inside that bin (the middle of the bounds if the
    noisy total is 0).
    """
    d, n_bins = noisy.shape
    counts = np.maximum(noisy, 0.0)
    width = (upper - lower) / n_bins
    medians = (upper + lower) / 2
    for j in range(d):
        total = counts[j].sum()
        if total <= 0:
            continue
        cumulative = np.cumsum(counts[j])
        k = int(np.searchsorted(cumulative, total / 2))
        before = cumulative[k - 1] if k > 0 else 0.0
        inside = (total / 2 - before) / counts[j, k] if counts[j, k] > 0 else 0.5
        medians[j] = lower[j] + (k + inside) * width[j]
    return medians
