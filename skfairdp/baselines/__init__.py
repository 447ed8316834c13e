"""The comparison methods of Esipova et al. (ICLR 2023), on the same engine.

:class:`DPSGDFClassifier` (DPSGD-F, Xu et al. 2021) and
:class:`FairLensClassifier` (Tran et al. 2021a) exist so that the paper's
tables can be reproduced with one library; both need group labels at fit.
Plain DP-SGD is ``GlobalScalingDPClassifier(variant="clip")``. Both are DP-SGD
variants built on :mod:`skfairdp.dpsgd.core`; :mod:`.checks` holds what they
refuse or warn about.
"""

from .checks import UnboundedSensitivityWarning
from .dpsgdf import DPSGDFClassifier
from .fairlens import FairLensClassifier

__all__ = ["DPSGDFClassifier", "FairLensClassifier", "UnboundedSensitivityWarning"]
