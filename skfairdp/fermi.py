"""DPFermiClassifier: DP-FERMI (Lowy, Gupta & Razaviyayn, ICLR 2023).

min over theta, max over W of  mean_i [ loss_i(theta) + lambda * psi_i(theta, W) ]
with the ERMI per-sample term psi (see :mod:`skfairdp.ermi`), solved by noisy
simultaneous gradient descent (theta) and projected ascent (W) on Poisson
batches. What this module adds to the engine: the per-sample objective, the
group-prior release, and how W moves.
"""

from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np
import torch
from dp_accounting import NoOpDpEvent
from sklearn.utils._param_validation import Interval, StrOptions

from . import ermi
from .base import (
    POSITIVE,
    Deprecated,
    NoisePlan,
    Param,
    PrivateClassifierBase,
    declare_parameters,
)
from .fairness import check_min_group_fraction
from .privacy import gaussian_release_event, joint_noise_multiplier, noisy_histogram
from .privacy.accountant import PLD_DISCRETIZATION, resolve_accountant
from .privacy.analytic import gaussian_noise_multiplier
from .privacy.closed_form import theorem_3_3_preconditions, theorem_3_3_sigmas

FAIRNESS_NOTIONS = ("demographic_parity", "equalized_odds", "equal_opportunity")
# Share of epsilon given to the one-off noisy group histogram when p_S is not public.
GROUP_PRIOR_BUDGET_SHARE = 0.05
# W's noise multiplier relative to theta's on the same batch: W is small (k x l)
# and averages noise over many steps, so it tolerates more.
DUAL_NOISE_RATIO = 2.0
# dual_bound="auto" is this margin times the largest norm of W's maximiser.
DUAL_BOUND_MARGIN = 1.1
# Largest W (entries) whose per-sample gradients are materialised as dense rows.
DENSE_W_LIMIT = 4096
# lr_dual="auto" is at most this fraction of the paper's 1 / beta_w = 1 / (2 lambda): stable
# for every lambda, and W averages its noisy per-batch gradients over ~10 steps.
AUTO_LR_DUAL_FRACTION = 0.1
# ... and, with privacy, small enough that W's noise moves a psi coefficient by at most
# DUAL_NOISE_TOLERANCE (std) in a W column whose predicted class has share DUAL_NOISE_SHARE.
DUAL_NOISE_TOLERANCE, DUAL_NOISE_SHARE = 1.0, 0.1
# lr_dual="auto": W is the best response to a running mean of the released batch histograms
# of (group, prediction), with rate beta = 2 (TOL p_min / sigma)^2 (the noise on a group's
# released rate is then ~TOL), between MIN_DUAL_MEMORY_FRACTION of the run's steps
# (at most a quarter of the run, so W follows the model) and MAX_DUAL_RATE (at least 20 steps).
DUAL_RATE_TOLERANCE = 0.01
MAX_DUAL_RATE, MIN_DUAL_MEMORY_FRACTION = 0.05, 4.0
# lambda_0 of the theta step: unless the record unit's clip bounds each row, theta
# descends (loss + lambda psi) / (1 + lambda / lambda_0) (see ErmiProblem).
FAIRNESS_WEIGHT_SCALE = 8.0
# iterate="average": the mean of the parameters over this last fraction of the steps.
AVERAGE_TAIL = 0.5
# batch_size="auto" and max_epochs="auto" (see auto_batch_size, auto_max_epochs)
BATCH_FRACTION_INV = 128
MIN_BATCH, MAX_BATCH = 32, 256
MIN_EPOCHS, MIN_STEPS = 40, 1000
# max_grad_norm="auto" under "record": n * epsilon / 10,000, between 1 and 3
CLIP_RANGE, CLIP_PER_N_EPSILON = (1.0, 3.0), 1e-4


def auto_batch_size(n_samples: int) -> int:
    """``batch_size="auto"``: ``n / 128`` rounded, between 32 and 256."""
    return int(min(MAX_BATCH, max(MIN_BATCH, round(n_samples / BATCH_FRACTION_INV))))


def auto_max_epochs(n_samples: int, batch_size: int) -> int:
    """``max_epochs="auto"``: 40 passes, or more to take at least 1,000 steps."""
    steps_per_epoch = max(1, math.ceil(n_samples / batch_size))
    return int(max(MIN_EPOCHS, math.ceil(MIN_STEPS / steps_per_epoch)))


def auto_max_grad_norm(n_samples: int, epsilon: float, privacy_unit: str) -> float:
    """``max_grad_norm="auto"``: ``n * epsilon / 10,000`` in ``[1, 3]`` ("record"), else 1.

    The noise on the mean gradient relative to the clip falls like ``1 / (n epsilon)``:
    with much data a larger clip keeps more of each row's gradient (Adult, epsilon=1:
    3 beat 1) while on little data it only adds noise (German credit, 750 rows: 1
    beat 3). Under ``"sensitive"`` the clip bounds the penalty's force only; 1.
    """
    if privacy_unit == "sensitive" or math.isinf(epsilon):
        return CLIP_RANGE[0]
    return float(min(CLIP_RANGE[1], max(CLIP_RANGE[0], n_samples * epsilon * CLIP_PER_N_EPSILON)))


def auto_dual_step(batch_size: float, dual_noise_multiplier: float, max_pinv: float) -> float:
    """``lr_dual * lambda`` of ``lr_dual="auto"``: ``min(0.05, 0.1 (m / (2 P^2 z_W))^2)``.

    W's ascent is an average of noisy per-batch gradients with memory
    ``1 / (2 a p)`` steps (``a = lr_dual * lambda``, ``p`` the share of a predicted
    class). Its noise per entry is ``(z_W P / m) sqrt(a / p)`` (``P = max_r
    p_S(r)^(-1/2)``), which moves a psi coefficient ``2 W[s, j] P`` by
    ``2 P^2 (z_W / m) sqrt(a / p)``; ``a`` is the largest step that keeps this at most
    1 for ``p = 0.1``, capped at 0.05. With much data (Adult: ``m = 256``,
    ``z_W ~ 5``, ``P = 1.8``) the cap holds; with a rare group or few rows the step
    shrinks, so W's noise cannot push theta harder than its signal (Bank Marketing,
    5% of rows in one group, epsilon=1: the violation rose from 0.07 to 0.17 with
    lambda at a = 0.05, it falls to 0.05 at a = 0.003).
    """
    if not math.isfinite(dual_noise_multiplier) or dual_noise_multiplier <= 0:
        return AUTO_LR_DUAL_FRACTION / 2.0
    quiet = DUAL_NOISE_TOLERANCE * batch_size / (2.0 * max_pinv**2 * dual_noise_multiplier)
    return float(min(AUTO_LR_DUAL_FRACTION / 2.0, DUAL_NOISE_SHARE * quiet**2))


