"""What a CGOO fit reads: its rows, groups and weights, its problem's functions, its oracle.

Every check here runs before anything is released; the errors say what to change.
The mode (classification or regression) is read from the oracle's type, a
parameter, never from the data.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import is_regressor
from sklearn.preprocessing import LabelEncoder

from .._fit.schedules import (
    CGOO_ORACLE_PARAMS,
    cgoo_budget_split,
    cgoo_max_iter,
    cgoo_oracle_params,
)
from .._fit.search_run import allow_empty_declared_groups
from .._fit.validation import check_sample_weight, check_X, check_y, check_y_numeric, densify
from ..fairness import encode_sensitive_features
from ..fairness.routing import routing_hint
from .atoms import CellPositives, WeightedCells, cell_codes
from .constraints import resolve_constraint
from .objectives import OBJECTIVES, resolve_objective
from .regression import GroupLosses, resolve_regression_constraint, resolve_regression_objective

__all__ = [
    "check_budget_split",
    "check_oracle",
    "is_regression",
    "max_iter",
    "objective_and_constraint",
    "oracle_template",
    "predict_mode",
    "validate_data",
]


def is_regression(est) -> bool:
    """Regression mode: the oracle is a regressor (read from the parameters, not the fit)."""
    try:
        return is_regressor(oracle_template(est))
    except AttributeError:  # an object without sklearn tags (rejected by fit's validation)
        return False


def oracle_template(est, n_samples: int | None = None, max_weight: float = 1.0):
    """The oracle: ``estimator``, or the default oracle scheduled for ``n_samples`` rows.

    The default oracle's ``max_sample_weight`` is ``max_weight`` (the bound on the
    weights the reduction hands it).
    """
    if est.estimator is not None:
        return est.estimator
    from ..dpsgd import DPSGDClassifier

    if n_samples is None:  # only its type is needed (regression or not)
        return DPSGDClassifier(**CGOO_ORACLE_PARAMS)
    return DPSGDClassifier(**cgoo_oracle_params(n_samples), max_sample_weight=max_weight)


def check_oracle(oracle, private: bool, max_weight: float = 1.0) -> None:
    """A private reduction needs an oracle on the contract of :mod:`skfairdp.oracle`.

    Its ``max_sample_weight`` must cover the weights it is handed: the task's
    weights (in ``[0, 1]``) times the rows' (at most ``max_weight``).
    """
    params = oracle.get_params(deep=False)
    if not private:
        return
    needed = {"epsilon", "noise_multiplier", "max_sample_weight"} - set(params)
    if needed or not hasattr(oracle, "planned_event"):
        raise ValueError(
            f"estimator={oracle!r} is not a private oracle (it lacks "
            f"{sorted(needed) or 'planned_event'}); with a finite epsilon the oracle "
            "must follow skfairdp's oracle contract (skfairdp.oracle). A plain "
            "scikit-learn estimator is accepted only with epsilon=np.inf."
        )
    if params["max_sample_weight"] < max_weight:
        raise ValueError(
            f"the oracle's max_sample_weight={params['max_sample_weight']!r} must be >= "
            f"{max_weight:g}: the reduction's weights are in [0, 1] times the rows' "
            "sample_weight (at most the reduction's max_sample_weight when given)"
        )


def check_budget_split(budget_split, n_iterations: int) -> tuple[float, float, float]:
    """``budget_split`` as 3 positive floats summing to 1 (``"auto"`` resolved for ``T``)."""
    if isinstance(budget_split, str) and budget_split == "auto":
        return cgoo_budget_split(n_iterations)
    split = tuple(float(s) for s in budget_split)
    if len(split) != 3 or min(split) <= 0 or not math.isclose(sum(split), 1.0, abs_tol=1e-9):
        raise ValueError(
            f"budget_split must be 3 positive shares (cell counts, statistics, oracles) "
            f"summing to 1, got {budget_split!r}"
        )
    return split


def max_iter(est, n_samples: int) -> int:
    """``max_iter`` in effect (``"auto"`` resolved from the public ``n`` and ``epsilon``)."""
    if est.max_iter == "auto":
        return cgoo_max_iter(n_samples, float(est.epsilon))
    return int(est.max_iter)


def predict_mode(est) -> str:
    """``predict_mode`` in effect: ``"mean"`` or ``"mixture"``."""
    regression = is_regression(est)
    if est.predict_mode == "auto":
        return "mean" if regression else "mixture"
    if est.predict_mode == "mean" and not regression:
        raise ValueError(
            "predict_mode='mean' averages the atoms' predictions and needs a regressor as "
            "the oracle; a classification reduction predicts by drawing from its mixture "
            "(predict_mode='mixture' or 'auto'; thresholding predict_proba yourself voids "
            "the fairness guarantee)"
        )
    return est.predict_mode


def objective_and_constraint(objective, constraints, regression: bool):
    """The resolved objective and constraint of the mode (``"auto"`` and names checked)."""
    if regression:
        objective = "mean_loss" if objective == "auto" else objective
        constraints = "bounded_group_loss" if constraints == "auto" else constraints
        return resolve_regression_objective(objective), resolve_regression_constraint(constraints)
    objective = "error_rate" if objective == "auto" else objective
    constraints = "demographic_parity" if constraints == "auto" else constraints
    if isinstance(objective, str) and objective not in OBJECTIVES:
        raise ValueError(
            f"objective={objective!r} is a regression objective: it needs a regressor as "
            f"the oracle (e.g. skfairdp.DPSGDRegressor); with a classifier, objective is "
            f"one of {sorted(OBJECTIVES)} or a torch callable"
        )
    return resolve_objective(objective), resolve_constraint(constraints)


def validate_data(
    est, X, y, sensitive_features, sample_weight, regression: bool
) -> tuple[np.ndarray, WeightedCells]:
    """Validated ``X`` and the mode's statistics (``CellPositives`` or ``GroupLosses``).

    Sets ``n_features_in_``, ``group_encoder_`` and (classification) ``classes_``.
    """
    est._validate_params()
    if sensitive_features is None:
        raise ValueError(
            "CGOOReduction.fit needs sensitive_features (the groups its constraint and "
            f"objective are about). {routing_hint()}"
        )
    X = densify(check_X(est, X, reset=True, ensure_min_samples=2))
    y = (check_y_numeric if regression else check_y)(est, y, X.shape[0])
    weights = check_sample_weight(
        sample_weight, X.shape[0], epsilon=est.epsilon, max_sample_weight=est.max_sample_weight
    )
    # the bound every sensitivity is scaled by (1 without weights, as every estimator's)
    max_weight = 1.0 if weights is None else float(est.max_sample_weight)
    tolerate_empty = allow_empty_declared_groups(est.sensitive_values)
    groups, est.group_encoder_ = encode_sensitive_features(
        sensitive_features, X.shape[0], sensitive_values=est.sensitive_values,
        allow_empty_groups=tolerate_empty,
    )  # fmt: skip
    n_groups = est.group_encoder_.n_groups_
    if n_groups < 2:
        raise ValueError(
            "sensitive_features has a single group; a group-fairness constraint needs at least 2"
        )
    if regression:
        if hasattr(est, "classes_"):
            del est.classes_  # a refit as a regressor
        if not math.isinf(est.epsilon) and math.isinf(est.loss_bound):
            raise ValueError(
                "loss_bound=inf is the sensitivity of the released group losses: it must "
                "be finite with a finite epsilon (each row's squared residual is clipped "
                "to it)"
            )
        return X, GroupLosses(groups, y, n_groups, est.loss_bound, weights, max_weight)
    encoder = LabelEncoder().fit(y)
    est.classes_ = encoder.classes_
    if len(est.classes_) != 2:
        raise ValueError(
            "Only binary classification is supported by CGOOReduction; y has "
            f"{len(est.classes_)} classes ({list(est.classes_)[:5]!r})"
        )
    cells = cell_codes(groups, encoder.transform(y).astype(np.int64))
    if not tolerate_empty:
        _check_every_cell_has_rows(est, cells, 2 * n_groups, weights)
    return X, CellPositives(cells, 2 * n_groups, weights, max_weight)


def _check_every_cell_has_rows(est, cells, n_cells: int, weights) -> None:
    """Rows of positive weight in every (group, label) cell (a row of weight 0 is no row)."""
    present = cells if weights is None else cells[weights > 0]
    counts = np.bincount(present, minlength=n_cells)
    if not counts.all():
        empty = int(np.flatnonzero(counts == 0)[0])
        group = est.group_encoder_.group_labels_[empty // 2]
        weighted = "" if weights is None else " of positive sample_weight"
        raise ValueError(
            f"sensitive_features: group {group!r} has no row{weighted} of class y == "
            f"{est.classes_[empty % 2]!r}; CGOOReduction needs rows in every (group, "
            "label) cell (its rates are conditional on them)"
        )
