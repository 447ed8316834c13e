"""A silo: its own rows, sampler, clipping, noise, random stream and accountant.

Under inter-silo record-level DP (ISRL-DP) everything a silo sends must be DP with
respect to its own records, against an untrusted server and the other silos. So
everything that decides how private a reply is lives here and is fixed when the
silo is built (:class:`SiloConfig`): the target ``(epsilon, delta)``, the privacy
unit, the clipping norm, the Poisson rate, the number of rounds it will answer, and
the noise multipliers calibrated from them. What the server sends each round
(:data:`BROADCAST_KEYS`) is public state: ``theta``, ``W``, the released group
priors and label weights. A broadcast with any other field is refused, so a
server cannot ask for less noise, and a request past the budget raises
:class:`SiloBudgetExceeded`. The replies (:data:`REPLY_KEYS`) are the noised,
averaged gradients only.

With ``local_steps = K > 1`` a round is ``K`` noisy steps on ``K`` independent
Poisson batches: the silo steps its own copy of ``theta`` and ``W`` after each one
(plain SGD and projected ascent with the server's public step sizes,
:data:`LOCAL_STEP_KEYS`) and replies the sum of the ``K`` noisy mean gradients, so
that the server's step from it is the silos' local iterates averaged (FedAvg). Each
step is one Poisson-sampled Gaussian release, recorded as it runs: the budget covers
``rounds * K`` of them.
"""

from __future__ import annotations

import functools
import math
import pickle
import warnings
from dataclasses import asdict, dataclass

import dp_accounting
import numpy as np
import torch

from .._fit.budget import reserved_noise_multiplier
from ..fermi.ermi import project_frobenius
from ..fermi.problem import DUAL_NOISE_RATIO, GROUP_PRIOR_BUDGET_SHARE, w_clip_norm
from ..fermi.theorem import theorem_3_3_preconditions, theorem_3_3_sigmas
from ..privacy import (
    EventRecorder,
    PoissonSampler,
    RandomSource,
    ShuffledBatches,
    calibration,
    gaussian_sum,
    joint_noise_multiplier,
    noisy_histogram,
    resolve_delta,
    sampled_gaussian_steps_event,
)
from ..privacy.accountant import epsilon_spent
from ..privacy.events import compose, gaussian_release_event
from . import objective
from .release import SiloBatch, clipped_sums

__all__ = [
    "BROADCAST_KEYS",
    "LOCAL_STEP_KEYS",
    "REPLY_KEYS",
    "Silo",
    "SiloBudgetExceeded",
    "SiloConfig",
    "budgeted_event",
]

#: What a server must send each training round (all public).
BROADCAST_KEYS = frozenset({"round", "theta", "W", "pinv", "label_weights"})
#: The server's public step sizes: what a silo taking local steps steps with (``lr`` on
#: theta, ``lr_dual`` and the ball's radius ``dual_bound`` on W). A server may send them
#: to any silo (they move no noise); one with ``local_steps > 1`` needs them.
LOCAL_STEP_KEYS = frozenset({"lr", "lr_dual", "dual_bound"})
#: What a silo sends back each training round: noisy mean gradients in theta and W.
REPLY_KEYS = frozenset({"theta", "W"})
#: What a silo sends back in round 0: its noisy histogram.
HISTOGRAM_KEYS = frozenset({"counts"})


def budgeted_event(
    histogram_multiplier: float, steps_multiplier: float, sampling_rate: float, rounds: int
) -> dp_accounting.DpEvent:
    """What a silo's budget covers: its round-0 histogram (if any), then ``rounds`` rounds.

    Each round is one Poisson-sampled Gaussian of joint multiplier ``steps_multiplier``
    (the theta and W releases of one batch counted jointly); an infinite multiplier is
    no release.
    """
    hist = (
        gaussian_release_event(histogram_multiplier)
        if math.isfinite(histogram_multiplier)
        else dp_accounting.NoOpDpEvent()
    )
    return compose([hist, sampled_gaussian_steps_event(steps_multiplier, sampling_rate, rounds)])


