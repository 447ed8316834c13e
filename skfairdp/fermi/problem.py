"""DP-FERMI's objective and its rules, without the estimator.

What :class:`~skfairdp.fermi.DPFermiClassifier` and the federated silos and server
(:mod:`skfairdp.federated`) share: the engine problem :class:`ErmiProblem` (its
iterate average is :class:`~skfairdp.engine.iterates.TailAverage`), the W clip, the
objective's scales, the dual's ``"auto"`` rules and their constants. A Flower
ClientApp imports this module, not :mod:`skfairdp.fermi`, so it does not load the
estimator machinery (``skfairdp._fit``) to answer a round.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..engine.clipping import UnitRows, clipped_total
from ..engine.iterates import TailAverage
from . import best_response, ermi

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
# penalty_clip="balanced"/"split" (privacy_unit="record"): the share of max_grad_norm that bounds
# each row's lambda-psi gradient is lambda / (lambda + PENALTY_CLIP_SCALE); the loss gradient is
# clipped at the rest (one release, same C), at most MAX_PENALTY_CLIP_SHARE (the loss keeps at
# least a fifth of C: with 6 % of C, HealthInsurance at lambda = 64 erred 0.279 against the
# majority class's 0.205). lambda = 1 / 4 / 16 / 64: 0.2 / 0.5 / 0.8 / 0.8.
PENALTY_CLIP_SCALE, MAX_PENALTY_CLIP_SHARE = 4.0, 0.8
PENALTY_CLIPS = ("balanced", "split", "joint")


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

    The torch face of :func:`skfairdp.fermi.best_response.shrunk_best_response`
    (computed in float64 NumPy, returned in ``H``'s dtype and device).
    """
    W = best_response.shrunk_best_response(
        H.detach().cpu().double().numpy(),
        float(variance),
        pinv.detach().cpu().double().numpy(),
    )
    return torch.from_numpy(W).to(device=H.device, dtype=H.dtype)


def penalty_scale_max(fairness_weight: float, label_weights, pinv: torch.Tensor) -> float:
    """The largest ``lambda * label weight * pinv^2`` any row can have: the balanced
    clip's normaliser (public: lambda, the released label weights and priors)."""
    lam = float(fairness_weight)
    return lam * float(np.max(label_weights)) * float(pinv.max()) ** 2


def balanced_rescale(
    pinv: torch.Tensor, s: torch.Tensor, block: torch.Tensor, weight: torch.Tensor, scale_max: float
) -> torch.Tensor:
    """``f_i = weight_i pinv[b_i, s_i]^2 / scale_max`` in (0, 1] (1 where the weight is 0):
    the balanced clip's per-row factor (see :meth:`ErmiProblem._penalty_rescale`)."""
    scale = weight * pinv[block, s].pow(2) / scale_max
    return torch.where(scale > 0, scale.clamp(max=1.0), 1.0)


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


