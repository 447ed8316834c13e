"""The candidates: hyperparameters drawn from the search space, and the estimator each configures.

A run draws its hyperparameters independently, with replacement, from
``param_distributions`` (lists drawn uniformly, scipy distributions through
``rvs``), every uniform from the search's :class:`~skfairdp.privacy.RandomSource`.
The candidates whose fit events the search plans are the whole list grid (up to
:data:`MAX_PLANNED_GRID`) or :data:`PLANNING_DRAWS` draws that do not depend on the
data.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline

from ..privacy import RandomSource
from .inputs import declared_domain

__all__ = [
    "MAX_PLANNED_GRID",
    "PLANNING_DRAWS",
    "budget_names",
    "check_space",
    "configured",
    "draw_params",
    "planning_candidates",
    "seed_run",
]

# how many candidates of a continuous search space are planned (data-independent draws)
PLANNING_DRAWS = 16
MAX_PLANNED_GRID = 64


def check_space(param_distributions) -> list[dict]:
    """``param_distributions`` as a non-empty list of non-empty spaces (``TypeError`` if not)."""
    spaces = param_distributions if isinstance(param_distributions, list) else [param_distributions]
    if not spaces:
        raise ValueError("param_distributions is empty")
    for space in spaces:
        if not isinstance(space, dict) or not space:
            raise TypeError(
                "param_distributions must be a non-empty dict (or a list of them) mapping "
                f"parameter names to lists or distributions, got {param_distributions!r}"
            )
        for name, values in space.items():
            if hasattr(values, "rvs"):
                continue
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or not values:
                raise TypeError(
                    f"param_distributions[{name!r}] must be a non-empty list or have an rvs "
                    f"method, got {values!r}"
                )
    return spaces


def draw_params(spaces: list[dict], random: RandomSource) -> dict:
    """One draw (independent, with replacement) from the search space."""
    space = spaces[min(int(random.uniform(1)[0] * len(spaces)), len(spaces) - 1)]
    params = {}
    for name in sorted(space):
        values = space[name]
        u = float(random.uniform(1)[0])
        if hasattr(values, "rvs"):
            seed = int(u * (2**31 - 1))
            params[name] = values.rvs(random_state=np.random.RandomState(seed))
        else:
            values = list(values)
            params[name] = values[min(int(u * len(values)), len(values) - 1)]
    return params


def planning_candidates(spaces: list[dict]) -> list[dict]:
    """The candidates whose fit events are planned: the whole grid, or data-independent draws."""
    if all(not hasattr(v, "rvs") for space in spaces for v in space.values()):
        grid = ParameterGrid(spaces)
        if len(grid) <= MAX_PLANNED_GRID:
            return list(grid)
    source = RandomSource(0)
    return [draw_params(spaces, source) for _ in range(PLANNING_DRAWS)]


def budget_names(estimator) -> tuple[str, str]:
    """The ``epsilon``/``delta`` parameter names of the private estimator at the end."""
    if isinstance(estimator, Pipeline):
        name, last = estimator.steps[-1]
        inner_eps, inner_delta = budget_names(last)
        return f"{name}__{inner_eps}", f"{name}__{inner_delta}"
    params = estimator.get_params(deep=False)
    if "epsilon" not in params or "delta" not in params:
        raise TypeError(
            f"{type(estimator).__name__} has no epsilon/delta parameters: PrivateSearchCV tunes "
            "a private estimator (or a Pipeline ending in one)"
        )
    return "epsilon", "delta"


def configured(estimator, params: dict, epsilon: float, delta: float, groups=None) -> BaseEstimator:
    """An unfitted clone of ``estimator`` with the candidate's ``params`` and the inner budget.

    ``groups``: a search's encoder of all rows; every undeclared ``sensitive_values``
    (steps included) is set to its domain, so that no run learns its groups from its
    random part (:mod:`skfairdp._fit.search_run`). None: nothing is declared.
    """
    eps_name, delta_name = budget_names(estimator)
    est = clone(estimator).set_params(**params)
    est.set_params(**{eps_name: epsilon, delta_name: delta})
    if groups is None:
        return est
    domain = declared_domain(groups)
    undeclared = [
        name
        for name, value in est.get_params(deep=True).items()
        if name.rsplit("__", 1)[-1] == "sensitive_values" and value is None
    ]
    return est.set_params(**dict.fromkeys(undeclared, domain))


def seed_run(estimator, random: RandomSource) -> BaseEstimator:
    """Seed every ``random_state``/``secure_mode`` of ``estimator`` from a child of ``random``.

    A step the user put in ``secure_mode`` stays in it (the OS CSPRNG for its noise).
    """
    child = random.spawn().estimator_params()
    names = estimator.get_params(deep=True)
    update = {}
    for name, value in names.items():
        leaf = name.rsplit("__", 1)[-1]
        if leaf in child:
            keep_secure = leaf == "secure_mode" and value is True
            update[name] = True if keep_secure else child[leaf]
    return estimator.set_params(**update)
