"""Randomised prediction: a mixture of classifiers predicts by drawing each row's class.

RaCO-DP's ``solution="mixture"`` and CGOOReduction's mixture of atoms are
randomised classifiers: the rates their constraints bound are those of a class
drawn per row from ``predict_proba``, as fairlearn's ``ExponentiatedGradient``.
Thresholding ``predict_proba`` instead voids the guarantee.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["draw_classes"]


def draw_classes(proba: np.ndarray, classes: np.ndarray, random_state) -> np.ndarray:
    """Each row's class drawn from its row of ``proba`` (fairlearn's binary draw).

    One uniform ``u`` per row: the last class when ``u < p_last``, then the one
    before, and so on (for two classes: ``classes[1]`` when ``u < p_1``).

    Parameters
    ----------
    proba : ndarray of shape (n_samples, n_classes)
    classes : ndarray of shape (n_classes,)
    random_state : None, int or RandomState
        A seed makes the draws reproducible (a row's class then depends on its
        position in ``X``).

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    rng = check_random_state(random_state)
    u = rng.uniform(size=proba.shape[0])
    from_last = (u[:, None] >= np.cumsum(proba[:, ::-1], axis=1)).sum(axis=1)
    return classes[np.maximum(len(classes) - 1 - from_last, 0)]
