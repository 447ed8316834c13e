"""RaCODPClassifier: RaCO-DP (Yaghini, Cebere, Menart, Bellet & Papernot, 2025).

Private rate-constrained learning: min over theta of the loss subject to rate
constraints ``Gamma_j(theta) <= gamma_j`` (fairness or otherwise, see
:mod:`skfairdp.fairness.rates`), by noisy simultaneous gradient descent-ascent
on the Lagrangian. Per step, on one Poisson batch:

1. the model's hard predictions (one-hot argmax; or its soft predictions
   ``sigma_tau(h(x))`` with ``dual_rates="soft"``) are summed into a ``Q x K``
   histogram per part of the constraints' global partition; each row adds a
   vector of norm 1 to one row of the histogram, so its L1 and L2 sensitivities
   are at most 1;
2. the histogram is released with Gaussian (default) or Laplace noise; every
   rate, every constraint value and the per-part weights are post-processing of
   the noisy histograms released so far (denominators: the running mean of the
   released set counts, floored at 1);
3. the per-sample objective ``loss_i + B_exp * <W[q(i)], sigma_tau(h_i)>`` (the
   smooth surrogate) is differentiated per sample, clipped, summed, noised and
   divided by the expected batch size (the engine);
4. the dual variables take a projected ascent step on ``Gamma_hat - gamma``, a
   step size per constraint scaled to the noise of its estimate.

The model returned is the running average of the iterates, a mixture of them,
the last one, or one chosen by an accounted noisy evaluation (``solution``).

What this module adds to the engine: the per-sample objective, the histogram
release (``release_batch_statistics``), how lambda moves, the accounting of the
two releases made on the same batch, and the solution made from the iterates.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import torch
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._fit.base import (
    NON_NEGATIVE,
    POSITIVE,
    NoisePlan,
    Param,
    PrivateClassifierBase,
    declare_parameters,
)
from .._fit.budget import calibrated_plan
from .._fit.schedules import RACO, RACO_MIN_STEPS
from .._fit.validation import check_X, densify
from ..engine.iterates import IterateTrack, iterate_outputs, load_flat_parameters
from ..fairness.rates import CONSTRAINT_NAMES, compile_rate_constraints, resolve_constraints
from ..privacy import (
    EventRecorder,
    RandomSource,
    epsilon_spent,
    joint_noise_multiplier,
    noisy_histogram,
    sampled_gaussian_steps_event,
)
from ..privacy.joint import joint_sampled_event
from ..privacy.mechanisms import laplace_noise  # noqa: F401  (re-exported: raco.laplace_noise)

# "auto" histogram noise: its multiplier is this many times the gradient's. The
# histogram is a Q x K statistic whose noise the dual step averages over many
# steps, while the gradient noise lands on d parameters each step, so most of
# the budget goes to the gradient: with Gaussian noise the histogram takes
# 1 / (1 + 2^2) = 20% of the per-step "precision" (z^-2) budget.
HISTOGRAM_NOISE_RATIO = 2.0
# Floor on noisy counts used as denominators: one row.
MIN_COUNT = 1.0
# The solutions are made from the last TAIL_FRACTION of the steps: the running mean
# of the parameters ("average"), N_ITERATES evenly spaced copies ("mixture"), or
# N_CANDIDATES copies and the mean, one of which a noisy evaluation picks ("best").
TAIL_FRACTION = 0.5
N_ITERATES = 20
N_CANDIDATES = 7
# "best": the candidates' evaluation gets this share of the budget's zCDP rho.
SELECTION_SHARE = 0.1
SOLUTIONS = ("last", "average", "mixture", "best")
# lr_dual="auto": each constraint's dual step is DUAL_WALK / (sigma_j sqrt(T)), sigma_j the
# std of one step's estimate of its value and T the planned steps (at most LR_DUAL_MAX):
# the noise a multiplier accumulates over the whole run has std DUAL_WALK, whatever the
# noise and the length of the run; see RacoProblem.dual_steps.
DUAL_WALK = 0.15
LR_DUAL_MAX = 1.0


def soft_histogram(proba: torch.Tensor, parts: torch.Tensor, n_parts: int) -> torch.Tensor:
    """``(Q, K)`` sums of per-row prediction vectors per part (Eq. 8).

    Soft (probability vectors) or hard (one-hot argmax) rows alike: each row adds
    a vector of L1 and L2 norm 1 to one row of the histogram. The noiseless
    histogram: it must only ever reach :meth:`RacoProblem.privatize`.
    """
    H = proba.new_zeros((n_parts, proba.shape[1]))
    return H.index_add_(0, parts, proba)


def hard_predictions(outputs: torch.Tensor) -> torch.Tensor:
    """One-hot rows of ``argmax`` (the classes a model predicts), float."""
    onehot = torch.zeros_like(outputs)
    return onehot.scatter_(1, outputs.argmax(dim=1, keepdim=True), 1.0)


def selection_noise_multiplier(epsilon: float, delta: float) -> float:
    """Noise multiplier of ``solution="best"``'s evaluation: ``SELECTION_SHARE`` of the budget.

    Its share of the zCDP ``rho`` that ``(epsilon, delta)`` allows,
    ``rho = (sqrt(eps + L) - sqrt(L))^2`` with ``L = log(1/delta)``; a Gaussian
    release of multiplier ``z`` is ``1 / (2 z^2)``-zCDP. The accountant then
    composes it exactly with the training steps, which get the rest of the budget.
    """
    log_inv_delta = math.log(1.0 / delta)
    rho = (math.sqrt(epsilon + log_inv_delta) - math.sqrt(log_inv_delta)) ** 2
    return 1.0 / math.sqrt(2.0 * SELECTION_SHARE * rho)


class RacoProblem:
    """The RaCO-DP Lagrangian as the engine sees it (one object per fit).

    Parameters
    ----------
    membership : Tensor (M, Q)
        Which parts make up each set used by the constraints.
    coefficients : Tensor (J, M, K)
    bounds : Tensor (J,)
    temperature : float
    lr_dual : float or None
        Step size of the dual ascent; ``None``: per constraint, from the noise of
        its estimate (:meth:`dual_steps`).
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
    dual_rates : {"hard", "soft"}, default="hard"
        What the released histogram counts, hence what the dual player sees:
        hard predictions (one-hot argmax; the proxy-Lagrangian of Cotter, Jiang &
        Sridharan 2019) or soft ones (``softmax(tau h)``, the paper's Eq. 8). The
        primal step uses the smooth surrogate either way.
    denominators : {"running", "batch"}, default="running"
        Set sizes dividing the rates and the per-part weights. ``"batch"``: this
        batch's released counts (the paper's Eq. 10/12), floored at 1.
        ``"running"``: the mean of the released counts of every step so far
        (an estimate of ``q n_m``, the expected count, whose noise shrinks like
        ``1/sqrt(t)``); post-processing of the released histograms, so free.
    planned_steps : int, default=RACO_MIN_STEPS
        Steps the run will take (public), which scales the ``lr_dual=None`` steps
        (:meth:`dual_steps`).
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
        dual_rates: str = "hard",
        denominators: str = "running",
        planned_steps: int = RACO_MIN_STEPS,
    ):
        self.S = membership.float()
        self.A = coefficients.float()
        self.gamma = bounds.float()
        self.tau = float(temperature)
        self.lr_dual = None if lr_dual is None else float(lr_dual)
        self.dual_bound = dual_bound
        self.histogram_noise = histogram_noise
        self.histogram_scale = float(histogram_scale)
        self.expected_batch_size = expected_batch_size
        self.random = random
        self.recorder = recorder if recorder is not None else EventRecorder()
        self.max_weight = float(max_weight)
        if dual_rates not in ("hard", "soft"):
            raise ValueError(f"dual_rates must be 'hard' or 'soft', got {dual_rates!r}")
        if denominators not in ("running", "batch"):
            raise ValueError(f"denominators must be 'running' or 'batch', got {denominators!r}")
        self.dual_rates = dual_rates
        self.denominators = denominators
        self.planned_steps = max(1, int(planned_steps))
        n_sets = self.S.shape[0]
        # lambda, and the running sum of the released set counts with its number of steps
        self.state = {
            "lambda": torch.zeros(self.A.shape[0], device=self.A.device),
            "count_sum": torch.zeros(n_sets, device=self.A.device),
            "count_steps": torch.zeros((), device=self.A.device),
        }
        self.n_parts = self.S.shape[1]
        self.parts_per_set = self.S.sum(dim=1)
        # flat forms for a step of few kernels: values = A_flat @ rates, W = S^T (lam A) / n
        self.A_flat = self.A.reshape(self.A.shape[0], -1)
        self.S_T = self.S.T.contiguous()
        self.violation_log: list[torch.Tensor] = []
        self.lambda_log: list[torch.Tensor] = []
        self.n_releases = 0
        self.iterates: IterateTrack | None = None
        self.last_dual_steps: torch.Tensor | None = None

    @property
    def lam(self) -> torch.Tensor:
        """The current multipliers (``state["lambda"]``)."""
        return self.state["lambda"]

    def prepare_batch(self, codes):
        y, part = codes.unbind(dim=1)
        return y, part

    def privatize(self, H: torch.Tensor) -> torch.Tensor:
        """The one release of the step: ``H`` plus noise (the identity when non-private).

        Each row adds a probability or one-hot vector (times its weight) to one
        row of ``H``: L1 and L2 sensitivity 1 (``max_weight``). The executed event
        goes to :attr:`recorder`.
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
        """Per-set rates ``(M, K)`` and floored denominators ``(M, 1)`` of a released histogram.

        ``"batch"`` denominators: this histogram's set counts, rates clipped to
        [0, 1] (a ratio of two noisy counts). ``"running"``: the mean released
        count so far (this histogram included); rates are then linear in
        ``H_hat``, hence unbiased, and are not clipped.
        """
        sums = self.S @ H_hat
        counts = sums.sum(dim=1, keepdim=True)
        if self.denominators == "batch" or self.histogram_noise is None:
            denom = counts.clamp_(min=MIN_COUNT)
            return (sums / denom).clamp_(0.0, 1.0), denom
        total = self.state["count_sum"].unsqueeze(1) + counts
        denom = (total / (self.state["count_steps"] + 1.0)).clamp_(min=MIN_COUNT)
        return sums / denom, denom

    def release_batch_statistics(self, outputs, y, part, weights=None):
        if self.dual_rates == "hard":
            rows = hard_predictions(outputs)
        else:
            rows = torch.softmax(outputs * self.tau, dim=1)
        if weights is not None:  # weighted rates: integer weights count as repeated rows
            rows = rows * weights.to(rows.dtype).unsqueeze(1)
        H_hat = self.privatize(soft_histogram(rows, part, self.n_parts))
        # --- everything below is post-processing of H_hat ---
        rates, denom = self.rates(H_hat)
        values = self.A_flat @ rates.reshape(-1)
        # per-part weights at the current lambda (simultaneous descent-ascent)
        scale = self.expected_batch_size
        if scale is None:  # non-private: what the engine divides by
            scale = len(y) if weights is None else float(weights.sum())
        coef = (self.lam @ self.A_flat).view_as(rates).div_(denom).mul_(scale)
        weights = (self.S_T @ coef).index_select(0, part)
        counts = (self.S @ H_hat).sum(dim=1)
        statistics = {"values": values, "counts": counts}
        if self.lr_dual is None:
            statistics["dual_steps"] = self.dual_steps(denom.squeeze(1))
        return (y, weights), statistics

    def dual_steps(self, denom: torch.Tensor) -> torch.Tensor:
        """Per-constraint dual steps ``min(LR_DUAL_MAX, DUAL_WALK / (sigma_j sqrt(T)))``.

        ``sigma_j`` is the standard deviation of one step's estimate of
        ``Gamma_j``: each rate ``P_k(m)`` is a noisy count over ``n_m`` (the
        denominator), with variance ``(|m| s^2 + n_m / 4) / n_m^2``, ``|m|`` the
        parts making up set ``m``, ``s`` the histogram's noise std per count and
        ``n_m / 4`` bounding the sampling variance of a count of ``n_m`` rows;
        ``T`` is the number of planned steps. Then the noise each multiplier
        accumulates over the whole run, ``eta_j sigma_j sqrt(T)``, has the same
        standard deviation ``DUAL_WALK`` for every constraint, every noise level
        and every run length (the classical ``1 / (sigma sqrt(T))`` step of
        stochastic ascent), while the drift ``eta_j T (Gamma_j - gamma_j)`` still
        grows with the run. Everything is public or released (post-processing).
        """
        s2 = 0.0
        if self.histogram_noise is not None:
            std = self.histogram_scale * self.max_weight
            s2 = std**2 * (2.0 if self.histogram_noise == "laplace" else 1.0)
        var = (self.parts_per_set * s2 + 0.25 * denom) / denom.square()  # (M,)
        sigma = ((self.A**2).sum(dim=2) @ var).sqrt()  # (J,)
        return (DUAL_WALK / (sigma * math.sqrt(self.planned_steps))).clamp_(max=LR_DUAL_MAX)

    def apply_statistics(self, statistics: dict) -> None:
        """Dual ascent on the released values; running counts (post-processing of ``H_hat``)."""
        self.dual_update(
            statistics["values"], statistics.get("counts"), statistics.get("dual_steps")
        )
        if self.iterates is not None:
            self.iterates.step()

    def dual_update(
        self,
        values: torch.Tensor,
        counts: torch.Tensor | None = None,
        steps: torch.Tensor | None = None,
    ) -> None:
        """``lambda <- clip(lambda + lr_dual (Gamma_hat - gamma), 0, dual_bound)``.

        ``steps``: per-constraint step sizes replacing ``lr_dual``; ``counts``:
        the step's released set counts, added to the running ones.
        """
        violation = values - self.gamma
        step = self.lr_dual if steps is None else steps
        self.last_dual_steps = steps
        lam = (self.lam + step * violation).clamp_(min=0.0, max=self.dual_bound)
        state = dict(self.state, **{"lambda": lam})
        if counts is not None:
            state["count_sum"] = self.state["count_sum"] + counts
            state["count_steps"] = self.state["count_steps"] + 1.0
        self.state = state
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
        ``"best"`` are post-processing of the training run: free. See doc/raco.md.
    max_grad_norm : "auto" or float, default="auto"
        Clipping norm ``C`` of the per-sample gradient of
        ``loss_i + B_exp <W[q(i)], sigma_tau(h_i)>``. A constraint acts through
        these clipped gradients, so ``C`` must leave room for the constraint term
        above the loss gradient (clipping bias: with ``C = 1`` a false-negative-rate
        bound of 0.2 on Adult stays out of reach), while the noise grows with ``C``.
        ``"auto"``: ``n * epsilon / 5,000`` between 1 and 10
        (``raco_max_grad_norm`` in ``_fit/schedules.py``); see doc/raco.md.
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
            "dual_rates": Param("hard", [StrOptions({"hard", "soft"})]),
            "solution": Param("average", [StrOptions(set(SOLUTIONS))]),
            "histogram_noise": Param("gaussian", [StrOptions({"gaussian", "laplace"})]),
            "histogram_noise_multiplier": Param("auto", [StrOptions({"auto"}), POSITIVE]),
            "lr_dual": Param("auto", [StrOptions({"auto"}), POSITIVE]),
            "dual_bound": Param(None, [None, POSITIVE]),
        },
        defaults={"max_grad_norm": "auto", "batch_size": "auto", "max_epochs": "auto"},
        positional=("constraints", "tolerance"),
        also_accept={
            "max_grad_norm": [StrOptions({"auto"})],
            "batch_size": [StrOptions({"auto"})],
            "max_epochs": [StrOptions({"auto"})],
        },
    )

    # experiment knobs (not parameters): denominators of the rates and weights
    _denominators = "running"
    _tail_fraction = TAIL_FRACTION
    _eta = 2.0

    _schedule = RACO

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
            primal_multiplier=noise_multiplier,
            statistics_multiplier=statistics_multiplier,
            effective_multiplier=joint_noise_multiplier(noise_multiplier, statistics_multiplier)
            if gaussian
            else math.nan,
        )

    def _steps_event(self, plan, ctx, steps):
        return self._planned_event(
            plan.primal_multiplier, plan.statistics_multiplier, ctx.sampling_rate, steps
        )

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
            **ctx.mechanisms,
        )
        if self.solution != "last":
            copies = {"best": N_CANDIDATES, "mixture": N_ITERATES}.get(self.solution, 0)
            problem.iterates = IterateTrack(
                self.module_, steps, copies, self._tail_fraction, self._eta
            )
        problem.context = ctx  # "best" evaluates its candidates on the training set
        return problem

    def _store_fitted(self, problem, plan) -> None:
        self.histogram_noise_multiplier_ = plan.statistics_multiplier
        self.lambda_ = problem.lam.cpu().numpy().astype(float)
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
        self._store_solution(problem, plan)
        del problem.context

    def _store_solution(self, problem, plan) -> None:
        """``module_`` (and the mixture) from the iterates, as ``solution`` asks."""
        self.solution_ = self.solution
        self.iterates_ = None
        self.iterate_weights_ = None
        track = problem.iterates
        if self.solution == "last":  # module_ holds the last iterate
            return
        track.finish()
        if self.solution == "average":
            load_flat_parameters(self.module_, track.average)
        elif self.solution == "mixture":
            self.iterates_ = track.stacked
            self.iterate_weights_ = np.full(len(self.iterates_), 1.0 / len(self.iterates_))
        else:  # "best"
            candidates = np.concatenate([track.stacked, track.average.cpu().numpy()[None]])
            index, self.selection_statistics_ = self._select(problem, candidates, plan)
            self.selected_iterate_ = int(index)
            load_flat_parameters(self.module_, candidates[index])

    def _select(self, problem, candidates, plan):
        """Index of the best candidate by a noisy evaluation on the training set.

        One Gaussian release: for each of the ``K`` candidates, the histogram of
        its hard predictions over (group, true label) cells. A row moves one count
        of each of the ``K`` histograms by (its weight) 1: L2 sensitivity
        ``sqrt(K)`` for the stacked vector, noise ``z_sel * sqrt(K)`` per count.
        From the noisy counts (post-processing): each candidate's error and
        constraint values; the candidate with the smallest error among those whose
        largest violation is at most 0 wins (the smallest violation if none is).
        """
        ctx = problem.context
        program = self.rate_program_
        n_classes = len(self.classes_)
        X = torch.from_numpy(np.ascontiguousarray(ctx.X)).to(ctx.device)
        cells = ctx.groups * n_classes + ctx.y
        n_cells = program.part_of_cell.size
        weight = 1.0 if ctx.sample_weight is None else ctx.sample_weight
        counts = []
        for start in range(0, X.shape[0], 65536):
            out = iterate_outputs(self.module_, candidates, X[start : start + 65536])
            pred = out.argmax(dim=2).cpu().numpy()  # (K, chunk)
            rows = cells[start : start + 65536] * n_classes
            chunk = np.stack(
                [
                    np.bincount(
                        rows + p,
                        weights=np.broadcast_to(weight, cells.shape)[start : start + 65536],
                        minlength=n_cells * n_classes,
                    )
                    for p in pred
                ]
            )
            counts.append(chunk)
        H = np.sum(counts, axis=0).reshape(len(candidates), n_cells, n_classes)
        if ctx.private:
            noisy, _ = noisy_histogram(
                torch.from_numpy(H),
                ctx.random,
                noise_multiplier=selection_noise_multiplier(self.epsilon, ctx.delta),
                sensitivity=math.sqrt(len(candidates)) * ctx.max_weight,
                recorder=ctx.recorder,
            )
            H = noisy.numpy()
        # --- post-processing of the released counts ---
        H = H.reshape(len(candidates), -1, n_classes, n_classes)  # (K, group, label, pred)
        labels = np.arange(n_classes)
        total = np.maximum(H.sum(axis=(1, 2, 3)), 1.0)
        wrong = H.sum(axis=1)[:, labels[:, None] != labels[None, :]].sum(axis=1)
        error = wrong / total
        parts = np.zeros((len(candidates), program.n_parts, n_classes))
        for g in range(H.shape[1]):
            for c in range(n_classes):
                parts[:, program.part_of_cell[g, c]] += H[:, g, c]
        violation = np.array(
            [np.max(program.constraint_values(p, min_count=1.0) - program.bounds) for p in parts]
        )
        feasible = violation <= 0
        score = np.where(feasible, error, np.inf)
        index = int(np.argmin(score)) if feasible.any() else int(np.argmin(violation))
        return index, {"error": error, "violation": violation}

    # -- the solution's predictions ---------------------------------------------
    def _is_mixture(self) -> bool:
        return getattr(self, "iterates_", None) is not None

    def _mixture_proba(self, X) -> np.ndarray:
        """``sum_t w_t onehot(argmax h_t(x))``: how often the mixture predicts each class."""
        check_is_fitted(self, "module_")
        X = check_X(self, X, reset=False)
        if not isinstance(X, np.ndarray):
            X = X.tocsr()
        device = next(self.module_.parameters()).device
        n_classes = len(self.classes_)
        chunks = []
        for start in range(0, X.shape[0], 65536):
            xb = torch.from_numpy(densify(X[start : start + 65536])).to(device)
            out = iterate_outputs(self.module_, self.iterates_, xb)  # (K, chunk, classes)
            onehot = torch.nn.functional.one_hot(out.argmax(dim=2), n_classes).double()
            w = torch.as_tensor(self.iterate_weights_, dtype=torch.float64, device=device)
            chunks.append(torch.einsum("t,tnk->nk", w, onehot).cpu().numpy())
        if not chunks:
            return np.empty((0, n_classes))
        return np.clip(np.concatenate(chunks), 0.0, 1.0)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities; no sensitive features needed.

        ``solution="mixture"``: the probability that the randomised classifier
        predicts each class, ``sum_t w_t 1[argmax h_t(x) = k]`` (as fairlearn's
        ``ExponentiatedGradient``); otherwise the softmax of the model's logits.
        """
        if self._is_mixture():
            return self._mixture_proba(X)
        return super().predict_proba(X)

    def decision_function(self, X) -> np.ndarray:
        """Logit scores; for a mixture, ``predict_proba`` centred (binary: ``p_1 - p_0``)."""
        if not self._is_mixture():
            return super().decision_function(X)
        proba = self._mixture_proba(X)
        return proba[:, 1] - proba[:, 0] if proba.shape[1] == 2 else proba

    def predict(self, X, *, random_state=None) -> np.ndarray:
        """Predicted classes; no sensitive features needed.

        ``solution="mixture"``: each row's class is drawn from :meth:`predict_proba`
        (the randomised classifier whose rates the constraints bound);
        ``random_state=None`` uses the estimator's ``random_state``, so a seeded
        fit predicts reproducibly, as fairlearn's ``ExponentiatedGradient``.
        Otherwise the most probable class.
        """
        if not self._is_mixture():
            return super().predict(X)
        proba = self._mixture_proba(X)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        u = rng.uniform(size=proba.shape[0])
        # the last class when u < p_last (fairlearn's binary draw), then the one before ...
        from_last = (u[:, None] >= np.cumsum(proba[:, ::-1], axis=1)).sum(axis=1)
        drawn = np.maximum(len(self.classes_) - 1 - from_last, 0)
        return self.classes_[drawn]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a mixture's predict draws per row (seeded: reproducible, but a row's class
        # depends on its position), as CGOOReduction's
        tags.non_deterministic = tags.non_deterministic or self.solution == "mixture"
        return tags

    def _accountant_options(self) -> dict:
        return {"accountant": self.accountant}

    def _report_accounting(self, ctx) -> None:
        # the authors' accounting of the same releases: each amplified separately
        self.paper_epsilon_ = epsilon_spent(
            ctx.recorder.build("separate"), ctx.delta, accountant="pld"
        ).epsilon
        if self.calibration == "paper" and self.privacy_spent_.epsilon > self.epsilon * 1.001:
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
        if self.calibration == "paper":
            return self._paper_event(gradient_multiplier, statistics_multiplier, q, steps)
        return self._event(gradient_multiplier, statistics_multiplier, q, steps)

    def _calibration_options(self) -> dict:
        # the authors' accounting is PLD; the sound one uses the chosen accountant
        return {"accountant": "pld" if self.calibration == "paper" else self.accountant}

    def _spent(self, gradient_multiplier, statistics_multiplier, q, steps, delta) -> float:
        event = self._planned_event(gradient_multiplier, statistics_multiplier, q, steps)
        return epsilon_spent(event, delta, **self._calibration_options()).epsilon

    def _hist_multiplier(self, gradient_multiplier: float) -> float:
        if self.histogram_noise_multiplier == "auto":
            return HISTOGRAM_NOISE_RATIO * gradient_multiplier
        return float(self.histogram_noise_multiplier)

    def _one_gaussian_per_step(self) -> bool:
        # a Laplace histogram, or a fixed histogram multiplier: calibrate the gradient's
        return (
            self.histogram_noise == "gaussian"
            and self.histogram_noise_multiplier == "auto"
            and self.calibration == "accountant"
        )

    def _split_joint(self, joint: float) -> float:
        return joint * math.sqrt(1.0 + HISTOGRAM_NOISE_RATIO**-2)

    def _check_budget(self, ctx) -> None:
        if self.histogram_noise_multiplier == "auto":
            return
        statistics_multiplier = float(self.histogram_noise_multiplier)
        q, steps, delta = ctx.sampling_rate, ctx.planned_steps, ctx.delta
        if self._spent(1e6, statistics_multiplier, q, steps, delta) > self.epsilon:
            raise ValueError(
                f"histogram_noise_multiplier={statistics_multiplier:g} alone spends more than "
                f"epsilon={self.epsilon:g} over {steps} steps; increase it or use 'auto'"
            )

    def _paper_plan(self, ctx) -> NoisePlan:
        # the authors' accounting (each release amplified separately), calibrated by PLD
        return calibrated_plan(self, ctx)

    def _post_training_event(self, ctx) -> dp_accounting.DpEvent:
        """The planned event of ``solution="best"``'s evaluation (no-op otherwise)."""
        if not (ctx.private and self.solution == "best"):
            return dp_accounting.NoOpDpEvent()
        return dp_accounting.GaussianDpEvent(selection_noise_multiplier(self.epsilon, ctx.delta))
