"""scikit-learn scorers for the fairness violations.

The scorers follow scikit-learn's sign convention, *greater is better*: they
return the **negated** violation (``0`` is perfectly fair, ``-0.3`` is a 0.3
gap), like ``neg_log_loss`` in scikit-learn or fairlearn's usage of
``greater_is_better=False``.  They compute the violation of
``estimator.predict(X)`` on the evaluation rows.

The sensitive features of the evaluation rows reach a scorer through
scikit-learn's metadata routing, which must be enabled::

    import sklearn
    sklearn.set_config(enable_metadata_routing=True)

    cross_validate(clf, X, y, params={"sensitive_features": s},
                   scoring={"acc": "accuracy", "dp": demographic_parity_scorer})
    GridSearchCV(clf, grid, scoring={"acc": "accuracy", "dp": demographic_parity_scorer},
                 refit="acc").fit(X, y, sensitive_features=s)

The scorers *request* ``sensitive_features`` for ``score`` at class level,
so no ``set_score_request`` call is needed (and the module-level scorers can
be created at import time, when routing may still be disabled).  The
estimator does not need to consume ``sensitive_features``: routing sends it to
the scorer only, and the cross-validation splitters index it with each test
fold like any sample-aligned metadata (pass a DataFrame, not a dict, for
several attributes).

Implementation note: the scorer class subclasses scikit-learn's private
``sklearn.metrics._scorer._Scorer`` (what :func:`sklearn.metrics.make_scorer`
returns), so it shares scikit-learn's prediction caching across several
scorers and its ``set_score_request`` aliasing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

import sklearn
from sklearn.metrics._scorer import _cached_call, _Scorer

from .metrics import (
    demographic_parity_violation,
    equal_opportunity_violation,
    equalized_odds_violation,
)

__all__ = [
    "FairnessScorer",
    "demographic_parity_scorer",
    "equal_opportunity_scorer",
    "equalized_odds_scorer",
    "make_fairness_scorer",
]


def _missing_sensitive_features_message(scorer: FairnessScorer) -> str:
    if sklearn.get_config().get("enable_metadata_routing", False):
        cause = (
            "Metadata routing is enabled, but sensitive_features was not passed: pass it "
            "as metadata, e.g. cross_validate(..., params={'sensitive_features': s}) or "
            "GridSearchCV(...).fit(X, y, sensitive_features=s)."
        )
    else:
        cause = (
            "scikit-learn only forwards it to scorers through metadata routing, which is "
            "disabled: call sklearn.set_config(enable_metadata_routing=True) (or use "
            "`with sklearn.config_context(enable_metadata_routing=True):`) and pass "
            "sensitive_features as metadata, e.g. cross_validate(..., "
            "params={'sensitive_features': s}) or GridSearchCV(...).fit(X, y, "
            "sensitive_features=s)."
        )
    return (
        f"The fairness scorer {scorer!r} did not receive sensitive_features. {cause} "
        "To call the scorer directly use scorer(estimator, X, y, sensitive_features=s)."
    )


class FairnessScorer(_Scorer):
    """Scorer returning the negated fairness violation of ``estimator.predict``.

    Build instances with :func:`make_fairness_scorer`.  Instances request
    ``sensitive_features`` for ``score`` through metadata routing by default
    (an alias can still be set with ``set_score_request``).
    """

    __metadata_request__score = {"sensitive_features": True}

    def __repr__(self) -> str:
        kwargs = "".join(f", {k}={v!r}" for k, v in self._kwargs.items())
        return f"make_fairness_scorer({self._score_func.__name__}{kwargs})"

    def _score(
        self, method_caller: Callable[..., Any], estimator: Any, X: Any, y_true: Any, **kwargs
    ) -> float:
        if kwargs.get("sensitive_features") is None:
            raise ValueError(_missing_sensitive_features_message(self))
        return float(super()._score(method_caller, estimator, X, y_true, **kwargs))

    def __call__(
        self, estimator: Any, X: Any, y_true: Any, *, sensitive_features: Any = None, **kwargs
    ) -> float:
        """Negated violation of ``estimator.predict(X)`` against ``y_true``.

        Parameters
        ----------
        estimator : fitted classifier
            Its ``predict`` gives the hard predictions.
        X : array-like of shape (n_samples, n_features)
            Evaluation inputs.
        y_true : array-like of shape (n_samples,)
            True labels.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Sensitive labels of the rows of ``X``.  May be passed directly,
            whether or not metadata routing is enabled.
        **kwargs : dict
            Not supported; raises a TypeError.

        Returns
        -------
        float
            ``-violation`` (greater is better).
        """
        if kwargs:
            raise TypeError(
                f"{self!r} got unexpected keyword argument(s) {sorted(kwargs)}; fairness "
                "scorers only accept sensitive_features."
            )
        return self._score(
            partial(_cached_call, None),
            estimator,
            X,
            y_true,
            sensitive_features=sensitive_features,
        )


def make_fairness_scorer(violation: Callable[..., float], **kwargs: Any) -> FairnessScorer:
    """Make a scorer returning ``-violation(y_true, estimator.predict(X), ...)``.

    Parameters
    ----------
    violation : callable
        ``violation(y_true, y_pred, *, sensitive_features, **kwargs)``, e.g.
        :func:`~skfairdp.fairness.demographic_parity_violation`.
    **kwargs : dict
        Fixed keyword arguments of ``violation`` (e.g. ``pos_label``).

    Returns
    -------
    FairnessScorer
        Usable as ``scoring=`` or as a value of a ``scoring`` dict; it
        requests ``sensitive_features`` through metadata routing.

    Examples
    --------
    >>> from skfairdp.metrics import equal_opportunity_violation, make_fairness_scorer
    >>> make_fairness_scorer(equal_opportunity_violation, pos_label="yes")
    make_fairness_scorer(equal_opportunity_violation, pos_label='yes')
    """
    if "sensitive_features" not in inspect.signature(violation).parameters:
        raise TypeError(f"{violation!r} must accept a sensitive_features keyword argument.")
    if "sensitive_features" in kwargs:
        raise TypeError(
            "sensitive_features is passed at scoring time, not to make_fairness_scorer."
        )
    return FairnessScorer(violation, -1, kwargs, response_method="predict")


#: Scorer for ``-demographic_parity_violation`` (greater is better).
demographic_parity_scorer = make_fairness_scorer(demographic_parity_violation)
#: Scorer for ``-equalized_odds_violation`` (greater is better).
equalized_odds_scorer = make_fairness_scorer(equalized_odds_violation)
#: Scorer for ``-equal_opportunity_violation`` (greater is better).
equal_opportunity_scorer = make_fairness_scorer(equal_opportunity_violation)