def penalty_clip_share(fairness_weight: float) -> float:
    """Share of ``max_grad_norm`` bounding a row's penalty gradient under the split clip:
    ``lambda / (lambda + 4)``, at most 0.8; the loss keeps the rest of ``C``."""
    lam = float(fairness_weight)
    return min(MAX_PENALTY_CLIP_SHARE, lam / (lam + PENALTY_CLIP_SCALE))


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
        penalty_clip: str = "joint",
        max_grad_norm: float | None = None,
        penalty_scale_max: float = 1.0,
    ):
        self.state = {"W": W}
        # dual_rate None: projected gradient ascent with step lr_dual (the paper's W update);
        # a float: W is the shrunk best response to a running mean, of that rate, of the
        # released batch histograms of (block, group, prediction) (lr_dual="auto").
        self.best_response = dual_rate is not None
        self.dual_rate = float(dual_rate) if self.best_response else None
        self.dual_noise_std = float(dual_noise_std)
        if self.best_response:
            # the running mean lives in float64 on the host (see .best_response)
            zeros = torch.zeros(W.numel(), dtype=torch.float64)
            self.state = {"W": W, "H": zeros, "V": zeros.new_zeros(()), "t": zeros.new_zeros(())}
        self.hard_dual = dual_rates == "hard"
        self.loss_scale, self.penalty_scale = map(float, scales)
        self.average = average
        self.pinv = pinv
        # psi's coefficient tables for the current W (see _psi_tables), and whether a
        # record-unit batch gets them combined (own + shared in one table)
        self._tables = None
        self._combined = privacy_unit != "sensitive"
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
        # penalty_clip "split"/"balanced" (record unit, private, lambda > 0): the loss and the
        # lambda-psi gradients of a row are two private objectives clipped separately, at
        # (1 - share) C and share C (the balanced clip scales a row's penalty clip by its
        # group's scale, see _split_sum); their sum is one release of sensitivity C.
        self.split = None
        if penalty_clip != "joint" and not self.sensitive_unit and self.lam > 0:
            if max_grad_norm is None or not math.isfinite(float(max_grad_norm)):
                raise ValueError("a split penalty clip needs a finite max_grad_norm")
            share = penalty_clip_share(self.lam)
            self.split = (1.0 - share, share)
            self.balanced = penalty_clip == "balanced"
            self.max_grad_norm = float(max_grad_norm)
            self.penalty_scale_max = float(penalty_scale_max)
            self.private_primal = (True, True)
            self.private_sum = self._split_sum
            self.clip_plan = self._clip_plan
            self._part = 0

    @property
    def W(self) -> torch.Tensor:
        """The current ascent variable (``state["W"]``)."""
        return self.state["W"]

    def prepare_batch(self, codes, weights):
        """Per-row ``(y, s, block, weight, dual_weight, own, shared)`` of a batch.

        ``weights`` may carry a third column, the balanced clip's per-row factor ``f``
        (:func:`balanced_rescale`, computed once for all rows by the estimator). Under
        ``privacy_unit="record"`` nothing needs psi's coefficients apart, so ``own`` is
        the whole ``c_i`` (``own + shared`` of :func:`~.ermi.psi_coefficients`, from a
        combined table: the same sums) and ``shared`` is zeros.
        """
        y, s, block = codes.unbind(dim=1)
        weight, dual_weight, *factor = weights.unbind(dim=1)
        if factor and self.split is not None and self.balanced:
            self._rescale_cache = (s, block, weight, factor[0])
        own_table, shared_table, combined = self._psi_tables()
        n_blocks, k, l = self.W.shape
        cell = block * k + s if n_blocks > 1 else s
        if self._combined:
            own = combined.index_select(0, cell)
            return y, s, block, weight, dual_weight, own, self._zeros(len(s), l, own)
        own = own_table.index_select(0, cell)
        shared = shared_table.index_select(0, block) if n_blocks > 1 else shared_table
        return y, s, block, weight, dual_weight, own, shared.expand(len(s), l)

    def _folded(self, shared) -> bool:
        """Whether ``shared`` is :meth:`_zeros`'s view (already folded into ``own``)."""
        zero = getattr(self, "_zero", None)
        return zero is not None and shared._base is zero

    def _zeros(self, batch, l, like):
        """A ``(batch, l)`` view of one zero (``shared`` when folded into ``own``)."""
        zero = getattr(self, "_zero", None)
        if zero is None or zero.device != like.device:
            self._zero = zero = like.new_zeros(())
        return zero.expand(batch, l)

    def _psi_tables(self):
        """``(own, shared, combined)`` coefficient tables of the current W (cached).

        Computed when W changes (its identity or in-place version), in torch as
        :func:`~.ermi.psi_coefficients` does; the best response leaves its own
        (float64 NumPy, see :meth:`dual_step`)."""
        W = self.W
        cached = self._tables
        if cached is not None and cached[0] is W and cached[1] == W._version:
            return cached[2]
        n_blocks, k, l = W.shape
        own = (2.0 * W * self.pinv.unsqueeze(2)).reshape(n_blocks * k, l)
        shared = -(W * W).sum(dim=1)
        combined = own + (shared.repeat_interleave(k, dim=0) if n_blocks > 1 else shared)
        self._tables = (W, W._version, (own, shared, combined))
        return self._tables[2]

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
        self._part = 0
        if self.split is not None:
            return (public, private / self._penalty_rescale(s, block, weight)), {
                "loss": loss,
                "psi": psi * (weight != 0),
            }
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
        y1 = y.unsqueeze(1)
        loss = -log_p.gather(1, y1).squeeze(1)
        d_loss = F.scatter_add(1, y1, F.new_full((len(y), 1), -1.0))
        w = (weight if self.penalty_scale == 1.0 else self.penalty_scale * weight).unsqueeze(1)
        c = own if self._folded(shared) else own + shared
        psi_plus_one = (F * c).sum(dim=1)
        d_public = d_loss if self.loss_scale == 1.0 else self.loss_scale * d_loss
        d_private = w * F * (c - psi_plus_one.unsqueeze(1))
        self._part = 0
        if self.split is not None:
            grads = (d_public, d_private / self._penalty_rescale(s, block, weight).unsqueeze(1))
        else:
            grads = (d_public, d_private) if self.sensitive_unit else (d_public + d_private,)
        psi = psi_plus_one - 1.0
        if not self.all_active:
            psi = psi * (weight != 0)
        return grads, {"loss": loss, "psi": psi}

    def _penalty_rescale(self, s, block, weight):
        """``f_i`` of the balanced clip (ones for ``"split"``): row i's penalty clip is
        ``f_i * share * C``, with ``f_i = weight_i pinv[b_i, s_i]^2 / max`` in (0, 1].

        A row's psi-gradient is ``weight_i F(1-F) (c_1 - c_0)`` and its coefficient gap
        ``c_1 - c_0 = 2 (P(s|1) - P(s|0)) pinv[s]^2 + (a term shared by all rows)``:
        proportional to ``pinv[s]^2 = 1 / p_S(s)``. One clip for every row caps the small
        group's (large) rows first, and its force with them, while the other groups'
        keep growing with lambda; their sum then pushes every row one way. Scaling the clip
        by the same ``pinv^2`` clips each group's rows alike, so the groups' forces keep
        their unclipped ratio. ``f`` depends on the row's group, but every row's clip
        stays within ``share * C`` (the max is over the public pinv and label weights).
        """
        # one step asks twice (the primal gradients, then the split clip) for the same
        # batch tensors: the second time reuses the first's factors (same numbers)
        cached = getattr(self, "_rescale_cache", None)
        if cached is not None and cached[0] is s and cached[1] is block and cached[2] is weight:
            return cached[3]
        if not self.balanced:
            f = torch.ones_like(weight)
        else:
            f = balanced_rescale(self.pinv, s, block, weight, self.penalty_scale_max)
        self._rescale_cache = (s, block, weight, f)
        return f

    def _split_sum(
        self, per_sample, X, y, s, block, weight, dual_weight, own, shared, weights=None
    ):
        """``private_sum`` of the split clip: the loss objective (first call of a step)
        clipped at ``(1 - share) C``, the penalty (second) at ``f_i share C`` (the
        objective is the penalty over ``f_i``; ``f_i`` multiplies after clipping, as a
        sample weight would). Sensitivity of their sum: ``C``.
        """
        C = self.max_grad_norm
        if per_sample is None:  # empty batch: the engine's release still happens
            return None, C
        part, self._part = self._part, self._part + 1
        clips, C = self._clip_plan(X, y, s, block, weight, dual_weight, own, shared, weights)
        return clipped_total(per_sample, *clips[part]), C

    def _clip_plan(self, X, y, s, block, weight, dual_weight, own, shared, weights=None):
        """``clip_plan`` of the split clip (the engine's fused form of :meth:`_split_sum`):
        ``((C_loss, weights), (C_penalty, f * weights))`` and the sensitivity ``C``."""
        C = self.max_grad_norm
        f = self._penalty_rescale(s, block, weight)
        f = f if weights is None else f * weights.to(f.dtype)
        return ((self.split[0] * C, weights), (self.split[1] * C, f)), C

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
        if self.hard_dual and self.best_response:
            return None, self._hard_histogram_rows(F, s, block, dual_weight)
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

    def _hard_histogram_rows(self, F, s, block, dual_weight):
        """:meth:`_histogram_rows` of the hard predictions, as :class:`UnitRows`.

        Row i is the unit vector of cell ``(block_i, s_i, argmax_j F_ij)`` (zero for an
        inactive row): one entry 1 or none, so its norm is exactly 1 or 0, by
        construction; the engine clips and sums it as it would the dense rows (the same
        counts, without forming them).
        """
        n_blocks, k, l = self.W.shape
        cell = block * k + s if n_blocks > 1 else s
        column = cell * l + F.argmax(dim=1)
        return UnitRows(column, dual_weight != 0, n_blocks * k * l)

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
            self._best_response_step(gradient)
            return
        W = torch.add(self.W, gradient.view_as(self.W), alpha=self.lr_dual)
        self.state = {"W": ermi.project_frobenius(W, self.dual_bound)}

    def _best_response_step(self, gradient):
        """The running mean and W's shrunk best response in float64 on the host
        (:mod:`.best_response`: Python floats for a small W, NumPy for a larger one);
        W and its psi tables go back to torch once."""
        state, W = self.state, self.W
        pinv = self._host_pinv()
        beta, noise_std = self.dual_rate, self.dual_noise_std
        if W.numel() <= best_response.SMALL_W:
            running, answers = self.best_response_floats(
                state["H"].tolist(), float(state["V"]), float(state["t"]), gradient.tolist()
            )
            self._set_best_response(running, answers)
            return
        g = gradient.detach().cpu().numpy().astype(np.float64).reshape(W.shape)
        H, V, t, mean, variance = best_response.running_mean_step(
            state["H"].detach().cpu().numpy().reshape(W.shape),
            float(state["V"]),
            float(state["t"]),
            g,
            beta,
            noise_std,
        )
        W64 = best_response.shrunk_best_response(mean, variance, pinv)
        answers = (W64, *best_response.psi_tables(W64, pinv))
        out = torch.from_numpy(np.concatenate([a.ravel() for a in answers]).astype(np.float32))
        running = torch.from_numpy(np.concatenate([H.ravel(), [V, t]]))
        self._set_tensors(out, running)

    def _host_pinv(self) -> np.ndarray:
        """``pinv`` in float64 NumPy (and as nested lists), read once."""
        pinv = getattr(self, "_pinv64", None)
        if pinv is None:
            self._pinv64 = pinv = self.pinv.detach().cpu().double().numpy()
            self._pinv_list = pinv.tolist()
        return pinv

    def best_response_floats(self, H: list, V: float, t: float, gradient: list):
        """The small W's best-response step in Python floats (float64): the running mean
        ``(H, V, t)`` moved towards the released ``gradient`` (a flat list), and the answers
        ``(W, own, shared, combined)`` as flat lists. Returns ``([*H, V, t], answers)``.

        :meth:`dual_step`'s arithmetic for ``W.numel() <= best_response.SMALL_W``; it
        changes nothing (:meth:`_set_best_response` makes the result the state)."""
        self._host_pinv()
        n_blocks, k, l = self.W.shape
        beta, noise_std = self.dual_rate, self.dual_noise_std
        keep = 1.0 - beta
        H = [h * keep + beta * g for h, g in zip(H, gradient)]
        V = V * keep * keep + (beta * noise_std) ** 2
        t = t + 1.0
        corrected = 1.0 - keep**t  # the running mean starts at zero
        nested = [
            [[h / corrected for h in H[(b * k + r) * l : (b * k + r + 1) * l]] for r in range(k)]
            for b in range(n_blocks)
        ]
        answers = best_response.shrunk_best_response_small(
            nested, V / (corrected * corrected), self._pinv_list
        )
        return [*H, V, t], answers

    def _set_best_response(self, running: list, answers) -> None:
        """``state`` and the psi tables from :meth:`best_response_floats`' lists: two tensors
        (``torch.tensor`` costs microseconds), the float32 answers and the float64 running
        state."""
        out = torch.tensor([v for part in answers for v in part], dtype=torch.float32)
        self._set_tensors(out, torch.tensor(running, dtype=torch.float64))

    def _set_tensors(self, out: torch.Tensor, running: torch.Tensor) -> None:
        W = self.W
        n_blocks, k, l = W.shape
        out = out.to(W.device)
        n, cells = W.numel(), n_blocks * k
        # split_with_sizes: Tensor.split's Python wrapper costs more than the split
        W_new, own, shared, combined = out.split_with_sizes([n, cells * l, n_blocks * l, cells * l])
        W_new = W_new.view(W.shape)
        tables = (own.view(cells, l), shared.view(n_blocks, l), combined.view(cells, l))
        self._tables = (W_new, W_new._version, tables)
        H, V, t = running.split_with_sizes([n, 1, 1])
        self.state = {"W": W_new, "H": H, "V": V, "t": t}
