"""Scratch directories removed on every exit Python sees: return, error, atexit, signals.

The live scratch directories of this process are tracked here. They are removed

- by their owner when done (the end of an epoch, an early stop, an error);
- at interpreter exit (``atexit``), e.g. after ``sys.exit`` with a pass still pending;
- on ``SIGTERM``, ``SIGINT`` and ``SIGHUP`` while a fit holds them: the handler that
  :func:`hold` installs (from the main thread only, where Python runs handlers)
  removes them, then does what the previous handler would have done: it calls a
  Python handler (for ``SIGINT`` by default one that raises ``KeyboardInterrupt``,
  which a fit treats as an early stop), or, for the default action, restores it and
  sends the signal again, so the process ends by that signal (exit status ``-15``
  for ``SIGTERM`` as :mod:`subprocess` reports it, ``143`` in a shell). An ignored
  signal stays ignored. :func:`release` restores the previous handlers.

``SIGKILL`` and a power cut cannot be caught: the files stay, encrypted under a key
that died with the process (:mod:`.scratch`), and the next scratch directory created
in the same place removes them.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["closing", "creating", "hold", "release", "remove_all", "track", "untrack"]

_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)
)
_live: dict[str, int] = {}  # path -> the pid that created it (a forked child owns none)
_previous: dict[int, object] = {}  # signal -> the handler before ours
_holders = 0
_closing = False
# A directory is tracked and made only under this lock, and the signal handler takes it
# before removing: otherwise a thread could make one between the handler's removal and
# the end of the process (seen once in CI: an empty bucket directory left after SIGTERM).
# Re-entrant: the handler runs in the main thread, which may hold it itself.
_creating = threading.RLock()


def track(path: Path) -> None:
    """Remember a scratch directory of this process (before it is created)."""
    _live[str(path)] = os.getpid()


def untrack(path: Path) -> None:
    """Forget a scratch directory (after it is removed)."""
    _live.pop(str(path), None)


def closing() -> bool:
    """Whether a terminating signal is being handled (no new directory may be made)."""
    return _closing


@contextmanager
def creating() -> Iterator[None]:
    """Hold while tracking and making a scratch directory (:func:`track`, then ``mkdir``).

    Raises RuntimeError when a terminating signal is being handled; the handler
    waits for a directory being made to exist, then removes it with the others.
    """
    with _creating:
        if _closing:
            raise RuntimeError("the process is terminating (a signal came in)")
        yield


def remove_all() -> None:
    """Remove every live scratch directory created by this process."""
    pid = os.getpid()
    for path, owner in list(_live.items()):
        if owner == pid:
            # a writer thread may create a file between rmtree's listing and its rmdir
            for _ in range(50):
                shutil.rmtree(path, ignore_errors=True)
                if not os.path.lexists(path):
                    break
                time.sleep(0.002)
            _live.pop(path, None)


atexit.register(remove_all)


def _handler(signum: int, frame) -> None:
    global _closing
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        _closing = True  # no new scratch file while they are removed
        try:
            with _creating:
                remove_all()
        finally:
            _closing = False
        previous(signum, frame)  # e.g. raises KeyboardInterrupt
        return
    # the default action: remove the files, then end by the same signal; the lock is
    # kept to the end, so no thread makes a directory after the removal
    _closing = True
    _creating.acquire()
    remove_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # pragma: no cover (the signal ends the process first)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def hold() -> bool:
    """Install the handlers for the life of a fit's scratch files; pair with :func:`release`.

    Returns False (and installs nothing) outside the main thread; nested holds
    share one installation.
    """
    global _holders
    if not _main_thread():
        return False
    _holders += 1
    if _holders == 1:
        for sig in _SIGNALS:
            current = signal.getsignal(sig)
            if current is _handler or current == signal.SIG_IGN:
                continue  # ours already (a release off the main thread), or ignored
            _previous[sig] = signal.SIG_DFL if current is None else current
            signal.signal(sig, _handler)
    return True


def release() -> None:
    """Undo one :func:`hold`; the last restores the previous handlers (main thread only)."""
    global _holders
    _holders = max(0, _holders - 1)
    if _holders or not _main_thread():
        return  # off the main thread our handler stays; with nothing live it just chains
    for sig, previous in list(_previous.items()):
        if signal.getsignal(sig) is _handler:  # not replaced by someone else meanwhile
            signal.signal(sig, previous)
        del _previous[sig]
