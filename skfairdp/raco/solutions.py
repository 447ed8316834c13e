"""The model RaCO-DP returns, made from the iterates of its run (``solution``).

A min-max run does not end at a point that meets the constraints (see
:mod:`skfairdp.engine.iterates`); the returned model is read from the tail of the
run (the last ``TAIL_FRACTION`` of the steps):

- ``"last"``: the last iterate (the paper's);
- ``"average"``: the running mean of the parameters over the tail;
- ``"mixture"``: the randomised classifier over ``N_ITERATES`` evenly spaced copies,
  whose ``predict_proba`` is how often its iterates predict each class;
- ``"best"``: among ``N_CANDIDATES`` copies and the average, the one a noisy
  evaluation on the training set picks: one Gaussian release that takes
  ``SELECTION_SHARE`` of the budget's zCDP rho, recorded and accounted.

All but ``"best"`` are post-processing of the training run: free.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import torch

from .._fit.base import row_chunks
from .._fit.budget import reserved_zcdp_noise_multiplier
from .._fit.context import FitContext
from ..engine.iterates import IterateTrack, iterate_outputs, load_flat_parameters
from ..fairness.rates import RateProgram
from ..privacy import noisy_histogram

__all__ = [
    "N_CANDIDATES",
    "N_ITERATES",
    "SELECTION_SHARE",
    "SOLUTIONS",
    "TAIL_FRACTION",
    "cell_prediction_counts",
    "iterate_track",
    "mixture_proba",
    "select_best",
    "store_solution",
]

TAIL_FRACTION = 0.5
N_ITERATES = 20
N_CANDIDATES = 7
# "best": the candidates' evaluation gets this share of the budget's zCDP rho.
SELECTION_SHARE = 0.1
SOLUTIONS = ("last", "average", "mixture", "best")
# Rows per forward pass of the iterates.


def iterate_track(
    solution: str, module: torch.nn.Module, steps: int, tail_fraction: float, eta: float
) -> IterateTrack | None:
    """What a run of ``steps`` steps keeps of its iterates for ``solution`` (``"last"``: none)."""
    if solution == "last":
        return None
    copies = {"best": N_CANDIDATES, "mixture": N_ITERATES}.get(solution, 0)
    return IterateTrack(module, steps, copies, tail_fraction, eta)


def store_solution(estimator, track: IterateTrack | None, ctx: FitContext) -> None:
    """Make ``estimator.module_`` (or the mixture) from the run's iterates, as ``solution`` asks.

    Sets ``solution_``, ``iterates_`` and ``iterate_weights_`` (``None`` unless a
    mixture) and, for ``"best"``, ``selected_iterate_`` and ``selection_statistics_``.
    """
    est = estimator
    est.solution_ = est.solution
    est.iterates_ = None
    est.iterate_weights_ = None
    if est.solution == "last":  # module_ holds the last iterate
        return
    track.finish()
    if est.solution == "average":
        load_flat_parameters(est.module_, track.average)
    elif est.solution == "mixture":
        est.iterates_ = track.stacked
        est.iterate_weights_ = np.full(len(est.iterates_), 1.0 / len(est.iterates_))
    else:  # "best"
        candidates = np.concatenate([track.stacked, track.average.cpu().numpy()[None]])
        index, est.selection_statistics_ = select_best(
            est.module_, candidates, ctx, est.rate_program_, est.epsilon
        )
        est.selected_iterate_ = int(index)
        load_flat_parameters(est.module_, candidates[index])


def select_best(
    module: torch.nn.Module,
    candidates: np.ndarray,
    ctx: FitContext,
    program: RateProgram,
    epsilon: float,
) -> tuple[int, dict]:
    """Index of the best candidate by a noisy evaluation on the training set.

    One Gaussian release: for each of the ``K`` candidates, the histogram of
    its hard predictions over (group, true label) cells. A row moves one count
    of each of the ``K`` histograms by (its weight) 1: L2 sensitivity
    ``sqrt(K)`` for the stacked vector, noise ``z_sel * sqrt(K)`` per count.
    From the noisy counts (post-processing): each candidate's error and
    constraint values; the candidate with the smallest error among those whose
    largest violation is at most 0 wins (the smallest violation if none is).
    """
    n_classes = ctx.n_classes
    H = cell_prediction_counts(module, candidates, ctx, program.part_of_cell.size)
    if ctx.private:
        noisy, _ = noisy_histogram(
            torch.from_numpy(H),
            ctx.random,
            noise_multiplier=reserved_zcdp_noise_multiplier(SELECTION_SHARE, epsilon, ctx.delta),
            sensitivity=math.sqrt(len(candidates)) * ctx.max_weight,
            recorder=ctx.recorder,
        )
        H = noisy.numpy()
    # --- post-processing of the released counts ---
    H = H.reshape(len(candidates), -1, n_classes, n_classes)  # (K, group, label, pred)
    labels = np.arange(n_classes)
    total = np.maximum(H.sum(axis=(1, 2, 3)), 1.0)
    wrong = H.sum(axis=1)[:, labels[:, None] != labels[None, :]].sum(axis=1)
    error = wrong / total
    parts = np.zeros((len(candidates), program.n_parts, n_classes))
    for g in range(H.shape[1]):
        for c in range(n_classes):
            parts[:, program.part_of_cell[g, c]] += H[:, g, c]
    violation = np.array(
        [np.max(program.constraint_values(p, min_count=1.0) - program.bounds) for p in parts]
    )
    feasible = violation <= 0
    score = np.where(feasible, error, np.inf)
    index = int(np.argmin(score)) if feasible.any() else int(np.argmin(violation))
    return index, {"error": error, "violation": violation}


def cell_prediction_counts(
    module: torch.nn.Module, candidates: np.ndarray, ctx: FitContext, n_cells: int
) -> np.ndarray:
    """``(K, cells, classes)`` weighted counts of each candidate's predictions per cell.

    A cell is a (group, true label) pair. The noiseless counts: they must only
    reach the releases of :func:`select_best` and
    :func:`~skfairdp.raco.enforcement.check_tolerance`.
    """
    n_classes = ctx.n_classes
    cells = ctx.groups * n_classes + ctx.y
    weight = np.broadcast_to(1.0 if ctx.sample_weight is None else ctx.sample_weight, cells.shape)
    counts = []
    for rows, pred in _iterate_predictions(module, candidates, ctx.X, ctx.device):
        offsets = cells[rows] * n_classes
        counts.append(
            np.stack(
                [
                    np.bincount(offsets + p, weights=weight[rows], minlength=n_cells * n_classes)
                    for p in pred.cpu().numpy()
                ]
            )
        )
    return np.sum(counts, axis=0).reshape(len(candidates), n_cells, n_classes)


def mixture_proba(
    module: torch.nn.Module, iterates: np.ndarray, weights: np.ndarray, X, n_classes: int
) -> np.ndarray:
    """``sum_t w_t onehot(argmax h_t(x))``: how often the mixture predicts each class.

    ``X`` is validated (dense, or sparse and densified chunk by chunk).
    """
    device = next(module.parameters()).device
    w = torch.as_tensor(weights, dtype=torch.float64, device=device)
    chunks = [
        torch.einsum("t,tnk->nk", w, torch.nn.functional.one_hot(pred, n_classes).double())
        .cpu()
        .numpy()
        for _, pred in _iterate_predictions(module, iterates, X, device)
    ]
    if not chunks:
        return np.empty((0, n_classes))
    return np.clip(np.concatenate(chunks), 0.0, 1.0)


def _iterate_predictions(
    module: torch.nn.Module, iterates: np.ndarray, X, device: torch.device
) -> Iterator[tuple[slice, torch.Tensor]]:
    """Per chunk of rows of ``X``: its rows and each iterate's predicted classes ``(K, chunk)``."""
    for rows, xb in row_chunks(X, device):
        yield rows, iterate_outputs(module, iterates, xb).argmax(dim=2)
