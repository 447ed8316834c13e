"""The one private release of :class:`DPThresholdOptimizer`: a (group, label, score bin) histogram.

Scores are clipped to a public ``score_range`` and put in ``n_bins`` public,
equal-width bins, so the cell a row falls in is a function of that row alone.
Adding or removing one row moves exactly one cell, by its weight: the L2 (and
L1) sensitivity of the histogram is the largest weight a row may carry (1
without ``sample_weight``, ``max_sample_weight`` with it). Everything the
estimator derives from the released counts (rates, curves, thresholds) is
post-processing.
"""

from __future__ import annotations

import numpy as np
import torch

from ..privacy import EventRecorder, RandomSource, noisy_histogram

__all__ = ["bin_scores", "exact_histogram", "release_histogram"]


def bin_scores(scores: np.ndarray, score_range: tuple[float, float], n_bins: int) -> np.ndarray:
    """The public bin of each score: clipped to ``score_range``, ``n_bins`` equal-width bins.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
    score_range : (float, float)
        Public ``(low, high)``; scores outside are clipped (not an error).
    n_bins : int

    Returns
    -------
    ndarray of int64, shape (n_samples,)
        Bin indices in ``[0, n_bins)``; bin ``k`` holds ``[low + k w, low + (k + 1) w)``
        (the last also ``high``), ``w = (high - low) / n_bins``.
    """
    low, high = float(score_range[0]), float(score_range[1])
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=low)
    position = (np.clip(scores, low, high) - low) / (high - low) * n_bins
    return np.clip(np.floor(position), 0, n_bins - 1).astype(np.int64)


def exact_histogram(
    groups: np.ndarray,
    y: np.ndarray,
    bins: np.ndarray,
    *,
    n_groups: int,
    n_bins: int,
    sample_weight: np.ndarray | None = None,
) -> np.ndarray:
    """The exact (weighted) counts of rows per (group, true label, score bin).

    Parameters
    ----------
    groups : ndarray of int, shape (n_samples,)
        Group codes in ``[0, n_groups)``.
    y : ndarray of {0, 1}, shape (n_samples,)
    bins : ndarray of int, shape (n_samples,)
        Score bins in ``[0, n_bins)``.
    n_groups, n_bins : int
    sample_weight : ndarray of shape (n_samples,), optional
        Each row counts its weight (1 without weights).

    Returns
    -------
    ndarray of float64, shape (n_groups, 2, n_bins)
    """
    cells = (np.asarray(groups) * 2 + np.asarray(y)) * n_bins + np.asarray(bins)
    counts = np.bincount(cells, weights=sample_weight, minlength=n_groups * 2 * n_bins)
    return counts.astype(np.float64).reshape(n_groups, 2, n_bins)


def release_histogram(
    counts: np.ndarray,
    random: RandomSource,
    *,
    noise_multiplier: float,
    sensitivity: float,
    recorder: EventRecorder,
) -> np.ndarray:
    """The Gaussian release of ``counts``: noise of std ``noise_multiplier * sensitivity``.

    Recorded as ``GaussianDpEvent(noise_multiplier)`` in ``recorder`` by
    :func:`~skfairdp.privacy.noisy_histogram`. The released counts may be
    negative; the consumer clips them at 0 (post-processing).

    Returns
    -------
    ndarray of float64, same shape as ``counts``
    """
    exact = torch.as_tensor(counts, dtype=torch.float64)
    noisy, _ = noisy_histogram(
        exact, random, noise_multiplier=noise_multiplier, sensitivity=sensitivity,
        recorder=recorder,
    )  # fmt: skip
    return noisy.numpy()
