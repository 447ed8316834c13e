"""The ClientApp of the Flower app: light, since Flower starts one process per message.

It imports flwr, numpy and the standard library only. Each message is checked
here (which records it may hold), then handed to the silo: by default to the
silo's worker (:mod:`~skfairdp.federated.silo_worker`, started on the first
message of the run and kept for it), or, with node config ``silo-worker=false``,
to a :class:`~.flower_silo.SiloHost` built in this process. The silo's state comes
back with every reply and is kept in ``context.state`` before the reply is sent,
so a restarted worker (or process) goes on from exactly what was released.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from .flower_install import require_flwr

require_flwr()  # a missing flwr: an error naming the extra and its install line

import numpy as np  # noqa: E402
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

__all__ = ["client_app", "histogram", "train"]

#: seconds a new worker may take to start (imports torch and dp-accounting)
WORKER_START_SECONDS = 300.0
#: seconds without a request after which a worker exits
WORKER_IDLE_SECONDS = 900.0

client_app = ClientApp()
#: in-process hosts (``silo-worker=false``), by (run, node)
_HOSTS: dict = {}


@client_app.query("histogram")
def histogram(message: Message, context: Context) -> Message:
    """Round 0: the silo's noisy histogram in the requested layout."""
    config = dict(message.content.config_records["config"])
    if set(config) != {"cells"} or set(message.content.array_records):
        raise ValueError(f"histogram request must hold only config 'cells', got {sorted(config)}")
    reply = _ask(context, {"kind": "histogram", "cells": str(config["cells"])})
    return Message(
        RecordDict({"counts": ArrayRecord({"counts": _array(reply["counts"])})}),
        reply_to=message,
    )


@client_app.train()
def train(message: Message, context: Context) -> Message:
    """One training round: the silo checks, samples, clips, noises and replies the means."""
    content = message.content
    if set(content.array_records) != {"state"} or set(content.config_records) != {"config"}:
        raise ValueError(
            "a training request holds exactly ArrayRecord 'state' and ConfigRecord 'config'"
        )
    broadcast = {k: v.numpy() for k, v in content.array_records["state"].items()}
    broadcast.update(dict(content.config_records["config"]))
    reply = _ask(context, {"kind": "train", "broadcast": broadcast})
    return Message(
        RecordDict({"reply": ArrayRecord({k: _array(v) for k, v in reply.items()})}),
        reply_to=message,
    )


def _array(values) -> Array:
    return Array(np.ascontiguousarray(values))


def _ask(context: Context, request: dict) -> dict:
    """Hand ``request`` to the silo; keep the state it returns; its reply, or its error."""
    node, run = dict(context.node_config), dict(context.run_config)
    saved = context.state.config_records.get("silo")
    request.update(node=node, run=run, state=None if saved is None else saved["state"])
    if bool(node.get("silo-worker", True)):
        response = _ask_worker(context, request)
    else:
        response = _in_process(context, request)
    if "state" in response:
        context.state.config_records["silo"] = ConfigRecord(
            {
                "state": response["state"],
                "rounds_done": int(response["counters"][0]),
                "histogram": bool(response["counters"][1]),
            }
        )
    if not response["ok"]:
        raise _error(response["error"])
    return response["reply"]


def _error(text: str) -> Exception:
    """The silo's error as the same built-in type (``ValueError: ...``), else RuntimeError."""
    import builtins

    name, _, message = text.partition(": ")
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception):
        return kind(message)
    return RuntimeError(text)


def _in_process(context: Context, request: dict) -> dict:
    from .flower_silo import SiloHost

    key = (context.run_id, context.node_id)
    host = _HOSTS.get(key)
    saved = context.state.config_records.get("silo")
    counters = (0, False)
    if saved is not None:
        counters = (int(saved["rounds_done"]), bool(saved["histogram"]))
    if host is None or host.counters != counters:  # not this process's silo, or stale
        host = _HOSTS[key] = SiloHost(request["node"], request["run"], request["state"])
    try:
        if request["kind"] == "histogram":
            reply = host.histogram(request["cells"])
        else:
            reply = host.train(request["broadcast"])
        response = {"ok": True, "reply": reply}
    except Exception as exc:
        response = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    response.update(state=host.state_bytes(), counters=host.counters)
    return response


class _Worker:
    """A connection to the silo's worker process (started when there is none)."""

    def __init__(self, address: str, authkey: bytes):
        self.address, self.authkey = address, authkey

    def connect(self):
        from multiprocessing.connection import Client

        return Client(self.address, family="AF_UNIX", authkey=self.authkey)

    @staticmethod
    def ask(conn, request: dict) -> dict:
        with conn:
            conn.send(request)
            try:
                return conn.recv()
            except (EOFError, OSError) as exc:
                raise RuntimeError(
                    "the silo's worker exited before it replied (the run stops; the silo's "
                    "state holds what it released)"
                ) from exc


def _ask_worker(context: Context, request: dict) -> dict:
    """Connect to the run's worker of this silo (starting one if there is none); ask."""
    saved = context.state.config_records.get("worker")
    conn = None
    if saved is not None:
        worker = _Worker(str(saved["address"]), bytes(saved["authkey"]))
        try:
            conn = worker.connect()
        except (OSError, EOFError):  # gone (exited, or killed): a new one restores the state
            conn = None
    if conn is None:
        worker = _start_worker(context)
        conn = worker.connect()
    return worker.ask(conn, request)


def _start_worker(context: Context) -> _Worker:
    """A new worker for this silo and run (its address and key kept in ``context.state``)."""
    directory = tempfile.mkdtemp(prefix="skfairdp-silo-")  # mode 0700: this user only
    worker = _Worker(os.path.join(directory, "socket"), os.urandom(32))
    log = open(os.path.join(directory, "worker.log"), "wb")  # noqa: SIM115 (the child's)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skfairdp.federated.silo_worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, close_fds=True,
    )  # fmt: skip
    spec = {
        "address": worker.address,
        "authkey": worker.authkey.hex(),
        # the SuperExec that started this ClientApp: gone when the SuperNode is
        "watch-pid": os.getppid(),
        "idle-seconds": WORKER_IDLE_SECONDS,
    }
    proc.stdin.write((json.dumps(spec) + "\n").encode())
    proc.stdin.close()
    deadline = time.monotonic() + WORKER_START_SECONDS
    ready = proc.stdout.readline()  # "ready" once it listens (EOF if it died)
    while ready.strip() != b"ready":
        if proc.poll() is not None or time.monotonic() > deadline:
            log.close()
            with open(os.path.join(directory, "worker.log"), errors="replace") as f:
                raise RuntimeError(f"the silo's worker did not start:\n{f.read()[-3000:]}")
        ready = proc.stdout.readline()
    proc.stdout.close()
    log.close()
    context.state.config_records["worker"] = ConfigRecord(
        {"address": worker.address, "authkey": worker.authkey}
    )
    return worker
