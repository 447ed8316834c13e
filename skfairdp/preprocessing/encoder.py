"""One-hot encoding over declared categories (public) or those a noisy histogram keeps."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from sklearn.base import TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..data.source import reject_source
from ..privacy import noisy_histogram
from ._step import BUDGET_CONSTRAINTS, PrivateStep

__all__ = ["DPOneHotEncoder", "category_counts"]


def _codes(column: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The position of each entry of ``column`` in ``values``; -1 where it is not there."""
    index = {v: i for i, v in enumerate(values.tolist())}
    return np.array([index.get(v, -1) for v in column.tolist()], dtype=np.int64)


def check_categories(categories: list, n_columns: int) -> list[np.ndarray]:
    """The declared categories of each column as object arrays; an error if they do not fit."""
    if len(categories) != n_columns:
        raise ValueError(f"categories declares {len(categories)} columns but X has {n_columns}")
    declared = [np.asarray(list(c), dtype=object) for c in categories]
    for j, values in enumerate(declared):
        if len(values) == 0 or len(set(values.tolist())) != len(values):
            raise ValueError(f"categories[{j}] must be non-empty and without duplicates")
    return declared


def category_counts(X: np.ndarray, declared: list[np.ndarray]) -> np.ndarray:
    """The exact statistic :class:`DPOneHotEncoder` releases: counts of each declared category.

    Concatenated over the columns; one row adds 1 to at most one count per column:
    L2 sensitivity ``sqrt(n_columns)`` under adding or removing a row.
    """
    parts = []
    for j, values in enumerate(declared):
        codes = _codes(X[:, j], values)
        parts.append(np.bincount(codes[codes >= 0], minlength=len(values)).astype(np.float64))
    return np.concatenate(parts) if parts else np.zeros(0)


class DPOneHotEncoder(TransformerMixin, PrivateStep):
    """One-hot encode over declared categories (public), or those a noisy histogram keeps.

    - **Public** (``epsilon=None``): every declared category of each column gets
      a column. Costs nothing.
    - **Private**: one Gaussian release of the counts of all declared categories
      of all columns (a row adds 1 to one count per column: L2 sensitivity
      ``sqrt(n_columns)``); a category is kept when its noisy count reaches
      ``min_count`` (choosing from a *declared* domain is post-processing: no
      extra delta). Rare categories are dropped, which avoids columns a private
      model cannot learn from anyway.

    Values outside the kept categories (undeclared, or dropped) encode as all
    zeros (scikit-learn's ``handle_unknown="ignore"``).

    Parameters
    ----------
    categories : list of array-like
        The public domain of each column (``categories[j]``: the possible values
        of column ``j``), declared without looking at the data.
    epsilon : float or None, default=None
        None: public mode. Otherwise the budget of the noisy histogram.
    delta : float or "auto", default="auto"
    min_count : float or "auto", default="auto"
        Private mode: the noisy count a category needs to be kept. ``"auto"``: 3
        noise standard deviations (a category with no row is kept with
        probability about 0.1%).
    random_state : int, RandomState or None, default=None
    secure_mode : bool, default=False

    Attributes
    ----------
    categories_ : list of ndarray
        The kept categories of each column (in declared order).
    noisy_counts_ : list of ndarray or None
        Private mode: the released noisy count of every declared category.
    dp_event_ : dp_accounting.DpEvent
    privacy_spent_ : PrivacySpent
    noise_multiplier_ : float
    n_features_in_ : int

    Examples
    --------
    >>> from skfairdp.preprocessing import DPOneHotEncoder
    >>> enc = DPOneHotEncoder(categories=[["a", "b", "c"]]).fit([["a"], ["c"]])
    >>> enc.transform([["c"], ["z"]])
    array([[0., 0., 1.],
           [0., 0., 0.]])
    """

    _parameter_constraints: dict = {
        "categories": [list],
        "min_count": [Interval(numbers.Real, None, None, closed="neither"), StrOptions({"auto"})],
        **BUDGET_CONSTRAINTS,
    }

    def __init__(
        self,
        categories,
        *,
        epsilon=None,
        delta="auto",
        min_count="auto",
        random_state=None,
        secure_mode=False,
    ):
        self.categories = categories
        self.epsilon = epsilon
        self.delta = delta
        self.min_count = min_count
        self.random_state = random_state
        self.secure_mode = secure_mode

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Choose the categories (public: all declared; private: those the noisy counts keep).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns)
        y : ignored

        Returns
        -------
        self
        """
        reject_source(X, type(self).__name__)
        X = validate_data(self, X, dtype=None, ensure_all_finite=False)
        n, d = X.shape
        declared = check_categories(self.categories, d)
        started = self._start(n)
        if started is None:
            self.categories_ = [v.copy() for v in declared]
            self.noisy_counts_ = None
            return self
        z, random, recorder = started
        counts = category_counts(X, declared)
        sensitivity = math.sqrt(d)
        noisy, _ = noisy_histogram(
            torch.as_tensor(counts, dtype=torch.float64),
            random,
            noise_multiplier=z,
            sensitivity=sensitivity,
            recorder=recorder,
        )
        noisy = noisy.numpy()
        threshold = 3.0 * z * sensitivity if self.min_count == "auto" else float(self.min_count)
        self.min_count_ = threshold
        splits = np.cumsum([len(v) for v in declared])[:-1]
        self.noisy_counts_ = np.split(noisy, splits)
        self.categories_ = [v[c >= threshold] for v, c in zip(declared, self.noisy_counts_)]
        self._finish(recorder)
        return self

    def transform(self, X):
        """One-hot encode; values outside ``categories_`` are all zeros.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns)

        Returns
        -------
        ndarray of float64, shape (n_samples, n_kept_categories)
            One column per kept category (``categories_``), column by column.
        """
        check_is_fitted(self, "categories_")
        X = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=False)
        blocks = []
        for j, kept in enumerate(self.categories_):
            codes = _codes(X[:, j], kept)
            block = np.zeros((X.shape[0], len(kept)))
            rows = np.flatnonzero(codes >= 0)
            block[rows, codes[rows]] = 1.0
            blocks.append(block)
        return np.hstack(blocks) if blocks else np.zeros((X.shape[0], 0))

    def get_feature_names_out(self, input_features=None):
        """``"{column}_{category}"`` for every kept category."""
        check_is_fitted(self, "categories_")
        if input_features is None:
            names = getattr(self, "feature_names_in_", None)
            input_features = (
                names if names is not None else [f"x{j}" for j in range(self.n_features_in_)]
            )
        return np.asarray(
            [
                f"{name}_{value}"
                for name, kept in zip(input_features, self.categories_)
                for value in kept
            ],  # fmt: skip
            dtype=object,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        return tags
