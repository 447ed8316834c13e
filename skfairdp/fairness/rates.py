"""Rate constraints as data: a vocabulary that constrained optimisers consume.

A *rate* is the fraction of rows of a set ``S`` predicted as class ``k``,
``P_k(S)``. A (generalized) rate constraint (Yaghini et al., "Private
Rate-Constrained Optimization with Applications to Fair Learning", Eq. 6) is

    Gamma(theta) = sum_{terms (S, alpha)} sum_k alpha[k] * P_k(S)  <=  bound,

where each ``S`` is a union of *cells*. A cell is one (sensitive group, true
label) pair, so every set a constraint can name is "rows whose group is in G
and whose true label is in L" (:class:`Cells`), and every row lies in exactly
one cell. Several constraints are compiled together
(:func:`compile_rate_constraints`) into:

* the smallest common **global partition** of the cells (Remark 1 of the
  paper): two cells share a part iff every set used by any constraint contains
  both or neither of them. Each row belongs to exactly one part, so a histogram
  of (soft) predictions per part has L1 sensitivity 1 however many constraints
  there are;
* a **membership** matrix ``S`` (M distinct sets x Q parts) and a **coefficient**
  tensor ``A`` (J constraints x M sets x K classes), from which every rate and
  constraint value is a post-processing of a Q x K histogram ``H``:

      n_m = sum_q S[m, q] sum_k H[q, k],   R[m, k] = (S H)[m, k] / n_m,
      Gamma_j = sum_{m, k} A[j, m, k] R[m, k].

Built-ins: :class:`DemographicParity`, :class:`EqualizedOdds`,
:class:`EqualOpportunity`, :class:`FalseNegativeRate`; a custom constraint is a
:class:`RateConstraint` built from :class:`Cells`. Like the rest of
:mod:`skfairdp.fairness`, this module depends on numpy only and knows nothing
about privacy or torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Cells",
    "DemographicParity",
    "EqualOpportunity",
    "EqualizedOdds",
    "FalseNegativeRate",
    "RateConstraint",
    "RateProgram",
    "compile_rate_constraints",
    "resolve_constraints",
    "subset_rates",
]

CONSTRAINT_NAMES = (
    "demographic_parity",
    "equalized_odds",
    "equal_opportunity",
    "false_negative_rate",
    "demographic_parity_vs_rest",
    "equalized_odds_vs_rest",
    "equal_opportunity_vs_rest",
)

# How a group-parity family compares groups: "pairs" bounds every ordered pair of groups
# (the max pairwise gap, fairlearn's *_difference); "rest" bounds each group against the
# rows of all other groups (one-vs-rest). With two groups the two coincide.
VERSUS = ("pairs", "rest")


def _fmt(value: Any) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


@dataclass(frozen=True)
class Cells:
    """A set of rows: group in ``groups`` and true label in ``labels``.

    Parameters
    ----------
    groups : None or sequence
        Group labels (as in ``GroupEncoder.group_labels_``: the value for one
        sensitive attribute, a tuple for joint groups); ``None`` means every group.
        Always a sequence of labels: one joint group is ``[("Female", "White")]``
        (a bare tuple would be read as two labels). A single str or number is
        one label.
    labels : None or sequence
        True class labels (values of ``y``); ``None`` means every class.
    """

    groups: tuple | None = None
    labels: tuple | None = None

    def __post_init__(self) -> None:
        for name in ("groups", "labels"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                    value = (value,)
                object.__setattr__(self, name, tuple(value))

    def mask(self, group_labels: Sequence, classes: Sequence) -> np.ndarray:
        """Boolean ``(n_groups, n_classes)`` mask of the cells in this set."""
        rows = _select(self.groups, list(group_labels), "group")
        cols = _select(self.labels, list(classes), "class label")
        out = np.zeros((len(group_labels), len(classes)), dtype=bool)
        out[np.ix_(rows, cols)] = True
        return out

    def __str__(self) -> str:
        parts = []
        if self.groups is not None:
            parts.append("group in {" + ", ".join(map(_fmt, self.groups)) + "}")
        if self.labels is not None:
            parts.append("y in {" + ", ".join(map(_fmt, self.labels)) + "}")
        return " & ".join(parts) if parts else "all rows"


def _select(wanted, domain: list, what: str) -> np.ndarray:
    if wanted is None:
        return np.arange(len(domain))
    index = []
    for value in wanted:
        hits = [i for i, d in enumerate(domain) if _same(d, value)]
        if not hits:
            raise ValueError(
                f"rate constraint names {what} {_fmt(value)}, which is not one of the fitted "
                f"{what}s {[_fmt(d) for d in domain]}"
            )
        index.extend(hits)
    return np.unique(np.asarray(index, dtype=np.int64))


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


class RateConstraint:
    """One rate constraint ``sum_terms sum_k coef[k] * P_k(cells) <= bound``.

    Parameters
    ----------
    terms : sequence of (Cells, mapping)
        Each term is a set of rows and a mapping ``predicted class -> coefficient``
        (classes absent from the mapping have coefficient 0).
    bound : float
        The slack ``gamma``: the constraint is ``Gamma <= bound``.
    name : str, optional
        Shown in diagnostics.

    Examples
    --------
    At most 10% false positives among the women (true label 0):

    >>> from skfairdp.fairness import Cells, RateConstraint
    >>> fpr_women = RateConstraint(
    ...     [(Cells(groups=["Female"], labels=[0]), {1: 1.0})], bound=0.1, name="FPR women"
    ... )
    """

    def __init__(self, terms, bound: float, name: str | None = None):
        self.terms = tuple((cells, dict(coef)) for cells, coef in terms)
        self.bound = float(bound)
        self.name = name
        if not self.terms:
            raise ValueError("a RateConstraint needs at least one (Cells, coefficients) term")
        for cells, _ in self.terms:
            if not isinstance(cells, Cells):
                raise TypeError(f"RateConstraint terms start with a Cells object, got {cells!r}")
        if not np.isfinite(self.bound):
            raise ValueError(f"RateConstraint bound must be finite, got {bound}")

    def expand(self, group_labels: Sequence, classes: Sequence) -> list[RateConstraint]:
        """The atomic constraints (here: itself)."""
        return [self]

    def describe(self) -> str:
        """A readable formula."""
        if self.name:
            return self.name
        parts = []
        for cells, coef in self.terms:
            for k, a in coef.items():
                parts.append(f"{a:+g}*P(yhat={_fmt(k)} | {cells})")
        return " ".join(parts) + f" <= {self.bound:g}"

    def __repr__(self) -> str:
        return f"RateConstraint({self.describe()!r})"


@dataclass
class _Family:
    """A family of constraints generated from the fitted groups and classes."""

    tolerance: float = 0.05
    versus: str = "pairs"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.tolerance) and self.tolerance >= 0):
            raise ValueError(
                f"{type(self).__name__}: tolerance must be a finite number >= 0, "
                f"got {self.tolerance!r}"
            )
        if self.versus not in VERSUS:
            raise ValueError(
                f"{type(self).__name__}: versus must be one of {list(VERSUS)}, got {self.versus!r}"
            )

    def expand(self, group_labels: Sequence, classes: Sequence) -> list[RateConstraint]:
        raise NotImplementedError


def _others(group_labels: Sequence, z) -> tuple:
    return tuple(g for g in group_labels if not _same(g, z))


def _comparisons(group_labels: Sequence, versus: str) -> list[tuple]:
    """``(name, z, others)`` per comparison: each ordered pair, or each group vs the rest.

    Pairs are ordered group-major (``(a, b)`` for every ``b != a``), so with two groups
    both forms give the same constraints in the same order.
    """
    if versus == "rest":
        return [(_fmt(z), z, _others(group_labels, z)) for z in group_labels]
    return [
        (f"{_fmt(a)} vs {_fmt(b)}", a, (b,))
        for a in group_labels
        for b in group_labels
        if not _same(a, b)
    ]


def _need_groups(family: str, group_labels: Sequence) -> None:
    if len(group_labels) < 2:
        raise ValueError(
            f"{family} compares groups, but sensitive_features has only "
            f"{len(group_labels)} group ({[_fmt(g) for g in group_labels]})"
        )


@dataclass
class DemographicParity(_Family):
    """Demographic parity: every group's rate of each class within ``tolerance`` of the others.

    ``versus="pairs"`` (default): ``P_k(group a) - P_k(group b) <= tolerance`` for every
    ordered pair ``a != b`` and class ``k``, i.e. the largest pairwise gap (fairlearn's
    ``demographic_parity_difference``) is at most ``tolerance``; ``J = |Z| (|Z| - 1) K``
    constraints. ``versus="rest"``: ``P_k(group z) - P_k(not z) <= tolerance`` (each group
    against the rows of all others; ``J = |Z| K``), which lets the largest pairwise gap
    reach about twice ``tolerance`` with three or more groups. Both on a partition by group
    (``Q = |Z|``), so both are post-processing of the same histogram; with two groups they
    are the same constraints.
    """

    def expand(self, group_labels, classes):
        _need_groups("DemographicParity", group_labels)
        tag = "DP" if self.versus == "pairs" else "DPvsRest"
        rows = []
        for name, z, others in _comparisons(group_labels, self.versus):
            for k in classes:
                rows.append(
                    RateConstraint(
                        [(Cells(groups=[z]), {k: 1.0}), (Cells(groups=others), {k: -1.0})],
                        self.tolerance,
                        name=f"{tag}[group={name}, yhat={_fmt(k)}]",
                    )
                )
        return rows


def _conditional_parity(
    tag, group_labels, labels, classes, tolerance, versus="pairs"
) -> list[RateConstraint]:
    """``P_k(a, y=c) - P_k(b, y=c) <= tolerance`` per comparison (a, b), label c, class k.

    ``b`` is another group (``versus="pairs"``) or all other groups (``"rest"``).
    """
    if versus == "rest":
        tag = f"{tag}vsRest"
    rows = []
    for name, z, others in _comparisons(group_labels, versus):
        for c in labels:
            for k in classes:
                rows.append(
                    RateConstraint(
                        [
                            (Cells(groups=[z], labels=[c]), {k: 1.0}),
                            (Cells(groups=others, labels=[c]), {k: -1.0}),
                        ],
                        tolerance,
                        name=f"{tag}[group={name}, y={_fmt(c)}, yhat={_fmt(k)}]",
                    )
                )
    return rows


@dataclass
class EqualizedOdds(_Family):
    """Equalized odds: per true label ``c`` and class ``k``, the groups' rates within ``tolerance``.

    ``versus="pairs"`` (default): ``P_k(a, y=c) - P_k(b, y=c) <= tolerance`` for every
    ordered pair of groups, so fairlearn's ``equalized_odds_difference`` (the larger of the
    largest TPR and FPR gaps) is at most ``tolerance``: ``J = K^2 |Z| (|Z| - 1)``.
    ``versus="rest"``: group ``z`` against all other groups (the paper's Table 1 variant,
    ``J = K^2 |Z|``). Both on the partition by (group, true label), ``Q = K |Z|``.
    """

    def expand(self, group_labels, classes):
        _need_groups("EqualizedOdds", group_labels)
        return _conditional_parity(
            "EO", group_labels, classes, classes, self.tolerance, self.versus
        )


@dataclass
class EqualOpportunity(_Family):
    """Equalized odds restricted to the rows of one true label (the positive class).

    Parameters
    ----------
    tolerance : float
    versus : {"pairs", "rest"}
        As in :class:`EqualizedOdds`.
    positive_label : optional
        True label whose rows are compared; default the last class (``classes_[-1]``).
    """

    positive_label: Any = None

    def expand(self, group_labels, classes):
        _need_groups("EqualOpportunity", group_labels)
        c = classes[-1] if self.positive_label is None else self.positive_label
        _select([c], list(classes), "class label")
        return _conditional_parity("EOpp", group_labels, [c], classes, self.tolerance, self.versus)


@dataclass
class FalseNegativeRate:
    """``P(yhat != c | y = c) <= bound`` for each class ``c`` in ``classes``.

    Parameters
    ----------
    bound : float
        Largest allowed false negative rate (``1 - recall``).
    classes : None or sequence
        True labels to bound; ``None`` means the positive class (``classes_[-1]``)
        for binary problems and every class otherwise. The paper's Eq. 17 bounds
        every class; for a binary task that also bounds the false *positive* rate.

    No sensitive groups are involved; the partition is by true label.
    """

    bound: float = 0.2
    classes: Sequence | None = None

    def __post_init__(self) -> None:
        if not (np.isfinite(self.bound) and 0 <= self.bound <= 1):
            raise ValueError(f"FalseNegativeRate: bound must be in [0, 1], got {self.bound!r}")

    @property
    def tolerance(self) -> float:
        return self.bound

    def expand(self, group_labels, classes):
        if self.classes is None:
            chosen = [classes[-1]] if len(classes) == 2 else list(classes)
        else:
            chosen = list(self.classes)
            _select(chosen, list(classes), "class label")
        rows = []
        for c in chosen:
            coef = {k: 1.0 for k in classes if not _same(k, c)}
            rows.append(
                RateConstraint([(Cells(labels=[c]), coef)], self.bound, name=f"FNR[y={_fmt(c)}]")
            )
        return rows


_BY_NAME = {
    "demographic_parity": DemographicParity,
    "equalized_odds": EqualizedOdds,
    "equal_opportunity": EqualOpportunity,
    "false_negative_rate": FalseNegativeRate,
}
_VS_REST = {
    "demographic_parity_vs_rest": DemographicParity,
    "equalized_odds_vs_rest": EqualizedOdds,
    "equal_opportunity_vs_rest": EqualOpportunity,
}


def resolve_constraints(constraints, tolerance: float) -> list:
    """Turn a name, a constraint object, or a list of them into constraint objects.

    Names (``"demographic_parity"``, ``"equalized_odds"``, ``"equal_opportunity"``,
    ``"false_negative_rate"``) use ``tolerance`` as their slack (the FNR bound); the
    group-parity names bound every pair of groups (``versus="pairs"``), and their
    ``*_vs_rest`` forms each group against the rest (``versus="rest"``).
    """
    items = (
        [constraints]
        if isinstance(constraints, str) or hasattr(constraints, "expand")
        else list(constraints)
    )
    if not items:
        raise ValueError("constraints must name at least one constraint; got an empty list")
    out = []
    for item in items:
        if isinstance(item, str):
            if item in _VS_REST:
                out.append(_VS_REST[item](tolerance, versus="rest"))
                continue
            if item not in _BY_NAME:
                raise ValueError(
                    f"constraints: unknown constraint name {item!r}; use one of "
                    f"{list(CONSTRAINT_NAMES)}, a RateConstraint, or a constraint object"
                )
            out.append(_BY_NAME[item](tolerance))
        elif hasattr(item, "expand"):
            out.append(item)
        else:
            raise TypeError(
                "constraints must be a name, a constraint object (with an expand(group_labels, "
                f"classes) method) or a list of them; got {item!r}"
            )
    return out


def subset_rates(
    histogram: np.ndarray, membership: np.ndarray, *, min_count: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Per-set class rates from a per-part histogram.

    Parameters
    ----------
    histogram : array of shape (Q, K)
        (Soft or hard) prediction counts per part and class.
    membership : bool array of shape (M, Q)
        Which parts make up each set.
    min_count : float
        Floor on the denominators (noisy counts can be tiny or negative).

    Returns
    -------
    rates : array (M, K)
        ``(S H)[m, k] / max(n_m, min_count)``.
    counts : array (M,)
        The unfloored ``n_m = sum_q S[m, q] sum_k H[q, k]``.
    """
    H = np.asarray(histogram, dtype=float)
    S = np.asarray(membership, dtype=float)
    sums = S @ H
    counts = sums.sum(axis=1)
    denom = np.maximum(counts, min_count)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(denom[:, None] > 0, sums / np.where(denom > 0, denom, 1.0)[:, None], 0.0)
    return rates, counts


