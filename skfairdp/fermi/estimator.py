"""DPFermiClassifier: DP-FERMI (Lowy, Gupta & Razaviyayn, ICLR 2023).

min over theta, max over W of  mean_i [ loss_i(theta) + lambda * psi_i(theta, W) ]
with the ERMI per-sample term psi (see :mod:`skfairdp.fermi.ermi`), solved by noisy
simultaneous gradient descent (theta) and projected ascent (W) on Poisson
batches. What this module adds to the engine: the parameters, the per-sample
objective, the private statistics (the group priors before training, theta's and
W's noisy sums per step), and how W moves. Beside it: :mod:`.priors` (the prior
release and the rho rules), :mod:`.problem` (:class:`ErmiProblem` and W's rules),
:mod:`.calibration` (Theorem 3.3's plan for ``calibration="paper"``).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from .._fit.base import POSITIVE, NoisePlan, PrivateClassifierBase, parameter_constraints
from .._fit.constant_check import ConstantFallbackMixin
from .._fit.schedules import DPFERMI
from ..engine.iterates import TailAverage
from ..fairness.routing import routing_hint
from ..privacy import joint_noise_multiplier
from .calibration import theorem_3_3_plan
from .linear_step import linear_ermi_step
from .priors import min_cell_share, release_priors
from .problem import (
    DUAL_BOUND_MARGIN,
    DUAL_NOISE_RATIO,
    FAIRNESS_NOTIONS,
    GROUP_PRIOR_BUDGET_SHARE,
    PENALTY_CLIPS,
    ErmiProblem,
    auto_dual_rate,
    balanced_rescale,
    objective_scales,
    penalty_scale_max,
    w_clip_norm,
)


class DPFermiClassifier(ConstantFallbackMixin, PrivateClassifierBase):
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
        64; try 4 to 16, see :doc:`/dpfermi`). With 0 the estimator is DP-SGD and
        needs no groups. Privately under ``privacy_unit="record"`` with
        ``penalty_clip="balanced"``, the penalty's share of the clip stops growing at
        ``lambda = 16`` (its cap, 0.8): where every row's gradient is clipped, 16 and 64
        then give the same fit.
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
        See :doc:`/privacy`.
    noise_multiplier : None or float, default=None
        ``None`` calibrates the noise to ``(epsilon, delta)`` for ``max_epochs``
        epochs. A float fixes theta's noise multiplier (W's is twice it) and
        trains for the largest number of steps whose event stays within
        ``(epsilon, delta)``, at most ``max_epochs`` epochs (the oracle contract,
        :doc:`/design`). Not with ``calibration="paper"``.
    dual_bound : "auto" or float, default="auto"
        Bound on the dual variable: the radius of the Frobenius ball that W
        (each block) is projected on; ``"auto"`` is
        ``1.1 * sqrt(l) * max_r p_S(r)^(-1/2)`` with the (released or public,
        floored) priors, which contains the maximiser for every theta and
        is at most ``1.1 * sqrt(l / rho_)``.
    rho : "auto" or float, default="auto"
        Floor of every group's frequency (within each label for equalized odds):
        group priors are clamped at it. A float is a public lower bound: with
        ``lr_dual`` a float (or ``calibration="paper"``) it bounds W's clip and
        ball, and ``"auto"`` is 0.05 there. Under ``lr_dual="auto"`` W's release
        does not depend on it, and ``"auto"`` floors a released prior at twice its
        noise's standard deviation (one row when exact or public) instead of
        clamping a small group up, which weakened the push on it (doc/dpfermi.md,
        "Small minority groups"). A prior estimated from the data (noisy, or
        counted at ``epsilon=inf``) below the floor is clamped with a
        ``UserWarning``; public ``group_priors`` below it are an error. The value
        used is ``rho_``.
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
    penalty_clip : {"balanced", "split", "joint"}, default="balanced"
        How a row's theta-gradient is clipped under ``privacy_unit="record"`` (private
        fits with ``lambda > 0``; otherwise ignored). ``"joint"``: ``loss_i + lambda
        psi_i`` clipped as one at ``max_grad_norm`` (the paper's, and the former default).
        ``"split"``: the loss gradient clipped at ``4 / (lambda + 4)`` of ``C`` and the
        penalty gradient at ``min(0.8, lambda / (lambda + 4))`` of it. ``"balanced"``: as
        ``"split"``, with each row's penalty clip also scaled by its group's
        ``1 / p_S(s)`` (relative to the smallest group's), so that the clip caps every
        group's penalty alike. Each is one release of sensitivity ``C`` per step: same
        noise, same ``privacy_spent_``. See :doc:`/dpfermi` ("A large lambda on a small
        group").
    fallback_to_constant : bool, default=True
        After training, release the model's (true label, predicted class) counts on
        the training rows once (5 % of the budget's zCDP rho, accounted; exact and free
        under ``privacy_unit="sensitive"``) and return the constant class of smallest
        noisy error instead of the model unless the model's noisy error beats it by
        0.5 sd of their difference (:mod:`skfairdp._fit.constant_check`): a constant
        meets every group-parity bound and needs no data. Warns when it falls back.
        Not with ``calibration="paper"`` (the paper's algorithm).
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
        Priors used (released noisily or public), before clamping at ``rho_``.
    rho_ : float
        The floor the priors were clamped at (``rho`` resolved).
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
        Per epoch: ``epsilon`` spent so far, ``steps``, ``dur``; with
        ``record_private_diagnostics=True`` also ``loss`` and ``psi`` (the ERMI
        surrogate at the current W), computed on raw training batches and NOT
        covered by the privacy guarantee.
    n_steps_ : int
    constant_check_ : ConstantCheck or None
        ``fallback_to_constant``'s released counts and conclusion; ``None`` when it
        did not run.
    fallback_class_ : class label or None
        The constant ``predict`` returns when the check fell back; ``None`` otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import DPFermiClassifier
    >>> clf = DPFermiClassifier(fairness_weight=2.0, epsilon=1.0, max_epochs=10, random_state=0)
    >>> clf.fit(X, y, sensitive_features=s).predict(X[:5]).shape
    (5,)
    >>> round(clf.privacy_spent_.epsilon, 2)
    1.0

    Predicting needs no sensitive attribute. In a ``Pipeline`` or a search,
    ``sensitive_features`` reaches ``fit`` through metadata routing
    (``sklearn.set_config(enable_metadata_routing=True)``, then
    ``clf.set_fit_request(sensitive_features=True)``).
    """

    _parameter_constraints = parameter_constraints(
        "privacy_unit",
        "iterate",
        "calibration",
        "accountant",
        "sensitive_values",
        own={
            "fairness": [StrOptions(set(FAIRNESS_NOTIONS))],
            "fairness_weight": [Interval(Real, 0, None, closed="left")],
            "dual_bound": [StrOptions({"auto"}), POSITIVE],
            "rho": [StrOptions({"auto"}), Interval(Real, 0, 0.5, closed="right")],
            "group_priors": [None, "array-like", dict],
            "lr_dual": [StrOptions({"auto"}), POSITIVE],
            "dual_rates": [StrOptions({"hard", "soft"})],
            "penalty_clip": [StrOptions(set(PENALTY_CLIPS))],
            "fallback_to_constant": ["boolean"],
        },
        also_accept={
            "batch_size": [StrOptions({"auto"})],
            "max_epochs": [StrOptions({"auto"})],
            "iterate": [StrOptions({"average"})],
            "max_grad_norm": [StrOptions({"auto"})],
        },
    )
    _schedule = DPFERMI
    #: logistic regression's step without the generic engine (:mod:`.linear_step`)
    _fast_step = staticmethod(linear_ermi_step)

    def __init__(
        self, fairness="demographic_parity", fairness_weight=1.0, *, epsilon=1.0, delta="auto",
        max_grad_norm="auto", max_sample_weight=1.0, noise_multiplier=None, dual_bound="auto",
        rho="auto", group_priors=None, lr_dual="auto", dual_rates="hard",
        penalty_clip="balanced", fallback_to_constant=True, privacy_unit="record",
        iterate="average", calibration="accountant", accountant="auto", sensitive_values=None,
        lr=0.1, batch_size="auto", max_epochs="auto", module=None, hidden_layer_sizes=(),
        optimizer=torch.optim.SGD, callbacks=None, random_state=None, secure_mode=False,
        device="cpu", n_jobs=None, record_private_diagnostics=False, verbose=0, **kwargs,
    ):  # fmt: skip
        self._store_parameters(locals())

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
            "fit(X, y, sensitive_features=...), or set fairness_weight=0. " + routing_hint()
            if self.fairness_weight > 0
            else None
        )
        return self._encode_sensitive(sensitive_features, n_samples, required)

    def _upfront_releases(self, ctx):
        """Group priors (one noisy histogram unless public) and label weights; W's ball."""
        release = release_priors(
            ctx,
            fairness=self.fairness,
            fairness_weight=self.fairness_weight,
            rho=self.rho,
            privacy_unit=self.privacy_unit,
            epsilon=self.epsilon,
            group_priors=self.group_priors,
            group_encoder=self.group_encoder_,
            classes=self.classes_,
            bounds_sensitivity=self.lr_dual != "auto" or self.calibration == "paper",
        )
        self.group_priors_, self.label_weights_ = release.priors, release.label_weights
        self.rho_ = release.rho
        pinv = torch.as_tensor(np.maximum(release.priors, self.rho_), dtype=torch.float32)
        pinv = pinv.rsqrt().to(ctx.device)
        # ||W*[b]||_F <= sqrt(l) * max_r pinv[b, r] for every theta (pinv is public:
        # released noisily or given), and <= sqrt(l / rho_) since priors are clamped at rho_.
        dual_bound = self.dual_bound
        dual_bound = (
            DUAL_BOUND_MARGIN * math.sqrt(ctx.n_classes) * float(pinv.max())
            if dual_bound == "auto"
            else float(dual_bound)
        )
        ctx.released.update(
            block=release.block, active=release.active, n_blocks=release.n_blocks,
            n_groups=release.n_groups, pinv=pinv, dual_bound=dual_bound,
            dual_clip=w_clip_norm(float(self.fairness_weight), pinv),
        )  # fmt: skip
        return release.event

    def _post_training_event(self, ctx):
        return self._constant_check_event(ctx)

    def _outside_steps_note(self) -> str:
        return (
            f"the one-off group histogram ({GROUP_PRIOR_BUDGET_SHARE:.0%} of epsilon; public "
            "group_priors=... remove it) and fallback_to_constant's check"
        )

    def _split_joint(self, joint):
        """theta's multiplier from the joint one of a step (W's is DUAL_NOISE_RATIO times it)."""
        ratio = DUAL_NOISE_RATIO if self.fairness_weight > 0 else math.inf
        return joint * math.sqrt(1.0 + ratio**-2)  # z_theta when z_w = ratio z_theta

    def _plan_for(self, noise_multiplier, ctx):
        """Each step releases theta's noisy gradient sum and W's noisy rows, one joint Gaussian."""
        has_dual = self.fairness_weight > 0
        # with lambda = 0 under "sensitive" nothing depends on s: nothing to noise
        if not (has_dual or self.privacy_unit == "record"):
            return NoisePlan()
        z_w = DUAL_NOISE_RATIO * noise_multiplier if has_dual else math.inf
        effective = joint_noise_multiplier(noise_multiplier, z_w)
        return NoisePlan(
            primal_multiplier=noise_multiplier, dual_multiplier=z_w, effective_multiplier=effective
        )

    def _paper_plan(self, ctx):
        """``calibration="paper"``: Theorem 3.3's sigmas (:mod:`.calibration`)."""
        return theorem_3_3_plan(
            epsilon=self.epsilon,
            delta=ctx.delta,
            n_samples=ctx.n_samples,
            batch_size=ctx.sampler.expected_batch_size,
            steps=ctx.planned_steps,
            rho=self.rho_,
            max_grad_norm=self.max_grad_norm_,
            dual_bound=ctx.released["dual_bound"],
            dual_clip=ctx.released["dual_clip"],
            n_classes=ctx.n_classes,
            fairness_weight=float(self.fairness_weight),
            privacy_unit=self.privacy_unit,
            stacklevel=6,  # user -> fit -> _private_fit -> _fit_template -> noise_plan -> here
        )

    def _make_problem(self, ctx, plan):
        """The min-max objective, and how W moves: best response or projected ascent.

        ``lr_dual="auto"``: W is the shrunk best response to a running mean, of rate
        :func:`auto_dual_rate`, of the released batch histograms (their noise std is
        known from the plan). A float: the paper's projected ascent with that step.
        """
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
            dual_rate = 0.0
            if lam > 0:
                share = min_cell_share(released["pinv"], self.fairness, self.label_weights_)
                dual_rate = auto_dual_rate(steps, noise_std, share)
            lr_dual = dual_rate
        self.lr_dual_ = float(lr_dual)
        self.objective_scales_ = objective_scales(lam, ctx.private, self.privacy_unit)
        average = TailAverage(self.module_, steps) if self.iterate == "average" else None
        pinv = released["pinv"]
        split = ctx.private and self.privacy_unit == "record" and lam > 0
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
            penalty_clip=self.penalty_clip if split else "joint",
            max_grad_norm=self.max_grad_norm_ if split else None,
            penalty_scale_max=penalty_scale_max(lam, self.label_weights_, pinv),
        )

    def _per_row_tensors(self, ctx):
        """Per row: (label, group, W block) and (label-weighted, plain) psi weights."""
        # two packed tensors (int codes, float weights): two index_selects per step
        block, active = ctx.released["block"], ctx.released["active"]
        packed = np.stack([ctx.y, ctx.groups, block], axis=1)
        dual_weight = float(self.fairness_weight) * active
        weights = np.stack([dual_weight * self.label_weights_[ctx.y], dual_weight], axis=1)
        codes, weights = torch.as_tensor(packed), torch.as_tensor(weights, dtype=torch.float32)
        lam = float(self.fairness_weight)
        if ctx.private and self.privacy_unit == "record" and lam > 0:
            if self.penalty_clip == "balanced":
                # the balanced clip's per-row factor, once for all rows (public: pinv, lambda,
                # label weights; the row's own codes), instead of on every batch
                pinv = ctx.released["pinv"].cpu()
                f = balanced_rescale(
                    pinv,
                    codes[:, 1],
                    codes[:, 2],
                    weights[:, 0],
                    penalty_scale_max(lam, self.label_weights_, pinv),
                )
                weights = torch.cat([weights, f.unsqueeze(1)], dim=1)
        return codes, weights

    def _store_fitted(self, problem, plan, ctx) -> None:
        """The returned model (the tail average with ``iterate="average"``) and W."""
        if problem.average is not None:
            problem.average.load()
        self.W_ = problem.W.cpu().numpy()
        self.dual_noise_multiplier_ = plan.dual_multiplier
        self._check_constant(ctx)

    def _accountant_options(self) -> dict:
        return {"accountant": self.accountant, "privacy_unit": self.privacy_unit}
