"""Bins of numeric features, from declared bounds (public) or private quantiles.

A linear model on binned features is a generalised additive model's main effects: each
feature's effect becomes a step function, the model class a GAM or a tree ensemble
reaches and a linear model on z-scored columns does not. scikit-learn's
``KBinsDiscretizer`` reads the rows exactly (its quantile edges are order statistics
of the private data); this one places the edges from what the user declares, or from
one noisy release.
"""

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
from .bounds import parse_bounds

__all__ = ["DPKBinsDiscretizer", "fine_histograms", "make_trend_and_bins"]

#: Fine cells per bin of the private quantile release (each feature's histogram has
#: ``n_bins * RESOLUTION`` cells): the quantile edges are cell boundaries.
RESOLUTION = 16


def fine_histograms(X: np.ndarray, lower: np.ndarray, upper: np.ndarray, cells: int) -> np.ndarray:
    """The exact statistic the quantile strategy releases: one histogram per feature.

    Each feature is clipped to its bounds and counted in ``cells`` equal cells of
    ``[lower, upper]``, shape ``(n_features, cells)``. One row adds 1 to one cell of
    every feature: L2 sensitivity ``sqrt(n_features)`` under adding or removing a row.
    """
    u = (np.clip(X, lower, upper) - lower) / (upper - lower)
    index = np.minimum((u * cells).astype(np.int64), cells - 1)
    d = X.shape[1]
    flat = (index + np.arange(d)[None, :] * cells).ravel()
    return np.bincount(flat, minlength=d * cells).reshape(d, cells).astype(np.float64)


def quantile_edges(counts: np.ndarray, lower: float, upper: float, n_bins: int) -> np.ndarray:
    """Inner edges at the ``k / n_bins`` quantiles of one noisy fine histogram.

    Negative noisy counts are read as 0; each edge is the cell boundary whose noisy
    mass below is nearest ``k / n_bins``; the edges increase;
    ties (empty stretches) are dropped, so a feature may get fewer bins.
    """
    mass = np.maximum(counts, 0.0)
    total = mass.sum()
    cells = counts.size
    if total <= 0:
        boundaries = np.arange(1, n_bins) * cells // n_bins  # uniform
    else:
        below = np.concatenate([[0.0], np.cumsum(mass) / total])  # mass below boundary b
        targets = np.arange(1, n_bins) / n_bins
        right = np.clip(np.searchsorted(below, targets), 1, cells)
        nearer_left = targets - below[right - 1] < below[right] - targets
        boundaries = np.where(nearer_left, right - 1, right)
    boundaries = np.unique(np.clip(boundaries, 1, cells - 1))
    return lower + (upper - lower) * boundaries / cells


