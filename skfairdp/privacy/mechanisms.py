"""Noisy releases that state the event they executed, and the recorder that collects them.

Every noisy statistic a fit computes from private data goes through one of the
mechanisms here. Each adds the noise *and* returns the
:class:`dp_accounting.DpEvent` it just executed, and records that event in an
:class:`EventRecorder` when given one; a fit's ``dp_event_`` is what its
recorder collected while training ran (not a formula rebuilt afterwards), so a
release whose noise is skipped leaves no event behind, and a fit stopped early
is charged only for the releases it made.

A mechanism's ``sensitivity`` is the bound on one privacy unit's contribution
in the sense of the accountant's neighbouring relation: the L2 norm of one
record's contribution (add/remove one), or half the L2 distance between the
outputs on two neighbouring datasets (replace one). The noise is
``noise_multiplier * sensitivity`` (Gaussian std) or ``laplace_scale *
sensitivity`` (Laplace scale, L1); the event is ``GaussianDpEvent(noise_multiplier)``
or ``LaplaceDpEvent(laplace_scale)``.

In a data-parallel fit (:mod:`skfairdp.privacy.collective`) each mechanism sums the
ranks' exact local values with one all-reduce, the noise drawn once, on rank 0.

Under ``secure_mode=True`` the closed-form releases (:func:`noisy_count`,
:func:`noisy_histogram`, and :func:`gaussian_sum` with ``discrete=True``) add
integer noise to the statistic snapped onto a power-of-two grid
(:mod:`skfairdp.privacy.grid`), and record the same event as the continuous release
(the argument is in that module). DP-SGD's per-step gradient noise keeps the
continuous Gaussian (``discrete=False``; see doc/privacy.md). Seeded mode is
unchanged.

Releases computed on the same Poisson batch are one mechanism: the engine opens
:meth:`EventRecorder.batch` around each step, and the releases recorded inside
are combined by :func:`~skfairdp.privacy.events.batch_event` into one
Poisson-sampled event per step (an empty batch is still a step).
"""

from __future__ import annotations

import functools
import math

import dp_accounting
import numpy as np
import torch

from .collective import adds_noise, finish_grid_release, finish_release
from .events import SAME_BATCH, batch_event
from .grid import gaussian_release, laplace_release
from .random import RandomSource

__all__ = [
    "EventRecorder",
    "gaussian_sum",
    "laplace_noise",
    "noisy_count",
    "noisy_histogram",
]


class EventRecorder:
    """Collects the events of executed releases into one :class:`dp_accounting.DpEvent`.

    Built on :class:`dp_accounting.DpEventBuilder`, which merges consecutive
    identical events: ``T`` identical steps become ``SelfComposedDpEvent(step, T)``
    (a single step stays the bare step event).

    Releases recorded inside :meth:`batch` are one mechanism on one Poisson batch;
    when the block ends they are combined into one step event, both the sound way
    (``same_batch="joint"``) and as if independent (``"separate"``), and
    :meth:`build` returns either view. Releases recorded outside a batch (e.g. a
    one-off noisy histogram before training) are composed as they are.

    Parameters
    ----------
    same_batch : {"joint", "separate"}, default="joint"
        The view :meth:`build` returns by default (see
        :func:`~skfairdp.privacy.events.batch_event`).
    """

    def __init__(self, same_batch: str = "joint"):
        if same_batch not in SAME_BATCH:
            raise ValueError(f"same_batch must be one of {SAME_BATCH}, got {same_batch!r}")
        self.same_batch = same_batch
        self._builders = {view: dp_accounting.DpEventBuilder() for view in SAME_BATCH}
        self._batch: list[dp_accounting.DpEvent] | None = None
        # run of identical steps not yet composed into the builders (a step costs
        # a cache lookup and an identity check, not two builder compositions)
        self._run: tuple[dict, int] | None = None

    def record(self, event: dp_accounting.DpEvent, count: int = 1) -> None:
        """Record an executed release (``count`` times, outside a batch).

        Parameters
        ----------
        event : DpEvent
            What the release executed.
        count : int, default=1
            How many times it ran; inside :meth:`batch` a release runs once.
        """
        if not isinstance(event, dp_accounting.DpEvent):
            raise TypeError(f"event must be a dp_accounting.DpEvent, got {type(event).__name__}")
        if self._batch is not None:
            if count != 1:
                raise ValueError("a release on a batch is recorded once (count=1)")
            self._batch.append(event)
            return
        self._compose({view: event for view in SAME_BATCH}, int(count))

    def batch(self, sampling_rate: float) -> _Batch:
        """Block (``with recorder.batch(q):``) whose releases share one Poisson batch of rate ``q``.

        The step is recorded when the block ends, also when it ends by an
        exception (whatever was released is accounted). A block in which nothing
        was released records nothing.
        """
        return _Batch(self, float(sampling_rate))

    def _open_batch(self) -> None:
        if self._batch is not None:
            raise RuntimeError("EventRecorder.batch blocks do not nest")
        self._batch = []

    def _close_batch(self, sampling_rate: float) -> None:
        releases, self._batch = tuple(self._batch), None
        step = _step_events(releases, sampling_rate)
        if self._run is not None and self._run[0] is step:  # same cached step again
            self._run = (step, self._run[1] + 1)
        else:
            self._flush()
            self._run = (step, 1)

    def _compose(self, events: dict, count: int) -> None:
        self._flush()
        for view, builder in self._builders.items():
            builder.compose(events[view], count)

    def _flush(self) -> None:
        if self._run is not None:
            (events, count), self._run = self._run, None
            self._compose(events, count)

    def build(self, same_batch: str | None = None) -> dp_accounting.DpEvent:
        """The event of everything recorded so far.

        Parameters
        ----------
        same_batch : {"joint", "separate"} or None
            View of the releases made on one batch; ``None`` is the recorder's.

        Returns
        -------
        DpEvent
            ``NoOpDpEvent`` if nothing was recorded.
        """
        view = self.same_batch if same_batch is None else same_batch
        if view not in SAME_BATCH:
            raise ValueError(f"same_batch must be one of {SAME_BATCH}, got {view!r}")
        self._flush()
        return self._builders[view].build()


