"""FederatedDPFermiClassifier: DP-FERMI across silos under ISRL-DP (SteFFLe).

Gupta, Poornash, Lowy & Razaviyayn, "A Stochastic Optimization Framework for
Private and Fair Learning From Decentralized Data" (Algorithm 1). Each silo
samples, clips and noises its own gradients of the DP-FERMI objective
(:class:`~.silo.Silo`); the server averages and takes the descent step on theta
and the projected ascent step on W (:class:`~.server.Server`). ``backend="local"``
runs both in this process (:func:`~.local.run_local`); ``backend="flower"`` runs
the same silo and server code as a Flower app on this machine's loopback
(:mod:`skfairdp.federated.flower`).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import dp_accounting
import numpy as np
import torch
from sklearn.base import clone
from sklearn.utils import metadata_routing
from sklearn.utils._param_validation import Interval, StrOptions

from .._fit.base import PrivateClassifierBase
from .._fit.schedules import FEDERATED_DPFERMI, federated_batch_size, federated_lr
from .._fit.threads import torch_threads
from ..fairness.routing import routing_hint
from ..fermi import DPFermiClassifier
from ..fermi.priors import check_priors_against_rho, public_priors
from ..privacy import RandomSource
from . import objective
from .guarantee import check_silo_targets, planned_dp_event, weakest_silo
from .local import run_local
from .partition import assign_silos, silo_sizes
from .server import Server, aggregation_weights
from .silo import Silo, SiloConfig

__all__ = ["FederatedDPFermiClassifier"]

BACKENDS = ("local", "flower", "flower-simulation")


class FederatedDPFermiClassifier(PrivateClassifierBase):
    """DP-FERMI trained across silos, each private with respect to its own records.

    Inter-silo record-level DP (ISRL-DP): everything a silo sends is
    ``(epsilon, delta)``-DP with respect to its own rows (or their sensitive
    attribute), against an untrusted server and the other silos. One round of
    SteFFLe (Algorithm 1 of Gupta et al.) is one step of noisy distributed
    gradient descent-ascent on the DP-FERMI objective: every silo draws its own
    Poisson batch, clips its per-sample gradients, adds its own Gaussian noise and
    sends the noisy mean gradients in ``theta`` and ``W``; the server averages
    them, steps ``theta`` down and ``W`` up (projected). See :doc:`/federated`.

    Parameters
    ----------
    fairness : {"demographic_parity", "equalized_odds", "equal_opportunity"}
        As :class:`~skfairdp.DPFermiClassifier` (one W per label for equalized odds).
    fairness_weight : float, default=1.0
        ``lambda >= 0``.
    epsilon : float, default=1.0
        Every silo's target epsilon (``np.inf``: no privacy).
    delta : "auto" or float, default="auto"
        Every silo's target delta; ``"auto"`` is ``0.1 / n_j`` rounded down, with
        ``n_j`` the silo's own size.
    privacy_unit : {"record", "sensitive"}, default="record"
        ``"record"``: one row of a silo (the whole gradient is clipped and noised);
        ``"sensitive"``: one row's sensitive attribute, ``x, y`` public (the
        paper's setting; only the ``s``-dependent part is noised).
    n_silos : int, default=3
        Silos of Algorithm 3's partition (ignored when ``fit`` gets ``silo_ids``).
    heterogeneity : float in [0, 1], default=0.0
        Algorithm 3's ``h``: 0 is an i.i.d. split, 1 pure blocks of ``partition_feature``.
    partition_feature : None, int or str, default=None
        Column of ``X`` (index, or name for a DataFrame) Algorithm 3 sorts by;
        required when ``heterogeneity > 0``.
    aggregation : {"uniform", "size"}, default="uniform"
        Server weights ``a_j``: ``1/N`` (the paper's), or proportional to each
        silo's row count as released (noisily, in round 0) by the silo.
    backend : {"local", "flower", "flower-simulation"}, default="local"
        ``"local"``: silos and server in this process. ``"flower"``: the same code
        as a Flower app, with a SuperLink and one SuperNode per silo started on
        127.0.0.1 (needs the ``federated`` extra, Python >= 3.11: ``pip install -e
        ".[federated]"`` from a checkout). ``"flower-simulation"``: the same app on
        Flower's Simulation Engine (needs ``ray``: the ``simulation`` extra), rounds
        of a fraction of a second, for single-machine studies only: the silos are
        not isolated from each other or the server (:mod:`~.flower_simulation`).
    max_grad_norm : "auto" or float, default="auto"
        Per-sample theta-gradient clip of every silo; ``"auto"`` as DP-FERMI's rule
        at the mean silo size ``n / N``.
    noise_multiplier : None
        Not supported (each silo calibrates its own noise).
    group_priors : None or array-like, default=None
        Public group frequencies (as :class:`~skfairdp.DPFermiClassifier`); ``None``
        releases them in round 0: each silo sends a noisy histogram from 5% of its
        epsilon, the server sums them.
    rho : float, default=0.05
        Public lower bound on group frequencies (priors are clamped at it).
    dual_bound : "auto" or float, default="auto"
        Radius of W's Frobenius ball; ``"auto"`` is ``1.1 sqrt(l) max_r p_S(r)^-1/2``.
    lr_dual : "auto" or float, default="auto"
        W's step on the averaged ``lambda grad_W psi``; ``"auto"`` is DP-FERMI's rule
        with the noise of the average of the silos' W-gradients, its cap raised to
        ``min(0.25, 20 / T)`` for a short run of ``T`` steps (rounds times local steps,
        :func:`~.objective.dual_step`).
    dual_rates : {"hard", "soft"}, default="hard"
        What W's ascent sees (as DP-FERMI).
    lr_decay : float in (0, 1], default=1.0
        Factor applied to ``lr`` after every epoch (the paper: 0.8 every 10 epochs,
        ``0.8 ** 0.1`` per epoch).
    batch_size : "auto" or int, default="auto"
        Expected batch size of every silo's step (its rate is ``m / n_j``); ``"auto"``:
        a quarter of the mean silo size ``n / N`` divided by ``local_steps`` (at least
        32), i.e. 4 rounds per epoch.
    max_epochs : "auto" or int, default="auto"
        Rounds ``T = max_epochs * ceil((n / N) / (m * local_steps))``; ``"auto"``: 15,
        so 60 rounds by default. Fewer, larger rounds cost nothing in privacy at a
        fixed epsilon and epochs (a larger sampling rate over fewer steps needs less
        noise per averaged gradient) and each round over a network costs seconds.
        Until issue 27 the defaults were DP-FERMI's (``n / N / 128`` rows per batch,
        40 epochs, at least 1,000 rounds: 5,160 on Adult); the new ones match their
        error and violation (``experiments/results/federated_schedule.md``).
    local_steps : int, default=3
        Noisy steps each silo takes per round, each on its own Poisson batch: the
        silo steps its own copy of theta and W between them (with the server's step
        sizes; plain SGD on theta whatever ``optimizer`` is, which only the server's
        step uses) and replies the sums of its noisy mean gradients; the server's step
        then averages the silos' local iterates. Every step is accounted (each
        silo's budget is ``rounds * local_steps`` Poisson-sampled Gaussian steps).
        1 is Algorithm 1 of the paper (one gradient per round, the setting of its
        analysis; bit for bit the model before local steps); 3 takes as many steps
        as three times the rounds on batches a third the size, for the time of a
        round over a network (on Adult it matched the old schedule's violation,
        which one step per round did not: ``experiments/results/federated_schedule.md``).
    lr : "auto" or float, default="auto"
        The server's step on theta (and each silo's local step); ``"auto"``: 8 at a
        batch of a quarter of the mean silo size, scaled down linearly for a smaller
        batch (2.67 with the default three local steps; until issue 27: 0.1).
    iterate : {"average", "last"}, default="average"
        Mean of the last half of the server's iterates, or the last.
    calibration : {"accountant", "paper"}, default="accountant"
        Each silo's noise: the smallest meeting its target under the accountant,
        or Theorem 3.3's closed form (warns when its preconditions fail).
    accountant : {"auto", "rdp", "pld"}, default="auto"
    sensitive_values : None or list, default=None
        Public domain of the sensitive feature(s).
    module, hidden_layer_sizes, optimizer, random_state, secure_mode, device,
    n_jobs, verbose
        As :class:`~skfairdp.DPFermiClassifier`. ``max_sample_weight``,
        ``callbacks`` and ``record_private_diagnostics`` are not used.

    Attributes
    ----------
    classes_ : ndarray
    module_ : torch.nn.Module
    W_ : ndarray of shape (n_blocks, n_groups, n_classes)
    silos_ : ndarray
        Silo labels (``silo_ids`` values, or ``0..N-1``), the order of the ``silo_*`` lists.
    privacy_spent_ : PrivacySpent
        The guarantee every silo's records have: the weakest silo's epsilon at the
        largest of the silos' deltas (ISRL-DP protects a record by its own silo's
        releases only; see :mod:`~skfairdp.federated.guarantee`). The accountant's
        value of :attr:`dp_event_` at ``privacy_spent_.delta``.
    dp_event_ : DpEvent
        The weakest silo's recorded releases.
    silo_privacy_spent_ : list of PrivacySpent
        Each silo's ``(epsilon, delta)`` by its own accountant, at its own delta.
    silo_dp_event_ : list of DpEvent
        Each silo's recorded releases.
    silo_noise_multiplier_, silo_dual_noise_multiplier_ : list of float
        Each silo's multipliers of its theta- and W-gradient noise.
    aggregation_weights_ : ndarray of shape (n_silos,)
    group_priors_ : ndarray of shape (n_blocks, n_groups)
        Released (noisy, summed over silos) or public priors.
    label_weights_ : ndarray of shape (n_classes,)
    batch_size_, max_epochs_, max_grad_norm_, lr_, lr_dual_, dual_bound_ : resolved values
    n_rounds_ : int
    history_ : skorch.history.History
        Per epoch: ``rounds``, ``dur``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import FederatedDPFermiClassifier
    >>> clf = FederatedDPFermiClassifier(n_silos=2, epsilon=1.0, max_epochs=3, random_state=0)
    >>> clf.fit(X, y, sensitive_features=s).predict(X[:5]).shape
    (5,)
    >>> [round(spent.epsilon, 2) for spent in clf.silo_privacy_spent_]  # each silo's own
    [1.0, 1.0]
    """

    __metadata_request__fit = {
        "sensitive_features": True,
        "silo_ids": True,
        "sample_weight": metadata_routing.UNUSED,
    }

    _parameter_constraints = {
        # DP-FERMI's parameters (objective, priors, W, privacy target, training), as it
        # validates them (less penalty_clip: a silo's local step clips loss + lambda psi
        # jointly; less fallback_to_constant: its check would be one more federated release)
        # then the federation's own
        **{
            name: rule
            for name, rule in DPFermiClassifier._parameter_constraints.items()
            if name not in ("penalty_clip", "fallback_to_constant")
        },
        "n_silos": [Interval(Integral, 1, None, closed="left")],
        "heterogeneity": [Interval(Real, 0, 1, closed="both")],
        "partition_feature": [None, Integral, str],
        "aggregation": [StrOptions({"uniform", "size"})],
        "backend": [StrOptions(set(BACKENDS))],
        "lr_decay": [Interval(Real, 0, 1, closed="right")],
        "lr": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "local_steps": [Interval(Integral, 1, None, closed="left")],
    }
    #: the federated "auto" rules (few, large rounds), at the mean silo size (public
    #: protocol parameters)
    _schedule = FEDERATED_DPFERMI

    def __init__(
        self, fairness="demographic_parity", fairness_weight=1.0, *, epsilon=1.0, delta="auto",
        max_grad_norm="auto", max_sample_weight=1.0, noise_multiplier=None, n_silos=3,
        heterogeneity=0.0, partition_feature=None, aggregation="uniform", backend="local",
        group_priors=None, rho=0.05, dual_bound="auto", lr_dual="auto", dual_rates="hard",
        lr_decay=1.0, privacy_unit="record", iterate="average", calibration="accountant",
        accountant="auto", sensitive_values=None, lr="auto", batch_size="auto", max_epochs="auto",
        local_steps=3, module=None, hidden_layer_sizes=(), optimizer=torch.optim.SGD,
        callbacks=None, random_state=None, secure_mode=False, device="cpu", n_jobs=None,
        record_private_diagnostics=False, verbose=0, **kwargs,
    ):  # fmt: skip
        self._store_parameters(locals())

    def fit(self, X, y, *, sensitive_features=None, silo_ids=None) -> FederatedDPFermiClassifier:
        """Train across silos.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Required when ``fairness_weight > 0``; one global encoding for all silos.
        silo_ids : array-like of shape (n_samples,), default=None
            Which silo holds each row; ``None`` partitions by Algorithm 3
            (``n_silos``, ``heterogeneity``, ``partition_feature``).

        Returns
        -------
        self
        """
        with torch_threads(self.n_jobs):
            self._fit(X, y, sensitive_features, silo_ids)
        return self

    def planned_event(
        self, n_samples: int, *, noise_multiplier: float | None = None
    ) -> dp_accounting.DpEvent:
        """The ``dp_event_`` of a fit on ``n_samples`` rows partitioned by Algorithm 3.

        Algorithm 3's silo sizes depend on ``n_samples`` and ``n_silos`` only, and a
        silo's noise, rate and delta on its size only, so every silo's event is known
        before the data are: this is the weakest silo's (the one ``dp_event_`` holds)
        when every round runs. A fit given ``silo_ids`` has the sizes those ids give
        (data, not known here).

        Parameters
        ----------
        n_samples : int
            Rows of the training set.
        noise_multiplier : None
            Not supported (each silo calibrates its own noise).

        Returns
        -------
        dp_accounting.DpEvent
            ``NonPrivateDpEvent`` when ``epsilon=inf``.

        Raises
        ------
        NotImplementedError
            With ``calibration="paper"``: each silo sizes its noise from the
            released group priors (Theorem 3.3's ``D`` and W clip), which are data.
        """
        n = int(n_samples)
        if n < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}")
        est = clone(self)
        if noise_multiplier is not None:
            est.noise_multiplier = noise_multiplier  # refused by _check_params
        est._validate_params()
        est._check_params()
        if math.isinf(est.epsilon):
            return dp_accounting.NonPrivateDpEvent()
        if est.calibration == "paper":
            raise NotImplementedError(
                "calibration='paper' sizes each silo's noise from the released group priors "
                "(data); its event is known after fit only (dp_event_)"
            )
        sizes = silo_sizes(n, est.n_silos)
        config, _ = est._protocol(n, len(sizes), n_classes=2, n_groups=2)
        return planned_dp_event(config, sizes)

    # -- the protocol: what every party agrees on before round 0 ----------------------
    def _check_params(self) -> None:
        if self.noise_multiplier is not None:
            raise ValueError(
                "FederatedDPFermiClassifier: noise_multiplier is not supported; each silo "
                "calibrates its own noise to (epsilon, delta)"
            )
        if self.backend != "local" and self.module is not None:
            raise ValueError(
                f"backend={self.backend!r} trains the default module (module=None) only"
            )

    def _protocol(self, n, n_silos, n_classes, n_groups) -> tuple[SiloConfig, str | None]:
        """Every silo's :class:`SiloConfig` and the round-0 histogram layout.

        The schedule comes from the mean silo size ``n / N`` (public protocol
        parameters, the same for every silo); sets ``batch_size_``,
        ``max_epochs_``, ``max_grad_norm_`` and ``n_rounds_``.
        """
        n_ref = max(1, int(round(n / n_silos)))
        steps = int(self.local_steps)
        # the batch rule at the mean silo size rounded up (over the local steps of a
        # round): its rounds per epoch exactly
        batch_size, max_epochs = self._training_schedule(math.ceil(math.ceil(n / n_silos) / steps))
        clip = self._clip_norm(n_ref)
        self._rounds_per_epoch = max(1, math.ceil(n / n_silos / (batch_size * steps)))
        self.batch_size_, self.max_epochs_, self.max_grad_norm_ = batch_size, max_epochs, clip
        self.n_rounds_ = max_epochs * self._rounds_per_epoch
        self.lr_ = (
            federated_lr(batch_size, federated_batch_size(math.ceil(n / n_silos)))
            if self.lr == "auto"
            else float(self.lr)
        )
        cells = self._histogram_cells(float(self.fairness_weight))
        config = SiloConfig(
            epsilon=float(self.epsilon),
            delta=self.delta,
            privacy_unit=self.privacy_unit,
            max_grad_norm=clip,
            batch_size=batch_size,
            rounds=self.n_rounds_,
            local_steps=steps,
            histogram=cells is not None,
            fairness=self.fairness,
            fairness_weight=float(self.fairness_weight),
            n_classes=n_classes,
            n_groups=n_groups,
            dual_rates=self.dual_rates,
            rho=float(self.rho),
            calibration=self.calibration,
            accountant=self.accountant,
            dual_bound=self.dual_bound,
            secure_mode=self.secure_mode,
        )
        return config, cells

    def _histogram_cells(self, lam: float) -> str | None:
        if lam == 0:
            return "total" if self.aggregation == "size" else None
        return objective.histogram_cells(
            self.fairness, self.group_priors is not None, self.aggregation
        ) or ("total" if self.aggregation == "size" else None)

    # -- the fit ------------------------------------------------------------------
    def _fit(self, X, y, sensitive_features, silo_ids):
        self._validate_params()
        self._check_params()
        X, y_enc = self._validate_X_y(X, y)
        n, n_classes = X.shape[0], len(self.classes_)
        groups = self._encode_sensitive(
            sensitive_features,
            n,
            "sensitive_features is required when fairness_weight > 0: pass "
            "fit(X, y, sensitive_features=...), or set fairness_weight=0. " + routing_hint()
            if self.fairness_weight > 0
            else None,
        )
        n_groups = self.group_encoder_.n_groups_ if self.group_encoder_ is not None else 1
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        silo_of, self.silos_ = assign_silos(
            X,
            silo_ids,
            n_silos=self.n_silos,
            heterogeneity=self.heterogeneity,
            partition_feature=self.partition_feature,
            feature_names=getattr(self, "feature_names_in_", None),
            random=random,
        )
        n_silos = len(self.silos_)
        config, cells = self._protocol(n, n_silos, n_classes, n_groups)
        seeds = _seeds(random, n_silos + 1)
        parts = [np.flatnonzero(silo_of == j) for j in range(n_silos)]
        if self.backend != "local":
            from .flower_install import require_flwr

            require_flwr()  # optional dependency: say which extra, and how to install it
            simulation = self.backend == "flower-simulation"
            if simulation:
                from .flower_simulation import require_simulation

                require_simulation()
            from .flower_runner import fit_flower

            if random.secure_mode:
                raise ValueError(
                    f"backend={self.backend!r} simulates silos from one seed; secure_mode=False"
                )
            self._store(fit_flower(self, X, y_enc, groups, parts, config, seeds, cells, simulation))
            return
        silos = [
            Silo(X[idx], y_enc[idx], groups[idx], config, seed=seeds[j], name=f"silo {label!r}")
            for j, (idx, label) in enumerate(zip(parts, self.silos_))
        ]
        statistics, weights = self._round_zero(silos, cells, n_classes, n_groups)
        server = self._make_server(silos, statistics, weights, seeds[-1])
        history = run_local(server, silos, self.n_rounds_, verbose=self.verbose)
        server.finish()
        self._store(
            {
                "history": history,
                "aggregation_weights": weights,
                "module": server.module,
                "W": server.W.cpu().numpy(),
                "events": [s.dp_event for s in silos],
                "spent": [s.privacy_spent() for s in silos],
                "noise": [s.noise for s in silos],
            }
        )

    def _round_zero(self, silos, cells, n_classes, n_groups):
        """Round 0: each silo's noisy histogram (if needed); the public statistics."""
        counts = [s.histogram(cells)["counts"] for s in silos] if cells is not None else None
        totals = None if counts is None else np.sum(counts, axis=0)
        statistics = self._statistics(cells, totals, n_classes, n_groups)
        sizes = None if counts is None else np.array([c.sum() for c in counts])
        weights = aggregation_weights(self.aggregation, sizes, len(silos))
        return statistics, weights

    def _statistics(self, cells, totals, n_classes, n_groups):
        priors = self._declared_priors()
        statistics = objective.public_statistics(
            fairness=self.fairness,
            fairness_weight=float(self.fairness_weight),
            n_classes=n_classes,
            n_groups=n_groups,
            rho=float(self.rho),
            cells=cells,
            totals=totals,
            group_priors=priors,
        )
        if self.fairness_weight > 0:
            self._check_priors(statistics["priors"], declared=priors is not None)
        self.group_priors_ = statistics["priors"]
        self.label_weights_ = statistics["label_weights"]
        return statistics

    def _declared_priors(self) -> np.ndarray | None:
        """The public ``group_priors`` (None: released in round 0, or no fairness term).

        Parsed as DP-FERMI parses them: a vector, a mapping, or per-class mappings.
        """
        if self.group_priors is None or self.fairness_weight == 0:
            return None
        labels = self.group_encoder_.group_labels_
        return public_priors(
            self.group_priors, fairness=self.fairness, group_labels=labels, classes=self.classes_
        )

    def _check_priors(self, priors, declared):
        check_priors_against_rho(
            priors,
            float(self.rho),
            [list(self.group_encoder_.group_labels_)] * len(priors),
            declared=declared,
            source=(
                "come from the silos' noisy histograms"
                if math.isfinite(self.epsilon)
                else "were counted on the silos' rows (epsilon=inf)"
            ),
            remedy="pass public group_priors=... or a lower rho",
            stacklevel=6,  # user -> fit -> _fit -> _round_zero -> _statistics -> here
        )

    def _make_server(self, silos, statistics, weights, init_seed):
        for silo in silos:  # each silo fixes its noise (public multipliers) before training
            silo.calibrate(statistics["pinv"])
        self.dual_bound_ = (
            statistics["dual_bound_auto"] if self.dual_bound == "auto" else float(self.dual_bound)
        )
        self.lr_dual_ = self._lr_dual(silos, statistics, weights)
        n_features, n_classes = silos[0].X.shape[1], len(self.classes_)
        module = self._initial_module(n_features, n_classes, init_seed)
        return Server(
            module,
            self._build_optimizer(module),
            statistics,
            fairness=self.fairness,
            fairness_weight=float(self.fairness_weight),
            privacy_unit=self.privacy_unit,
            private=math.isfinite(self.epsilon),
            dual_rates=self.dual_rates,
            dual_bound=self.dual_bound_,
            lr_dual=self.lr_dual_,
            weights=weights,
            rounds=self.n_rounds_,
            n_classes=n_classes,
            iterate=self.iterate,
            lr_decay=self.lr_decay,
            rounds_per_epoch=self._rounds_per_epoch,
        )

    def _initial_module(self, n_features, n_classes, init_seed):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(init_seed))
            return self._build_module(n_features, n_classes).to(dtype=torch.float32)

    def _lr_dual(self, silos, statistics, weights) -> float:
        lam = float(self.fairness_weight)
        if self.lr_dual != "auto":
            return float(self.lr_dual)
        if lam == 0:
            return 0.0
        # std of the averaged W-gradient, in units of the W clip: sqrt(sum a_j^2 (z_j/m_j)^2)
        ratio = math.sqrt(
            sum(
                (a * s.noise["dual"] / s.expected_batch_size) ** 2
                for a, s in zip(weights, silos)
                if math.isfinite(s.noise["dual"])
            )
        )
        steps = self.n_rounds_ * int(self.local_steps)
        step = objective.dual_step(ratio, float(statistics["pinv"].max()), steps)
        return step / lam

    def _build_optimizer(self, module: torch.nn.Module) -> torch.optim.Optimizer:
        params = [p for p in module.parameters() if p.requires_grad]
        return self.optimizer(params, lr=self.lr_, **self._prefixed("optimizer__"))

    def _store(self, result: dict) -> None:
        self.module_ = result["module"]
        self.module_.eval()
        self.W_ = np.asarray(result["W"])
        self.silo_dp_event_ = list(result["events"])
        self.silo_privacy_spent_ = list(result["spent"])
        self.silo_noise_multiplier_ = [noise["primal"] for noise in result["noise"]]
        self.silo_dual_noise_multiplier_ = [noise["dual"] for noise in result["noise"]]
        weakest, self.privacy_spent_ = weakest_silo(
            self.silo_dp_event_,
            self.silo_privacy_spent_,
            accountant=self.accountant,
            privacy_unit=self.privacy_unit,
        )
        self.dp_event_ = self.silo_dp_event_[weakest]
        self.history_ = result["history"]
        self.aggregation_weights_ = np.asarray(result["aggregation_weights"])
        if self.calibration != "paper":  # the closed form may overspend (it warned)
            check_silo_targets(self.silos_, self.silo_privacy_spent_, self.epsilon)


def _seeds(random: RandomSource, count: int) -> list:
    """``count`` independent seeds from the fit's source: the silos', then the initial model's.

    In secure mode no silo is seeded (``None``: each silo's source is the OS CSPRNG) and
    the initial model's seed, data-independent, comes from the CSPRNG too. Unseeded by the
    user, no silo is seeded either: each draws 63 bits of OS entropy (:class:`RandomSource`,
    in process or in its Flower node), with no 31-bit seed derived from one root that a
    server could search for. Only a user's ``random_state`` derives them (experiments).
    """
    if random.secure_mode or not random.user_seeded:
        return [None] * (count - 1) + [random.torch_seed()]
    children = np.random.SeedSequence(random.seed).spawn(count)
    return [int(c.generate_state(1, dtype=np.uint32)[0] % np.iinfo(np.int32).max) for c in children]
