"""Private post-processing: :class:`DPThresholdOptimizer` (fairlearn's ThresholdOptimizer, private).

It needs each row's group at prediction time (see its docstring and
doc/postprocessing.md).

- :mod:`.estimator`: the estimator (parameters, the budget, fit and the randomised prediction).
- :mod:`.histogram`: the one private release, a (group, label, score bin) histogram.
- :mod:`.curves`: the per-group rates from the counts, hulls and fairlearn's threshold choice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {"DPThresholdOptimizer": "estimator"}
__all__ = ["DPThresholdOptimizer"]

if TYPE_CHECKING:  # pragma: no cover
    from .estimator import DPThresholdOptimizer

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
