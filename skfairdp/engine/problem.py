"""What an estimator tells the engine: its per-sample objectives and its dual state."""

from __future__ import annotations

from typing import Protocol

import torch


class PrimalDualProblem(Protocol):
    """A per-sample min-max objective solved by noisy simultaneous descent-ascent.

    ``primal_objectives`` returns per-sample objective vectors and a dict of
    per-sample diagnostics (summed per step, averaged per epoch into the
    history); the engine takes per-sample gradients of each objective. Those
    flagged True in ``private_primal`` are clipped to ``max_grad_norm`` and
    noised; the others are public (they do not depend on what the privacy unit
    protects) and are summed exactly.

    A problem may also define ``primal_output_gradients(outputs, *batch)``,
    returning the gradients of the same objectives in the model outputs and the
    same diagnostics; for Linear-layer models the engine then skips autograd
    through the objective (see :class:`~skfairdp.engine.per_sample.PerSampleGradients`).
    Tests check it against autograd of ``primal_objectives``.

    ``dual_contributions`` returns ``(public_sum, private_per_sample)`` for the
    dual (ascent) variable, or ``None`` if there is no dual update this step; the
    private rows are clipped to ``dual_clip`` and noised by the engine, and the
    averaged result goes to ``dual_step``.

    Optional hook ``private_sum(per_sample, X, *batch) -> (total, sensitivity)``:
    when a problem defines it, private training calls it instead of flat
    clipping for each private objective's per-sample gradients (``per_sample``
    is ``None`` for an empty Poisson batch, so that releases made inside the
    hook, e.g. a noisy count, still happen every step). ``total`` is the
    processed per-sample sum (a fresh tensor: the engine updates it in place) and
    ``sensitivity`` the L2 bound on one sample's contribution to it; the engine
    adds ``N(0, (primal_multiplier * sensitivity)^2)``. Problems without the hook
    get ``clipped_sum`` at ``max_grad_norm``.

    Optional hook ``release_batch_statistics(outputs, *batch) -> batch``: called
    every step (empty Poisson batches included) with the detached model outputs
    of the batch, before the primal objectives are formed; it may release noisy
    statistics of the batch and returns the per-sample tensors the objectives
    then receive (e.g. RaCO-DP's per-row constraint weights from its noisy
    histogram).

    Releases made inside hooks (``private_sum``, ``release_batch_statistics``) go
    through :mod:`skfairdp.privacy.mechanisms` with ``recorder=self.recorder``:
    a problem that releases anything has a ``recorder`` attribute (an
    :class:`~skfairdp.privacy.EventRecorder`), which the engine adopts, so those
    releases join the step's batch event together with the engine's own noisy
    gradient sums.
    """

    private_primal: tuple[bool, ...]
    dual_clip: float

    def prepare_batch(self, *batch: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Per-sample tensors for this step (e.g. coefficients from the current dual state)."""
        ...

    def primal_objectives(self, outputs: torch.Tensor, *batch: torch.Tensor): ...

    def dual_contributions(self, outputs: torch.Tensor, *batch: torch.Tensor): ...

    def dual_step(self, gradient: torch.Tensor) -> None: ...
