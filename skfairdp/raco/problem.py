"""The RaCO-DP Lagrangian as the engine sees it: one private histogram per step, the dual ascent.

Per step, on one Poisson batch:

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
4. the dual variables take a projected ascent step on ``Gamma_hat - (gamma - m)``, a
   step size per constraint scaled to the noise of its estimate; ``m`` is the
   tolerance margin (:meth:`RacoProblem.tolerance_margins`), the sampling error of
   the training rates, from the released set counts.
"""

from __future__ import annotations

import math

import torch

from .._fit.schedules import RACO_MIN_STEPS
from ..engine.iterates import IterateTrack
from ..privacy import EventRecorder, RandomSource, noisy_histogram

# Floor on noisy counts used as denominators: one row.
MIN_COUNT = 1.0

# lr_dual="auto": each constraint's dual step is DUAL_WALK / (sigma_j sqrt(T)), sigma_j the
# std of one step's estimate of its value and T the planned steps (at most LR_DUAL_MAX):
# the noise a multiplier accumulates over the whole run has std DUAL_WALK, whatever the
# noise and the length of the run; see RacoProblem.dual_steps.
DUAL_WALK = 0.15


def pairwise_dual_walk(n_groups: int, pairs: bool) -> float:
    """The accumulated-noise std of each multiplier: ``DUAL_WALK / sqrt(n_groups - 1)``
    when group-parity constraints compare every pair of groups, ``DUAL_WALK`` otherwise.

    A group's rate enters ``2 (n_groups - 1)`` ordered-pair constraints per class (two with
    two groups); their multipliers' noise adds up on it like ``sqrt(n_groups - 1)``, so the
    per-constraint walk is shrunk by that factor to keep the noise force on each group's
    rate what it is with two groups. Measured (zoo, epsilon = 1, 3 seeds): without it a
    4-group HealthInsurance fit at tolerance 0.02 collapsed on one seed (error 0.343, mean
    0.254 against the majority class's 0.199); with it 0.196. Public: the group count.
    """
    if not pairs or n_groups <= 2:
        return DUAL_WALK
    return DUAL_WALK / math.sqrt(n_groups - 1)


LR_DUAL_MAX = 1.0

