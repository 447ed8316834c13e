"""RaCO-DP's private step for a logistic regression, without the generic engine (issue 39).

For a model that is one ``torch.nn.Linear`` layer (the default ``hidden_layer_sizes=()``),
sample ``i``'s gradient of the per-sample objective ``loss_i + <W[q(i)], sigma_tau(h_i)>``
is ``b_i a_i^T`` (and ``b_i`` for the bias), ``a_i`` the row of ``X`` and ``b_i`` the
objective's gradient in the logits (:meth:`RacoProblem.primal_output_gradients`). What the
engine's step computes (:func:`skfairdp.engine.step.release`, then
:func:`~skfairdp.engine.step.apply`) then follows from a few operations on the batch:
one forward product, the histogram of the hard predictions per part and its release
(:meth:`RacoProblem.privatize`), the per-part weights ``W`` from the released histogram,
the logit gradients, the per-sample norms ``|b_i| |(a_i, 1)|``, the clip factors and one
product ``(f * B)^T A`` for the clipped sum. :class:`LinearRacoStep` runs exactly those,
without the engine's per-step machinery (the forward hook, the per-sample gradient
objects, the release's dicts and closures).

It is the same mechanism, operation for operation: the same Poisson batches (the
sampler's draws), the same histogram rows (one-hot argmax, times the sample weight) and
its release by :meth:`RacoProblem.privatize` (Gaussian or Laplace, sensitivity
``max_weight``), the same per-sample clip ``C`` and norms, the gradient's release by
:func:`~skfairdp.privacy.mechanisms.gaussian_sum` (sensitivity ``C max_weight``), the two
draws from the same :class:`~skfairdp.privacy.RandomSource` in the engine's order
(histogram, then gradient) and their events recorded in one ``recorder.batch(q)`` block
per step, and the same apply half (``p -= lr * grad`` or the optimizer's step, the dual
ascent, the iterate track). Each number is computed by the engine's torch operations on
the same values (the inputs' norms ``|(a_i, 1)|`` once for all rows at the start of the
fit, by the engine's kernel: per row the same bits; the unweighted histogram's exact
integer counts by ``bincount``), so seeded fits are bit-identical to the engine's
(``tests/test_raco_linear_step.py``).

Whenever the batch is not the common case (an empty Poisson batch; a non-finite model
output) the step does nothing and returns False, before any noise is drawn or event
recorded, and the engine takes that step instead. A batch whose gradient norms are not
tame (not finite or above :data:`~skfairdp.engine.clipping.TAME_NORM`, known only after
the histogram's release, on which the gradient depends) is clipped by the engine's own
:func:`~skfairdp.engine.clipping.clipped_total` on the engine's per-sample gradient object
(its float64, scaled-row path). Options it does not cover take the engine for the whole fit
(:func:`linear_raco_step` returns None): ``epsilon=inf``, recorded diagnostics, a model
other than one Linear layer with a bias (or with forward hooks), data-parallel or
out-of-core fits, a device other than the CPU, a clip outside float32's range.
:data:`ENABLED` switches it off (tests compare both paths).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..engine.clipping import _FLOAT32_CLIP_RANGE, TAME_NORM, clip_factors, clipped_total
from ..engine.per_sample import FactoredLinearGradients
from ..engine.step import plain_sgd
from ..fermi.linear_step import single_linear
from ..privacy.collective import active_collective
from ..privacy.mechanisms import gaussian_sum
from .problem import RacoProblem

#: Whether RaCO-DP fits take :class:`LinearRacoStep` where it applies (tests switch it off).
ENABLED = True


def linear_raco_step(
    problem,
    *,
    module,
    X,
    tensors,
    sample_weight,
    sampler,
    optimizer,
    noise,
    random,
    recorder,
    record_diagnostics: bool = False,
) -> LinearRacoStep | None:
    """:class:`LinearRacoStep` for this fit when it applies, else None (the engine's step).

    Parameters are those of :func:`skfairdp.engine.train` (``tensors`` is
    ``RaCODPClassifier._per_row_tensors``' ``(codes,)``: label and part per row).
    """
    if not ENABLED or X is None or X.dim() != 2 or X.dtype != torch.float32:
        return None
    if X.device.type != "cpu" or type(problem) is not RacoProblem:
        return None
    if not noise.private or record_diagnostics or active_collective() is not None:
        return None
    if not getattr(sampler, "poisson", False) or problem.recorder is not recorder:
        return None
    if problem.histogram_noise is None or problem.expected_batch_size is None:
        return None
    low, high = _FLOAT32_CLIP_RANGE
    if not low <= noise.max_grad_norm <= high or len(tensors) != 1:
        return None
    layer = single_linear(module)
    if layer is None:
        return None
    return LinearRacoStep(
        problem, layer, X, tensors[0], sample_weight, sampler, optimizer, noise, random, recorder
    )


class LinearRacoStep:
    """One private RaCO-DP step on a batch of row indices (see the module docstring).

    ``step(idx)`` releases and applies the step on rows ``idx`` and returns True, or
    returns False having done nothing but :meth:`finish` (the engine's step is then
    taken). Call :meth:`start_epoch` at the start of each epoch (the optimizer's settings
    are read there) and :meth:`finish` at its end.
    """

    def __init__(
        self, problem, layer, X, codes, sample_weight, sampler, optimizer, noise, random, recorder
    ):  # fmt: skip
        self.problem, self.X, self.codes, self.optimizer = problem, X, codes, optimizer
        self.weight, self.bias = layer.weight, layer.bias
        # aliases without autograd (they see the in-place steps): the forward builds no graph
        self._weight_data, self._bias_data = layer.weight.detach(), layer.bias.detach()
        self.random, self.recorder = random, recorder
        self.q = float(sampler.sampling_rate)
        self.denominator = float(sampler.expected_batch_size)
        self.sample_weight = sample_weight
        # the engine's per-batch |(a_i, 1)| (FactoredLinearGradients._float32_norms), per row
        self.a_norms = torch.linalg.vector_norm(X, dim=1).square_().add_(1.0).sqrt_()
        self.clip = float(noise.max_grad_norm)
        self.sensitivity = self.clip * noise.max_weight
        self.z = noise.primal_multiplier
        self.sizes = [self.weight.numel(), self.bias.numel()]
        total = torch.empty(sum(self.sizes))
        weight_part = total[: self.sizes[0]].view(self.weight.shape)
        self._total = (total, weight_part, total[self.sizes[0] :])
        self._grads = None  # the last plain-SGD step's gradients, for the parameters' .grad
        self.sgd = False
        self.start_epoch()

    def start_epoch(self) -> None:
        """Read the optimizer's settings (a callback may have changed them)."""
        self.sgd = plain_sgd(self.optimizer)

    def step(self, idx: np.ndarray) -> bool:
        """Release and apply one step on rows ``idx`` (sorted); False: not taken."""
        if len(idx) == 0:
            self.finish()
            return False  # the engine's empty-batch step
        idx_t = torch.from_numpy(np.asarray(idx))
        Xb = self.X.index_select(0, idx_t)
        # the forward pass (nn.Linear: addmm); a non-finite output: the engine's step
        # (finite_outputs zeroes its row), decided before any draw
        outputs = torch.nn.functional.linear(Xb, self._weight_data, self._bias_data)
        if not math.isfinite(outputs.sum().item()):
            self.finish()
            return False
        y, part = self.codes.index_select(0, idx_t).unbind(dim=1)
        problem = self.problem
        weights = None if self.sample_weight is None else self.sample_weight.index_select(0, idx_t)
        weighted = {} if weights is None else {"weights": weights}
        with self.recorder.batch(self.q):  # the step's two releases: one batch event
            (y, per_part), statistics = problem.release_batch_statistics(
                outputs, y, part, **weighted
            )
            b = problem.primal_output_gradients(outputs, y, per_part)[0][0]
            total = self._clipped_total(Xb, self.a_norms.index_select(0, idx_t), b, weights)
            primal = gaussian_sum(total, self.sensitivity, self.z, self.random, self.recorder)[0]
        self._apply(primal, statistics)
        return True

    def _clipped_total(self, Xb, a_norms, b, weights) -> torch.Tensor:
        """``clipped_total`` of the batch's per-sample gradients ``b_i (a_i, 1)``: the
        engine's tame float32 path (float64 factors times the weights with sample weights),
        or, for norms that are not tame, the engine's own function on its gradient object."""
        norms = torch.linalg.vector_norm(b, dim=1).mul_(a_norms)
        if not norms.max().item() < TAME_NORM:  # the engine's float64, scaled-row path
            params = [self.weight, self.bias]
            grads = FactoredLinearGradients(params, [(*params, Xb, b)], len(b))
            return clipped_total(grads, self.clip, weights)
        wb_t = self._clipped_rows(b, norms, weights).t()
        total, total_w, total_b = self._total  # the sum, written in place (the same kernels)
        torch.mm(wb_t, Xb, out=total_w)
        torch.sum(wb_t, 1, out=total_b)
        return total

    def _clipped_rows(self, b, norms, weights) -> torch.Tensor:
        """Row ``i`` of ``b`` times its clip factor ``C / max(norm_i, C)`` (and weight): the
        engine's tame factors, float32 without sample weights, else float64 then float32.
        Row ``i``'s contribution to the sum is this row times ``(a_i, 1)``."""
        if weights is None:
            factors = clip_factors(norms, self.clip)
        else:
            factors = clip_factors(norms.double(), self.clip) * weights.to(torch.float64)
        return b * factors.to(torch.float32).unsqueeze(1)

    def _apply(self, primal: torch.Tensor, statistics: dict) -> None:
        """:func:`skfairdp.engine.step.apply` of the release ``(primal, statistics)``."""
        primal = primal / self.denominator
        weight, bias = self.weight, self.bias
        grad_w, grad_b = primal.split_with_sizes(self.sizes)
        grad_w = grad_w.view(weight.shape)
        if self.sgd:  # the parameters' .grad: set by finish() (the last step's, as the engine)
            lr = -self.optimizer.param_groups[0]["lr"]
            self._weight_data.add_(grad_w, alpha=lr)  # aliases: no autograd to skip
            self._bias_data.add_(grad_b, alpha=lr)
            self._grads = (grad_w, grad_b)
        else:
            weight.grad, bias.grad = grad_w, grad_b
            self.optimizer.step()
        self.problem.apply_statistics(statistics)

    def finish(self) -> None:
        """Leave the model as the engine's steps would have: the last plain-SGD step's
        gradient becomes the parameters' ``.grad``. Before the engine's step, at the end of
        each epoch and of training."""
        if self._grads is not None:
            self.weight.grad, self.bias.grad = self._grads
            self._grads = None
