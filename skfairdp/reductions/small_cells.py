"""Alabi's Theorem 6.2: below a cell size no private algorithm can be expected to hold the bound."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .atoms import WeightedCells

__all__ = ["SmallCellWarning", "warn_small_cells"]


class SmallCellWarning(UserWarning):
    """A (group, label) cell is smaller than the paper's lower bound for the budget."""


def warn_small_cells(
    frequencies: np.ndarray,
    total: float,
    statistics: WeightedCells,
    epsilon: float,
    difference_bound: float,
    stacklevel: int = 2,
    floor: float = 0.0,
) -> None:
    """Warn when the smallest released cell is below ``sqrt(K) / (epsilon * bound)``.

    The bound is for statistics in ``[0, 1]`` and unit rows; the group losses range
    over ``[0, loss_bound]`` and weighted rows count up to ``max_weight``, which
    scale it. Reads released counts only. A cell released at ``floor`` (its noisy count
    was under it) may hold only a few rows whatever the floor says: it warns too, and
    says so (fresh-table probe 3: a 6-row cell released as "about 58 rows", silent at
    a bound whose lower limit was 30).
    """
    if math.isinf(epsilon):
        return
    smallest = float(frequencies.min()) * total
    K = statistics.n_cells
    bound = (
        statistics.max_weight
        * statistics.diameter
        * math.sqrt(K)
        / (epsilon * float(difference_bound))
    )
    scale = "" if statistics.diameter == 1.0 else "loss_bound*"
    floored = floor > 0 and smallest <= floor * (1.0 + 1e-9)
    size = (
        f"a noisy count under the floor of {floor:.0f} (3 noise sds): it may hold only a few rows"
        if floored
        else f"about {smallest:.0f} rows (released count)"
    )
    if floored or smallest < bound:
        warnings.warn(
            f"the smallest {statistics.cell_name} has {size}, below the lower bound "
            f"{scale}sqrt(K)/(epsilon*difference_bound) = "
            f"{bound:.0f} of Alabi's Theorem 6.2: no private algorithm can be expected to "
            "meet the constraint on it; raise epsilon or difference_bound.",
            SmallCellWarning,
            stacklevel=stacklevel + 1,
        )
