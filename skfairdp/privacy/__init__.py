"""What a release costs: mechanisms and their DpEvents, accountants, calibration, sampling.

This subpackage knows nothing about groups, fairness or models.
"""

from .accountant import (
    PrivacySpent,
    epsilon_spent,
    make_accountant,
    neighboring_relation,
)
from .calibration import calibrate_noise_multiplier, max_steps_within
from .delta import resolve_delta
from .events import (
    batch_event,
    gaussian_release_event,
    joint_noise_multiplier,
    sampled_gaussian_steps_event,
)
from .mechanisms import EventRecorder, gaussian_sum, noisy_count, noisy_histogram
from .random import RandomSource
from .sampling import PoissonSampler, ShuffledBatches
from .spent import UnaccountedStepWarning, spent, spent_event, unaccounted_steps

__all__ = [
    "EventRecorder",
    "PrivacySpent",
    "PoissonSampler",
    "RandomSource",
    "ShuffledBatches",
    "UnaccountedStepWarning",
    "batch_event",
    "calibrate_noise_multiplier",
    "epsilon_spent",
    "gaussian_release_event",
    "gaussian_sum",
    "joint_noise_multiplier",
    "make_accountant",
    "max_steps_within",
    "neighboring_relation",
    "noisy_count",
    "noisy_histogram",
    "resolve_delta",
    "sampled_gaussian_steps_event",
    "spent",
    "spent_event",
    "unaccounted_steps",
]
