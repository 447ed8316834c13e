"""The names and defaults of the ``skfairdp`` command (standard library only)."""

from __future__ import annotations

DEFAULT_OUTPUT = "skfairdp-demo"
DEFAULT_BENCHMARK_OUTPUT = "skfairdp-benchmarks"
PLOT_NAME = "demo_adult_tradeoff.png"
TABLE_NAME = "demo_adult_tradeoff.csv"

#: ``skfairdp demo --estimators`` names -> (class name, what it targets).
DEMO_ESTIMATORS: dict[str, tuple[str, str]] = {
    "dpfermi": ("DPFermiClassifier", "demographic parity (penalty λ)"),
    "raco": ("RaCODPClassifier", "demographic parity ≤ γ (constraint)"),
    "cgoo": ("CGOOReduction", "demographic parity ≤ bound (constraint)"),
    "global-scaling": ("GlobalScalingDPClassifier", "equal privacy cost across groups"),
    "dpsgd": ("DPSGDClassifier", "none (plain DP-SGD)"),
    "dpsgdf": ("DPSGDFClassifier", "equal privacy cost across groups (baseline)"),
    "fairlens": ("FairLensClassifier", "equal privacy cost (baseline; ε not a guarantee)"),
}
DEFAULT_DEMO_ESTIMATORS = ("dpfermi", "raco", "cgoo", "global-scaling", "dpsgd")
DEFAULT_WEIGHTS = (0.0, 1.0, 4.0, 16.0, 64.0)
DEFAULT_TOLERANCES = (0.02, 0.05, 0.1)
DEFAULT_BOUNDS = (0.02,)
