"""The fitted search answers with the model it selected (and only that model)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

__all__ = ["SelectedModelMixin"]


def _estimator_has(name: str):
    def check(self) -> bool:
        return hasattr(self.estimator, name)

    return check


class SelectedModelMixin:
    """``predict``, ``predict_proba``, ``decision_function``, ``score``: ``best_estimator_``'s."""

    def _check_model(self) -> bool:
        check_is_fitted(self, "dp_event_")
        if self.best_estimator_ is None:
            raise ValueError("the search ran no candidate (K=0): it has no model")
        return True

    @available_if(_estimator_has("predict"))
    def predict(self, X) -> np.ndarray:
        """Predictions of the selected model."""
        self._check_model()
        return self.best_estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities of the selected model."""
        self._check_model()
        return self.best_estimator_.predict_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X) -> np.ndarray:
        """Decision function of the selected model."""
        self._check_model()
        return self.best_estimator_.decision_function(X)

    def score(self, X, y, **params) -> float:
        """The selected model's ``score`` (accuracy for a classifier)."""
        self._check_model()
        return self.best_estimator_.score(X, y, **params)
