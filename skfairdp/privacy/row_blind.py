"""Which steps read nothing from the rows, so that fitting them releases nothing private.

A step is **row-blind** when its fitted state depends only on its parameters and on the
shape and column names of ``X`` (public), never on the values of any row. Such a step
costs nothing; every other step without a recorded ``dp_event_`` read the rows exactly
and makes the cost infinite. Row-blind are:

- ``None``, ``"passthrough"``, ``"drop"`` and transformers that need no fit
  (``requires_fit`` tag False, e.g. ``FunctionTransformer``);
- a short, conservative allowlist of scikit-learn steps, exact classes only (a subclass
  may fit differently), with the parameters that keep them row-blind:

  ================================  ===========================================================
  ``SimpleImputer``                 ``strategy="constant"``, ``keep_empty_features=True``,
                                    ``add_indicator=False`` (otherwise a column entirely
                                    missing at fit is dropped, or indicators are kept only
                                    for columns with missing values: both read the rows)
  ``MissingIndicator``              ``features="all"``
  ``OneHotEncoder``,                declared ``categories`` (not ``"auto"``),
  ``OrdinalEncoder``                ``min_frequency=None``, ``max_categories=None``
  ================================  ===========================================================

:func:`row_reading_hint` says, for a step that is not row-blind, what would make it so.
"""

from __future__ import annotations

__all__ = ["is_stateless", "reads_no_rows", "row_reading_hint"]

_PRIVATE_STEPS = "skfairdp.preprocessing (DPStandardScaler, DPOneHotEncoder, DPSimpleImputer)"


def is_stateless(estimator) -> bool:
    """Whether fitting ``estimator`` reads nothing from the data (``None``, ``"passthrough"``,
    a transformer whose ``requires_fit`` tag is False)."""
    if estimator is None or (isinstance(estimator, str) and estimator in ("passthrough", "drop")):
        return True
    try:
        return not estimator.__sklearn_tags__().requires_fit
    except AttributeError:
        return False


def reads_no_rows(estimator) -> bool:
    """Whether fitting ``estimator`` reads nothing from the rows' values (module docstring).

    Parameters
    ----------
    estimator : estimator, None or str

    Returns
    -------
    bool
    """
    return is_stateless(estimator) or _allowlisted(estimator) is None


def row_reading_hint(estimator) -> str:
    """Why fitting ``estimator`` reads the rows, and what would not.

    Parameters
    ----------
    estimator : estimator

    Returns
    -------
    str
        ``""`` for a row-blind step.
    """
    if is_stateless(estimator):
        return ""
    hint = _allowlisted(estimator)
    if hint is None:
        return ""
    return hint or f"it fits on the rows without noise: use {_PRIVATE_STEPS} or a skfairdp model"


def _allowlisted(estimator) -> str | None:
    """None if an allowlisted step is row-blind with these parameters; else a hint
    (``""`` when the step is not on the allowlist at all)."""
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    kind = type(estimator)
    if kind is SimpleImputer:
        if estimator.strategy != "constant":
            return (
                f"strategy={estimator.strategy!r} computes a statistic of the rows: use "
                "skfairdp.preprocessing.DPSimpleImputer"
            )
        if not estimator.keep_empty_features:
            return (
                "it drops a column that is entirely missing at fit, which reads the rows: "
                "set keep_empty_features=True, or use DPSimpleImputer(strategy='constant')"
            )
        if estimator.add_indicator:
            return (
                "add_indicator=True keeps indicators only for columns with missing values at "
                "fit: use DPSimpleImputer(add_indicator=True), which keeps one for every column"
            )
        return None
    if kind is MissingIndicator:
        return None if estimator.features == "all" else "set features='all'"
    if kind in (OneHotEncoder, OrdinalEncoder):
        if isinstance(estimator.categories, str):
            return (
                "categories='auto' reads the categories from the rows: declare them "
                "(categories=[...]) or use skfairdp.preprocessing.DPOneHotEncoder"
            )
        if estimator.min_frequency is not None or estimator.max_categories is not None:
            return "min_frequency or max_categories groups categories by their counts in the rows"
        return None
    return ""
