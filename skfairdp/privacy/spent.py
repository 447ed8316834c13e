"""What a whole workflow spent: the composed cost of everything fitted on the same people.

:func:`spent` takes anything already fitted -- one estimator, a ``Pipeline``
(private preprocessing steps included), a ``GridSearchCV``/``RandomizedSearchCV``,
the dict ``cross_validate(..., return_estimator=True)`` returns, a
:class:`~skfairdp.model_selection.PrivateSearchCV`, or a list of any of these --
and returns the ``(epsilon, delta)`` of all their releases, composed
sequentially (every fit is counted as seeing every person: an upper bound) by
dp-accounting, in the same :class:`~skfairdp.privacy.PrivacySpent` as an
estimator's ``privacy_spent_``.

What each object contributes:

- a fitted estimator with ``dp_event_``: that recorded event;
- a ``Pipeline`` / ``ColumnTransformer``: the events of all its fitted steps (each
  reads the same rows); a step without ``dp_event_`` that had to be fitted (a
  scikit-learn ``StandardScaler``) read the data without noise and makes the total
  infinite, and :func:`spent` warns (:class:`UnaccountedStepWarning`) naming every
  such step (:func:`unaccounted_steps` lists them); ``"passthrough"``, stateless steps
  (``FunctionTransformer``) and row-blind scikit-learn steps
  (:mod:`skfairdp.privacy.row_blind`: ``SimpleImputer(strategy="constant",
  keep_empty_features=True)``, encoders with declared categories) cost nothing;
- a scikit-learn search: **every candidate on every fold, plus the refit**. The
  fold fits are not kept by scikit-learn, so each is charged its *planned* event
  (:func:`skfairdp.privacy.planning.planned_fit_event`: the candidate's parameters, on
  that fold's training rows, all planned steps run). Pass the ``X``, ``y`` (and
  ``groups``) the search was fitted on, so that the fold sizes are those of the
  search's own splitter. Assumption: the event of a skfairdp fit depends only on
  the number of rows and on the parameters, never on the data's values (true of
  every skfairdp estimator; a fit that stopped early spent less than planned).
  The refit is charged the event it recorded (``best_estimator_``);
- a ``cross_validate`` result: the recorded events of ``result["estimator"]``;
- a list or tuple: all of its items.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import dp_accounting

from .accountant import PRIVACY_UNITS, PrivacySpent, epsilon_spent
from .events import compose
from .planning import planned_delta, planned_fit_event
from .row_blind import reads_no_rows, row_reading_hint

__all__ = [
    "UnaccountedStepWarning",
    "spent",
    "spent_event",
    "unaccounted_steps",
    "unplanned_steps",
]

# The unit of a release that read only X and y (a scikit-learn step, a skfairdp
# preprocessing step): priced as "record", free under "sensitive" (X, y public).
_XY = "xy"


@dataclass(frozen=True)
class _Release:
    """One fit's event, with the delta and accounting it was priced with."""

    event: dp_accounting.DpEvent
    delta: float | None
    privacy_unit: str
    accountant: str
    step: str = ""  # where it sits in obj, as set_params names it, and what it is


class UnaccountedStepWarning(UserWarning):
    """:func:`spent` is infinite: the message names the steps that read rows without noise."""


def spent(
    obj, *, delta: float | None = None, accountant: str | None = None, X=None, y=None, groups=None
) -> PrivacySpent:
    """The honest composed ``(epsilon, delta)`` of everything ``obj`` fitted on the same data.

    Parameters
    ----------
    obj : fitted estimator, Pipeline, search, cross_validate dict, or list of them
        See the module docstring for what each contributes.
    delta : float, optional
        The delta at which to report epsilon. Default: the smallest delta any of
        the fits targeted.
    accountant : {"auto", "rdp", "pld"}, optional
        Default: the fits' own accountant when they all use the same one, else
        ``"auto"`` (RDP for ``privacy_unit="record"``, PLD for ``"sensitive"``).
    X, y, groups : array-like, optional
        The data a scikit-learn search (``GridSearchCV``, ``RandomizedSearchCV``)
        was fitted on; needed only for such searches, to size their folds.

    Returns
    -------
    PrivacySpent
        ``(epsilon, delta)``; ``(inf, 0.0)`` if anything read the data without noise
        (with an :class:`UnaccountedStepWarning` naming those steps, which
        :func:`unaccounted_steps` lists), ``(0.0, 0.0)`` if nothing private was released.

    Raises
    ------
    ValueError
        If the fits use different privacy units (their guarantees are about
        different neighbouring datasets and do not compose into one number), if
        an object is not fitted, or if a search is given without ``X``.

    Examples
    --------
    >>> from skfairdp.privacy import spent
    >>> spent([fit_a, fit_b])  # doctest: +SKIP
    PrivacySpent(epsilon=1.43, delta=1e-05)
    """
    event, releases = _composed(obj, X, y, groups)
    unit = _one_unit(releases)
    if delta is None:
        deltas = [r.delta for r in releases if r.delta is not None and r.delta > 0]
        delta = min(deltas) if deltas else 1e-5
    if accountant is None:
        kinds = {r.accountant for r in releases}
        accountant = kinds.pop() if len(kinds) == 1 else "auto"
    if _non_private(event):
        warnings.warn(_unaccounted_message(releases), UnaccountedStepWarning, stacklevel=2)
        return PrivacySpent(math.inf, 0.0)
    if isinstance(compose([event]), dp_accounting.NoOpDpEvent):
        return PrivacySpent(0.0, 0.0)
    return epsilon_spent(event, float(delta), accountant=accountant, privacy_unit=unit)


