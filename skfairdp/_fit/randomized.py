"""Randomised prediction: a mixture of classifiers predicts by drawing each row's class.

RaCO-DP's ``solution="mixture"`` and CGOOReduction's mixture of atoms are
randomised classifiers: the rates their constraints bound are those of a class
drawn per row from ``predict_proba``, as fairlearn's ``ExponentiatedGradient``.
Thresholding ``predict_proba`` instead voids the guarantee.

Where the draws come from (:func:`prediction_random`): a ``random_state`` the caller
passes to ``predict`` is used as given (reproducible on purpose); without one, the
estimator's ``random_state``, except under ``secure_mode=True``, where the draws come
from the OS CSPRNG like every other random bit of the estimator.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from ..privacy import RandomSource

__all__ = ["draw_classes", "draw_indices", "prediction_random"]


def prediction_random(estimator, random_state):
    """The source of a randomised ``predict``'s draws.

    Parameters
    ----------
    estimator : estimator with ``random_state`` and ``secure_mode``
    random_state : None, int or RandomState
        What the caller passed to ``predict``.

    Returns
    -------
    None, int, RandomState or RandomSource
        ``random_state`` if given; else a CSPRNG :class:`~skfairdp.privacy.RandomSource`
        in ``secure_mode``; else the estimator's ``random_state``.
    """
    if random_state is not None:
        return random_state
    if getattr(estimator, "secure_mode", False):
        return RandomSource(secure_mode=True)
    return estimator.random_state


def _uniforms(random_state, size: int) -> np.ndarray:
    """``size`` uniforms in ``[0, 1)`` from a seed, a RandomState or a RandomSource."""
    if isinstance(random_state, RandomSource):
        return 1.0 - random_state.uniform(size)
    return check_random_state(random_state).uniform(size=size)


def draw_indices(p: np.ndarray, size: int, random_state) -> np.ndarray:
    """``size`` i.i.d. indices drawn with probabilities ``p`` (numpy's ``choice`` when seeded).

    Parameters
    ----------
    p : ndarray of shape (k,)
    size : int
    random_state : None, int, RandomState or RandomSource

    Returns
    -------
    ndarray of int, shape (size,)
    """
    if isinstance(random_state, RandomSource):
        cdf = np.cumsum(p)
        picked = np.searchsorted(cdf / cdf[-1], _uniforms(random_state, size), side="right")
        return np.minimum(picked, len(p) - 1)
    return check_random_state(random_state).choice(len(p), size, p=p)


def draw_classes(proba: np.ndarray, classes: np.ndarray, random_state) -> np.ndarray:
    """Each row's class drawn from its row of ``proba`` (fairlearn's binary draw).

    One uniform ``u`` per row: the last class when ``u < p_last``, then the one
    before, and so on (for two classes: ``classes[1]`` when ``u < p_1``).

    Parameters
    ----------
    proba : ndarray of shape (n_samples, n_classes)
    classes : ndarray of shape (n_classes,)
    random_state : None, int, RandomState or RandomSource
        A seed makes the draws reproducible (a row's class then depends on its
        position in ``X``); a secure :class:`~skfairdp.privacy.RandomSource` draws
        from the OS CSPRNG.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    u = _uniforms(random_state, proba.shape[0])
    from_last = (u[:, None] >= np.cumsum(proba[:, ::-1], axis=1)).sum(axis=1)
    return classes[np.maximum(len(classes) - 1 - from_last, 0)]
