"""The silo and server of :mod:`skfairdp.federated` on Flower's Message API.

Optional: needs the ``federated`` extra (``flwr>=1.41,<1.42``, Python >= 3.11):
``pip install -e ".[federated]"`` from a checkout. The runnable app is
``skfairdp/federated/flower_app`` (``flwr run``); its ServerApp is :data:`server_app`
here, its ClientApp :data:`~.flower_client.client_app` (light: Flower starts a
process per message; it forwards to the silo's worker, :mod:`~.silo_worker`).

**ClientApp (one per silo, on the silo's SuperNode).** Everything that decides how
private a reply is comes from the SuperNode's own *node config*, which the server
cannot change: ``data-path`` (an ``.npz`` with ``X`` float32, ``y`` label codes
and ``s`` group codes in the run's global encoding; sealed, with its key in the
SuperNode's environment, when a fit writes it: :mod:`~.silo_files`), ``epsilon``, ``delta``,
``privacy-unit``, ``max-grad-norm``, ``batch-size``, ``rounds`` (the silo's
budget), ``local-steps`` (steps per round, 1 when omitted), ``histogram``,
``calibration``, ``accountant``, ``rho``, ``dual-bound``,
``seed`` (omit it in deployments: the noise then comes from the OS CSPRNG) and
``report-path`` (where the silo writes its own privacy report). The objective
(``fairness``, ``fairness-weight``, ``n-classes``, ``n-groups``, ``dual-rates``)
comes from the run config. Flower 1.41 starts a fresh ClientApp process per message:
the ClientApp (:mod:`~.flower_client`) only checks the message and hands it to the
silo's worker (:mod:`~.silo_worker`, one process per silo and run: rows, calibration,
random stream and accountant loaded once). The silo's state (stream, counters, noise
multipliers, recorded events) comes back with every reply and is kept in
``context.state`` (it never leaves the SuperNode), so a restarted worker goes on from
it. The silo's report computes ``privacy_spent`` once, after its last budgeted round.

Message types: ``query.histogram`` (round 0; config ``cells``; reply ArrayRecord
``counts``) and ``train`` (ArrayRecord ``state`` with ``theta``, ``W``, ``pinv``,
``label_weights`` and ConfigRecord ``config`` with ``round``, ``lr``, ``lr_dual`` and
``dual_bound``, the server's public step sizes a silo's local steps use; reply ArrayRecord
``reply`` with exactly ``theta`` and, when ``lambda > 0``, ``W``: the noisy mean
gradients). A request the silo refuses (an unknown field, a round past its
budget, a second histogram) raises in the ClientApp; Flower returns the error to
the ServerApp, which stops the run with a message naming the silo.

**ServerApp.** Waits for ``num-silos`` SuperNodes, runs round 0 (if needed), then
``rounds`` rounds of :class:`~skfairdp.federated.server.Server` updates, and
saves ``theta``, ``W`` and the public statistics to ``output-path`` (run config).
"""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import torch

from .flower_install import require_flwr

require_flwr()  # a missing flwr: an error naming the extra and its install line

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402

from . import objective  # noqa: E402
from .flower_client import client_app, histogram, train  # noqa: E402
from .flower_silo import load_theta as _load_theta  # noqa: E402, F401 (fit_flower, tests)
from .flower_silo import module_for as _module  # noqa: E402
from .server import Server, aggregation_weights  # noqa: E402
from .silo import LOCAL_STEP_KEYS, SiloConfig  # noqa: E402

__all__ = ["client_app", "histogram", "node_config_for", "server_app", "train"]

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
    "local-steps",
    "histogram",
    "calibration",
    "accountant",
    "rho",
    "dual-bound",
    "seed",
    "secure-mode",
    "report-path",
    "silo-worker",
)

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
        "local-steps": int(config.local_steps),
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


def _array(values: np.ndarray) -> Array:
    return Array(np.ascontiguousarray(values))


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
        steps = int(run["rounds"]) * int(run.get("local-steps", 1))
        step = objective.dual_step(ratio, float(statistics["pinv"].max()), steps)
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
        config = ConfigRecord(
            {"round": int(state["round"]), **{k: float(state[k]) for k in LOCAL_STEP_KEYS}}
        )
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
