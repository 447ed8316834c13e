"""The private training loop: Poisson batch -> per-sample gradients -> clip -> noise -> step.

Every noisy release of a private step goes through :mod:`skfairdp.privacy.mechanisms`
inside the recorder's :meth:`~skfairdp.privacy.EventRecorder.batch` block, so the
fit's event is what the steps executed.
"""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from skorch.history import History
from tqdm.auto import tqdm

from ..privacy.collective import from_first_rank
from ..privacy.mechanisms import EventRecorder
from ..privacy.random import RandomSource
from .batches import row_batches, take_rows
from .per_sample import PerSampleGradients
from .problem import PrimalDualProblem
from .step import apply, release


@dataclass
class NoiseConfig:
    """Clipping and noise of one private step; ``None`` fields mean non-private.

    ``primal_multiplier`` and ``dual_multiplier`` are the noise standard
    deviations divided by the respective clipping norms.
    """

    max_grad_norm: float | None = None
    primal_multiplier: float | None = None
    dual_multiplier: float | None = None
    #: Bound on the sample weights (1 without weights): clipped contributions are
    #: multiplied by weights up to it, so every sensitivity is scaled by it.
    max_weight: float = 1.0

    @property
    def private(self) -> bool:
        return self.max_grad_norm is not None


@dataclass
class TrainingResult:
    """What the loop executed: steps taken, history, and the recorded releases.

    ``recorder`` holds the events of every executed release (its ``build()`` is
    the fit's event); ``epoch_events[i]`` is what had been recorded by the end of
    epoch ``i + 1``'s steps (for the per-epoch epsilon of the history).
    """

    steps: int = 0
    epochs: int = 0
    history: History = field(default_factory=History)
    stopped_early: bool = False
    recorder: EventRecorder | None = None
    epoch_events: list = field(default_factory=list)


