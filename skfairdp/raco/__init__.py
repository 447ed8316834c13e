"""RaCO-DP (Yaghini, Cebere, Menart, Bellet & Papernot): :class:`RaCODPClassifier`.

- :mod:`.estimator`: the estimator (parameters, the hooks of the fit template, prediction);
- :mod:`.problem`: the Lagrangian as the engine sees it (objective, the noisy histogram of
  each step, the dual update);
- :mod:`.solutions`: the model returned, made from the iterates (``solution``), and the
  mixture's probabilities;
- :mod:`.accounting`: the executed event, the authors' separate composition, the budget hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {"RaCODPClassifier": "estimator"}
__all__ = ["RaCODPClassifier"]

if TYPE_CHECKING:  # pragma: no cover
    from .estimator import RaCODPClassifier

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