@dataclass
class RateProgram:
    """Constraints compiled against fitted groups and classes.

    Attributes
    ----------
    group_labels, classes : list
        The domains the constraints were compiled against.
    constraints : list of RateConstraint
        The J atomic constraints, in order.
    part_of_cell : int array (n_groups, n_classes)
        Global-partition part of each (group, true label) cell.
    membership : bool array (M, Q)
        ``S``: which parts make up each distinct set used by the constraints.
    coefficients : float array (J, M, K)
        ``A[j, m, k]``: coefficient of ``P_k(set m)`` in constraint ``j``.
    bounds : float array (J,)
        ``gamma``.
    """

    group_labels: list
    classes: list
    constraints: list
    part_of_cell: np.ndarray
    membership: np.ndarray
    coefficients: np.ndarray
    bounds: np.ndarray
    names: list = field(default_factory=list)

    @property
    def n_parts(self) -> int:
        """``Q``, the size of the global partition."""
        return int(self.membership.shape[1])

    @property
    def n_constraints(self) -> int:
        """``J``."""
        return int(self.coefficients.shape[0])

    @property
    def uses_labels(self) -> bool:
        """Whether the partition depends on the true label."""
        return bool(np.any(self.part_of_cell != self.part_of_cell[:, :1]))

    @property
    def uses_groups(self) -> bool:
        """Whether the partition depends on the sensitive group."""
        return bool(np.any(self.part_of_cell != self.part_of_cell[:1, :]))

    def parts(self, group_codes: np.ndarray, label_codes: np.ndarray) -> np.ndarray:
        """Part index of each row from its group code and encoded true label."""
        return self.part_of_cell[np.asarray(group_codes), np.asarray(label_codes)]

    def histogram(self, proba: np.ndarray, parts: np.ndarray) -> np.ndarray:
        """``(Q, K)`` sums of per-row prediction vectors (soft or one-hot) per part."""
        proba = np.asarray(proba, dtype=float)
        H = np.zeros((self.n_parts, proba.shape[1]))
        np.add.at(H, np.asarray(parts), proba)
        return H

    def constraint_values(self, histogram: np.ndarray, *, min_count: float = 0.0) -> np.ndarray:
        """``Gamma_j`` (J,) computed from a histogram by post-processing (Eq. 12)."""
        rates, _ = subset_rates(histogram, self.membership, min_count=min_count)
        return np.einsum("jmk,mk->j", self.coefficients, rates)

    def evaluate(
        self, y_pred_codes: np.ndarray, group_codes: np.ndarray, label_codes: np.ndarray
    ) -> np.ndarray:
        """Hard constraint values ``Gamma_j`` of class predictions (encoded) on a dataset."""
        onehot = np.eye(len(self.classes))[np.asarray(y_pred_codes)]
        H = self.histogram(onehot, self.parts(group_codes, label_codes))
        return self.constraint_values(H)

    def violation(self, values: np.ndarray) -> float:
        """``max_j (Gamma_j - gamma_j)_+``."""
        return float(max(0.0, np.max(np.asarray(values) - self.bounds)))


