"""skfairdp: differentially private and fair estimators with a scikit-learn API."""

__version__ = "0.1.0.dev0"

from .fermi import DPFermiClassifier  # noqa: E402

__all__ = ["DPFermiClassifier", "__version__"]
