"""What a Flower fit writes about a silo: its rows and its report, sealed at rest.

``backend="flower"`` hands each silo's rows to another process (the SuperNode's
silo worker) through a file, and that process hands the silo's report (its event,
whose sampling rate ``q = batch_size / n_j`` gives the silo's size, a private
count) back through files too. All of them are sealed (:mod:`skfairdp.data.sealed`,
AES-256-GCM) under one key the driver draws per fit from ``os.urandom`` and keeps
in memory; a fit's files are unreadable once the processes holding the key are
gone, whatever the way they went (``SIGKILL`` included).

**How the key reaches the silo.** Through the environment variable
:data:`KEY_ENV` of the SuperNode processes (:class:`~.flower_runner.LoopbackFederation`
sets it for them only, not for the SuperLink or the ServerApp), inherited by the
SuperExec, ClientApp and silo worker processes they start (Flower 1.41 starts them
with ``subprocess.Popen(args)``, the environment unchanged). The alternatives leak:
the node config is the SuperNode's command line (``--node-config``), which
``/proc/{pid}/cmdline`` shows to every user, and Flower sends it in the clear over
the SuperNode's local gRPC (ClientAppIo API) to every ClientApp; a file would put
the key beside the files it protects. A pipe cannot cross Flower's processes. A
process's environment (``/proc/{pid}/environ``) is readable only by its own user and
root, who can read its memory anyway, and is never written to disk by Flower
(its SuperNode state is in memory in 1.41). With ``backend="flower-simulation"``
the silos run in Ray workers of this driver: the key travels in the ClientApp mod
(:class:`~.flower_simulation.SiloNodeConfigs`, a small task argument Ray keeps in
memory), which opens :func:`key_scope` around each message.

A data file written by anyone else (a deployment's own ``.npz``, doc/federated.md)
is read as it is when no key is set.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle

import numpy as np

from ..data import sealed

__all__ = ["KEY_ENV", "key", "key_scope", "read_data", "read_report", "write_data"]

#: The environment variable that holds a fit's key (hex) in the silos' processes.
KEY_ENV = "SKFAIRDP_SILO_KEY"
_scoped: list[bytes] = []


def key() -> bytes | None:
    """This process's key of silo files: the innermost :func:`key_scope`, else :data:`KEY_ENV`."""
    if _scoped:
        return _scoped[-1]
    value = os.environ.get(KEY_ENV)
    if not value:
        return None
    try:
        found = bytes.fromhex(value)
    except ValueError:
        found = b""
    if len(found) != sealed.KEY_BYTES:
        raise ValueError(f"{KEY_ENV} must hold {sealed.KEY_BYTES} bytes in hex")
    return found


@contextlib.contextmanager
def key_scope(value: bytes | None):
    """While inside, :func:`key` is ``value`` (``None``: no change)."""
    if value is None:
        yield
        return
    _scoped.append(bytes(value))
    try:
        yield
    finally:
        _scoped.pop()


def write_data(path, X, y, s, secret: bytes) -> None:
    """Seal a silo's rows (an ``.npz`` of ``X``, ``y``, ``s`` in memory) into ``path``."""
    buffer = io.BytesIO()
    np.savez(buffer, X=X, y=y, s=s)
    sealed.write(path, buffer.getbuffer(), secret)


def read_data(path) -> dict:
    """``{"X", "y", "s"}`` from a silo's data file: sealed (the fit's key set) or plain ``.npz``.

    Raises
    ------
    RuntimeError
        A sealed file without the key, a plain file while a key is set, or a sealed
        file that fails authentication (altered, renamed, another fit's).
    """
    secret, is_sealed = key(), sealed.is_sealed(path)
    if is_sealed and secret is None:
        raise RuntimeError(
            f"data-path {str(path)!r} is sealed, and this process has no key "
            f"(environment variable {KEY_ENV})"
        )
    if secret is not None and not is_sealed:
        raise RuntimeError(f"data-path {str(path)!r} is not sealed, but {KEY_ENV} is set")
    if is_sealed:
        path = io.BytesIO(sealed.read(path, secret))
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in ("X", "y", "s")}


def write_report(path: str, report: dict, event) -> None:
    """The silo's report at ``path`` and its pickled event at ``path + ".event"``.

    Sealed when this process has a key (a Flower fit), in the clear otherwise (a
    deployment's own report, on the silo's own machine).
    """
    secret = key()
    for target, data in (
        (path, json.dumps(report, default=float).encode()),
        (path + ".event", pickle.dumps(event)),
    ):
        if secret is not None:
            sealed.write(target, data, secret)
        else:
            with open(target + ".tmp", "wb") as f:
                f.write(data)
            os.replace(target + ".tmp", target)


def read_report(path, secret: bytes) -> tuple[dict, object]:
    """``(report, event)`` that :func:`write_report` sealed under ``secret``."""
    report = json.loads(sealed.read(path, secret))
    event = pickle.loads(sealed.read(str(path) + ".event", secret))  # authenticated: ours
    return report, event
