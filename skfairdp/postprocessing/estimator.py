"""DPThresholdOptimizer: fairlearn's ThresholdOptimizer on one noisy histogram."""

from __future__ import annotations

import inspect
import math
from numbers import Integral, Real

import dp_accounting
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted, column_or_1d

from .._fit.constant_check import constant_label, warn_fallback
from .._fit.degenerate import degenerate_warnings_hidden, warn_if_thresholds_degenerate
from .._fit.parameters import COMMON_CONSTRAINTS, store_parameters
from .._fit.randomized import draw_classes, prediction_random
from .._fit.validation import check_sample_weight, check_y
from ..data.source import reject_source
from ..fairness.routing import routing_hint
from ..oracle import spawn_oracle
from ..privacy import (
    EventRecorder,
    PrivacySpent,
    RandomSource,
    calibrate_noise_multiplier,
    epsilon_spent,
    gaussian_release_event,
    resolve_delta,
)
from ..privacy.events import compose
from ..privacy.planning import planned_fit_event
from .curves import CONSTRAINTS, OBJECTIVES, check_options, optimize_thresholds
from .fallback import constant_rule, thresholds_check
from .groups import ThresholdGroupsMixin
from .histogram import bin_scores, exact_histogram, release_histogram

__all__ = ["DPThresholdOptimizer"]


