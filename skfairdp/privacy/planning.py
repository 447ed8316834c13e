"""The event a fit *would* execute on ``n`` rows, worked out without training.

:func:`planned_fit_event` answers "what does fitting this (unfitted) estimator on
``n_samples`` rows cost?" before any fit runs, or after a fit whose sub-estimators
scikit-learn did not keep (a ``GridSearchCV``'s fold fits). It is used by
:func:`skfairdp.privacy.spent` for searches and by
:class:`skfairdp.model_selection.PrivateSearchCV` to calibrate its inner budget.

This module knows no estimator: it asks each step for its plan.

- an object with a ``planned_event(n_samples)`` method (every skfairdp estimator
  and private transformer): that method (for an estimator on the fit template, a
  dry run of the template with no training);
- a :class:`~sklearn.pipeline.Pipeline` or :class:`~sklearn.compose.ColumnTransformer`:
  the composition of its steps' plans (every step is fit on the same ``n_samples`` rows);
- ``"passthrough"``/``None`` steps, stateless transformers (``requires_fit``
  tag False, e.g. ``FunctionTransformer``) and the row-blind scikit-learn steps of
  :mod:`skfairdp.privacy.row_blind` (``SimpleImputer(strategy="constant",
  keep_empty_features=True)``, encoders with declared categories): nothing;
- any other estimator (a scikit-learn ``StandardScaler``, ``LogisticRegression``):
  ``NonPrivateDpEvent`` -- it reads the data with no noise, so its cost is
  infinite.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from .delta import resolve_delta
from .events import compose
from .row_blind import is_stateless, reads_no_rows

__all__ = ["is_stateless", "planned_delta", "planned_fit_event", "reads_no_rows"]


def planned_fit_event(estimator, n_samples: int) -> dp_accounting.DpEvent:
    """The event fitting a clone of ``estimator`` on ``n_samples`` rows executes (all steps run).

    Parameters
    ----------
    estimator : estimator
        Unfitted (or fitted: only its parameters are read).
    n_samples : int
        Rows the fit would see.

    Returns
    -------
    dp_accounting.DpEvent
        ``NoOpDpEvent`` for a step that reads nothing, ``NonPrivateDpEvent`` for
        one that reads the data without noise.
    """
    n = int(n_samples)
    if n < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if reads_no_rows(estimator):
        return dp_accounting.NoOpDpEvent()
    if isinstance(estimator, Pipeline):
        return compose(planned_fit_event(step, n) for _, step in estimator.steps)
    if isinstance(estimator, ColumnTransformer):
        parts = [t for _, t, _ in estimator.transformers] + [estimator.remainder]
        return compose(planned_fit_event(t, n) for t in parts)
    planner = getattr(estimator, "planned_event", None)
    if callable(planner):
        return planner(n)
    return dp_accounting.NonPrivateDpEvent()


def planned_delta(estimator, n_samples: int) -> float | None:
    """The delta a fit of ``estimator`` on ``n_samples`` rows would target (None if none)."""

    if isinstance(estimator, (Pipeline, ColumnTransformer)):
        steps = (
            [s for _, s in estimator.steps]
            if isinstance(estimator, Pipeline)
            else [t for _, t, _ in estimator.transformers]
        )
        deltas = [planned_delta(step, n_samples) for step in steps]
        deltas = [d for d in deltas if d is not None]
        return min(deltas) if deltas else None
    delta = getattr(estimator, "delta", None)
    epsilon = getattr(estimator, "epsilon", math.inf)
    if delta is None or epsilon is None or reads_no_rows(estimator) or math.isinf(epsilon):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resolve_delta(delta, int(n_samples))
