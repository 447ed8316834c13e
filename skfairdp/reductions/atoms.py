"""The atoms of a reduction's mixture, the cells of its rows, and their per-cell counts.

Rows carry public weights in ``[0, max_weight]`` (``sample_weight``; 1 when none):
each row's contribution to every per-cell sum is multiplied by its weight, so one
row moves one cell by at most ``max_weight`` times what it moved unweighted, and
a row of weight 0 contributes exactly what a removed row does (nothing).
"""

from __future__ import annotations

import numpy as np

from .._fit.schedules import CGOO_ORACLE_WEIGHT_CAP
from .frank_wolfe import oracle_task

__all__ = ["CellPositives", "ConstantAtom", "WeightedCells", "cell_codes", "positive_counts"]


class ConstantAtom:
    """A classifier that predicts ``value`` (0 or 1) for every row.

    Its statistics are known without reading data: all-0 predicts no positives
    (``J = 0``), all-1 predicts every row positive (``J = q``, the released cell
    frequencies). Reductions start from them, so releasing them costs nothing.
    """

    def __init__(self, value: int):
        self.value = int(value)

    def predict(self, X) -> np.ndarray:
        return np.full(X.shape[0], self.value, dtype=np.int64)

    def __repr__(self) -> str:
        return f"ConstantAtom({self.value})"


def cell_codes(groups: np.ndarray, y01: np.ndarray) -> np.ndarray:
    """Cell of each row: ``2 * group + label`` (labels 0/1)."""
    return 2 * np.asarray(groups, dtype=np.int64) + np.asarray(y01, dtype=np.int64)


def positive_counts(
    cells: np.ndarray, predictions: np.ndarray, n_cells: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """Per-cell count (with ``weights``: weight sum) of the rows predicted 1."""
    positive = np.asarray(predictions) == 1
    return np.bincount(
        cells, weights=positive if weights is None else weights * positive, minlength=n_cells
    )


class WeightedCells:
    """Rows in cells, with public weights in ``[0, max_weight]``.

    Parameters
    ----------
    cells : ndarray of int64, shape (n,)
        Cell of each row.
    n_cells : int
    weights : ndarray of float64, shape (n,), or None
        ``sample_weight`` (None: every row weighs 1).
    max_weight : float, default=1.0
        Public bound on the weights: one row's largest contribution to a count.
    """

    def __init__(self, cells, n_cells: int, weights=None, max_weight: float = 1.0):
        self.cells = np.asarray(cells, dtype=np.int64)
        self.n_cells = int(n_cells)
        self.weights = (
            np.ones(self.cells.shape[0]) if weights is None else np.asarray(weights, np.float64)
        )
        self.max_weight = float(max_weight)

    def counts(self) -> np.ndarray:
        """Exact per-cell weight sums (row counts when unweighted; to be released)."""
        return np.bincount(self.cells, weights=self.weights, minlength=self.n_cells)


class CellPositives(WeightedCells):
    """What the shared reduction loop needs to know about the classification statistics.

    Rows fall into (group, label) cells; an atom's statistics are its per-cell
    (weighted) positive counts: one row, one cell, prediction 0/1, so their
    sensitivity is ``max_weight``. The regression mode's counterpart is
    :class:`~skfairdp.reductions.regression.GroupLosses`.

    Parameters
    ----------
    cells : ndarray of int64, shape (n,)
        :func:`cell_codes` of the rows.
    n_cells : int
    weights, max_weight
        As :class:`WeightedCells`.
    """

    #: What a cell is, in warnings.
    cell_name = "(group, label) cell"
    #: l1 diameter ``sum(q)`` of the statistics' box ``0 <= J <= q``.
    diameter = 1.0

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of one atom's released positive counts."""
        return self.max_weight

    def free_atoms(self, frequencies: np.ndarray):
        """The all-0 and all-1 classifiers, their statistics (0 and ``q``), the start weights."""
        atoms = [ConstantAtom(0), ConstantAtom(1)]
        return atoms, [np.zeros(self.n_cells), frequencies.copy()], np.array([1.0, 0.0])

    def free_response(self, direction: np.ndarray) -> int | None:
        """Index of the free atom minimising ``<J, direction>`` when the direction has one sign.

        The choice reads only the direction's signs over all cells (released
        values), never which rows exist: every cell has rows (checked in fit), so a
        direction of both signs always gives the oracle both classes.
        """
        if not (direction < 0).any() or not (direction > 0).any():
            return int((direction < 0).any())
        return None

    def task(
        self, direction: np.ndarray, frequencies: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Relabelled targets and the rows' weights times :func:`~.frank_wolfe.oracle_task`'s.

        With the released cell ``frequencies`` the task's weights are capped at
        :data:`~skfairdp._fit.schedules.CGOO_ORACLE_WEIGHT_CAP` times their mean
        (which private oracle calls get them:
        :func:`~skfairdp._fit.schedules.cgoo_capped_task`).
        """
        targets, weights = oracle_task(direction, self.cells, frequencies, CGOO_ORACLE_WEIGHT_CAP)
        return targets, weights * self.weights

    def sums(self, atom, X) -> np.ndarray:
        """Exact per-cell positive counts of the atom (to be released)."""
        return positive_counts(self.cells, atom.predict(X), self.n_cells, self.weights)

    def clip(self, statistics: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
        """Released statistics into their box ``[0, q]`` (post-processing)."""
        return np.clip(statistics, 0.0, frequencies)
