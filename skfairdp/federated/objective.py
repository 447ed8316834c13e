"""The DP-FERMI objective as silos and server share it (see :mod:`skfairdp.fermi`).

Nothing here is new: the per-sample ERMI problem is :class:`skfairdp.fermi.ErmiProblem`;
this module only says which W block and which weights each row gets, and turns the
released group histogram into the public quantities every party uses (priors,
their ``-1/2`` powers, label weights, W's ball).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._fit.schedules import FEDERATED_DUAL_MAX_STEP, FEDERATED_DUAL_MEMORY
from ..fermi.problem import (
    AUTO_LR_DUAL_FRACTION,
    DUAL_BOUND_MARGIN,
    DUAL_NOISE_SHARE,
    DUAL_NOISE_TOLERANCE,
    ErmiProblem,
    objective_scales,
)

__all__ = [
    "dual_step",
    "HISTOGRAM_CELLS",
    "blocks",
    "histogram_cells",
    "make_problem",
    "n_blocks",
    "public_statistics",
    "row_tensors",
]

#: Round-0 histogram layouts: group counts, (label, group) counts, label counts, a row count.
HISTOGRAM_CELLS = ("groups", "labels_groups", "labels", "total")


def n_blocks(fairness: str, n_classes: int) -> int:
    """W blocks: one per label for equalized odds, else one."""
    return n_classes if fairness == "equalized_odds" else 1


def blocks(fairness: str, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Which W block each row uses and whether its psi term is active (as DP-FERMI)."""
    n = len(y)
    if fairness == "demographic_parity":
        return np.zeros(n, dtype=np.int64), np.ones(n)
    if fairness == "equalized_odds":
        return np.asarray(y, dtype=np.int64), np.ones(n)
    return np.zeros(n, dtype=np.int64), (np.asarray(y) == n_classes - 1).astype(float)


def histogram_cells(fairness: str, public_priors: bool, aggregation: str) -> str | None:
    """The round-0 histogram a fit needs, or None.

    Group priors (unless public): group counts for demographic parity, (label,
    group) counts for the conditional notions (their row sums are the label
    frequencies); with public priors a conditional notion still needs label
    counts, and ``aggregation="size"`` at least a row count.
    """
    conditional = fairness != "demographic_parity"
    if not public_priors:
        return "labels_groups" if conditional else "groups"
    if conditional:
        return "labels"
    return "total" if aggregation == "size" else None


def cell_counts(cells: str, y: np.ndarray, groups: np.ndarray, n_classes: int, n_groups: int):
    """Exact counts of one silo's rows in the histogram layout ``cells``."""
    if cells == "groups":
        return np.bincount(groups, minlength=n_groups).astype(float)
    if cells == "labels_groups":
        return np.bincount(y * n_groups + groups, minlength=n_classes * n_groups).astype(float)
    if cells == "labels":
        return np.bincount(y, minlength=n_classes).astype(float)
    if cells == "total":
        return np.array([float(len(y))])
    raise ValueError(f"cells must be one of {HISTOGRAM_CELLS}, got {cells!r}")


def public_statistics(
    *,
    fairness: str,
    fairness_weight: float,
    n_classes: int,
    n_groups: int,
    rho: float,
    cells: str | None,
    totals: np.ndarray | None,
    group_priors: np.ndarray | None,
) -> dict:
    """Priors, ``pinv``, label weights and W's ball from the summed round-0 counts.

    Parameters
    ----------
    totals : ndarray or None
        Sum over silos of their noisy histograms in layout ``cells`` (negative
        counts are clamped at 0).
    group_priors : ndarray of shape (n_blocks, n_groups) or None
        Public priors (they replace the released ones).

    Returns
    -------
    dict
        ``priors`` (n_blocks, k), ``pinv`` (n_blocks, k) float32 tensor of
        ``max(prior, rho)^(-1/2)``, ``label_weights`` (l,), ``dual_bound_auto``.
    """
    blocks_ = n_blocks(fairness, n_classes)
    conditional = fairness != "demographic_parity"

    def normalised(counts):
        counts = np.clip(np.asarray(counts, dtype=float), 0.0, None)
        sums = counts.sum(axis=-1, keepdims=True)
        return counts / np.where(sums > 0, sums, 1.0)

    label_freq = None
    if group_priors is not None:
        priors = np.asarray(group_priors, dtype=float).reshape(blocks_, n_groups)
        if conditional and cells == "labels":
            label_freq = normalised(totals)
    elif fairness_weight == 0 or cells is None:
        priors = np.full((blocks_, n_groups), 1.0 / n_groups)
    elif not conditional:
        priors = normalised(totals)[None, :]
    else:
        joint = np.clip(np.asarray(totals, dtype=float), 0.0, None).reshape(n_classes, n_groups)
        label_freq = normalised(joint.sum(axis=1))
        rows = joint if fairness == "equalized_odds" else joint[[n_classes - 1]]
        priors = normalised(rows)
    if conditional and fairness_weight > 0 and label_freq is not None:
        label_weights = 1.0 / (n_classes * np.maximum(label_freq, rho))
    else:
        label_weights = np.ones(n_classes)
    pinv = torch.as_tensor(np.maximum(priors, rho), dtype=torch.float32).rsqrt()
    return {
        "priors": priors,
        "pinv": pinv,
        "label_weights": label_weights,
        "dual_bound_auto": DUAL_BOUND_MARGIN * math.sqrt(n_classes) * float(pinv.max()),
    }


