"""DP-FERMI (Lowy, Gupta & Razaviyayn, ICLR 2023): :class:`DPFermiClassifier`.

- :mod:`.estimator`: the estimator (parameters, objective, private statistics, dual update).
- :mod:`.problem`: the min-max problem the engine trains, W's best response and rules.
- :mod:`.priors`: the group-prior release before training, the ``rho`` rules, public priors.
- :mod:`.calibration`: Theorem 3.3's noise plan (``calibration="paper"``).
- :mod:`.ermi`: the ERMI formulas in per-sample form.

Submodules are imported on first use, so the federated ClientApp can import
:mod:`.problem` without loading scikit-learn's estimator machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {"DPFermiClassifier": "estimator"}
__all__ = ["DPFermiClassifier"]

if TYPE_CHECKING:  # pragma: no cover
    from .estimator import DPFermiClassifier

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