def compile_rate_constraints(constraints, group_labels: Sequence, classes: Sequence) -> RateProgram:
    """Compile constraint objects into a :class:`RateProgram` (global partition, S, A).

    Parameters
    ----------
    constraints : constraint object or list of them
        Objects with ``expand(group_labels, classes) -> list[RateConstraint]``
        (the built-ins and :class:`RateConstraint`).
    group_labels : sequence
        The fitted group domain (``GroupEncoder.group_labels_``); ``[None]`` when
        no sensitive features are used.
    classes : sequence
        The fitted class labels.
    """
    group_labels, classes = list(group_labels), list(classes)
    if not hasattr(constraints, "expand") and not isinstance(constraints, (list, tuple)):
        raise TypeError(f"constraints must be constraint objects, got {constraints!r}")
    families = [constraints] if hasattr(constraints, "expand") else list(constraints)
    rows: list[RateConstraint] = []
    for family in families:
        rows.extend(family.expand(group_labels, classes))
    if not rows:
        raise ValueError("the constraints expand to no rate constraint")

    # distinct base sets, as cell masks
    set_masks: list[np.ndarray] = []
    keys: dict[bytes, int] = {}
    term_sets: list[list[tuple[int, dict]]] = []
    for row in rows:
        entries = []
        for cells, coef in row.terms:
            mask = cells.mask(group_labels, classes)
            if not mask.any():
                raise ValueError(f"constraint {row.describe()!r} uses an empty set of rows")
            key = mask.tobytes()
            if key not in keys:
                keys[key] = len(set_masks)
                set_masks.append(mask)
            entries.append((keys[key], coef))
        term_sets.append(entries)

    # Remark 1: cells with the same membership signature form one part
    signatures = np.stack([m.ravel() for m in set_masks], axis=1)  # (cells, M)
    _, first, inverse = np.unique(signatures, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # number parts by first cell (group-major)
    part_flat = order[inverse.ravel()]
    part_of_cell = part_flat.reshape(len(group_labels), len(classes))
    n_parts = int(part_flat.max()) + 1
    membership = np.zeros((len(set_masks), n_parts), dtype=bool)
    for m, mask in enumerate(set_masks):
        membership[m, np.unique(part_flat[mask.ravel()])] = True

    coefficients = np.zeros((len(rows), len(set_masks), len(classes)))
    for j, entries in enumerate(term_sets):
        for m, coef in entries:
            for k, a in coef.items():
                coefficients[j, m, _select([k], classes, "class label")] += float(a)
    bounds = np.array([row.bound for row in rows])
    return RateProgram(
        group_labels=group_labels,
        classes=classes,
        constraints=rows,
        part_of_cell=part_of_cell,
        membership=membership,
        coefficients=coefficients,
        bounds=bounds,
        names=[row.describe() for row in rows],
    )
