"""Preprocessing inside the guarantee: a scaler, a one-hot encoder, a discretizer, an imputer.

A scikit-learn ``StandardScaler`` or ``OneHotEncoder`` in front of a private
estimator reads the private rows without noise: its means, scales and categories
are released (they shape every prediction) and no estimator's ``privacy_spent_``
covers them. The transformers here are the first steps of a private
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

:class:`DPKBinsDiscretizer` bins numeric features (a GAM's main effects for any
estimator here) with edges from the declared bounds (free) or from one noisy histogram
per feature (private quantiles); :func:`make_trend_and_bins` puts each numeric column's
linear term beside its bins, scaled so the bins add one feature's worth of norm.

:class:`DPSimpleImputer` fills missing values with a constant (free: it reads no
row) or, privately, with a noisy mean or median within declared bounds, or the
most frequent of declared categories.

The privacy unit is one row (add or remove one, ``privacy_unit="record"``); the
number of rows is public, as for every skfairdp estimator. These steps read ``X``
only: under an estimator's ``privacy_unit="sensitive"`` (``X`` public), they cost
nothing, and :func:`~skfairdp.privacy.spent` counts them so.
"""

from .bounds import parse_bounds
from .discretizer import DPKBinsDiscretizer, fine_histograms, make_trend_and_bins
from .encoder import DPOneHotEncoder, category_counts
from .imputer import DPSimpleImputer
from .scaler import DPStandardScaler, moment_sums

__all__ = [
    "DPKBinsDiscretizer",
    "DPOneHotEncoder",
    "DPSimpleImputer",
    "DPStandardScaler",
    "category_counts",
    "fine_histograms",
    "make_trend_and_bins",
    "moment_sums",
    "parse_bounds",
]