def row_tensors(
    fairness: str,
    fairness_weight: float,
    y: np.ndarray,
    groups: np.ndarray,
    n_classes: int,
    label_weights: np.ndarray,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The two packed per-row tensors of :class:`~skfairdp.fermi.ErmiProblem` batches."""
    block, active = blocks(fairness, y, n_classes)
    packed = np.stack([y, groups, block], axis=1).astype(np.int64)
    dual_weight = float(fairness_weight) * active
    weights = np.stack([dual_weight * np.asarray(label_weights)[y], dual_weight], axis=1)
    return torch.as_tensor(packed), torch.as_tensor(weights, dtype=torch.float32)


def make_problem(
    *,
    W: torch.Tensor,
    pinv: torch.Tensor,
    fairness: str,
    fairness_weight: float,
    privacy_unit: str,
    private: bool,
    dual_rates: str,
    dual_bound: float = math.inf,
    lr_dual: float = 0.0,
    average=None,
) -> ErmiProblem:
    """DP-FERMI's engine problem with the federated run's settings."""
    return ErmiProblem(
        W=W,
        pinv=pinv,
        fairness_weight=fairness_weight,
        dual_bound=dual_bound,
        lr_dual=lr_dual,
        privacy_unit=privacy_unit,
        all_active=fairness != "equal_opportunity",
        dual_rates=dual_rates,
        scales=objective_scales(fairness_weight, private, privacy_unit),
        average=average,
    )


def dual_step(noise_ratio: float, max_pinv: float, rounds: int) -> float:
    """``lr_dual * lambda`` of ``lr_dual="auto"``: DP-FERMI's rule, with a cap for short runs.

    ``noise_ratio`` is the std of the averaged W-gradient in units of the W clip,
    ``sqrt(sum_j a_j^2 (z_w,j / m_j)^2)`` (0 or inf: no noise). DP-FERMI's rule
    (:func:`~skfairdp.fermi.problem.auto_dual_step`) takes the largest step whose
    noise moves a psi coefficient by at most 1, capped at 0.05: W then averages over
    about ``1 / (2 a p)`` ~ 100 steps (``p`` ~ 0.1, a class share). The federated
    schedule runs ``T`` ~ 60 rounds of ``K`` steps (W steps after each, on the server or
    in a silo), so the cap is ``max(0.05, min(0.25, 20 / T))`` for ``T`` steps (0.11 at
    the default 60 rounds of 3 steps, 0.25 at 60 of one): W settles within a tenth of a
    run of 80 steps or more, and
    never overshoots (each step keeps at least
    3/4 of W's distance to its target for a class share up to 0.5). On Adult at 60
    rounds (seed 0) the violation at lambda = 1 was 0.153 at the 0.05 cap, 0.129 at
    0.2 to 1.0.
    """
    short_run = min(FEDERATED_DUAL_MAX_STEP, FEDERATED_DUAL_MEMORY / max(1, int(rounds)))
    cap = max(AUTO_LR_DUAL_FRACTION / 2.0, short_run)
    if not math.isfinite(noise_ratio) or noise_ratio <= 0:
        return float(cap)
    quiet = DUAL_NOISE_TOLERANCE / (2.0 * max_pinv**2 * noise_ratio)
    return float(min(cap, DUAL_NOISE_SHARE * quiet**2))
