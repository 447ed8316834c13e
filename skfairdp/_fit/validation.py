"""Input validation shared by the estimators: X, y, ``sample_weight``, ``hidden_layer_sizes``.

scikit-learn's own checks do the work (dtype, finiteness, shape, feature
names); this module adds what its messages lack: the name of the offending
argument and what was expected, e.g. ``"Expected 2D array, got 1D array"``
becomes ``"Invalid X (expected a 2-D array-like ...): Expected 2D array, ..."``.
The exception types are sklearn's (ValueError / TypeError), so code and
estimator checks that match on sklearn's wording keep working.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from numbers import Integral

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_y, check_array, validate_data

from ..data.source import reject_source

#: Sparse formats validated as such (others, e.g. dok/lil, are converted to the first).
SPARSE_FORMATS = ("csr", "csc", "coo")

_EXPECTED_X = (
    "expected a 2-D array-like or scipy.sparse matrix of finite numbers, "
    "shape (n_samples, n_features)"
)
_EXPECTED_Y = "expected a 1-D array-like of class labels, shape (n_samples,)"
_EXPECTED_Y_NUMERIC = "expected a 1-D array-like of finite numbers, shape (n_samples,)"
_NAN_HINT = (
    "Impute privately first, e.g. make_pipeline(DPSimpleImputer(bounds=...), estimator) "
    "with skfairdp.preprocessing.DPSimpleImputer, or drop those rows: scikit-learn's "
    "SimpleImputer and IterativeImputer read the rows exactly, so their statistics are not "
    "private."
)
_NOT_NUMERIC = re.compile(r"could not convert|argument must be a string or a(?: real)? number")


def _named(exc: Exception, name: str, expected: str) -> Exception:
    """``exc`` (ValueError/TypeError), its message prefixed with ``name`` unless it names it."""
    message = str(exc)
    if name == "X" and type(exc) is ValueError and "contains NaN" in message:
        first = message.split("\n")[0]  # scikit-learn's own advice points to exact imputers
        return ValueError(f"{first} {_NAN_HINT}")
    if type(exc) not in (ValueError, TypeError) or re.search(rf"\b{name}\b", message):
        return exc
    hint = ""
    if name == "X" and _NOT_NUMERIC.search(message):
        hint = (
            " X must be numeric: encode categorical or string columns first, privately: "
            "skfairdp.preprocessing.DPOneHotEncoder in a ColumnTransformer (or "
            "OneHotEncoder(categories=[...]) with declared categories, which reads no row; "
            "both sparse outputs are accepted)."
        )
    elif name == "y" and "not supported between instances" in message:
        hint = " The labels in y mix types (e.g. str and int): use one type for all labels."
    return type(exc)(f"Invalid {name} ({expected}): {message}{hint}")


def check_X(estimator, X, *, reset: bool, ensure_min_samples: int = 1):
    """Validate ``X`` as float32 for ``estimator`` (sets/checks ``n_features_in_``).

    Accepts scipy.sparse input (returned in one of :data:`SPARSE_FORMATS`; NaN and
    inf among the stored values are rejected as for dense input). Errors name ``X``.
    """
    reject_source(X, type(estimator).__name__)  # the fit template reads one; nothing else
    try:
        return validate_data(
            estimator,
            X,
            reset=reset,
            accept_sparse=SPARSE_FORMATS,
            dtype=np.float32,
            ensure_min_samples=ensure_min_samples,
        )
    except (ValueError, TypeError) as exc:
        named = _named(exc, "X", _EXPECTED_X)
        if named is exc:
            raise
        raise named from exc


def check_y(estimator, y, n_samples: int) -> np.ndarray:
    """Validate classification targets ``y`` for ``n_samples`` rows of X; errors name ``y``."""
    if y is None:  # sklearn's wording (its estimator checks look for it)
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None; "
            "pass one class label per row of X."
        )
    try:
        y = _check_y(y, y_numeric=False, estimator=estimator)
        check_classification_targets(y)
    except (ValueError, TypeError) as exc:
        named = _named(exc, "y", _EXPECTED_Y)
        if named is exc:
            raise
        raise named from exc
    if y.shape[0] != n_samples:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: X has {n_samples} "
            f"rows but y has {y.shape[0]} labels; y needs one class label per row of X."
        )
    return y


def check_y_numeric(estimator, y, n_samples: int) -> np.ndarray:
    """Validate regression targets ``y`` (finite numbers, float64) for ``n_samples`` rows of X."""
    if y is None:  # sklearn's wording (its estimator checks look for it)
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None; "
            "pass one target value per row of X."
        )
    try:
        y = _check_y(y, y_numeric=True, estimator=estimator).astype(np.float64, copy=False)
    except (ValueError, TypeError) as exc:
        named = _named(exc, "y", _EXPECTED_Y_NUMERIC)
        if named is exc:
            raise
        raise named from exc
    if y.shape[0] != n_samples:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: X has {n_samples} "
            f"rows but y has {y.shape[0]} values; y needs one target value per row of X."
        )
    return y


def densify(X) -> np.ndarray:
    """``X`` (validated: float32, dense or sparse) as a dense C-contiguous float32 ndarray.

    Sparse input is expanded (a copy); dense C-contiguous input is returned as is.
    """
    if sp.issparse(X):
        X = X.toarray()
    return np.ascontiguousarray(X, dtype=np.float32)


# -- hidden_layer_sizes ---------------------------------------------------------
HIDDEN_LAYER_SIZES_EXPECTED = "a sequence of positive ints (the hidden layer widths; () for none)"


def is_positive_int_sequence(value) -> bool:
    """Whether ``value`` is a list/tuple/1-D array of ints ``>= 1`` (bools excluded)."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            return False
    elif isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return False
    return all(
        isinstance(v, Integral) and not isinstance(v, (bool, np.bool_)) and v >= 1 for v in value
    )


