"""A silo's worker: one process per silo and run that keeps the silo warm between rounds.

Flower 1.41 starts a fresh ClientApp process for every message; importing torch
and dp-accounting and rebuilding the silo there costs seconds per round. The
ClientApp (:mod:`~skfairdp.federated.flower_client`) therefore imports only flwr
and numpy, and forwards each request to this worker, which it starts on the
silo's first message (``python -m skfairdp.federated.silo_worker``, on the silo's
own machine, in the SuperNode's process group) and which holds the
:class:`~.flower_silo.SiloHost` for the run.

Privacy does not depend on it living: with every reply the worker returns the
silo's state (random stream, counters, recorded events), which the ClientApp
keeps in ``context.state`` before it sends the reply; a worker started later in
the same run restores it. The worker listens on a Unix socket in a directory only
its user can read, and answers only a client that knows the run's random key
(``multiprocessing.connection``'s HMAC handshake).

It exits when the silo has answered its last budgeted round, when no request
came for ``idle-seconds``, or when the process it watches (the SuperNode's
SuperExec, which started the first ClientApp) is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Listener

__all__ = ["serve"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve(address: str, authkey: bytes, watch_pid: int | None, idle_seconds: float) -> None:
    """Answer requests on ``address`` until the silo is done, idle, or orphaned."""
    last = [time.monotonic()]

    def watchdog():
        while True:
            time.sleep(0.5)
            idle = time.monotonic() - last[0] > idle_seconds
            if idle or (watch_pid is not None and not _alive(watch_pid)):
                _cleanup(address)
                os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()

    def stop(signum, frame):  # the runner's SIGTERM: leave no socket directory behind
        _cleanup(address)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    host = None
    with Listener(address, family="AF_UNIX", authkey=authkey) as listener:
        print("ready", flush=True)
        while True:
            try:
                conn = listener.accept()
            except Exception:  # a client that failed the handshake: ignore it
                continue
            with conn:
                try:
                    request = conn.recv()
                except (EOFError, OSError):  # the client went away before asking
                    continue
                last[0] = time.monotonic()
                try:
                    if host is None:
                        from .flower_silo import SiloHost

                        host = SiloHost(request["node"], request["run"], request.get("state"))
                    if request["kind"] == "histogram":
                        reply = host.histogram(request["cells"])
                    else:
                        reply = host.train(request["broadcast"])
                    response = {"ok": True, "reply": reply}
                except Exception as exc:  # the ClientApp raises it (Flower reports it)
                    response = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                "trace": traceback.format_exc()}  # fmt: skip
                if host is not None:
                    response.update(state=host.state_bytes(), counters=host.counters)
                conn.send(response)
                last[0] = time.monotonic()
            if host is not None and host.finished:
                break
    _cleanup(address)


def _cleanup(address: str) -> None:
    shutil.rmtree(os.path.dirname(address), ignore_errors=True)


def main() -> None:
    """Read ``{"address", "authkey", "watch-pid", "idle-seconds"}`` (JSON) from stdin; serve."""
    spec = json.loads(sys.stdin.readline())
    serve(
        spec["address"],
        bytes.fromhex(spec["authkey"]),
        spec.get("watch-pid"),
        float(spec.get("idle-seconds", 600.0)),
    )


if __name__ == "__main__":
    main()
