"""What an estimator tells the engine: its per-sample objectives and its dual state."""

from __future__ import annotations

from typing import Protocol

import torch


class PrimalDualProblem(Protocol):
    """A per-sample min-max objective solved by noisy simultaneous descent-ascent.

    A step is :func:`~skfairdp.engine.step.release` (on the batch: everything that
    reads data) then :func:`~skfairdp.engine.step.apply` (no data: the model and
    the dual state move). The hooks below say which half calls them.

    **State.** ``state`` is a dict of tensors (DP-FERMI's ``W``, RaCO's
    ``lambda``, Global Scaling's ``z``; empty when there is none). It is a value:
    ``dual_step`` and ``apply_statistics`` *replace* it and never modify a tensor
    in it, so it can be copied, sent to silos and compared bit for bit.

    **Release half.**

    - ``prepare_batch(*batch)``: per-sample tensors for this step (e.g. ERMI
      coefficients from the current ``state``).
    - ``primal_objectives(outputs, *batch) -> ((o_1, ..., o_K), diagnostics)``:
      per-sample objectives; the engine takes per-sample gradients of each.
      Those flagged True in ``private_primal`` are clipped to ``max_grad_norm``
      and noised; the others are public (they do not depend on what the privacy
      unit protects) and are summed exactly. Diagnostics are raw (not private)
      and only recorded on request.
    - optional ``primal_output_gradients(outputs, *batch)``: the same objectives
      differentiated by hand in the model outputs; Linear-layer models then skip
      autograd through the objective. Tests check it against autograd.
    - optional ``release_batch_statistics(outputs, *batch) -> (batch, statistics)``:
      called every step (empty Poisson batches included) with the detached model
      outputs; releases noisy statistics of the batch (e.g. RaCO-DP's histogram)
      and returns the per-sample tensors the objectives then receive and the
      released statistics (a dict of tensors) for ``apply_statistics``.
    - optional ``private_sum(per_sample, X, *batch) -> (total, sensitivity[, statistics])``:
      replaces flat clipping for each private objective (``per_sample`` is None
      on an empty batch, so releases inside still happen). ``total`` is the
      processed per-sample sum (a fresh tensor), ``sensitivity`` the L2 bound on
      one sample's contribution; the engine adds ``N(0, (z * sensitivity)^2)``.
    - optional ``clip_plan(X, *batch) -> (((C_1, w_1), ..., (C_K, w_K)), sensitivity)``:
      for a problem whose objectives are all private and each flatly clipped at its
      own norm ``C_k`` then multiplied by row weights ``w_k`` (None for none), what
      ``private_sum`` would do objective by objective; the engine then sums them at
      once (:func:`~skfairdp.engine.fused.clipped_totals`: one product for a Linear
      model, same clip per sample). ``private_sum`` still serves the empty batch.
    - optional ``dual_contributions(outputs, *batch) -> (public_sum, private_rows) | None``:
      the dual (ascent) gradient; private rows are clipped to ``dual_clip`` and
      noised by the engine.

    **Apply half.**

    - ``dual_step(mean)``: the averaged dual release; replaces ``state``.
    - ``apply_statistics(statistics)``: the step's released statistics (RaCO's
      rate values, Global Scaling's clip fraction); replaces ``state``.

    **Sample weights.** When the fit has sample weights, the engine multiplies each
    per-sample contribution by its weight after clipping (flat clipping, dual rows,
    public sums) and scales every sensitivity by ``noise.max_weight``; the hooks
    ``release_batch_statistics``, ``private_sum``, ``clip_plan`` and ``dual_contributions`` then
    also receive the batch's weights as the keyword ``weights`` (never passed
    without sample weights) and apply them to what they compute: a weighted
    statistic whose rows are bounded by ``b`` has sensitivity ``b * max_weight``,
    and ``private_sum`` returns the sensitivity of a unit-weight row (the engine
    multiplies it by ``max_weight``).

    Releases made inside hooks go through :mod:`skfairdp.privacy.mechanisms`
    with ``recorder=self.recorder``: a problem that releases anything has a
    ``recorder`` attribute, which the engine adopts, so those releases join the
    step's batch event together with the engine's noisy gradient sums.
    """

    private_primal: tuple[bool, ...]
    dual_clip: float
    state: dict

    def prepare_batch(self, *batch: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Per-sample tensors for this step (e.g. coefficients from the current state)."""
        ...

    def primal_objectives(self, outputs: torch.Tensor, *batch: torch.Tensor): ...
