"""The silo side of the Flower app: a :class:`~.silo.Silo` built from a SuperNode's config.

:class:`SiloHost` answers the two requests a ClientApp forwards (the round-0
histogram, a training round) and writes the silo's own report. It runs in the
silo's worker process (:mod:`~skfairdp.federated.silo_worker`, kept for the whole
run: torch, dp-accounting and the rows are loaded once) or, with node config
``silo-worker=false``, in the ClientApp process itself.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import numpy as np
import torch

from ..nn import build_module
from . import silo_files
from .silo import Silo, SiloConfig

__all__ = ["SiloHost", "load_theta", "module_for", "silo_config"]


def silo_config(node: dict, run: dict) -> SiloConfig:
    """A silo's :class:`SiloConfig`: its privacy from its node config, the objective from run."""
    epsilon = node["epsilon"]
    return SiloConfig(
        epsilon=math.inf if epsilon in ("inf", math.inf) else float(epsilon),
        delta=node.get("delta", "auto"),
        privacy_unit=str(node.get("privacy-unit", "record")),
        max_grad_norm=float(node["max-grad-norm"]),
        batch_size=int(node["batch-size"]),
        rounds=int(node["rounds"]),
        local_steps=int(node.get("local-steps", 1)),
        histogram=bool(node.get("histogram", True)),
        fairness=str(run["fairness"]),
        fairness_weight=float(run["fairness-weight"]),
        n_classes=int(run["n-classes"]),
        n_groups=int(run["n-groups"]),
        dual_rates=str(run.get("dual-rates", "hard")),
        rho=float(node.get("rho", 0.05)),
        calibration=str(node.get("calibration", "accountant")),
        accountant=str(node.get("accountant", "auto")),
        dual_bound=node.get("dual-bound", "auto"),
        # no seed in the node config: the OS CSPRNG (a seeded stream is for experiments)
        secure_mode=_flag(node.get("secure-mode", "seed" not in node)),
    )


def _flag(value) -> bool:
    """A node-config boolean (``true``/``false`` strings as Flower's TOML parser may give)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)


def module_for(n_features: int, n_classes: int, run: dict, seed: int | None = None):
    """The run's module (``hidden-layer-sizes``); seeded: the server's initial theta."""
    hidden = tuple(int(h) for h in str(run.get("hidden-layer-sizes", "")).split(",") if h.strip())
    # the run's init seed, the global RNG untouched
    with torch.random.fork_rng(devices=[]) if seed is not None else contextlib.nullcontext():
        if seed is not None:
            torch.manual_seed(int(seed))
        return build_module(
            None,
            n_features=n_features,
            n_outputs=n_classes,
            hidden_layer_sizes=hidden,
            module_kwargs={},
        )


def load_theta(module, theta: np.ndarray) -> None:
    """Copy the flat parameter vector ``theta`` into ``module``."""
    flat = torch.as_tensor(np.asarray(theta, dtype=np.float32))
    params = [p for p in module.parameters() if p.requires_grad]
    if flat.numel() != sum(p.numel() for p in params):
        raise ValueError(
            f"theta has {flat.numel()} values, the module {sum(p.numel() for p in params)}"
        )
    with torch.no_grad():
        for p, chunk in zip(params, flat.split([p.numel() for p in params])):
            p.copy_(chunk.view_as(p))


class SiloHost:
    """One silo of one run: its rows, its :class:`Silo` (state) and its model copy.

    Parameters
    ----------
    node : dict
        The SuperNode's node config (``data-path``, the silo's privacy settings). A
        sealed ``data-path`` is opened with the fit's key (:mod:`.silo_files`).
    run : dict
        The run config (the objective).
    state : bytes, optional
        :meth:`Silo.state_bytes` saved by an earlier process of the same run.
    """

    def __init__(self, node: dict, run: dict, state: bytes | None = None):
        self.node, self.run = dict(node), dict(run)
        data = silo_files.read_data(self.node["data-path"])
        self.silo = Silo(
            data["X"],
            data["y"],
            data["s"],
            silo_config(self.node, self.run),
            seed=self.node.get("seed"),
            name=f"silo {Path(str(self.node['data-path'])).stem}",
        )
        if state is not None:
            self.silo.load_state_bytes(state)
        self._module = self._grads_of = None

    @property
    def counters(self) -> tuple[int, bool]:
        """``(rounds answered, histogram released)``."""
        return self.silo.rounds_done, self.silo.histogram_done

    @property
    def finished(self) -> bool:
        """Whether the silo has answered every round of its budget."""
        return self.silo.rounds_done >= self.silo.config.rounds

    def histogram(self, cells: str) -> dict:
        try:
            return {"counts": self.silo.histogram(str(cells))["counts"]}
        finally:
            self.write_report()

    def train(self, broadcast: dict) -> dict:
        """One round: check the broadcast and the budget, release the noisy means."""
        self.silo.check_broadcast(broadcast)  # refuses any field beyond BROADCAST_KEYS
        if self._module is None:
            from ..engine import PerSampleGradients

            n_features, n_classes = self.silo.X.shape[1], int(self.run["n-classes"])
            self._module = module_for(n_features, n_classes, self.run)
            self._grads_of = PerSampleGradients(self._module)
        load_theta(self._module, broadcast["theta"])
        try:
            return self.silo.release(broadcast, self._module, self._grads_of)
        finally:
            self.write_report()

    def state_bytes(self) -> bytes:
        return self.silo.state_bytes()

    def close(self) -> None:
        if self._grads_of is not None:
            self._grads_of.close()
            self._grads_of = None

    def write_report(self) -> None:
        """The silo's report at ``report-path`` (if set) and its ``DpEvent`` beside it.

        Sealed under the fit's key when this process has one (:mod:`.silo_files`):
        the event's sampling rate gives the silo's size. ``epsilon`` is the
        accountant's value of the silo's event, computed once, after its last
        budgeted round (``None`` before: its releases so far are a
        prefix of its budgeted event, so it has spent at most its target).
        """
        path = str(self.node.get("report-path", ""))
        if not path:
            return
        silo = self.silo
        report = {
            "epsilon": silo.privacy_spent().epsilon if self.finished else None,
            "delta": silo.delta,
            "rounds_done": silo.rounds_done,
            "rounds_budget": silo.config.rounds,
            "histogram_done": silo.histogram_done,
            "noise": silo.noise,
            "dp_event": repr(silo.dp_event),
        }
        silo_files.write_report(path, report, silo.dp_event)
