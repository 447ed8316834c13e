"""The event a fit *would* execute on ``n`` rows, worked out without training.

:func:`planned_fit_event` answers "what does fitting this (unfitted) estimator on
``n_samples`` rows cost?" before any fit runs, or after a fit whose sub-estimators
scikit-learn did not keep (a ``GridSearchCV``'s fold fits). It is used by
:func:`skfairdp.privacy.spent` for searches and by
:class:`skfairdp.model_selection.PrivateSearchCV` to calibrate its inner budget.

How each kind of estimator is planned:

- a skfairdp estimator built on the fit template
  (:class:`~skfairdp._private_fit.PrivateFitMixin`): a *dry run* of the template
  on ``n_samples`` placeholder rows (one zero feature, two balanced classes, two
  balanced groups): validation of the parameters, the fit context (delta,
  Poisson rate, planned steps), the up-front releases (e.g. DP-FERMI's noisy
  group histogram, drawn on the placeholder rows and thrown away) and the noise
  plan, then the planned event of every planned step. No training runs. The
  events of these estimators depend only on ``n_samples`` and the parameters,
  never on the values of the data (the assumption; tests check planned ==
  recorded), and a fit that stops early records a prefix of this event;
- an object with a ``planned_event(n_samples)`` method taking only the size
  (:mod:`skfairdp.preprocessing`): that method;
- a :class:`~sklearn.pipeline.Pipeline` or :class:`~sklearn.compose.ColumnTransformer`:
  the composition of its steps' plans (every step is fit on the same ``n_samples`` rows);
- ``"passthrough"``/``None`` steps and stateless transformers (``requires_fit``
  tag False, e.g. ``FunctionTransformer``): nothing;
- any other estimator (a scikit-learn ``StandardScaler``, ``LogisticRegression``):
  ``NonPrivateDpEvent`` -- it reads the data with no noise, so its cost is
  infinite.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from ..privacy.events import compose

__all__ = ["is_stateless", "planned_fit_event", "plans_by_size"]


def plans_by_size(method):
    """Mark a ``planned_event(n_samples)`` method as the planning call of this module.

    For a private step whose event depends only on its parameters and the number of
    rows (:mod:`skfairdp.preprocessing`); :func:`planned_fit_event` calls it.
    """
    method._plans_by_size = True
    return method


def is_stateless(estimator) -> bool:
    """Whether fitting ``estimator`` reads nothing from the data (``None``, ``"passthrough"``,
    a transformer whose ``requires_fit`` tag is False)."""
    if estimator is None or (isinstance(estimator, str) and estimator in ("passthrough", "drop")):
        return True
    try:
        return not estimator.__sklearn_tags__().requires_fit
    except AttributeError:
        return False


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
    if is_stateless(estimator):
        return dp_accounting.NoOpDpEvent()
    if isinstance(estimator, Pipeline):
        return compose(planned_fit_event(step, n) for _, step in estimator.steps)
    if isinstance(estimator, ColumnTransformer):
        parts = [t for _, t, _ in estimator.transformers] + [estimator.remainder]
        return compose(planned_fit_event(t, n) for t in parts)
    planner = getattr(estimator, "planned_event", None)
    if planner is not None and getattr(planner, "_plans_by_size", False):
        return planner(n)
    from .template import PrivateFitMixin  # the fit template imports skfairdp.privacy

    if isinstance(estimator, PrivateFitMixin):
        return _dry_run(estimator, n)
    return dp_accounting.NonPrivateDpEvent()


def planned_delta(estimator, n_samples: int) -> float | None:
    """The delta a fit of ``estimator`` on ``n_samples`` rows would target (None if none)."""
    from ..privacy import resolve_delta

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
    if delta is None or epsilon is None or is_stateless(estimator) or math.isinf(epsilon):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resolve_delta(delta, int(n_samples))


def _dry_run(estimator, n: int) -> dp_accounting.DpEvent:
    """The fit template up to its noise plan, on ``n`` placeholder rows; no training."""
    est = clone(estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small-group notes, delta >= 1/n
        est._validate_params()
        if math.isinf(est.epsilon):
            return dp_accounting.NonPrivateDpEvent()
        est._check_params()
        X = np.zeros((n, 1), dtype=np.float32)
        y_enc = (np.arange(n) % 2).astype(np.int64)
        if _is_classifier(est):
            est.classes_ = np.array([0, 1])
        values = getattr(est, "sensitive_values", None)
        labels = np.asarray(values if values is not None else [0, 1], dtype=object)
        sensitive = labels[np.arange(n) % min(2, len(labels))]
        groups = est._encode_groups(sensitive.astype(type(labels[0])), n)
        ctx = est._fit_context(X, y_enc, groups, None)
        ctx.upfront_event = est._upfront_releases(ctx)
        plan = est._noise_plan(ctx)
    steps = ctx.planned_steps if plan.steps is None else min(plan.steps, ctx.planned_steps)
    return ctx.planned_event(est._steps_event(plan, ctx, steps))


def _is_classifier(est) -> bool:
    from sklearn.base import is_classifier

    return is_classifier(est)
