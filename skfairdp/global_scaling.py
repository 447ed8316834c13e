"""Thin re-export: ``skfairdp.global_scaling`` is the path doc/global_scaling.md uses."""

from .dpsgd.global_scaling import (
    VARIANTS,
    GlobalScalingDPClassifier,
    GlobalScalingProblem,
    scaling_weights,
    update_z,
)

__all__ = [
    "GlobalScalingDPClassifier",
    "GlobalScalingProblem",
    "VARIANTS",
    "scaling_weights",
    "update_z",
]
