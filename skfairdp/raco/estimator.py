"""RaCODPClassifier: RaCO-DP (Yaghini, Cebere, Menart, Bellet & Papernot, 2025).

Private rate-constrained learning: min over theta of the loss subject to rate
constraints ``Gamma_j(theta) <= gamma_j`` (fairness or otherwise, see
:mod:`skfairdp.fairness.rates`), by noisy simultaneous gradient descent-ascent
on the Lagrangian. Each step releases one noisy histogram of the model's
predictions per part of the constraints' partition, from which the rates, the
constraint values and the per-part weights of the per-sample objective
``loss_i + B_exp * <W[q(i)], sigma_tau(h_i)>`` follow; the multipliers take a
projected ascent step on the released constraint values
(:mod:`skfairdp.raco.problem`). The model returned is made from the iterates
(:mod:`skfairdp.raco.solutions`); the two releases per step are accounted jointly
(:mod:`skfairdp.raco.accounting`).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._fit.base import NON_NEGATIVE, POSITIVE, PrivateClassifierBase, parameter_constraints
from .._fit.randomized import draw_classes, prediction_random
from .._fit.schedules import RACO, raco_tolerance_margin
from ..fairness.rates import (
    CONSTRAINT_NAMES,
    compile_rate_constraints,
    resolve_constraints,
)
from ..fairness.routing import routing_hint
from ..privacy.collective import from_first_rank
from .accounting import RacoAccounting
from .enforcement import (
    check_tolerance,
    enforce_noise_multiplier,
    mixing_reason,
    row_uniforms,
)
from .linear_step import linear_raco_step
from .problem import RacoProblem, pairwise_dual_walk
from .solutions import SOLUTIONS, TAIL_FRACTION, iterate_track, mixture_proba, store_solution

__all__ = ["RaCODPClassifier"]

# enforce_tolerance warns when it gives the constant class to at least this share of rows
MIXING_WARNING = 0.1


class RaCODPClassifier(RacoAccounting, PrivateClassifierBase):
    """Differentially private rate-constrained classifier by RaCO-DP.

    Minimises cross-entropy subject to rate constraints (demographic parity,
    equalized odds, false negative rate bounds, or custom ones) with noisy
    stochastic gradient descent-ascent on the Lagrangian; the constraint rates
    come from one noisy histogram of (hard, by default) predictions per step (Yaghini, Cebere,
    Menart, Bellet & Papernot, "Private Rate-Constrained Optimization with
    Applications to Fair Learning", 2025). Privacy unit: add or remove one row
    ``(x, s, y)``.

    Parameters
    ----------
    constraints : str, constraint object, or list of them, default="demographic_parity"
        Names ``"demographic_parity"``, ``"equalized_odds"``, ``"equal_opportunity"``,
        ``"false_negative_rate"`` (slack ``tolerance``), objects from
        :mod:`skfairdp.fairness.rates` (``DemographicParity(0.05)``,
        ``FalseNegativeRate(0.3)``, ``RateConstraint(...)``), or a list combining
        them; the smallest common partition of the rows is built from them.
        The group-parity names bound **every pair of groups**: with
        ``tolerance=gamma``, fairlearn's ``demographic_parity_difference`` /
        ``equalized_odds_difference`` (the largest pairwise gap) is at most
        ``gamma``, for any number of groups. ``"demographic_parity_vs_rest"``,
        ``"equalized_odds_vs_rest"`` and ``"equal_opportunity_vs_rest"`` bound each
        group against the rows of all other groups instead (before issue 34 the
        default; with three or more groups its largest pairwise gap can reach about
        ``2 gamma``). With two groups both forms are the same constraints.
    tolerance : float, default=0.05
        Slack ``gamma`` of constraints given by name.
    tolerance_margin : "auto" or float, default="auto"
        Training tightens every bound ``gamma_j`` by ``min(gamma_j / 2, z
        sigma_j)``, ``sigma_j = sqrt(sum_m a_jm^2 / (4 n_m))`` the largest standard
        deviation of the sampling error of the constraint's value on ``n_m``
        training rows per set (``a_jm`` its coefficients): a model that meets
        ``gamma`` on the training rows of a small group meets it on new rows only up
        to that error. ``n_m`` comes from the released (noisy) counts of the step
        histograms, never the exact ones. ``z``: this float, or
        ``RACO_TOLERANCE_MARGIN`` (1.0) for ``"auto"``; ``0`` trains on ``gamma``
        itself (the behaviour before issue 24). Demographic parity on Adult (groups
        of 11,000 and 23,000 training rows): 0.006; on 1,500 minority rows: 0.013.
        See :doc:`/raco`.
    enforce_tolerance : bool, default=True
        After training, check the returned model's constraints on the training rows
        with one noisy release (``ENFORCE_SHARE`` = 30 % of the budget's zCDP rho,
        accounted; exact and free when ``epsilon=inf``) and, where an upper
        confidence bound (``ENFORCE_Z`` = 0.5 sd above the noisy value) exceeds a
        bound, mix the model with a constant predictor: ``predict`` returns the
        constant class on the smallest share ``p`` of the rows (chosen by a salted
        hash of each row's features, so deterministic) that brings the largest gap
        (fairlearn's difference) within its tolerance in expectation over those
        rows' choice, with the class whose mixture errs least. The tolerance
        then holds on the training rows whatever the run did: on a table whose
        smallest group has a few dozen rows at ``epsilon = 1`` the run alone cannot
        meet it, and the model moves toward the constant, with a warning (issue 34).
        ``False``: the model of the run, as before. See
        :mod:`skfairdp.raco.enforcement`.
    epsilon : float, default=1.0
        Target epsilon; ``np.inf`` trains without noise or clipping (shuffled
        batches, exact histogram: plain SGDA) and reports ``(inf, 0.0)``.
    delta : "auto" or float, default="auto"
        ``"auto"`` is ``0.1 / n`` rounded down to one digit.
    temperature : float, default=1.0
        ``tau`` of the tempered softmax ``sigma_tau(z) = softmax(tau z)`` used for
        the soft rates (the paper's printed ``exp(-tau z)`` is a sign typo).
    dual_rates : {"hard", "soft"}, default="hard"
        What the dual player sees. ``"hard"``: the rates of the model's hard
        predictions (argmax), from a noisy histogram of one-hot rows (the
        proxy-Lagrangian of Cotter, Jiang & Sridharan, 2019): the multipliers rise
        until the predictions users are judged on meet the constraints. ``"soft"``:
        the rates of ``sigma_tau`` (the paper's), which a model can meet with
        scores bunched at the threshold while its hard predictions do not. The
        model's step uses the smooth surrogate either way; same privacy cost (one
        histogram of sensitivity 1 per step).
    solution : {"average", "mixture", "last", "best"}, default="average"
        The model returned. ``"average"``: the running (polynomial-decay) average
        of the parameters, which averages out most of the gradient noise (one
        deterministic model). ``"mixture"``: the randomised classifier over
        ``N_ITERATES`` iterates evenly spaced in the last half of the run, the
        solution the proxy-Lagrangian guarantees (the average of the iterates'
        hard rates is what the multipliers bound); ``predict`` draws each row's
        class from ``predict_proba``, as fairlearn's ``ExponentiatedGradient``.
        ``"last"``: the last iterate (the paper's). ``"best"``: among
        ``N_CANDIDATES`` iterates and the average, the one with the smallest
        error whose constraints hold, by one noisy evaluation on the training set
        that costs ``SELECTION_SHARE`` of the budget (accounted). All but
        ``"best"`` are post-processing of the training run: free. See :doc:`/raco`.
    max_grad_norm : "auto" or float, default="auto"
        Clipping norm ``C`` of the per-sample gradient of
        ``loss_i + B_exp <W[q(i)], sigma_tau(h_i)>``. A constraint acts through
        these clipped gradients, so ``C`` must leave room for the constraint term
        above the loss gradient (clipping bias: with ``C = 1`` a false-negative-rate
        bound of 0.2 on Adult stays out of reach), while the noise grows with ``C``.
        ``"auto"``: ``n * epsilon * 6e-4`` between 1 and 10
        (``raco_max_grad_norm`` in ``_fit/schedules.py``); see :doc:`/raco`.
    max_sample_weight : float, default=1.0
        Public bound on ``sample_weight``, as in :class:`~skfairdp.DPFermiClassifier`;
        it scales the histogram's sensitivity too (rates are weighted).
    histogram_noise : {"gaussian", "laplace"}, default="gaussian"
        Noise on the histogram. Gaussian: the gradient sum and the histogram of
        a step form one Gaussian mechanism with multiplier
        ``(z_grad^-2 + z_hist^-2)^-1/2``, accounted exactly. Laplace (the paper's
        choice): the two releases are accounted jointly on their shared batch by
        a PLD (:mod:`skfairdp.privacy.joint`).
    histogram_noise_multiplier : "auto" or float, default="auto"
        Histogram noise over its sensitivity (1): Gaussian std or Laplace scale
        per cell. ``"auto"`` is ``2 * noise_multiplier``.
    noise_multiplier : None or float, default=None
        ``None`` calibrates the gradient noise to ``epsilon`` for
        ``max_epochs`` epochs. A float fixes it (the paper's protocol) and trains
        for the largest number of steps within ``epsilon``, at most
        ``max_epochs`` epochs.
    calibration : {"accountant", "paper"}, default="accountant"
        ``"accountant"``: noise (or steps) such that the executed event meets
        ``(epsilon, delta)`` by the sound accountant. ``"paper"``: the authors'
        accounting (each release Poisson-amplified separately, then composed;
        PLD), for reproduction; ``privacy_spent_`` still reports the sound value,
        which is larger, and a warning says so.
    accountant : {"auto", "rdp", "pld"}, default="auto"
        For Gaussian histograms: RDP (``"auto"``) or PLD. Laplace histograms are
        always accounted by the joint PLD.
    lr : float, default=0.1
        Learning rate of the model optimizer.
    lr_dual : "auto" or float, default="auto"
        Step size of lambda's projected ascent on ``Gamma_hat - gamma``.
        ``"auto"``: per constraint, ``DUAL_WALK / (sigma_j sqrt(T))``, ``sigma_j``
        the standard deviation of one step's estimate of its value (from the
        histogram's noise and the released set sizes) and ``T`` the planned steps
        (at most ``LR_DUAL_MAX``): the noise each multiplier accumulates over the
        run is the same small amount, so that a constraint on small groups, whose
        estimate is mostly noise, does not drive the model with noise (the
        iterates would swing from one side of the constraint to the other).
        With pairwise constraints on ``G > 2`` groups ``DUAL_WALK`` is divided by
        ``sqrt(G - 1)`` (``pairwise_dual_walk``: a group's rate is in ``G - 1`` times
        as many constraints).
    dual_bound : None or float, default=None
        Upper bound on each lambda (the theory's compact dual set).
    batch_size : "auto" or int, default="auto"
        Expected (Poisson) batch size ``B_exp``. ``"auto"``: ``n / 64`` between 32
        and 512 when private, ``n / 8`` between 128 and 512 when not
        (``raco_batch_size`` in ``_fit/schedules.py``).
    max_epochs : "auto" or int, default="auto"
        Number of expected passes. ``"auto"``: 30, or more so that the run takes
        at least 2,000 steps (small data; ``raco_max_epochs`` in ``_fit/schedules.py``).
    module, hidden_layer_sizes, optimizer, sensitive_values, callbacks,
    random_state, secure_mode, device, n_jobs,
    record_private_diagnostics, verbose, **kwargs
        As in :class:`~skfairdp.DPFermiClassifier`.

    Attributes
    ----------
    classes_ : ndarray
    module_ : torch.nn.Module
    group_encoder_ : GroupEncoder or None
    rate_program_ : skfairdp.fairness.rates.RateProgram
        Compiled constraints: global partition, sets, coefficients, bounds.
    constraint_names_ : list of str
    lambda_ : ndarray of shape (n_constraints,)
        Final dual variables.
    tolerance_margins_ : ndarray of shape (n_constraints,)
        The last step's tightening of each bound (``tolerance_margin``; zeros
        when it is 0).
    privacy_spent_ : PrivacySpent
        ``(epsilon, delta)`` of ``dp_event_`` by the sound accountant.
    paper_epsilon_ : float
        Epsilon of the same run by the authors' separate composition (for
        comparison; not a guarantee).
    dp_event_ : dp_accounting.DpEvent
    noise_multiplier_ : float
        Gradient noise std over ``max_grad_norm``.
    histogram_noise_multiplier_ : float
        Histogram Gaussian std or Laplace scale.
    effective_noise_multiplier_ : float
        Joint Gaussian multiplier of a step (Gaussian histograms; ``nan`` for Laplace
        histograms, ``inf`` for non-private fits).
    n_steps_ : int
    batch_size_, max_epochs_ : int
        The batch size and number of epochs the fit used (``"auto"`` resolved).
    max_grad_norm_ : float
        The clipping norm the fit used (``"auto"`` resolved).
    tolerance_check_ : ToleranceCheck or None
        ``enforce_tolerance=True``: the check's noisy constraint values, their upper
        bounds, the model's noisy training error, and the mix chosen
        (:class:`skfairdp.raco.enforcement.ToleranceCheck`); ``None`` otherwise.
    tolerance_mixing_ : float
        ``p``, the share of rows ``predict`` gives the constant class (0: the model
        alone).
    mixing_class_ : object or None
        The constant's class (a label from ``classes_``), ``None`` when nothing is mixed.
    mixing_salt_ : int or None
        The salt of the row hash that picks the constant's rows, drawn from the fit's
        random source (the OS CSPRNG under ``secure_mode``); ``None`` without the check.
    dual_steps_ : ndarray of shape (n_constraints,) or None
        The last per-constraint dual step sizes of ``lr_dual="auto"``.
    solution_ : str
        The ``solution`` the fitted model is.
    iterates_ : ndarray of shape (n_iterates, n_params) or None
        ``solution="mixture"``: the parameters of the mixture's iterates.
    iterate_weights_ : ndarray of shape (n_iterates,) or None
        ``solution="mixture"``: their weights (uniform).
    selected_iterate_ : int
        ``solution="best"``: the index of the chosen candidate (the last one is the
        average); ``selection_statistics_`` holds the candidates' noisy training
        error and largest constraint violation.
    history_ : skorch.history.History
        Per epoch: ``loss`` (raw batches, NOT private), ``constraint_violation``
        (mean over the epoch's steps of ``max_j Gamma_hat_j - gamma_j``, from the
        released histograms: private), ``lambda_max``, ``epsilon``, ``steps``, ``dur``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> s = rng.integers(0, 2, size=2000)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=2000) > 0.5).astype(int)
    >>> from skfairdp import RaCODPClassifier
    >>> clf = RaCODPClassifier("demographic_parity", tolerance=0.05, epsilon=1.0,
    ...                        max_epochs=3, random_state=0)
    >>> clf.fit(X, y, sensitive_features=s).predict(X[:5]).shape
    (5,)
    >>> round(clf.privacy_spent_.epsilon, 2)
    1.0
    >>> clf.tolerance_mixing_  # the check confirmed the tolerance: nothing mixed in
    0.0
    """

    _parameter_constraints = parameter_constraints(
        "calibration",
        "accountant",
        "sensitive_values",
        own={
            "constraints": [StrOptions(set(CONSTRAINT_NAMES)), list, tuple, HasMethods(["expand"])],
            "tolerance": [NON_NEGATIVE],
            "tolerance_margin": [StrOptions({"auto"}), NON_NEGATIVE],
            "enforce_tolerance": ["boolean"],
            "temperature": [POSITIVE],
            "dual_rates": [StrOptions({"hard", "soft"})],
            "solution": [StrOptions(set(SOLUTIONS))],
            "histogram_noise": [StrOptions({"gaussian", "laplace"})],
            "histogram_noise_multiplier": [StrOptions({"auto"}), POSITIVE],
            "lr_dual": [StrOptions({"auto"}), POSITIVE],
            "dual_bound": [None, POSITIVE],
        },
        also_accept={
            "max_grad_norm": [StrOptions({"auto"})],
            "batch_size": [StrOptions({"auto"})],
            "max_epochs": [StrOptions({"auto"})],
        },
    )
    _schedule = RACO
    #: logistic regression's step without the generic engine (:mod:`.linear_step`)
    _fast_step = staticmethod(linear_raco_step)

    # experiment knobs (not parameters): denominators of the rates and weights
    _denominators = "running"
    _tail_fraction = TAIL_FRACTION
    _eta = 2.0

    def __init__(
        self, constraints="demographic_parity", tolerance=0.05, *, tolerance_margin="auto",
        enforce_tolerance=True, epsilon=1.0, delta="auto",
        max_grad_norm="auto", max_sample_weight=1.0, noise_multiplier=None, temperature=1.0,
        dual_rates="hard", solution="average", histogram_noise="gaussian",
        histogram_noise_multiplier="auto", lr_dual="auto", dual_bound=None,
        calibration="accountant", accountant="auto", sensitive_values=None, lr=0.1,
        batch_size="auto", max_epochs="auto", module=None, hidden_layer_sizes=(),
        optimizer=torch.optim.SGD, callbacks=None, random_state=None, secure_mode=False,
        device="cpu", n_jobs=None, record_private_diagnostics=False, verbose=0, **kwargs,
    ):  # fmt: skip
        self._store_parameters(locals())

    # -- hooks of the fit template ----------------------------------------------
    def _check_params(self) -> None:
        resolve_constraints(self.constraints, float(self.tolerance))  # bad constraints: early
        if self.histogram_noise == "laplace" and self.accountant == "rdp":
            raise ValueError(
                "accountant='rdp' cannot account histogram_noise='laplace' (the gradient and "
                "the Laplace histogram share a batch; only the joint PLD accounts that): use "
                "accountant='auto' or 'pld'"
            )

    def _encode_groups(self, sensitive_features, n_samples):
        codes = self._encode_sensitive(sensitive_features, n_samples, required=None)
        encoder = self.group_encoder_
        group_labels = [None] if encoder is None else list(encoder.group_labels_)
        families = resolve_constraints(self.constraints, float(self.tolerance))
        try:
            program = compile_rate_constraints(families, group_labels, list(self.classes_))
        except ValueError as exc:
            if sensitive_features is None:
                raise ValueError(
                    f"sensitive_features is required by constraints={self.constraints!r}: pass "
                    f"fit(X, y, sensitive_features=...). {routing_hint()} ({exc})"
                ) from exc
            raise
        if program.uses_groups and sensitive_features is None:
            raise ValueError(
                f"sensitive_features is required by constraints={self.constraints!r}: pass "
                f"fit(X, y, sensitive_features=...). {routing_hint()}"
            )
        self.rate_program_ = program
        self.constraint_names_ = list(program.names)
        return codes

    def _per_row_tensors(self, ctx):
        parts = self.rate_program_.parts(ctx.groups, ctx.y)
        return (torch.as_tensor(np.stack([ctx.y, parts], axis=1).astype(np.int64)),)

    def _make_problem(self, ctx, plan):
        program = self.rate_program_
        dual_bound = self.dual_bound
        steps = ctx.planned_steps if plan.steps is None else min(plan.steps, ctx.planned_steps)
        problem = RacoProblem(
            membership=torch.as_tensor(program.membership, device=ctx.device),
            coefficients=torch.as_tensor(program.coefficients, device=ctx.device),
            bounds=torch.as_tensor(program.bounds, device=ctx.device),
            temperature=self.temperature,
            lr_dual=None if self.lr_dual == "auto" else self.lr_dual,
            dual_bound=None if dual_bound is None else float(dual_bound),
            histogram_noise=self.histogram_noise if ctx.private else None,
            histogram_scale=plan.statistics_multiplier,
            expected_batch_size=ctx.sampler.expected_batch_size if ctx.private else None,
            dual_rates=self.dual_rates,
            denominators=self._denominators,
            planned_steps=steps,
            margin_z=raco_tolerance_margin(self.tolerance_margin),
            sampling_rate=ctx.sampler.expected_batch_size / ctx.n_samples,
            dual_walk=pairwise_dual_walk(
                len(self.group_encoder_.group_labels_) if self.group_encoder_ is not None else 1,
                self._pairwise_constraints(),
            ),
            **ctx.mechanisms,
        )
        problem.iterates = iterate_track(
            self.solution, self.module_, steps, self._tail_fraction, self._eta
        )
        return problem

    def _pairwise_constraints(self) -> bool:
        families = resolve_constraints(self.constraints, float(self.tolerance))
        return any(getattr(family, "versus", None) == "pairs" for family in families)

    def _store_fitted(self, problem, plan, ctx) -> None:
        self.histogram_noise_multiplier_ = plan.statistics_multiplier
        self.lambda_ = problem.lam.cpu().numpy().astype(float)
        self.tolerance_margins_ = problem.last_margins.cpu().numpy().astype(float)
        start = 0
        violations, lambda_max = problem.step_violations, problem.step_lambda_max
        for row in self.history_:
            stop = row["steps"]
            window = violations[start:stop]
            row["constraint_violation"] = float(np.mean(window)) if window else float("nan")
            row["lambda_max"] = lambda_max[stop - 1] if stop else 0.0
            start = stop
        self.dual_steps_ = (
            None if problem.last_dual_steps is None else problem.last_dual_steps.cpu().numpy()
        )
        store_solution(self, problem.iterates, ctx)  # "best" evaluates on the training set
        self._enforce_tolerance(ctx)

    def _enforce_tolerance(self, ctx) -> None:
        """``enforce_tolerance``: one check on the training rows, the mix it asks for."""
        self.tolerance_check_ = None
        self.tolerance_mixing_ = 0.0
        self.mixing_class_ = None
        self.mixing_salt_ = None
        if not self.enforce_tolerance:
            return
        multiplier = enforce_noise_multiplier(self.epsilon, ctx.delta) if ctx.private else 0.0
        check = check_tolerance(
            self.module_, self.iterates_, self.iterate_weights_, ctx, self.rate_program_,
            multiplier,
        )  # fmt: skip
        self.tolerance_check_ = check
        # every data-parallel rank must pick the same rows: rank 0's salt, sent in two
        # halves that float64 broadcasts carry exactly (one process: the draw as is)
        high, low = divmod(int(ctx.random.torch_seed()), 2**31)
        self.mixing_salt_ = int(from_first_rank(high)) * 2**31 + int(from_first_rank(low))
        if check.constant_class is None:
            warnings.warn(
                "enforce_tolerance: no constant predictor meets every constraint, so none "
                "can be mixed in; the model is the run's (tolerance_check_ has its noisy "
                "constraint values)",
                UserWarning,
                stacklevel=5,
            )
            return
        if check.mixing <= 0.0:
            return
        self.tolerance_mixing_ = float(check.mixing)
        constant = self.classes_[check.constant_class]
        self.mixing_class_ = constant.item() if hasattr(constant, "item") else constant
        if check.mixing >= MIXING_WARNING:
            why, hint = mixing_reason(check, self.tolerance, self.epsilon, ctx.private)
            warnings.warn(
                f"enforce_tolerance: {why}, so predict gives the constant class "
                f"{self.mixing_class_!r} to {check.mixing:.0%} of the rows. {hint}",
                UserWarning,
                stacklevel=5,
            )

    # -- the solution's predictions ---------------------------------------------
    def _is_mixture(self) -> bool:
        return getattr(self, "iterates_", None) is not None

    def _mixes_constant(self) -> bool:
        return getattr(self, "tolerance_mixing_", 0.0) > 0.0

    def _mixture_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "module_")
        X = self._prediction_input(X)
        return mixture_proba(
            self.module_, self.iterates_, self.iterate_weights_, X, len(self.classes_)
        )

    def _with_constant(self, proba: np.ndarray) -> np.ndarray:
        """``(1 - p) proba + p onehot(c)``: the constant mixed in by ``enforce_tolerance``."""
        if not self._mixes_constant():
            return proba
        onehot = (self.classes_ == self.mixing_class_).astype(float)
        return (1.0 - self.tolerance_mixing_) * proba + self.tolerance_mixing_ * onehot

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities; no sensitive features needed.

        ``solution="mixture"``: the probability that the randomised classifier
        predicts each class, ``sum_t w_t 1[argmax h_t(x) = k]`` (as fairlearn's
        ``ExponentiatedGradient``); otherwise the softmax of the model's logits.
        When ``enforce_tolerance`` mixed in a constant (``tolerance_mixing_ = p >
        0``): ``(1 - p)`` times that plus ``p`` on ``mixing_class_``.
        """
        if self._is_mixture():
            return self._with_constant(self._mixture_proba(X))
        return self._with_constant(super().predict_proba(X))

    def decision_function(self, X) -> np.ndarray:
        """Logit scores; for a mixture (of iterates, or with a constant), ``predict_proba``
        centred (binary: ``p_1 - p_0``)."""
        if not (self._is_mixture() or self._mixes_constant()):
            return super().decision_function(X)
        proba = self.predict_proba(X)
        return proba[:, 1] - proba[:, 0] if proba.shape[1] == 2 else proba

    def predict(self, X, *, random_state=None) -> np.ndarray:
        """Predicted classes; no sensitive features needed.

        ``solution="mixture"``: each row's class is drawn from :meth:`predict_proba`
        (the randomised classifier whose rates the constraints bound);
        ``random_state=None`` uses the estimator's ``random_state``, so a seeded
        fit predicts reproducibly, as fairlearn's ``ExponentiatedGradient`` (in
        ``secure_mode``, the OS CSPRNG).
        Otherwise the most probable class, except, when ``enforce_tolerance``
        mixed in a constant, on the rows whose salted feature hash falls below
        ``tolerance_mixing_``: those get ``mixing_class_`` (deterministic; a
        row's prediction does not depend on the other rows).
        """
        if self._is_mixture():
            proba = self._with_constant(self._mixture_proba(X))
            return draw_classes(proba, self.classes_, prediction_random(self, random_state))
        pred = super().predict(X)
        if not self._mixes_constant():
            return pred
        coins = row_uniforms(self._prediction_input(X), self.mixing_salt_)
        return np.where(coins < self.tolerance_mixing_, self.mixing_class_, pred)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a mixture's predict draws per row (seeded: reproducible, but a row's class
        # depends on its position), as CGOOReduction's
        tags.non_deterministic = tags.non_deterministic or self.solution == "mixture"
        return tags
