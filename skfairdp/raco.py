"""RaCODPClassifier: RaCO-DP (Yaghini, Cebere, Menart, Bellet & Papernot, 2025).

Private rate-constrained learning: min over theta of the loss subject to rate
constraints ``Gamma_j(theta) <= gamma_j`` (fairness or otherwise, see
:mod:`skfairdp.fairness.rates`), by noisy simultaneous gradient descent-ascent
on the Lagrangian. Per step, on one Poisson batch:

1. soft predictions ``sigma_tau(h(x))`` (tempered softmax) are summed into a
   ``Q x K`` histogram per part of the constraints' global partition; each row
   adds a probability vector to one row of the histogram, so its L1 and L2
   sensitivities are at most 1;
2. the histogram is released with Gaussian (default) or Laplace noise; every
   rate, every constraint value and the per-part weights are post-processing of
   this noisy histogram (denominators floored at 1: noisy counts can be <= 0);
3. the per-sample objective ``loss_i + B_exp * <W[q(i)], sigma_tau(h_i)>`` is
   differentiated per sample, clipped, summed, noised and divided by the
   expected batch size (the engine);
4. the dual variables take a projected ascent step on ``Gamma_hat - gamma``.

What this module adds to the engine: the per-sample objective, the histogram
release (``release_batch_statistics``), how lambda moves, and the accounting of
the two releases made on the same batch.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import torch
from sklearn.utils._param_validation import HasMethods, StrOptions

from .base import (
    NON_NEGATIVE,
    POSITIVE,
    NoisePlan,
    Param,
    PrivateClassifierBase,
    declare_parameters,
)
from .fairness.rates import CONSTRAINT_NAMES, compile_rate_constraints, resolve_constraints
from .privacy import (
    EventRecorder,
    RandomSource,
    calibration,
    epsilon_spent,
    joint_noise_multiplier,
    noisy_histogram,
    sampled_gaussian_steps_event,
)
from .privacy.joint import joint_sampled_event
from .privacy.mechanisms import laplace_noise  # noqa: F401  (re-exported: raco.laplace_noise)

# "auto" histogram noise: its multiplier is this many times the gradient's. The
# histogram is a Q x K statistic whose noise the dual step averages over many
# steps, while the gradient noise lands on d parameters each step, so most of
# the budget goes to the gradient: with Gaussian noise the histogram takes
# 1 / (1 + 2^2) = 20% of the per-step "precision" (z^-2) budget.
HISTOGRAM_NOISE_RATIO = 2.0
# Floor on noisy counts used as denominators: one row.
MIN_COUNT = 1.0


def soft_histogram(proba: torch.Tensor, parts: torch.Tensor, n_parts: int) -> torch.Tensor:
    """``(Q, K)`` sums of per-row probability vectors per part (Eq. 8).

    The noiseless histogram: it must only ever reach :meth:`RacoProblem.privatize`.
    """
    H = proba.new_zeros((n_parts, proba.shape[1]))
    return H.index_add_(0, parts, proba)


class RacoProblem:
    """The RaCO-DP Lagrangian as the engine sees it (one object per fit).

    Parameters
    ----------
    membership : Tensor (M, Q)
        Which parts make up each set used by the constraints.
    coefficients : Tensor (J, M, K)
    bounds : Tensor (J,)
    temperature : float
    lr_dual : float
    dual_bound : float or None
        Box ``lambda <= dual_bound``; ``None`` for the non-negative orthant.
    histogram_noise : {"gaussian", "laplace", None}
        ``None``: the exact histogram (non-private training only).
    histogram_scale : float
        Gaussian std or Laplace scale per cell (sensitivity 1).
    expected_batch_size : float or None
        ``B_exp`` multiplying the constraint term; ``None`` uses the realised
        batch size (non-private training, where the engine averages over it).
    random : RandomSource
    recorder : EventRecorder, optional
        Where the histogram release is recorded (the fit's recorder, which the
        engine shares); a new one by default.
    max_weight : float, default=1.0
        Bound on the sample weights: a weighted row adds at most ``max_weight``
        (L1 and L2) to the histogram, its sensitivity.
    """

    private_primal = (True,)
    dual_clip = 1.0  # unused: the dual moves by post-processing of the histogram

    def __init__(
        self,
        *,
        membership: torch.Tensor,
        coefficients: torch.Tensor,
        bounds: torch.Tensor,
        temperature: float,
        lr_dual: float,
        dual_bound: float | None,
        histogram_noise: str | None,
        histogram_scale: float,
        expected_batch_size: float | None,
        random: RandomSource,
        recorder: EventRecorder | None = None,
        max_weight: float = 1.0,
    ):
        self.S = membership.float()
        self.A = coefficients.float()
        self.gamma = bounds.float()
        self.tau = float(temperature)
        self.lr_dual = float(lr_dual)
        self.dual_bound = dual_bound
        self.histogram_noise = histogram_noise
        self.histogram_scale = float(histogram_scale)
        self.expected_batch_size = expected_batch_size
        self.random = random
        self.recorder = recorder if recorder is not None else EventRecorder()
        self.max_weight = float(max_weight)
        self.state = {"lambda": torch.zeros(self.A.shape[0], device=self.A.device)}
        self.n_parts = self.S.shape[1]
        # flat forms for a step of few kernels: values = A_flat @ rates, W = S^T (lam A) / n
        self.A_flat = self.A.reshape(self.A.shape[0], -1)
        self.S_T = self.S.T.contiguous()
        self.violation_log: list[torch.Tensor] = []
        self.lambda_log: list[torch.Tensor] = []
        self.n_releases = 0

    @property
    def lam(self) -> torch.Tensor:
        """The current multipliers (``state["lambda"]``)."""
        return self.state["lambda"]

    def prepare_batch(self, codes):
        y, part = codes.unbind(dim=1)
        return y, part

    def privatize(self, H: torch.Tensor) -> torch.Tensor:
        """The one release of the step: ``H`` plus noise (the identity when non-private).

        Each row adds a probability vector (times its weight) to one row of ``H``:
        L1 and L2 sensitivity 1 (``max_weight``). The executed event goes to
        :attr:`recorder`.
        """
        self.n_releases += 1
        if self.histogram_noise is None:
            return H
        kind = "noise_multiplier" if self.histogram_noise == "gaussian" else "laplace_scale"
        return noisy_histogram(
            H,
            self.random,
            **{kind: self.histogram_scale},
            sensitivity=self.max_weight,
            recorder=self.recorder,
        )[0]

    def rates(self, H_hat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-set rates ``(M, K)`` (clipped to [0, 1]) and floored denominators ``(M, 1)``."""
        sums = self.S @ H_hat
        denom = sums.sum(dim=1, keepdim=True).clamp_(min=MIN_COUNT)
        return (sums / denom).clamp_(0.0, 1.0), denom

    def release_batch_statistics(self, outputs, y, part, weights=None):
        proba = torch.softmax(outputs * self.tau, dim=1)
        if weights is not None:  # weighted rates: integer weights count as repeated rows
            proba = proba * weights.to(proba.dtype).unsqueeze(1)
        H_hat = self.privatize(soft_histogram(proba, part, self.n_parts))
        # --- everything below is post-processing of H_hat ---
        rates, denom = self.rates(H_hat)
        values = self.A_flat @ rates.reshape(-1)
        # per-part weights at the current lambda (simultaneous descent-ascent)
        scale = self.expected_batch_size
        if scale is None:  # non-private: what the engine divides by
            scale = len(y) if weights is None else float(weights.sum())
        coef = (self.lam @ self.A_flat).view_as(rates).div_(denom).mul_(scale)
        weights = (self.S_T @ coef).index_select(0, part)
        return (y, weights), {"values": values}

    def apply_statistics(self, statistics: dict) -> None:
        """Dual ascent on the released rate values (post-processing of ``H_hat``)."""
        self.dual_update(statistics["values"])

    def dual_update(self, values: torch.Tensor) -> None:
        """``lambda <- clip(lambda + lr_dual (Gamma_hat - gamma), 0, dual_bound)``."""
        violation = values - self.gamma
        lam = torch.add(self.lam, violation, alpha=self.lr_dual).clamp_(
            min=0.0, max=self.dual_bound
        )
        self.state = {"lambda": lam}
        self.violation_log.append(violation)
        self.lambda_log.append(lam)

    @property
    def step_violations(self) -> list[float]:
        """``max_j Gamma_j(H_hat) - gamma_j`` of each step so far."""
        if not self.violation_log:
            return []
        return torch.stack(self.violation_log).max(dim=1).values.tolist()

    @property
    def step_lambda_max(self) -> list[float]:
        """``max_j lambda_j`` after each step so far."""
        if not self.lambda_log:
            return []
        return torch.stack(self.lambda_log).max(dim=1).values.tolist()

    def primal_objectives(self, outputs, y, weights):
        log_p = torch.log_softmax(outputs, dim=1)
        loss = -log_p.gather(1, y.unsqueeze(1)).squeeze(1)
        soft = torch.softmax(self.tau * outputs, dim=1)
        return (loss + (weights * soft).sum(dim=1),), {"loss": loss}

    def primal_output_gradients(self, outputs, y, weights):
        log_p = torch.log_softmax(outputs, dim=1)
        p = log_p.exp()
        loss = -log_p.gather(1, y.unsqueeze(1)).squeeze(1)
        grad = p.scatter_add(1, y.unsqueeze(1), -torch.ones_like(loss).unsqueeze(1))
        soft = torch.softmax(self.tau * outputs, dim=1)
        mean_w = (weights * soft).sum(dim=1, keepdim=True)
        grad = grad + self.tau * soft * (weights - mean_w)
        return (grad,), {"loss": loss}


class RaCODPClassifier(PrivateClassifierBase):
    """Differentially private rate-constrained classifier by RaCO-DP.

    Minimises cross-entropy subject to rate constraints (demographic parity,
    equalized odds, false negative rate bounds, or custom ones) with noisy
    stochastic gradient descent-ascent on the Lagrangian; the constraint rates
    come from one noisy histogram of soft predictions per step (Yaghini, Cebere,
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
    tolerance : float, default=0.05
        Slack ``gamma`` of constraints given by name.
    epsilon : float, default=1.0
        Target epsilon; ``np.inf`` trains without noise or clipping (shuffled
        batches, exact histogram: plain SGDA) and reports ``(inf, 0.0)``.
    delta : "auto" or float, default="auto"
        ``"auto"`` is ``0.1 / n`` rounded down to one digit.
    temperature : float, default=1.0
        ``tau`` of the tempered softmax ``sigma_tau(z) = softmax(tau z)`` used for
        the soft rates (the paper's printed ``exp(-tau z)`` is a sign typo).
    max_grad_norm : float, default=3.0
        Clipping norm ``C`` of the per-sample gradient of
        ``loss_i + B_exp <W[q(i)], sigma_tau(h_i)>``. A constraint acts through
        these clipped gradients, so ``C`` must leave room for the constraint term
        above the loss gradient (clipping bias: with ``C = 1`` a false-negative-rate
        bound of 0.2 on Adult stays out of reach); see doc/raco.md.
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
    lr_dual : float, default=1.0
        Step size of lambda's projected ascent on ``Gamma_hat - gamma``.
    dual_bound : None or float, default=None
        Upper bound on each lambda (the theory's compact dual set).
    batch_size : int, default=512
        Expected (Poisson) batch size ``B_exp``.
    max_epochs : int, default=30
        Number of expected passes.
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
    history_ : skorch.history.History
        Per epoch: ``loss`` (raw batches, NOT private), ``constraint_violation``
        (mean over the epoch's steps of ``max_j Gamma_hat_j - gamma_j``, from the
        released histograms: private), ``lambda_max``, ``epsilon``, ``steps``, ``dur``.
    """

    _parameters = declare_parameters(
        "calibration",
        "accountant",
        "sensitive_values",
        own={
            "constraints": Param(
                "demographic_parity",
                [StrOptions(set(CONSTRAINT_NAMES)), list, tuple, HasMethods(["expand"])],
            ),
            "tolerance": Param(0.05, [NON_NEGATIVE]),
            "temperature": Param(1.0, [POSITIVE]),
            "histogram_noise": Param("gaussian", [StrOptions({"gaussian", "laplace"})]),
            "histogram_noise_multiplier": Param("auto", [StrOptions({"auto"}), POSITIVE]),
            "lr_dual": Param(1.0, [POSITIVE]),
            "dual_bound": Param(None, [None, POSITIVE]),
        },
        defaults={"max_grad_norm": 3.0, "batch_size": 512, "max_epochs": 30},
        positional=("constraints", "tolerance"),
    )

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
                    "fit(X, y, sensitive_features=...) (with metadata routing enabled inside a "
                    f"Pipeline or GridSearchCV). ({exc})"
                ) from exc
            raise
        if program.uses_groups and sensitive_features is None:
            raise ValueError(f"sensitive_features is required by constraints={self.constraints!r}")
        self.rate_program_ = program
        self.constraint_names_ = list(program.names)
        return codes

    def _per_row_tensors(self, ctx):
        parts = self.rate_program_.parts(ctx.groups, ctx.y)
        return (torch.as_tensor(np.stack([ctx.y, parts], axis=1).astype(np.int64)),)

    def _plan_for(self, noise_multiplier, ctx) -> NoisePlan:
        statistics_multiplier = self._hist_multiplier(noise_multiplier)
        gaussian = self.histogram_noise == "gaussian"
        return NoisePlan(
            primal=noise_multiplier,
            statistics=statistics_multiplier,
            effective=joint_noise_multiplier(noise_multiplier, statistics_multiplier)
            if gaussian
            else math.nan,
        )

    def _steps_event(self, plan, ctx, steps):
        return self._planned_event(plan.primal, plan.statistics, ctx.sampling_rate, steps)

    def _make_problem(self, ctx, plan):
        program = self.rate_program_
        dual_bound = self._param("dual_bound")
        return RacoProblem(
            membership=torch.as_tensor(program.membership, device=ctx.device),
            coefficients=torch.as_tensor(program.coefficients, device=ctx.device),
            bounds=torch.as_tensor(program.bounds, device=ctx.device),
            temperature=self.temperature,
            lr_dual=self._param("lr_dual"),
            dual_bound=None if dual_bound is None else float(dual_bound),
            histogram_noise=self.histogram_noise if ctx.private else None,
            histogram_scale=plan.statistics,
            expected_batch_size=ctx.sampler.expected_batch_size if ctx.private else None,
            **ctx.mechanisms,
        )

    def _store_fitted(self, problem, plan) -> None:
        self.histogram_noise_multiplier_ = plan.statistics
        self.lambda_ = problem.lam.cpu().numpy().astype(float)
        start = 0
        violations, lambda_max = problem.step_violations, problem.step_lambda_max
        for row in self.history_:
            stop = row["steps"]
            window = violations[start:stop]
            row["constraint_violation"] = float(np.mean(window)) if window else float("nan")
            row["lambda_max"] = lambda_max[stop - 1] if stop else 0.0
            start = stop

    def _accountant_options(self) -> dict:
        return {"accountant": self.accountant}

    def _report_accounting(self, ctx) -> None:
        # the authors' accounting of the same releases: each amplified separately
        self.paper_epsilon_ = epsilon_spent(
            ctx.recorder.build("separate"), ctx.delta, accountant="pld"
        ).epsilon
        if (
            self._param("calibration") == "paper"
            and self.privacy_spent_.epsilon > self.epsilon * 1.001
        ):
            warnings.warn(
                f"calibration='paper' met epsilon={self.epsilon:g} by the authors' separate "
                f"composition; the sound (joint) accountant says this run spent "
                f"epsilon={self.privacy_spent_.epsilon:.4g} (privacy_spent_).",
                UserWarning,
                stacklevel=5,  # user -> fit -> _private_fit -> _fit_template -> here
            )

    # -- accounting -------------------------------------------------------------
    def _event(
        self, gradient_multiplier: float, statistics_multiplier: float, q: float, steps: int
    ):
        """The executed event: ``steps`` Poisson-sampled steps of (gradient, histogram)."""
        if self.histogram_noise == "gaussian":
            return sampled_gaussian_steps_event(
                joint_noise_multiplier(gradient_multiplier, statistics_multiplier), q, steps
            )
        step = joint_sampled_event(
            q, gaussian_multiplier=gradient_multiplier, laplace_scale=statistics_multiplier
        )
        return dp_accounting.SelfComposedDpEvent(step, int(steps))

    def _paper_event(
        self, gradient_multiplier: float, statistics_multiplier: float, q: float, steps: int
    ):
        """The authors' accounting: each release amplified separately, then composed."""
        hist = (
            dp_accounting.GaussianDpEvent(statistics_multiplier)
            if self.histogram_noise == "gaussian"
            else dp_accounting.LaplaceDpEvent(statistics_multiplier)
        )
        parts = [dp_accounting.GaussianDpEvent(gradient_multiplier)] + (
            [hist] if math.isfinite(statistics_multiplier) else []
        )
        return dp_accounting.ComposedDpEvent(
            [
                dp_accounting.SelfComposedDpEvent(
                    dp_accounting.PoissonSampledDpEvent(q, e) if q < 1 else e, int(steps)
                )
                for e in parts
            ]
        )

    def _planned_event(
        self, gradient_multiplier: float, statistics_multiplier: float, q: float, steps: int
    ):
        """The event calibration plans with: sound, or the authors' (``calibration="paper"``)."""
        if self._param("calibration") == "paper":
            return self._paper_event(gradient_multiplier, statistics_multiplier, q, steps)
        return self._event(gradient_multiplier, statistics_multiplier, q, steps)

    def _calibration_options(self) -> dict:
        # the authors' accounting is PLD; the sound one uses the chosen accountant
        return {"accountant": "pld" if self._param("calibration") == "paper" else self.accountant}

    def _spent(self, gradient_multiplier, statistics_multiplier, q, steps, delta) -> float:
        event = self._planned_event(gradient_multiplier, statistics_multiplier, q, steps)
        return epsilon_spent(event, delta, **self._calibration_options()).epsilon

    def _hist_multiplier(self, gradient_multiplier: float) -> float:
        if self.histogram_noise_multiplier == "auto":
            return HISTOGRAM_NOISE_RATIO * gradient_multiplier
        return float(self.histogram_noise_multiplier)

    def _calibrate(self, ctx) -> NoisePlan:
        """The plan meeting ``(epsilon, delta)`` (a fixed ``noise_multiplier``: the template)."""
        q, planned_steps, delta = ctx.sampling_rate, ctx.planned_steps, ctx.delta
        fixed_hist = self.histogram_noise_multiplier != "auto"
        if fixed_hist:
            statistics_multiplier = float(self.histogram_noise_multiplier)
            if self._spent(1e6, statistics_multiplier, q, planned_steps, delta) > self.epsilon:
                raise ValueError(
                    f"histogram_noise_multiplier={statistics_multiplier:g} alone spends more than "
                    f"epsilon={self.epsilon:g} over {planned_steps} steps; increase it or use "
                    "'auto'"
                )
        simple = (
            self.histogram_noise == "gaussian"
            and self._param("calibration") == "accountant"
            and not fixed_hist
        )
        if simple:  # one Gaussian per step: calibrate the joint multiplier, then split it
            z_eff = self._calibrated_effective(ctx)
            return self._plan_for(z_eff * math.sqrt(1.0 + HISTOGRAM_NOISE_RATIO**-2), ctx)
        gradient_multiplier = calibration.calibrate_noise_multiplier(
            self.epsilon,
            delta,
            lambda z: self._planned_event(z, self._hist_multiplier(z), q, planned_steps),
            **self._calibration_options(),
        )
        return self._plan_for(gradient_multiplier, ctx)

    def _max_steps(self, gradient_multiplier, statistics_multiplier, q, cap, delta) -> int:
        """Largest ``T <= cap`` with ``epsilon(T) <= epsilon`` (epsilon grows with T)."""
        return self._max_steps_within(
            lambda steps: self._planned_event(gradient_multiplier, statistics_multiplier, q, steps),
            gradient_multiplier,
            cap,
            delta,
        )
