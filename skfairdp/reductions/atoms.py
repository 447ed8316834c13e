"""The atoms of a reduction's mixture, the cells of its rows, and their per-cell counts."""

from __future__ import annotations

import numpy as np

__all__ = ["ConstantAtom", "cell_codes", "positive_counts"]


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