def auto_dual_rate(n_steps: int, noise_std: float, min_prior: float) -> float:
    """``beta`` of ``lr_dual="auto"``: the rate of W's running mean of released histograms.

    A released batch histogram (divided by the expected batch size ``m``) carries
    noise of std ``sigma = z_W / m`` per cell; its running mean with rate ``beta``
    has ``sigma sqrt(beta / 2)``, and a rate ``P(Yhat=j | S=r)`` of a group of share
    ``p_min`` read off it ``sigma sqrt(beta / 2) / p_min``. The rule takes the rate
    that keeps that at :data:`DUAL_RATE_TOLERANCE`, but averages over at most a
    quarter of the run (``beta >= 4 / T``) and over at least 20 steps
    (``beta <= 0.05``, also the rate without noise). On Adult (epsilon=1) the
    tolerance is met within about 100 steps; on German credit (750 rows) it cannot
    be, and the shrinkage of :class:`ErmiProblem` takes over.
    """
    ceiling = MAX_DUAL_RATE
    floor = min(ceiling, MIN_DUAL_MEMORY_FRACTION / max(1, int(n_steps)))
    if not math.isfinite(noise_std) or noise_std <= 0:
        return ceiling
    quiet = 2.0 * (DUAL_RATE_TOLERANCE * float(min_prior) / float(noise_std)) ** 2
    return float(min(ceiling, max(floor, quiet)))


def shrunk_best_response(
    H: torch.Tensor, variance: torch.Tensor, pinv: torch.Tensor
) -> torch.Tensor:
    """W from a (noisy) joint histogram, each column shrunk towards independence.

    ``H[b, r, j]`` estimates ``P(block=b, S=r, Yhat=j)`` (up to a factor) with
    independent noise of variance ``variance`` per cell. The maximiser of the psi
    terms is ``W*[b, r, j] = P(S=r | Yhat=j, b) / sqrt(p_S(r | b))``. Each column's
    conditional rates ``P_hat(. | j)`` are moved towards the block's pooled group
    shares ``q`` (where every column equal means no force on theta) by the
    positive-part James-Stein gain

        g_j = max(0, 1 - E[noise part of D_j] / D_j),   D_j = sum_r (P_hat(r|j) - q_r)^2 / p_r,

    with the noise part from the delta method (``variance / T_j^2`` times
    ``(1 - P_r)^2 + (k - 1) P_r^2`` for the column total ``T_j``). A dependence
    that the released statistics cannot tell from their noise moves theta by
    (about) nothing; a clear one is kept whole. Post-processing of released values.
    """
    n_blocks, k, l = H.shape
    Hp = H.clamp(min=0.0)
    totals = Hp.sum(dim=1, keepdim=True)  # (b, 1, l)
    safe = torch.where(totals > 0, totals, torch.ones_like(totals))
    rates = torch.where(totals > 0, Hp / safe, torch.zeros_like(Hp))  # P_hat(r | j)
    pooled = Hp.sum(dim=2, keepdim=True)
    pooled_total = pooled.sum(dim=1, keepdim=True)
    priors = pinv.pow(-2).unsqueeze(2)  # (b, k, 1)
    q = torch.where(pooled_total > 0, pooled / pooled_total.clamp(min=1e-12), priors)
    # a column with no mass says nothing: it stays at the pooled shares
    rates = torch.where(totals > 0, rates, q.expand_as(rates))
    deviation = ((rates - q) ** 2 / priors).sum(dim=1, keepdim=True)
    noise = (variance / safe**2) * ((1.0 - rates) ** 2 + (k - 1) * rates**2)
    noise = (noise / priors).sum(dim=1, keepdim=True)
    gain = torch.where(
        deviation > 0, (1.0 - noise / deviation.clamp(min=1e-30)).clamp(min=0.0), 0.0
    )
    gain = torch.where(totals > 0, gain, torch.zeros_like(gain))
    shrunk = q + gain * (rates - q)
    return shrunk * pinv.unsqueeze(2)


def objective_scales(
    fairness_weight: float, private: bool, privacy_unit: str
) -> tuple[float, float]:
    """Factors of the loss and of ``lambda psi`` in theta's objective.

    The theta-gradient of ``loss + lambda psi`` grows with ``lambda`` (the penalty's
    curvature is ``lambda`` times ERMI's), so with a fixed step a large ``lambda``
    diverges, and a clipped penalty stops gaining on an unclipped loss. Each part
    that no clip bounds is divided by ``1 + lambda / lambda_0`` (``lambda_0 =``
    :data:`FAIRNESS_WEIGHT_SCALE`); a clipped part is bounded by its clip already:

    - ``epsilon=inf``: nothing is clipped; both parts are divided (the step shrinks,
      no stationary point moves);
    - private, ``privacy_unit="sensitive"``: ``lambda psi`` is clipped, the exact loss
      is divided (its share falls as ``lambda`` grows);
    - private, ``privacy_unit="record"``: each whole row is clipped; nothing is
      divided (the clip already scales the loss's share down as ``lambda`` grows).
    """
    factor = 1.0 / (1.0 + float(fairness_weight) / FAIRNESS_WEIGHT_SCALE)
    if not private:
        return factor, factor
    return (factor, 1.0) if privacy_unit == "sensitive" else (1.0, 1.0)


class TailAverage:
    """Running mean of a module's trainable parameters over the last steps of a run.

    ``step()`` after every optimizer step; the steps after ``start`` are summed.
    Post-processing of the iterates (which are released), so it costs no privacy.
    """

    def __init__(self, module: torch.nn.Module, total_steps: int, tail: float = AVERAGE_TAIL):
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.start = min(int(total_steps) - 1, int(math.floor(total_steps * (1.0 - tail))))
        self.t = 0
        self.n = 0
        self.sums = [torch.zeros_like(p, dtype=torch.float64) for p in self.params]

    def step(self) -> None:
        self.t += 1
        if self.t <= self.start:
            return
        self.n += 1
        with torch.no_grad():
            for total, p in zip(self.sums, self.params):
                total.add_(p.detach())

    def load(self) -> None:
        """Replace the module's parameters by their mean (no-op if no step was summed)."""
        if self.n == 0:
            return
        with torch.no_grad():
            for total, p in zip(self.sums, self.params):
                p.copy_((total / self.n).to(p.dtype))


