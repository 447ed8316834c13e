"""State the bound, get a model that meets it on new rows, with a certificate.

:class:`FairModelSearch` chooses, privately, among the fair estimators (DP-FERMI,
RaCO-DP, CGOOReduction and, when the group may be used at decision time,
DPThresholdOptimizer on a DP-SGD base), each over its knob, for a stated bound on
a fairness violation, and certifies the choice on rows the selection never saw.
The whole thing is one mechanism inside one ``(epsilon, delta)``:

1. the rows are split once, at random and independently of their values, into
   training, validation and certification parts, each row on its own coin
   (:func:`.inputs.independent_split`);
2. Papernot & Steinke's repeat-and-select (as in :class:`PrivateSearchCV`): ``K``
   runs, ``K`` drawn independently of the data and never released; each run draws
   a candidate (a family and its knob, :func:`~.families.default_space`), fits it
   privately on the training part, and releases its validation part's noisy
   ``(group x true x predicted)`` counts (one Gaussian release, sensitivity 1);
3. selection on what holds for new rows: a run *qualifies* when the upper end of
   its violation interval (sampling and noise, as
   :class:`~skfairdp.metrics.PrivateMetricFrame` computes it) is within
   ``max_violation``; a qualifying run beats every other, the most accurate (noisy
   accuracy) among them wins; without one, the most accurate run of a candidate that
   enforces at most 0.6 of the bound on its own training rows (RaCO-DP, CGOO) and whose
   interval's lower end is within the bound; then the most accurate run whose noisy
   point violation is within the bound, and last the run with the smallest upper
   end (:func:`selection_tier`: a total order on single runs, as the theorem
   requires; a run's candidate is part of its output). A run whose model is outside
   the bound, or less accurate than the majority class by the run's own noisy label
   counts, becomes that constant predictor (:class:`~.families.MajorityClass`,
   violation 0; its class from one release of the training and validation parts'
   ``(group x label)`` counts before the runs), ranked in the tier of what it
   replaced (at least the point tier). Where those counts show that the validation
   part cannot resolve the bound for any model, the runs draw only self-bounded
   candidates (``strategy="auto"``, :mod:`.resolution`);
4. the certificate (:mod:`.certificate`): the selected model's certification
   counts, released once; its intervals are not optimistic (the rows are fresh
   for the selected model).

**Accounting.** A run picks its family by data-independent randomness, so its RDP
curve is at most the pointwise maximum of the families' curves
(:class:`~skfairdp.privacy.choice.ChoiceDpEvent`) instead of their composition; the
search is ``RepeatAndSelectDpEvent`` of (choice, score release) composed with the
certificate's Gaussian release and the ``(group x label)`` counts', priced by RDP
(``privacy_unit="record"``). Every run's fit gets the same inner epsilon, the largest
that keeps the total within ``epsilon``; every run's recorded event is checked against
the plan.
"""

from __future__ import annotations

import numbers
import warnings

import dp_accounting
import numpy as np
import torch
from dp_accounting import dp_event
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, _fit_context
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._fit.parameters import store_parameters
from ..evaluation.violations import violation_interval
from ..privacy import EventRecorder, RandomSource, noisy_count, resolve_delta
from ..privacy.events import compose
from ..privacy.spent import spent_event
from .accounting import ACCOUNTANT_OPTIONS, choice_cover, dominates, rdp_spent
from .calibration import NoInnerBudget, auto_score_noise_multiplier, calibrate_inner_budget
from .candidates import check_space, configured, draw_params, planning_candidates, seed_run
from .certificate import certify
from .distributions import DISTRIBUTIONS, draw_n_runs, run_distribution_shape
from .families import FAMILIES, FairCandidate, MajorityClass, default_space
from .inputs import check_search_input, held_out_split
from .resolution import STRATEGIES, best_case_upper, self_bounded_space
from .run_warnings import held_warnings, show_selected
from .statistics import confusion_cells, noisy_statistics
from .tiers import (
    OUTSIDE,
    POINT_WITHIN,
    QUALIFIED,
    SELF_BOUNDED,
    TIER_NAMES,
    selection_tier,
    self_bounded,
)  # fmt: skip
from .validation import validation_frame

