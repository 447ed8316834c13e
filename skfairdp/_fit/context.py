"""What one private fit knows before training, and the noise it plans.

:class:`FitContext` is built by the fit template
(:class:`~skfairdp._private_fit.PrivateFitMixin`) and handed to every hook of an
estimator; :class:`NoisePlan` is what calibration returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import dp_accounting
import numpy as np
import torch

from ..privacy import EventRecorder, PoissonSampler, RandomSource, ShuffledBatches
from ..privacy.events import compose

__all__ = ["FitContext", "NoisePlan"]


@dataclass
class FitContext:
    """What one fit knows before training; the template hands it to the estimator's hooks.

    Attributes
    ----------
    X : ndarray of float32, shape (n_samples, n_features)
    y : ndarray of int64, shape (n_samples,)
        Class indices into ``classes_`` (a regressor's float32 targets).
    groups : ndarray of int64, shape (n_samples,)
        Group codes from ``_encode_groups`` (zeros when the estimator uses none).
    sample_weight : ndarray of float64, shape (n_samples,), or None
        Validated sample weights (``None``: every row weighs 1).
    max_weight : float
        Bound on the weights that every sensitivity is scaled by:
        ``max_sample_weight`` when the fit has sample weights, else 1.
    n_classes : int
        Outputs of the module (the number of classes; 1 for a regressor).
    private : bool
        ``epsilon < inf``.
    delta : float
        Resolved target delta (0 for non-private fits).
    device : torch.device
    random : RandomSource
        The fit's only source of sampling, noise and initialisation randomness.
    sampler : PoissonSampler or ShuffledBatches
        Poisson batches of rate ``sampling_rate`` (private) or shuffled epochs.
    planned_steps : int
        ``max_epochs * sampler.steps_per_epoch``.
    recorder : EventRecorder
        Where every executed release records its event; ``dp_event_`` is its
        ``build()``.
    outside_steps_event : DpEvent
        The planned event of the releases outside the training steps: those made
        before training (returned by ``_upfront_releases``, already executed) and
        those planned after it (``_post_training_event``); calibration plans with it.
    released : dict
        The estimator's own values from ``_upfront_releases`` (e.g. DP-FERMI's
        released group priors), for its later hooks.
    n_total : int or None
        Rows of all ranks in a data-parallel fit (:mod:`skfairdp.distributed`), where
        ``X``, ``y``, ``groups`` and ``sample_weight`` hold this rank's rows only;
        None in one process.
    """

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    sample_weight: np.ndarray | None
    max_weight: float
    n_classes: int
    private: bool
    delta: float
    device: torch.device
    random: RandomSource
    sampler: PoissonSampler | ShuffledBatches
    planned_steps: int
    recorder: EventRecorder
    outside_steps_event: dp_accounting.DpEvent = field(default_factory=dp_accounting.NoOpDpEvent)
    released: dict = field(default_factory=dict)
    n_total: int | None = None

    @property
    def n_samples(self) -> int:
        """Rows of the fit (of all ranks in a data-parallel fit)."""
        return self.X.shape[0] if self.n_total is None else self.n_total

    @property
    def sampling_rate(self) -> float:
        """Poisson rate ``q = min(1, batch_size / n)``."""
        return self.sampler.sampling_rate

    @property
    def mechanisms(self) -> dict:
        """What a problem releasing statistics in its hooks needs.

        ``random`` (its noise), ``recorder`` (where it records) and ``max_weight``
        (the bound on one row's weight, which scales its statistics' sensitivity).
        """
        return {"random": self.random, "recorder": self.recorder, "max_weight": self.max_weight}

    def with_steps(self, steps_event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
        """The fit's planned event: the releases outside the steps, then ``steps_event``."""
        return compose([self.outside_steps_event, steps_event])


@dataclass(frozen=True)
class NoisePlan:
    """The noise of one fit, as calibrated (``inf``: that release adds no noise / does not run).

    Attributes
    ----------
    primal_multiplier : float
        Gradient-noise std over the clipping norm (``noise_multiplier_``).
    dual_multiplier : float
        Noise multiplier of the dual rows the engine releases (DP-FERMI's W).
    statistics_multiplier : float
        Noise multiplier (or Laplace scale) of the batch statistics a problem
        releases in its hooks (a count, a histogram).
    effective_multiplier : float
        Joint Gaussian multiplier of one step's releases
        (``effective_noise_multiplier_``).
    steps : int or None
        Steps to run when fewer than planned (a fixed noise multiplier capped by
        the budget); ``None`` runs every planned step.
    """

    primal_multiplier: float = math.inf
    dual_multiplier: float = math.inf
    statistics_multiplier: float = math.inf
    effective_multiplier: float = math.inf
    steps: int | None = None
