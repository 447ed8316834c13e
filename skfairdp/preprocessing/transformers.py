"""Preprocessing inside the guarantee: a scaler and a one-hot encoder, public or private.

A scikit-learn ``StandardScaler`` or ``OneHotEncoder`` in front of a private
estimator reads the private rows without noise: its means, scales and categories
are released (they shape every prediction) and no estimator's ``privacy_spent_``
covers them. The two transformers here are the first steps of a private
``Pipeline`` and state what they cost, like every skfairdp estimator
(``dp_event_``, ``privacy_spent_``), so that
:func:`skfairdp.privacy.spent` of the pipeline includes them.

Each works in one of two modes, chosen by ``epsilon``:

``epsilon=None`` -- **public**
    Everything comes from what the user declares (the ``bounds`` of each feature,
    the ``categories`` of each column); ``fit`` reads only the shape of ``X``. It
    releases nothing about the rows: ``dp_event_`` is ``NoOpDpEvent`` and
    ``privacy_spent_`` is ``(0.0, 0.0)``. (Not ``NonPrivateDpEvent``: that event
    means "released exactly", whose cost is infinite.)
``epsilon > 0`` -- **private**
    The statistics are Gaussian releases on rows clipped to the declared bounds
    (:class:`DPStandardScaler`: noisy sums and sums of squares) or restricted to
    the declared candidate categories (:class:`DPOneHotEncoder`: a noisy
    histogram, thresholded), calibrated to ``(epsilon, delta)`` and recorded by
    the mechanisms of :mod:`skfairdp.privacy`.

The privacy unit is one row (add or remove one, ``privacy_unit="record"``); the
number of rows is public, as for every skfairdp estimator. These steps read ``X``
only: under an estimator's ``privacy_unit="sensitive"`` (``X`` public), they cost
nothing, and :func:`~skfairdp.privacy.spent` counts them so.
"""

from __future__ import annotations

import math
import numbers

import dp_accounting
import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..privacy import (
    EventRecorder,
    PrivacySpent,
    RandomSource,
    calibrate_noise_multiplier,
    epsilon_spent,
    gaussian_release_event,
    noisy_histogram,
    resolve_delta,
)

__all__ = ["DPOneHotEncoder", "DPStandardScaler", "category_counts", "moment_sums"]

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


def category_counts(X: np.ndarray, declared: list[np.ndarray]) -> np.ndarray:
    """The exact statistic :class:`DPOneHotEncoder` releases: counts of each declared category.

    Concatenated over the columns; one row adds 1 to at most one count per column:
    L2 sensitivity ``sqrt(n_columns)`` under adding or removing a row.
    """
    parts = []
    for j, values in enumerate(declared):
        index = {v: i for i, v in enumerate(values.tolist())}
        codes = np.array([index.get(v, -1) for v in X[:, j].tolist()], dtype=np.int64)
        parts.append(np.bincount(codes[codes >= 0], minlength=len(values)).astype(np.float64))
    return np.concatenate(parts) if parts else np.zeros(0)


class _PrivateStep(BaseEstimator):
    """Budget, randomness and accounting shared by the two transformers."""

    # read X only: free under an estimator's privacy_unit="sensitive" (see spent)
    _reads_only_xy = True

    def _private(self) -> bool:
        return self.epsilon is not None

    def _noise_multiplier(self, delta: float) -> float:
        """The Gaussian multiplier of the one release, for ``(epsilon, delta)``."""
        return calibrate_noise_multiplier(
            float(self.epsilon), delta, gaussian_release_event, accountant="pld"
        )

    def planned_event(self, n_samples: int) -> dp_accounting.DpEvent:
        """The event ``fit`` on ``n_samples`` rows executes (independent of the data's values).

        Parameters
        ----------
        n_samples : int

        Returns
        -------
        dp_accounting.DpEvent
            ``NoOpDpEvent`` in public mode, else ``GaussianDpEvent(z)``.
        """
        if not self._private():
            return dp_accounting.NoOpDpEvent()
        return gaussian_release_event(self._noise_multiplier(resolve_delta(self.delta, n_samples)))

    def _start(self, n_samples: int):
        """Resolve the budget; returns ``(noise multiplier, random source, recorder)`` or None."""
        if not self._private():
            self.dp_event_ = dp_accounting.NoOpDpEvent()
            self.privacy_spent_ = PrivacySpent(0.0, 0.0)
            self.noise_multiplier_ = math.inf
            return None
        delta = resolve_delta(self.delta, n_samples)
        z = self._noise_multiplier(delta)
        self.noise_multiplier_ = z
        self.delta_ = delta
        return z, RandomSource(self.random_state, secure_mode=self.secure_mode), EventRecorder()

    def _finish(self, recorder: EventRecorder) -> None:
        self.dp_event_ = recorder.build()
        self.privacy_spent_ = epsilon_spent(self.dp_event_, self.delta_, accountant="pld")

    def _accountant_options(self) -> dict:
        # a Gaussian release is priced exactly by PLD (RDP's conversion overstates it)
        return {"accountant": "pld", "privacy_unit": "record"}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = bool(self._private() and self.secure_mode)
        return tags


