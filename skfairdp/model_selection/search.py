"""Private hyperparameter search: Papernot & Steinke's random stopping, fairness-aware.

:class:`PrivateSearchCV` tunes any skfairdp estimator (or a ``Pipeline`` ending in
one) inside one stated budget ``(epsilon, delta)``. The whole search is one
mechanism, the *repeat-and-select* mechanism of Papernot & Steinke (2022,
"Hyperparameter tuning with Renyi differential privacy", ICLR):

1. the rows are split once, at random and independently of their values, into a
   training part and a validation part (``validation_size``), each row on its own
   coin (:func:`.inputs.independent_split`: one row more or less changes one part
   by that row, as the add/remove accounting needs);
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
   hyperparameters and its noisy scores -- for a binary classifier its whole noisy
   table, as a :class:`~skfairdp.metrics.PrivateMetricFrame` with intervals
   (``validation_frame_``; :mod:`.validation`). Nothing about the other runs is kept.

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
curves, or, when none does, by their data-independent choice
(:class:`~skfairdp.privacy.choice.ChoiceDpEvent`: the pointwise maximum of their
curves, since a run draws its hyperparameters independently of the data). Every
run's recorded event is checked against the plan before its score is released.

**Selection.** With ``fairness`` and ``max_violation`` set, a run that meets the
bound on the noisy violation beats every run that does not; among those that
meet it the larger noisy score wins, among those that do not the smaller noisy
violation. This is a total order on single runs, which is what the theorem
requires.
"""

from __future__ import annotations

import math
import numbers
import warnings

import dp_accounting
import numpy as np
import torch
from dp_accounting import dp_event
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils._metadata_requests import MetadataRouter, MethodMapping
from sklearn.utils._param_validation import Interval, StrOptions

from .._fit.parameters import store_parameters
from ..privacy import EventRecorder, RandomSource, noisy_count, resolve_delta
from ..privacy.events import compose
from ..privacy.spent import spent_event
from .accounting import ACCOUNTANT_OPTIONS, choice_cover, dominates, rdp_spent, require_record_unit
from .calibration import (
    InnerBudget,
    NoInnerBudget,
    auto_score_noise_multiplier,
    calibrate_inner_budget,
)
from .candidates import check_space, configured, draw_params, planning_candidates, seed_run
from .distributions import DISTRIBUTIONS, draw_n_runs, run_distribution_shape
from .inputs import check_search_input, held_out_split, validation_rows
from .routing import routed_fit_params, training_rows
from .run_warnings import held_warnings, show_selected
from .selected import SelectedModelMixin
from .statistics import (
    FAIRNESS,
    SCORING,
    confusion_cells,
    correct_count,
    noisy_accuracy,
    noisy_statistics,
    selection_key,
)
from .validation import released_intervals, validation_frame

__all__ = ["PrivateSearchCV"]

#: The keys of ``cv_results_`` (the selected run only).
CV_RESULTS = ("params", "noisy_score", "noisy_violation", "meets_bound", "score_lower",
              "score_upper", "violation_lower", "violation_upper")  # fmt: skip


