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
objects, the release's dicts and closures), with the batch's elementwise arithmetic in
NumPy (a NumPy call on a few hundred numbers costs a fraction of a torch call).

It is the same mechanism: the same Poisson batches (the sampler's draws), the same
histogram rows (one-hot argmax, or ``softmax(tau h)``, times the sample weight) and its
release by :meth:`RacoProblem.privatize` (Gaussian or Laplace, sensitivity
``max_weight``), the same per-sample clip ``C`` and norms, the gradient's release by
:func:`~skfairdp.privacy.mechanisms.gaussian_sum` (sensitivity ``C max_weight``), the two
draws from the same :class:`~skfairdp.privacy.RandomSource` in the engine's order
(histogram, then gradient) and their events recorded in one ``recorder.batch(q)`` block
per step, and the same apply half (``p -= lr * grad`` or the optimizer's step, the dual
ascent, the iterate track). The data side is computed by the engine's operations on the
same values: the forward product, log-softmax, softmax, norms, products and bias sums by
the same torch kernels; the elementwise arithmetic (subtractions, products, the clip
factors ``C / max(norm, C)``, float32, or float64 with sample weights) by NumPy, whose
float32 and float64 operations are the same correctly rounded IEEE operations; the inputs'
norms ``|(a_i, 1)|`` once for all rows at the start of the fit (the engine's kernel, per
row the same bits); the unweighted hard histogram by ``bincount`` (exact integer counts in
any order); a sum of two logits' terms as one addition (three or more: torch's sum).

What the released histogram becomes (the rates, constraint values, per-part weights, dual
steps, tolerance margins, and the dual ascent) is post-processing of released values. By
default (:data:`HOST_STATISTICS`) :class:`~skfairdp.raco.host_dual.HostDual` computes it in
NumPy float64, keeping the multipliers and running counts in float64 between steps: the
same formulas, rounded differently, so the multipliers, the per-part weights and through
them the model differ from the engine's in float32's last bits (the releases, their noise
and their events do not change: ``dp_event_`` and ``privacy_spent_`` are the engine's).
With :data:`HOST_STATISTICS` off the problem's own torch float32 post-processing runs and
seeded fits are bit-identical to the engine's (``tests/test_raco_linear_step.py``
compares parameters, multipliers, ``dp_event_`` and ``privacy_spent_`` both ways).