def train(
    module: torch.nn.Module,
    X: torch.Tensor | None,
    batch_tensors: tuple[torch.Tensor, ...],
    problem: PrimalDualProblem,
    *,
    sampler,
    optimizer: torch.optim.Optimizer,
    noise: NoiseConfig,
    random: RandomSource,
    max_epochs: int,
    iterate: str = "last",
    callbacks=(),
    net=None,
    verbose: int = 0,
    per_sample_strategy: str = "auto",
    record_diagnostics: bool = False,
    recorder: EventRecorder | None = None,
    sample_weight: torch.Tensor | None = None,
    fast_step=None,
) -> TrainingResult:
    """Run noisy simultaneous gradient descent-ascent.

    Per step: draw a batch, one forward pass, per-sample gradients of the
    problem's objectives, clip the private ones, sum, add Gaussian noise, divide
    by the expected batch size (private) or the batch size (non-private), take an
    optimizer step on the module and a dual step on the problem.

    Parameters
    ----------
    module : torch.nn.Module
        Model being trained (in place).
    X : Tensor (n, ...) or None
        All training inputs, on the training device; ``None`` when the sampler
        reads each batch's rows itself (out of core, :mod:`.batches`).
    batch_tensors : tuple of Tensor
        Per-row tensors (labels, groups, ...) indexed alongside ``X``.
    problem : PrimalDualProblem
        The estimator's objective and dual state.
    sampler : PoissonSampler, ShuffledBatches or BucketedSampler
        Batches of row indices (or of ``(indices, rows)``, see :mod:`.batches`).
    optimizer : torch.optim.Optimizer
        Applied to the privatised gradient.
    noise : NoiseConfig
        Clipping norm and noise multipliers (all None for non-private training).
    random : RandomSource
        Noise source.
    max_epochs : int
        Number of (expected) passes.
    iterate : {"last", "random"}
        Return the last iterate or one drawn uniformly from steps 1..T.
    callbacks : sequence
        skorch-style callbacks (``on_train_begin``, ``on_epoch_begin``,
        ``on_epoch_end``, ``on_train_end``), called with ``net``. Raising
        ``KeyboardInterrupt`` (as skorch's ``EarlyStopping`` does) stops training;
        only executed steps are accounted.
    net : object
        Passed to callbacks as ``net``.
    verbose : int
        0 silent, 1 a progress bar over epochs, 2 also one over each epoch's steps.
    per_sample_strategy : str
        See :class:`PerSampleGradients`.
    record_diagnostics : bool
        Average the objective's per-sample diagnostics (e.g. the exact training
        loss) per epoch into the history. They are computed on raw training
        batches and are NOT private, so the default keeps them out: the history
        then holds only ``epoch``, ``steps`` and ``dur``.
    recorder : EventRecorder, optional
        Where the executed releases are recorded: each private step is one
        :meth:`~skfairdp.privacy.EventRecorder.batch` of rate
        ``sampler.sampling_rate`` for a Poisson sampler (``sampler.poisson``),
        else 1 (no amplification); empty batches included. Defaults to the
        problem's ``recorder`` attribute when it has one (problems that release
        statistics inside their hooks record there), else a new recorder.
    sample_weight : Tensor of shape (n,), optional
        Per-row weights, in ``[0, noise.max_weight]`` when private: each step's
        contributions are multiplied by them after clipping (see
        :func:`~skfairdp.engine.step.release`).
    fast_step : callable, optional
        A problem's dedicated step (e.g. :mod:`skfairdp.fermi.linear_step`):
        ``fast_step(problem, module=, X=, tensors=, sample_weight=, sampler=, optimizer=,
        noise=, random=, recorder=, record_diagnostics=)`` returns None (the engine's
        step for the whole fit) or an object with ``start_epoch()``, ``step(idx) ->
        bool`` and ``finish()``. ``step`` releases (inside ``recorder.batch``) and
        applies the same step as ``release`` and ``apply`` on rows ``idx``, or returns
        False having drawn and recorded nothing, with the problem's state up to date;
        the engine's step is then taken on those rows. ``finish()`` (at the end of each
        epoch, and of training) leaves the problem and the module as the engine's steps
        would have. Only for in-memory ``X``.
    """
    recorder = _resolve_recorder(recorder, problem)
    device = X.device if X is not None else next(module.parameters()).device
    m = sampler.expected_batch_size
    # only Poisson sampling amplifies privacy; any other sampler is recorded as q = 1
    q = sampler.sampling_rate if getattr(sampler, "poisson", False) else 1.0
    total_steps = max_epochs * sampler.steps_per_epoch
    snapshot_step = (
        int(np.ceil(from_first_rank(random.uniform(1)[0]) * total_steps))
        if iterate == "random"
        else None
    )
    snapshot = None
    result = TrainingResult(recorder=recorder)
    history = result.history
    if net is not None:
        net.history_ = history  # skorch callbacks write to net.history during training
    for cb in callbacks:
        getattr(cb, "initialize", lambda: None)()
        getattr(cb, "on_train_begin", lambda *a, **k: None)(net)
    fast = None
    if fast_step is not None and X is not None:
        fast = fast_step(
            problem,
            module=module,
            X=X,
            tensors=batch_tensors,
            sample_weight=sample_weight,
            sampler=sampler,
            optimizer=optimizer,
            noise=noise,
            random=random,
            recorder=recorder,
            record_diagnostics=record_diagnostics,
        )
    # after the fast step's check of the module's hooks: this registers the engine's own
    grads_of = PerSampleGradients(module, per_sample_strategy)

    def engine_step(rows) -> dict:
        batch = problem.prepare_batch(*rows.tensors)
        # a private step's releases share its Poisson batch: one recorded mechanism
        with recorder.batch(q) if noise.private else contextlib.nullcontext():
            released = release(
                module, grads_of, rows.X, batch, problem, noise, random, recorder, m, rows.weights
            )
        apply(released, problem, grads_of, optimizer)
        return released.diagnostics

    epochs = tqdm(range(max_epochs), disable=verbose < 1, desc="epochs", leave=False)
    fit_start = time.perf_counter()
    try:
        for epoch in epochs:
            history.new_epoch()
            history.record("epoch", epoch + 1)
            for cb in callbacks:
                getattr(cb, "on_epoch_begin", lambda *a, **k: None)(net)
            start = time.perf_counter()
            # per-sample diagnostics are kept and summed once per epoch (no ops per step)
            diagnostics: dict[str, list[torch.Tensor]] = {}
            n_seen = 0
            if fast is not None:
                fast.start_epoch()
            batches = tqdm(
                sampler.epoch()
                if fast is not None
                else row_batches(sampler, X, batch_tensors, sample_weight, device),
                total=sampler.steps_per_epoch,
                disable=verbose < 2,
                leave=False,
            )
            for rows in batches:
                if fast is None:
                    metrics = engine_step(rows)
                    size = rows.size
                else:  # rows: the indices
                    size = len(rows)
                    metrics = {}
                    if not fast.step(rows):  # the engine's step on these rows
                        taken = take_rows(rows, X, batch_tensors, sample_weight, device)
                        metrics = engine_step(taken)
                if record_diagnostics:
                    for key, value in metrics.items():
                        diagnostics.setdefault(key, []).append(value)
                n_seen += size
                result.steps += 1
                if result.steps == TIMED_STEPS and total_steps > 2 * TIMED_STEPS:
                    announce_duration(time.perf_counter() - fit_start, total_steps, verbose)
                if result.steps == snapshot_step:
                    snapshot = copy.deepcopy(module.state_dict())
            if fast is not None:
                fast.finish()  # the problem and model as the engine's steps leave them
            result.epoch_events.append(recorder.build())
            check_finite_parameters(module, epoch + 1)
            totals = {key: float(torch.cat(values).sum()) for key, values in diagnostics.items()}
            for key, value in totals.items():
                history.record(key, value / max(n_seen, 1))
            history.record("steps", result.steps)
            history.record("dur", time.perf_counter() - start)
            result.epochs = epoch + 1
            for cb in callbacks:
                getattr(cb, "on_epoch_end", lambda *a, **k: None)(net)
            if verbose >= 1 and "loss" in totals:
                epochs.set_postfix(loss=f"{float(totals['loss']) / max(n_seen, 1):.4f}")
    except KeyboardInterrupt:
        result.stopped_early = True
    finally:
        if fast is not None:
            fast.finish()  # the fast step's state is the problem's
        grads_of.close()
        getattr(sampler, "close", lambda: None)()  # an out-of-core sampler's prefetched pass
    for cb in callbacks:
        getattr(cb, "on_train_end", lambda *a, **k: None)(net)
    if iterate == "random" and snapshot is not None:
        module.load_state_dict(snapshot)
    return result