__all__ = ["FairModelSearch", "NoQualifyingCandidateWarning"]

NOTIONS = ("demographic_parity", "equalized_odds", "equal_opportunity")
#: fewest training rows left after the validation and certification parts
MIN_TRAIN_ROWS = 50


class NoQualifyingCandidateWarning(UserWarning):
    """No run's validation interval was within the bound: the fairest run was selected."""


class FairModelSearch(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """From a stated fairness bound and a budget to a certified private model.

    See the module docstring (:mod:`skfairdp.model_selection.fair_search`) for the
    mechanism and its accounting, and :doc:`/model_selection` for a guide.

    Parameters
    ----------
    fairness : {"demographic_parity", "equalized_odds", "equal_opportunity"}
        The notion the bound is on (fairlearn's difference: the largest gap between
        any two groups).
    max_violation : float, default=0.05
        The bound the model must meet on new rows.
    epsilon : float, default=1.0
        Total epsilon: every run, every validation release and the certificate.
    delta : float or "auto", default="auto"
        Total delta (``"auto"``: ``0.1 / n`` rounded down).
    group_at_predict : bool, default=False
        Whether the group may be used at decision time: adds DPThresholdOptimizer
        on a DP-SGD base to the candidates, and ``predict`` then needs
        ``sensitive_features``.
    candidates : "auto" or list of dict, default="auto"
        The search space over :class:`~.families.FairCandidate`'s ``family`` and
        ``knob`` (lists); ``"auto"``: :func:`~.families.default_space`.
    n_candidates_mean : float, default=3.0
        Mean number of runs ``E[K]``. Each run's fit budget shrinks as it grows; 3 keeps
        most of ``epsilon`` for the fits (measured on the zoo, issue 36).
    distribution : str, default="truncated_negative_binomial"
        Distribution of ``K`` (see :class:`PrivateSearchCV`).
    shape : float, default=0.5
    validation_size : float or int, default=0.2
        Rows scoring the runs.
    certification_size : float or int, default=0.2
        Rows certifying the selected model (used by nothing else).
    confidence : float, default=0.95
        Of the selection's upper bounds and of the certificate's intervals.
    strategy : {"auto", "search"}, default="auto"
        ``"auto"``: before the runs, decide from the released ``(group x label)`` counts
        whether the validation part can show the bound at all (the interval of a
        perfectly fair model of moderate skill,
        :func:`~.resolution.best_case_upper`, within ``max_violation``); where it
        cannot, no run could qualify, and the runs draw only the candidates that
        enforce at most ``SELF_BOUND_SHARE`` of the bound on their own training rows
        (:func:`~.resolution.self_bounded_space`: RaCO-DP and CGOO in the default
        space). ``"search"``: the whole space always. Same ``dp_event_`` and price
        either way (see :mod:`.resolution`).
    if_none_qualifies : {"warn", "raise"}, default="warn"
        When no run's upper bound is within the bound: keep the most accurate run
        whose noisy point violation is (else the one with the smallest upper bound)
        and warn (:class:`NoQualifyingCandidateWarning`), or raise ``ValueError``
        (the budget is spent either way).
    score_noise_multiplier : float or "auto", default="auto"
        Noise std of each validation and certification count; ``"auto"``: one such
        release alone is ``(epsilon / 5, delta / 5)``-DP.
    sensitive_values : None, list, list of lists or dict, default=None
        Public declaration of the groups (as for every estimator). Every run is
        given the search's domain (this one, or the groups of all rows passed to
        ``fit``), never the groups its own training part happens to hold: which
        groups land in a part depends on their private counts (:mod:`skfairdp._fit.search_run`).
    random_state : int, RandomState or None, default=None
    secure_mode : bool, default=False

    Attributes
    ----------
    best_estimator_ : FairCandidate or MajorityClass
        The selected model (fitted on the training part), or the majority class.
    best_params_ : dict
        Its family and knob (``{"family": "majority", "knob": None}`` for the
        majority class).
    best_score_ : float
        Its noisy validation accuracy.
    best_violation_upper_ : float
        The upper end of its validation violation interval.
    qualified_ : bool
        Whether that upper end was within ``max_violation``.
    majority_label_ : label
        The class the majority-class fallback predicts: the larger noisy label count of
        the training and validation parts (one Gaussian release before the runs).
    selection_basis_ : str
        Why the selected run won (:func:`selection_tier`): ``"qualified"`` (its
        validation upper end is within the bound), ``"self_bounded"`` (its candidate
        enforces at most ``SELF_BOUND_SHARE`` of the bound on its own training rows and
        the validation interval's lower end is within it), ``"point_within"`` (only the
        noisy point value is), ``"outside"``, or ``"majority"`` (the constant).
    certificate_ : Certificate
        Intervals for the selected model's violation and accuracy on new rows, from
        the certification part (:mod:`skfairdp.model_selection.certificate`).
    certification_frame_ : PrivateMetricFrame
        The certification release (any confusion-matrix metric by group, free).
    inner_epsilon_ : float
        Each run's fit budget (with ``delta_``) in the branch that ran.
    n_train_, n_validation_, n_certification_ : int
        The parts' sizes the split's coins drew (each row on its own coin).
    strategy_ : {"search", "self_bounded"}
        The space the runs drew from (``"self_bounded"``: the validation part could not
        resolve the bound, see ``strategy``).
    group_label_counts_ : ndarray of shape (n_groups, 2)
        The noisy ``(group x label)`` counts of the training and validation parts (one
        Gaussian release, sensitivity 1, noise ``score_noise_multiplier_``): the
        majority label and ``strategy="auto"``'s decision are read from them.
    score_noise_multiplier_ : float
    delta_ : float
    dp_event_ : dp_accounting.DpEvent
        ``ComposedDpEvent([RepeatAndSelectDpEvent(run), GaussianDpEvent(certificate)])``.
    privacy_spent_ : PrivacySpent
        At most ``(epsilon, delta)``.
    classes_ : ndarray
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skfairdp.model_selection import FairModelSearch
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1500, 3))
    >>> s = rng.integers(0, 2, size=1500)
    >>> y = (X[:, 0] + 0.5 * s + rng.normal(size=1500) > 0.5).astype(int)
    >>> search = FairModelSearch(
    ...     "demographic_parity", 0.1, epsilon=2.0, n_candidates_mean=2,
    ...     candidates=[{"family": ["dpfermi"], "knob": [4.0]}], random_state=0,
    ... ).fit(X, y, sensitive_features=s)
    >>> sorted(search.best_params_)
    ['family', 'knob']
    >>> search.privacy_spent_.epsilon <= 2.0
    True
    """

    __metadata_request__fit = {"sensitive_features": True}
    __metadata_request__predict = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "fairness": [StrOptions(set(NOTIONS))],
        "max_violation": [Interval(numbers.Real, 0, None, closed="neither")],
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "group_at_predict": ["boolean"],
        "candidates": [StrOptions({"auto"}), list],
        "n_candidates_mean": [Interval(numbers.Real, 1, None, closed="left")],
        "distribution": [StrOptions(set(DISTRIBUTIONS))],
        "shape": [Interval(numbers.Real, 0, None, closed="neither")],
        "validation_size": [
            Interval(numbers.Real, 0, 1, closed="neither"),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "certification_size": [
            Interval(numbers.Real, 0, 1, closed="neither"),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "confidence": [Interval(numbers.Real, 0, 1, closed="neither")],
        "strategy": [StrOptions(set(STRATEGIES))],
        "if_none_qualifies": [StrOptions({"warn", "raise"})],
        "score_noise_multiplier": [
            Interval(numbers.Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "sensitive_values": [None, "array-like", dict],
        "random_state": ["random_state"],
        "secure_mode": ["boolean"],
    }

    def __init__(
        self, fairness="demographic_parity", max_violation=0.05, *, epsilon=1.0, delta="auto",
        group_at_predict=False, candidates="auto", n_candidates_mean=3.0,
        distribution="truncated_negative_binomial", shape=0.5, validation_size=0.2,
        certification_size=0.2, confidence=0.95, strategy="auto", if_none_qualifies="warn",
        score_noise_multiplier="auto", sensitive_values=None, random_state=None,
        secure_mode=False,
    ):  # fmt: skip
        store_parameters(self, locals())

    # -- the plan -------------------------------------------------------------------
    def _accountant_options(self) -> dict:
        return dict(ACCOUNTANT_OPTIONS)

    def _spaces(self) -> list[dict]:
        if self.candidates == "auto":
            return default_space(self.max_violation, self.group_at_predict)
        spaces = check_space(self.candidates)
        for space in spaces:
            unknown = set(space) - {"family", "knob"}
            if unknown:
                raise ValueError(
                    f"candidates may set 'family' and 'knob' only, got {sorted(unknown)}"
                )
            for family in space.get("family", ["dpfermi"]):
                if family not in FAMILIES:
                    raise ValueError(
                        f"candidates: family must be one of {sorted(FAMILIES)}, got {family!r}"
                    )
                if FAMILIES[family] and not self.group_at_predict:
                    raise ValueError(
                        f"candidates: family {family!r} predicts with the group: set "
                        "group_at_predict=True"
                    )
        return spaces

    def _search_branch(self, fit_event, z: float) -> dp_accounting.DpEvent:
        run = compose([fit_event, dp_accounting.GaussianDpEvent(z)])
        shape = run_distribution_shape(self.distribution, self.shape)
        return dp_event.RepeatAndSelectDpEvent(run, float(self.n_candidates_mean), shape)

    @staticmethod
    def _releases(z: float) -> list:
        # the certificate, and the (group x label) counts released before the runs
        return [dp_accounting.GaussianDpEvent(z), dp_accounting.GaussianDpEvent(z)]

    def _event(self, fit_event, z: float) -> dp_accounting.DpEvent:
        return dp_accounting.ComposedDpEvent(
            [self._search_branch(fit_event, z), *self._releases(z)]
        )

    def _plan(self, spaces, n_train: int, delta: float):
        z = self.score_noise_multiplier
        z = float(auto_score_noise_multiplier(self.epsilon, delta) if z == "auto" else z)
        try:
            budget = calibrate_inner_budget(
                FairCandidate(fairness=self.fairness),
                planning_candidates(spaces),
                epsilon=float(self.epsilon),
                delta=delta,
                n_train=n_train,
                search_event=lambda fit_event: self._event(fit_event, z),
                combine=choice_cover,
            )
        except NoInnerBudget:
            raise ValueError(
                f"no inner budget fits epsilon={self.epsilon:g}, delta={delta:g} with "
                f"n_candidates_mean={self.n_candidates_mean:g}: raise epsilon, or lower "
                "n_candidates_mean"
            ) from None
        return z, budget

    # -- fit ------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None) -> FairModelSearch:
        """Search, select on the validation intervals' upper ends, certify.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Binary labels.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
            The groups (required).

        Returns
        -------
        self
        """
        spaces = self._spaces()
        X, y, groups, encoder = check_search_input(
            X, y, sensitive_features, self.fairness, sensitive_values=self.sensitive_values
        )
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError(
                f"FairModelSearch needs binary labels in y, got {len(self.classes_)} classes"
            )
        raw_groups = np.asarray(sensitive_features)
        n = len(y)
        # one random split, row by row (independent_split): the runs are planned on the
        # realised training part
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        sizes = {"validation_size": self.validation_size}
        sizes["certification_size"] = self.certification_size
        val_idx, cert_idx, train_idx = held_out_split(random, n, sizes, MIN_TRAIN_ROWS)
        n_cert, n_val = len(cert_idx), len(val_idx)
        self.n_train_, self.n_validation_, self.n_certification_ = len(train_idx), n_val, n_cert
        delta = resolve_delta(self.delta, n)
        z, budget = self._plan(spaces, len(train_idx), delta)
        self.inner_epsilon_, self.delta_, self.score_noise_multiplier_ = budget.epsilon, delta, z
        restricted = None
        if self.strategy == "auto":
            restricted = self_bounded_space(spaces, self.max_violation)

        def rows(idx):
            return _safe_indexing(X, idx), y[idx], groups[idx], _safe_indexing(raw_groups, idx)

        train, validation = rows(train_idx), rows(val_idx)
        seen = np.concatenate([val_idx, train_idx])  # the rows the runs may read
        counts = self._group_label_counts(y[seen], groups[seen], encoder.n_groups_, z, random)
        self.group_label_counts_ = counts
        self.majority_label_ = self.classes_[int(np.argmax(counts.sum(axis=0)))]
        self.strategy_ = "search"
        if restricted is not None and best_case_upper(
            counts, n_val / len(seen), self.fairness, noise_multiplier=z, delta=delta,
            confidence=self.confidence, encoder=encoder, seed=random.shareable_seed(),
            secure_mode=self.secure_mode,
        ) > self.max_violation:  # fmt: skip
            self.strategy_, spaces = "self_bounded", restricted
        best = None
        for _ in range(draw_n_runs(random, self.distribution, self.n_candidates_mean, self.shape)):
            params = draw_params(spaces, random)
            model, stats = self._run(params, train, validation, budget, delta, z, random, encoder)
            if best is None or stats["key"] > best[2]["key"]:
                best = (model, stats.get("params", params), stats)

        recorder = EventRecorder()
        self.dp_event_ = self._event(budget.fit_event, z)
        self.privacy_spent_ = rdp_spent(self.dp_event_, delta)
        if best is None:  # a Poisson K = 0: nothing ran, nothing to certify
            raise ValueError(
                "the draw of K gave 0 runs (distribution='poisson'): the search has no model; "
                "use another distribution or random_state"
            )
        model, params, stats = best
        show_selected(stats["warnings"])
        self.best_estimator_, self.best_params_ = model, params
        self.best_score_ = stats["score"]
        self.best_violation_upper_ = stats["upper"]
        self.qualified_ = stats["key"][0] == QUALIFIED
        self.selection_basis_ = (
            "majority" if params["family"] == "majority" else TIER_NAMES[stats["key"][0]]
        )
        self.n_features_in_ = getattr(model, "n_features_in_", None)
        if hasattr(model, "feature_names_in_"):
            self.feature_names_in_ = model.feature_names_in_
        X_c, y_c, g_c, raw_c = rows(cert_idx)
        self.certificate_, self.certification_frame_ = certify(
            model, X_c, y_c, g_c, raw_c, encoder=encoder, fairness=self.fairness,
            max_violation=self.max_violation, confidence=self.confidence,
            noise_multiplier=z, delta=delta, random=random, recorder=recorder,
            seed=random.shareable_seed(), secure_mode=self.secure_mode,
        )  # fmt: skip
        if params["family"] == "majority":
            warnings.warn(
                "no candidate was both within max_violation and more accurate than the "
                "majority class on the validation rows (noisy counts): the selected model "
                f"predicts {model.label_!r} for every row",
                NoQualifyingCandidateWarning,
                stacklevel=3,
            )
        elif not self.qualified_:
            basis = (
                f"it enforces {params['knob']:g} on its own training rows and the validation "
                "interval does not contradict the bound"
                if stats["key"][0] == SELF_BOUNDED
                else "(selection_tier)"
            )
            message = (
                f"no run's {self.fairness} interval (upper end at confidence "
                f"{self.confidence:g}) on the validation rows was within max_violation="
                f"{self.max_violation:g}; the selected run's upper end is {stats['upper']:.3f}, "
                f"{basis}. See certificate_ for what it meets on new rows."
            )
            if self.strategy_ == "self_bounded":
                message = (
                    f"the validation rows cannot show {self.fairness} <= "
                    f"{self.max_violation:g} for any model (their groups are too small for "
                    "the interval), so the runs drew only self-bounded candidates; the "
                    f"selected {params['family']} run: {basis}. See certificate_ for what it "
                    "meets on new rows."
                )
            if self.if_none_qualifies == "raise":
                raise ValueError(message)
            warnings.warn(message, NoQualifyingCandidateWarning, stacklevel=3)
        return self

    def _group_label_counts(self, y_seen, g_seen, n_groups: int, z: float, random):
        """The ``(group x label)`` counts of the training and validation parts, released
        once with noise ``z`` (one row is in one cell: sensitivity 1). Their label marginal
        gives the majority-class fallback its class (a run's own validation counts carry
        the noise of ``2 x n_groups`` cells on a fifth of the rows: too little to tell
        near-balanced labels apart); ``strategy="auto"`` reads the group sizes."""
        cell = np.asarray(g_seen) * 2 + np.searchsorted(self.classes_, y_seen)
        counts = np.bincount(cell, minlength=2 * n_groups).reshape(n_groups, 2)
        noisy, _ = noisy_count(torch.as_tensor(counts, dtype=torch.float64), z, random)
        return noisy.numpy()

    def _run(self, params, train, validation, budget, delta, z, random, encoder):
        """One run: a private fit on the training part, checked against the plan, then scored."""
        X_tr, y_tr, _, raw_tr = train
        candidate = FairCandidate(fairness=self.fairness, secure_mode=self.secure_mode)
        model = seed_run(configured(candidate, params, budget.epsilon, delta, encoder), random)
        with held_warnings() as caught:  # shown only if this run is selected
            model.fit(X_tr, y_tr, sensitive_features=raw_tr)
        run = EventRecorder()
        run.record(spent_event(model))
        if not dominates(budget.fit_event, run.build()):
            raise RuntimeError(
                f"a run with {params} recorded an event the search did not plan for "
                f"({run.build()}); its accounting would not hold"
            )
        X_v, y_v, g_v, raw_v = validation
        with held_warnings() as predicting:
            y_pred = np.asarray(model.predict(X_v, sensitive_features=raw_v))
        cells = confusion_cells(self.classes_, y_v, y_pred, g_v, encoder.n_groups_)
        noisy, _ = noisy_count(torch.as_tensor(cells, dtype=torch.float64), z, random, run)
        noisy = noisy.numpy()
        stats = noisy_statistics(noisy, self.fairness, "accuracy")
        frame = validation_frame(
            noisy, encoder, z, delta, random.shareable_seed(), self.secure_mode
        )
        interval = violation_interval(frame, self.fairness, self.confidence)
        upper = interval.upper
        key = selection_tier(
            stats, upper, self.max_violation, lower=interval.lower,
            bounded=self_bounded(params, self.max_violation),
        )  # fmt: skip
        labels = np.maximum(noisy, 0.0).sum(axis=(0, 2))  # the release's noisy label counts
        label = int(np.searchsorted(self.classes_, self.majority_label_))
        accuracy = float(labels[label] / max(labels.sum(), 1.0))
        # the majority class (violation 0) replaces a model outside the bound or less
        # accurate than it, and ranks with what it replaced (at least POINT_WITHIN)
        constant = (max(key[0], POINT_WITHIN), accuracy)
        if key[0] == OUTSIDE or accuracy > stats["score"]:
            fallback = MajorityClass(self.classes_, self.majority_label_, X_tr.shape[1])
            return fallback, {"score": constant[1], "upper": 0.0, "key": constant,
                              "params": {"family": "majority", "knob": None},
                              "warnings": []}  # fmt: skip
        return model, {"score": stats["score"], "upper": upper, "key": key,
                       "warnings": caught + predicting}  # fmt: skip

    # -- the selected model -----------------------------------------------------------
    def predict(self, X, sensitive_features=None) -> np.ndarray:
        """Predictions of the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sensitive_features : array-like, optional
            Required when the selected model predicts with the group
            (``group_at_predict=True`` and a DPThresholdOptimizer was selected).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, sensitive_features=sensitive_features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.allow_nan = False
        return tags