Whenever the batch is not the common case (an empty Poisson batch; a non-finite model
output) the step does nothing and returns False, before any noise is drawn or event
recorded, and the engine takes that step instead (the dual state kept on the host is the
problem's before it, and is read back after it). A batch whose gradient norms are not
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

import numpy as np
import torch

from ..engine.clipping import _FLOAT32_CLIP_RANGE, TAME_NORM, clipped_total
from ..engine.linear_step import LinearStep, declines_fit, single_linear
from ..engine.per_sample import FactoredLinearGradients, row_norms
from ..privacy.mechanisms import gaussian_sum
from .host_dual import HostDual
from .problem import RacoProblem, hard_predictions, soft_histogram

#: Whether RaCO-DP fits take :class:`LinearRacoStep` where it applies (tests switch it off).
ENABLED = True
#: Whether its post-processing of the released histogram runs in float64 on the host
#: (:class:`~skfairdp.raco.host_dual.HostDual`); off: the problem's torch float32 operations,
#: bit-identical to the engine's step (tests compare both).
HOST_STATISTICS = True


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
    if not ENABLED or declines_fit(X, noise, sampler, record_diagnostics):
        return None
    if type(problem) is not RacoProblem or problem.recorder is not recorder:
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


class LinearRacoStep(LinearStep):
    """One private RaCO-DP step on a batch of row indices (see the module docstring).

    ``step(idx)`` releases and applies the step on rows ``idx`` and returns True, or
    returns False having done nothing but :meth:`finish` (the engine's step is then
    taken). Call :meth:`start_epoch` at the start of each epoch (the optimizer's settings
    are read there) and :meth:`finish` at its end.
    """

    def __init__(
        self, problem, layer, X, codes, sample_weight, sampler, optimizer, noise, random, recorder
    ):  # fmt: skip
        self._bind(problem, layer, X, sampler, optimizer, random, recorder)
        self.sample_weight = sample_weight
        y, part = codes.unbind(dim=1)
        self.y, self.part = y.cpu().numpy(), part.cpu().numpy()
        self.n_parts, self.n_classes = problem.n_parts, problem.A.shape[2]
        self.onehot = np.eye(self.n_classes, dtype=np.float32)
        self.hard = problem.dual_rates == "hard"
        self.tau, self.tau32 = problem.tau, np.float32(problem.tau)
        self.host = HostDual(problem) if HOST_STATISTICS else None
        # the engine's per-batch |(a_i, 1)| (FactoredLinearGradients._float32_norms), per row
        a_norms = torch.linalg.vector_norm(X, dim=1).square_().add_(1.0).sqrt_()
        self.a_norms = a_norms.cpu().numpy()
        self.clip = float(noise.max_grad_norm)
        self.clip32 = np.float32(self.clip)  # the float32 factors' C (clip_factors' rounding)
        self.sensitivity = self.clip * noise.max_weight
        self.z = noise.primal_multiplier
        self.start_epoch()

    def step(self, idx: np.ndarray) -> bool:
        """Release and apply one step on rows ``idx`` (sorted); False: not taken."""
        if len(idx) == 0:
            self.finish()
            return False  # the engine's empty-batch step
        idx = np.asarray(idx)
        idx_t = torch.from_numpy(idx)
        Xb = self.X.index_select(0, idx_t)
        # the forward pass (nn.Linear: addmm); a non-finite output: the engine's step
        # (finite_outputs zeroes its row), decided before any draw
        outputs = torch.nn.functional.linear(Xb, self._weight_data, self._bias_data)
        if not np.isfinite(outputs.numpy()).all():
            self.finish()
            return False
        y, part = self.y.take(idx), self.part.take(idx)
        problem, host = self.problem, self.host
        weights = None if self.sample_weight is None else self.sample_weight.index_select(0, idx_t)
        # the step's two releases: one batch event; NumPy as quiet as torch on the non-finite
        # norms the tame check sends to the engine's path (|b| 0 times |(a, 1)| inf: NaN)
        with self.recorder.batch(self.q), np.errstate(invalid="ignore", over="ignore"):
            if host is None:  # the problem's own (torch float32) post-processing
                weighted = {} if weights is None else {"weights": weights}
                y_t, part_t = torch.from_numpy(y), torch.from_numpy(part)
                (_, per_row), statistics = problem.release_batch_statistics(
                    outputs, y_t, part_t, **weighted
                )
                per_row = per_row.numpy()
            else:  # the same release, its post-processing in float64 on the host
                if host.stored is not problem.state:  # an engine step moved the dual
                    host.load(problem)
                histogram = self._histogram(outputs, part, weights)  # exact: only released
                released = problem.privatize(histogram)
                W, statistics = host.statistics(released.numpy().astype(np.float64))
                per_row = W.astype(np.float32).take(part, axis=0)
            b = self._gradients(outputs, y, per_row)
            total = self._clipped_total(Xb, self.a_norms.take(idx), b, weights)
            primal = gaussian_sum(total, self.sensitivity, self.z, self.random, self.recorder)[0]
        self._apply(primal, statistics)
        return True

    def _histogram(self, outputs, part, weights) -> torch.Tensor:
        """The ``(Q, K)`` histogram ``release_batch_statistics`` releases: row ``i`` adds its
        one-hot argmax (or ``softmax(tau h_i)``), times its weight, to part ``part_i``.
        Unweighted hard rows: exact integer counts (``bincount``, any order)."""
        Q, K = self.n_parts, self.n_classes
        if self.hard and weights is None:
            O = outputs.numpy()  # argmax (the first maximum: O_1 > O_0 for two classes)
            top = (O[:, 1] > O[:, 0]) if K == 2 else O.argmax(axis=1)
            column = part * K + top
            counts = np.bincount(column, minlength=Q * K).astype(np.float32)
            return torch.from_numpy(counts.reshape(Q, K))
        if self.hard:
            rows = hard_predictions(outputs)
        else:
            rows = torch.softmax(outputs * self.tau, dim=1)
        if weights is not None:
            rows = rows * weights.to(rows.dtype).unsqueeze(1)
        return soft_histogram(rows, torch.from_numpy(part), Q)

    def _gradients(self, outputs, y, per_row) -> np.ndarray:
        """``primal_output_gradients``: ``softmax(h) - e_y + tau s * (w - <w, s>)``, ``s =
        softmax(tau h)``, by torch's softmax kernels and NumPy float32 arithmetic (the same
        IEEE operations, in the same order, as the problem's torch expression)."""
        P = torch.log_softmax(outputs, dim=1).exp_().numpy()
        tempered = outputs if self.tau == 1.0 else self.tau * outputs  # 1 * h = h exactly
        soft = torch.softmax(tempered, dim=1).numpy()
        grad = P - self.onehot.take(y, axis=0)  # = P.scatter_add(1, y, -1): the same subtraction
        if self.n_classes == 2:  # a sum of two terms: one rounding, as torch's
            products = per_row * soft
            mean_w = (products[:, 0] + products[:, 1])[:, None]
        else:
            products = torch.from_numpy(per_row) * torch.from_numpy(soft)
            mean_w = products.sum(dim=1, keepdim=True).numpy()
        shift = per_row - mean_w
        grad += shift * soft if self.tau == 1.0 else (self.tau32 * soft) * shift
        return grad

    def _clipped_total(self, Xb, a_norms, b, weights) -> torch.Tensor:
        """``clipped_total`` of the batch's per-sample gradients ``b_i (a_i, 1)``: the
        engine's tame float32 path (float64 factors times the weights with sample weights),
        or, for norms that are not tame, the engine's own function on its gradient object."""
        b_t = torch.from_numpy(b)
        norms = row_norms(b_t).numpy()
        norms *= a_norms  # float32 |b_i| |(a_i, 1)|: the engine's product
        if not norms.max() < TAME_NORM:  # the engine's float64, scaled-row path (NaN: False)
            params = [self.weight, self.bias]
            grads = FactoredLinearGradients(params, [(*params, Xb, b_t)], len(b))
            return clipped_total(grads, self.clip, weights)
        wb_t = torch.from_numpy(self._clipped_rows(b, norms, weights)).t()
        total, total_w, total_b = self._total  # the sum, written in place (the same kernels)
        torch.mm(wb_t, Xb, out=total_w)
        torch.sum(wb_t, 1, out=total_b)
        return total

    def _clipped_rows(self, b, norms, weights) -> np.ndarray:
        """Row ``i`` of ``b`` times its clip factor ``C / max(norm_i, C)`` (and weight), as
        ``clip_factors``: float32 without sample weights, else float64 times the weight,
        then float32 (the same correctly rounded IEEE operations in NumPy). Row ``i``'s
        contribution to the sum is this row times ``(a_i, 1)``."""
        if weights is None:
            factors = self.clip32 / np.maximum(norms, self.clip32)
        else:
            C = self.clip
            norms64 = norms.astype(np.float64)
            factors = (C / np.maximum(norms64, C) * weights.numpy().astype(np.float64)).astype(
                np.float32
            )
        return b * factors[:, None]

    def _apply(self, primal: torch.Tensor, statistics: dict | tuple) -> None:
        """:func:`skfairdp.engine.step.apply` of the release ``(primal, statistics)``:
        the problem's statistics dict, or :meth:`HostDual.statistics`' tuple."""
        self._primal_step(primal)
        if self.host is None:
            self.problem.apply_statistics(statistics)
            return
        self.host.update(*statistics)
        if self.problem.iterates is not None:
            self.problem.iterates.step()

    def finish(self) -> None:
        """Leave the model as the engine's steps would have: the last plain-SGD step's
        gradient becomes the parameters' ``.grad``. Before the engine's step, at the end of
        each epoch and of training."""
        self._restore_grads()
        if self.host is not None:  # the dual's float64 steps become the problem's state
            self.host.store(self.problem)