class PrivateSearchCV(SelectedModelMixin, MetaEstimatorMixin, BaseEstimator):
    """Private random hyperparameter search inside one ``(epsilon, delta)`` (Papernot & Steinke).

    See the module docstring (:mod:`skfairdp.model_selection.search`) for the mechanism,
    its accounting and the selection rule; :doc:`/model_selection` for a guide.

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
        Total epsilon of the whole search (all runs and their scores), finite:
        ``np.inf`` is refused (``InvalidParameterError``). The search's guarantee
        comes from the noisy scores and the secret number of runs, which a
        non-private search has no use for; at ``epsilon=np.inf`` tune the estimator
        with scikit-learn's ``GridSearchCV`` or ``RandomizedSearchCV`` instead.
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
        ``"auto"``: the multiplier with which one such release alone is
        ``(epsilon / 5, delta / 5)``-DP (exact Gaussian; 18.2 at ``epsilon=1``,
        ``delta=1e-5``: noise of std 18 on each count). In the composition with
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
        ``noisy_score``, ``noisy_violation``, ``meets_bound``), and 95 % intervals
        on its population score and violation under sampling and the noise
        (``score_lower``, ``score_upper``, ``violation_lower``, ``violation_upper``;
        None where there is none), post-processing of its noisy validation
        release. Optimistic by the winner's curse: the run was selected on its
        noisy scores (:mod:`skfairdp.model_selection.validation`).
    validation_frame_ : PrivateMetricFrame or None
        The selected run's noisy validation table (``(group x true x predicted)``
        counts; binary classifiers, with a fairness notion or balanced accuracy)
        as a :class:`~skfairdp.metrics.PrivateMetricFrame`: any confusion-matrix
        metric by group and its interval, at no further cost (its release is the
        run's score release, already inside ``dp_event_``: do not compose it again).
        None with ``scoring="accuracy"`` alone (one noisy count) or several classes.
    inner_epsilon_ : float
        The epsilon each run's fit was given (with ``delta_``).
    n_train_, n_validation_ : int
        The parts' sizes the split's coins drew (each row on its own coin).
    score_noise_multiplier_ : float
    delta_ : float
        The resolved total delta.
    dp_event_ : dp_accounting.RepeatAndSelectDpEvent
        The search's event (the run's event repeated ``K ~ distribution`` times).
    privacy_spent_ : PrivacySpent
        ``(epsilon, delta)`` of ``dp_event_`` (RDP accountant), at most the budget.
    exact_cover_ : bool
        Whether the planned run event is one of the candidates' or their
        data-independent choice (:class:`~skfairdp.privacy.choice.ChoiceDpEvent`, the
        pointwise maximum of their RDP curves); False: a composition (conservative).
    n_features_in_ : int
    classes_ : ndarray

    References
    ----------
    .. [1] N. Papernot and T. Steinke. Hyperparameter tuning with Renyi
       differential privacy. ICLR 2022. https://arxiv.org/abs/2110.03620

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import DPFermiClassifier
    >>> from skfairdp.model_selection import PrivateSearchCV
    >>> search = PrivateSearchCV(
    ...     DPFermiClassifier(max_epochs=3),
    ...     {"fairness_weight": [1.0, 4.0], "lr": [0.1, 0.5]},
    ...     fairness="demographic_parity", max_violation=0.1, epsilon=1.0, random_state=0,
    ... )
    >>> search.fit(X, y, sensitive_features=s).predict(X[:5]).shape
    (5,)
    >>> sorted(search.best_params_)
    ['fairness_weight', 'lr']
    >>> round(search.privacy_spent_.epsilon, 2)  # the whole search, every run included
    1.0
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
        self, estimator, param_distributions, *, scoring="accuracy", fairness=None,
        max_violation=None, epsilon=1.0, delta="auto", n_candidates_mean=5.0,
        distribution="truncated_negative_binomial", shape=0.5, validation_size=0.2,
        score_noise_multiplier="auto", random_state=None, secure_mode=False,
    ):  # fmt: skip
        store_parameters(self, locals())

    # -- metadata routing ------------------------------------------------------
    def get_metadata_routing(self) -> MetadataRouter:
        """Routes ``fit`` metadata (``sensitive_features``, ``sample_weight``) to the estimator."""
        return MetadataRouter(owner=self).add(
            estimator=self.estimator,
            method_mapping=MethodMapping().add(caller="fit", callee="fit"),
        )

    # -- the mechanism's event and its plan ------------------------------------------
    def _accountant_options(self) -> dict:
        return dict(ACCOUNTANT_OPTIONS)

    def _search_event(self, fit_event, z_score: float) -> dp_accounting.DpEvent:
        """One run is its fit then one score release; the search repeats it and selects."""
        run = compose([fit_event, dp_accounting.GaussianDpEvent(z_score)])
        shape = run_distribution_shape(self.distribution, self.shape)
        return dp_event.RepeatAndSelectDpEvent(run, float(self.n_candidates_mean), shape)

    def _plan(
        self, spaces: list[dict], n_samples: int, n_train: int | None = None
    ) -> tuple[int, float, float, InnerBudget]:
        """``(n_val, delta, z_score, inner budget)`` of a search on ``n_samples`` rows.

        ``n_train``: the realised training part (``fit``); ``None`` plans the expected
        one, ``n_samples - ceil(validation_size * n_samples)`` (``planned_event``).
        """
        require_record_unit(self.estimator)
        n_val = validation_rows(self.validation_size, n_samples)
        if n_train is not None:
            n_val = n_samples - n_train
        delta = resolve_delta(self.delta, n_samples)
        z = self.score_noise_multiplier
        z = float(auto_score_noise_multiplier(self.epsilon, delta) if z == "auto" else z)
        try:
            budget = calibrate_inner_budget(
                self.estimator,
                planning_candidates(spaces),
                epsilon=float(self.epsilon),
                delta=delta,
                n_train=n_samples - n_val,
                search_event=lambda fit_event: self._search_event(fit_event, z),
                combine=choice_cover,
            )
        except NoInnerBudget:
            raise ValueError(
                f"no inner budget fits epsilon={self.epsilon:g}, delta={delta:g} with "
                f"n_candidates_mean={self.n_candidates_mean:g} and score noise "
                f"{z:.3g}: raise epsilon, or lower n_candidates_mean"
            ) from None
        return n_val, delta, z, budget

    def planned_event(self, n_samples: int) -> dp_accounting.DpEvent:
        """The event a search on ``n_samples`` rows executes (no fit runs).

        Parameters
        ----------
        n_samples : int
            Rows the search would see (training and validation parts).

        Returns
        -------
        dp_accounting.RepeatAndSelectDpEvent
            What ``fit`` records as ``dp_event_``.
        """
        self._validate_params()
        _, _, z, budget = self._plan(check_space(self.param_distributions), int(n_samples))
        return self._search_event(budget.fit_event, z)

    # -- fit -----------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None, **fit_params) -> PrivateSearchCV:
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
        spaces = check_space(self.param_distributions)
        if self.max_violation is not None and self.fairness is None:
            raise ValueError("max_violation needs a fairness notion: set fairness=...")
        X, y, groups, encoder = check_search_input(X, y, sensitive_features, self.fairness)
        n_groups = 1 if encoder is None else encoder.n_groups_
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"PrivateSearchCV needs at least 2 classes in y; got 1 class ({self.classes_[0]!r})"
            )
        n = len(y)
        # 1. one random split, independent of the values and row by row
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        val_idx, train_idx = held_out_split(random, n, {"validation_size": self.validation_size})
        n_val, delta, z, budget = self._plan(spaces, n, n_train=len(train_idx))
        self.n_train_, self.n_validation_ = len(train_idx), n_val
        if not budget.exact:
            warnings.warn(
                "the candidates' fit events differ and none dominates the others: a run is "
                "accounted as their composition (conservative). Search one event's "
                "parameters at a time (e.g. fairness_weight > 0 only) for a tighter budget.",
                UserWarning,
                stacklevel=2,
            )
        self.inner_epsilon_, self.delta_, self.score_noise_multiplier_ = budget.epsilon, delta, z
        self.exact_cover_ = budget.exact

        routed = routed_fit_params(self, sensitive_features, fit_params)
        train = (_safe_indexing(X, train_idx), y[train_idx], training_rows(routed, train_idx, n))
        validation = (
            _safe_indexing(X, val_idx),
            y[val_idx],
            None if groups is None else groups[val_idx],
            n_groups,
        )
        # 2. K secret runs, 3. each a private fit and a noisy score, 4. keep the best only
        best = None
        for _ in range(draw_n_runs(random, self.distribution, self.n_candidates_mean, self.shape)):
            params = draw_params(spaces, random)
            est, stats = self._run(params, train, validation, budget, delta, z, random, encoder)
            key = selection_key(stats, self.max_violation)
            if best is None or key > best[0]:
                best = (key, est, params, stats)
        recorder = EventRecorder()
        recorder.record(self._search_event(budget.fit_event, z))
        self.dp_event_ = recorder.build()
        self.privacy_spent_ = rdp_spent(self.dp_event_, delta)
        if best is not None:
            show_selected(best[3]["warnings"])
        self._store(best, encoder, delta, z, random.shareable_seed())
        return self

    def _run(self, params, train, validation, budget, delta, z, random, encoder) -> tuple:
        """One run: a private fit on the training part, checked against the plan, then scored.

        ``encoder``: the groups of all rows, declared to the run (None without fairness).
        """
        X_train, y_train, routed_train = train
        est = configured(self.estimator, params, budget.epsilon, delta, encoder)
        est = seed_run(est, random)
        require_record_unit(est)
        with held_warnings() as caught:  # shown only if this run is selected
            est.fit(X_train, y_train, **routed_train)
        run = EventRecorder()
        run.record(spent_event(est))
        if not dominates(budget.fit_event, run.build()):
            raise RuntimeError(
                f"a run with {params} recorded an event the search did not plan for "
                f"({run.build()}); its accounting would not hold. Its parameters change the "
                "fit's event in a way the planning draws missed: search them as lists."
            )
        with held_warnings() as predicting:
            stats = self._score(est, *validation, z, random, run)
        return est, {**stats, "warnings": caught + predicting}

    def _score(self, est, X_val, y_val, groups, n_groups, z, random, recorder) -> dict:
        """The run's noisy validation statistics (one Gaussian release, sensitivity 1)."""
        y_pred = np.asarray(est.predict(X_val))
        if self.fairness is None and self.scoring == "accuracy":
            correct = correct_count(self.classes_, y_val, y_pred)
            correct = torch.tensor(float(correct), dtype=torch.float64)
            noisy, _ = noisy_count(correct, z, random, recorder)
            stats = noisy_accuracy(float(noisy), len(y_val))
            return {**stats, "release": ("count", float(noisy), len(y_val), z)}
        cells = confusion_cells(self.classes_, y_val, y_pred, groups, n_groups)
        noisy, _ = noisy_count(torch.as_tensor(cells, dtype=torch.float64), z, random, recorder)
        stats = noisy_statistics(noisy.numpy(), self.fairness, self.scoring)
        return {**stats, "release": ("table", noisy.numpy())}

    def _store(self, best, encoder, delta: float, z: float, seed: int | None) -> None:
        """Keep the released values only: the selected run's model, parameters, noisy scores.

        Its noisy validation table becomes ``validation_frame_`` and gives the intervals.
        """
        if best is None:
            warnings.warn(
                "the Poisson draw gave K=0 runs: the search released nothing and has no model "
                "(probability exp(-n_candidates_mean)); use another random_state or distribution",
                UserWarning,
                stacklevel=3,
            )
            self.best_estimator_ = self.best_params_ = self.best_violation_ = None
            self.validation_frame_ = None
            self.best_score_ = math.nan
            self.cv_results_ = {key: [] for key in CV_RESULTS}
            return
        key, est, params, stats = best
        self.best_estimator_ = est
        self.best_params_ = params
        self.best_score_ = stats["score"]
        self.best_violation_ = stats.get("violation")
        self.n_features_in_ = getattr(est, "n_features_in_", None)
        if hasattr(est, "feature_names_in_"):
            self.feature_names_in_ = est.feature_names_in_
        release = stats["release"]
        self.validation_frame_ = None if release[0] == "count" else validation_frame(
            release[1], encoder, z, delta, seed, self.secure_mode
        )  # fmt: skip
        bounds = released_intervals(release, self.validation_frame_, self.scoring, self.fairness,
                                    seed)  # fmt: skip
        self.cv_results_ = {
            "params": [params],
            "noisy_score": [self.best_score_],
            "noisy_violation": [self.best_violation_],
            "meets_bound": [None if self.max_violation is None else bool(key[0])],
            **{name: [value] for name, value in bounds.items()},
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.input_tags = inner.input_tags
        tags.non_deterministic = True  # K, the split and every run are random
        return tags