class _Batch:
    """Context manager of :meth:`EventRecorder.batch`."""

    __slots__ = ("recorder", "sampling_rate")

    def __init__(self, recorder: EventRecorder, sampling_rate: float):
        self.recorder = recorder
        self.sampling_rate = sampling_rate

    def __enter__(self) -> EventRecorder:
        self.recorder._open_batch()
        return self.recorder

    def __exit__(self, *exc) -> bool:
        self.recorder._close_batch(self.sampling_rate)
        return False


@functools.lru_cache(maxsize=256)
def _step_events(releases: tuple, sampling_rate: float) -> dict:
    """Both views of one batch's releases; cached, so identical steps give the same object."""
    return {view: batch_event(releases, sampling_rate, view) for view in SAME_BATCH}


def _check_multiplier(name: str, value: float) -> float:
    value = float(value)
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(
            f"{name} must be finite and >= 0 (a release without noise is not a "
            f"mechanism call), got {value}"
        )
    return value


def _check_sensitivity(sensitivity: float) -> float:
    sensitivity = float(sensitivity)
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity}")
    return sensitivity


@functools.lru_cache(maxsize=256)
def _gaussian_event(noise_multiplier: float) -> dp_accounting.DpEvent:
    if noise_multiplier == 0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.GaussianDpEvent(noise_multiplier)


def gaussian_sum(
    total: torch.Tensor,
    sensitivity: float,
    noise_multiplier: float,
    random: RandomSource,
    recorder: EventRecorder | None = None,
    *,
    discrete: bool = False,
) -> tuple[torch.Tensor, dp_accounting.DpEvent]:
    """The Gaussian mechanism on a sum: ``total + N(0, (noise_multiplier * sensitivity)^2 I)``.

    Parameters
    ----------
    total : Tensor
        The exact statistic (e.g. a sum of clipped per-sample gradients); not
        modified.
    sensitivity : float
        Bound on one unit's contribution to ``total`` (see the module docstring).
    noise_multiplier : float
        Noise std over ``sensitivity``. ``0`` draws zero noise (the random stream
        moves as it would) and executes a ``NonPrivateDpEvent``.
    random : RandomSource
        Where the noise comes from (seeded, or the OS CSPRNG).
    recorder : EventRecorder, optional
        Records the executed event.
    discrete : bool, default=False
        Under ``random.secure_mode``, release ``total`` snapped to a power-of-two grid
        plus discrete Gaussian noise (:func:`skfairdp.privacy.grid.gaussian_release`;
        same event) instead of floating-point Gaussian noise. For closed-form
        releases; ignored in seeded mode and for ``noise_multiplier=0``.

    Returns
    -------
    noisy : Tensor
        ``total`` plus noise, same shape, dtype and device.
    event : DpEvent
        ``GaussianDpEvent(noise_multiplier)``.
    """
    z = _check_multiplier("noise_multiplier", noise_multiplier)
    std = z * _check_sensitivity(sensitivity)
    event = _gaussian_event(z)
    if discrete and random.secure_mode and z > 0:
        noisy = gaussian_release(total.double(), float(sensitivity), z, add_noise=adds_noise())
        if recorder is not None:
            recorder.record(event)
        return finish_grid_release(noisy, total.dtype), event
    if not adds_noise():  # a data-parallel fit's rank > 0: its exact sum joins rank 0's noisy one
        if recorder is not None:
            recorder.record(event)
        return finish_release(total.clone()), event
    noise = random.normal(tuple(total.shape), std, dtype=total.dtype)
    if recorder is not None:
        recorder.record(event)
    return finish_release(total + noise.to(total.device)), event


