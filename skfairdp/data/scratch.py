"""Encrypted scratch directories: the only place a fit writes training rows to disk.

An out-of-core fit (:mod:`.buckets`) writes each epoch's sampled rows to files in a
temporary directory. Those rows are private, so every byte written there is
encrypted with AES-256-GCM (``cryptography``'s :class:`AESGCM`) under a key drawn
from ``os.urandom`` for that directory and held only in this process's memory: it
is never written anywhere, so the files are unreadable once the process is gone,
whatever the way it went (an error, a signal, ``SIGKILL``, a power cut).

Each ``write`` of a file becomes one record: an 8-byte little-endian plaintext
length (authenticated as associated data), then the ciphertext and its 16-byte tag.
A record's 96-bit nonce is the file's number (32 bits) and the record's index in
the file (64 bits): unique under the directory's key, never stored, so a record
moved to another file or place fails authentication; the directory counts each
file's records, so a truncated file fails too.

A directory's name records its owner: ``skfairdp-{kind}-{host}-{pid}-{start}-{random}``
(:func:`owned_directory`; ``kind`` is ``buckets`` here, ``flower-fit`` for the sealed
silo files of a Flower fit), where ``host`` tags the machine and PID namespace and
``start`` is the owner's start time (``/proc/{pid}/stat``), so that a reused PID is
not mistaken for it. Creating a directory first removes the directories of every
kind in the same parent left by dead owners of this host (a process killed by
``SIGKILL`` cannot remove its own); the live ones are removed on the exits
:mod:`.exits` can see.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import socket
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import exits
from .sealed import HEADER as _HEADER
from .sealed import RECORD_BYTES, open_record
from .sealed import TAG as _TAG

__all__ = ["PREFIX", "RECORD_BYTES", "ScratchDir", "owned_directory", "remove_stale"]

#: The kind of a scratch directory (:func:`owned_directory`), and its name prefix.
KIND = "buckets"
PREFIX = f"skfairdp-{KIND}-"
#: ``skfairdp-{kind}-{host}-{pid}-{start}-{random}``: a directory :func:`owned_directory` made
_NAME = re.compile(r"skfairdp-[a-z]+(?:-[a-z]+)*-([0-9a-f]{8})-(\d+)-(\d+)-[0-9a-f]+$")


class ScratchDir:
    """A new directory of encrypted files, removed by :meth:`remove` or at exit.

    Parameters
    ----------
    parent : str or path-like, optional
        Where the directory is created (default: the system's temporary directory).
        Stale directories of dead owners in it are removed first.

    Attributes
    ----------
    path : Path
        The directory (mode 0700).
    """

    def __init__(self, parent=None):
        self._aead = AESGCM(os.urandom(32))  # the key lives in this object only
        self._records: dict[int, int] = {}
        self.path = owned_directory(parent, KIND)

    # -- files ---------------------------------------------------------------------------
    def file(self, number: int) -> Path:
        """The path of file ``number`` (what :meth:`open` writes, :meth:`read` reads)."""
        return self.path / f"bucket-{number:05d}.bin"

    def open(self, number: int) -> _Writer:
        """A new file to append records to (``write(array)``, then ``close()``)."""
        return _Writer(self, number)

    def read(self, number: int) -> np.ndarray:
        """The plaintext of file ``number`` (uint8), checked record by record; then unlinked.

        Raises
        ------
        RuntimeError
            A record fails authentication, or records are missing (the file was altered).
        """
        path = self.file(number)
        expected = self._records.get(number, 0)
        size = path.stat().st_size
        out = np.empty(size - expected * (_HEADER.size + _TAG), dtype=np.uint8)
        done, index = 0, 0
        with open(path, "rb") as handle:
            while True:
                header = handle.read(_HEADER.size)
                if not header:
                    break
                (length,) = _HEADER.unpack(header)
                if index >= expected or done + length > len(out):
                    raise RuntimeError(f"scratch file {str(path)!r} was altered")
                sealed = handle.read(length + _TAG)
                plain = self._open(_nonce(number, index), sealed, header, path)
                out[done : done + length] = np.frombuffer(plain, dtype=np.uint8)
                done, index = done + length, index + 1
        if index != expected or done != len(out):
            raise RuntimeError(f"scratch file {str(path)!r} was altered (records missing)")
        path.unlink()
        return out

    def remove(self) -> None:
        """Delete the directory and everything in it (idempotent)."""
        remove_directory(self.path)

    # -- the cipher (a benchmark swaps these for the identity) ----------------------------
    def _seal(self, nonce: bytes, data, header: bytes) -> bytes:
        return self._aead.encrypt(nonce, data, header)

    def _open(self, nonce: bytes, sealed: bytes, header: bytes, path: Path) -> bytes:
        return open_record(self._aead, nonce, sealed, header, f"scratch file {str(path)!r}")


class _Writer:
    """An open file of a :class:`ScratchDir`: each ``write`` appends sealed records."""

    def __init__(self, scratch: ScratchDir, number: int):
        self.scratch, self.number, self.records = scratch, number, 0
        if exits.closing():  # a terminating signal is removing the directory
            raise RuntimeError("the scratch directory is being removed (a signal came in)")
        self.handle = open(scratch.file(number), "wb")  # noqa: SIM115 (closed by close)

    def write(self, array: np.ndarray) -> None:
        data = memoryview(np.ascontiguousarray(array)).cast("B")
        for lo in range(0, len(data), RECORD_BYTES):
            piece = data[lo : lo + RECORD_BYTES]
            header = _HEADER.pack(len(piece))
            sealed = self.scratch._seal(_nonce(self.number, self.records), piece, header)
            self.handle.write(header)
            self.handle.write(sealed)
            self.records += 1

    def close(self) -> None:
        self.handle.close()
        self.scratch._records[self.number] = self.records


def _nonce(number: int, index: int) -> bytes:
    return struct.pack("<IQ", number, index)


# -- owners ------------------------------------------------------------------------------
def owned_directory(parent, kind: str) -> Path:
    """A new directory ``skfairdp-{kind}-{host}-{pid}-{start}-{random}`` (mode 0700).

    Made in ``parent`` (default: the system's temporary directory) after the stale
    directories of dead owners there are removed (:func:`remove_stale`), and tracked
    by :mod:`.exits` (removed at exit and on the signals it handles) until
    :func:`remove_directory`.
    """
    parent = Path(parent if parent is not None else tempfile.gettempdir())
    remove_stale(parent)
    pid, start = owner()
    path = parent / f"skfairdp-{kind}-{host_tag()}-{pid}-{start}-{secrets.token_hex(6)}"
    if _NAME.match(path.name) is None:
        raise ValueError(f"kind: lower-case words joined by '-', got {kind!r}")
    try:
        # tracked before it exists (a signal arriving in between still finds it), and
        # both under the lock a terminating signal's handler takes before it removes
        with exits.creating():
            exits.track(path)
            path.mkdir(mode=0o700)
    except BaseException:
        remove_directory(path)
        raise
    return path


def remove_directory(path) -> None:
    """Delete an :func:`owned_directory` and everything in it (idempotent)."""
    shutil.rmtree(path, ignore_errors=True)
    exits.untrack(Path(path))


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, start time in clock ticks since boot)`` of a process, from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rfind(")") + 2 :].split()  # after the command name, from field 3
        return fields[0], int(fields[19])  # fields 3 (state) and 22 (starttime)
    except (OSError, ValueError, IndexError):
        return None


def _has_proc() -> bool:
    return sys.platform.startswith("linux") and Path("/proc/self/stat").exists()


def owner() -> tuple[int, int]:
    """This process's ``(pid, start time)``; the start time is 0 without /proc."""
    pid = os.getpid()
    stat = _stat(pid) if _has_proc() else None
    return pid, (stat[1] if stat else 0)


def host_tag() -> str:
    """8 hex digits naming this host and PID namespace (whose PIDs a name's PID is)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return hashlib.sha256(f"{socket.gethostname()}\0{namespace}".encode()).hexdigest()[:8]


def is_alive(pid: int, start: int) -> bool:
    """Whether process ``pid``, started at ``start``, still runs (when unsure: True)."""
    if _has_proc():
        stat = _stat(pid)
        if stat is None or stat[0] in ("Z", "X"):  # gone, or a zombie
            return False
        return start == 0 or stat[1] == start
    if os.name != "posix":
        return True  # no safe probe (os.kill(pid, 0) terminates a process on Windows)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def remove_stale(parent) -> list[Path]:
    """Remove the scratch directories in ``parent`` whose owner on this host is dead.

    Only directories of this user, named by this host and PID namespace, are
    considered; the others (another machine sharing the disk, another container)
    are left alone. Returns the directories removed.
    """
    removed = []
    tag, uid = host_tag(), getattr(os, "getuid", lambda: None)()
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or match.group(1) != tag:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if uid is not None and entry.stat(follow_symlinks=False).st_uid != uid:
                continue
        except OSError:
            continue
        if not is_alive(int(match.group(2)), int(match.group(3))):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed
