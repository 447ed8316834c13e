"""Private hyperparameter search: Papernot & Steinke's random stopping, fairness-aware.

:class:`PrivateSearchCV` tunes any skfairdp estimator (or a ``Pipeline`` ending in
one) inside one stated budget ``(epsilon, delta)``. The whole search is one
mechanism, the *repeat-and-select* mechanism of Papernot & Steinke (2022,
"Hyperparameter tuning with Renyi differential privacy", ICLR):

1. the rows are split once, at random and independently of their values, into a
   training part and a validation part (``validation_size``);
2. the number of runs ``K`` is drawn from a distribution with mean
   ``n_candidates_mean`` (truncated negative binomial, Poisson, geometric or
   logarithmic), independently of the data, and is never released;
3. each run draws hyperparameters from ``param_distributions`` (independently,
   with replacement), fits the estimator privately on the training part (with the
   inner budget ``inner_epsilon_``), and scores it privately on the validation
   part: one Gaussian release of the counts of (group, true class, predicted
   class) cells -- or, without a fairness notion and with ``scoring="accuracy"``,
   of the count of correct predictions -- whose L2 sensitivity is 1 (adding or
   removing one row moves one cell by one);
4. only the best run by the noisy statistics is released: its model, its
   hyperparameters and its noisy scores. Nothing about the other runs is kept.

**Accounting.** One run executes the fit's event (recorded; planned before the
search) and the score's ``GaussianDpEvent``; their sequential composition bounds
the run (each person is in one part only, so this is conservative). The search is
``RepeatAndSelectDpEvent(run, n_candidates_mean, shape)`` of dp-accounting,
priced by its RDP accountant (Theorems 2 and 6 of the paper; the only accountant
that prices this event), under ``privacy_unit="record"`` (add or remove one row).

**Calibration.** The user states the total ``(epsilon, delta)``; the search finds
the largest inner ``epsilon`` (given to every run's estimator, with the total
``delta``) whose run event, repeated and selected, costs at most ``epsilon``.
Runs whose hyperparameters give different fit events (e.g. ``fairness_weight=0``
vs ``> 0`` in DP-FERMI) are covered by the one that dominates the others' RDP
curves, or by their composition when none does (conservative; a warning says
so). Every run's recorded event is checked against the plan before its score is
released.

**Selection.** With ``fairness`` and ``max_violation`` set, a run that meets the
bound on the noisy violation beats every run that does not; among those that
meet it the larger noisy score wins, among those that do not the smaller noisy
violation. This is a total order on single runs, which is what the theorem
requires.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings

import dp_accounting
import numpy as np
import torch
from dp_accounting import dp_event
from scipy.special import gammaln
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, indexable
from sklearn.utils._metadata_requests import (
    MetadataRouter,
    MethodMapping,
    _routing_enabled,
    process_routing,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted

from ..fairness import encode_sensitive_features
from ..fairness.metrics import (
    demographic_parity_from_counts,
    equal_opportunity_from_counts,
    equalized_odds_from_counts,
    positive_classes,
)
from ..privacy import (
    EventRecorder,
    PrivacySpent,
    RandomSource,
    calibrate_noise_multiplier,
    epsilon_spent,
    noisy_count,
    resolve_delta,
)
from ..privacy.accountant import _rdp_of, quiet_accounting
from ..privacy.events import compose
from ..privacy.planning import planned_fit_event
from ..privacy.spent import spent_event

__all__ = ["PrivateSearchCV", "draw_n_runs", "n_runs_pmf", "run_distribution_shape"]

DISTRIBUTIONS = ("truncated_negative_binomial", "poisson", "geometric", "logarithmic")
FAIRNESS = ("demographic_parity", "equal_opportunity", "equalized_odds")
SCORING = ("accuracy", "balanced_accuracy")
# how many candidates of a continuous search space are planned (data-independent draws)
_PLANNING_DRAWS = 16
_MAX_PLANNED_GRID = 64
# score_noise_multiplier="auto": one score release alone spends this share of epsilon
SCORE_BUDGET_SHARE = 0.2


# ---------------------------------------------------------------------------
# the distribution of the number of runs
# ---------------------------------------------------------------------------
def run_distribution_shape(distribution: str, shape: float = 0.5) -> float:
    """dp-accounting's ``shape`` of a distribution of the number of runs.

    ``inf`` for Poisson, 1 for geometric, 0 for logarithmic, ``shape`` (``> 0``)
    for the truncated negative binomial.
    """
    if distribution == "poisson":
        return math.inf
    if distribution == "geometric":
        return 1.0
    if distribution == "logarithmic":
        return 0.0
    if distribution == "truncated_negative_binomial":
        shape = float(shape)
        if not (0 < shape < math.inf):
            raise ValueError(f"the truncated negative binomial needs 0 < shape < inf, got {shape}")
        return shape
    raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")


@functools.lru_cache(maxsize=64)
def _gamma(shape: float, mean: float) -> float:
    """The success probability of the truncated negative binomial of this mean (dp-accounting's)."""
    from dp_accounting.rdp.rdp_privacy_accountant import _gamma_truncated_negative_binomial

    return float(_gamma_truncated_negative_binomial(shape, mean))


def n_runs_pmf(k, distribution: str, mean: float, shape: float = 0.5) -> np.ndarray:
    """``P[K = k]`` for the number of runs ``K`` (Papernot & Steinke 2022, Section 2).

    Parameters
    ----------
    k : int or array-like of int
    distribution : {"truncated_negative_binomial", "poisson", "geometric", "logarithmic"}
    mean : float
        ``E[K]``, at least 1.
    shape : float, default=0.5
        The truncated negative binomial's ``eta`` (other distributions ignore it).

    Returns
    -------
    ndarray of float
        Probabilities (``K >= 1``, except Poisson, where ``K = 0`` has mass ``e^-mean``).
    """
    k = np.atleast_1d(np.asarray(k, dtype=np.float64))
    eta = run_distribution_shape(distribution, shape)
    mean = float(mean)
    if mean < 1:
        raise ValueError(f"the mean number of runs must be >= 1, got {mean}")
    out = np.zeros_like(k)
    if math.isinf(eta):
        ok = k >= 0
        out[ok] = np.exp(-mean + k[ok] * math.log(mean) - _lgamma(k[ok] + 1))
        return out
    gamma = _gamma(eta, mean)
    ok = k >= 1
    if gamma >= 1.0:  # mean 1: one run, always
        out[k == 1] = 1.0
        return out
    if eta == 0:
        out[ok] = np.exp(k[ok] * math.log1p(-gamma) - np.log(k[ok]) - math.log(-math.log(gamma)))
        return out
    log_norm = math.log(math.expm1(-eta * math.log(gamma)))  # gamma^-eta - 1
    out[ok] = np.exp(
        k[ok] * math.log1p(-gamma) + _lgamma(k[ok] + eta) - math.lgamma(eta) - _lgamma(k[ok] + 1)
        - log_norm
    )  # fmt: skip
    return out


def _lgamma(x: np.ndarray) -> np.ndarray:
    return gammaln(x)


def draw_n_runs(random: RandomSource, distribution: str, mean: float, shape: float = 0.5) -> int:
    """Draw the number of runs ``K`` by inverting its CDF at one uniform of ``random``.

    The uniform comes from the search's :class:`~skfairdp.privacy.RandomSource`
    (the OS CSPRNG in ``secure_mode``): ``K`` must stay secret, it is part of the
    mechanism's randomness.

    Parameters
    ----------
    random : RandomSource
    distribution, mean, shape
        See :func:`n_runs_pmf`.

    Returns
    -------
    int
    """
    u = float(random.uniform(1)[0])
    k = 0 if distribution == "poisson" else 1
    cdf, block = 0.0, 256
    while True:
        ks = np.arange(k, k + block)
        pmf = n_runs_pmf(ks, distribution, mean, shape)
        cum = cdf + np.cumsum(pmf)
        hit = np.flatnonzero(cum >= u)
        if hit.size:
            return int(ks[hit[0]])
        if pmf[-1] < 1e-300 or k > 10**7:  # u within rounding of 1: the tail's first value
            return int(ks[-1])
        cdf, k, block = float(cum[-1]), k + block, block * 2


# ---------------------------------------------------------------------------
# hyperparameters
# ---------------------------------------------------------------------------
def _check_space(param_distributions) -> list[dict]:
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


def _draw_params(spaces: list[dict], random: RandomSource) -> dict:
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


def _planning_candidates(spaces: list[dict]) -> list[dict]:
    """The candidates whose fit events are planned: the whole grid, or data-independent draws."""
    if all(not hasattr(v, "rvs") for space in spaces for v in space.values()):
        grid = ParameterGrid(spaces)
        if len(grid) <= _MAX_PLANNED_GRID:
            return list(grid)
    source = RandomSource(0)
    return [_draw_params(spaces, source) for _ in range(_PLANNING_DRAWS)]


# ---------------------------------------------------------------------------
# noisy validation statistics
# ---------------------------------------------------------------------------
def _noisy_statistics(cells: np.ndarray, fairness, scoring) -> dict:
    """Noisy score and violation from noisy ``cells[group, true, predicted]`` (post-processing)."""
    cells = np.maximum(cells, 0.0)
    n_classes = cells.shape[1]
    diag = np.arange(n_classes)
    by_class = cells.sum(axis=0)  # [true, predicted]
    total = max(by_class.sum(), 1.0)
    if scoring == "accuracy":
        score = float(by_class[diag, diag].sum() / total)
    else:
        recall = by_class[diag, diag] / np.maximum(by_class.sum(axis=1), 1.0)
        score = float(recall.mean())
    out = {"score": min(max(score, 0.0), 1.0)}
    if fairness is None:
        return out
    if fairness == "demographic_parity":
        violation = demographic_parity_from_counts(cells.sum(axis=1))  # [group, predicted]
    elif fairness == "equal_opportunity":
        violation = equal_opportunity_from_counts(cells, positive_classes(np.arange(n_classes)))
    else:
        violation = equalized_odds_from_counts(cells)
    out["violation"] = float(violation)
    return out


def _selection_key(stats: dict, max_violation) -> tuple:
    """Total order on one run's noisy statistics (larger is better)."""
    if max_violation is None or "violation" not in stats:
        return (1, stats["score"])
    if stats["violation"] <= max_violation:
        return (1, stats["score"])
    return (0, -stats["violation"])


# ---------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------
def _dominates(a: dp_accounting.DpEvent, b: dp_accounting.DpEvent) -> bool:
    """Whether ``a``'s RDP curve is at least ``b``'s at every order (add/remove one)."""
    if a == b:
        return True
    with quiet_accounting():
        ra, rb = _rdp_of(a), _rdp_of(b)
    if ra is None or rb is None:
        return False
    finite = np.isfinite(rb)
    ok = np.where(
        finite,
        ra >= np.where(finite, rb - 1e-12 * np.maximum(1.0, np.abs(rb)), 0.0),
        np.isposinf(ra),
    )
    return bool(np.all(ok))


def _cover(events: list[dp_accounting.DpEvent]) -> tuple[dp_accounting.DpEvent, bool]:
    """One event whose RDP curve is at least every event's; ``(event, exact)``."""
    distinct = []
    for event in events:
        if event not in distinct:
            distinct.append(event)
    for candidate in distinct:
        if all(_dominates(candidate, other) for other in distinct):
            return candidate, True
    return compose(distinct), False


def _largest_within(total, eps: float, rtol: float = 1e-3, max_evals: int = 30) -> float:
    """Largest ``x`` (to ``rtol``) with ``total(x) <= eps``, for an increasing ``total``.

    Regula falsi (Illinois) on ``log total(x) - log eps`` against ``log x``, which is
    nearly linear here (an epsilon grows about linearly with an inner epsilon), so a
    few evaluations suffice; each is a calibration of every planned candidate.
    """

    def f(x):
        return math.log(total(math.exp(x))) - math.log(eps)

    a = math.log(eps)
    fa = f(a)
    if fa <= 0:
        return eps  # one run already spends no more than a repeated one: nothing to fit
    b = a - fa - math.log(2.0)  # guess: slope one, then some margin
    fb = f(b)
    while fb > 0:
        a, fa = b, fb
        b = b - 2 * fb - math.log(4.0)
        if b < math.log(eps * 1e-6):
            raise ValueError("no inner budget fits")
        fb = f(b)
    # now f(b) <= 0 < f(a), b < a
    side, true_fb = 0, fb
    for _ in range(max_evals):
        if -true_fb < rtol or a - b < rtol:
            break
        x = b - fb * (a - b) / (fa - fb)
        x = min(max(x, b + 1e-4 * (a - b)), a - 1e-4 * (a - b))
        fx = f(x)
        if fx <= 0:
            b, fb, true_fb = x, fx, fx
            if side == -1:
                fa /= 2
            side = -1
        else:
            a, fa = x, fx
            if side == 1:
                fb /= 2
            side = 1
    return math.exp(b)


def _budget_names(estimator) -> tuple[str, str]:
    """The ``epsilon``/``delta`` parameter names of the private estimator at the end."""
    if isinstance(estimator, Pipeline):
        name, last = estimator.steps[-1]
        inner_eps, inner_delta = _budget_names(last)
        return f"{name}__{inner_eps}", f"{name}__{inner_delta}"
    params = estimator.get_params(deep=False)
    if "epsilon" not in params or "delta" not in params:
        raise TypeError(
            f"{type(estimator).__name__} has no epsilon/delta parameters: PrivateSearchCV tunes "
            "a private estimator (or a Pipeline ending in one)"
        )
    return "epsilon", "delta"


def _seed(estimator, random: RandomSource):
    """Seed every ``random_state``/``secure_mode`` of ``estimator`` from a child of ``random``."""
    child = random.spawn().estimator_params()
    names = estimator.get_params(deep=True)
    update = {}
    for name in names:
        leaf = name.rsplit("__", 1)[-1]
        if leaf in child:
            update[name] = child[leaf]
    return estimator.set_params(**update)


class PrivateSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Private random hyperparameter search inside one ``(epsilon, delta)`` (Papernot & Steinke).

    See the module docstring (:mod:`skfairdp.model_selection`) for the mechanism,
    its accounting and the selection rule; doc/model_selection.md for a guide.

    Parameters
    ----------
    estimator : estimator
        A skfairdp estimator (parameters ``epsilon`` and ``delta``), or a
        ``Pipeline`` ending in one; the search sets its budget. Other steps of a
        pipeline keep theirs (their events are part of every run's).
    param_distributions : dict or list of dicts
        Parameter names (with ``step__`` prefixes inside a pipeline) mapped to
        lists (drawn uniformly) or scipy distributions (``rvs``). Each run draws
        independently, with replacement. Parameters that change the fit's event
        (``batch_size``, ``max_epochs``, ``fairness_weight=0``) are allowed: the
        accounting covers the most expensive candidate.
    scoring : {"accuracy", "balanced_accuracy"}, default="accuracy"
        The noisy score, from noisy validation counts.
    fairness : {"demographic_parity", "equal_opportunity", "equalized_odds"} or None
        The noisy violation computed for each run (needs ``sensitive_features``).
    max_violation : float or None, default=None
        With ``fairness``: the bound of the selection rule (runs meeting it win).
    epsilon : float, default=1.0
        Total epsilon of the whole search (all runs and their scores).
    delta : float or "auto", default="auto"
        Total delta; ``"auto"`` is ``0.1 / n`` rounded down (see
        :func:`~skfairdp.privacy.resolve_delta`).
    n_candidates_mean : float, default=5.0
        Mean number of runs ``E[K]`` (at least 1).
    distribution : {"truncated_negative_binomial", "poisson", "geometric", "logarithmic"}
        Distribution of ``K``. Poisson may draw ``K = 0`` (probability
        ``e^-mean``): the search then releases nothing and has no model.
    shape : float, default=0.5
        The truncated negative binomial's ``eta`` (smaller: heavier tail, cheaper
        accounting; 1 is the geometric).
    validation_size : float or int, default=0.2
        Share (or number) of rows held out to score the runs.
    score_noise_multiplier : float or "auto", default="auto"
        Std of the Gaussian noise on each validation count (sensitivity 1);
        ``"auto"``: the multiplier with which one such release alone would spend
        a fifth of ``epsilon`` at ``delta`` (about 20 at ``epsilon=1``,
        ``delta=1e-5``: noise of std 20 on each count). In the composition with
        a fit it costs far less than that fifth (RDP adds up): on Adult with
        DP-FERMI, the inner epsilon is 4% lower than with a noise of 38.
    random_state : int, RandomState or None, default=None
        Seeds the split, ``K``, the draws and every run (reproducible; not for
        deployment, see ``secure_mode``).
    secure_mode : bool, default=False
        Draw ``K``, the split and every run's noise from the OS CSPRNG.

    Attributes
    ----------
    best_estimator_ : estimator or None
        The selected run's model (fitted on the training part); None if no run.
    best_params_ : dict or None
        Its drawn hyperparameters.
    best_score_ : float
        Its noisy validation score.
    best_violation_ : float or None
        Its noisy validation violation (with ``fairness``).
    cv_results_ : dict of lists
        The released values only: one entry, the selected run (``params``,
        ``noisy_score``, ``noisy_violation``, ``meets_bound``).
    inner_epsilon_ : float
        The epsilon each run's fit was given (with ``delta_``).
    score_noise_multiplier_ : float
    delta_ : float
        The resolved total delta.
    dp_event_ : dp_accounting.RepeatAndSelectDpEvent
        The search's event (the run's event repeated ``K ~ distribution`` times).
    privacy_spent_ : PrivacySpent
        ``(epsilon, delta)`` of ``dp_event_`` (RDP accountant), at most the budget.
    exact_cover_ : bool
        Whether the planned run event is one of the candidates' (False: the
        composition of several, conservative).
    n_features_in_ : int
    classes_ : ndarray

    References
    ----------
    .. [1] N. Papernot and T. Steinke. Hyperparameter tuning with Renyi
       differential privacy. ICLR 2022. https://arxiv.org/abs/2110.03620

    Examples
    --------
    >>> from skfairdp import DPFermiClassifier
    >>> from skfairdp.model_selection import PrivateSearchCV
    >>> search = PrivateSearchCV(
    ...     DPFermiClassifier(max_epochs=5),
    ...     {"fairness_weight": [1.0, 4.0], "lr": [0.1, 0.5]},
    ...     fairness="demographic_parity", max_violation=0.05, epsilon=1.0,
    ... )  # doctest: +SKIP
    >>> search.fit(X, y, sensitive_features=s).privacy_spent_  # doctest: +SKIP
    PrivacySpent(epsilon=0.999, delta=2e-06)
    """

    _parameter_constraints: dict = {
        "estimator": [object],
        "param_distributions": [dict, list],
        "scoring": [StrOptions(set(SCORING))],
        "fairness": [StrOptions(set(FAIRNESS)), None],
        "max_violation": [Interval(numbers.Real, 0, None, closed="left"), None],
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "n_candidates_mean": [Interval(numbers.Real, 1, None, closed="left")],
        "distribution": [StrOptions(set(DISTRIBUTIONS))],
        "shape": [Interval(numbers.Real, 0, None, closed="neither")],
        "validation_size": [
            Interval(numbers.Real, 0, 1, closed="neither"),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "score_noise_multiplier": [
            Interval(numbers.Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "random_state": ["random_state"],
        "secure_mode": ["boolean"],
    }

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        scoring="accuracy",
        fairness=None,
        max_violation=None,
        epsilon=1.0,
        delta="auto",
        n_candidates_mean=5.0,
        distribution="truncated_negative_binomial",
        shape=0.5,
        validation_size=0.2,
        score_noise_multiplier="auto",
        random_state=None,
        secure_mode=False,
    ):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.scoring = scoring
        self.fairness = fairness
        self.max_violation = max_violation
        self.epsilon = epsilon
        self.delta = delta
        self.n_candidates_mean = n_candidates_mean
        self.distribution = distribution
        self.shape = shape
        self.validation_size = validation_size
        self.score_noise_multiplier = score_noise_multiplier
        self.random_state = random_state
        self.secure_mode = secure_mode

    # -- metadata routing ------------------------------------------------------
    def get_metadata_routing(self):
        """Routes ``fit`` metadata (``sensitive_features``, ``sample_weight``) to the estimator."""
        return MetadataRouter(owner=self).add(
            estimator=self.estimator,
            method_mapping=MethodMapping().add(caller="fit", callee="fit"),
        )

    # -- accounting --------------------------------------------------------------
    def _accountant_options(self) -> dict:
        return {"accountant": "rdp", "privacy_unit": "record"}

    def _run_event(self, fit_event, z_score) -> dp_accounting.DpEvent:
        return compose([fit_event, dp_accounting.GaussianDpEvent(z_score)])

    def _search_event(self, run_event) -> dp_accounting.DpEvent:
        shape = run_distribution_shape(self.distribution, self.shape)
        return dp_event.RepeatAndSelectDpEvent(run_event, float(self.n_candidates_mean), shape)

    def _price(self, event, delta) -> float:
        try:
            return epsilon_spent(event, delta, accountant="rdp").epsilon
        except (dp_accounting.UnsupportedEventError, ValueError) as exc:
            raise ValueError(
                f"PrivateSearchCV is accounted by dp-accounting's RDP accountant (repeat and "
                f"select); the estimator's event is not supported by it: {exc}"
            ) from exc

    def _planned_fit_events(self, candidates, eps_in, delta, n_train):
        eps_name, delta_name = _budget_names(self.estimator)
        events = []
        for params in candidates:
            est = clone(self.estimator).set_params(**params)
            est.set_params(**{eps_name: eps_in, delta_name: delta})
            events.append(planned_fit_event(est, n_train))
        return events

    def _calibrate(self, candidates, delta, n_train, z_score):
        """Largest inner epsilon whose repeated-and-selected run costs at most ``epsilon``."""
        eps = float(self.epsilon)
        # candidates with the same event at one budget are planned by one representative
        probe = self._planned_fit_events(candidates, eps, delta, n_train)
        reps = [candidates[i] for i, e in enumerate(probe) if probe.index(e) == i]

        def total(eps_in):
            cover, _ = _cover(self._planned_fit_events(reps, eps_in, delta, n_train))
            return self._price(self._search_event(self._run_event(cover, z_score)), delta)

        try:
            lo = _largest_within(total, eps)
        except ValueError:
            raise ValueError(
                f"no inner budget fits epsilon={eps:g}, delta={delta:g} with "
                f"n_candidates_mean={self.n_candidates_mean:g} and score noise "
                f"{z_score:.3g}: raise epsilon, or lower n_candidates_mean"
            ) from None
        cover, exact = _cover(self._planned_fit_events(candidates, lo, delta, n_train))
        if self._price(self._search_event(self._run_event(cover, z_score)), delta) > eps:
            # a candidate planned like a representative at one budget differs at this one:
            # calibrate again with every candidate (slower, rarely needed)
            reps = candidates
            lo = _largest_within(total, eps)
            cover, exact = _cover(self._planned_fit_events(candidates, lo, delta, n_train))
        return lo, cover, exact

    # -- fit ---------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None, **fit_params):
        """Run the private search.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sensitive_features : array-like, optional
            Groups: routed to the estimator's ``fit`` (it requests them, or with
            metadata routing disabled when it accepts them) and used by the noisy
            fairness statistics.
        **fit_params
            Other metadata for the estimator's ``fit`` (routed).

        Returns
        -------
        self
        """
        spaces = _check_space(self.param_distributions)
        if self.max_violation is not None and self.fairness is None:
            raise ValueError("max_violation needs a fairness notion: set fairness=...")
        X, y = indexable(X, y)
        y = np.asarray(y)
        n = _num_samples(X)
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]}")
        groups, n_groups = None, 1
        if self.fairness is not None:
            if sensitive_features is None:
                raise ValueError(
                    f"fairness={self.fairness!r} needs fit(X, y, sensitive_features=...)"
                )
            groups, encoder = encode_sensitive_features(sensitive_features, n)
            n_groups = encoder.n_groups_  # all groups, not those in the validation part
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError("PrivateSearchCV needs at least 2 classes in y")
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        n_val = (
            int(self.validation_size)
            if isinstance(self.validation_size, numbers.Integral)
            else math.ceil(float(self.validation_size) * n)
        )
        if not 1 <= n_val < n - 1:
            raise ValueError(f"validation_size={self.validation_size!r} leaves no training rows")
        order = random.permutation(n)
        val_idx, train_idx = np.sort(order[:n_val]), np.sort(order[n_val:])
        delta = resolve_delta(self.delta, n)
        z = self.score_noise_multiplier
        if z == "auto":  # the scores' noise: one release spends a fifth of the budget
            z = calibrate_noise_multiplier(
                SCORE_BUDGET_SHARE * float(self.epsilon),
                delta,
                dp_accounting.GaussianDpEvent,
                accountant="rdp",
            )
        z = float(z)
        candidates = _planning_candidates(spaces)
        eps_in, fit_cover, exact = self._calibrate(candidates, delta, len(train_idx), z)
        if not exact:
            warnings.warn(
                "the candidates' fit events differ and none dominates the others: a run is "
                "accounted as their composition (conservative). Search one event's "
                "parameters at a time (e.g. fairness_weight > 0 only) for a tighter budget.",
                UserWarning,
                stacklevel=2,
            )
        self.inner_epsilon_, self.delta_, self.score_noise_multiplier_ = eps_in, delta, z
        self.exact_cover_ = exact
        self.dp_event_ = self._search_event(self._run_event(fit_cover, z))
        self.privacy_spent_ = PrivacySpent(self._price(self.dp_event_, delta), delta)

        routed = self._route(sensitive_features, fit_params)
        eps_name, delta_name = _budget_names(self.estimator)
        n_runs = draw_n_runs(random, self.distribution, self.n_candidates_mean, self.shape)
        X_train, y_train = _safe_indexing(X, train_idx), y[train_idx]
        X_val, y_val = _safe_indexing(X, val_idx), y[val_idx]
        routed_train = {k: _slice(v, train_idx, n) for k, v in routed.items()}
        best = None
        for _ in range(n_runs):
            params = _draw_params(spaces, random)
            est = clone(self.estimator).set_params(**params)
            est.set_params(**{eps_name: eps_in, delta_name: delta})
            _seed(est, random)
            est.fit(X_train, y_train, **routed_train)
            recorded = spent_event(est)
            if not _dominates(fit_cover, recorded):
                raise RuntimeError(
                    f"a run with {params} recorded an event the search did not plan for "
                    f"({recorded}); its accounting would not hold. Its parameters change the "
                    "fit's event in a way the planning draws missed: search them as lists."
                )
            val_groups = None if groups is None else groups[val_idx]
            stats = self._score(est, X_val, y_val, val_groups, n_groups, z, random)
            key = _selection_key(stats, self.max_violation)
            if best is None or key > best[0]:
                best = (key, est, params, stats)
        self._store(best)
        return self

    def _route(self, sensitive_features, fit_params) -> dict:
        params = dict(fit_params)
        if sensitive_features is not None:
            params["sensitive_features"] = sensitive_features
        if _routing_enabled():
            return dict(process_routing(self, "fit", **params).estimator.fit)
        final = self.estimator
        while isinstance(final, Pipeline):
            final = final.steps[-1][1]
        accepted = inspect.signature(final.fit).parameters
        if "sensitive_features" not in accepted and not any(
            p.kind is p.VAR_KEYWORD for p in accepted.values()
        ):
            params.pop("sensitive_features", None)  # used by the scores only
        if isinstance(self.estimator, Pipeline):  # old-style step__param routing
            last = self.estimator.steps[-1][0]
            return {f"{last}__{k}": v for k, v in params.items()}
        return params

    def _score(self, est, X_val, y_val, groups, n_groups, z, random) -> dict:
        """The run's noisy validation statistics (one Gaussian release, sensitivity 1)."""
        y_pred = np.asarray(est.predict(X_val))
        k = len(self.classes_)
        t = np.searchsorted(self.classes_, y_val)
        p = np.searchsorted(self.classes_, y_pred).clip(0, k - 1)
        p = np.where(self.classes_[p] == y_pred, p, -1)  # a label outside classes_: never right
        recorder = EventRecorder()
        if self.fairness is None and self.scoring == "accuracy":
            correct = torch.tensor(float(np.sum(p == t)), dtype=torch.float64)
            noisy, _ = noisy_count(correct, z, random, recorder)
            score = float(noisy) / len(y_val)
            return {"score": min(max(score, 0.0), 1.0)}
        g = np.zeros(len(y_val), dtype=np.int64) if groups is None else groups
        keep = p >= 0
        flat = (g[keep] * k + t[keep]) * k + p[keep]
        cells = np.bincount(flat, minlength=n_groups * k * k).reshape(n_groups, k, k)
        wrong = np.bincount(g[~keep] * k + t[~keep], minlength=n_groups * k).reshape(n_groups, k)
        if wrong.any():  # predicted outside classes_: count as the next class (a wrong cell)
            cells[:, np.arange(k), (np.arange(k) + 1) % k] += wrong
        noisy, _ = noisy_count(torch.as_tensor(cells, dtype=torch.float64), z, random, recorder)
        return _noisy_statistics(noisy.numpy(), self.fairness, self.scoring)

    def _store(self, best) -> None:
        if best is None:
            warnings.warn(
                "the Poisson draw gave K=0 runs: the search released nothing and has no model "
                "(probability exp(-n_candidates_mean)); use another random_state or distribution",
                UserWarning,
                stacklevel=3,
            )
            self.best_estimator_ = self.best_params_ = self.best_violation_ = None
            self.best_score_ = math.nan
            self.cv_results_ = {"params": [], "noisy_score": [], "noisy_violation": [],
                                "meets_bound": []}  # fmt: skip
            return
        key, est, params, stats = best
        self.best_estimator_ = est
        self.best_params_ = params
        self.best_score_ = stats["score"]
        self.best_violation_ = stats.get("violation")
        self.n_features_in_ = getattr(est, "n_features_in_", None)
        if hasattr(est, "feature_names_in_"):
            self.feature_names_in_ = est.feature_names_in_
        self.cv_results_ = {
            "params": [params],
            "noisy_score": [self.best_score_],
            "noisy_violation": [self.best_violation_],
            "meets_bound": [None if self.max_violation is None else bool(key[0])],
        }

    def __sklearn_tags__(self):
        from sklearn.utils import get_tags

        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.input_tags = inner.input_tags
        tags.non_deterministic = True  # K, the split and every run are random
        return tags

    # -- delegation ----------------------------------------------------------------
    def _check_model(self):
        check_is_fitted(self, "dp_event_")
        if self.best_estimator_ is None:
            raise ValueError("the search ran no candidate (K=0): it has no model")
        return True

    def _has(name):
        def check(self):
            return hasattr(self.estimator, name)

        return check

    @available_if(_has("predict"))
    def predict(self, X):
        """Predictions of the selected model."""
        self._check_model()
        return self.best_estimator_.predict(X)

    @available_if(_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the selected model."""
        self._check_model()
        return self.best_estimator_.predict_proba(X)

    @available_if(_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the selected model."""
        self._check_model()
        return self.best_estimator_.decision_function(X)

    def score(self, X, y, **params):
        """The selected model's ``score`` (accuracy for a classifier)."""
        self._check_model()
        return self.best_estimator_.score(X, y, **params)

    del _has


def _slice(value, indices, n):
    """Row-slice per-row metadata (length ``n``); other values pass unchanged."""
    try:
        if _num_samples(value) == n:
            return _safe_indexing(value, indices)
    except TypeError:
        pass
    return value
