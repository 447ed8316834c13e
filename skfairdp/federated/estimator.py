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

import numpy as np
import torch
from sklearn.utils import metadata_routing
from sklearn.utils._param_validation import Interval, StrOptions

from .._fit.base import POSITIVE, Param, PrivateClassifierBase, declare_parameters
from .._fit.schedules import fermi_batch_size, fermi_max_epochs, fermi_max_grad_norm
from .._fit.threads import torch_threads
from ..fermi.priors import check_priors_against_rho, public_priors
from ..fermi.problem import (
    FAIRNESS_NOTIONS,
    auto_dual_step,
)
from ..privacy import RandomSource
from . import objective
from .local import run_local
from .partition import encode_silo_ids, heterogeneous_partition
from .server import Server, aggregation_weights
from .silo import Silo, SiloConfig

__all__ = ["FederatedDPFermiClassifier"]

BACKENDS = ("local", "flower")


class FederatedDPFermiClassifier(PrivateClassifierBase):
    """DP-FERMI trained across silos, each private with respect to its own records.

    Inter-silo record-level DP (ISRL-DP): everything a silo sends is
    ``(epsilon, delta)``-DP with respect to its own rows (or their sensitive
    attribute), against an untrusted server and the other silos. One round of
    SteFFLe (Algorithm 1 of Gupta et al.) is one step of noisy distributed
    gradient descent-ascent on the DP-FERMI objective: every silo draws its own
    Poisson batch, clips its per-sample gradients, adds its own Gaussian noise and
    sends the noisy mean gradients in ``theta`` and ``W``; the server averages
    them, steps ``theta`` down and ``W`` up (projected). See doc/federated.md.

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
    backend : {"local", "flower"}, default="local"
        ``"local"``: silos and server in this process. ``"flower"``: the same code
        as a Flower app, with a SuperLink and one SuperNode per silo started on
        127.0.0.1 (needs ``pip install "skfairdp[federated]"``, Python >= 3.11).
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
        with the noise of the average of the silos' W-gradients.
    dual_rates : {"hard", "soft"}, default="hard"
        What W's ascent sees (as DP-FERMI).
    lr_decay : float in (0, 1], default=1.0
        Factor applied to ``lr`` after every epoch (the paper: 0.8 every 10 epochs,
        ``0.8 ** 0.1`` per epoch).
    batch_size : "auto" or int, default="auto"
        Expected batch size of every silo (its rate is ``m / n_j``); ``"auto"``:
        DP-FERMI's rule at the mean silo size.
    max_epochs : "auto" or int, default="auto"
        Rounds ``T = max_epochs * ceil((n / N) / m)``; ``"auto"``: DP-FERMI's rule
        at the mean silo size.
    iterate : {"average", "last"}, default="average"
        Mean of the last half of the server's iterates, or the last.
    calibration : {"accountant", "paper"}, default="accountant"
        Each silo's noise: the smallest meeting its target under the accountant,
        or Theorem 3.3's closed form (warns when its preconditions fail).
    accountant : {"auto", "rdp", "pld"}, default="auto"
    sensitive_values : None or list, default=None
        Public domain of the sensitive feature(s).
    lr, module, hidden_layer_sizes, optimizer, random_state, secure_mode, device,
    n_jobs, verbose
        As :class:`~skfairdp.DPFermiClassifier`. ``max_sample_weight``,
        ``callbacks`` and ``record_private_diagnostics`` are not used.

    Attributes
    ----------
    classes_ : ndarray
    module_ : torch.nn.Module
    W_ : ndarray of shape (n_blocks, n_groups, n_classes)
    silos_ : ndarray
        Silo labels (``silo_ids`` values, or ``0..N-1``), the keys of the dicts below.
    privacy_spent_ : dict of silo -> PrivacySpent
        Each silo's ``(epsilon, delta)`` by its own accountant, from what it released.
    dp_event_ : dict of silo -> DpEvent
        Each silo's recorded releases.
    noise_multiplier_, dual_noise_multiplier_ : dict of silo -> float
    aggregation_weights_ : ndarray of shape (n_silos,)
    group_priors_ : ndarray of shape (n_blocks, n_groups)
        Released (noisy, summed over silos) or public priors.
    label_weights_ : ndarray of shape (n_classes,)
    batch_size_, max_epochs_, max_grad_norm_, lr_dual_, dual_bound_ : resolved values
    n_rounds_ : int
    history_ : skorch.history.History
        Per epoch: ``rounds``, ``dur``.
    """

    __metadata_request__fit = {
        "sensitive_features": True,
        "silo_ids": True,
        "sample_weight": metadata_routing.UNUSED,
    }

    _parameters = declare_parameters(
        "privacy_unit",
        "iterate",
        "calibration",
        "accountant",
        "sensitive_values",
        own={
            "fairness": Param("demographic_parity", [StrOptions(set(FAIRNESS_NOTIONS))]),
            "fairness_weight": Param(1.0, [Interval(Real, 0, None, closed="left")]),
            "n_silos": Param(3, [Interval(Integral, 1, None, closed="left")]),
            "heterogeneity": Param(0.0, [Interval(Real, 0, 1, closed="both")]),
            "partition_feature": Param(None, [None, Integral, str]),
            "aggregation": Param("uniform", [StrOptions({"uniform", "size"})]),
            "backend": Param("local", [StrOptions(set(BACKENDS))]),
            "group_priors": Param(None, [None, "array-like", dict]),
            "rho": Param(0.05, [Interval(Real, 0, 0.5, closed="right")]),
            "dual_bound": Param("auto", [StrOptions({"auto"}), POSITIVE]),
            "lr_dual": Param("auto", [StrOptions({"auto"}), POSITIVE]),
            "dual_rates": Param("hard", [StrOptions({"hard", "soft"})]),
            "lr_decay": Param(1.0, [Interval(Real, 0, 1, closed="right")]),
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

    def fit(self, X, y, *, sensitive_features=None, silo_ids=None):
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

    # -- the fit ------------------------------------------------------------------
    def _fit(self, X, y, sensitive_features, silo_ids):
        self._validate_params()
        if self.noise_multiplier is not None:
            raise ValueError(
                "FederatedDPFermiClassifier: noise_multiplier is not supported; each silo "
                "calibrates its own noise to (epsilon, delta)"
            )
        if self.backend == "flower" and self.module is not None:
            raise ValueError("backend='flower' trains the default module (module=None) only")
        X_in = X
        X, y_enc = self._validate_X_y(X, y)
        n, n_classes = X.shape[0], len(self.classes_)
        groups = self._encode_sensitive(
            sensitive_features,
            n,
            "sensitive_features is required when fairness_weight > 0: pass "
            "fit(X, y, sensitive_features=...), or set fairness_weight=0."
            if self.fairness_weight > 0
            else None,
        )
        n_groups = self.group_encoder_.n_groups_ if self.group_encoder_ is not None else 1
        random = RandomSource(self.random_state, secure_mode=self.secure_mode)
        silo_of, self.silos_ = self._silos(X_in, X, silo_ids, random)
        n_silos = len(self.silos_)
        lam = float(self.fairness_weight)
        n_bar = n / n_silos  # the mean silo size: public protocol parameters come from it
        batch_size, max_epochs, clip = self._schedule(n_bar)
        rounds_per_epoch = max(1, math.ceil(n_bar / batch_size))
        rounds = max_epochs * rounds_per_epoch
        self._rounds_per_epoch = rounds_per_epoch
        self.batch_size_, self.max_epochs_, self.max_grad_norm_ = batch_size, max_epochs, clip
        self.n_rounds_ = rounds
        cells = self._histogram_cells(lam)
        seeds = _seeds(random, n_silos + 1)
        config = SiloConfig(
            epsilon=float(self.epsilon),
            delta=self.delta,
            privacy_unit=self.privacy_unit,
            max_grad_norm=clip,
            batch_size=batch_size,
            rounds=rounds,
            histogram=cells is not None,
            fairness=self.fairness,
            fairness_weight=lam,
            n_classes=n_classes,
            n_groups=n_groups,
            dual_rates=self.dual_rates,
            rho=float(self.rho),
            calibration=self.calibration,
            accountant=self.accountant,
            dual_bound=self.dual_bound,
            secure_mode=self.secure_mode,
        )
        parts = [np.flatnonzero(silo_of == j) for j in range(n_silos)]
        if self.backend == "flower":
            from .flower_runner import fit_flower  # optional dependency

            if seeds[0] is None:
                raise ValueError(
                    "backend='flower' simulates silos from one seed; secure_mode=False"
                )
            result = fit_flower(self, X, y_enc, groups, parts, config, seeds, cells)
            self._store(result)
            return
        silos = [
            Silo(X[idx], y_enc[idx], groups[idx], config, seed=seeds[j], name=f"silo {label!r}")
            for j, (idx, label) in enumerate(zip(parts, self.silos_))
        ]
        statistics, weights = self._round_zero(silos, cells, n_classes, n_groups)
        server = self._make_server(silos, statistics, weights, seeds[-1], rounds, rounds_per_epoch)
        history = run_local(server, silos, rounds, verbose=self.verbose)
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

    def _flower_run_config(self, n_features, n_silos, init_seed, cells, output, dual_noise):
        """The run config of ``backend="flower"`` (the app's ``[tool.flwr.app.config]``)."""
        import json

        lam = float(self.fairness_weight)
        priors = ""
        if self.group_priors is not None and lam > 0:
            n_classes = len(self.classes_)
            priors = json.dumps(
                self._public_priors(n_classes, self.group_encoder_.n_groups_).tolist()
            )
        return {
            "num-silos": n_silos,
            "rounds": self.n_rounds_,
            "rounds-per-epoch": self._rounds_per_epoch,
            "lr": float(self.lr),
            "lr-decay": float(self.lr_decay),
            "lr-dual": "auto" if self.lr_dual == "auto" else float(self.lr_dual),
            "dual-noise-per-batch": json.dumps([float(z) for z in dual_noise]),
            "dual-bound": "auto" if self.dual_bound == "auto" else float(self.dual_bound),
            "aggregation": self.aggregation,
            "iterate": self.iterate,
            "init-seed": int(init_seed),
            "n-features": int(n_features),
            "hidden-layer-sizes": ",".join(str(h) for h in self.hidden_layer_sizes),
            "output-path": str(output),
            "fairness": self.fairness,
            "fairness-weight": lam,
            "n-classes": len(self.classes_),
            "n-groups": self.group_encoder_.n_groups_ if self.group_encoder_ is not None else 1,
            "dual-rates": self.dual_rates,
            "rho": float(self.rho),
            "privacy-unit": self.privacy_unit,
            "private": bool(math.isfinite(self.epsilon)),
            "histogram-cells": cells or "",
            "group-priors": priors,
        }

    def _schedule(self, n_bar: float) -> tuple[int, int, float]:
        n_ref = max(1, int(round(n_bar)))
        batch_size = self.batch_size
        if batch_size == "auto":
            batch_size = fermi_batch_size(n_ref)
        max_epochs = self.max_epochs
        if max_epochs == "auto":
            max_epochs = fermi_max_epochs(n_ref, int(batch_size))
        clip = self.max_grad_norm
        if clip == "auto":
            clip = fermi_max_grad_norm(n_ref, float(self.epsilon), self.privacy_unit)
        return int(batch_size), int(max_epochs), float(clip)

    def _histogram_cells(self, lam: float) -> str | None:
        if lam == 0:
            return "total" if self.aggregation == "size" else None
        return objective.histogram_cells(
            self.fairness, self.group_priors is not None, self.aggregation
        ) or ("total" if self.aggregation == "size" else None)

    def _silos(self, X_in, X, silo_ids, random):
        n = X.shape[0]
        if silo_ids is not None:
            codes, labels = encode_silo_ids(silo_ids, n)
            return codes, labels
        if self.n_silos > n:
            raise ValueError(f"n_silos={self.n_silos} exceeds the {n} rows")
        values = None
        if self.partition_feature is not None:
            column = self.partition_feature
            if isinstance(column, str):
                names = list(getattr(self, "feature_names_in_", []))
                if column not in names:
                    raise ValueError(
                        f"partition_feature={column!r} is not a column name of X ({names[:10]})"
                    )
                column = names.index(column)
            if not 0 <= column < X.shape[1]:
                raise ValueError(f"partition_feature={column} is not a column of X")
            values = X[:, column]
        elif self.heterogeneity > 0:
            raise ValueError("heterogeneity > 0 needs partition_feature (the column to sort by)")
        seed = None if random.secure_mode else random.spawn().seed
        codes = heterogeneous_partition(
            n, self.n_silos, float(self.heterogeneity), np.random.default_rng(seed), values
        )
        return codes, np.arange(self.n_silos)

    def _round_zero(self, silos, cells, n_classes, n_groups):
        """Round 0: each silo's noisy histogram (if needed); the public statistics."""
        counts = [s.histogram(cells)["counts"] for s in silos] if cells is not None else None
        totals = None if counts is None else np.sum(counts, axis=0)
        statistics = self._statistics(cells, totals, n_classes, n_groups)
        sizes = None if counts is None else np.array([c.sum() for c in counts])
        weights = aggregation_weights(self.aggregation, sizes, len(silos))
        return statistics, weights

    def _statistics(self, cells, totals, n_classes, n_groups):
        priors = None
        if self.group_priors is not None and self.fairness_weight > 0:
            priors = self._public_priors(n_classes, n_groups)
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

    def _public_priors(self, n_classes, n_groups):
        # the same parsing as DP-FERMI's (a vector, a mapping, or per-class mappings)
        return public_priors(
            self.group_priors,
            fairness=self.fairness,
            group_labels=self.group_encoder_.group_labels_,
            classes=self.classes_,
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

    def _make_server(self, silos, statistics, weights, init_seed, rounds, rounds_per_epoch):
        lam = float(self.fairness_weight)
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
            fairness_weight=lam,
            privacy_unit=self.privacy_unit,
            private=math.isfinite(self.epsilon),
            dual_rates=self.dual_rates,
            dual_bound=self.dual_bound_,
            lr_dual=self.lr_dual_,
            weights=weights,
            rounds=rounds,
            n_classes=n_classes,
            iterate=self.iterate,
            lr_decay=self.lr_decay,
            rounds_per_epoch=rounds_per_epoch,
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
        step = auto_dual_step(
            1.0, ratio if ratio > 0 else math.inf, float(statistics["pinv"].max())
        )
        return step / lam

    def _store(self, result: dict) -> None:
        self.module_ = result["module"]
        self.module_.eval()
        self.W_ = np.asarray(result["W"])
        labels = [_key(label) for label in self.silos_]
        self.dp_event_ = dict(zip(labels, result["events"]))
        self.privacy_spent_ = dict(zip(labels, result["spent"]))
        self.noise_multiplier_ = {k: n["primal"] for k, n in zip(labels, result["noise"])}
        self.dual_noise_multiplier_ = {k: n["dual"] for k, n in zip(labels, result["noise"])}
        self.history_ = result["history"]
        self.aggregation_weights_ = np.asarray(result["aggregation_weights"])
        if self.calibration != "paper":  # every silo must meet the target
            over = {
                k: s.epsilon
                for k, s in self.privacy_spent_.items()
                if s.epsilon > self.epsilon * (1 + 1e-6)
            }
            if over:
                raise RuntimeError(f"silos {over} spent more than epsilon={self.epsilon:g}")


def _key(label):
    return label.item() if hasattr(label, "item") else label


def _seeds(random: RandomSource, count: int) -> list:
    """``count`` independent seeds from the fit's source (``None`` in secure mode)."""
    if random.secure_mode:
        return [None] * count
    children = np.random.SeedSequence(random.seed).spawn(count)
    return [int(c.generate_state(1, dtype=np.uint32)[0] % np.iinfo(np.int32).max) for c in children]
