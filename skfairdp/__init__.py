"""skfairdp: differentially private and fair estimators with a scikit-learn API.

The estimators are imported on first use (PEP 562), so ``import skfairdp`` and the
``skfairdp`` command's ``--help`` do not load torch or scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0.dev0"

# public name -> submodule that defines it
_EXPORTS = {
    "CGOOReduction": "reductions",
    "DPFermiClassifier": "fermi",
    "DPSGDClassifier": "dpsgd",
    "DPSGDFClassifier": "baselines",
    "DPSGDRegressor": "dpsgd",
    "FairLensClassifier": "baselines",
    "FederatedDPFermiClassifier": "federated",
    "GlobalScalingDPClassifier": "dpsgd",
    "RaCODPClassifier": "raco",
}

__all__ = [
    "CGOOReduction",
    "DPFermiClassifier",
    "DPSGDClassifier",
    "DPSGDFClassifier",
    "DPSGDRegressor",
    "FairLensClassifier",
    "FederatedDPFermiClassifier",
    "GlobalScalingDPClassifier",
    "RaCODPClassifier",
    "__version__",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .baselines import DPSGDFClassifier, FairLensClassifier
    from .dpsgd import DPSGDClassifier, DPSGDRegressor, GlobalScalingDPClassifier
    from .federated import FederatedDPFermiClassifier
    from .fermi import DPFermiClassifier
    from .raco import RaCODPClassifier
    from .reductions import CGOOReduction


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