def noisy_count(
    count: torch.Tensor,
    noise_multiplier: float,
    random: RandomSource,
    recorder: EventRecorder | None = None,
    *,
    sensitivity: float = 1.0,
) -> tuple[torch.Tensor, dp_accounting.DpEvent]:
    """A count (or a vector of counts one unit moves by at most 1 in L2) plus Gaussian noise.

    :func:`gaussian_sum` with sensitivity 1 (a weighted count whose weights are at
    most ``w``: ``sensitivity=w``); a 0-d ``count`` is returned 0-d. Under
    ``secure_mode`` the noise is the grid discrete Gaussian (``discrete=True``).

    Parameters
    ----------
    count : Tensor
        Exact count(s).
    noise_multiplier : float
        Noise std over ``sensitivity``.
    random : RandomSource
    recorder : EventRecorder, optional
    sensitivity : float, default=1.0
        One unit's largest contribution.

    Returns
    -------
    noisy : Tensor
    event : DpEvent
    """
    flat = count.reshape(-1)
    noisy, event = gaussian_sum(
        flat, sensitivity, noise_multiplier, random, recorder, discrete=True
    )
    return noisy.reshape(count.shape), event


def laplace_noise(
    random: RandomSource, shape, scale: float, device, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """i.i.d. Laplace(0, scale) noise from the source's uniforms (CSPRNG in secure mode).

    Floating-point noise: :func:`noisy_histogram` does not use it under
    ``secure_mode`` (it releases on a grid with integer noise instead).

    Parameters
    ----------
    random : RandomSource
    shape : tuple of int
    scale : float
        Laplace scale ``b``.
    device : torch.device or str
    dtype : torch.dtype, default=torch.float32

    Returns
    -------
    Tensor
        Noise of ``shape`` on ``device``.
    """
    size = int(np.prod(shape))
    u = random.uniform(size) - 0.5  # (-0.5, 0.5]
    noise = -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u).clip(max=0.5 - 1e-16))
    return torch.as_tensor(noise.reshape(shape), dtype=dtype, device=device)


def noisy_histogram(
    counts: torch.Tensor,
    random: RandomSource,
    *,
    noise_multiplier: float | None = None,
    laplace_scale: float | None = None,
    sensitivity: float = 1.0,
    recorder: EventRecorder | None = None,
) -> tuple[torch.Tensor, dp_accounting.DpEvent]:
    """A histogram plus Gaussian (``noise_multiplier``) or Laplace (``laplace_scale``) noise.

    Parameters
    ----------
    counts : Tensor
        Exact cell counts (or sums of per-row vectors of bounded norm).
    random : RandomSource
    noise_multiplier : float, optional
        Gaussian std over the L2 ``sensitivity``.
    laplace_scale : float, optional
        Laplace scale over the L1 ``sensitivity``. Give exactly one of the two.
    sensitivity : float, default=1.0
        One unit's contribution: L2 for Gaussian noise, L1 for Laplace noise (a
        row adding a probability vector to one cell row has both at most 1).
    recorder : EventRecorder, optional

    Returns
    -------
    noisy : Tensor
        Under ``secure_mode``: the grid releases of :mod:`skfairdp.privacy.grid`
        (discrete Gaussian, or floor-of-Laplace plus half a grid step).
    event : DpEvent
        ``GaussianDpEvent(noise_multiplier)`` or ``LaplaceDpEvent(laplace_scale)``.
    """
    if (noise_multiplier is None) == (laplace_scale is None):
        raise ValueError("give exactly one of noise_multiplier and laplace_scale")
    if noise_multiplier is not None:
        return gaussian_sum(counts, sensitivity, noise_multiplier, random, recorder, discrete=True)
    b = _check_multiplier("laplace_scale", laplace_scale)
    scale = b * _check_sensitivity(sensitivity)
    event = dp_accounting.LaplaceDpEvent(b) if b > 0 else dp_accounting.NonPrivateDpEvent()
    if random.secure_mode and b > 0:
        noisy = laplace_release(counts.double(), float(sensitivity), b, add_noise=adds_noise())
        if recorder is not None:
            recorder.record(event)
        return finish_grid_release(noisy, counts.dtype), event
    if not adds_noise():
        if recorder is not None:
            recorder.record(event)
        return finish_release(counts.clone()), event
    noise = laplace_noise(random, tuple(counts.shape), scale, counts.device, counts.dtype)
    if recorder is not None:
        recorder.record(event)
    return finish_release(counts + noise), event
