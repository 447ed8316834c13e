"""What a release costs: DpEvents, accountants, noise calibration, mechanisms, sampling.

This subpackage knows nothing about groups, fairness or models.
"""

from .accountant import (
    PrivacySpent,
    calibrate_noise_multiplier,
    epsilon_spent,
    make_accountant,
    neighboring_relation,
)
from .delta import resolve_delta
from .events import (
    gaussian_release_event,
    joint_noise_multiplier,
    sampled_gaussian_steps_event,
)
from .random import RandomSource
from .sampling import PoissonSampler, ShuffledBatches

__all__ = [
    "PrivacySpent",
    "PoissonSampler",
    "RandomSource",
    "ShuffledBatches",
    "calibrate_noise_multiplier",
    "epsilon_spent",
    "gaussian_release_event",
    "joint_noise_multiplier",
    "make_accountant",
    "neighboring_relation",
    "resolve_delta",
    "sampled_gaussian_steps_event",
]
