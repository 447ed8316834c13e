"""The processes of a loopback federation: find every one of them, stop them all.

Flower's executables start processes of their own, not all in the group of the
process that started them: ``flower-superlink`` starts its SuperExec with
``start_new_session=True``, and that SuperExec starts the ServerApp. Killing the
process groups of the processes we started is therefore not enough; the tree of
their descendants, read from ``/proc`` *before* anything is killed (a killed
parent's children are re-parented and can no longer be found), is stopped by
session and process group. A driver stopped by SIGTERM or SIGHUP would otherwise
die without running any ``finally``: :func:`signals_raise` turns them into
:class:`SystemExit` while a federation runs, so its ``close`` runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

__all__ = ["descendants", "signals_raise", "stop_processes"]

#: seconds between SIGTERM and SIGKILL
GRACE_SECONDS = 3.0


def _parents() -> dict[int, int]:
    """``pid -> parent pid`` of every process visible in ``/proc`` (empty elsewhere)."""
    parents = {}
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name (field 2) is in parentheses and may hold spaces
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(pids) -> set[int]:
    """Every live descendant of ``pids`` (not ``pids`` themselves)."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, stack = set(), list(pids)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead (it only waits for its parent to read its status)
    with contextlib.suppress(OSError, IndexError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


def _signal_all(pids, sig) -> None:
    """``sig`` to each pid's process group (when it is not ours) and to the pid."""
    own = os.getpgrp()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group != own:
                os.killpg(group, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def stop_processes(pids, grace: float = GRACE_SECONDS) -> None:
    """Stop ``pids`` and all their descendants: SIGTERM, then SIGKILL after ``grace`` s.

    The descendants are listed first, then everyone gets SIGTERM (by process
    group and by pid), then whoever is still alive after ``grace`` seconds
    (descendants found meanwhile included) gets SIGKILL.
    """
    pids = [int(p) for p in pids]
    everyone = set(pids) | descendants(pids)
    _signal_all(everyone, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        everyone |= descendants(everyone)
        if not any(_alive(p) for p in everyone):
            return
        time.sleep(0.1)
    everyone |= descendants(everyone)
    _signal_all([p for p in everyone if _alive(p)], signal.SIGKILL)


@contextlib.contextmanager
def signals_raise():
    """While inside, SIGTERM and SIGHUP raise :class:`SystemExit` (``128 + signal``).

    In the main thread only (Python runs signal handlers there); elsewhere a no-op.
    The previous handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
