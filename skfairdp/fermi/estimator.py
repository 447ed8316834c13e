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

from .._fit.base import (
    POSITIVE,
    NoisePlan,
    Param,
    PrivateClassifierBase,
    declare_parameters,
)
from .._fit.schedules import DPFERMI
from ..privacy import gaussian_release_event, joint_noise_multiplier, noisy_histogram
from ..privacy.analytic import gaussian_noise_multiplier
from ..privacy.closed_form import theorem_3_3_preconditions, theorem_3_3_sigmas
from .priors import check_priors_against_rho, public_priors
from .problem import (  # noqa: F401 (also the names that lived here, re-exported)
    AUTO_LR_DUAL_FRACTION,
    AVERAGE_TAIL,
    DENSE_W_LIMIT,
    DUAL_BOUND_MARGIN,
    DUAL_NOISE_RATIO,
    DUAL_NOISE_SHARE,
    DUAL_NOISE_TOLERANCE,
    DUAL_RATE_TOLERANCE,
    FAIRNESS_NOTIONS,
    FAIRNESS_WEIGHT_SCALE,
    GROUP_PRIOR_BUDGET_SHARE,
    MAX_DUAL_RATE,
    MIN_DUAL_MEMORY_FRACTION,
    ErmiProblem,
    TailAverage,
    auto_dual_rate,
    auto_dual_step,
    objective_scales,
    shrunk_best_response,
    w_clip_norm,
)


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
        ``"record"``, 1 under ``"sensitive"`` (``fermi_max_grad_norm`` in ``_fit/schedules.py``).
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
        bounds hold on every dataset). A prior estimated from the data (noisy, or
        counted at ``epsilon=inf``) below it is clamped with a ``UserWarning``;
        public ``group_priors`` below it are an error.
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
        ``n / 128`` between 32 and 256 (``fermi_batch_size`` in ``_fit/schedules.py``).
    max_epochs : "auto" or int, default="auto"
        Number of expected passes; ``T = max_epochs * ceil(n / m)`` steps.
        ``"auto"``: 40, or more to take 1,000 steps (``fermi_max_epochs`` in ``_fit/schedules.py``).
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
        also_accept={
            "batch_size": [StrOptions({"auto"})],
            "max_epochs": [StrOptions({"auto"})],
            "iterate": [StrOptions({"average"})],
            "max_grad_norm": [StrOptions({"auto"})],
        },
    )

    _schedule = DPFERMI

    # -- hooks of the fit template ----------------------------------------------
    def _check_params(self) -> None:
        if self.noise_multiplier is not None and self.calibration == "paper":
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
            # a fraction estimated from the data below rho is clamped at rho like every
            # prior (the sensitivity bounds use the clamped values): a warning, not an error
            check_priors_against_rho(
                priors,
                rho,
                self._prior_labels(n_blocks),
                declared=not releases_priors,
                source=(
                    f"come from a noisy histogram (noise multiplier {statistics_multiplier:.3g}, "
                    f"{GROUP_PRIOR_BUDGET_SHARE:.0%} of epsilon) of n={n} rows"
                    if private
                    else f"were counted on the n={n} training rows (epsilon=inf)"
                ),
                remedy=(
                    "pass public group_priors=... or use a larger epsilon"
                    if private
                    else "lower rho (it bounds the sensitivity only when epsilon is finite)"
                ),
                stacklevel=5,  # user -> fit -> _private_fit -> _fit_template -> here
            )
        pinv = torch.as_tensor(np.maximum(priors, rho), dtype=torch.float32).rsqrt()
        pinv = pinv.to(ctx.device)
        # ||W*[b]||_F <= sqrt(l) * max_r pinv[b, r] for every theta (pinv is public:
        # released noisily or given), and <= sqrt(l / rho) since priors are clamped at rho.
        dual_bound = self.dual_bound
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

    def _outside_steps_note(self) -> str:
        return (
            f"the one-off group histogram ({GROUP_PRIOR_BUDGET_SHARE:.0%} of epsilon; public "
            "group_priors=... remove it)"
        )

    def _split_joint(self, joint):
        ratio = DUAL_NOISE_RATIO if self.fairness_weight > 0 else math.inf
        return joint * math.sqrt(1.0 + ratio**-2)  # z_theta when z_w = ratio z_theta

    def _plan_for(self, noise_multiplier, ctx):
        has_dual = self.fairness_weight > 0
        # with lambda = 0 under "sensitive" nothing depends on s: nothing to noise
        if not (has_dual or self.privacy_unit == "record"):
            return NoisePlan()
        z_w = DUAL_NOISE_RATIO * noise_multiplier if has_dual else math.inf
        effective = joint_noise_multiplier(noise_multiplier, z_w)
        return NoisePlan(
            primal_multiplier=noise_multiplier, dual_multiplier=z_w, effective_multiplier=effective
        )

    def _make_problem(self, ctx, plan):
        lam = float(self.fairness_weight)
        released = ctx.released
        lr_dual = self.lr_dual
        steps = ctx.planned_steps if plan.steps is None else min(plan.steps, ctx.planned_steps)
        dual_rate, noise_std = None, 0.0
        if lr_dual == "auto":
            # W: the shrunk best response to a running mean of released histograms
            z_w = plan.dual_multiplier
            if ctx.private and z_w is not None and math.isfinite(z_w):
                noise_std = z_w * ctx.max_weight / ctx.sampler.expected_batch_size
            dual_rate = (
                auto_dual_rate(steps, noise_std, self._min_cell_share(ctx)) if lam > 0 else 0.0
            )
            lr_dual = dual_rate
        self.lr_dual_ = float(lr_dual)
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
        self.dual_noise_multiplier_ = plan.dual_multiplier

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
        return public_priors(
            self.group_priors,
            fairness=self.fairness,
            group_labels=self.group_encoder_.group_labels_,
            classes=self.classes_,
        )

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
                stacklevel=7,  # user, fit, _private_fit, _fit_template, noise_plan, _paper_plan
            )
        sensitive_only = self.privacy_unit == "sensitive"
        sigmas = theorem_3_3_sigmas(
            epsilon=self.epsilon,
            delta=delta,
            n_samples=n,
            steps=steps,
            rho=float(self.rho),
            lipschitz=self.max_grad_norm_,
            w_bound=dual_bound,
            n_classes=ctx.n_classes,
            sensitive_only=sensitive_only,
        )
        # The sigmas are stds on averaged gradients; ours is added to sums of m rows.
        # Alg. 1 scales the sensitive-unit theta noise by lambda; W noise scales with
        # lambda in both units (digest §2.6 P4).
        theta_std = sigmas.sigma_theta * m * (lam if sensitive_only else 1.0)
        z_theta = theta_std / self.max_grad_norm_ if theta_std > 0 else math.inf
        z_w = (lam * sigmas.sigma_w * m) / ctx.released["dual_clip"] if has_dual else math.inf
        return NoisePlan(
            primal_multiplier=z_theta,
            dual_multiplier=z_w,
            effective_multiplier=joint_noise_multiplier(z_theta, z_w),
        )
