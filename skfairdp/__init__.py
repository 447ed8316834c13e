"""skfairdp: differentially private and fair estimators with a scikit-learn API."""

__version__ = "0.1.0.dev0"

from .baselines import DPSGDFClassifier, FairLensClassifier  # noqa: E402
from .fermi import DPFermiClassifier  # noqa: E402
from .global_scaling import GlobalScalingDPClassifier  # noqa: E402
from .linear_regression import DPSGDRegressor  # noqa: E402
from .logistic import DPSGDClassifier  # noqa: E402
from .raco import RaCODPClassifier  # noqa: E402
from .reductions import CGOOReduction  # noqa: E402

__all__ = [
    "CGOOReduction",
    "DPFermiClassifier",
    "DPSGDClassifier",
    "DPSGDFClassifier",
    "DPSGDRegressor",
    "FairLensClassifier",
    "GlobalScalingDPClassifier",
    "RaCODPClassifier",
    "__version__",
]
