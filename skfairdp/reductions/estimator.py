"""CGOOReduction: private reductions for constrained group-objective optimisation.

The meta-estimator of Alabi's "The Cost of a Reductions Approach to Private Fair
Optimization", made sound (digest ``seed-002-cgoo.md`` §3): see
:class:`CGOOReduction` and ``doc/cgoo.md``.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import dp_accounting
import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._degenerate import DegenerateModelWarning
from .._validation import check_X, check_y, densify
from ..fairness import encode_sensitive_features
from ..oracle import executed_event, spawn_oracle
from ..privacy import RandomSource, epsilon_spent, noisy_histogram, resolve_delta
from ..privacy.accountant import PrivacySpent
from .atoms import ConstantAtom, cell_codes, positive_counts
from .budget import REDUCTION_ACCOUNTANTS, calibrate_reduction
from .constraints import CONSTRAINTS, default_smoothing, resolve_constraint
from .exponential import exponential_log_probabilities, gumbel_max_index, score_sensitivity
from .frank_wolfe import (
    STEPS,
    PenalisedObjective,
    fully_corrective_weights,
    gradient_of_objective,
    oracle_task,
    restricted_master,
    step_size,
)
from .objectives import OBJECTIVES, resolve_objective

__all__ = ["CGOOReduction", "SmallCellWarning"]

#: The default oracle: DP-SGD logistic regression with large batches (many oracle fits
#: share the budget, so each runs with a large noise multiplier; large batches keep
#: the noise of the averaged gradient small). Adult, eps=1: error 0.164 at EO 0.032.
DEFAULT_ORACLE_PARAMS = {"lr": 0.5, "batch_size": 1024, "max_epochs": 20}

#: Largest automatic penalty ``G`` (the theory's value grows like K / bound).
MAX_AUTO_PENALTY = 1000.0


class SmallCellWarning(UserWarning):
    """A (group, label) cell is smaller than the paper's lower bound for the budget."""


def _oracle_planned_event(oracle, n_samples: int):
    """``z -> the event one fit of ``oracle`` on ``n_samples`` rows executes at multiplier z``."""

    def planned(z: float) -> dp_accounting.DpEvent:
        return oracle.planned_event(n_samples, noise_multiplier=z)

    return planned