_BUDGET_CONSTRAINTS = {
    "epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "delta": [Interval(numbers.Real, 0, 1, closed="neither"), StrOptions({"auto"})],
    "random_state": ["random_state"],
    "secure_mode": ["boolean"],
}


class DPStandardScaler(OneToOneFeatureMixin, TransformerMixin, _PrivateStep):
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
    bounds : tuple (lower, upper) of floats or of array-likes of shape (n_features,)
        Public bounds of each feature, declared without looking at the data
        (domain knowledge: ages in [17, 90], hours in [0, 99]).
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
    >>> from skfairdp.preprocessing.transformers import DPStandardScaler
    >>> X = np.array([[20.0], [40.0], [60.0]])
    >>> DPStandardScaler(bounds=(0, 100)).fit_transform(X).ravel()
    array([-0.6, -0.2,  0.2])
    """

    _parameter_constraints: dict = {"bounds": [tuple, list], **_BUDGET_CONSTRAINTS}

    def __init__(self, bounds, *, epsilon=None, delta="auto", random_state=None, secure_mode=False):
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.secure_mode = secure_mode

    def _check_bounds(self, n_features: int):
        if len(self.bounds) != 2:
            raise ValueError(f"bounds must be (lower, upper), got {self.bounds!r}")
        lower, upper = (np.asarray(b, dtype=np.float64) for b in self.bounds)
        lower, upper = np.broadcast_to(lower, (n_features,)), np.broadcast_to(upper, (n_features,))
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
            raise ValueError("bounds must be finite")
        if np.any(upper <= lower):
            raise ValueError("every upper bound must be above its lower bound")
        return lower.copy(), upper.copy()

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
        X = validate_data(self, X, dtype=np.float64)
        n, d = X.shape
        self.lower_, self.upper_ = self._check_bounds(d)
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


class DPOneHotEncoder(TransformerMixin, _PrivateStep):
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
    >>> from skfairdp.preprocessing.transformers import DPOneHotEncoder
    >>> enc = DPOneHotEncoder(categories=[["a", "b", "c"]]).fit([["a"], ["c"]])
    >>> enc.transform([["c"], ["z"]])
    array([[0., 0., 1.],
           [0., 0., 0.]])
    """

    _parameter_constraints: dict = {
        "categories": [list],
        "min_count": [Interval(numbers.Real, None, None, closed="neither"), StrOptions({"auto"})],
        **_BUDGET_CONSTRAINTS,
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
        X = validate_data(self, X, dtype=None, ensure_all_finite=False)
        n, d = X.shape
        if len(self.categories) != d:
            raise ValueError(f"categories declares {len(self.categories)} columns but X has {d}")
        declared = [np.asarray(list(c), dtype=object) for c in self.categories]
        for j, values in enumerate(declared):
            if len(values) == 0 or len(set(values.tolist())) != len(values):
                raise ValueError(f"categories[{j}] must be non-empty and without duplicates")
        self._declared = declared
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
            index = {v: i for i, v in enumerate(kept.tolist())}
            codes = np.array([index.get(v, -1) for v in X[:, j].tolist()], dtype=np.int64)
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