def check_hidden_layer_sizes(value) -> tuple[int, ...]:
    """``value`` as a tuple of ints; a ValueError naming ``hidden_layer_sizes`` otherwise."""
    if not is_positive_int_sequence(value):
        raise ValueError(f"hidden_layer_sizes must be {HIDDEN_LAYER_SIZES_EXPECTED}; got {value!r}")
    return tuple(int(v) for v in value)


class HiddenLayerSizes(HasMethods):
    """Parameter constraint: :func:`is_positive_int_sequence`.

    Derives from :class:`~sklearn.utils._param_validation.HasMethods` only because
    sklearn's ``make_constraint`` accepts instances of its own constraint classes
    (and their subclasses), not arbitrary constraint objects.
    """

    def __init__(self):
        super().__init__("__len__")

    def is_satisfied_by(self, val):
        return is_positive_int_sequence(val)

    def __str__(self):
        return HIDDEN_LAYER_SIZES_EXPECTED


class TorchDevice(HasMethods):
    """Parameter constraint: a ``torch.device`` or a string ``torch.device`` parses.

    (A :class:`HasMethods` for the same reason as :class:`HiddenLayerSizes`.)
    """

    def __init__(self):
        super().__init__("__str__")

    def is_satisfied_by(self, val):
        if isinstance(val, torch.device):
            return True
        if not isinstance(val, str):
            return False
        try:
            torch.device(val)
        except (RuntimeError, ValueError):
            return False
        return True

    def __str__(self):
        return "a torch.device or a device string such as 'cpu', 'cuda' or 'cuda:0'"


def check_sample_weight(
    sample_weight, n_samples: int, *, epsilon: float, max_sample_weight: float
) -> np.ndarray | None:
    """Sample weights as float64, or None; errors name ``sample_weight`` (and the bound).

    Finite and non-negative, not all zero; when private (finite ``epsilon``), at
    most ``max_sample_weight`` (the bound every sensitivity is scaled by).
    """
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Number):
        weights = np.full(n_samples, float(sample_weight))
    else:
        weights = check_array(
            sample_weight,
            ensure_2d=False,
            dtype=np.float64,
            ensure_all_finite=False,
            input_name="sample_weight",
            copy=True,
        )
    if weights.shape != (n_samples,):
        raise ValueError(
            f"sample_weight.shape == {weights.shape}, expected ({n_samples},): one weight "
            "per row of X"
        )
    private = not math.isinf(epsilon)
    bad = ~np.isfinite(weights) | (weights < 0)
    if private:
        bad |= weights > max_sample_weight
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        if private:
            raise ValueError(
                f"sample_weight must be finite, non-negative and at most max_sample_weight="
                f"{max_sample_weight:g}; got {weights[row]!r} (row {row}). The weights are "
                "public and bounded: each row's clipped contribution is multiplied by its "
                "weight, so max_sample_weight scales the noise; raise it or rescale the weights."
            )
        raise ValueError(
            f"sample_weight must be finite and non-negative; got {weights[row]!r} (row {row})."
        )
    if not weights.any():
        raise ValueError("sample_weight: weights must contain at least one non-zero number.")
    return weights
