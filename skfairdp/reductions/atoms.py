"""The atoms of a reduction's mixture, the cells of its rows, and their per-cell counts."""

from __future__ import annotations

import numpy as np

from .frank_wolfe import oracle_task

__all__ = ["CellPositives", "ConstantAtom", "cell_codes", "positive_counts"]


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


def positive_counts(cells: np.ndarray, predictions: np.ndarray, n_cells: int) -> np.ndarray:
    """Per-cell count of rows predicted 1 (one row adds at most 1 to one cell)."""
    return np.bincount(cells, weights=(np.asarray(predictions) == 1), minlength=n_cells)


class CellPositives:
    """What the shared reduction loop needs to know about the classification statistics.

    Rows fall into (group, label) cells; an atom's statistics are its per-cell
    positive counts (sensitivity 1: one row, one cell, prediction 0/1). The
    regression mode's counterpart is :class:`~skfairdp.reductions.regression.GroupLosses`.

    Parameters
    ----------
    cells : ndarray of int64, shape (n,)
        :func:`cell_codes` of the rows.
    n_cells : int
    """

    #: What a cell is, in warnings.
    cell_name = "(group, label) cell"
    #: L2 sensitivity of one atom's released positive counts.
    sensitivity = 1.0
    #: l1 diameter ``sum(q)`` of the statistics' box ``0 <= J <= q``.
    diameter = 1.0

    def __init__(self, cells: np.ndarray, n_cells: int):
        self.cells = np.asarray(cells, dtype=np.int64)
        self.n_cells = int(n_cells)

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

    def task(self, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Relabelled targets and weights (:func:`~.frank_wolfe.oracle_task`)."""
        return oracle_task(direction, self.cells)

    def sums(self, atom, X) -> np.ndarray:
        """Exact per-cell positive counts of the atom (to be released)."""
        return positive_counts(self.cells, atom.predict(X), self.n_cells)

    def clip(self, statistics: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
        """Released statistics into their box ``[0, q]`` (post-processing)."""
        return np.clip(statistics, 0.0, frequencies)