class DPThresholdOptimizer(
    ThresholdGroupsMixin, MetaEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Group-specific randomised thresholds on a model's scores, chosen from one private histogram.

    **Needs each person's group at prediction time**: ``predict`` applies the
    threshold of the row's group, so ``sensitive_features`` must be known and
    may be used at decision time. Where using the protected attribute in the
    decision is not allowed (e.g. credit and lending in many jurisdictions,
    employment), do not use this estimator: the in-processing estimators
    (:class:`~skfairdp.DPFermiClassifier`, :class:`~skfairdp.RaCODPClassifier`,
    :class:`~skfairdp.CGOOReduction`) train one model that predicts without the
    group.

    fairlearn's ``ThresholdOptimizer`` (Hardt, Price and Srebro, 2016) made
    differentially private. The base estimator's scores (``predict_proba[:, 1]``
    or ``decision_function``) are clipped to a public ``score_range`` and put in
    ``n_bins`` public bins; the one release about the rows is a Gaussian-noised
    histogram of (group, true label, score bin) counts (weighted by the public,
    bounded ``sample_weight``). One row moves one cell by its weight: L2
    sensitivity 1, or ``max_sample_weight`` with weights. The noise is calibrated
    by the accountant for the budget left to the histogram. Every rate (selection
    rate, TPR, FPR at each bin threshold) comes from the noisy counts (clipped at
    0), and the thresholds are chosen from them exactly as fairlearn does (convex
    hull, grid search, interpolation between two thresholds per group).

    Parameters
    ----------
    estimator : estimator
        The base classifier whose scores are thresholded. With ``prefit=False``
        and a finite ``epsilon``, a private skfairdp estimator (it has an
        ``epsilon`` parameter and records ``dp_event_``).
    constraints : str, default="demographic_parity"
        fairlearn's names: ``"demographic_parity"`` (``"selection_rate_parity"``),
        ``"equalized_odds"``, ``"true_positive_rate_parity"`` (equal opportunity; also
        ``"equal_opportunity"``, DP-FERMI's name),
        ``"false_negative_rate_parity"``, ``"false_positive_rate_parity"``,
        ``"true_negative_rate_parity"``.
    objective : str, default="accuracy_score"
        ``"accuracy_score"`` or ``"balanced_accuracy_score"`` (any constraint);
        ``"selection_rate"``, ``"true_positive_rate"``, ``"true_negative_rate"``
        (not with equalized odds).
    grid_size : int, default=1000
        fairlearn's grid of constraint values in ``[0, 1]``.
    prefit : bool, default=False
        True: ``estimator`` is already fitted; the whole budget goes to the
        histogram and ``dp_event_`` is the histogram's only. The estimator's own
        cost is not included: compose both with
        ``skfairdp.privacy.spent([estimator, post])``. False: a clone is fitted
        inside the one budget (``estimator_share`` of ``epsilon``), and
        ``dp_event_`` composes its recorded event with the histogram's.
    predict_method : {"predict_proba", "decision_function"}, default="predict_proba"
        Where the scores come from.
    tol : float in [0, 1] or None, default=None
        fairlearn's relaxed constraint (``ThresholdOptimizer(tol=...)``): the groups'
        constraint rates on the released histogram may span up to ``tol`` (the largest
        pairwise gap, fairlearn's difference) instead of being equal; each group takes
        its most accurate point within the best window, as fairlearn chooses it.
        ``None`` (or 0): exact equality. State the bound you need rather than parity: on
        Adult at epsilon = 1 exact parity costs about 0.01 of error over
        ExponentiatedGradient at a bound of 0.02 (:doc:`/postprocessing`, "A
        tolerance"). Not with ``"equalized_odds"`` (an error, as in fairlearn).
        Post-processing of the release: no privacy cost. New rows add their sampling
        error to the gap.
    score_range : "auto" or (float, float), default="auto"
        Public range of the scores; ``"auto"``: ``(0, 1)`` for ``predict_proba``
        (required for ``decision_function``). Scores outside are clipped, not an
        error: declare a range that holds most scores.
    n_bins : "auto" or int, default="auto"
        Public equal-width bins of ``score_range``: the candidate thresholds. Every
        cell of the released histogram carries the same noise, so a small group's
        rates are noisier the more bins split its rows. ``"auto"``: 20 for
        selection-rate constraints (demographic parity), 10 for constraints on
        rates within a label (equalized odds, equal opportunity, ...), whose cells
        hold a group's rows of one label only. At epsilon=1 with a 5 % minority, 50
        bins left a test DP violation of 0.087 where 20 give 0.018; on full Adult,
        equalized odds 0.047 with 20 bins and 0.035 with 10, at the same error
        (5 seeds; :doc:`/postprocessing`). The value used is ``n_bins_``.
    epsilon : float, default=1.0
        Total budget of this fit (``np.inf``: exact counts, fairlearn's result
        up to the binning).
    delta : float or "auto", default="auto"
        Target delta (``"auto"``: ``0.1 / n`` rounded down).
    estimator_share : float in (0, 1), default=0.8
        With ``prefit=False``: the clone is fitted at ``epsilon * estimator_share``
        (same delta); the histogram's noise is then calibrated so that the
        composition of the clone's recorded event and the histogram spends at
        most ``epsilon``. On groups of a few hundred to ~1,500 training rows 0.5
        gives lower violations at epsilon = 1, but a weaker base at epsilon = 0.5 on
        German credit (above the majority class): :doc:`/postprocessing`, "The budget
        split, judged on the zoo".
    max_sample_weight : float, default=1.0
        Bound on ``sample_weight``: the histogram's sensitivity with weights.
    fallback_to_constant : bool, default=True
        With a finite ``epsilon`` and ``objective="accuracy_score"``: keep the
        thresholds only where their training error on the released histogram beats
        the best constant class's by half a standard deviation of the difference's
        noise (the rule of DP-FERMI's and RaCO-DP's checks); otherwise ``predict``
        returns that constant (with a warning), which meets every parity constraint
        exactly. The thresholds maximise accuracy on noisy counts, so where nothing
        beats the majority class the noise alone buys a few positives that err on
        new rows. Post-processing of the one release: no privacy cost. False, or
        ``epsilon=inf``: the thresholds as chosen (fairlearn's).
    sensitive_values : None, list, list of lists or dict, default=None
        A *public* declaration of the groups (as :class:`~skfairdp.fairness.GroupEncoder`
        reads it: one list of values, one list per attribute, or a dict by attribute
        name). Declared, every declared group (every combination, with several
        attributes) gets a row of the released histogram and a threshold, whether or not
        it has rows at fit, so which groups occur is not read from the rows (a group
        without rows is thresholded from noise alone, as OpenDP requires of explicit
        keys). ``None`` (fairlearn's behaviour): the groups are those present at fit,
        which the fit reads from the rows unnoised (doc/privacy.md).
    random_state : int, RandomState or None, default=None
        Seeds the noise, the clone's fit and ``predict``'s draws.
    secure_mode : bool, default=False
        Draw the histogram's noise (and the clone's) from the OS CSPRNG.

    Attributes
    ----------
    estimator_ : estimator
        The fitted base estimator.
    classes_ : ndarray of shape (2,)
        The two labels of ``y``, sorted; the second is the positive class, whose
        probability is the base estimator's ``predict_proba[:, 1]``.
    group_encoder_ : GroupEncoder
        The attributes' values seen at fit (fixed at fit; others are an error at predict).
    group_labels_ : ndarray of dtype object, shape (n_groups,)
        The rows of ``histogram_`` and ``thresholds_``: the declared groups with
        ``sensitive_values``; otherwise the groups present at fit (with several
        attributes only the combinations that occur; a combination absent at fit is
        an error at predict, as a value never seen).
    histogram_ : ndarray of shape (n_groups, 2, n_bins)
        The released noisy counts (before clipping at 0).
    thresholds_ : ThresholdRule
        Each group's two bin thresholds and their probabilities; after a fallback,
        the constant's rule (every group ignores its scores).
    constant_check_ : ConstantCheck or None
        ``fallback_to_constant``'s conclusion on the released histogram (the rule's and
        the best constant's noisy training errors, the margin); ``None`` when it does
        not run.
    fallback_class_ : label or None
        The constant class ``predict`` returns after a fallback; ``None`` otherwise.
    score_range_ : (float, float)
    n_bins_ : int
        The number of score bins used (``n_bins`` resolved).
    noise_multiplier_ : float
        Noise std over the sensitivity (0 at ``epsilon=inf``).
    sensitivity_ : float
        1 without ``sample_weight``, ``max_sample_weight`` with it.
    noise_std_ : float
        ``noise_multiplier_ * sensitivity_``, the std of each cell's noise.
    delta_ : float
    dp_event_ : dp_accounting.DpEvent
        What the fit released (``prefit=False``: the clone's event, then the histogram's).
    privacy_spent_ : PrivacySpent
        The accountant's ``(epsilon, delta)`` for ``dp_event_``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import DPSGDClassifier
    >>> from skfairdp.postprocessing import DPThresholdOptimizer
    >>> post = DPThresholdOptimizer(DPSGDClassifier(max_epochs=3), epsilon=1.0, random_state=0)
    >>> post.fit(X, y, sensitive_features=s)
    DPThresholdOptimizer(estimator=DPSGDClassifier(max_epochs=3), random_state=0)
    >>> post.predict(X[:5], sensitive_features=s[:5]).shape  # needs each row's group
    (5,)
    >>> round(post.privacy_spent_.epsilon, 2)  # the classifier's fit and the histogram
    1.0
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"]), None],
        "constraints": [StrOptions(set(CONSTRAINTS))],
        "objective": [StrOptions(set(OBJECTIVES))],
        "tol": [None, Interval(Real, 0, 1, closed="both")],
        "grid_size": [Interval(Integral, 1, None, closed="left")],
        "prefit": ["boolean"],
        "predict_method": [StrOptions({"predict_proba", "decision_function"})],
        "score_range": [StrOptions({"auto"}), tuple, list],
        "n_bins": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "estimator_share": [Interval(Real, 0, 1, closed="neither")],
        "fallback_to_constant": ["boolean"],
        "sensitive_values": [None, list, tuple, dict],
        **{k: COMMON_CONSTRAINTS[k] for k in
           ("epsilon", "delta", "max_sample_weight", "random_state", "secure_mode")},
    }  # fmt: skip
    # routers (Pipeline, searches) pass the groups without set_*_request
    __metadata_request__fit = {"sensitive_features": True, "sample_weight": True}
    __metadata_request__predict = {"sensitive_features": True}

    def __init__(
        self,
        estimator=None,
        *,
        constraints="demographic_parity",
        objective="accuracy_score",
        grid_size=1000,
        prefit=False,
        predict_method="predict_proba",
        tol=None,
        score_range="auto",
        n_bins="auto",
        epsilon=1.0,
        delta="auto",
        estimator_share=0.8,
        max_sample_weight=1.0,
        fallback_to_constant=True,
        sensitive_values=None,
        random_state=None,
        secure_mode=False,
    ):
        store_parameters(self, locals())

    # ------------------------------------------------------------------ checks
    def _private(self) -> bool:
        return not math.isinf(self.epsilon)

    def _check_params(self) -> None:
        if self.estimator is None:
            raise ValueError("estimator must be given: the classifier whose scores are thresholded")
        check_options(self.constraints, self.objective, self.tol)
        self._score_range()

    def _n_bins(self) -> int:
        if self.n_bins != "auto":
            return int(self.n_bins)
        return 20 if CONSTRAINTS[self.constraints] == "selection_rate" else 10

    def _score_range(self) -> tuple[float, float]:
        if isinstance(self.score_range, str):
            if self.predict_method == "decision_function":
                raise ValueError(
                    "score_range must be declared (low, high) with predict_method="
                    "'decision_function': the bins must not be read from the private scores"
                )
            return 0.0, 1.0
        try:
            low, high = (float(v) for v in self.score_range)
        except (TypeError, ValueError):
            low = high = math.nan
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(
                f"score_range must be finite (low, high), low < high; got {self.score_range!r}"
            )
        return low, high

    def _accountant_options(self) -> dict:
        # one Gaussian alone is priced exactly by PLD; composed with a fit, as the fits are
        return {"accountant": "pld" if self.prefit else "auto", "privacy_unit": "record"}

    def _inner(self, delta: float, random: RandomSource | None):
        """The clone to fit inside the budget, at ``epsilon * estimator_share``."""
        params = clone(self.estimator).get_params()
        if self._private() and "epsilon" not in params:
            raise ValueError(
                f"prefit=False with a finite epsilon needs a private estimator (with an epsilon "
                f"parameter); {type(self.estimator).__name__} would read the data without noise. "
                "Use a skfairdp estimator, epsilon=np.inf, or prefit=True with spent([est, post])."
            )
        inner = clone(self.estimator) if random is None else spawn_oracle(self.estimator, random)
        if "epsilon" in params:
            inner.set_params(
                epsilon=self.epsilon * self.estimator_share if self._private() else math.inf
            )
            if "delta" in params and self._private():
                inner.set_params(delta=delta)
        if getattr(inner, "privacy_unit", "record") != "record":
            raise ValueError("the estimator's privacy_unit must be 'record', as the histogram's")
        return inner

    def _multiplier(self, estimator_event, delta: float) -> float:
        """Smallest histogram multiplier: its composition with ``estimator_event`` meets epsilon."""

        def event(z):
            return compose([estimator_event, gaussian_release_event(z)])

        return calibrate_noise_multiplier(self.epsilon, delta, event, **self._accountant_options())

    def planned_event(self, n_samples: int) -> dp_accounting.DpEvent:
        """The event ``fit`` on ``n_samples`` rows records (independent of the data's values).

        Parameters
        ----------
        n_samples : int

        Returns
        -------
        dp_accounting.DpEvent
            ``GaussianDpEvent(z)`` (``prefit=True``), or the clone's planned event
            composed with it; ``NonPrivateDpEvent`` at ``epsilon=inf``.
        """
        self._validate_params()
        self._check_params()
        if not self._private():
            return dp_accounting.NonPrivateDpEvent()
        delta = resolve_delta(self.delta, n_samples)
        inner = dp_accounting.NoOpDpEvent()
        if not self.prefit:
            inner = planned_fit_event(self._inner(delta, None), n_samples)
        return compose([inner, gaussian_release_event(self._multiplier(inner, delta))])

    # --------------------------------------------------------------------- fit
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None, **kwargs):
        """Fit (or take) the base estimator, release the histogram, choose the thresholds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Whatever the base estimator takes.
        y : array-like of shape (n_samples,)
            Two classes; the second in sorted order is the positive one (the
            base estimator is fitted on them encoded as 0/1). A one-column
            DataFrame is read as its column, as by fairlearn.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Group membership (fairlearn's formats); at least two groups present.
            With several attributes the groups are the combinations present.
        sample_weight : array-like of shape (n_samples,), optional
            Public weights in ``[0, max_sample_weight]``; also passed to the base
            estimator's ``fit`` with ``prefit=False``.
        **kwargs
            Passed to the base estimator's ``fit`` (``prefit=False``), as by
            fairlearn's ``ThresholdOptimizer``; an error with ``prefit=True``,
            which fits nothing. Its ``dp_event_`` must still record the fit.

        Returns
        -------
        self
        """
        self._validate_params()
        self._check_params()
        if X is None:
            raise ValueError(
                f"X is None: {type(self).__name__}.fit needs the features the base estimator "
                "scores (one row per label in y)."
            )
        if kwargs and self.prefit:
            raise ValueError(
                f"fit got keyword argument(s) {sorted(kwargs)} for the base estimator's fit, "
                "but prefit=True fits nothing: drop them or use prefit=False."
            )
        if sensitive_features is None:
            raise ValueError(
                f"{type(self).__name__}.fit needs sensitive_features (one group per row). "
                + routing_hint()
            )
        y = self._check_y(X, y)
        n = y.shape[0]
        groups = self._fit_groups(sensitive_features, n)
        weights = check_sample_weight(
            sample_weight, n, epsilon=self.epsilon, max_sample_weight=self.max_sample_weight
        )
        self.delta_ = resolve_delta(self.delta, n) if self._private() else 0.0
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        recorder = EventRecorder()
        self.estimator_ = self._base_estimator(
            X, y, sensitive_features, sample_weight, random, kwargs
        )
        estimator_event = dp_accounting.NoOpDpEvent()
        if not self.prefit:
            estimator_event = getattr(
                self.estimator_, "dp_event_", dp_accounting.NonPrivateDpEvent()
            )
            recorder.record(estimator_event)
        self.score_range_ = self._score_range()
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
        self.n_bins_ = self._n_bins()
        bins = bin_scores(self._scores(X), self.score_range_, self.n_bins_)
        counts = exact_histogram(groups, y, bins, n_groups=len(self.group_labels_),
                                 n_bins=self.n_bins_, sample_weight=weights)  # fmt: skip
        self.sensitivity_ = 1.0 if weights is None else float(self.max_sample_weight)
        if self._private():
            self.noise_multiplier_ = self._multiplier(estimator_event, self.delta_)
            self.histogram_ = release_histogram(
                counts, random, noise_multiplier=self.noise_multiplier_,
                sensitivity=self.sensitivity_, recorder=recorder,
            )  # fmt: skip
        else:
            self.noise_multiplier_, self.histogram_ = 0.0, counts
            recorder.record(dp_accounting.NonPrivateDpEvent())
        self.noise_std_ = self.noise_multiplier_ * self.sensitivity_
        self.thresholds_ = optimize_thresholds(
            np.maximum(self.histogram_, 0.0), self.constraints, self.objective, self.grid_size,
            tol=self.tol,
        )  # fmt: skip
        self._check_constant(self.histogram_)
        self.dp_event_ = recorder.build()
        self.privacy_spent_ = (
            epsilon_spent(self.dp_event_, self.delta_, **self._accountant_options())
            if self._private() else PrivacySpent(math.inf, 0.0)
        )  # fmt: skip
        warn_if_thresholds_degenerate(self, self.thresholds_.positive_probability(groups, bins), y)
        return self

    def _check_constant(self, released: np.ndarray) -> None:
        """``fallback_to_constant``: the thresholds against a constant, on the release."""
        self.constant_check_ = self.fallback_class_ = None
        runs = self.fallback_to_constant and self.objective == "accuracy_score"
        if not (runs and self._private()):
            return
        check = thresholds_check(
            released, self.thresholds_, self.noise_std_, self.noise_multiplier_
        )
        self.constant_check_ = check
        if check.falls_back:
            self.thresholds_ = constant_rule(len(self.group_labels_), check.constant_class == 1)
            self.fallback_class_ = constant_label(self.classes_, check)
            warn_fallback(
                self, check, "the thresholds' training error", "the released histogram",
                "A larger epsilon, fewer n_bins or a base estimator that separates the "
                "classes keep the thresholds; fallback_to_constant=False returns them as "
                "chosen.", stacklevel=4,  # user -> fit -> _check_constant -> warn_fallback
            )  # fmt: skip

    def _check_y(self, X, y) -> np.ndarray:
        """``y`` as 0/1 (1: the second of the two sorted classes); sets ``classes_``."""
        reject_source(X, type(self).__name__)
        if (
            getattr(y, "ndim", 1) == 2
            and getattr(y, "shape", (0, 0))[1] == 1
            and hasattr(y, "iloc")
        ):
            y = y.iloc[:, 0]  # a one-column DataFrame, read as fairlearn does (no warning)
        y = check_y(self, y, _num_samples(X))
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError(
                "Only binary classification is supported: y must have exactly two classes (the "
                f"second in sorted order is the positive one); got {len(classes)} class(es): "
                f"{classes[:5].tolist()}"
            )
        self.classes_ = classes
        return (y == classes[1]).astype(np.int64)

    def _base_estimator(self, X, y, sensitive_features, sample_weight, random, fit_kwargs):
        if self.prefit:
            check_is_fitted(self.estimator)
            return self.estimator
        inner = self._inner(self.delta_, random)
        kwargs = dict(fit_kwargs)
        accepted = inspect.signature(inner.fit).parameters
        if "sensitive_features" in accepted:
            kwargs["sensitive_features"] = sensitive_features
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        with degenerate_warnings_hidden():  # the thresholds read its scores: fit() checks
            inner.fit(X, y, **kwargs)  # its own decisions (warn_if_thresholds_degenerate)
        if self._private() and getattr(inner, "dp_event_", None) is None:
            raise ValueError(
                f"the fitted {type(inner).__name__} records no dp_event_: its fit is not known "
                "to be private"
            )
        return inner

    def _scores(self, X) -> np.ndarray:
        if self.predict_method == "predict_proba":
            return np.asarray(self.estimator_.predict_proba(X))[:, 1]
        return column_or_1d(np.asarray(self.estimator_.decision_function(X)))

    # ----------------------------------------------------------------- predict
    def _pmf_predict(self, X, *, sensitive_features) -> np.ndarray:
        """Probability of each class (0, 1) for each row, as fairlearn's ``_pmf_predict``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sensitive_features : array-like
            The rows' groups, among those seen at fit.

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        check_is_fitted(self, "thresholds_")
        if sensitive_features is None:
            raise ValueError(
                f"{type(self).__name__} needs sensitive_features at prediction time: each row "
                "gets its group's threshold"
            )
        bins = bin_scores(self._scores(X), self.score_range_, self.n_bins_)
        groups = self._group_codes(sensitive_features, bins.shape[0])
        positive = self.thresholds_.positive_probability(groups, bins)
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X, *, sensitive_features=None, random_state=None) -> np.ndarray:
        """Each row's decision, drawn from its group's randomised threshold.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sensitive_features : array-like
            The rows' groups (required), among those seen at fit.
        random_state : int, RandomState or None, default=None
            Seeds the draws; None uses the estimator's ``random_state`` (in
            ``secure_mode``, the OS CSPRNG).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        proba = self._pmf_predict(X, sensitive_features=sensitive_features)
        return draw_classes(proba, self.classes_, prediction_random(self, random_state))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # a randomised classifier
        tags.classifier_tags.multi_class = False
        if self.estimator is not None:  # X goes to the base estimator as it is
            inner = get_tags(self.estimator)
            tags.input_tags.sparse = inner.input_tags.sparse
            tags.input_tags.allow_nan = inner.input_tags.allow_nan
        return tags
