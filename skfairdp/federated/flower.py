"""The silo and server of :mod:`skfairdp.federated` on Flower's Message API.

Optional: needs ``pip install "skfairdp[federated]"`` (``flwr>=1.41,<1.42``, Python
>= 3.11). The runnable app is ``skfairdp/federated/flower_app`` (``flwr run``);
its components import :data:`client_app` and :data:`server_app` from here.

**ClientApp (one per silo, on the silo's SuperNode).** Everything that decides how
private a reply is comes from the SuperNode's own *node config*, which the server
cannot change: ``data-path`` (an ``.npz`` with ``X`` float32, ``y`` label codes
and ``s`` group codes in the run's global encoding), ``epsilon``, ``delta``,
``privacy-unit``, ``max-grad-norm``, ``batch-size``, ``rounds`` (the silo's
budget), ``histogram``, ``calibration``, ``accountant``, ``rho``, ``dual-bound``,
``seed`` (omit it in deployments: the noise then comes from the OS CSPRNG) and
``report-path`` (where the silo writes its own privacy report). The objective
(``fairness``, ``fairness-weight``, ``n-classes``, ``n-groups``, ``dual-rates``)
comes from the run config. Flower starts a fresh ClientApp process per message,
so the silo's random stream, counters, noise multipliers and recorded events are
kept in ``context.state`` between rounds (they never leave the SuperNode).

Message types: ``query.histogram`` (round 0; config ``cells``; reply ArrayRecord
``counts``) and ``train`` (ArrayRecord ``state`` with ``theta``, ``W``, ``pinv``,
``label_weights`` and ConfigRecord ``config`` with ``round``; reply ArrayRecord
``reply`` with exactly ``theta`` and, when ``lambda > 0``, ``W``: the noisy mean
gradients). A request the silo refuses (an unknown field, a round past its
budget, a second histogram) raises in the ClientApp; Flower returns the error to
the ServerApp, which stops the run with a message naming the silo.

**ServerApp.** Waits for ``num-silos`` SuperNodes, runs round 0 (if needed), then
``rounds`` rounds of :class:`~skfairdp.federated.server.Server` updates, and
saves ``theta``, ``W`` and the public statistics to ``output-path`` (run config).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import time
from pathlib import Path

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from ..fermi.problem import auto_dual_step
from ..nn import build_module
from . import objective
from .server import Server, aggregation_weights
from .silo import Silo, SiloConfig

__all__ = ["client_app", "node_config_for", "server_app"]

STATE_ARRAYS = ("theta", "W", "pinv", "label_weights")
#: seconds between the ServerApp's pulls of replies (run config ``poll-interval``)
POLL_INTERVAL = 0.1
#: node-config keys: what each silo decides for itself
NODE_KEYS = (
    "data-path",
    "epsilon",
    "delta",
    "privacy-unit",
    "max-grad-norm",
    "batch-size",
    "rounds",
    "histogram",
    "calibration",
    "accountant",
    "rho",
    "dual-bound",
    "seed",
    "secure-mode",
    "report-path",
)

client_app = ClientApp()
server_app = ServerApp()


# -- configs --------------------------------------------------------------------
def node_config_for(config: SiloConfig, data_path: str, seed, report_path: str = "") -> dict:
    """A silo's node config from its :class:`SiloConfig` (values TOML can hold)."""
    node = {
        "data-path": str(data_path),
        "epsilon": float(config.epsilon) if math.isfinite(config.epsilon) else "inf",
        "delta": config.delta if isinstance(config.delta, str) else float(config.delta),
        "privacy-unit": config.privacy_unit,
        "max-grad-norm": float(config.max_grad_norm),
        "batch-size": int(config.batch_size),
        "rounds": int(config.rounds),
        "histogram": bool(config.histogram),
        "calibration": config.calibration,
        "accountant": config.accountant,
        "rho": float(config.rho),
        "dual-bound": config.dual_bound
        if isinstance(config.dual_bound, str)
        else float(config.dual_bound),
        "secure-mode": bool(config.secure_mode),
        "report-path": str(report_path),
    }
    if seed is not None:
        node["seed"] = int(seed)
    return node


def _silo_config(node: dict, run: dict) -> SiloConfig:
    epsilon = node["epsilon"]
    return SiloConfig(
        epsilon=math.inf if epsilon in ("inf", math.inf) else float(epsilon),
        delta=node.get("delta", "auto"),
        privacy_unit=str(node.get("privacy-unit", "record")),
        max_grad_norm=float(node["max-grad-norm"]),
        batch_size=int(node["batch-size"]),
        rounds=int(node["rounds"]),
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
        secure_mode=bool(node.get("secure-mode", False)),
    )


def _load_silo(context: Context) -> Silo:
    node = dict(context.node_config)
    data = np.load(node["data-path"])
    config = _silo_config(node, dict(context.run_config))
    silo = Silo(
        data["X"],
        data["y"],
        data["s"],
        config,
        seed=node.get("seed"),
        name=f"silo {Path(str(node['data-path'])).stem}",
    )
    if "silo" in context.state.config_records:
        silo.load_state_bytes(context.state.config_records["silo"]["state"])
    return silo