def w_clip_norm(fairness_weight: float, pinv: torch.Tensor) -> float:
    """Clipping norm of one row's W-gradient: ``lambda * 2 * max pinv``.

    Row i's W-gradient is ``2 w_i (pinv_i e_{s_i} 1^T - W[b_i]) diag(F_i)``. Its
    s-dependent part has norm ``<= 2 pinv_i ||F_i|| <= 2 max pinv``: the exact bound
    under ``privacy_unit="sensitive"``. Under ``"record"`` the worst case over the
    ball adds ``2 * dual_bound``, but at ``W = 0`` and at the independence optimum
    (``W*[r, j] = sqrt(p_r)``, column norm ``sqrt(pinv^2 - 1)``) the whole row is
    within ``2 max pinv`` too, so we clip there: clipping sets the sensitivity
    either way, and the loose bound more than doubled W's noise.
    """
    return float(fairness_weight) * 2.0 * float(pinv.max())


class ErmiProblem:
    """The DP-FERMI min-max problem as the engine sees it (one object per fit)."""

    def __init__(
        self,
        *,
        W: torch.Tensor,
        pinv: torch.Tensor,
        fairness_weight: float,
        dual_bound: float,
        lr_dual: float,
        privacy_unit: str,
        all_active: bool = True,
        dual_rates: str = "soft",
        scales: tuple[float, float] = (1.0, 1.0),
        average: TailAverage | None = None,
        dual_rate: float | None = None,
        dual_noise_std: float = 0.0,
    ):
        self.state = {"W": W}
        # dual_rate None: projected gradient ascent with step lr_dual (the paper's W update);
        # a float: W is the shrunk best response to a running mean, of that rate, of the
        # released batch histograms of (block, group, prediction) (lr_dual="auto").
        self.best_response = dual_rate is not None
        self.dual_rate = float(dual_rate) if self.best_response else None
        self.dual_noise_std = float(dual_noise_std)
        if self.best_response:
            zeros = torch.zeros_like(W)
            self.state = {"W": W, "H": zeros, "V": zeros.new_zeros(()), "t": zeros.new_zeros(())}
        self.hard_dual = dual_rates == "hard"
        self.loss_scale, self.penalty_scale = map(float, scales)
        self.average = average
        self.pinv = pinv
        self.lam = float(fairness_weight)
        self.dual_bound = float(dual_bound)
        self.lr_dual = float(lr_dual)
        self.sensitive_unit = privacy_unit == "sensitive"
        # whether every sample has a psi term (not so for equal opportunity, or lambda = 0)
        self.all_active = bool(all_active) and self.lam > 0
        self._probabilities = (None, None)
        # record: the whole objective is private; sensitive: only the s-dependent part.
        # (with lambda = 0 the s-dependent part is identically zero: nothing to noise)
        self.private_primal = (False, self.lam > 0) if self.sensitive_unit else (True,)
        # best response: each row adds (at most) a unit vector to the histogram
        self.dual_clip = 1.0 if self.best_response else w_clip_norm(self.lam, pinv)

    @property
    def W(self) -> torch.Tensor:
        """The current ascent variable (``state["W"]``)."""
        return self.state["W"]

    def prepare_batch(self, codes, weights):
        y, s, block = codes.unbind(dim=1)
        weight, dual_weight = weights.unbind(dim=1)
        own, shared = ermi.psi_coefficients(self.W, self.pinv, s, block)
        return y, s, block, weight, dual_weight, own, shared

    def primal_objectives(self, outputs, y, s, block, weight, dual_weight, own, shared):
        """Per-sample ``loss_scale * loss_i`` and ``penalty_scale * weight_i * psi_i``.

        (Summed into one objective under ``"record"``; see :func:`objective_scales`.)

        Under ``"sensitive"`` the whole psi term is the private objective (clipped as
        one): its ``s``-dependent part and the part that is not cancel at independence,
        and clipping only the first made a large ``lambda`` push every row one way.
        """
        log_p = torch.log_softmax(outputs, dim=1)
        F = log_p.exp()
        loss = -log_p.gather(1, y.unsqueeze(1)).squeeze(1)
        psi = (F * (own + shared)).sum(dim=1) - 1.0
        public = self.loss_scale * loss
        private = self.penalty_scale * weight * psi
        objectives = (public, private) if self.sensitive_unit else (public + private,)
        return objectives, {"loss": loss, "psi": psi * (weight != 0)}

    def primal_output_gradients(self, outputs, y, s, block, weight, dual_weight, own, shared):
        """:meth:`primal_objectives` differentiated by hand in the logits.

        With ``F = softmax(z)``: ``d loss / dz = F - e_y`` and, for ``<c, F>``,
        ``d/dz = F * (c - <c, F>)``; the engine then needs no autograd pass.
        """
        log_p = torch.log_softmax(outputs, dim=1)
        F = log_p.exp()
        self._probabilities = (outputs, F)  # the dual step on the same outputs reuses F
        loss = -log_p.gather(1, y.unsqueeze(1)).squeeze(1)
        d_loss = F.scatter_add(1, y.unsqueeze(1), F.new_full((len(y), 1), -1.0))
        w = (self.penalty_scale * weight).unsqueeze(1)
        c = own + shared
        psi_plus_one = (F * c).sum(dim=1)
        d_public = d_loss if self.loss_scale == 1.0 else self.loss_scale * d_loss
        d_private = w * F * (c - psi_plus_one.unsqueeze(1))
        grads = (d_public, d_private) if self.sensitive_unit else (d_public + d_private,)
        psi = psi_plus_one - 1.0
        if not self.all_active:
            psi = psi * (weight != 0)
        return grads, {"loss": loss, "psi": psi}

    def dual_contributions(
        self, outputs, y, s, block, weight, dual_weight, own, shared, weights=None
    ):
        if self.lam == 0.0:
            # no W step; the (zero) update still calls dual_step, which averages iterates
            return (self.W.new_zeros(self.W.numel()), None) if self.average else None
        if outputs is None:
            return None, self.W.new_zeros((0, self.W.numel()))
        cached_outputs, F = self._probabilities
        if cached_outputs is not outputs:
            F = torch.softmax(outputs, dim=1)
        if self.hard_dual:
            # W ascends on the rates of the predictions users get: one-hot rows, whose
            # norm (1) is within the bound of any probability row's (<= 1).
            F = torch.zeros_like(F).scatter_(1, F.argmax(dim=1, keepdim=True), 1.0)
        if self.best_response:
            return None, self._histogram_rows(F, s, block, dual_weight)
        # a small W is cheapest as dense per-sample rows; a large one stays factored
        dense = self.W.numel() <= DENSE_W_LIMIT
        # W ascends on lambda * psi: the label weights of the primal side rescale each
        # block's objective, which moves no block's maximiser (see DPFermiClassifier).
        args = (F, self.W, self.pinv, s, block, dual_weight)
        if self.sensitive_unit:
            rows = torch.ones_like(weight) if weights is None else weights.to(weight.dtype)
            public = ermi.WGradients(*args, include="shared").weighted_sum(rows)
            own = ermi.w_gradient_rows(*args, include="own") if dense else None
            return public, own if dense else ermi.WGradients(*args, include="own")
        return None, ermi.w_gradient_rows(*args) if dense else ermi.WGradients(*args)

    def _histogram_rows(self, F, s, block, dual_weight):
        """Row i: ``F_i`` (one-hot when hard) in cell ``(block_i, s_i, .)`` of a zero
        ``(n_blocks, k, l)`` histogram, flattened; zero for inactive rows.

        Norm ``||F_i|| <= 1``: adding or removing a row moves the batch histogram by at
        most 1, replacing its ``s`` by at most ``sqrt(2) <= 2`` (the replace-one bound
        of a unit clip). In the hard case the W-gradient of the batch's ``lambda psi``
        is a linear function of this histogram, so nothing is lost by releasing it.
        """
        n_blocks, k, l = self.W.shape
        active = (dual_weight != 0).to(F.dtype).unsqueeze(1)
        rows = F.new_zeros((F.shape[0], n_blocks * k, l))
        cell = block * k + s if n_blocks > 1 else s
        rows[torch.arange(F.shape[0], device=F.device), cell] = F * active
        return rows.reshape(F.shape[0], n_blocks * k * l)

    def dual_step(self, gradient):
        """Update W from the step's released dual sum (already divided by the batch size).

        Ascent (``lr_dual`` a float): ``state["W"]`` is replaced by
        ``P(W + lr_dual * gradient)``. Best response (``lr_dual="auto"``): the released
        histogram joins a bias-corrected running mean of rate ``dual_rate``, whose noise
        variance per cell is tracked exactly from the public noise std, and W is
        :func:`shrunk_best_response` to it. Called after the optimizer's step, so it is
        also where the iterates are averaged.
        """
        if self.average is not None:
            self.average.step()
        if self.lam == 0.0:
            return
        if self.best_response:
            beta, state = self.dual_rate, self.state
            H = torch.add(state["H"] * (1.0 - beta), gradient.view_as(self.W), alpha=beta)
            V = state["V"] * (1.0 - beta) ** 2 + (beta * self.dual_noise_std) ** 2
            t = state["t"] + 1.0
            corrected = 1.0 - (1.0 - beta) ** t  # the running mean starts at zero
            W = shrunk_best_response(H / corrected, V / corrected**2, self.pinv)
            self.state = {"W": W, "H": H, "V": V, "t": t}
            return
        W = torch.add(self.W, gradient.view_as(self.W), alpha=self.lr_dual)
        self.state = {"W": ermi.project_frobenius(W, self.dual_bound)}


