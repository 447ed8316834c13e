"""Standardisation from declared bounds (public) or one noisy release of clipped moments."""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data

from ..data.source import reject_source
from ..privacy import noisy_histogram
from ._step import BUDGET_CONSTRAINTS, PrivateStep
from .bounds import parse_bounds

__all__ = ["DPStandardScaler", "moment_sums"]

# a private scale never falls below this share of the declared half-range
MIN_SCALE_SHARE = 1e-3


def moment_sums(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The exact statistic :class:`DPStandardScaler` releases: ``(sum_i u_i, sum_i u_i**2)``.

    ``u = (clip(x, lower, upper) - middle) / half_width`` lies in ``[-1, 1]``, so
    one row moves each of the ``2 d`` entries by at most 1: L2 sensitivity
    ``sqrt(2 d)`` under adding or removing a row.
    """
    middle, half = (upper + lower) / 2, (upper - lower) / 2
    u = (np.clip(X, lower, upper) - middle) / half
    return np.concatenate([u.sum(axis=0), (u**2).sum(axis=0)])


class DPStandardScaler(OneToOneFeatureMixin, TransformerMixin, PrivateStep):
    """Standardise features from declared bounds (public) or noisy, clipped moments (private).

    ``transform`` clips each feature to its declared bounds, then computes
    ``(x - mean_) / scale_``.

    - **Public** (``epsilon=None``): ``mean_`` is the middle of the bounds and
      ``scale_`` half their width, so every feature lands in ``[-1, 1]``. Costs
      nothing.
    - **Private**: with each feature clipped and mapped to ``u = (x - m) / r``
      in ``[-1, 1]`` (``m``, ``r``: middle and half-width of the bounds), one
      Gaussian release of the vector ``(sum_i u_i, sum_i u_i**2)`` (``2 d``
      numbers); one row moves it by at most ``sqrt(2 d)`` in L2 (each of its
      ``2 d`` entries by at most 1), the sensitivity the noise is scaled by.
      ``mean_ = m + r * S1 / n``, ``var_ = r**2 * (S2 / n - (S1 / n)**2)``
      (floored at ``(1e-3 r)**2``); ``n`` is public.

    Parameters
    ----------
    bounds : tuple, list of pairs or dict
        Public bounds of each feature, declared without looking at the data
        (domain knowledge: ages in [17, 90], hours in [0, 99]), in one of three forms:
        ``(lower, upper)`` with scalars (every feature) or arrays of shape
        ``(n_features,)``; a list of one ``(lower, upper)`` pair per feature, in
        order; or a dict ``{column: (lower, upper)}`` with exactly the columns of
        ``X`` (names for a DataFrame, positions for an array). With two features,
        a pair of pairs reads both ways and is refused as ambiguous (pass a
        dict); :func:`~skfairdp.preprocessing.parse_bounds` reads the forms.
    epsilon : float or None, default=None
        None: public mode. Otherwise the budget of the private release.
    delta : float or "auto", default="auto"
        Target delta of the private release (``"auto"``: ``0.1 / n`` rounded down).
    random_state : int, RandomState or None, default=None
        Seeds the noise (reproducible experiments; not for deployment).
    secure_mode : bool, default=False
        Draw the noise from the OS CSPRNG.

    Attributes
    ----------
    mean_, scale_, var_ : ndarray of shape (n_features,)
    lower_, upper_ : ndarray of shape (n_features,)
        The declared bounds, broadcast.
    dp_event_ : dp_accounting.DpEvent
        ``NoOpDpEvent`` (public) or the recorded ``GaussianDpEvent``.
    privacy_spent_ : PrivacySpent
    noise_multiplier_ : float
        Noise std over the sensitivity ``sqrt(2 d)`` (``inf`` in public mode).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skfairdp.preprocessing import DPStandardScaler
    >>> X = np.array([[20.0], [40.0], [60.0]])
    >>> DPStandardScaler(bounds=(0, 100)).fit_transform(X).ravel()
    array([-0.6, -0.2,  0.2])
    """

    _parameter_constraints: dict = {"bounds": [tuple, list, dict, np.ndarray], **BUDGET_CONSTRAINTS}

    def __init__(self, bounds, *, epsilon=None, delta="auto", random_state=None, secure_mode=False):
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.secure_mode = secure_mode

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Set ``mean_`` and ``scale_`` (public: from the bounds; private: noisy moments).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        reject_source(X, type(self).__name__)
        X = validate_data(self, X, dtype=np.float64)
        n, d = X.shape
        self.lower_, self.upper_ = parse_bounds(
            self.bounds, d, getattr(self, "feature_names_in_", None)
        )
        middle, half = (self.upper_ + self.lower_) / 2, (self.upper_ - self.lower_) / 2
        started = self._start(n)
        if started is None:
            self.mean_, self.scale_ = middle, half
            self.var_ = half**2
            return self
        z, random, recorder = started
        sums = torch.as_tensor(moment_sums(X, self.lower_, self.upper_))
        noisy, _ = noisy_histogram(
            sums, random, noise_multiplier=z, sensitivity=math.sqrt(2 * d), recorder=recorder
        )
        noisy = noisy.numpy()
        m1, m2 = noisy[:d] / n, noisy[d:] / n
        m1 = np.clip(m1, -1.0, 1.0)
        var_u = np.maximum(m2 - m1**2, MIN_SCALE_SHARE**2)
        self.mean_ = middle + half * m1
        self.var_ = half**2 * var_u
        self.scale_ = np.sqrt(self.var_)
        self._finish(recorder)
        return self

    def transform(self, X):
        """Clip to the bounds, then standardise.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of float64, shape (n_samples, n_features)
        """
        check_is_fitted(self, "mean_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (np.clip(X, self.lower_, self.upper_) - self.mean_) / self.scale_

    def inverse_transform(self, X):
        """Undo the standardisation (clipped values stay clipped)."""
        check_is_fitted(self, "mean_")
        return np.asarray(X, dtype=np.float64) * self.scale_ + self.mean_