def _save_silo(silo: Silo, context: Context) -> None:
    context.state.config_records["silo"] = ConfigRecord({"state": silo.state_bytes()})
    path = str(context.node_config.get("report-path", ""))
    if path:
        spent = silo.privacy_spent()
        report = {
            "epsilon": spent.epsilon,
            "delta": spent.delta,
            "rounds_done": silo.rounds_done,
            "histogram_done": silo.histogram_done,
            "noise": silo.noise,
            "dp_event": repr(silo.dp_event),
        }
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, default=float)
        os.replace(tmp, path)
        with open(tmp, "wb") as f:
            pickle.dump(silo.dp_event, f)
        os.replace(tmp, path + ".event")


# -- ClientApp ------------------------------------------------------------------
@client_app.query("histogram")
def histogram(message: Message, context: Context) -> Message:
    """Round 0: the silo's noisy histogram in the requested layout."""
    config = dict(message.content.config_records["config"])
    if set(config) != {"cells"} or set(message.content.array_records):
        raise ValueError(f"histogram request must hold only config 'cells', got {sorted(config)}")
    silo = _load_silo(context)
    counts = silo.histogram(str(config["cells"]))["counts"]
    _save_silo(silo, context)
    return Message(
        RecordDict({"counts": ArrayRecord({"counts": _array(counts)})}), reply_to=message
    )


@client_app.train()
def train(message: Message, context: Context) -> Message:
    """One training round: check, sample, clip, noise (own stream), reply the means."""
    content = message.content
    if set(content.array_records) != {"state"} or set(content.config_records) != {"config"}:
        raise ValueError(
            "a training request holds exactly ArrayRecord 'state' and ConfigRecord 'config'"
        )
    broadcast = {k: v.numpy() for k, v in content.array_records["state"].items()}
    broadcast.update(dict(content.config_records["config"]))
    silo = _load_silo(context)
    silo.check_broadcast(broadcast)  # refuses any field beyond BROADCAST_KEYS
    run = dict(context.run_config)
    module = _module(silo.X.shape[1], int(run["n-classes"]), run)
    _load_theta(module, broadcast["theta"])
    from ..engine import PerSampleGradients

    grads_of = PerSampleGradients(module)
    try:
        reply = silo.release(broadcast, module, grads_of)
    finally:
        grads_of.close()
        _save_silo(silo, context)
    return Message(
        RecordDict({"reply": ArrayRecord({k: _array(v) for k, v in reply.items()})}),
        reply_to=message,
    )


def _array(values: np.ndarray):
    from flwr.app import Array

    return Array(np.ascontiguousarray(values))


def _module(n_features: int, n_classes: int, run: dict, seed: int | None = None):
    hidden = tuple(int(h) for h in str(run.get("hidden-layer-sizes", "")).split(",") if h.strip())
    # seeded: the server's initial theta, from the run's init seed (the global RNG untouched)
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


def _load_theta(module, theta: np.ndarray) -> None:
    flat = torch.as_tensor(np.asarray(theta, dtype=np.float32))
    params = [p for p in module.parameters() if p.requires_grad]
    if flat.numel() != sum(p.numel() for p in params):
        raise ValueError(
            f"theta has {flat.numel()} values, the module {sum(p.numel() for p in params)}"
        )
    with torch.no_grad():
        for p, chunk in zip(params, flat.split([p.numel() for p in params])):
            p.copy_(chunk.view_as(p))