@functools.lru_cache(maxsize=128)
def _calibrated(epsilon, delta, sampling_rate, rounds, histogram_multiplier, accountant, unit):
    """Smallest joint step multiplier of a silo's budgeted event (silos alike share it)."""

    def planned(z):
        return budgeted_event(histogram_multiplier, z, sampling_rate, rounds)

    return calibration.calibrate_noise_multiplier(
        epsilon, delta, planned, accountant=accountant, privacy_unit=unit
    )


def _float32_array(values: torch.Tensor) -> np.ndarray:
    """A reply array: float32 numpy, without a copy when it already is one."""
    return np.asarray(values.detach().cpu().numpy(), dtype=np.float32)


class SiloBudgetExceeded(RuntimeError):
    """A silo was asked for a release its privacy budget does not cover."""


@dataclass(frozen=True)
class SiloConfig:
    """What a silo decides for itself (its privacy) and the objective it agreed to.

    Parameters
    ----------
    epsilon : float
        The silo's target epsilon (``inf``: no privacy).
    delta : float or "auto"
        Target delta; ``"auto"`` is ``0.1 / n_j`` rounded down (the silo's own size).
    privacy_unit : {"record", "sensitive"}
        What the silo protects: one of its rows, or one row's sensitive attribute.
    max_grad_norm : float
        Clipping norm of the per-sample theta-gradients.
    batch_size : int
        Expected batch size ``m``; the Poisson rate is ``min(1, m / n_j)``.
    rounds : int
        Training rounds the silo answers; its noise is calibrated for this many.
    local_steps : int
        Noisy steps per round, each on its own Poisson batch (1: the paper's one
        gradient per round); the noise is calibrated for ``rounds * local_steps`` steps.
    histogram : bool
        Whether the silo answers one round-0 histogram (planned in its budget).
    fairness, fairness_weight, n_classes, n_groups, dual_rates
        The objective (see :class:`~skfairdp.fermi.DPFermiClassifier`); one global
        encoding of labels and groups for every silo.
    rho : float
        Lower bound on group frequencies (``calibration="paper"`` uses it).
    calibration : {"accountant", "paper"}
        The silo's noise: the smallest for which its budgeted event meets
        ``(epsilon, delta)``, or Theorem 3.3's closed form (warns when its
        preconditions fail).
    accountant : {"auto", "rdp", "pld"}
    dual_bound : float or "auto"
        ``D`` of Theorem 3.3 (``calibration="paper"`` only); ``"auto"`` from the priors.
    secure_mode : bool
        Noise and sampling from the OS CSPRNG.
    """

    epsilon: float
    delta: float | str = "auto"
    privacy_unit: str = "record"
    max_grad_norm: float = 1.0
    batch_size: int = 256
    rounds: int = 1000
    local_steps: int = 1
    histogram: bool = True
    fairness: str = "demographic_parity"
    fairness_weight: float = 1.0
    n_classes: int = 2
    n_groups: int = 2
    dual_rates: str = "hard"
    rho: float = 0.05
    calibration: str = "accountant"
    accountant: str = "auto"
    dual_bound: float | str = "auto"
    secure_mode: bool = False

    @property
    def private(self) -> bool:
        return not math.isinf(self.epsilon)

    @property
    def steps(self) -> int:
        """Noisy steps the budget covers: ``rounds * local_steps``."""
        return int(self.rounds) * int(self.local_steps)

    def to_dict(self) -> dict:
        return asdict(self)


