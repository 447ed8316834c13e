"""CGOOReduction: private reductions for constrained group-objective optimisation.

The meta-estimator of Alabi's "The Cost of a Reductions Approach to Private Fair
Optimization", made sound (digest ``seed-002-cgoo.md`` §3): see
:class:`CGOOReduction` and ``doc/cgoo.md``. One column-generation loop serves
both modes; what differs (the rows' cells, the oracle's task, the released
statistics and their sensitivity) is in :class:`~.atoms.CellPositives`
(classification) and :class:`~.regression.GroupLosses` (regression, the paper's
subgroup-weights case study). Around it: :mod:`.inputs` (what a fit reads),
:mod:`.releases` (the recorded releases and their price), :mod:`.budget` (the
noise calibration), :mod:`.mixture` (prediction).
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import dp_accounting
import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils._tags import RegressorTags

from .._fit import schedules
from .._fit.degenerate import DegenerateModelWarning
from .._fit.parameters import store_parameters
from .._fit.schedules import cgoo_noise_margins
from ..oracle import executed_event, spawn_oracle
from ..privacy import EventRecorder, RandomSource, resolve_delta
from ..privacy.events import compose, gaussian_release_event
from .atoms import ConstantAtom
from .budget import REDUCTION_ACCOUNTANTS, ReductionNoise, calibrate_reduction, reduction_event
from .constraints import CONSTRAINTS, default_smoothing
from .exponential import exponential_mechanism, score_sensitivity, selection_event
from .frank_wolfe import (
    STEPS,
    PenalisedObjective,
    fully_corrective_weights,
    gradient_of_objective,
    restricted_master,
    step_size,
)
from .inputs import (
    check_budget_split,
    check_oracle,
    is_regression,
    max_iter,
    objective_and_constraint,
    oracle_template,
    predict_mode,
    validate_data,
)
from .mixture import MixturePrediction
from .objectives import OBJECTIVES
from .regression import (
    REGRESSION_CONSTRAINTS,
    REGRESSION_OBJECTIVES,
    GroupLossProblem,
    check_problem_monotone,
)
from .releases import pure_epsilon_spent, reduction_spent, release_cells, release_sums
from .small_cells import warn_small_cells

__all__ = ["CGOOReduction"]

#: Largest automatic penalty ``G`` (the theory's value grows like K / bound).
MAX_AUTO_PENALTY = 1000.0

#: ``predict_mode`` values: ``"auto"`` is ``"mean"`` for a regressor, ``"mixture"`` otherwise.
PREDICT_MODES = ("auto", "mean", "mixture")


class CGOOReduction(MixturePrediction, MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Private Frank–Wolfe reduction of a constrained group objective to weighted ERM.

    Minimises a convex objective ``f`` of the group statistics of a randomised
    classifier subject to a fairness constraint ``g <= difference_bound``, by
    Frank–Wolfe over mixtures of classifiers in the space of their per-(group,
    label) positive frequencies ``J``. Each iteration computes the gradient of the
    smoothed penalised objective ``h = f + G softplus(LSE(g) - bound)`` at the
    running *released* statistics, turns it into a weighted classification task
    (relabel and weight), calls a private weighted-ERM oracle once, releases the
    new model's ``J`` with Gaussian noise, and moves the mixture. The mixture
    weights are finally re-optimised on the released statistics
    (``fully_corrective``). Like fairlearn's ``ExponentiatedGradient``, the result
    is a randomised classifier; unlike it, every statistic that steers the fit is
    released with noise and accounted.

    **Regression** (Alabi's subgroup-weights case study, :doc:`/cgoo`): when the
    oracle is a regressor (``sklearn.base.is_regressor``, e.g.
    :class:`~skfairdp.DPSGDRegressor`), the statistics are the per-group sums of
    the atoms' squared residuals, each row's clipped at ``loss_bound``; the
    objective and constraint are functions of the group losses, non-decreasing
    in each (so the oracle's task is weighted least squares with one weight per
    group), and ``predict`` averages the atoms' predictions
    (``predict_mode="mean"``).

    Parameters
    ----------
    estimator : estimator, default=None
        The oracle. ``None``: :class:`~skfairdp.DPSGDClassifier` (DP-SGD logistic
        regression that clips each per-sample gradient before weighting it) with a
        schedule by the number of rows
        (:func:`~skfairdp._fit.schedules.cgoo_oracle_params`: ``lr=1,
        batch_size=1024, max_epochs=20`` from about 24,000 rows on, smaller
        batches and at least 600 steps below; ``max_sample_weight`` the
        reduction's when ``sample_weight`` is given). A
        private oracle follows the oracle contract (:mod:`skfairdp.oracle`):
        ``fit(X, y, sample_weight=...)``, parameters ``epsilon``, ``delta``,
        ``noise_multiplier``, ``max_sample_weight``, a method
        ``planned_event(n_samples, noise_multiplier=z)`` and, after fit,
        ``dp_event_``. Any scikit-learn classifier is accepted with
        ``epsilon=np.inf``. A regressor (e.g. :class:`~skfairdp.DPSGDRegressor`,
        or any scikit-learn regressor taking ``sample_weight`` with
        ``epsilon=np.inf``) selects the regression mode.
    objective : str or callable, default="auto"
        Classification: ``"error_rate"`` (``"auto"``), ``"balanced_error"``,
        ``"neg_g_mean"``, ``"neg_h_mean"``, ``"q_mean"``, ``"worst_group_error"``,
        or a torch callable ``f(positives, cells) -> scalar`` (convex).
        Regression: ``"mean_loss"`` (``"auto"``), ``"worst_group_loss"``, or a
        torch callable ``f(losses, groups) -> scalar``, convex and non-decreasing
        in every group loss.
    constraints : str or callable, default="auto"
        Classification: ``"demographic_parity"`` (``"auto"``),
        ``"equalized_odds"``, ``"true_positive_rate_parity"`` (alias
        ``"equal_opportunity"``), ``"bounded_group_loss"``, or a torch callable
        ``g(positives, cells) -> gaps`` (the violation is their max).
        Regression: ``"bounded_group_loss"`` (``"auto"``: every group's mean
        squared error at most ``difference_bound``) or a torch callable
        ``g(losses, groups) -> gaps``, each non-decreasing in every group loss.
    difference_bound : float, default=0.05
        Bound on the constraint's violation (the largest gap between groups' rates,
        or for ``"bounded_group_loss"`` the largest group loss; never called
        ``eps`` here: epsilon is the privacy budget).
    epsilon : float, default=1.0
        Privacy budget of the whole fit; ``np.inf`` for a non-private reduction.
    delta : "auto" or float, default="auto"
        ``"auto"``: ``0.1 / n`` rounded down.
    max_sample_weight : float, default=1.0
        Public bound on ``sample_weight``: every released statistic's sensitivity
        is scaled by it, and the oracle's ``max_sample_weight`` must be at least it
        (the oracle gets the task's weights times the rows').
    penalty : "auto" or float, default="auto"
        ``G``. ``"auto"``: ``(bound + L_f D) / bound`` (Corollary 4.2 with the
        error's Lipschitz constant 1 and the statistics' l1 diameter ``D``: 1 for
        classification, ``loss_bound`` for regression), at most 1000.
    smoothing : "auto" or float, default="auto"
        ``eta`` of the log-sum-exp max and of the smooth hinge. ``"auto"``:
        ``log(m) / eta = bound / 4`` for ``m`` gaps.
    max_iter : "auto" or int, default="auto"
        ``T``, the number of oracle calls. ``"auto"``: ``round((n epsilon)^(2/3) /
        100)`` within ``[3, 20]`` (:func:`~skfairdp._fit.schedules.cgoo_max_iter`;
        20 at ``epsilon=inf``, 10 on Adult, 3 on 750–3,750 rows): each call's share
        of the budget, and the noise of each released statistic, grow with ``T``.
    noise_margin : "auto" or float, default="auto"
        Pessimism of the restricted master problem, in standard deviations of the
        released statistics' noise (public): each oracle atom's objective and
        constraint values are raised by ``noise_margin * ||row|| * std``, so that
        noise cannot make an atom look feasible or cheap, and the mixture falls
        back to the free constant atoms when no oracle atom is better by more
        than its noise. ``"auto"``: 0.5 on the constraints' values and 2.0 on the
        objective's (an atom must beat the constants by about the largest noise
        among ``T`` atoms; on Adult that is 0.006 error, on 750 rows 0.1). ``0``
        trusts the noisy statistics (on small data the bound then fails:
        Communities and Crime, eps=1, DP bound 0.05, test violation 0.19); ``1.0``
        on the constraints holds bounds more tightly at the price of error with
        equalized odds on Adult (bound 0.02: error 0.202 instead of 0.169). A
        float sets both margins. The objective's margin also sets the stall test
        of a private fit: a new atom whose reduced cost is not below ``-margin *
        std * ||direction||`` counts as a stall, and the next task's multipliers
        are rescaled (issue 34; cps1988, DP bound 0.05: error 0.330 -> 0.291).
    step : {"fw", "uniform"}, default="fw"
        Frank–Wolfe step ``2 / (t + 2)``, or ``1 / (t + 1)`` (uniform mixture).
    fully_corrective : bool, default=True
        Re-optimise the mixture weights over all atoms on the released statistics
        (a linear program for linear objectives and constraints).
    budget_split : "auto" or tuple of 3 floats, default="auto"
        Shares of the cell counts, the statistics releases and the oracle fits;
        the oracles receive all that the two count releases leave. ``"auto"``:
        ``(0.05, s, 0.95 - s)`` with ``s = 0.05 T`` within ``[0.15, 0.35]``
        (:func:`~skfairdp._fit.schedules.cgoo_budget_split`): each atom's
        statistics have noise ``~ sqrt(T / s)``, and a small group's rate divides
        it by the group's share (the fixed ``(0.05, 0.15, 0.8)`` before issue 24;
        doc/cgoo.md, "Small minority groups").
    accountant : {"rdp", "pld", "advanced"}, default="rdp"
        ``"advanced"`` reproduces the paper's split (advanced composition, every
        mechanism ``epsilon / (2 sqrt(2k log(2/delta')))``); ``privacy_spent_``
        is then the RDP price of what ran.
    privacy_unit : {"record"}, default="record"
        Add or remove one row ``(x, s, y)``.
    method : {"frank_wolfe", "exponential"}, default="frank_wolfe"
        ``"exponential"``: the paper's Algorithm 1 (pure epsilon-DP), the
        exponential mechanism over ``candidates``.
    candidates : list of fitted classifiers, default=None
        The finite class of ``method="exponential"``; they must not have seen the
        private data (e.g. thresholds of a public score). Classification only.
    predict_mode : {"auto", "mean", "mixture"}, default="auto"
        ``"mixture"``: :meth:`predict` draws an atom per row with probabilities
        ``weights_`` (the randomised predictor, the only mode for classification).
        ``"mean"``: the weighted mean of the atoms' predictions (regression only:
        deterministic, and by convexity of the squared loss every group's loss is
        at most the mixture's expected loss). ``"auto"``: ``"mean"`` for a
        regressor oracle, ``"mixture"`` otherwise.
    loss_bound : float, default=1.0
        Regression: public bound on one row's squared residual in the released
        group losses (each is clipped to it; the releases' sensitivity). The
        default suits targets in ``[0, 1]`` with predictions in ``[0, 1]`` (the
        paper's setting; its worst case for ``||c||, ||x|| <= 1`` is 4) or
        standardised targets with residuals mostly within one standard
        deviation; larger values clip less and add proportionally more noise.
        ``np.inf`` (exact squared losses) only with ``epsilon=np.inf``.
    sensitive_values : array-like or dict, default=None
        Public declaration of the group domain (see :class:`~skfairdp.fairness.GroupEncoder`).
    random_state : int, RandomState or None, default=None
        Seeds the oracles' streams (each fit gets an independent child), the noise
        and the draws of :meth:`predict`.
    secure_mode : bool, default=False
        Draw every noise from the OS CSPRNG.

    Attributes
    ----------
    predictors_ : list of estimators
        The atoms with non-zero weight (``ConstantAtom`` for the free all-0/all-1
        classifiers).
    weights_ : ndarray of shape (n_predictors,)
    stats_ : ndarray of shape (n_predictors, n_cells)
        The *released* (noisy) positive frequency of each atom per cell; in
        regression, each atom's released (clipped) loss sum per group over the
        released row total.
    cell_frequencies_ : ndarray of shape (n_cells,)
        Released (noisy, floored) frequency of each (group, label) cell; of each
        group in regression.
    history_ : list of dict
        Per iteration, values of the running mixture computed from released
        statistics only: ``objective``, ``violation``, ``h``, ``gamma``.
    n_iter_ : int
        Frank–Wolfe iterations run (``max_iter`` resolved; 1 for ``method="exponential"``).
    n_oracle_calls_ : int
    oracle_noise_multiplier_ : float or None
    dp_event_ : DpEvent
        What the fit's :class:`~skfairdp.privacy.EventRecorder` recorded: the cell
        counts, then each oracle fit's ``dp_event_`` and its statistics release (an
        iteration a free constant atom answers: the planned ones, charged)
        (``method="exponential"``: the Laplace counts and the selection).
    privacy_spent_ : PrivacySpent
        The accountant's price of ``dp_event_`` (``method="exponential"``: its
        pure-DP ``(epsilon, 0)``): at most the target. An iteration a constant
        atom answers releases nothing but is charged its planned oracle fit and
        statistics release: whether it is free reads released values, so the
        realised releases alone would be an ex-post figure, not a guarantee.
    classes_ : ndarray
        Classification only.
    n_features_in_, group_encoder_

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import CGOOReduction, DPSGDClassifier
    >>> red = CGOOReduction(DPSGDClassifier(max_epochs=3), difference_bound=0.05,
    ...                     epsilon=1.0, random_state=0)
    >>> red.fit(X, y, sensitive_features=s).predict(X[:5]).shape
    (5,)
    >>> round(red.privacy_spent_.epsilon, 2)
    1.0
    """

    _parameter_constraints = {
        "estimator": [None, HasMethods(["fit", "predict"])],
        "objective": [
            StrOptions({"auto", *OBJECTIVES, *REGRESSION_OBJECTIVES}),
            callable,
        ],
        "constraints": [
            StrOptions({"auto", *CONSTRAINTS, *REGRESSION_CONSTRAINTS}),
            callable,
        ],
        "difference_bound": [Interval(Real, 0, None, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "delta": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
        "max_sample_weight": [Interval(Real, 0, None, closed="neither")],
        "penalty": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "smoothing": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "max_iter": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "noise_margin": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "step": [StrOptions(set(STEPS))],
        "fully_corrective": ["boolean"],
        "budget_split": [StrOptions({"auto"}), tuple, list],
        "accountant": [StrOptions(set(REDUCTION_ACCOUNTANTS))],
        "privacy_unit": [StrOptions({"record"})],
        "method": [StrOptions({"frank_wolfe", "exponential"})],
        "candidates": [None, list, tuple],
        "predict_mode": [StrOptions(set(PREDICT_MODES))],
        "loss_bound": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "sensitive_values": [None, "array-like", dict],
        "random_state": ["random_state"],
        "secure_mode": ["boolean"],
    }

    __metadata_request__fit = {"sensitive_features": True, "sample_weight": True}

    def __init__(
        self, estimator=None, objective="auto", constraints="auto", difference_bound=0.05, *,
        epsilon=1.0, delta="auto", max_sample_weight=1.0, penalty="auto", smoothing="auto",
        max_iter="auto", noise_margin="auto", step="fw", fully_corrective=True,
        budget_split="auto", accountant="rdp", privacy_unit="record",
        method="frank_wolfe", candidates=None, predict_mode="auto", loss_bound=1.0,
        sensitive_values=None, random_state=None, secure_mode=False,
    ):  # fmt: skip
        store_parameters(self, locals())

    # -- fit --------------------------------------------------------------------
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the randomised classifier (or, with a regressor oracle, the regressor).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Binary labels; real-valued targets in regression mode.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Group membership (required; not needed by ``predict``).
        sample_weight : array-like of shape (n_samples,), default=None
            Public, non-negative weights: each row's contribution to every released
            statistic, and its weight in every oracle task, is multiplied by its
            weight (a row of weight 0 counts as a removed row). With a finite
            ``epsilon`` every weight must be at most ``max_sample_weight``, which
            scales every sensitivity.

        Returns
        -------
        self
        """
        regression = is_regression(self)
        X, statistics = validate_data(self, X, y, sensitive_features, sample_weight, regression)
        predict_mode(self)  # a classification reduction with predict_mode="mean" fails early
        problem_functions = objective_and_constraint(self.objective, self.constraints, regression)
        private = not math.isinf(self.epsilon)
        delta = resolve_delta(self.delta, X.shape[0]) if private else 0.0
        split = check_budget_split(self.budget_split, max_iter(self, X.shape[0]))
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        recorder = EventRecorder()
        if not private:
            recorder.record(dp_accounting.NonPrivateDpEvent())  # exact statistics
        if self.method == "exponential":
            if regression:
                raise ValueError(
                    "method='exponential' selects among fitted classifiers; the regression "
                    "mode needs method='frank_wolfe'"
                )
            self._fit_exponential(X, statistics, *problem_functions, split, random, recorder)
        else:
            self._fit_frank_wolfe(
                X, statistics, *problem_functions, split, delta, random, recorder, regression
            )
        self.dp_event_ = recorder.build()
        self.privacy_spent_ = (
            pure_epsilon_spent(self.dp_event_)  # the exponential method is pure DP
            if self.method == "exponential"
            else reduction_spent(self.dp_event_, delta, self.accountant)
        )
        return self

    def _fit_frank_wolfe(
        self, X, statistics, objective, constraint, split, delta, random, recorder, regression
    ) -> None:
        """Cell counts, then ``T`` iterations of column generation, then the final weights."""
        n, K = X.shape[0], statistics.n_cells
        private = not math.isinf(self.epsilon)
        template = oracle_template(self, n, statistics.max_weight)
        check_oracle(template, private, statistics.max_weight)
        T = max_iter(self, n)
        noise = self._noise(template, n, delta, T, split) if private else None
        floor = 0.0
        if private:
            floor = statistics.max_weight * max(1.0, 3.0 * noise.cells)
            q, total = release_cells(
                statistics, random, recorder, floor, noise_multiplier=noise.cells
            )
        else:
            q, total = release_cells(statistics, random, recorder, 0.5)
        self.cell_frequencies_ = q
        warn_small_cells(
            q, total, statistics, self.epsilon, self.difference_bound, stacklevel=3, floor=floor
        )
        problem = self._problem(objective, constraint, q, K, regression=regression)
        if regression:
            # a non-monotone objective or constraint fails before any oracle fit where it
            # can be seen without data (the loop checks every direction it meets)
            box = statistics.diameter if math.isfinite(statistics.diameter) else 1.0
            check_problem_monotone(problem, [corner * box * q for corner in (0.0, 0.5, 1.0)])

        self.history_ = []
        self.oracle_noise_multiplier_ = None if noise is None else noise.oracle_noise_multiplier
        atoms, stats, alpha = self._column_generation(
            X, statistics, problem, template, noise, delta, random, recorder, total, q, T
        )
        stats_matrix = np.vstack(stats)
        if self.fully_corrective:
            alpha = fully_corrective_weights(stats_matrix, problem, alpha, *self._margin_stds())
        keep = alpha > 0
        self.predictors_ = [a for a, k in zip(atoms, keep) if k]
        self.weights_ = alpha[keep] / alpha[keep].sum()
        self.stats_ = stats_matrix[keep]
        self.n_oracle_calls_ = sum(1 for a in atoms if not isinstance(a, ConstantAtom))
        self.n_iter_ = T

    def _column_generation(
        self, X, statistics, problem, template, noise, delta, random, recorder, total, q, T
    ):
        """The ``T`` iterations (``max_iter`` resolved), shared by both modes.

        Records each executed release in ``recorder`` and appends the running
        mixture's values to ``history_``.

        Returns
        -------
        atoms : list
        stats : list of ndarray of shape (n_cells,)
            The atoms' released (or known) statistics.
        alpha : ndarray
            The Frank–Wolfe (or last restricted-master) weights.
        """
        private = noise is not None
        atoms, stats, alpha = statistics.free_atoms(q)
        # public std of each atom's released statistics (free atoms: known exactly)
        atom_std = noise.statistics * statistics.sensitivity / total if private else 0.0
        self._noise_std = [0.0] * len(atoms)
        running = alpha @ np.vstack(stats) if stats else np.zeros(statistics.n_cells)
        stalled, n_stalls = False, 0
        kinds = [None] * len(atoms)  # per atom: None (free), True / False (capped task or not)
        planned = None  # one oracle fit's planned event, charged to each free iteration
        for t in range(T):
            if self.fully_corrective and atoms:
                alpha, gradient = restricted_master(
                    np.vstack(stats), problem, alpha, *self._margin_stds()
                )
                running = alpha @ np.vstack(stats)
                if stalled:
                    # the last column did not improve the program (a surrogate oracle can
                    # return the same model for the same multipliers): price with the
                    # multipliers scaled by 1/2, 2, 1/4, 4, ... (another trade-off, as the
                    # changing multipliers of exponentiated gradient give)
                    n_stalls += 1
                    scale = 2.0 ** ((n_stalls + 1) // 2 * (-1) ** n_stalls)
                    objective_part = gradient_of_objective(problem, running)
                    gradient = objective_part + scale * (gradient - objective_part)
                else:
                    n_stalls = 0
            else:
                gradient = problem.gradient(running)
            free = statistics.free_response(gradient)
            if free is not None:
                atom, J = atoms[free], stats[free]  # a free atom: its statistics are known
                if private:
                    # charged as planned although nothing is released: whether an
                    # iteration is free reads released values, so what ran is an ex-post
                    # figure; the guarantee is the plan's (a filter at the planned event)
                    if planned is None:
                        planned = self._planned_oracle_event(template, X.shape[0], noise, delta)
                    recorder.record(planned)
                    recorder.record(gaussian_release_event(noise.statistics))
            else:
                # a private oracle's task weights may be capped (its noise is fixed by
                # the weight bound; cgoo_capped_task); an exact oracle gets the exact task
                kind = np.array([-1 if k is None else int(k) for k in kinds])
                capped = private and schedules.cgoo_capped_task(
                    int((kind >= 0).sum()),
                    float(np.asarray(alpha, dtype=float)[kind == 1].sum()),
                    float(np.asarray(alpha, dtype=float)[kind == 0].sum()),
                )
                targets, weights = statistics.task(gradient, q if capped else None)
                atom = self._fit_oracle(
                    template, X, targets, weights, noise, delta, random, recorder
                )
                exact = statistics.sums(atom, X)
                if private:
                    exact = release_sums(exact, statistics, noise.statistics, random, recorder)
                J = statistics.clip(exact / total, q)
            # reduced cost of the new column on the released statistics (post-processing);
            # a private column must beat the running mixture by more than its noise
            stalled = float(gradient @ (J - running)) >= -self._stall_slack(
                gradient, 0.0 if free is not None else atom_std
            )
            atoms.append(atom)
            stats.append(J)
            kinds.append(None if free is not None else bool(capped))
            self._noise_std.append(0.0 if free is not None else atom_std)
            gamma = step_size(t, self.step)
            alpha = np.append((1.0 - gamma) * alpha, gamma)
            running = (1.0 - gamma) * running + gamma * J
            self.history_.append({"iteration": t + 1, "gamma": gamma, **problem.value(running)})
        return atoms, stats, alpha

    def _stall_slack(self, gradient: np.ndarray, std: float) -> float:
        """How much a new column's reduced cost must fall below 0 for it not to be a stall.

        ``objective margin * std * ||gradient||``: the released statistics' noise
        moves the reduced cost ``gradient @ J`` by about ``std * ||gradient||`` (public
        values only). Without it a private oracle that returns the all-0 model again
        (cps1988, DP bound 0.05: a task that puts 1 on the small group's rows only)
        looks like an improving column by its noise alone, and the multipliers are
        never rescaled (issue 34; ``doc/cgoo.md``).
        """
        if std == 0.0 or not schedules.CGOO_NOISE_AWARE_STALL:
            return 0.0
        return cgoo_noise_margins(self.noise_margin)[1] * std * float(np.linalg.norm(gradient))

    def _margin_stds(self) -> tuple[np.ndarray, np.ndarray]:
        """Each atom's noise std times the margins (constraints, objective)."""
        std = np.asarray(self._noise_std)
        constraints, objective = cgoo_noise_margins(self.noise_margin)
        return constraints * std, objective * std

    def _problem(self, objective, constraint, q, K, *, regression=False) -> PenalisedObjective:
        n_gaps = int(
            constraint.gaps(torch.zeros(K, dtype=torch.float64), torch.as_tensor(q)).numel()
        )
        bound = float(self.difference_bound)
        eta = (
            default_smoothing(bound, max(n_gaps, 2))
            if self.smoothing == "auto"
            else float(self.smoothing)
        )
        G = (
            # Corollary 4.2 with the error's Lipschitz constant 1 (sup-norm gradient)
            # against the L1 diameter of the statistics' box (sum(q) = 1 for the
            # classification statistics, loss_bound for the group losses)
            min(MAX_AUTO_PENALTY, (bound + (self.loss_bound if regression else 1.0)) / bound)
            if self.penalty == "auto"
            else float(self.penalty)
        )
        kind = GroupLossProblem if regression else PenalisedObjective
        return kind(objective, constraint, q, bound, G, eta)

    def _noise(self, template, n_samples: int, delta: float, T: int, split) -> ReductionNoise:
        """The calibrated noise of a private fit on ``n_samples`` rows (public values only)."""

        def oracle_event(z: float) -> dp_accounting.DpEvent:
            return template.planned_event(n_samples, noise_multiplier=z)

        planned = None if self.accountant == "advanced" else oracle_event
        return calibrate_reduction(
            self.epsilon, delta, T, split, planned, accountant=self.accountant
        )

    def _oracle_budget(self, noise: ReductionNoise, delta: float) -> dict:
        """The budget parameters every oracle fit of a private reduction runs with."""
        if noise.oracle_budget is not None:  # the paper's split: each calibrates itself
            eps_call, delta_call = noise.oracle_budget
            return {"epsilon": eps_call, "delta": delta_call, "noise_multiplier": None}
        return {
            "epsilon": self.epsilon,
            "delta": delta,
            "noise_multiplier": noise.oracle_noise_multiplier,
        }

    def _fit_oracle(self, template, X, targets, weights, noise, delta, random, recorder):
        """Fit one oracle on ``(X, targets, sample_weight=weights)`` and record its event."""
        oracle = spawn_oracle(template, random)
        params = oracle.get_params(deep=False)
        if noise is not None:
            oracle.set_params(**self._oracle_budget(noise, delta))
        elif "epsilon" in params:
            # a non-private reduction fits non-private oracles (a noise multiplier
            # left on the template would be rejected at epsilon=inf)
            fixed = {"noise_multiplier": None} if "noise_multiplier" in params else {}
            oracle.set_params(epsilon=np.inf, **fixed)
        with warnings.catch_warnings():
            # a weighted relabelled task is not the user's task: the oracle's check
            # against the majority class of its targets says nothing useful here
            warnings.simplefilter("ignore", DegenerateModelWarning)
            oracle.fit(X, targets, sample_weight=weights)
        if noise is not None:
            recorder.record(executed_event(oracle))
        return oracle

    def _fit_exponential(
        self, X, statistics, objective, constraint, split, random, recorder
    ) -> None:
        """Algorithm 1: Laplace cell counts (a share of epsilon), then the exponential mechanism."""
        if not self.candidates:
            raise ValueError("method='exponential' needs candidates: a list of fitted classifiers")
        private = not math.isinf(self.epsilon)
        eps_cells = split[0] * self.epsilon
        if private:
            q, total = release_cells(
                statistics, random, recorder, statistics.max_weight, laplace_scale=1.0 / eps_cells
            )
        else:
            q, total = release_cells(statistics, random, recorder, 0.5)
        self.cell_frequencies_ = q
        problem = self._problem(objective, constraint, q, statistics.n_cells)
        candidates = list(self.candidates)
        stats = [statistics.clip(statistics.sums(c, X) / total, q) for c in candidates]
        scores = np.array([problem.value(J)["h"] for J in stats])
        if private:
            # one row moves one count by at most max_weight
            sensitivity = statistics.max_weight * score_sensitivity(problem, total)
            eps_select = self.epsilon - eps_cells
            index = exponential_mechanism(scores, sensitivity, eps_select, random, recorder)
        else:
            index = int(np.argmin(scores))
        self.predictors_ = [candidates[index]]
        self.weights_ = np.ones(1)
        self.stats_ = np.zeros((1, statistics.n_cells))  # the selection releases no statistic
        self.history_ = []
        self.n_oracle_calls_ = 0
        self.n_iter_ = 1
        self.oracle_noise_multiplier_ = None

    # -- planning ---------------------------------------------------------------
    def planned_event(self, n_samples: int) -> dp_accounting.DpEvent:
        """The event a fit on ``n_samples`` rows may execute, from the parameters alone.

        The cell counts, then ``max_iter`` times an oracle fit (its own
        ``planned_event``) and a statistics release, at the calibrated noise (what
        the budget is calibrated to). An iteration whose direction a free constant
        atom answers calls no oracle and releases nothing, so the executed
        ``dp_event_`` is this event with such iterations left out.
        ``method="exponential"``: the Laplace counts and the selection.

        Parameters
        ----------
        n_samples : int
            Rows of the training set.

        Returns
        -------
        dp_accounting.DpEvent
            ``NonPrivateDpEvent`` for a non-private reduction (``epsilon=inf``).
        """
        self._validate_params()
        n = int(n_samples)
        if n < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}")
        if math.isinf(self.epsilon):
            return dp_accounting.NonPrivateDpEvent()
        split = check_budget_split(self.budget_split, max_iter(self, n))
        if self.method == "exponential":
            eps_cells = split[0] * self.epsilon
            cells = dp_accounting.LaplaceDpEvent(1.0 / eps_cells)
            return compose([cells, selection_event(self.epsilon - eps_cells)])
        template = oracle_template(self, n)
        check_oracle(template, True)
        delta, T = resolve_delta(self.delta, n), max_iter(self, n)
        noise = self._noise(template, n, delta, T, split)
        oracle_event = self._planned_oracle_event(template, n, noise, delta)
        return reduction_event(noise.cells, noise.statistics, [oracle_event] * T)

    def _planned_oracle_event(self, template, n: int, noise, delta: float):
        """The event one oracle fit on ``n`` rows plans (what a free iteration is charged)."""
        if noise.oracle_budget is None:
            return template.planned_event(n, noise_multiplier=noise.oracle_noise_multiplier)
        oracle = clone(template).set_params(**self._oracle_budget(noise, delta))
        return oracle.planned_event(n)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = True
        if is_regression(self):
            tags.estimator_type = "regressor"
            tags.classifier_tags = None
            tags.regressor_tags = RegressorTags()
            tags.non_deterministic = self.predict_mode == "mixture" or bool(self.secure_mode)
        else:
            tags.non_deterministic = True
            tags.classifier_tags.multi_class = False
        return tags
