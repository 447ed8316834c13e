"""RaCO-DP (Yaghini, Cebere, Menart, Bellet & Papernot): :class:`RaCODPClassifier`.

- :mod:`.estimator`: the estimator (parameters, objective, private statistics, dual update).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {"RaCODPClassifier": "estimator"}
__all__ = ["RaCODPClassifier"]

if TYPE_CHECKING:  # pragma: no cover
    from .estimator import RaCODPClassifier

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
