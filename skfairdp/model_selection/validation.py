"""The selected run's validation release as a PrivateMetricFrame, and its intervals.

A run's score release is, with a fairness notion or ``scoring="balanced_accuracy"``,
one Gaussian release of the (group x true class x predicted class) counts of the
validation rows with L2 sensitivity 1 and noise std ``score_noise_multiplier_``:
for a binary classifier exactly the table a :class:`~skfairdp.metrics.PrivateMetricFrame`
releases (cells tn, fp, fn, tp; ``classes_[1]`` positive). The selected run's
table is therefore wrapped in a frame (no new release, no new cost: it is already
the run's ``GaussianDpEvent`` inside the search's ``dp_event_``), from which every
confusion-matrix metric and its interval over sampling and noise follows.

With ``scoring="accuracy"`` and no fairness notion the release is one noisy count
of correct predictions among the public number of validation rows; its interval
is the exact posterior of :func:`~skfairdp.evaluation.intervals.noisy_proportion_draws`.
A multi-class run has no frame (the frame is binary) and no interval.

The intervals bound the run's population value as if it had been chosen before
its scores were seen. The search selects the best of ``K`` noisy runs, so the
selected run's noisy score is biased upwards (the winner's curse) and its
interval is optimistic by about that bias: read it as the resolution of the
validation release, not as a guarantee about the selected model.
"""

from __future__ import annotations

import functools

import dp_accounting
import numpy as np
import pandas as pd

from ..evaluation import PrivateMetricFrame
from ..evaluation.intervals import equal_tailed, noisy_proportion_draws
from ..evaluation.table import ACCOUNTING, Release
from ..evaluation.violations import violation_interval
from ..privacy import PrivacySpent, epsilon_spent

__all__ = ["CONFIDENCE", "N_DRAWS", "released_intervals", "validation_frame"]

#: The confidence of the intervals in ``cv_results_``.
CONFIDENCE = 0.95
#: Posterior draws behind them.
N_DRAWS = 4000
#: The frame's metrics (more are free: ``validation_frame_.with_metrics``).
FRAME_METRICS = ("accuracy", "balanced_accuracy", "selection_rate", "true_positive_rate",
                 "false_positive_rate")  # fmt: skip


def validation_frame(
    noisy_cells: np.ndarray,
    encoder,
    noise_multiplier: float,
    delta: float,
    seed: int | None,
    secure_mode: bool,
) -> PrivateMetricFrame | None:
    """The frame of a run's released ``cells[group, true, predicted]`` (None unless binary).

    ``encoder``: the search's fitted ``GroupEncoder`` (None: groups ``0, 1, ...``).
    """
    n_groups, n_classes, _ = noisy_cells.shape
    if n_classes != 2:
        return None
    event = dp_accounting.GaussianDpEvent(noise_multiplier)
    release = Release(np.asarray(noisy_cells, dtype=np.float64).reshape(n_groups, 4),
                      float(noise_multiplier), 1.0, float(delta), event)  # fmt: skip
    spent = _gaussian_spent(float(noise_multiplier), float(delta))
    return PrivateMetricFrame._from_release(
        release, _index(encoder, n_groups), metrics={name: name for name in FRAME_METRICS},
        epsilon=spent.epsilon, n_draws=N_DRAWS, seed=seed, secure_mode=secure_mode, spent=spent,
    )  # fmt: skip


@functools.lru_cache(maxsize=64)
def _gaussian_spent(noise_multiplier: float, delta: float) -> PrivacySpent:
    """The PLD cost of one sensitivity-1 Gaussian release alone (as the frame prices it)."""
    return epsilon_spent(dp_accounting.GaussianDpEvent(noise_multiplier), delta, **ACCOUNTING)


def _index(encoder, n_groups: int) -> pd.Index:
    if encoder is None:
        return pd.RangeIndex(n_groups, name="group")
    labels = list(encoder.group_labels_)
    if len(encoder.names_) > 1:
        return pd.MultiIndex.from_tuples(labels, names=encoder.names_)
    return pd.Index(labels, name=encoder.names_[0])


def released_intervals(
    release: tuple, frame: PrivateMetricFrame | None, scoring: str, fairness: str | None,
    seed: int | None,
) -> dict:  # fmt: skip
    """``score_lower/upper`` and ``violation_lower/upper`` of the selected run (None: none)."""
    out = dict.fromkeys(("score_lower", "score_upper", "violation_lower", "violation_upper"))
    if release[0] == "count":
        _, noisy, n_rows, sigma = release
        rng = np.random.default_rng(None if seed is None else [seed, 2])
        draws = noisy_proportion_draws(noisy, n_rows, sigma, N_DRAWS, rng)
        out["score_lower"], out["score_upper"] = map(float, equal_tailed(draws, CONFIDENCE))
        return out
    if frame is None:
        return out
    low, high = frame.with_metrics(scoring).interval("overall", CONFIDENCE)
    out["score_lower"], out["score_upper"] = float(low), float(high)
    if fairness is not None:
        bounds = violation_interval(frame, fairness, CONFIDENCE)
        out["violation_lower"], out["violation_upper"] = bounds.lower, bounds.upper
    return out