#: steps timed before a fit announces its expected duration
TIMED_STEPS = 20
#: a fit expected to take longer says so: printed under ``verbose >= 1``
ANNOUNCE_SECONDS = 30.0
#: ... and a :class:`LongFitWarning` at any ``verbose``
WARN_SECONDS = 300.0


class LongFitWarning(UserWarning):
    """A fit whose first steps say it will take more than :data:`WARN_SECONDS`."""


def expected_duration_line(elapsed: float, total_steps: int) -> str:
    """``"expect about ..."``: the first :data:`TIMED_STEPS` steps' time, scaled to the fit."""
    total = elapsed / TIMED_STEPS * total_steps
    when = f"{total:.0f} s" if total < 120 else f"{total / 60:.0f} min"
    return (
        f"this fit takes {total_steps:,} steps: expect about {when} "
        f"(its first {TIMED_STEPS} steps took {elapsed:.2f} s); set max_epochs or "
        "batch_size to change the number of steps"
    )


def announce_duration(elapsed: float, total_steps: int, verbose: int) -> None:
    """Print (``verbose``) or warn of a long fit, from the time of its first steps."""
    total = elapsed / TIMED_STEPS * total_steps
    if total > WARN_SECONDS:
        warnings.warn(expected_duration_line(elapsed, total_steps), LongFitWarning, stacklevel=3)
    elif verbose >= 1 and total > ANNOUNCE_SECONDS:
        print(expected_duration_line(elapsed, total_steps), flush=True)


def check_finite_parameters(module: torch.nn.Module, epoch: int) -> None:
    """Raise if training made a parameter NaN or infinite (never return such a model).

    Per-sample contributions are bounded whatever the data (see
    :mod:`skfairdp.engine.clipping`), so this is divergence of the optimiser, not one
    row's doing; the check reads only the (released) parameters.
    """
    bad = [name for name, p in module.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        raise FloatingPointError(
            f"training diverged: parameters {bad} became NaN or infinite by epoch {epoch}. "
            "The per-sample contributions are clipped, so the step itself is too large: "
            "lower lr (or the fairness weight / dual step size), or raise max_grad_norm "
            "only together with a smaller lr."
        )


def _resolve_recorder(recorder, problem) -> EventRecorder:
    own = getattr(problem, "recorder", None)
    if recorder is None:
        return own if own is not None else EventRecorder()
    if own is not None and own is not recorder:
        raise ValueError(
            "the problem records its releases in another EventRecorder than the one passed "
            "to train(): its releases would be missing from the fit's event"
        )
    return recorder
