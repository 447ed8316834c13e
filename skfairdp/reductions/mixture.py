"""Prediction of a fitted mixture of atoms (``predictors_`` with probabilities ``weights_``).

A classification reduction is a randomised classifier: each row's class is drawn
from the mixture's probability of predicting 1
(:func:`~skfairdp._fit.randomized.draw_classes`), the predictor whose rates the
constraint bounds. A regression reduction averages its atoms (``"mean"``) or
draws one atom per row (``"mixture"``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._fit.randomized import draw_classes, draw_indices, prediction_random
from .._fit.validation import check_X, densify
from .inputs import is_regression, predict_mode

__all__ = ["MixturePrediction"]


class MixturePrediction:
    """``predict_proba``, ``predict`` and ``score`` of a fitted reduction."""

    def _atom_outputs(self, X) -> np.ndarray:
        """Each atom's predictions on ``X``, shape (n_samples, n_predictors)."""
        check_is_fitted(self, "predictors_")
        X = densify(check_X(self, X, reset=False))
        columns = [np.asarray(atom.predict(X), dtype=np.float64) for atom in self.predictors_]
        return np.column_stack(columns) if columns else np.zeros((X.shape[0], 0))

    @available_if(lambda self: not is_regression(self))
    def predict_proba(self, X) -> np.ndarray:
        """Probability that the randomised classifier predicts each class (mixture of atoms).

        Classification only.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        p = np.clip((self._atom_outputs(X) == 1) @ self.weights_, 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict(self, X, *, random_state=None) -> np.ndarray:
        """Predict with the mixture.

        Classification: draw each row's class from :meth:`predict_proba` (the
        randomised classifier). ``random_state=None`` uses the estimator's
        ``random_state`` (so a seeded fit predicts reproducibly; in ``secure_mode``
        the OS CSPRNG); thresholding
        ``predict_proba`` at 1/2 instead voids the fairness guarantee, which holds
        for the randomised predictions.

        Regression: ``predict_mode="mean"`` returns ``sum_s weights_[s] *
        predictors_[s].predict(X)`` (deterministic; ``random_state`` is unused);
        ``"mixture"`` draws an atom per row with probabilities ``weights_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        random_state : None, int or RandomState, default=None

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        seed = prediction_random(self, random_state)
        if not is_regression(self):
            return draw_classes(self.predict_proba(X), self.classes_, seed)
        outputs = self._atom_outputs(X)
        if predict_mode(self) == "mean":
            return outputs @ self.weights_
        rows = np.arange(outputs.shape[0])
        drawn = draw_indices(self.weights_, rows.size, seed)
        return outputs[rows, drawn]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy of :meth:`predict` (classification), or its R² (regression).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        kind = RegressorMixin if is_regression(self) else ClassifierMixin
        return kind.score(self, X, y, sample_weight=sample_weight)
