"""A warning when a fit ends in a model no better than a constant.

Seen with very large fairness weights, huge learning rates or noise that
drowns the signal: the model predicts one class everywhere, or is less accurate
on its own training data than always predicting the majority class. The check
reads the training data, so it is not private: it only warns whoever runs
``fit`` (who holds the data), states no statistic (one bit: degenerate or not)
and stores nothing in the fitted model.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from sklearn.base import is_regressor


class DegenerateModelWarning(UserWarning):
    """The fitted model predicts a single class or is worse than the majority rate."""


def warn_if_degenerate(estimator, X, y) -> None:
    """Warn (:class:`DegenerateModelWarning`) with the likely cause if the fit is degenerate.

    A classifier: one class everywhere, or less accurate than the majority class.
    A regressor: a larger squared error on its training data than the mean of ``y``.
    """
    y = np.asarray(y)
    if y.ndim != 1 or len(y) == 0 or not hasattr(estimator, "module_"):
        return
    if getattr(estimator, "fallback_class_", None) is not None:
        return  # the constant on purpose: fallback_to_constant warned already
    if _is_regressor(estimator):
        _warn_if_worse_than_mean(estimator, X, y)
        return
    predicted = estimator.predict(X)
    _, counts = np.unique(y, return_counts=True)
    single = predicted[:1].tolist() if len(np.unique(predicted)) == 1 else []
    what = _failure(single, float(np.mean(predicted == y)), counts.max() / counts.sum())
    if what is not None:
        _warn(estimator, what, stacklevel=5)  # user -> fit -> _private_fit -> here -> _warn


def _failure(single: list, accuracy: float, majority: float) -> str | None:
    """What is degenerate about training decisions, or None; ``single``: ``[c]`` when
    every decision is class ``c``, else empty."""
    if not single and accuracy >= majority:
        return None
    return (
        f"predicts the single class {single[0]!r} for every training row"
        if single
        # no numbers: the warning may end up in logs, and exact training accuracy is an
        # unnoised statistic of the private data (the warning itself is one bit)
        else "is less accurate on its training data than predicting the majority class "
        "(below the majority-class rate)"
    )


def _is_regressor(estimator) -> bool:
    try:
        return is_regressor(estimator)
    except AttributeError:  # an object without scikit-learn tags: not a regressor
        return False


def _warn_if_worse_than_mean(estimator, X, y) -> None:
    y = y.astype(np.float64)
    squared_error = np.mean((estimator.predict(X) - y) ** 2)
    if np.isfinite(squared_error) and squared_error <= np.var(y):
        return
    # no numbers (see above): one bit
    what = "has a larger squared error on its training data than predicting the mean of y"
    _warn(estimator, what, stacklevel=6)


def _warn(estimator, what: str, stacklevel: int) -> None:
    causes = ["a learning rate too large for the noise (lower lr)"]
    if float(getattr(estimator, "fairness_weight", 0) or 0) > 0:
        causes.insert(0, "a fairness weight so large that a constant predictor wins")
    if np.isfinite(float(getattr(estimator, "epsilon", np.inf))):
        causes.append("noise that drowns the signal (larger epsilon, batch_size or more data)")
    causes.append("too few epochs (max_epochs)")
    causes.append(
        "features that do not predict the label better than a constant (a non-private "
        "model fitted on them may do no better)"
    )
    _emit(estimator, what, causes, stacklevel + 1)


def _emit(estimator, what: str, causes: list[str], stacklevel: int) -> None:
    warnings.warn(
        f"{type(estimator).__name__}: the fitted model {what}. Likely causes: "
        + "; ".join(causes)
        + ". (This check reads the training data; it is not part of the privacy guarantee "
        "and nothing of it is stored in the model.)",
        DegenerateModelWarning,
        stacklevel=stacklevel,
    )


def warn_if_thresholds_degenerate(estimator, positive: np.ndarray, y01: np.ndarray) -> None:
    """A post-processor's check (:class:`DegenerateModelWarning`) of its own decisions on
    the training rows: ``positive``, each row's probability of the positive class (its
    thresholds on the scores the fit binned; no second pass), ``y01`` 1 for that class.
    It warns where every decision is one class, or the expected accuracy is below the
    majority class's.

    Its base estimator's own warning is not shown (the thresholds work from its
    scores, not its decisions). One unnoised bit, like :func:`warn_if_degenerate`.
    """
    if getattr(estimator, "fallback_class_", None) is not None:
        return  # the constant on purpose: fallback_to_constant warned already
    classes = estimator.classes_.tolist()
    single = [classes[1]] if np.all(positive == 1.0) else []
    single = [classes[0]] if np.all(positive == 0.0) else single
    share = float(np.mean(y01))
    accuracy = float(np.mean(np.where(y01 == 1, positive, 1.0 - positive)))
    what = _failure(single, accuracy, max(share, 1.0 - share))
    if what is None:
        return
    causes = [
        "a base estimator whose scores do not separate the classes (features that "
        "predict nothing better than a constant, or its own noise: a larger epsilon)",
        "noisy counts of small groups (a larger epsilon, fewer n_bins or a looser tol)",
    ]
    _emit(estimator, what, causes, stacklevel=4)  # user -> fit -> here -> _emit


@contextmanager
def degenerate_warnings_hidden() -> Iterator[None]:
    """Hide :class:`DegenerateModelWarning` in this block (an inner fit whose decisions
    its owner does not use, and whose owner checks its own)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateModelWarning)
        yield