# -- ServerApp ------------------------------------------------------------------
@server_app.main()
def main(grid: Grid, context: Context) -> None:
    """Round 0 (if needed), then ``rounds`` descent-ascent rounds; save the result."""
    run = dict(context.run_config)
    n_silos = int(run["num-silos"])
    timeout = float(run.get("round-timeout", 120.0))
    poll = float(run.get("poll-interval", POLL_INTERVAL))
    nodes = _wait_for_nodes(grid, n_silos, float(run.get("wait-timeout", 120.0)))
    fairness, lam = str(run["fairness"]), float(run["fairness-weight"])
    n_classes, n_groups = int(run["n-classes"]), int(run["n-groups"])
    cells = str(run.get("histogram-cells", "")) or None
    totals, sizes = None, None
    if cells is not None:
        msgs = [
            Message(
                RecordDict({"config": ConfigRecord({"cells": cells})}),
                dst_node_id=node,
                message_type="query.histogram",
                group_id="0",
            )
            for node in nodes
        ]
        replies = _collect(grid, msgs, nodes, 0, timeout, poll)
        counts = [r["counts"]["counts"].numpy() for r in replies]
        totals = np.sum(counts, axis=0)
        sizes = np.array([c.sum() for c in counts])
    priors = run.get("group-priors", "")
    priors = np.array(json.loads(priors)) if priors else None
    statistics = objective.public_statistics(
        fairness=fairness,
        fairness_weight=lam,
        n_classes=n_classes,
        n_groups=n_groups,
        rho=float(run.get("rho", 0.05)),
        cells=cells,
        totals=totals,
        group_priors=priors,
    )
    lr_dual = run.get("lr-dual", "auto")
    weights = aggregation_weights(str(run.get("aggregation", "uniform")), sizes, n_silos)
    if lr_dual == "auto":
        # the silos' declared W-noise per batch (z_w / m_j): DP-FERMI's rule for the average
        noise = json.loads(str(run.get("dual-noise-per-batch", "[]")) or "[]")
        ratio = math.sqrt(sum((a * z) ** 2 for a, z in zip(weights, noise)))
        step = auto_dual_step(
            1.0, ratio if ratio > 0 else math.inf, float(statistics["pinv"].max())
        )
        lr_dual = step / lam if lam > 0 else 0.0
    dual_bound = run.get("dual-bound", "auto")
    dual_bound = statistics["dual_bound_auto"] if dual_bound == "auto" else float(dual_bound)
    rounds = int(run["rounds"])
    module = _module(int(run["n-features"]), n_classes, run, seed=int(run["init-seed"]))
    server = Server(
        module,
        torch.optim.SGD([p for p in module.parameters() if p.requires_grad], lr=float(run["lr"])),
        statistics,
        fairness=fairness,
        fairness_weight=lam,
        privacy_unit=str(run.get("privacy-unit", "record")),
        private=bool(run.get("private", True)),
        dual_rates=str(run.get("dual-rates", "hard")),
        dual_bound=dual_bound,
        lr_dual=float(lr_dual),
        weights=weights,
        rounds=rounds,
        n_classes=n_classes,
        iterate=str(run.get("iterate", "average")),
        lr_decay=float(run.get("lr-decay", 1.0)),
        rounds_per_epoch=int(run.get("rounds-per-epoch", 1)),
    )
    timings, sent = [], []
    out = str(run.get("output-path", ""))

    def save(final: bool) -> None:
        """The server's state (every round: a failed run leaves its last good round)."""
        if not out:
            return
        tmp = out + ".tmp.npz"
        np.savez(
            tmp,
            theta=server.theta(),
            W=server.W.cpu().numpy(),
            rounds_done=server.round,
            final=final,
            priors=statistics["priors"],
            label_weights=statistics["label_weights"],
            aggregation_weights=server.weights,
            dual_bound=dual_bound,
            lr_dual=float(lr_dual),
            round_seconds=np.array(timings),
            reply_bytes=np.array(sent),
            broadcast_bytes=np.array(broadcast_bytes),
        )
        os.replace(tmp, out)

    broadcast_bytes = 0
    for t in range(rounds):
        start = time.perf_counter()
        state = server.broadcast()
        arrays = ArrayRecord({k: _array(np.asarray(state[k])) for k in STATE_ARRAYS})
        broadcast_bytes = arrays.count_bytes()
        config = ConfigRecord({"round": int(state["round"])})
        msgs = [
            Message(
                RecordDict({"state": arrays, "config": config}),
                dst_node_id=node,
                message_type="train",
                group_id=str(t + 1),
            )
            for node in nodes
        ]
        replies = _collect(grid, msgs, nodes, t + 1, timeout, poll)
        server.apply([{k: v.numpy() for k, v in r["reply"].items()} for r in replies])
        timings.append(time.perf_counter() - start)
        sent.append(int(sum(r["reply"].count_bytes() for r in replies)))
        save(final=False)
    server.finish()
    save(final=True)


def _wait_for_nodes(grid: Grid, n_silos: int, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= n_silos:
            return nodes[:n_silos]
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(nodes)} of {n_silos} silos connected in {timeout:g} s")
        time.sleep(0.2)


def _collect(grid: Grid, msgs, nodes, round_, timeout, poll=POLL_INTERVAL):
    """Send, wait for every silo; a missing or failed reply stops the run (fail policy).

    Uses the Grid's ``push_messages`` / ``pull_messages`` with a ``poll`` second
    interval: ``Grid.send_and_receive`` sleeps 3 s between pulls in flwr 1.41,
    which would add up to 3 s to every round. The first failed reply stops the
    wait (the run is going to fail anyway).
    """
    ids = set(grid.push_messages(msgs))
    deadline = time.monotonic() + timeout
    replies: dict[int, Message] = {}
    while ids:
        for reply in grid.pull_messages(ids):
            ids.discard(reply.metadata.reply_to_message_id)
            replies[reply.metadata.src_node_id] = reply
        if any(r.has_error() for r in replies.values()) or time.monotonic() > deadline:
            break
        if ids:
            time.sleep(poll)
    failed = {n: replies[n].error for n in nodes if n in replies and replies[n].has_error()}
    if failed:
        raise RuntimeError(
            f"round {round_}: silos refused or failed: "
            + "; ".join(f"node {n}: {e.reason}" for n, e in failed.items())
            + " (the run stops; every silo keeps its own accounting of what it released)"
        )
    missing = [n for n in nodes if n not in replies]
    if missing:
        raise RuntimeError(
            f"round {round_}: silos on nodes {missing} did not reply within {timeout:g} s; "
            "the run stops (every silo keeps its own accounting of what it released)"
        )
    return [replies[n].content for n in nodes]
