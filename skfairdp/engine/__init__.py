"""How a private step is taken: per-sample gradients, clipping, noise, descent-ascent."""

from .clipping import clipped_sum, clipped_total
from .loop import NoiseConfig, TrainingResult, train
from .per_sample import PerSampleGradients, check_per_sample_compatible
from .problem import PrimalDualProblem

__all__ = [
    "NoiseConfig",
    "PerSampleGradients",
    "PrimalDualProblem",
    "TrainingResult",
    "check_per_sample_compatible",
    "clipped_sum",
    "clipped_total",
    "train",
]
