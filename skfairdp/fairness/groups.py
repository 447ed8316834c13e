"""Encoding of sensitive features into integer group codes.

The formats accepted for ``sensitive_features`` follow fairlearn's conventions:

* one attribute: a list of scalars, a 1-D numpy array, or a pandas Series of
  hashable labels (str, int, bool, ...);
* several attributes: a pandas DataFrame, a 2-D numpy array or list of rows,
  or a dict mapping attribute name to column.  Several attributes define
  *joint* (intersectional) groups, one per element of the Cartesian product of
  the per-attribute categories.

Attribute names are the Series name / DataFrame column / dict key where it is
a string, else ``"sensitive_feature_<i>"`` as in fairlearn.

Categories of each attribute are sorted (natural order for numbers or strings,
and a deterministic ``(kind, type name, repr)`` order for mixed types), so the
encoding never depends on the order in which values appear.  A joint group is
encoded in mixed radix with the first attribute most significant, i.e. the
code of the category tuple ``(i_0, ..., i_{k-1})`` is
``np.ravel_multi_index((i_0, ..., i_{k-1}), [len(c) for c in categories_])``.

This module knows nothing about privacy; it only stores the group *domain*
(never per-group counts).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .inputs import (
    ARG,
    MAX_LISTED,
    check_column,
    is_scalar,
    read_sensitive_features,
    unhashable_error,
    unique_values,
)

__all__ = [
    "GroupEncoder",
    "encode_sensitive_features",
]


_FITTED_ATTRIBUTES = ("names_", "categories_", "n_groups_", "group_labels_", "_explicit_names")


# --------------------------------------------------------------------------
# Deterministic ordering of categories
# --------------------------------------------------------------------------
def _kind(value: Any) -> int:
    if isinstance(value, numbers.Real):  # includes bool and numpy numbers
        return 0
    if isinstance(value, str):
        return 1
    if isinstance(value, bytes):
        return 2
    return 3


def _sort_key(value: Any) -> tuple[int, str, Any]:
    kind = _kind(value)
    if kind < 3:
        return (kind, "", value)
    return (kind, type(value).__qualname__, repr(value))


def sorted_categories(values: Iterable[Any]) -> list[Any]:
    """Sort distinct category values in a fixed, order-independent way.

    Numbers (bool included) sort numerically and strings lexicographically.
    Mixed types are sorted by ``(kind, type name, value or repr)`` with kinds
    ordered numbers < str < bytes < anything else, so the result never depends
    on the order in which values were seen.

    Parameters
    ----------
    values : iterable of hashable
        Distinct values.

    Returns
    -------
    list
        The values in canonical order.
    """
    values = list(values)
    kinds = {_kind(v) for v in values}
    if len(kinds) == 1 and kinds != {3}:
        return sorted(values)
    if len({type(v) for v in values}) == 1:
        try:
            return sorted(values)
        except TypeError:
            pass
    return sorted(values, key=_sort_key)


def _factorize(name: str, column: np.ndarray) -> np.ndarray:
    """Codes of ``column`` values, identifying equal values (no ordering)."""
    try:
        codes, _ = pd.factorize(column, use_na_sentinel=True)
    except TypeError as exc:
        raise unhashable_error(name, exc) from exc
    return codes.astype(np.int64, copy=False)


def observed_group_codes(
    sensitive_features: Any, n_samples: int | None, *, other: str = "y_true"
) -> np.ndarray:
    """Compact codes of the (joint) groups present in ``sensitive_features``.

    Used for evaluation: only the partition of the rows matters, so the codes
    are ``0..n_observed_groups - 1`` in an unspecified order and a single
    group is allowed.

    Parameters
    ----------
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Sensitive labels (fairlearn formats).
    n_samples : int or None
        Expected number of rows, checked if given.
    other : str, default="y_true"
        Name of the array whose length ``n_samples`` is, for error messages.

    Returns
    -------
    codes : ndarray of int64, shape (n_samples,)
        Group codes in ``[0, n_observed_groups)``.
    """
    names, columns, _ = read_sensitive_features(sensitive_features, n_samples, other)
    per_attribute = [_factorize(n, c) for n, c in zip(names, columns, strict=True)]
    if len(per_attribute) == 1:
        return per_attribute[0]
    dims = [int(c.max()) + 1 for c in per_attribute]
    joint = np.ravel_multi_index(tuple(per_attribute), dims)
    _, codes = np.unique(joint, return_inverse=True)
    return codes.astype(np.int64, copy=False).reshape(-1)


def _lookup(name: str, column: np.ndarray, categories: np.ndarray, domain: str) -> np.ndarray:
    """Codes of ``column`` in ``categories``; unknown values raise a ValueError."""
    try:
        codes = pd.Index(categories, dtype=object).get_indexer(column)
    except TypeError as exc:
        raise unhashable_error(name, exc) from exc
    unknown = codes < 0
    if unknown.any():
        bad = sorted_categories(unique_values(name, column[unknown]))
        shown = ", ".join(repr(v) for v in bad[:MAX_LISTED])
        more = f" (and {len(bad) - MAX_LISTED} more)" if len(bad) > MAX_LISTED else ""
        raise ValueError(
            f"{ARG} contains value(s) {shown}{more} in attribute {name!r} that are not "
            f"in {domain} {list(categories)!r}."
        )
    return codes.astype(np.int64, copy=False)


def _format_value(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _format_label(label: Any) -> str:
    if isinstance(label, tuple):
        return "(" + ", ".join(_format_value(v) for v in label) + ")"
    return _format_value(label)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------
class GroupEncoder(TransformerMixin, BaseEstimator):
    """Encode sensitive features into integer (joint) group codes.

    Parameters
    ----------
    sensitive_values : list, list of lists, dict or None, default=None
        Optional *public* declaration of the domain of the sensitive
        attributes, so that which groups exist is not learned from (private)
        data.  For one attribute: a list of its values.  For several: a list
        with one list of values per attribute (in column order) or a dict
        mapping attribute name to its list of values.  Declared values are
        sorted like learned ones.  Data containing a value outside the
        declared domain raises a ValueError.  If None, the domain is the set
        of values observed at ``fit``.
    allow_empty_groups : bool, default=False
        If False, ``fit`` raises a ValueError when a declared or joint group
        has no rows.  If True, empty groups are kept silently.
    allow_single_group : bool, default=False
        If False, ``fit`` raises a ValueError when the domain holds a single
        group (fairness needs two; usually the wrong column was passed). If
        True, one group is accepted, as by fairlearn's ``MetricFrame``.

    Attributes
    ----------
    names_ : list of str
        Attribute names: Series name, DataFrame columns / dict keys, or
        ``"sensitive_feature_<i>"`` where no string name is available.
    categories_ : list of ndarray of dtype object
        Sorted categories of each attribute.
    n_groups_ : int
        Number of (joint) groups, the product of the numbers of categories.
    group_labels_ : ndarray of dtype object, shape (n_groups,)
        ``group_labels_[code]`` is the label of the group with that code: the
        category value itself for one attribute (e.g. ``"Female"``), and the
        tuple of category values in attribute order for several attributes
        (e.g. ``("Female", "Black")``), as in fairlearn's ``MetricFrame``
        (Multi)Index.  :meth:`format_group` gives a ``"name=value"`` string.

    Notes
    -----
    No per-group counts are stored: the fitted encoder only contains the group
    domain, which is public when ``sensitive_values`` is declared.

    Examples
    --------
    >>> from skfairdp.fairness import GroupEncoder
    >>> enc = GroupEncoder().fit(["b", "a", "b"])
    >>> enc.transform(["a", "b"]).tolist()
    [0, 1]
    >>> enc.group_labels_.tolist()
    ['a', 'b']
    """

    def __init__(
        self,
        sensitive_values: Sequence[Any] | Mapping[str, Sequence[Any]] | None = None,
        allow_empty_groups: bool = False,
        allow_single_group: bool = False,
    ) -> None:
        self.sensitive_values = sensitive_values
        self.allow_empty_groups = allow_empty_groups
        self.allow_single_group = allow_single_group

    # ---------------------------------------------------------------- fit
    def _declared_domains(self, names: list[str]) -> list[list[Any]] | None:
        """Per-attribute declared values, validated against ``names``."""
        declared = self.sensitive_values
        if declared is None:
            return None
        k = len(names)
        if isinstance(declared, Mapping):
            missing = [n for n in names if n not in declared]
            extra = [n for n in declared if n not in names]
            if missing or extra:
                raise ValueError(
                    f"sensitive_values declares attributes {list(declared)} but "
                    f"{ARG} has attributes {names}."
                )
            domains = [list(declared[n]) for n in names]
        elif isinstance(declared, (str, bytes)) or not isinstance(declared, Iterable):
            raise ValueError(
                "sensitive_values must be a list of values (one attribute), a list of "
                f"lists or a dict name -> list of values; got {declared!r}."
            )
        else:
            declared = list(declared)
            nested = [not is_scalar(v) for v in declared]
            if k == 1 and not any(nested):
                domains = [declared]
            elif all(nested) and len(declared) == k:
                domains = [list(v) for v in declared]
            else:
                raise ValueError(
                    f"sensitive_values must give the values of each of the {k} "
                    f"attribute(s) {names}: a list of values for one attribute, or a "
                    f"list of {k} lists / a dict name -> list for several; got {declared!r}."
                )
        for name, values in zip(names, domains, strict=True):
            column = np.empty(len(values), dtype=object)
            column[:] = values
            if len(values) == 0:
                raise ValueError(f"sensitive_values declares no values for attribute {name!r}.")
            check_column(name, column)
            if len(unique_values(name, column)) != len(values):
                raise ValueError(
                    f"sensitive_values declares duplicate values for attribute {name!r}: "
                    f"{values!r}."
                )
        return domains

    def fit(
        self, sensitive_features: Any, y: None = None, *, n_samples: int | None = None
    ) -> GroupEncoder:
        """Learn (or check the declared) group domain.

        Parameters
        ----------
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Sensitive labels, see the module docstring for accepted formats.
        y : None
            Ignored (scikit-learn's transformer signature).
        n_samples : int or None, default=None
            Expected number of rows (``X.shape[0]``), checked if given.

        Returns
        -------
        self : GroupEncoder
            The fitted encoder.
        """
        self._fit_transform(sensitive_features, n_samples)
        return self

    def fit_transform(
        self, sensitive_features: Any, y: None = None, *, n_samples: int | None = None
    ) -> np.ndarray:
        """Fit the encoder and return the group codes of ``sensitive_features``.

        Parameters
        ----------
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Sensitive labels.
        y : None
            Ignored (scikit-learn's transformer signature).
        n_samples : int or None, default=None
            Expected number of rows, checked if given.

        Returns
        -------
        codes : ndarray of int64, shape (n_samples,)
            Group codes in ``[0, n_groups_)``.
        """
        return self._fit_transform(sensitive_features, n_samples)

    def _fit_transform(self, sensitive_features: Any, n_samples: int | None) -> np.ndarray:
        names, columns, explicit = read_sensitive_features(sensitive_features, n_samples)
        domains = self._declared_domains(names)
        categories = []
        for j, column in enumerate(columns):
            values = domains[j] if domains is not None else unique_values(names[j], column)
            array = np.empty(len(values), dtype=object)
            array[:] = sorted_categories(values)
            categories.append(array)
        n_groups = int(np.prod([len(c) for c in categories]))
        if n_groups < 2 and not self.allow_single_group:
            only = ", ".join(
                f"{n}={_format_value(c[0])}" for n, c in zip(names, categories, strict=True)
            )
            raise ValueError(
                f"{ARG} defines a single group ({only}); fairness needs at least 2 "
                "groups. Check that the right column was passed."
            )
        self.names_ = names
        self.categories_ = categories
        self.n_groups_ = n_groups
        self._explicit_names = explicit
        domain = "the declared sensitive_values" if domains is not None else "the fitted categories"
        try:
            codes = self._encode(names, columns, domain)
            if not self.allow_empty_groups:
                self._check_no_empty_groups(codes)
        except ValueError:
            for attribute in _FITTED_ATTRIBUTES:  # a failed fit leaves the encoder unfitted
                self.__dict__.pop(attribute, None)
            raise
        # the labels after the checks: a refused product domain can be huge
        labels = np.empty(n_groups, dtype=object)
        if len(categories) == 1:
            labels[:] = list(categories[0])
        else:
            grids = np.unravel_index(np.arange(n_groups), [len(c) for c in categories])
            labels[:] = [
                tuple(c[i] for c, i in zip(categories, idx, strict=True))
                for idx in zip(*grids, strict=True)
            ]
        self.group_labels_ = labels
        return codes

    def _check_no_empty_groups(self, codes: np.ndarray) -> None:
        empty = np.flatnonzero(np.bincount(codes, minlength=self.n_groups_) == 0)
        if empty.size == 0:
            return
        shown = "; ".join(self.format_group(g) for g in empty[:MAX_LISTED])
        more = f"; and {empty.size - MAX_LISTED} more" if empty.size > MAX_LISTED else ""
        kind = "joint group(s)" if len(self.names_) > 1 else "group(s)"
        raise ValueError(
            f"{ARG} has no rows for {empty.size} of the {self.n_groups_} {kind}: "
            f"{shown}{more}. Every group needs at least one row: declare fewer values "
            "in sensitive_values, merge rare categories, or use fewer attributes."
        )

    # ----------------------------------------------------------- transform
    def _encode(self, names: list[str], columns: list[np.ndarray], domain: str) -> np.ndarray:
        per_attribute = [
            _lookup(name, column, cats, domain)
            for name, column, cats in zip(names, columns, self.categories_, strict=True)
        ]
        if len(per_attribute) == 1:
            return per_attribute[0]
        dims = [len(c) for c in self.categories_]
        return np.ravel_multi_index(tuple(per_attribute), dims).astype(np.int64, copy=False)

    def transform(self, sensitive_features: Any, *, n_samples: int | None = None) -> np.ndarray:
        """Encode ``sensitive_features`` with the fitted group map.

        Parameters
        ----------
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Sensitive labels with the same attributes as at ``fit``.  When both
            the fitted and the new data carry column names, columns are matched
            by name; otherwise by position.
        n_samples : int or None, default=None
            Expected number of rows, checked if given.

        Returns
        -------
        codes : ndarray of int64, shape (n_samples,)
            Group codes in ``[0, n_groups_)``.
        """
        check_is_fitted(self, "n_groups_")
        names, columns, explicit = read_sensitive_features(sensitive_features, n_samples)
        if len(columns) != len(self.names_):
            raise ValueError(
                f"{ARG} has {len(columns)} attribute(s) {names} but the encoder was fitted "
                f"with {len(self.names_)}: {self.names_}."
            )
        if len(columns) > 1 and explicit and self._explicit_names and names != self.names_:
            if set(names) != set(self.names_):
                raise ValueError(
                    f"{ARG} has attributes {names} but the encoder was fitted with {self.names_}."
                )
            columns = [columns[names.index(n)] for n in self.names_]
        return self._encode(list(self.names_), columns, "the fitted categories")

    # ------------------------------------------------------------- labels
    def format_group(self, code: int) -> str:
        """Human-readable description of a group, e.g. ``"sex=F, race=B"``.

        Parameters
        ----------
        code : int
            Group code in ``[0, n_groups_)``.

        Returns
        -------
        str
            ``"name=value"`` pairs joined by ``", "``.
        """
        check_is_fitted(self, "n_groups_")
        idx = np.unravel_index(int(code), [len(c) for c in self.categories_])
        values = tuple(c[i] for c, i in zip(self.categories_, idx, strict=True))
        return ", ".join(
            f"{n}={_format_value(v)}" for n, v in zip(self.names_, values, strict=True)
        )


def encode_sensitive_features(
    sensitive_features: Any,
    n_samples: int | None,
    *,
    sensitive_values: Sequence[Any] | Mapping[str, Sequence[Any]] | None = None,
    allow_empty_groups: bool = False,
    allow_single_group: bool = False,
) -> tuple[np.ndarray, GroupEncoder]:
    """Validate and encode ``sensitive_features`` at fit time.

    Parameters
    ----------
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Sensitive labels (fairlearn formats).
    n_samples : int or None
        Number of rows of ``X``; a length mismatch raises a ValueError.
    sensitive_values : list, list of lists, dict or None, default=None
        Optional public declaration of the group domain, see
        :class:`GroupEncoder`.
    allow_empty_groups : bool, default=False
        Whether declared/joint groups without rows are allowed.
    allow_single_group : bool, default=False
        Whether a domain of one group is allowed.

    Returns
    -------
    codes : ndarray of int64, shape (n_samples,)
        Group codes in ``[0, encoder.n_groups_)``.
    encoder : GroupEncoder
        The fitted encoder, to encode sensitive features at predict/evaluate time.
    """
    encoder = GroupEncoder(
        sensitive_values=sensitive_values,
        allow_empty_groups=allow_empty_groups,
        allow_single_group=allow_single_group,
    )
    codes = encoder.fit_transform(sensitive_features, n_samples=n_samples)
    return codes, encoder