def spent_event(obj, *, X=None, y=None, groups=None) -> dp_accounting.DpEvent:
    """The composed :class:`dp_accounting.DpEvent` that :func:`spent` prices.

    Parameters
    ----------
    obj, X, y, groups
        As in :func:`spent`.

    Returns
    -------
    dp_accounting.DpEvent
        ``ComposedDpEvent`` of every fit's event, in order (no-ops dropped).
    """
    return _composed(obj, X, y, groups)[0]


def unaccounted_steps(obj, *, X=None, y=None, groups=None) -> list[str]:
    """The steps of ``obj`` that read the rows without noise (what makes :func:`spent` infinite).

    Parameters
    ----------
    obj, X, y, groups
        As in :func:`spent`.

    Returns
    -------
    list of str
        One entry per step: its path in ``obj`` (``set_params`` style,
        ``"columntransformer__num"``; a list's items are ``"[i]"``), the step, and what
        would make it free or accounted. Empty when the cost is finite.
    """
    return _unaccounted(_composed(obj, X, y, groups)[1])


def unplanned_steps(estimator, n_samples: int) -> list[str]:
    """The steps of an unfitted ``estimator`` whose fit on ``n_samples`` rows would read them
    without noise (as :func:`unaccounted_steps`, from the planned events; no fit runs)."""
    return _unaccounted(list(_planned(estimator, int(n_samples), "", "")))


def _unaccounted(releases: list[_Release]) -> list[str]:
    steps = [r.step for r in releases if _non_private(r.event)]
    return list(dict.fromkeys(steps))


def _unaccounted_message(releases: list[_Release]) -> str:
    steps = _unaccounted(releases)
    listed = "\n".join(f"  - {step}" for step in steps)
    return (
        f"spent() is infinite: {len(steps)} step{'s' if len(steps) > 1 else ''} read the "
        f"training rows without noise:\n{listed}\nRow-blind steps (FunctionTransformer, "
        "SimpleImputer(strategy='constant', keep_empty_features=True), encoders with "
        "declared categories) cost nothing; see skfairdp.privacy.row_blind."
    )


def _composed(obj, X, y, groups) -> tuple[dp_accounting.DpEvent, list[_Release]]:
    releases = list(_releases(obj, X, y, groups))
    if _one_unit(releases) == "sensitive":
        # X and y are public under this unit: what reads only them releases nothing private
        releases = [r for r in releases if r.privacy_unit != _XY]
    return compose(r.event for r in releases), releases


def _one_unit(releases: list[_Release]) -> str:
    units = {r.privacy_unit for r in releases if not _is_noop(r.event) and r.privacy_unit != _XY}
    if len(units) > 1:
        raise ValueError(
            f"the fits use different privacy units {sorted(units)}: their guarantees are about "
            "different neighbouring datasets and do not compose into one (epsilon, delta)"
        )
    return units.pop() if units else "record"


def _is_noop(event) -> bool:
    return isinstance(compose([event]), dp_accounting.NoOpDpEvent)


def _non_private(event) -> bool:
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return True
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(_non_private(e) for e in event.events)
    inner = getattr(event, "event", None)
    return inner is not None and _non_private(inner)


def _options(estimator) -> tuple[str, str]:
    options = {}
    getter = getattr(estimator, "_accountant_options", None)
    if callable(getter):
        try:
            options = dict(getter())
        except Exception:  # an estimator whose options need fitted state it lacks
            options = {}
    unit = options.get("privacy_unit", getattr(estimator, "privacy_unit", "record"))
    if unit not in PRIVACY_UNITS:
        unit = "record"
    if getattr(estimator, "_reads_only_xy", False):
        unit = _XY
    return unit, options.get("accountant", getattr(estimator, "accountant", "auto"))


def _recorded(estimator, path: str) -> _Release:
    spent_ = getattr(estimator, "privacy_spent_", None)
    delta = None if spent_ is None else float(spent_.delta)
    unit, accountant = _options(estimator)
    if accountant not in ("auto", "rdp", "pld"):
        accountant = "auto"
    step = _label(path, estimator, "its dp_event_ holds a release without noise (epsilon=inf?)")
    return _Release(estimator.dp_event_, delta, unit, accountant, step)