# tolerance_margin: the margin tightens a bound gamma by at most this share of gamma, so
# the training problem stays as feasible as a bound of gamma / 2 is
MARGIN_CAP = 0.5


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
    margin_z : float, default=0.0
        Standard deviations of the training rates' sampling error by which every
        bound is tightened (:meth:`tolerance_margins`); 0: none.
    sampling_rate : float or None, default=None
        Expected batch size over the training rows (public): the released
        per-batch set counts over it estimate the sets' sizes. Needed when
        ``margin_z > 0``.
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
        margin_z: float = 0.0,
        sampling_rate: float | None = None,
        dual_walk: float = DUAL_WALK,
    ):
        self.S = membership.float()
        self.dual_walk = float(dual_walk)
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
        self.margin_z = float(margin_z)
        if self.margin_z < 0:
            raise ValueError(f"margin_z must be >= 0, got {margin_z!r}")
        if self.margin_z > 0 and not (sampling_rate is not None and 0 < sampling_rate <= 1):
            raise ValueError(
                f"a tolerance margin needs the sampling rate in (0, 1], got {sampling_rate!r}"
            )
        self.sampling_rate = sampling_rate
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
        # constants of the per-step dual steps and margins, computed once
        self._A_sq = (self.A**2).sum(dim=2)
        self._sqrt_steps = math.sqrt(self.planned_steps)
        self._margin_caps = MARGIN_CAP * self.gamma.clamp(min=0.0)
        self.violation_log: list[torch.Tensor] = []
        self.lambda_log: list[torch.Tensor] = []
        self.n_releases = 0
        self.iterates: IterateTrack | None = None
        self.last_dual_steps: torch.Tensor | None = None
        self.last_margins = torch.zeros(self.A.shape[0], device=self.A.device)

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

    def rates(self, H_hat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-set rates ``(M, K)``, floored denominators ``(M, 1)`` and the released set
        counts ``(M,)`` of a released histogram.

        ``"batch"`` denominators: this histogram's set counts, rates clipped to
        [0, 1] (a ratio of two noisy counts). ``"running"``: the mean released
        count so far (this histogram included); rates are then linear in
        ``H_hat``, hence unbiased, and are not clipped.
        """
        sums = self.S @ H_hat
        counts = sums.sum(dim=1, keepdim=True)
        released = counts.squeeze(1).clone()  # denom below may clamp counts in place
        if self.denominators == "batch" or self.histogram_noise is None:
            denom = counts.clamp_(min=MIN_COUNT)
            return (sums / denom).clamp_(0.0, 1.0), denom, released
        total = self.state["count_sum"].unsqueeze(1) + counts
        denom = (total / (self.state["count_steps"] + 1.0)).clamp_(min=MIN_COUNT)
        return sums / denom, denom, released

    def release_batch_statistics(self, outputs, y, part, weights=None):
        if self.dual_rates == "hard":
            rows = hard_predictions(outputs)
        else:
            rows = torch.softmax(outputs * self.tau, dim=1)
        if weights is not None:  # weighted rates: integer weights count as repeated rows
            rows = rows * weights.to(rows.dtype).unsqueeze(1)
        H_hat = self.privatize(soft_histogram(rows, part, self.n_parts))
        # --- everything below is post-processing of H_hat ---
        rates, denom, counts = self.rates(H_hat)
        values = self.A_flat @ rates.reshape(-1)
        # per-part weights at the current lambda (simultaneous descent-ascent)
        scale = self.expected_batch_size
        if scale is None:  # non-private: what the engine divides by
            scale = len(y) if weights is None else float(weights.sum())
        coef = (self.lam @ self.A_flat).view_as(rates).div_(denom).mul_(scale)
        weights = (self.S_T @ coef).index_select(0, part)
        statistics = {"values": values, "counts": counts}
        if self.margin_z > 0:
            running = (self.state["count_sum"] + counts) / (self.state["count_steps"] + 1.0)
            statistics["margins"] = self.tolerance_margins(running)
        if self.lr_dual is None:
            statistics["dual_steps"] = self.dual_steps(denom.squeeze(1))
        return (y, weights), statistics

    def dual_steps(self, denom: torch.Tensor) -> torch.Tensor:
        """Per-constraint dual steps ``min(LR_DUAL_MAX, dual_walk / (sigma_j sqrt(T)))``.

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
        sigma = (self._A_sq @ var).sqrt()  # (J,)
        return (self.dual_walk / (sigma * self._sqrt_steps)).clamp_(max=LR_DUAL_MAX)

    def tolerance_margins(self, running_counts: torch.Tensor) -> torch.Tensor:
        """Per-constraint tightening ``min(MARGIN_CAP gamma_j, z sigma_j)`` of the bounds.

        ``sigma_j = sqrt(sum_m a_jm^2 / (4 n_m))`` bounds the standard deviation of
        the sampling error of constraint ``j``'s value on the training rows
        (``p (1 - p) <= 1/4`` for each rate, ``a_jm^2`` the squared coefficients of
        set ``m`` summed over classes, as in :meth:`dual_steps`): a model fitted to
        meet ``gamma_j`` on the training rows meets it on new rows only up to that
        error, which grows as a group gets small. ``n_m`` is the set's size
        estimated from ``running_counts`` (the mean released count per batch, over
        the sampling rate, at least one row): released values only, never the
        exact counts. The margin is non-increasing in every ``n_m`` and capped at
        ``MARGIN_CAP`` times the bound (a bound ``<= 0`` is not tightened).
        """
        if self.margin_z == 0:
            return torch.zeros_like(self.gamma)
        rows = (running_counts / self.sampling_rate).clamp(min=MIN_COUNT)
        sigma = (self._A_sq @ (0.25 / rows)).sqrt()
        return torch.minimum(self.margin_z * sigma, self._margin_caps)

    def apply_statistics(self, statistics: dict) -> None:
        """Dual ascent on the released values; running counts (post-processing of ``H_hat``)."""
        self.dual_update(
            statistics["values"],
            statistics.get("counts"),
            statistics.get("dual_steps"),
            statistics.get("margins"),
        )
        if self.iterates is not None:
            self.iterates.step()

    def dual_update(
        self,
        values: torch.Tensor,
        counts: torch.Tensor | None = None,
        steps: torch.Tensor | None = None,
        margins: torch.Tensor | None = None,
    ) -> None:
        """``lambda <- clip(lambda + lr_dual (Gamma_hat - (gamma - margins)), 0, dual_bound)``.

        ``steps``: per-constraint step sizes replacing ``lr_dual``; ``counts``:
        the step's released set counts, added to the running ones; ``margins``:
        the tolerance margins (:meth:`tolerance_margins`). The logged violation is
        against the bounds ``gamma`` themselves.
        """
        violation = values - self.gamma
        step = self.lr_dual if steps is None else steps
        self.last_dual_steps = steps
        ascent = violation if margins is None else violation + margins
        if margins is not None:
            self.last_margins = margins
        lam = (self.lam + step * ascent).clamp_(min=0.0, max=self.dual_bound)
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