class CGOOReduction(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
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

    Parameters
    ----------
    estimator : estimator, default=None
        The oracle. ``None``: :class:`~skfairdp.DPSGDClassifier` (DP-SGD logistic
        regression that clips each per-sample gradient before weighting it) with
        ``lr=0.5, batch_size=1024, max_epochs=20``. A
        private oracle follows the oracle contract (:mod:`skfairdp.oracle`):
        ``fit(X, y, sample_weight=...)``, parameters ``epsilon``, ``delta``,
        ``noise_multiplier``, ``max_sample_weight``, a method
        ``planned_event(n_samples, noise_multiplier=z)`` and, after fit,
        ``dp_event_``. Any scikit-learn classifier is accepted with
        ``epsilon=np.inf``.
    objective : str or callable, default="error_rate"
        ``"error_rate"``, ``"balanced_error"``, ``"neg_g_mean"``, ``"neg_h_mean"``,
        ``"q_mean"``, ``"worst_group_error"``, or a torch callable
        ``f(positives, cells) -> scalar`` (convex).
    constraints : str or callable, default="demographic_parity"
        ``"demographic_parity"``, ``"equalized_odds"``,
        ``"true_positive_rate_parity"`` (alias ``"equal_opportunity"``),
        ``"bounded_group_loss"``, or a torch
        callable ``g(positives, cells) -> gaps`` (the violation is their max).
    difference_bound : float, default=0.05
        Bound on the constraint's violation (the largest gap between groups' rates;
        never called ``eps`` here: epsilon is the privacy budget).
    epsilon : float, default=1.0
        Privacy budget of the whole fit; ``np.inf`` for a non-private reduction.
    delta : "auto" or float, default="auto"
        ``"auto"``: ``0.1 / n`` rounded down.
    penalty : "auto" or float, default="auto"
        ``G``. ``"auto"``: ``(bound + L_f) / bound`` (Corollary 4.2 with the
        error's Lipschitz constant: ``1 + 1 / bound``), at most 1000.
    smoothing : "auto" or float, default="auto"
        ``eta`` of the log-sum-exp max and of the smooth hinge. ``"auto"``:
        ``log(m) / eta = bound / 4`` for ``m`` gaps.
    max_iter : int, default=20
        ``T``, the number of oracle calls.
    step : {"fw", "uniform"}, default="fw"
        Frank–Wolfe step ``2 / (t + 2)``, or ``1 / (t + 1)`` (uniform mixture).
    fully_corrective : bool, default=True
        Re-optimise the mixture weights over all atoms on the released statistics
        (a linear program for linear objectives and constraints).
    budget_split : tuple of 3 floats, default=(0.05, 0.15, 0.8)
        Shares of the cell counts, the statistics releases and the oracle fits;
        the oracles receive all that the two count releases leave.
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
        private data (e.g. thresholds of a public score).
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
        The *released* (noisy) positive frequency of each atom per cell.
    cell_frequencies_ : ndarray of shape (n_cells,)
        Released (noisy, floored) frequency of each (group, label) cell.
    history_ : list of dict
        Per iteration, values of the running mixture computed from released
        statistics only: ``objective``, ``violation``, ``h``, ``gamma``.
    n_iter_ : int
        Frank–Wolfe iterations run (``max_iter``; 1 for ``method="exponential"``).
    n_oracle_calls_ : int
    oracle_noise_multiplier_ : float or None
    dp_event_ : DpEvent
        Composition of the executed releases (cell counts, each oracle's recorded
        event, each statistics release).
    privacy_spent_ : PrivacySpent
    classes_, n_features_in_, group_encoder_
    """

    _parameter_constraints = {
        "estimator": [None, HasMethods(["fit", "predict"])],
        "objective": [StrOptions(set(OBJECTIVES)), callable],
        "constraints": [StrOptions(set(CONSTRAINTS)), callable],
        "difference_bound": [Interval(Real, 0, None, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "delta": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
        "penalty": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "smoothing": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "step": [StrOptions(set(STEPS))],
        "fully_corrective": ["boolean"],
        "budget_split": [tuple, list],
        "accountant": [StrOptions(set(REDUCTION_ACCOUNTANTS))],
        "privacy_unit": [StrOptions({"record"})],
        "method": [StrOptions({"frank_wolfe", "exponential"})],
        "candidates": [None, list, tuple],
        "sensitive_values": [None, "array-like", dict],
        "random_state": ["random_state"],
        "secure_mode": ["boolean"],
    }

    __metadata_request__fit = {"sensitive_features": True}

    def __init__(
        self,
        estimator=None,
        objective="error_rate",
        constraints="demographic_parity",
        difference_bound=0.05,
        *,
        epsilon=1.0,
        delta="auto",
        penalty="auto",
        smoothing="auto",
        max_iter=20,
        step="fw",
        fully_corrective=True,
        budget_split=(0.05, 0.15, 0.8),
        accountant="rdp",
        privacy_unit="record",
        method="frank_wolfe",
        candidates=None,
        sensitive_values=None,
        random_state=None,
        secure_mode=False,
    ):
        self.estimator = estimator
        self.objective = objective
        self.constraints = constraints
        self.difference_bound = difference_bound
        self.epsilon = epsilon
        self.delta = delta
        self.penalty = penalty
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.step = step
        self.fully_corrective = fully_corrective
        self.budget_split = budget_split
        self.accountant = accountant
        self.privacy_unit = privacy_unit
        self.method = method
        self.candidates = candidates
        self.sensitive_values = sensitive_values
        self.random_state = random_state
        self.secure_mode = secure_mode

    # -- validation -------------------------------------------------------------
    def _check_budget_split(self) -> tuple[float, float, float]:
        split = tuple(float(s) for s in self.budget_split)
        if len(split) != 3 or min(split) <= 0 or not math.isclose(sum(split), 1.0, abs_tol=1e-9):
            raise ValueError(
                f"budget_split must be 3 positive shares (cell counts, statistics, oracles) "
                f"summing to 1, got {self.budget_split!r}"
            )
        return split

    def _oracle_template(self):
        if self.estimator is not None:
            return self.estimator
        from ..logistic import DPSGDClassifier

        return DPSGDClassifier(**DEFAULT_ORACLE_PARAMS)

    def _check_oracle(self, oracle, private: bool) -> None:
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
        if params["max_sample_weight"] < 1:
            raise ValueError(
                f"the oracle's max_sample_weight={params['max_sample_weight']!r} must be >= 1: "
                "the reduction's weights are in [0, 1]"
            )

    def _validate(self, X, y, sensitive_features):
        self._validate_params()
        if sensitive_features is None:
            raise ValueError(
                "CGOOReduction.fit needs sensitive_features (the groups its constraint and "
                "objective are about)"
            )
        X = densify(check_X(self, X, reset=True, ensure_min_samples=2))
        y = check_y(self, y, X.shape[0])
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if len(self.classes_) != 2:
            raise ValueError(
                "Only binary classification is supported by CGOOReduction; y has "
                f"{len(self.classes_)} "
                f"classes ({list(self.classes_)[:5]!r})"
            )
        groups, self.group_encoder_ = encode_sensitive_features(
            sensitive_features, X.shape[0], sensitive_values=self.sensitive_values
        )
        if self.group_encoder_.n_groups_ < 2:
            raise ValueError(
                "sensitive_features has a single group; a group-fairness constraint needs "
                "at least 2"
            )
        y01 = encoder.transform(y).astype(np.int64)
        counts = np.bincount(cell_codes(groups, y01), minlength=2 * self.group_encoder_.n_groups_)
        if not counts.all():
            empty = int(np.flatnonzero(counts == 0)[0])
            group = self.group_encoder_.group_labels_[empty // 2]
            raise ValueError(
                f"sensitive_features: group {group!r} has no row with y == "
                f"{self.classes_[empty % 2]!r}; CGOOReduction needs rows in every (group, "
                "label) cell (its rates are conditional on them)"
            )
        return X, y01, groups

    # -- fit --------------------------------------------------------------------
    def fit(self, X, y, *, sensitive_features=None):
        """Fit the randomised classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Binary labels.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Group membership (required; not needed by ``predict``).

        Returns
        -------
        self
        """
        X, y01, groups = self._validate(X, y, sensitive_features)
        n = X.shape[0]
        K = 2 * self.group_encoder_.n_groups_
        cells = cell_codes(groups, y01)
        private = not math.isinf(self.epsilon)
        split = self._check_budget_split()
        delta = resolve_delta(self.delta, n) if private else 0.0
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        objective = resolve_objective(self.objective)
        constraint = resolve_constraint(self.constraints)
        if self.method == "exponential":
            return self._fit_exponential(X, cells, K, objective, constraint, random)

        template = self._oracle_template()
        self._check_oracle(template, private)
        T = int(self.max_iter)
        if private:
            oracle_event = (
                None if self.accountant == "advanced" else _oracle_planned_event(template, n)
            )
            noise = calibrate_reduction(
                self.epsilon, delta, T, split, oracle_event, accountant=self.accountant
            )
        else:
            noise = None
        events = []
        counts = np.bincount(cells, minlength=K).astype(np.float64)
        if private:
            noisy, event = noisy_histogram(
                torch.as_tensor(counts), random, noise_multiplier=noise.cells
            )
            events.append(event)
            counts = noisy.numpy()
            floor = max(1.0, 3.0 * noise.cells)
        else:
            floor = 0.5
        counts = np.maximum(counts, floor)
        total = float(counts.sum())
        q = counts / total
        self.cell_frequencies_ = q
        self._warn_small_cells(q, total, K)
        problem = self._problem(objective, constraint, q, K)

        atoms: list = [ConstantAtom(0), ConstantAtom(1)]
        stats = [np.zeros(K), q.copy()]
        alpha = np.array([1.0, 0.0])
        running = np.zeros(K)
        self.history_ = []
        self.oracle_noise_multiplier_ = None if noise is None else noise.oracle_noise_multiplier
        stalled, n_stalls = False, 0
        for t in range(T):
            if self.fully_corrective:
                alpha, gradient = restricted_master(np.vstack(stats), problem, alpha)
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
            targets, weights = oracle_task(gradient, cells)
            atom, event = self._best_response(
                template, X, gradient, targets, weights, noise, delta, random
            )
            if event is not None:
                predictions = atom.predict(X)
                exact = positive_counts(cells, predictions, K)
                if private:
                    noisy, stat_event = noisy_histogram(
                        torch.as_tensor(exact), random, noise_multiplier=noise.statistics
                    )
                    events += [event, stat_event]
                    exact = noisy.numpy()
                J = np.clip(exact / total, 0.0, q)
            else:
                J = stats[atom.value]  # a constant: its statistics are known
            # reduced cost of the new column on the released statistics (post-processing)
            stalled = float(gradient @ (J - running)) >= 0.0
            atoms.append(atom)
            stats.append(J)
            gamma = step_size(t, self.step)
            alpha = np.append((1.0 - gamma) * alpha, gamma)
            running = (1.0 - gamma) * running + gamma * J
            self.history_.append({"iteration": t + 1, "gamma": gamma, **problem.value(running)})

        stats_matrix = np.vstack(stats)
        if self.fully_corrective:
            alpha = fully_corrective_weights(stats_matrix, problem, alpha)
        keep = alpha > 0
        self.predictors_ = [a for a, k in zip(atoms, keep) if k]
        self.weights_ = alpha[keep] / alpha[keep].sum()
        self.stats_ = stats_matrix[keep]
        self.n_oracle_calls_ = sum(1 for a in atoms if not isinstance(a, ConstantAtom))
        self.n_iter_ = T
        self._store_privacy(events, private, delta)
        return self

    def _problem(self, objective, constraint, q, K) -> PenalisedObjective:
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
            # Corollary 4.2 with the error's Lipschitz constant 1 (sup-norm gradient
            # against the L1 diameter sum(q) = 1 of the statistics' box)
            min(MAX_AUTO_PENALTY, (bound + 1.0) / bound)
            if self.penalty == "auto"
            else float(self.penalty)
        )
        return PenalisedObjective(objective, constraint, q, bound, G, eta)

    def _best_response(self, template, X, gradient, targets, weights, noise, delta, random):
        """One oracle call, or the free constant atom when the direction has one sign; its event.

        The choice reads only the direction's signs over all cells (released values),
        never which rows exist: every cell has rows (checked in fit), so a direction
        of both signs always gives the oracle both classes.
        """
        if not (gradient < 0).any() or not (gradient > 0).any():
            return ConstantAtom(int((gradient < 0).any())), None
        oracle = spawn_oracle(template, random)
        params = oracle.get_params(deep=False)
        if noise is not None:
            if noise.oracle_budget is not None:
                eps_call, delta_call = noise.oracle_budget
                oracle.set_params(epsilon=eps_call, delta=delta_call, noise_multiplier=None)
            else:
                oracle.set_params(
                    epsilon=self.epsilon,
                    delta=delta,
                    noise_multiplier=noise.oracle_noise_multiplier,
                )
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
        return oracle, executed_event(oracle)

    def _warn_small_cells(self, q, total, K) -> None:
        if math.isinf(self.epsilon):
            return
        smallest = float(q.min()) * total
        bound = math.sqrt(K) / (self.epsilon * float(self.difference_bound))
        if smallest < bound:
            warnings.warn(
                f"the smallest (group, label) cell has about {smallest:.0f} rows (released "
                f"count), below the lower bound sqrt(K)/(epsilon*difference_bound) = "
                f"{bound:.0f} of Alabi's Theorem 6.2: no private algorithm can be expected to "
                "meet the constraint on it; raise epsilon or difference_bound.",
                SmallCellWarning,
                stacklevel=3,
            )

    def _store_privacy(self, events, private, delta) -> None:
        if not private:
            self.dp_event_ = dp_accounting.NonPrivateDpEvent()
            self.privacy_spent_ = PrivacySpent(math.inf, 0.0)
            return
        self.dp_event_ = dp_accounting.ComposedDpEvent(events)
        accountant = "rdp" if self.accountant == "advanced" else self.accountant
        self.privacy_spent_ = epsilon_spent(self.dp_event_, delta, accountant=accountant)

    def _fit_exponential(self, X, cells, K, objective, constraint, random):
        """Algorithm 1: Laplace cell counts (a share of epsilon), then the exponential mechanism."""
        if not self.candidates:
            raise ValueError("method='exponential' needs candidates: a list of fitted classifiers")
        counts = np.bincount(cells, minlength=K).astype(np.float64)
        private = not math.isinf(self.epsilon)
        share_cells = self._check_budget_split()[0]
        events = []
        if private:
            eps_cells = share_cells * self.epsilon
            noisy, event = noisy_histogram(
                torch.as_tensor(counts), random, laplace_scale=1.0 / eps_cells
            )
            events.append(event)
            counts = np.maximum(noisy.numpy(), 1.0)
        counts = np.maximum(counts, 0.5)
        total = float(counts.sum())
        q = counts / total
        self.cell_frequencies_ = q
        problem = self._problem(objective, constraint, q, K)
        candidates = list(self.candidates)
        stats = [np.clip(positive_counts(cells, c.predict(X), K) / total, 0, q) for c in candidates]
        scores = np.array([problem.value(J)["h"] for J in stats])
        if private:
            eps_select = self.epsilon - eps_cells
            sensitivity = score_sensitivity(problem, total)
            log_p = exponential_log_probabilities(scores, sensitivity, eps_select)
            index = gumbel_max_index(log_p, random.uniform(len(scores)))
            # dp-accounting has no pure-DP event: the exponential mechanism is
            # eps-bounded-range, hence (eps^2 / 8)-zCDP (Cesar & Rogers 2021), which
            # the RDP accountant composes; privacy_spent_ states the pure-DP guarantee
            events.append(dp_accounting.ZCDpEvent(eps_select**2 / 8.0))
            self.dp_event_ = dp_accounting.ComposedDpEvent(events)
            self.privacy_spent_ = PrivacySpent(eps_cells + eps_select, 0.0)
        else:
            index = int(np.argmin(scores))
            self.dp_event_ = dp_accounting.NonPrivateDpEvent()
            self.privacy_spent_ = PrivacySpent(math.inf, 0.0)
        self.predictors_ = [candidates[index]]
        self.weights_ = np.ones(1)
        self.stats_ = np.zeros((1, K))  # the selection releases no statistic
        self.history_ = []
        self.n_oracle_calls_ = 0
        self.n_iter_ = 1
        self.oracle_noise_multiplier_ = None
        return self

    # -- prediction -------------------------------------------------------------
    def _positive_probability(self, X) -> np.ndarray:
        check_is_fitted(self, "predictors_")
        X = densify(check_X(self, X, reset=False))
        p = np.zeros(X.shape[0])
        for weight, atom in zip(self.weights_, self.predictors_):
            p += weight * (np.asarray(atom.predict(X)) == 1)
        return np.clip(p, 0.0, 1.0)

    def predict_proba(self, X) -> np.ndarray:
        """Probability that the randomised classifier predicts each class (mixture of atoms)."""
        p = self._positive_probability(X)
        return np.column_stack([1.0 - p, p])

    def predict(self, X, *, random_state=None) -> np.ndarray:
        """Draw each row's class from :meth:`predict_proba` (the randomised classifier).

        ``random_state=None`` uses the estimator's ``random_state`` (so a seeded
        fit predicts reproducibly); thresholding ``predict_proba`` at 1/2 instead
        voids the fairness guarantee, which holds for the randomised predictions.
        """
        p = self._positive_probability(X)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        draws = rng.uniform(size=p.shape[0]) < p
        return self.classes_[draws.astype(np.int64)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags
