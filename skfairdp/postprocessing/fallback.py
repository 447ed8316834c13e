"""DPThresholdOptimizer's check that its thresholds beat a constant, on the released histogram.

The thresholds are chosen to maximise accuracy on the *noisy* counts, so on a table
where nothing beats the majority class (ResumeNames, HMDA for a private base,
smoke-ban) the noise alone makes some positives look worth predicting: the chosen
rule errs a little above the constant on new rows (issue 34's zoo: 9 of its cells
above the majority class were DPThresholdOptimizer's, all within 0.002). The fitted
estimators' ``fallback_to_constant`` answers the same failure with one noisy release
(:mod:`skfairdp._fit.constant_check`); here no release is needed: the histogram
already holds every cell's (group, label, score bin) count, so the rule's training
error and each constant's are sums of released counts.

**The rule** (as :func:`skfairdp._fit.constant_check.decide`): the rule's noisy
training error minus the best constant's is ``sum_cell a_cell * count_cell`` with
``a = loss_rule - loss_constant`` per cell (``loss_rule`` the chosen thresholds'
probability of a wrong decision there), so its noise sd is ``noise_std * ||a||``.
The thresholds are kept only where their noisy error beats the constant's by
``CHECK_Z`` of those sds. A constant meets every group-parity constraint exactly.
Post-processing of the release: no privacy cost.

**It is lenient.** Unlike the fitted estimators' check, these counts are the ones the
thresholds were chosen on, so their advantage is biased up (cells whose noise made
positives look worth predicting are always there to take): on a no-signal histogram
whose scores fill 3 of 20 bins, 83 of 150 releases keep their thresholds (100 before the
counts were read clipped). A null
simulated from the release (labels independent of bins, the noise redrawn, the
thresholds rechosen) was tried as the margin: its 95 % quantile took the zoo's cells
above the majority class from 9 to 4 but cost real signal (Communities at epsilon =
0.5 +0.057 of error, German DP +0.018 to +0.024), and its median changed nothing the
unclipped rule did not (doc/postprocessing.md, "The constant wins near-ties").
"""

from __future__ import annotations

import numpy as np

from .._fit.constant_check import CHECK_Z, ConstantCheck
from .curves import ThresholdRule

__all__ = ["constant_rule", "thresholds_check"]


def thresholds_check(
    histogram: np.ndarray,
    rule: ThresholdRule,
    noise_std: float,
    noise_multiplier: float,
) -> ConstantCheck:
    """Whether ``rule`` beats the best constant on the released ``histogram``.

    Parameters
    ----------
    histogram : ndarray of shape (n_groups, 2, n_bins)
        The released (noisy) counts per group, true label and score bin; read clipped
        at 0, as the thresholds were chosen from them.
    rule : ThresholdRule
        The thresholds chosen from those counts.
    noise_std : float
        Each count's noise std (0: exact counts; the constant then wins exact ties).
    noise_multiplier : float
        The release's multiplier, recorded in the result.

    Returns
    -------
    ConstantCheck
        ``counts`` is the rule's expected (true label, decision) table on the noisy
        counts; ``constant_class`` 0 or 1 (the index into ``classes_``).
    """
    # clipped at 0, as the thresholds were chosen from them: a negative count in a cell
    # the thresholds predict positive would otherwise be a gain no row made (a rare label's
    # empty cells, fresh-table probe 3)
    counts = np.maximum(np.asarray(histogram, dtype=np.float64), 0.0)
    n_groups, _, n_bins = counts.shape
    groups, bins = np.meshgrid(np.arange(n_groups), np.arange(n_bins), indexing="ij")
    positive = rule.positive_probability(groups.ravel(), bins.ravel()).reshape(n_groups, n_bins)
    positive = positive[:, None, :]  # (group, label, bin)
    label = np.arange(2)[None, :, None]
    wrong = np.where(label == 1, 1.0 - positive, positive)
    total = max(float(counts.sum()), 1.0)
    by_label = counts.sum(axis=(0, 2))
    decided_positive = (positive * counts).sum(axis=(0, 2))  # per true label
    # rows: true labels 0, 1; columns: decisions 0, 1
    table = np.column_stack([by_label - decided_positive, decided_positive])
    error = float(np.clip((table[0, 1] + table[1, 0]) / total, 0.0, 1.0))
    constant_errors = np.clip(by_label[::-1] / total, 0.0, 1.0)  # constant c errs on label 1 - c
    c = int(np.argmin(constant_errors))
    loadings = wrong - (label != c)
    margin = CHECK_Z * noise_std * float(np.sqrt(np.square(loadings).sum())) / total
    return ConstantCheck(
        counts=table, error=error, constant_class=c, constant_error=float(constant_errors[c]),
        margin=margin, falls_back=bool(constant_errors[c] <= error + margin + 1e-12),
        noise_multiplier=float(noise_multiplier),
    )  # fmt: skip


def constant_rule(n_groups: int, positive: bool) -> ThresholdRule:
    """The rule that decides ``positive`` (1) or not (0) for every row of every group."""
    zeros = np.zeros(n_groups)
    no_bin = np.zeros(n_groups, dtype=np.int64)
    return ThresholdRule(zeros, no_bin, zeros, no_bin, np.ones(n_groups), float(positive))