def _label(path: str, estimator, why: str) -> str:
    text = _one_line(estimator)
    return f"{path}: {text}: {why}" if path else f"{text}: {why}"


def _one_line(estimator) -> str:
    """``repr(estimator)`` on one line, at most 100 characters."""
    text = " ".join(repr(estimator).split())
    return text if len(text) <= 100 else text[:97] + "..."


def _join(path: str, name) -> str:
    return f"{path}__{name}" if path else str(name)


def _releases(obj, X, y, groups, path: str = ""):
    from sklearn.compose import ColumnTransformer
    from sklearn.model_selection._search import BaseSearchCV
    from sklearn.pipeline import Pipeline

    if isinstance(obj, Mapping):
        if "estimator" not in obj:
            raise ValueError(
                "a cross_validate result needs return_estimator=True: the fits' dp_event_ are "
                "read from result['estimator']"
            )
        yield from _releases(list(obj["estimator"]), X, y, groups, _join(path, "estimator"))
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            yield from _releases(item, X, y, groups, f"{path}[{i}]")
    elif getattr(obj, "dp_event_", None) is not None:
        yield _recorded(obj, path)
    elif isinstance(obj, Pipeline):
        _check_fitted(obj)
        for name, step in obj.steps:
            yield from _releases(step, X, y, groups, _join(path, name))
    elif isinstance(obj, ColumnTransformer):
        _check_fitted(obj)
        for name, transformer, _ in obj.transformers_:
            yield from _releases(transformer, X, y, groups, _join(path, name))
    elif isinstance(obj, BaseSearchCV):
        yield from _search_releases(obj, X, y, groups, path)
    elif reads_no_rows(obj):
        return
    else:
        _check_fitted(obj)
        # fitted on the data without any noise (a scikit-learn scaler, a non-private model)
        step = _label(path, obj, row_reading_hint(obj))
        yield _Release(dp_accounting.NonPrivateDpEvent(), None, _XY, "auto", step)


def _check_fitted(obj) -> None:
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(obj)


def _search_releases(search, X, y, groups, path: str):
    """Every candidate on every fold (planned events) plus the refit (recorded)."""
    from sklearn.base import clone, is_classifier
    from sklearn.model_selection import check_cv
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(search, "cv_results_")
    if hasattr(search, "n_resources_"):
        raise ValueError(
            f"{type(search).__name__} fits candidates on growing subsets; spent() prices "
            "GridSearchCV and RandomizedSearchCV (or pass the fits themselves)"
        )
    if X is None:
        raise ValueError(
            f"spent({type(search).__name__}) needs the X (and y, groups) the search was fitted "
            "on: scikit-learn keeps no fold fits, so each is charged the planned event of its "
            "candidate on that fold's training rows, whose number comes from the search's cv"
        )
    cv = check_cv(search.cv, y, classifier=is_classifier(search.estimator))
    sizes = [len(train) for train, _ in cv.split(X, y, groups)]
    if len(sizes) != search.n_splits_:
        raise ValueError(
            f"the search was fitted with {search.n_splits_} splits but its cv gives {len(sizes)} "
            "on this X, y: pass the data the search was fitted on"
        )
    folds, note = _join(path, "estimator"), f" (the fold fits of {type(search).__name__})"
    for params in search.cv_results_["params"]:
        candidate = clone(search.estimator).set_params(**params)
        for n in sizes:
            yield from _planned(candidate, n, folds, note)
    if getattr(search, "refit", False) and hasattr(search, "best_estimator_"):
        yield from _releases(search.best_estimator_, X, y, groups, _join(path, "best_estimator_"))


def _planned(estimator, n: int, path: str, note: str):
    """The planned releases of fitting ``estimator`` on ``n`` rows, step by step."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    if isinstance(estimator, Pipeline):
        for name, step in estimator.steps:
            yield from _planned(step, n, _join(path, name), note)
        return
    if isinstance(estimator, ColumnTransformer):
        for name, transformer, _ in estimator.transformers:
            yield from _planned(transformer, n, _join(path, name), note)
        yield from _planned(estimator.remainder, n, _join(path, "remainder"), note)
        return
    unit, accountant = _options(estimator)
    if getattr(estimator, "dp_event_", None) is None and not hasattr(estimator, "epsilon"):
        unit = _XY  # a scikit-learn step: reads X (and y) only
    if accountant not in ("auto", "rdp", "pld"):
        accountant = "auto"
    event = planned_fit_event(estimator, n)
    why = (
        row_reading_hint(estimator)
        or "its planned event holds a release without noise (epsilon=inf?)"
    )
    step = _label(path + note, estimator, why) if _non_private(event) else path
    yield _Release(event, planned_delta(estimator, n), unit, accountant, step)