class DPKBinsDiscretizer(TransformerMixin, PrivateStep):
    """Bin numeric features: edges from declared bounds (public) or private quantiles.

    ``transform`` clips each feature to its declared bounds and replaces it by its bin:
    a one-hot block of ``n_bins`` columns (``encode="onehot-dense"``), the same block
    divided by ``sqrt(n_features)`` (``encode="onehot-unit"``: a row's whole block then
    has L2 norm 1), or the bin's index (``encode="ordinal"``).

    ``"onehot-unit"`` is meant beside the same columns' linear terms
    (:func:`make_trend_and_bins`): a linear trend plus a step-function correction that
    adds at most 1 to a row's squared norm, however many columns are binned, so DP-SGD's
    clip and noise treat the bins as one more feature rather than one per column. On the
    zoo's 15 tables that never did worse than the linear terms alone by more than the seed
    sd, where plain bins did on three (``experiments/results/model_class_zoo_arms.md``).

    - ``strategy="uniform"``: ``n_bins`` equal bins of the declared bounds. It reads
      no row: public, free, whatever ``epsilon`` says (``dp_event_`` is
      ``NoOpDpEvent``).
    - ``strategy="quantile"`` (needs ``epsilon``): one Gaussian release of each
      feature's histogram over ``n_bins * 16`` equal cells of its bounds; one row adds
      1 to one cell per feature, L2 sensitivity ``sqrt(n_features)``, the noise's
      scale. The edges are the cell boundaries nearest (by noisy mass) the noisy
      ``k / n_bins`` quantiles; a feature whose noisy mass leaves two edges on one
      boundary gets fewer bins (its block keeps ``n_bins`` columns, some always 0).

    Parameters
    ----------
    bounds : tuple, list of pairs or dict
        Public bounds of each feature, declared without looking at the data (the
        forms of :class:`DPStandardScaler`).
    n_bins : int, default=10
        Bins per feature (at least 2).
    strategy : {"uniform", "quantile"}, default="uniform"
    encode : {"onehot-dense", "onehot-unit", "ordinal"}, default="onehot-dense"
    epsilon : float or None, default=None
        The quantile release's budget (None: public; the uniform strategy ignores it).
    delta : float or "auto", default="auto"
    random_state : int, RandomState or None, default=None
    secure_mode : bool, default=False

    Attributes
    ----------
    bin_edges_ : list of ndarray
        Each feature's edges, from its lower to its upper bound.
    n_bins_ : ndarray of shape (n_features,)
        Bins each feature really has (``n_bins`` or fewer for private quantiles).
    lower_, upper_ : ndarray of shape (n_features,)
    dp_event_ : dp_accounting.DpEvent
    privacy_spent_ : PrivacySpent
    noise_multiplier_ : float
        Noise std over the sensitivity ``sqrt(n_features)`` (``inf`` when public).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skfairdp.preprocessing import DPKBinsDiscretizer
    >>> X = np.array([[5.0], [35.0], [95.0]])
    >>> DPKBinsDiscretizer(bounds=(0, 100), n_bins=4, encode="ordinal").fit_transform(X).ravel()
    array([0., 1., 3.])
    """

    _parameter_constraints: dict = {
        "bounds": [tuple, list, dict, np.ndarray],
        "n_bins": [Interval(numbers.Integral, 2, None, closed="left")],
        "strategy": [StrOptions({"uniform", "quantile"})],
        "encode": [StrOptions({"onehot-dense", "onehot-unit", "ordinal"})],
        **BUDGET_CONSTRAINTS,
    }

    def __init__(
        self,
        bounds,
        *,
        n_bins=10,
        strategy="uniform",
        encode="onehot-dense",
        epsilon=None,
        delta="auto",
        random_state=None,
        secure_mode=False,
    ):
        self.bounds = bounds
        self.n_bins = n_bins
        self.strategy = strategy
        self.encode = encode
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.secure_mode = secure_mode

    def _private(self) -> bool:
        return self.strategy == "quantile" and self.epsilon is not None

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Place the bin edges (uniform: from the bounds; quantile: one noisy release).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        if self.strategy == "quantile" and self.epsilon is None:
            raise ValueError(
                "strategy='quantile' places the edges at private quantiles and needs a "
                "budget: pass epsilon (or use strategy='uniform', which reads no row)"
            )
        reject_source(X, type(self).__name__)
        X = validate_data(self, X, dtype=np.float64)
        n, d = X.shape
        self.lower_, self.upper_ = parse_bounds(
            self.bounds, d, getattr(self, "feature_names_in_", None)
        )
        k = int(self.n_bins)
        started = self._start(n)
        if started is None:
            inner = [np.linspace(lo, hi, k + 1)[1:-1] for lo, hi in zip(self.lower_, self.upper_)]
        else:
            z, random, recorder = started
            cells = k * RESOLUTION
            counts = torch.as_tensor(fine_histograms(X, self.lower_, self.upper_, cells))
            noisy, _ = noisy_histogram(
                counts, random, noise_multiplier=z, sensitivity=math.sqrt(d), recorder=recorder
            )
            noisy = noisy.numpy()
            inner = [quantile_edges(noisy[j], self.lower_[j], self.upper_[j], k) for j in range(d)]
            self._finish(recorder)
        self.bin_edges_ = [
            np.concatenate([[lo], edges, [hi]])
            for lo, edges, hi in zip(self.lower_, inner, self.upper_)
        ]
        self.n_bins_ = np.array([edges.size - 1 for edges in self.bin_edges_])
        return self

    def transform(self, X):
        """Clip to the bounds and bin.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of float64
            Shape ``(n_samples, n_features * n_bins)`` (one-hot) or
            ``(n_samples, n_features)`` (ordinal).
        """
        check_is_fitted(self, "bin_edges_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        X = np.clip(X, self.lower_, self.upper_)
        index = np.column_stack(
            [
                np.searchsorted(edges[1:-1], X[:, j], side="right")
                for j, edges in enumerate(self.bin_edges_)
            ]
        ) if X.shape[1] else np.empty((X.shape[0], 0), dtype=np.int64)  # fmt: skip
        if self.encode == "ordinal":
            return index.astype(np.float64)
        k = int(self.n_bins)
        out = np.zeros((X.shape[0], X.shape[1] * k))
        rows = np.arange(X.shape[0])[:, None]
        value = 1.0 / math.sqrt(X.shape[1]) if self.encode == "onehot-unit" else 1.0
        out[rows, index + np.arange(X.shape[1])[None, :] * k] = value
        return out

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """``<feature>_bin<k>`` per one-hot column, or the input names (ordinal).

        Parameters
        ----------
        input_features : array-like of str, optional

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "bin_edges_")
        if input_features is None:
            input_features = getattr(
                self, "feature_names_in_", [f"x{j}" for j in range(self.n_features_in_)]
            )
        names = np.asarray(input_features, dtype=object)
        if self.encode == "ordinal":
            return names
        return np.array(
            [f"{name}_bin{b}" for name in names for b in range(int(self.n_bins))], dtype=object
        )


def make_trend_and_bins(bounds: dict, *, n_bins: int = 20, remainder="passthrough"):
    """Linear terms plus unit-norm bins of the same numeric columns, from declared bounds.

    A ``ColumnTransformer`` that sends the columns named in ``bounds`` through
    :class:`~skfairdp.preprocessing.DPStandardScaler` (public: centred and scaled by the
    bounds, in ``[-1, 1]``) *and* through :class:`DPKBinsDiscretizer` with
    ``encode="onehot-unit"`` (uniform bins of the bounds, the block scaled to unit norm),
    and the other columns to ``remainder``. A linear model on its output is a linear
    trend per column plus a shrunk step-function correction (a GAM's main effects). Both
    parts read no row: it costs no privacy.

    Parameters
    ----------
    bounds : dict
        ``{column: (lower, upper)}``, declared without looking at the data.
    n_bins : int, default=20
    remainder : {"passthrough", "drop"} or estimator, default="passthrough"
        What the other columns get (a ``ColumnTransformer``'s ``remainder``).

    Returns
    -------
    sklearn.compose.ColumnTransformer

    Examples
    --------
    >>> import pandas as pd
    >>> from skfairdp.preprocessing import make_trend_and_bins
    >>> frame = pd.DataFrame({"age": [20.0, 50.0], "hours": [10.0, 60.0]})
    >>> make_trend_and_bins({"age": (17, 90), "hours": (1, 99)}, n_bins=4).fit_transform(
    ...     frame
    ... ).shape
    (2, 10)
    """
    from sklearn.compose import ColumnTransformer

    from .scaler import DPStandardScaler

    if not isinstance(bounds, dict) or not bounds:
        raise ValueError(
            "bounds must be a non-empty dict {column: (lower, upper)} naming the numeric "
            f"columns to expand, got {type(bounds).__name__}"
        )
    columns = list(bounds)
    return ColumnTransformer(
        [
            ("trend", DPStandardScaler(bounds=bounds), columns),
            ("bins", DPKBinsDiscretizer(bounds, n_bins=n_bins, encode="onehot-unit"), columns),
        ],
        remainder=remainder,
    )
