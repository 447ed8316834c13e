"""DP-FERMI's private step for a logistic regression, without the generic engine (issue 39).

For a model that is one ``torch.nn.Linear`` layer (the default ``hidden_layer_sizes=()``),
sample ``i``'s gradient of any objective of the logits is ``b_i a_i^T`` (and ``b_i`` for
the bias), with ``a_i`` the row of ``X`` and ``b_i`` the objective's gradient in the
logits, which :meth:`ErmiProblem.primal_output_gradients` writes by hand. Everything the
engine's step computes (:func:`skfairdp.engine.step.release`, then
:func:`~skfairdp.engine.step.apply`) then follows from a few operations on the batch:
one forward product, the logit gradients, the per-sample norms ``|b_i| |(a_i, 1)|``, the
clip factors, one product ``(sum_k f_k * B_k)^T A`` for the clipped sum, and the hard
histogram of the dual release. :class:`LinearErmiStep` runs exactly those, without the
engine's per-step machinery (the forward hook, the per-sample gradient objects, the
hooks' dicts), with the batch's elementwise arithmetic in NumPy on the host (a NumPy call
on a few hundred numbers costs a fraction of a torch call) and the best response's running
mean kept in Python floats between steps.

It is the same mechanism, operation for operation: the same Poisson batches (the
sampler's draws), the same per-sample clip ``C_k`` and norms, the same noise draws from
the same :class:`~skfairdp.privacy.RandomSource` in the same order (the gradient's, then
the histogram's, each by :func:`~skfairdp.privacy.mechanisms.gaussian_sum`), the same
events recorded in one ``recorder.batch(q)`` block per step,
and the same apply half (``p -= lr * grad``, the iterate average,
:meth:`ErmiProblem.best_response_floats`). Each number is computed by the engine's
operations on the same values: the norms, log-softmax, products and bias sums by the same
torch kernels; the elementwise arithmetic (subtractions, products, divisions, maxima, the
float64 clip factors of the penalty and of sample weights) by NumPy, whose float32 and
float64 operations are the same correctly rounded IEEE operations; the inputs' norms
``|(a_i, 1)|`` once for all rows at the start of the fit (the engine's kernel, per row the
same bits). Three rewrites give the same numbers: the loss gradient ``F - e_y`` is a
subtraction of a one-hot row (the engine's ``scatter_add`` of ``-1``: the same operation
on each entry), ``psi + 1`` of two logits is one addition (three or more: torch's sum), and
the unweighted hard histogram is a ``bincount`` (exact integer counts in any order).
Seeded fits are therefore bit-identical to the engine's (``tests/test_linear_step.py``
compares parameters, W, ``dp_event_`` and ``privacy_spent_``).

Whenever the batch is not the common case (an empty Poisson batch; a non-finite output,
or one whose log-probability overflows; a norm that is not finite or above
:data:`~skfairdp.engine.clipping.TAME_NORM`) the step does nothing and returns False,
before any noise is drawn or event recorded, and the engine takes that step instead (its
float64, scaled-row path). Options it does not cover take the engine for the whole fit
(:func:`linear_ermi_step` returns None): ``privacy_unit="sensitive"``,
``fairness_weight=0``, ``dual_rates="soft"``, a float ``lr_dual``, ``epsilon=inf``,
recorded diagnostics, a model other than one Linear layer with a bias (or with forward
hooks), data-parallel or out-of-core fits, a device other than the CPU. :data:`ENABLED`
switches it off (tests compare both paths).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..engine.clipping import _FLOAT32_CLIP_RANGE, TAME_NORM
from ..engine.linear_step import LinearStep, declines_fit, single_linear
from ..engine.per_sample import row_norms
from ..privacy.mechanisms import gaussian_sum

#: Whether DP-FERMI fits take :class:`LinearErmiStep` where it applies (tests switch it off).
ENABLED = True


def linear_ermi_step(
    problem,
    *,
    module: nn.Module,
    X: torch.Tensor,
    tensors: tuple,
    sample_weight: torch.Tensor | None,
    sampler,
    optimizer: torch.optim.Optimizer,
    noise,
    random,
    recorder,
    record_diagnostics: bool = False,
) -> LinearErmiStep | None:
    """:class:`LinearErmiStep` for this fit when it applies, else None (the engine's step).

    Parameters are those of :func:`skfairdp.engine.train` (``tensors`` is
    ``DPFermiClassifier._per_row_tensors``' ``(codes, weights)``).
    """
    if not ENABLED or declines_fit(X, noise, sampler, record_diagnostics):
        return None
    if problem.sensitive_unit or problem.lam <= 0 or not problem.best_response:
        return None
    if not problem.hard_dual or (problem.loss_scale, problem.penalty_scale) != (1.0, 1.0):
        return None
    layer = single_linear(module)
    if layer is None or layer.out_features != problem.W.shape[2]:
        return None
    low, high = _FLOAT32_CLIP_RANGE
    clips = (
        [problem.max_grad_norm * share for share in problem.split]
        if problem.split is not None
        else [noise.max_grad_norm]
    )
    if not all(low <= c <= high for c in clips) or not math.isfinite(noise.max_grad_norm):
        return None
    if len(tensors) != 2 or not (1.0 <= problem.dual_clip < math.inf):
        return None
    return LinearErmiStep(
        problem, layer, X, tensors, sample_weight, sampler, optimizer, noise, random, recorder
    )


class LinearErmiStep(LinearStep):
    """One private DP-FERMI step on a batch of row indices (see the module docstring).

    ``step(idx)`` releases and applies the step on rows ``idx`` and returns True, or
    returns False having done nothing but :meth:`finish` (the engine's step is then
    taken). Call :meth:`start_epoch` at the start of each epoch (the optimizer's settings
    are read there) and :meth:`finish` at its end.
    """

    def __init__(
        self, problem, layer, X, tensors, sample_weight, sampler, optimizer, noise, random, recorder
    ):  # fmt: skip
        self._bind(problem, layer, X, sampler, optimizer, random, recorder)
        n_blocks, k, l = problem.W.shape
        self.l, self.n_cells = l, n_blocks * k * l
        codes, weights = tensors
        y, s, block = codes.unbind(dim=1)
        cell = block * k + s if n_blocks > 1 else s
        # one float32 table, one row per data row (one gather per step: a scattered gather
        # costs its rows' memory latency): one-hot label (l), psi weight, the balanced
        # factor f (ones for "split", unused for "joint"), histogram activity (dual
        # weight != 0), |(a, 1)|, and the cell (an integer below 2^24: exact)
        onehot = torch.zeros(len(y), l, dtype=torch.float32).scatter_(1, y.unsqueeze(1), 1.0)
        split = problem.split is not None
        if split and problem.balanced:
            factor = weights[:, 2]
        else:
            factor = torch.ones_like(weights[:, 0])
        active = (weights[:, 1] != 0).to(torch.float32)
        # the engine's per-batch |(a_i, 1)| (FactoredLinearGradients._float32_norms), per row:
        # the same kernel on the same row gives the same bits
        a_norms = torch.linalg.vector_norm(X, dim=1).square_().add_(1.0).sqrt_()
        columns = [weights[:, 0], factor, active, a_norms, cell.to(torch.float32)]
        self.table = torch.cat([onehot, torch.stack(columns, dim=1)], dim=1)
        self.sample_weight = None if sample_weight is None else sample_weight.cpu().numpy()
        self.split = [problem.max_grad_norm * share for share in problem.split] if split else None
        self.clip = noise.max_grad_norm
        # the float32 clips of the float32 factor paths (C / max(norm, C) in float32)
        clips32 = self.split[0] if split else self.clip
        self.clip32 = np.float32(clips32)
        self._buffer = None
        # the dual state between steps (see _apply): the running mean [*H, V, t], the last
        # best response's answers (W, own, shared, combined) and the combined table
        self._n_dual = problem.W.numel()
        self._running = self._answers = self._combined = None
        # the engine's sensitivities: C (clip_plan's or max_grad_norm) and the unit rows' 1,
        # each times the weight bound, and its noise multipliers
        clip = problem.max_grad_norm if split else noise.max_grad_norm
        self.sensitivity = clip * noise.max_weight
        self.dual_sensitivity = problem.dual_clip * noise.max_weight
        self.z, self.z_dual = noise.primal_multiplier, noise.dual_multiplier
        self.start_epoch()

    def step(self, idx: np.ndarray) -> bool:
        """Release and apply one step on rows ``idx`` (sorted); False: not taken."""
        if len(idx) == 0:
            self.finish()
            return False  # the engine's empty-batch step
        idx_t = torch.from_numpy(np.asarray(idx))
        Xb = self.X.index_select(0, idx_t)
        table = self.table.index_select(0, idx_t).numpy()
        # the forward pass (nn.Linear: addmm) and the softmax of primal_output_gradients
        outputs = torch.nn.functional.linear(Xb, self._weight_data, self._bias_data)
        log_p = torch.log_softmax(outputs, dim=1)
        F = log_p.exp().numpy()
        l = self.l
        cell = table[:, l + 4].astype(np.int64)
        # primal_output_gradients' elementwise operations, in NumPy float32 (the same IEEE
        # operations on the same values as torch's kernels; see the module docstring)
        c = (self._combined if self._running is not None else self._dual_tables())[cell]
        if l == 2:  # a sum of two terms: one rounding, as torch's
            psi_plus_one = (F * c).sum(axis=1)
        else:
            psi_plus_one = (torch.from_numpy(F) * torch.from_numpy(c)).sum(dim=1).numpy()
        grads = self._rows(len(idx))
        # = F.scatter_add(1, y, -1): the same subtraction
        d_loss = np.subtract(F, table[:, :l], out=grads[0])
        d_private = table[:, l : l + 1] * F * (c - psi_plus_one[:, None])
        if self.split is not None:
            np.divide(d_private, table[:, l + 1 : l + 2], out=grads[1])
            parts = grads
        else:
            parts = grads[:1]
            np.add(d_loss, d_private, out=parts[0])
        # per-sample norms |b_ki| |(a_i, 1)| by torch's kernel; tame (finite, below
        # TAME_NORM) or the engine's step
        norms = row_norms(torch.from_numpy(parts), dim=2)
        norms = norms.mul_(torch.from_numpy(table[:, l + 3]))
        # one check: every log-probability finite (so every output: a NaN or infinite one
        # makes the sum NaN or -inf, as does one so far from the others that its
        # log-probability overflows; no log-probability is above 0) and every norm tame
        # (finite, below TAME_NORM); else the engine's step (which zeroes non-finite rows)
        if not float(norms.max()) + 0.0 * float(log_p.sum()) < TAME_NORM:  # torch: no warnings
            self.finish()
            return False
        weights = None if self.sample_weight is None else self.sample_weight[idx]
        wb_t = torch.from_numpy(self._clipped_rows(parts, norms.numpy(), table, weights)).t()
        total, total_w, total_b = self._total  # the sum, written in place (the same kernels)
        torch.mm(wb_t, Xb, out=total_w)
        torch.sum(wb_t, 1, out=total_b)
        histogram = self._histogram(cell, F, table[:, l + 2], weights)
        # the releases, by the mechanism the engine's step calls: one batch event
        recorder, random = self.recorder, self.random
        with recorder.batch(self.q):
            primal = gaussian_sum(total, self.sensitivity, self.z, random, recorder)[0]
            dual = gaussian_sum(histogram, self.dual_sensitivity, self.z_dual, random, recorder)[0]
        self._apply(primal, dual)
        return True

    def _rows(self, batch: int) -> np.ndarray:
        """A ``(2, batch, l)`` float32 buffer for the objectives' logit gradients."""
        if self._buffer is None or self._buffer.shape[1] < batch:
            self._buffer = np.empty((2, max(batch, 64), self.l), dtype=np.float32)
        return self._buffer[:, :batch]

    def _clipped_rows(self, parts, norms, table, weights) -> np.ndarray:
        """``sum_k f_k * B_k``: the rows whose product with the inputs is the clipped sum,
        with ``engine.fused.clipped_totals``' (split) or ``clipped_total``'s (joint) factors
        and roundings (float32 factors without sample weights, else float64 ones)."""
        l = self.l
        if self.split is not None:
            C0, C1 = self.split
            if weights is None:
                f0 = self.clip32 / np.maximum(norms[0], self.clip32)
            else:
                f0 = (C0 / np.maximum(norms[0].astype(np.float64), C0) * weights).astype(np.float32)
            f = table[:, l + 1]
            if weights is not None:
                f = f * weights.astype(np.float32)
            f1 = C1 / np.maximum(norms[1].astype(np.float64), C1) * f.astype(np.float64)
            rows = parts[0] * f0[:, None]
            rows += parts[1] * f1.astype(np.float32)[:, None]
            return rows
        C = self.clip
        if weights is None:
            factors = self.clip32 / np.maximum(norms[0], self.clip32)
        else:
            factors = (C / np.maximum(norms[0].astype(np.float64), C) * weights).astype(np.float32)
        return parts[0] * factors[:, None]

    def _histogram(self, cell, F, active, weights) -> torch.Tensor:
        """The hard histogram (``UnitRows.unclipped_total``): row i adds its weight (1) at
        column ``cell_i * l + argmax F_i`` when active."""
        column = cell * self.l + F.argmax(axis=1)
        if weights is None:  # exact counts, whatever the order
            counts = np.bincount(column, weights=active, minlength=self.n_cells)
            return torch.from_numpy(counts.astype(np.float32))
        values = torch.from_numpy(active * weights.astype(np.float32))
        total = values.new_zeros(self.n_cells)
        return total.index_add_(0, torch.from_numpy(column), values)

    def _apply(self, primal: torch.Tensor, dual: torch.Tensor) -> None:
        """:func:`skfairdp.engine.step.apply` of the release ``(primal, dual)``.

        The dual step is ``ErmiProblem.dual_step``'s: the iterate average's step, then the
        best response in Python floats (:meth:`ErmiProblem.best_response_floats`), whose
        result stays in lists here (the next step reads the ``combined`` table from
        them) until :meth:`finish` makes it the problem's state."""
        self._primal_step(primal)
        problem = self.problem
        if problem.average is not None:
            problem.average.step()
        running, n = self._running, self._n_dual
        gradient = (dual / self.denominator).tolist()
        running, answers = problem.best_response_floats(
            running[:n], running[n], running[n + 1], gradient
        )
        self._running, self._answers = running, answers
        self._combined = np.array(answers[3], dtype=np.float32).reshape(-1, self.l)

    def _dual_tables(self) -> np.ndarray:
        """The ``combined`` psi table (float32, one row per cell) of the current W."""
        if self._running is None:  # the problem's state (at the start, after the engine's step)
            state = self.problem.state
            self._running = [*state["H"].tolist(), float(state["V"]), float(state["t"])]
            self._combined = self.problem._psi_tables()[2].cpu().numpy()
        return self._combined

    def finish(self) -> None:
        """Leave the problem and the model as the engine's steps would have: the steps' dual
        state becomes the problem's (``state``, psi tables) and the last plain-SGD step's
        gradient the parameters' ``.grad``. Before the engine's step, at the end of each
        epoch and of training."""
        if self._answers is not None:
            self.problem._set_best_response(self._running, self._answers)
        self._running = self._answers = None
        self._restore_grads()
