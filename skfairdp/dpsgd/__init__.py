"""The DP-SGD family: plain DP-SGD (classifier, regressor) and DPSGD-Global-Adapt.

- :mod:`.core`: the family's base class, cross-entropy objective and group-less ``fit``.
- :mod:`.same_batch`: a gradient and a count released on one batch, and their calibration.
- :mod:`.classifier`: :class:`DPSGDClassifier`, the reductions' default oracle.
- :mod:`.regressor`: :class:`DPSGDRegressor`, DP weighted least squares.
- :mod:`.global_scaling`: :class:`GlobalScalingDPClassifier` (Esipova et al., ICLR 2023).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "DPSGDClassifier": "classifier",
    "DPSGDRegressor": "regressor",
    "GlobalScalingDPClassifier": "global_scaling",
}
__all__ = ["DPSGDClassifier", "DPSGDRegressor", "GlobalScalingDPClassifier"]

if TYPE_CHECKING:  # pragma: no cover
    from .classifier import DPSGDClassifier
    from .global_scaling import GlobalScalingDPClassifier
    from .regressor import DPSGDRegressor

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
