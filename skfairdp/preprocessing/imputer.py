"""Missing values filled with a constant (free) or a noisy mean, median or most frequent value."""

from __future__ import annotations

import math
import numbers

import dp_accounting
import numpy as np
import pandas as pd
import torch
from sklearn import get_config
from sklearn.base import TransformerMixin, _fit_context
from sklearn.utils._mask import _get_mask
from sklearn.utils._missing import is_scalar_nan
from sklearn.utils._param_validation import Interval, MissingValues, StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from ..data.source import reject_source
from ..privacy import noisy_histogram
from ._step import BUDGET_CONSTRAINTS, PrivateStep
from .bounds import parse_bounds
from .encoder import category_counts, check_categories
from .imputation import binned_counts, histogram_median, mean_sums, noisy_mean

__all__ = ["DPSimpleImputer"]

_NUMERIC = ("mean", "median")


def _keeps_frame(imputer, X) -> bool:
    """Whether ``transform`` returns a DataFrame: one in, fitted on one, no ``set_output``."""
    configured = "transform" in getattr(imputer, "_sklearn_output_config", {})
    return (
        isinstance(X, pd.DataFrame)
        and hasattr(imputer, "feature_names_in_")
        and not configured
        and get_config()["transform_output"] == "default"
    )


class DPSimpleImputer(TransformerMixin, PrivateStep):
    """Fill missing values with a constant (free), or a noisy mean, median or most frequent value.

    - ``strategy="constant"``: ``fill_value`` in every column. Reads no row: costs
      nothing (``dp_event_`` is ``NoOpDpEvent``) whatever ``epsilon`` is.
    - ``strategy="mean"``: one Gaussian release of each column's sum of present values,
      clipped to the declared ``bounds`` and centred, and of its number of present
      values (``2 d`` numbers, L2 sensitivity ``sqrt(2 d)``); the fill value is their
      ratio, inside the bounds.
    - ``strategy="median"``: one Gaussian release of each column's counts of present
      values in ``n_bins`` equal bins of its bounds (L2 sensitivity ``sqrt(d)``: a row
      adds 1 to one bin per column); the fill value is where the noisy cumulative count
      reaches half its total.
    - ``strategy="most_frequent"``: one Gaussian release of the counts of the declared
      ``categories`` of each column (sensitivity ``sqrt(d)``); the fill value is the
      category with the largest noisy count (report noisy max).

    The private strategies need ``epsilon``; the number of rows is public, the number of
    missing values is not (it is released with noise). Every column is kept and
    imputed, even one with no present value (scikit-learn's ``SimpleImputer`` drops
    such a column, which would reveal that it is empty).

    Parameters
    ----------
    strategy : {"mean", "median", "most_frequent", "constant"}, default="mean"
    bounds : tuple, list of pairs or dict, default=None
        ``"mean"``, ``"median"``: the public range of each column, declared without
        looking at the data, in any form :class:`DPStandardScaler` accepts
        (``(lower, upper)``, one pair per column, or ``{column: (lower, upper)}``).
    categories : list of array-like, default=None
        ``"most_frequent"``: the public domain of each column (``categories[j]``: the
        possible values of column ``j``), as in :class:`DPOneHotEncoder`.
    fill_value : str or number, default=None
        ``"constant"``: the fill value; None gives 0 for numeric data and
        ``"missing_value"`` for strings or objects.
    missing_values : int, float, str, np.nan or None, default=np.nan
        The placeholder of a missing value.
    add_indicator : bool, default=False
        Append one missing-indicator column per feature (scikit-learn's
        ``MissingIndicator(features="all")``). It reads each transformed row's own
        missingness only: free. (Indicators only for columns with missing values at
        fit, scikit-learn's default, would reveal which columns have some.)
    n_bins : int, default=32
        ``"median"``: bins of each column's bounds (the median's resolution is the
        bin width; more bins, more noise in the cumulative counts).
    epsilon : float or None, default=None
        The budget of the release; required by the private strategies.
    delta : float or "auto", default="auto"
    random_state : int, RandomState or None, default=None
    secure_mode : bool, default=False

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,)
        The fill value of each column.
    lower_, upper_ : ndarray of shape (n_features,)
        ``"mean"``, ``"median"``: the declared bounds.
    dp_event_ : dp_accounting.DpEvent
        ``NoOpDpEvent`` (``"constant"``) or the recorded ``GaussianDpEvent``.
    privacy_spent_ : PrivacySpent
    noise_multiplier_ : float
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from skfairdp.preprocessing import DPSimpleImputer
    >>> X = np.array([[20.0], [np.nan], [60.0], [40.0]])
    >>> DPSimpleImputer(strategy="constant", fill_value=0.0).fit_transform(X).ravel()
    array([20.,  0., 60., 40.])
    >>> imputer = DPSimpleImputer(bounds=(0, 100), epsilon=1.0, random_state=0).fit(X)
    >>> imputer.transform(X).shape, round(imputer.privacy_spent_.epsilon, 2)
    ((4, 1), 1.0)
    """

    _parameter_constraints: dict = {
        "strategy": [StrOptions({"mean", "median", "most_frequent", "constant"})],
        "bounds": [None, tuple, list, dict, np.ndarray],
        "categories": [None, list],
        "fill_value": "no_validation",
        "missing_values": [MissingValues()],
        "add_indicator": ["boolean"],
        "n_bins": [Interval(numbers.Integral, 2, None, closed="left")],
        **BUDGET_CONSTRAINTS,
    }

    def __init__(
        self,
        strategy="mean",
        *,
        bounds=None,
        categories=None,
        fill_value=None,
        missing_values=np.nan,
        add_indicator=False,
        n_bins=32,
        epsilon=None,
        delta="auto",
        random_state=None,
        secure_mode=False,
    ):
        self.strategy = strategy
        self.bounds = bounds
        self.categories = categories
        self.fill_value = fill_value
        self.missing_values = missing_values
        self.add_indicator = add_indicator
        self.n_bins = n_bins
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.secure_mode = secure_mode

    def _private(self) -> bool:
        return self.strategy != "constant" and self.epsilon is not None

    def _check_budget(self) -> None:
        if self.strategy != "constant" and self.epsilon is None:
            raise ValueError(
                f"DPSimpleImputer(strategy={self.strategy!r}) reads the rows: give it a "
                "budget (epsilon=...), or use strategy='constant' with a fill_value (free)"
            )

    def planned_event(self, n_samples: int) -> dp_accounting.DpEvent:
        """The event ``fit`` on ``n_samples`` rows executes (independent of the data's values).

        Parameters
        ----------
        n_samples : int

        Returns
        -------
        dp_accounting.DpEvent
            ``NoOpDpEvent`` for ``"constant"``, else ``GaussianDpEvent(z)``.
        """
        self._check_budget()
        return super().planned_event(n_samples)

    def _validate(self, X, reset: bool) -> np.ndarray:
        finite = "allow-nan" if is_scalar_nan(self.missing_values) else True
        numeric = self.strategy in _NUMERIC
        X = validate_data(
            self, X, dtype=np.float64 if numeric else None, ensure_all_finite=finite, reset=reset
        )
        if not numeric and X.dtype.kind in "biuf":
            X = X.astype(np.float64)  # a float fill value must not be truncated
        return X

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Set ``statistics_`` (``"constant"``: ``fill_value``; else from one noisy release).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        self._check_budget()
        reject_source(X, type(self).__name__)
        X = self._validate(X, reset=True)
        n, d = X.shape
        if self.strategy == "constant":
            self.statistics_ = self._constant(X, d)
            self._start(n)
            return self
        declared = self._declared(d, X.dtype.kind == "f")
        z, random, recorder = self._start(n)
        missing = _get_mask(X, self.missing_values)
        if self.strategy == "mean":
            exact, sensitivity = mean_sums(X, missing, self.lower_, self.upper_), math.sqrt(2 * d)
        elif self.strategy == "median":
            exact = binned_counts(X, missing, self.lower_, self.upper_, self.n_bins)
            sensitivity = math.sqrt(d)
        else:
            exact, sensitivity = category_counts(X, declared), math.sqrt(d)
        noisy, _ = noisy_histogram(
            torch.as_tensor(exact, dtype=torch.float64),
            random,
            noise_multiplier=z,
            sensitivity=sensitivity,
            recorder=recorder,
        )
        noisy = noisy.numpy()
        if self.strategy == "mean":
            self.statistics_ = noisy_mean(noisy, self.lower_, self.upper_)
        elif self.strategy == "median":
            self.statistics_ = histogram_median(noisy, self.lower_, self.upper_)
        else:
            splits = np.split(noisy, np.cumsum([len(v) for v in declared])[:-1])
            values = [v[int(np.argmax(c))] for v, c in zip(declared, splits)]
            self.statistics_ = np.array(values, dtype=X.dtype if X.dtype.kind == "f" else object)
        self._finish(recorder)
        return self

    def _declared(self, d: int, X_numeric: bool) -> list[np.ndarray] | None:
        """Check the declared domain of the private strategy; None for the numeric ones."""
        if self.strategy in _NUMERIC:
            if self.bounds is None:
                raise ValueError(
                    f"DPSimpleImputer(strategy={self.strategy!r}) needs bounds: the public "
                    "range of each column, declared without looking at the data (e.g. "
                    "bounds=(0, 100) or bounds={'age': (17, 90)})"
                )
            names = getattr(self, "feature_names_in_", None)
            self.lower_, self.upper_ = parse_bounds(self.bounds, d, names)
            return None
        if self.categories is None:
            raise ValueError(
                "DPSimpleImputer(strategy='most_frequent') needs categories: the public "
                "values of each column (categories[j] lists column j's), as DPOneHotEncoder"
            )
        declared = check_categories(self.categories, d)
        for j, values in enumerate(declared):
            if X_numeric and not all(isinstance(v, numbers.Real) for v in values):
                raise ValueError(
                    f"categories[{j}] holds non-numbers, but X is numeric: declare the "
                    "column's numeric values, or pass X with dtype object"
                )
            if _get_mask(values, self.missing_values).any():
                raise ValueError(
                    f"categories[{j}] contains missing_values={self.missing_values!r}: a "
                    "missing value cannot be the value that fills it"
                )
        return declared

    def _constant(self, X: np.ndarray, d: int) -> np.ndarray:
        numeric = X.dtype.kind == "f"
        fill = self.fill_value
        if fill is None:
            fill = 0.0 if numeric else "missing_value"
        elif numeric and not isinstance(fill, numbers.Real):
            raise ValueError(
                f"fill_value={fill!r} is not a number, but X is numeric: give a numeric "
                "fill_value, or pass X with dtype object"
            )
        return np.full(d, fill, dtype=np.float64 if numeric else object)

    def transform(self, X):
        """Fill each missing entry with its column's ``statistics_`` (then the indicators).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray or DataFrame of shape (n_samples, n_features) or (n_samples, 2 * n_features)
            ``add_indicator=True`` appends one column per feature: 1 where it was missing.
            A DataFrame (columns :meth:`get_feature_names_out`, ``X``'s index) when
            ``X`` is one and the imputer was fitted on one, unless ``set_output``
            chose the output: the next step, such as :class:`DPStandardScaler` with
            the same dict of ``bounds``, then reads the columns by name, in a
            ``Pipeline`` too. ``set_output(transform="default")`` gives an ndarray.
        """
        check_is_fitted(self, "statistics_")
        frame = X if _keeps_frame(self, X) else None
        X = self._validate(X, reset=False)
        missing = _get_mask(X, self.missing_values)
        out = X.astype(self.statistics_.dtype) if X.dtype != self.statistics_.dtype else X.copy()
        rows, cols = np.nonzero(missing)
        out[rows, cols] = self.statistics_[cols]
        out = np.hstack([out, missing]) if self.add_indicator else out
        if frame is None:
            return out
        return pd.DataFrame(out, columns=self.get_feature_names_out(), index=frame.index)

    def get_feature_names_out(self, input_features=None):
        """The input names, then ``"missingindicator_{name}"`` of each with ``add_indicator``."""
        check_is_fitted(self, "n_features_in_")
        names = _check_feature_names_in(self, input_features)
        if self.add_indicator:
            names = np.concatenate([names, [f"missingindicator_{n}" for n in names]])
        return np.asarray(names, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = is_scalar_nan(self.missing_values)
        tags.input_tags.string = self.strategy not in _NUMERIC
        return tags