class Silo:
    """One silo of a federated DP-FERMI run.

    Parameters
    ----------
    X : ndarray of float32, shape (n_j, d)
    y : ndarray of int64, shape (n_j,)
        Label codes in the global encoding.
    groups : ndarray of int64, shape (n_j,)
        Group codes in the global encoding.
    config : SiloConfig
    seed : int or None
        Seed of the silo's own random stream (sampling and noise); ``None`` draws
        one from the OS (use ``config.secure_mode`` for deployments).
    name : str
        For messages.
    device : str
    """

    def __init__(self, X, y, groups, config: SiloConfig, seed=None, name="silo", device="cpu"):
        self.config = config
        self.name = str(name)
        self.X = torch.as_tensor(np.ascontiguousarray(X, dtype=np.float32), device=device)
        self.y = np.asarray(y, dtype=np.int64)
        self.groups = np.asarray(groups, dtype=np.int64)
        n = len(self.y)
        if n == 0 or self.X.shape[0] != n or len(self.groups) != n:
            raise ValueError(f"{self.name}: X, y and groups must have the same, non-zero length")
        if int(config.local_steps) != config.local_steps or config.local_steps < 1:
            raise ValueError(
                f"{self.name}: local_steps must be an integer >= 1, got {config.local_steps!r}"
            )
        self.n_samples = n
        self.random = RandomSource(seed, secure_mode=config.secure_mode, device=device)
        self.recorder = EventRecorder()
        self.delta = resolve_delta(config.delta, n) if config.private else 0.0
        batch = int(config.batch_size)
        if config.private:
            self.sampler = PoissonSampler(n, min(1.0, batch / n), self.random)
            self.sampling_rate = self.sampler.sampling_rate
            self.expected_batch_size = self.sampler.expected_batch_size
        else:
            self.sampler = ShuffledBatches(n, batch, self.random)
            self.sampling_rate = self.sampler.sampling_rate
            self.expected_batch_size = float(self.sampler.batch_size)
            self.recorder.record(dp_accounting.NonPrivateDpEvent())
        self._pending: list = []  # the rest of the current epoch's batches
        self._public_cache: dict | None = None
        self._local_public: dict | None = None  # set while release() takes local steps
        self.rounds_done = 0
        self.histogram_done = False
        # noise multipliers: fixed once, at the silo's first training round
        self.noise = None
        self.histogram_multiplier = self._histogram_multiplier()

    # -- round 0 -------------------------------------------------------------
    def _histogram_multiplier(self) -> float:
        c = self.config
        if not (c.private and c.histogram):
            return math.inf
        share = GROUP_PRIOR_BUDGET_SHARE
        sensitivity = 2.0 if c.privacy_unit == "sensitive" else 1.0
        return reserved_noise_multiplier(share, c.epsilon, self.delta, sensitivity=sensitivity)

    def histogram(self, cells: str) -> dict:
        """Round 0: this silo's noisy counts in layout ``cells`` (once, before training).

        Returns
        -------
        dict
            ``{"counts": ndarray}``.
        """
        c = self.config
        if not c.histogram:
            raise SiloBudgetExceeded(f"{self.name} was not configured to release a histogram")
        if self.histogram_done or self.rounds_done:
            raise SiloBudgetExceeded(
                f"{self.name} releases its histogram once, before training; refused"
            )
        counts = objective.cell_counts(cells, self.y, self.groups, c.n_classes, c.n_groups)
        self.histogram_done = True
        if c.private:
            # record: one row moves one count (sensitivity 1); sensitive: a replaced s
            # moves two counts, modelled as sensitivity 1/sqrt(2) at the replace-one
            # multiplier sized for distance 2 (as DPFermiClassifier)
            moves_two = c.privacy_unit == "sensitive" and cells in ("groups", "labels_groups")
            noisy, _ = noisy_histogram(
                torch.from_numpy(counts),
                self.random,
                noise_multiplier=self.histogram_multiplier,
                sensitivity=math.sqrt(0.5) if moves_two else 1.0,
                recorder=self.recorder,
            )
            counts = noisy.numpy()
        return {"counts": np.asarray(counts, dtype=np.float64)}

    # -- noise ------------------------------------------------------------------
    def budgeted_event(self, steps_multiplier: float, steps: int | None = None):
        """The silo's :func:`budgeted_event`: its histogram (if agreed), then ``steps`` steps.

        ``steps`` defaults to the steps of its budget (``config.steps``: rounds times
        local steps).
        """
        steps = self.config.steps if steps is None else steps
        return budgeted_event(
            self.histogram_multiplier, steps_multiplier, self.sampling_rate, steps
        )

    def calibrate(self, pinv: torch.Tensor) -> dict:
        """Fix the noise multipliers (``primal``, ``dual``, ``effective``) once.

        ``pinv`` (public) is only read by ``calibration="paper"``, whose W radius
        ``D`` and W clip depend on the priors.
        """
        if self.noise is not None:
            return self.noise
        c = self.config
        has_dual = c.fairness_weight > 0
        if not c.private or not (has_dual or c.privacy_unit == "record"):
            self.noise = {"primal": math.inf, "dual": math.inf, "effective": math.inf}
            return self.noise
        if c.calibration == "paper":
            self.noise = self._paper_noise(pinv)
            return self.noise
        ratio = DUAL_NOISE_RATIO if has_dual else math.inf
        spread = math.sqrt(1.0 + ratio**-2)
        try:
            effective = _calibrated(
                c.epsilon,
                self.delta,
                self.sampling_rate,
                c.steps,
                self.histogram_multiplier,
                c.accountant,
                c.privacy_unit,
            )
        except ValueError as exc:
            raise ValueError(
                f"{self.name}: epsilon={c.epsilon:g} at delta={self.delta:g} cannot be met by "
                f"{c.steps} steps ({c.rounds} rounds of {c.local_steps}) at sampling rate "
                f"{self.sampling_rate:.3g} ({exc}); raise epsilon or lower the number of rounds"
            ) from exc
        z = effective * spread
        z_w = DUAL_NOISE_RATIO * z if has_dual else math.inf
        self.noise = {"primal": z, "dual": z_w, "effective": joint_noise_multiplier(z, z_w)}
        return self.noise

    def _paper_noise(self, pinv: torch.Tensor) -> dict:
        c = self.config
        m, n, steps = self.expected_batch_size, self.n_samples, c.steps
        lam = float(c.fairness_weight)
        has_dual = lam > 0
        problems = theorem_3_3_preconditions(
            epsilon=c.epsilon, delta=self.delta, n_samples=n, batch_size=m, steps=steps
        )
        if problems:
            warnings.warn(
                f"{self.name}: calibration='paper': Theorem 3.3's preconditions fail ("
                + "; ".join(problems)
                + "); its sigmas then carry no guarantee. privacy_spent_ reports what the "
                "accountant says the executed event costs.",
                UserWarning,
                stacklevel=3,
            )
        # Theorem 3.3's W radius from what the silo controls: rho bounds every prior from
        # below, so pinv <= rho^-1/2; the server's pinv would let it shrink the noise
        dual_bound = (
            objective.DUAL_BOUND_MARGIN * math.sqrt(c.n_classes) / math.sqrt(float(c.rho))
            if c.dual_bound == "auto"
            else float(c.dual_bound)
        )
        sensitive_only = c.privacy_unit == "sensitive"
        sigmas = theorem_3_3_sigmas(
            epsilon=c.epsilon,
            delta=self.delta,
            n_samples=n,
            steps=steps,
            rho=float(c.rho),
            lipschitz=float(c.max_grad_norm),
            w_bound=dual_bound,
            n_classes=c.n_classes,
            sensitive_only=sensitive_only,
        )
        # sigmas are stds on batch means; ours go on sums of m rows (as DPFermiClassifier)
        theta_std = sigmas.sigma_theta * m * (lam if sensitive_only else 1.0)
        z = theta_std / float(c.max_grad_norm) if theta_std > 0 else math.inf
        z_w = (lam * sigmas.sigma_w * m) / w_clip_norm(lam, pinv) if has_dual else math.inf
        self.paper_sigmas = sigmas
        return {"primal": z, "dual": z_w, "effective": joint_noise_multiplier(z, z_w)}

    # -- one training round -----------------------------------------------------
    def check_broadcast(self, broadcast: dict) -> None:
        """Refuse a broadcast with fields a server may not set (e.g. noise, budget)."""
        extra = set(broadcast) - BROADCAST_KEYS - LOCAL_STEP_KEYS
        required = BROADCAST_KEYS | (LOCAL_STEP_KEYS if self.config.local_steps > 1 else set())
        missing = required - set(broadcast)
        if extra or missing:
            raise ValueError(
                f"{self.name} refuses the broadcast: fields {sorted(extra)} are not the "
                f"server's to send (a silo's noise, clipping and budget are its own) "
                if extra
                else f"{self.name} refuses the broadcast: missing fields {sorted(missing)}"
            )

    def begin_round(self, broadcast: dict) -> SiloBatch:
        """Check the request and the budget, calibrate (first round), draw the batch.

        Called alone for one step per round (``local_steps=1``); with more,
        :meth:`release` calls it for each of its steps (the checks are the round's).
        """
        if self._local_public is not None:  # a step of release()'s round, already checked
            return self._draw(self._local_public)
        public = self._open_round(broadcast)
        if self.config.local_steps != 1:
            raise ValueError(
                f"{self.name} takes {self.config.local_steps} local steps per round: "
                "call release(), which steps its own copy of the model between them"
            )
        return self._draw(public)

    def _open_round(self, broadcast: dict) -> dict:
        """Check the request and the budget; calibrate (first round); the public tensors."""
        self.check_broadcast(broadcast)
        c = self.config
        if self.rounds_done >= c.rounds:
            raise SiloBudgetExceeded(
                f"{self.name} has answered its {c.rounds} budgeted rounds "
                f"(epsilon={c.epsilon:g}, delta={self.delta:g}); round "
                f"{int(broadcast['round'])} refused"
            )
        public = self._public(broadcast)
        self.calibrate(public["pinv"])
        return public

    def _draw(self, public: dict) -> SiloBatch:
        """The next Poisson batch (rows, per-row tensors, clip norms) of one step."""
        c, noise = self.config, self.noise
        idx_t = torch.from_numpy(self._next_batch())
        codes, weights = (t.index_select(0, idx_t) for t in public["rows"])
        private = c.private and math.isfinite(noise["effective"])
        self._round = {"size": len(idx_t), "dual_clip": public["dual_clip"], "private": private}
        return SiloBatch(
            X=self.X.index_select(0, idx_t.to(self.X.device)),
            codes=codes,
            weights=weights,
            max_grad_norm=float(c.max_grad_norm) if c.private else None,
            dual_clip=public["dual_clip"] if c.private else None,
        )

    def _public(self, broadcast: dict) -> dict:
        """What the silo derives from the broadcast priors and label weights.

        ``pinv`` (a copy), the W clip and the per-row tensors, rebuilt only when
        the broadcast values change (the server sends the same ones every round).
        """
        pinv = np.asarray(broadcast["pinv"])
        label_weights = np.asarray(broadcast["label_weights"], dtype=float)
        key = (pinv.dtype.str, pinv.shape, pinv.tobytes(), label_weights.tobytes())
        if self._public_cache is None or self._public_cache["key"] != key:
            c = self.config
            pinv_t = torch.tensor(pinv, dtype=torch.float32)
            rows = objective.row_tensors(
                c.fairness, c.fairness_weight, self.y, self.groups, c.n_classes, label_weights
            )
            self._public_cache = {
                "key": key,
                "pinv": pinv_t,
                "dual_clip": w_clip_norm(c.fairness_weight, pinv_t),
                "rows": rows,
                "problem": None,
            }
        return self._public_cache

    def _next_batch(self) -> np.ndarray:
        if not self._pending:  # one (expected) epoch of batches drawn at once
            self._pending = list(self.sampler.epoch())
        return self._pending.pop(0)

    def finish_round(self, primal: torch.Tensor, dual: torch.Tensor | None) -> dict:
        """Noise the clipped sums with the silo's own stream, record, average: the reply."""
        reply = self._noisy_means(primal, dual)
        self.rounds_done += 1
        return reply

    def _noisy_means(self, primal: torch.Tensor, dual: torch.Tensor | None) -> dict:
        """One step's release: the clipped sums noised (recorded) and divided by ``m``."""
        c, state = self.config, self._round
        if state["private"]:
            with self.recorder.batch(self.sampling_rate):
                # sensitive unit with lambda = 0: nothing depends on s, nothing to noise
                if math.isfinite(self.noise["primal"]):
                    primal = gaussian_sum(
                        primal, c.max_grad_norm, self.noise["primal"], self.random, self.recorder
                    )[0]
                if dual is not None:
                    dual = gaussian_sum(
                        dual, state["dual_clip"], self.noise["dual"], self.random, self.recorder
                    )[0]
        if c.private:  # the expected batch size q n_j: n_j is public, as n in DP-SGD
            denominator = self.expected_batch_size
        else:
            denominator = float(max(state["size"], 1))
        self._round = None
        reply = {"theta": _float32_array(primal / denominator)}
        if dual is not None:
            reply["W"] = _float32_array(dual / denominator)
        return reply

    def problem(self, broadcast: dict):
        """The engine problem of a round, from the broadcast ``W`` and ``pinv``.

        One problem object per broadcast ``pinv``: a later round's call replaces
        its ``W`` (the engine's ``state``), as an engine step's dual update does.
        """
        c = self.config
        public = self._public(broadcast)
        W = torch.as_tensor(np.asarray(broadcast["W"]), dtype=torch.float32)
        if public["problem"] is None:
            public["problem"] = objective.make_problem(
                W=W,
                pinv=public["pinv"],
                fairness=c.fairness,
                fairness_weight=c.fairness_weight,
                privacy_unit=c.privacy_unit,
                private=c.private,
                dual_rates=c.dual_rates,
            )
        else:
            public["problem"].state = {"W": W}
        return public["problem"]

    def release(self, broadcast: dict, module, grads_of) -> dict:
        """One whole training round for this silo alone (what a Flower ClientApp runs).

        ``module`` must hold the broadcast ``theta`` (``grads_of`` is bound to it). With
        ``local_steps = K > 1`` the silo steps ``module`` (its own copy: it is left at
        the iterate of the last step) and its ``W`` after each of the first ``K - 1``
        noisy steps and replies the sums of the ``K`` noisy mean gradients.
        """
        if self.config.local_steps == 1:
            batch = self.begin_round(broadcast)
            ((primal, dual),) = clipped_sums(grads_of, self.problem(broadcast), [batch])
            return self.finish_round(primal, dual)
        return self._local_round(broadcast, module, grads_of)

    def _local_round(self, broadcast: dict, module, grads_of) -> dict:
        public = self._open_round(broadcast)
        try:
            self._local_public = public
            return self._local_steps(broadcast, module, grads_of)
        finally:
            self._local_public = None

    def _local_steps(self, broadcast: dict, module, grads_of) -> dict:
        lr, lr_dual = float(broadcast["lr"]), float(broadcast["lr_dual"])
        dual_bound = float(broadcast["dual_bound"])
        params = [p for p in module.parameters() if p.requires_grad]
        problem = self.problem(broadcast)
        W = problem.W
        total: dict = {}
        for k in range(self.config.local_steps):
            if k:
                problem.state = {"W": W}
            ((primal, dual),) = clipped_sums(grads_of, problem, [self.begin_round(broadcast)])
            step = self._noisy_means(primal, dual)
            for key, value in step.items():
                total[key] = value if key not in total else total[key] + value
            if k + 1 == self.config.local_steps:
                break
            with torch.no_grad():  # the server's step, on the silo's own copy
                flat = torch.from_numpy(step["theta"])
                for p, g in zip(params, flat.split([p.numel() for p in params])):
                    p.add_(g.view_as(p).to(p.device), alpha=-lr)
                if "W" in step:
                    W = torch.add(W, torch.from_numpy(step["W"]).view_as(W), alpha=lr_dual)
                    W = project_frobenius(W, dual_bound)
        self.rounds_done += 1
        return total

    # -- accounting -------------------------------------------------------------
    @property
    def dp_event(self) -> dp_accounting.DpEvent:
        """What the silo has released so far (recorded as it ran)."""
        return self.recorder.build()

    def privacy_spent(self):
        """``(epsilon, delta)`` of :attr:`dp_event` by the silo's accountant."""
        c = self.config
        return epsilon_spent(
            self.dp_event, self.delta, accountant=c.accountant, privacy_unit=c.privacy_unit
        )

    # -- persistence (a Flower ClientApp is a fresh process every round) ------------
    def state_bytes(self) -> bytes:
        """Everything that changes while the silo answers: random stream, counters, events."""
        gen = self.random.cpu_generator
        return pickle.dumps(
            {
                "generator": None if gen is None else gen.get_state(),
                "rounds_done": self.rounds_done,
                "histogram_done": self.histogram_done,
                "noise": self.noise,
                "recorder": self.recorder,
                "pending": self._pending,
            }
        )

    def load_state_bytes(self, blob: bytes) -> None:
        """Restore what :meth:`state_bytes` saved (the silo's own, local state)."""
        state = pickle.loads(blob)
        if state["generator"] is not None:
            self.random.cpu_generator.set_state(state["generator"])
        self.rounds_done = state["rounds_done"]
        self.histogram_done = state["histogram_done"]
        self.noise = state["noise"]
        self.recorder = state["recorder"]
        self._pending = state["pending"]