class DPFermiClassifier(PrivateClassifierBase):
    """Differentially private fair classifier by DP-FERMI.

    Minimises cross-entropy plus ``fairness_weight`` times the exponential Rényi
    mutual information (ERMI) between predictions and groups, through its
    min-max reformulation, with noisy stochastic gradient descent-ascent on
    Poisson-sampled batches (Lowy, Gupta & Razaviyayn, "Stochastic
    Differentially Private and Fair Learning", ICLR 2023).

    Parameters
    ----------
    fairness : {"demographic_parity", "equalized_odds", "equal_opportunity"}
        Independence notion: ``Yhat ⟂ S``, ``Yhat ⟂ S | Y`` (one W per label), or
        the positive-label part of the latter (``classes_[-1]``).
    fairness_weight : float, default=1.0
        ``lambda >= 0``, the weight of ERMI against the loss (documented range 0 to
        64; try 4 to 16, see doc/dpfermi.md). With 0 the estimator is DP-SGD and
        needs no groups.
    epsilon : float, default=1.0
        Target epsilon; ``np.inf`` trains without noise or clipping (shuffled
        fixed-size batches) and reports ``privacy_spent_ == (inf, 0.0)``.
    delta : "auto" or float, default="auto"
        Target delta; ``"auto"`` is ``0.1/n`` rounded down to one digit.
    privacy_unit : {"record", "sensitive"}, default="record"
        ``"record"``: add/remove one row ``(x, s, y)``; the whole per-sample
        gradient is clipped and noised. ``"sensitive"``: replace one row's
        sensitive attribute with ``x, y`` public; only the ``s``-dependent part
        of the gradients is clipped and noised, the loss gradient is exact.
    max_grad_norm : "auto" or float, default="auto"
        Clipping norm ``C`` of the per-sample theta-gradient (record: of
        ``loss_i + lambda psi_i``; sensitive: of ``lambda psi_i``, the loss being
        exact). ``"auto"``: ``n * epsilon / 10,000`` between 1 and 3 under
        ``"record"``, 1 under ``"sensitive"`` (:func:`auto_max_grad_norm`).
    max_sample_weight : float, default=1.0
        Public bound on ``fit``'s ``sample_weight`` (a private fit rejects larger
        weights). Each row's clipped contributions are multiplied by its weight,
        so with ``sample_weight`` every sensitivity (theta- and W-gradients, the
        group histogram) is scaled by this bound; without it, it changes nothing.
        See doc/privacy.md.
    noise_multiplier : None or float, default=None
        ``None`` calibrates the noise to ``(epsilon, delta)`` for ``max_epochs``
        epochs. A float fixes theta's noise multiplier (W's is twice it) and
        trains for the largest number of steps whose event stays within
        ``(epsilon, delta)``, at most ``max_epochs`` epochs (the oracle contract,
        doc/design.md). Not with ``calibration="paper"``.
    dual_bound : "auto" or float, default="auto"
        Bound on the dual variable: the radius of the Frobenius ball that W
        (each block) is projected on; ``"auto"`` is
        ``1.1 * sqrt(l) * max_r p_S(r)^(-1/2)`` with the (released or public,
        rho-clamped) priors, which contains the maximiser for every theta and
        is at most ``1.1 * sqrt(l / rho)``.
    rho : float, default=0.05
        Public lower bound on every group's frequency (within each label for
        equalized odds). Group priors are clamped at ``rho`` (so the sensitivity
        bounds hold on every dataset) and a released prior below it is an error.
    group_priors : None, array-like or dict, default=None
        Public group frequencies ``p_S`` (length ``k``, in the order of
        ``group_encoder_.group_labels_``, or a mapping label -> frequency). For
        conditional notions, a mapping class -> such priors. ``None`` releases
        them once as a noisy histogram from 5% of epsilon.
    lr : float, default=0.1
        Learning rate of the theta optimizer (with ``max_grad_norm=1`` a step
        moves theta by at most ``lr`` plus noise).
    lr_dual : "auto" or float, default="auto"
        How W moves. ``"auto"``: W is the best response (the exact maximiser of
        the psi terms) to a running mean of the released batch histograms of
        (group, prediction), each W column shrunk towards independence by a
        James-Stein gain computed from the histograms' known noise, so that a
        dependence the released statistics cannot tell from noise puts no force
        on theta (:func:`shrunk_best_response`); the running mean's rate is
        :func:`auto_dual_rate`. A float: the paper's projected gradient ascent
        with that step size, applied to ``lambda`` times the W-gradient. The
        batch objective is a concave quadratic in W with Hessian
        ``-2 lambda diag(p(Yhat))``, so the ascent is stable only while
        ``lr_dual * 2 * lambda * max_j p(Yhat=j) < 2``.
    dual_rates : {"hard", "soft"}, default="hard"
        What W's ascent sees: the one-hot hard predictions (the rates users are
        judged on; the model's step stays on probabilities) or the paper's soft
        probabilities. Same clip, noise and accounting.
    batch_size : "auto" or int, default="auto"
        Expected batch size ``m``; the sampling rate is ``m / n``. ``"auto"``:
        ``n / 128`` between 32 and 256 (:func:`auto_batch_size`).
    max_epochs : "auto" or int, default="auto"
        Number of expected passes; ``T = max_epochs * ceil(n / m)`` steps.
        ``"auto"``: 40, or more to take 1,000 steps (:func:`auto_max_epochs`).
    iterate : {"average", "last", "random"}, default="average"
        Return the mean of the parameters over the last half of the steps, the
        last iterate, or the theorem's uniformly random one (all post-processing).
    calibration : {"accountant", "paper"}, default="accountant"
        ``"accountant"``: the noise multiplier is the smallest for which the
        executed event (histogram + T joint theta/W releases) meets
        ``(epsilon, delta)``. ``"paper"``: Theorem 3.3's closed-form sigmas
        (preconditions checked, warning when they fail); ``privacy_spent_`` is
        still what the accountant says the executed event costs.
    accountant : {"auto", "rdp", "pld"}, default="auto"
        RDP for ``privacy_unit="record"``, PLD for ``"sensitive"``.
    module : None, nn.Module class or instance, default=None
        ``None`` builds logistic regression (or an MLP with
        ``hidden_layer_sizes``); a class receives ``module__*`` parameters.
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers of the default module.
    optimizer : torch.optim.Optimizer class, default=torch.optim.SGD
        Receives ``lr`` and ``optimizer__*`` parameters.
    sensitive_values : None or list, default=None
        Public domain of the sensitive feature(s), so that which groups exist
        is not learned from private data.
    callbacks : None or list, default=None
        skorch-style callbacks.
    random_state : None, int or RandomState, default=None
        Seeds initialisation, sampling and noise (for experiments only).
    secure_mode : bool, default=False
        Draw sampling and noise from the OS CSPRNG.
    device : str, default="cpu"
        Torch device.
    n_jobs : int or None, default=None
        torch intra-op threads during ``fit`` (restored after): ``None`` is 1,
        the fastest for small tabular models; ``-1`` uses all CPUs.
    record_private_diagnostics : bool, default=False
        Also record the exact per-epoch training loss (and objective terms) in
        ``history_``. Computed on raw training data and NOT private: it warns,
        and the model should then not be shipped with its history.
    verbose : int, default=0
        1: progress bar over epochs; 2: also over steps.
    w_radius : "auto" or float, default="deprecated"
        Former name of ``dual_bound``.

        .. deprecated:: 0.1
            ``w_radius`` was renamed ``dual_bound`` in 0.1 and will be removed in 0.2.
    lr_w : "auto" or float, default="deprecated"
        Former name of ``lr_dual``.

        .. deprecated:: 0.1
            ``lr_w`` was renamed ``lr_dual`` in 0.1 and will be removed in 0.2.
    **kwargs
        ``module__*`` and ``optimizer__*`` parameters.

    Attributes
    ----------
    classes_ : ndarray
    module_ : torch.nn.Module
    W_ : ndarray of shape (n_blocks, n_groups, n_classes)
        Final ascent variable.
    batch_size_, max_epochs_, max_grad_norm_, lr_dual_ : int, int, float, float
        The values the fit used (``"auto"`` resolved; with ``lr_dual="auto"``,
        ``lr_dual_`` is the rate of W's running mean of released histograms).
    objective_scales_ : tuple of float
        Factors of the loss and of ``lambda psi`` in theta's objective: each part
        no clip bounds is divided by ``1 + lambda / 8`` (:func:`objective_scales`).
    group_encoder_ : GroupEncoder or None
    group_priors_ : ndarray of shape (n_blocks, n_groups)
        Priors used (released noisily or public), before clamping at ``rho``.
    label_weights_ : ndarray of shape (n_classes,)
        Weight of each class's psi terms in theta's objective: ``1 / (L p_Y(y))``
        for the conditional notions (each label's ERMI counts equally; ``p_Y``
        released with the priors, or exact under ``privacy_unit="sensitive"``),
        ones for demographic parity.
    privacy_spent_ : PrivacySpent
        ``(epsilon, delta)`` of :attr:`dp_event_` by the accountant.
    dp_event_ : dp_accounting.DpEvent
        What the fit released.
    noise_multiplier_ : float
        Theta-noise std over ``max_grad_norm``.
    dual_noise_multiplier_ : float
        W-noise std over W's clipping norm.
    effective_noise_multiplier_ : float
        Joint multiplier of the per-step releases.
    history_ : skorch.history.History
        Per epoch: ``loss``, ``psi`` (ERMI surrogate at the current W), ``epsilon``
        spent so far, ``steps``, ``dur``. Loss and psi are computed on raw
        training batches and are NOT covered by the privacy guarantee.
    n_steps_ : int
    """

    _parameters = declare_parameters(
        "privacy_unit",
        "iterate",
        "calibration",
        "accountant",
        "sensitive_values",
        own={
            "fairness": Param("demographic_parity", [StrOptions(set(FAIRNESS_NOTIONS))]),
            "fairness_weight": Param(1.0, [Interval(Real, 0, None, closed="left")]),
            "dual_bound": Param("auto", [StrOptions({"auto"}), POSITIVE]),
            "rho": Param(0.05, [Interval(Real, 0, 0.5, closed="right")]),
            "group_priors": Param(None, [None, "array-like", dict]),
            "lr_dual": Param("auto", [StrOptions({"auto"}), POSITIVE]),
            "dual_rates": Param("hard", [StrOptions({"hard", "soft"})]),
        },
        defaults={
            "max_epochs": "auto",
            "batch_size": "auto",
            "max_grad_norm": "auto",
            "iterate": "average",
        },
        positional=("fairness", "fairness_weight"),
        deprecated={"w_radius": Deprecated(new="dual_bound"), "lr_w": Deprecated(new="lr_dual")},
        also_accept={
            "batch_size": [StrOptions({"auto"})],
            "max_epochs": [StrOptions({"auto"})],
            "iterate": [StrOptions({"average"})],
            "max_grad_norm": [StrOptions({"auto"})],
        },
    )

    # -- hooks of the fit template ----------------------------------------------
    def _training_schedule(self, n_samples: int) -> tuple[int, int]:
        """``batch_size`` and ``max_epochs``, ``"auto"`` resolved from ``n_samples``.

        See :func:`auto_batch_size` and :func:`auto_max_epochs`; the values used are
        stored as ``batch_size_`` and ``max_epochs_``.
        """
        batch_size = self.batch_size
        if batch_size == "auto":
            batch_size = auto_batch_size(n_samples)
        max_epochs = self.max_epochs
        if max_epochs == "auto":
            max_epochs = auto_max_epochs(n_samples, int(batch_size))
        return int(batch_size), int(max_epochs)

    def _clip_norm(self, ctx) -> float:
        """``max_grad_norm``, ``"auto"`` resolved by :func:`auto_max_grad_norm`."""
        return self._resolved_clip(ctx.n_samples)

    def _resolved_clip(self, n_samples: int) -> float:
        if self.max_grad_norm == "auto":
            return auto_max_grad_norm(n_samples, float(self.epsilon), self.privacy_unit)
        return float(self.max_grad_norm)

    def _check_params(self) -> None:
        if self.noise_multiplier is not None and self._param("calibration") == "paper":
            raise ValueError(
                "noise_multiplier fixes the noise, calibration='paper' derives it from "
                "Theorem 3.3: set one of them (noise_multiplier=None, or calibration="
                "'accountant', which then caps the steps to the budget)"
            )

    def _encode_groups(self, sensitive_features, n_samples):
        required = (
            "sensitive_features is required when fairness_weight > 0: pass "
            "fit(X, y, sensitive_features=...) (with metadata routing enabled inside a "
            "Pipeline or GridSearchCV), or set fairness_weight=0."
            if self.fairness_weight > 0
            else None
        )
        return self._encode_sensitive(sensitive_features, n_samples, required)

    def _upfront_releases(self, ctx):
        """Group priors (one noisy histogram unless public) and label weights; W's ball."""
        n, n_classes, private = ctx.n_samples, ctx.n_classes, ctx.private
        lam = float(self.fairness_weight)
        n_groups = self.group_encoder_.n_groups_ if self.group_encoder_ is not None else 1
        block, active, n_blocks = self._blocks(ctx.y, n_classes)
        rho = float(self.rho)
        sensitive_unit = self.privacy_unit == "sensitive"
        uses_groups = lam > 0
        releases_priors = uses_groups and self.group_priors is None
        conditional = uses_groups and self.fairness != "demographic_parity"
        # label frequencies (for the label weights) are private only under "record"
        releases_histogram = private and (releases_priors or (conditional and not sensitive_unit))
        statistics_multiplier = math.inf
        if releases_histogram:
            # Sized by the exact Gaussian curve, which reaches any epsilon > 0 (an RDP
            # conversion bottoms out near 0.006); the whole event is accounted below.
            # Under "sensitive", PLD's replace-one Gaussian is a shift of 2 per unit.
            share = GROUP_PRIOR_BUDGET_SHARE
            statistics_multiplier = gaussian_noise_multiplier(
                share * self.epsilon, share * ctx.delta, sensitivity=2.0 if sensitive_unit else 1.0
            )
        priors, label_freq = self._group_priors(ctx, n_groups, n_blocks, statistics_multiplier)
        self.group_priors_ = priors
        self.label_weights_ = (
            1.0 / (n_classes * np.maximum(label_freq, rho)) if conditional else np.ones(n_classes)
        )
        if uses_groups:
            labels = self._prior_labels(n_blocks)
            try:
                for b in range(n_blocks):
                    check_min_group_fraction(priors[b], rho, labels[b])
            except ValueError as exc:
                if not (private and releases_priors):
                    raise
                # A noisy estimate below rho is clamped at rho like every prior (the
                # sensitivity bounds use the clamped values), so privacy is intact; only
                # the fairness weighting of that group is off, which the user can fix.
                warnings.warn(
                    f"{exc} These fractions come from a noisy histogram (noise multiplier "
                    f"{statistics_multiplier:.3g}, {GROUP_PRIOR_BUDGET_SHARE:.0%} of epsilon) of "
                    f"n={n} rows and were clamped at rho={rho:g}; for an accurate fairness "
                    "weighting pass public group_priors=... or use a larger epsilon.",
                    UserWarning,
                    stacklevel=5,  # user -> fit -> _private_fit -> _fit_template -> here
                )
        pinv = torch.as_tensor(np.maximum(priors, rho), dtype=torch.float32).rsqrt()
        pinv = pinv.to(ctx.device)
        # ||W*[b]||_F <= sqrt(l) * max_r pinv[b, r] for every theta (pinv is public:
        # released noisily or given), and <= sqrt(l / rho) since priors are clamped at rho.
        dual_bound = self._param("dual_bound")
        dual_bound = (
            DUAL_BOUND_MARGIN * math.sqrt(n_classes) * float(pinv.max())
            if dual_bound == "auto"
            else float(dual_bound)
        )
        ctx.released.update(
            block=block, active=active, n_blocks=n_blocks, n_groups=n_groups, pinv=pinv,
            dual_bound=dual_bound, dual_clip=w_clip_norm(lam, pinv),
        )  # fmt: skip
        return (
            gaussian_release_event(statistics_multiplier) if releases_histogram else NoOpDpEvent()
        )

    def _calibrate(self, ctx):
        if self._param("calibration") == "paper":
            return self._paper_plan(ctx)
        ratio = DUAL_NOISE_RATIO if self.fairness_weight > 0 else math.inf
        spread = math.sqrt(1.0 + ratio**-2)  # z_theta = z_eff spread when z_w = ratio z_theta
        return self._plan_for(self._calibrated_effective_or_explain(ctx) * spread, ctx)

    def _plan_for(self, noise_multiplier, ctx):
        has_dual = self.fairness_weight > 0
        # with lambda = 0 under "sensitive" nothing depends on s: nothing to noise
        if not (has_dual or self.privacy_unit == "record"):
            return NoisePlan()
        z_w = DUAL_NOISE_RATIO * noise_multiplier if has_dual else math.inf
        effective = joint_noise_multiplier(noise_multiplier, z_w)
        return NoisePlan(primal=noise_multiplier, dual=z_w, effective=effective)

    def _make_problem(self, ctx, plan):
        lam = float(self.fairness_weight)
        released = ctx.released
        lr_dual = self._param("lr_dual")
        steps = ctx.planned_steps if plan.steps is None else min(plan.steps, ctx.planned_steps)
        dual_rate, noise_std = None, 0.0
        if lr_dual == "auto":
            # W: the shrunk best response to a running mean of released histograms
            if ctx.private and plan.dual is not None and math.isfinite(plan.dual):
                noise_std = plan.dual * ctx.max_weight / ctx.sampler.expected_batch_size
            dual_rate = (
                auto_dual_rate(steps, noise_std, self._min_cell_share(ctx)) if lam > 0 else 0.0
            )
            lr_dual = dual_rate
        self.lr_dual_ = float(lr_dual)
        self.batch_size_, self.max_epochs_ = self._training_schedule(ctx.n_samples)
        self.max_grad_norm_ = self._resolved_clip(ctx.n_samples)
        self.objective_scales_ = objective_scales(lam, ctx.private, self.privacy_unit)
        average = TailAverage(self.module_, steps) if self.iterate == "average" else None
        return ErmiProblem(
            W=torch.zeros(
                released["n_blocks"], released["n_groups"], ctx.n_classes, device=ctx.device
            ),
            pinv=released["pinv"],
            fairness_weight=lam,
            dual_bound=released["dual_bound"],
            lr_dual=lr_dual,
            privacy_unit=self.privacy_unit,
            all_active=self.fairness != "equal_opportunity",  # from the notion, not the data
            dual_rates=self.dual_rates,
            scales=self.objective_scales_,
            average=average,
            dual_rate=dual_rate if lam > 0 else None,
            dual_noise_std=noise_std,
        )

    def _min_cell_share(self, ctx) -> float:
        """Smallest expected share of a batch in one (block, group) cell of W's histogram.

        From public or released values only: the priors (clamped at ``rho``) times, for
        the conditional notions, the label frequency of the block (from
        ``label_weights_``, itself from the released histogram).
        """
        priors = ctx.released["pinv"].double().pow(-2).cpu().numpy()  # (blocks, k)
        if self.fairness == "demographic_parity":
            return float(priors.min())
        n_classes = len(self.label_weights_)
        label_share = 1.0 / (n_classes * self.label_weights_)  # max(p_Y, rho)
        if self.fairness == "equal_opportunity":
            label_share = label_share[-1:]
        return float((label_share[: priors.shape[0], None] * priors).min())

    def _per_row_tensors(self, ctx):
        # two packed tensors (int codes, float weights): two index_selects per step
        block, active = ctx.released["block"], ctx.released["active"]
        packed = np.stack([ctx.y, ctx.groups, block], axis=1)
        dual_weight = float(self.fairness_weight) * active
        weights = np.stack([dual_weight * self.label_weights_[ctx.y], dual_weight], axis=1)
        return torch.as_tensor(packed), torch.as_tensor(weights, dtype=torch.float32)

    def _store_fitted(self, problem, plan) -> None:
        if problem.average is not None:
            problem.average.load()
        self.W_ = problem.W.cpu().numpy()
        self.dual_noise_multiplier_ = plan.dual

    def _accountant_options(self) -> dict:
        return {"accountant": self.accountant, "privacy_unit": self.privacy_unit}

    # -- pieces of fit ----------------------------------------------------------
    def _blocks(self, y_enc, n_classes):
        """Which W block each sample uses, and whether its psi term is active."""
        n = len(y_enc)
        if self.fairness == "demographic_parity":
            return np.zeros(n, dtype=np.int64), np.ones(n), 1
        if self.fairness == "equalized_odds":
            return y_enc.astype(np.int64), np.ones(n), n_classes
        positive = n_classes - 1
        return np.zeros(n, dtype=np.int64), (y_enc == positive).astype(float), 1

    def _prior_labels(self, n_blocks):
        groups = list(self.group_encoder_.group_labels_)
        # .tolist() gives Python scalars: y='hi', not y=np.str_('hi')
        classes = self.classes_.tolist()
        if self.fairness == "demographic_parity":
            return [groups]
        if self.fairness == "equal_opportunity":
            return [[f"{g} | y={classes[-1]!r}" for g in groups]]
        return [[f"{g} | y={c!r}" for g in groups] for c in classes[:n_blocks]]

    def _group_priors(self, ctx, n_groups, n_blocks, statistics_multiplier):
        """Group priors per block and, for conditional notions, label frequencies.

        Everything private comes from one noisy histogram: of groups (demographic
        parity) or of (label, group) cells (conditional notions), whose row sums
        give the label frequencies. With public ``group_priors`` and
        ``privacy_unit="record"`` a conditional notion releases a label histogram
        instead; under ``"sensitive"`` labels are public and counted exactly.
        """
        y_enc, codes, n_classes = ctx.y, ctx.groups, ctx.n_classes
        sensitive_unit = self.privacy_unit == "sensitive"
        uniform = np.full((n_blocks, n_groups), 1.0 / n_groups)
        if self.fairness_weight == 0:
            return uniform, None
        conditional = self.fairness != "demographic_parity"

        def released(cells, n_cells, moves_two):
            counts = np.bincount(cells, ctx.sample_weight, minlength=n_cells).astype(float)
            if ctx.private:
                # record: one row moves one count by its weight (L2 sensitivity 1, times
                # max_weight); sensitive: a replaced s moves two counts (L2 distance
                # sqrt 2), and PLD's replace-one Gaussian models a shift of 2 per unit of
                # sensitivity: sensitivity 1 / sqrt 2, sigma = z / sqrt 2.
                unit = math.sqrt(0.5) if moves_two else 1.0
                noisy, _ = noisy_histogram(
                    torch.from_numpy(counts),
                    ctx.random,
                    noise_multiplier=statistics_multiplier,
                    sensitivity=unit * ctx.max_weight,
                    recorder=ctx.recorder,
                )
                counts = noisy.numpy()
            return np.clip(counts, 0.0, None)

        def normalised(counts):
            totals = counts.sum(axis=-1, keepdims=True)
            return counts / np.where(totals > 0, totals, 1.0)

        exact_labels = np.bincount(y_enc, ctx.sample_weight, minlength=n_classes).astype(float)
        if self.group_priors is not None:
            priors = self._public_priors(n_groups, n_blocks)
            if not conditional:
                return priors, None
            labels = exact_labels if sensitive_unit else released(y_enc, n_classes, False)
            return priors, normalised(labels)
        if not conditional:
            return normalised(released(codes, n_groups, sensitive_unit))[None, :], None
        joint = released(y_enc * n_groups + codes, n_classes * n_groups, sensitive_unit)
        joint = joint.reshape(n_classes, n_groups)
        labels = exact_labels if sensitive_unit else joint.sum(axis=1)
        rows = joint if self.fairness == "equalized_odds" else joint[[n_classes - 1]]
        return normalised(rows), normalised(labels)

    def _public_priors(self, n_groups, n_blocks):
        labels = list(self.group_encoder_.group_labels_)

        def as_vector(spec, where):
            if isinstance(spec, dict):
                missing = [g for g in labels if g not in spec]
                if missing:
                    raise ValueError(f"group_priors{where} has no entry for groups {missing}")
                vec = np.array([spec[g] for g in labels], dtype=float)
            else:
                vec = np.asarray(spec, dtype=float).ravel()
            if vec.shape != (n_groups,) or np.any(vec < 0) or not np.isclose(vec.sum(), 1.0):
                raise ValueError(
                    f"group_priors{where} must give {n_groups} non-negative frequencies summing "
                    f"to 1 (one per group {labels}); got {vec.tolist()}"
                )
            return vec

        if self.fairness == "demographic_parity":
            return as_vector(self.group_priors, "")[None, :]
        spec = self.group_priors
        if not isinstance(spec, dict) or not all(c in spec for c in self.classes_):
            raise ValueError(
                f"with fairness={self.fairness!r}, group_priors must map each class in "
                f"{list(self.classes_)} to that class's group frequencies p(S | Y=class)"
            )
        if self.fairness == "equal_opportunity":
            return as_vector(spec[self.classes_[-1]], f"[{self.classes_[-1]!r}]")[None, :]
        return np.stack([as_vector(spec[c], f"[{c!r}]") for c in self.classes_])

    def _calibrated_effective_or_explain(self, ctx) -> float:
        """The base's calibration, its failure explained in DP-FERMI's terms."""
        try:
            return self._calibrated_effective(ctx)
        except ValueError as exc:
            hist = (
                f" after the one-off group histogram ({GROUP_PRIOR_BUDGET_SHARE:.0%} of "
                "epsilon; public group_priors=... remove it)"
                if not isinstance(ctx.upfront_event, NoOpDpEvent)
                else ""
            )
            raise ValueError(
                f"epsilon={self.epsilon:g} at delta={ctx.delta:g} cannot be met by the "
                f"{ctx.planned_steps} per-step gradient releases (sampling rate "
                f"{ctx.sampling_rate:.3g}){hist}: {exc}. Raise epsilon or delta, or lower "
                f"max_epochs; {_accountant_hint(self._accountant_options())}."
            ) from exc

    def _paper_plan(self, ctx):
        has_dual = self.fairness_weight > 0
        if not (has_dual or self.privacy_unit == "record"):
            return NoisePlan()
        delta, n, steps = ctx.delta, ctx.n_samples, ctx.planned_steps
        m = ctx.sampler.expected_batch_size
        lam, dual_bound = float(self.fairness_weight), ctx.released["dual_bound"]
        problems = theorem_3_3_preconditions(
            epsilon=self.epsilon, delta=delta, n_samples=n, batch_size=m, steps=steps
        )
        if problems:
            warnings.warn(
                "calibration='paper': Theorem 3.3's preconditions fail ("
                + "; ".join(problems)
                + "); its sigmas then carry no guarantee. privacy_spent_ reports what the "
                "accountant says the executed event costs.",
                UserWarning,
                stacklevel=7,  # user, fit, _private_fit, _fit_template, _noise_plan, _calibrate
            )
        sensitive_only = self.privacy_unit == "sensitive"
        sigmas = theorem_3_3_sigmas(
            epsilon=self.epsilon,
            delta=delta,
            n_samples=n,
            steps=steps,
            rho=float(self.rho),
            lipschitz=self._resolved_clip(n),
            w_bound=dual_bound,
            n_classes=ctx.n_classes,
            sensitive_only=sensitive_only,
        )
        # The sigmas are stds on averaged gradients; ours is added to sums of m rows.
        # Alg. 1 scales the sensitive-unit theta noise by lambda; W noise scales with
        # lambda in both units (digest §2.6 P4).
        theta_std = sigmas.sigma_theta * m * (lam if sensitive_only else 1.0)
        z_theta = theta_std / self._resolved_clip(n) if theta_std > 0 else math.inf
        z_w = (lam * sigmas.sigma_w * m) / ctx.released["dual_clip"] if has_dual else math.inf
        return NoisePlan(primal=z_theta, dual=z_w, effective=joint_noise_multiplier(z_theta, z_w))


def _accountant_hint(account: dict) -> str:
    if resolve_accountant(**account) == "rdp":
        return "or use accountant='pld', tighter for small epsilon"
    return (
        f"the PLD accountant's discretisation ({PLD_DISCRETIZATION:g}) floors the epsilon it "
        "can certify near that value"
    )
