"""Sealed files: AES-256-GCM records that any process holding the key can read alone.

A :class:`~skfairdp.data.scratch.ScratchDir` file can be read only by the object that
wrote it (its nonces and record counts live in that object). A file another process
must read (a Flower silo's rows, read by its SuperNode's worker; the silo's report,
read back by the driver) is *sealed* instead: it carries everything but the key.

Layout: the 8-byte magic ``SKFDPSL1``, then records of at most
:data:`RECORD_BYTES` plaintext bytes, each an 8-byte little-endian plaintext
length, a random 96-bit nonce and the ciphertext with its 16-byte tag. Each
record's associated data is the magic, the file's *label* (its name, by default:
a sealed file renamed or moved into another file's place fails), the record's
index and whether it is the last one (a reordered or truncated file fails).
Random nonces: the writers of one key are several processes with no shared
counter; a key seals a few files per fit, far below the 2**32 records a random
96-bit nonce allows per key.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["KEY_BYTES", "MAGIC", "RECORD_BYTES", "is_sealed", "new_key", "read", "write"]

#: First bytes of every sealed file.
MAGIC = b"SKFDPSL1"
#: Bytes of a key (AES-256).
KEY_BYTES = 32
#: Plaintext bytes per record at most (AES-GCM takes < 2**31 bytes per call).
RECORD_BYTES = 1 << 26
HEADER = struct.Struct("<Q")
TAG = 16
_NONCE = 12
_POSITION = struct.Struct("<Q?")


def new_key() -> bytes:
    """A fresh random key (``os.urandom``)."""
    return os.urandom(KEY_BYTES)


def open_record(aead: AESGCM, nonce: bytes, sealed, associated: bytes, what: str) -> bytes:
    """The plaintext of one record; ``RuntimeError`` naming ``what`` if it fails to verify."""
    try:
        return aead.decrypt(nonce, sealed, associated)
    except InvalidTag:
        raise RuntimeError(f"{what} was altered (or sealed under another key)") from None


def _associated(label: str, header: bytes, index: int, last: bool) -> bytes:
    return MAGIC + label.encode() + b"\0" + header + _POSITION.pack(index, last)


def write(path, data, key: bytes, label: str | None = None) -> None:
    """Seal ``data`` (bytes-like) under ``key`` into ``path`` (atomically, via a ``.tmp``).

    ``label`` (default: the file's name) is authenticated with every record: the
    reader must name the same one.
    """
    path = Path(path)
    label = path.name if label is None else label
    aead, view = AESGCM(key), memoryview(data).cast("B")
    starts = range(0, max(len(view), 1), RECORD_BYTES)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(MAGIC)
        for index, lo in enumerate(starts):
            piece = view[lo : lo + RECORD_BYTES]
            header, nonce = HEADER.pack(len(piece)), os.urandom(_NONCE)
            associated = _associated(label, header, index, index == len(starts) - 1)
            handle.write(header + nonce)
            handle.write(aead.encrypt(nonce, piece, associated))
    os.replace(tmp, path)


def is_sealed(path) -> bool:
    """Whether ``path`` begins as a sealed file."""
    with open(path, "rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


def read(path, key: bytes, label: str | None = None) -> bytes:
    """The plaintext of the sealed file ``path``, every record verified.

    Raises
    ------
    RuntimeError
        The file is not sealed, fails authentication (altered, another key, another
        label), or is truncated or extended.
    """
    path = Path(path)
    label = path.name if label is None else label
    raw, name = memoryview(path.read_bytes()), repr(str(path))
    if bytes(raw[: len(MAGIC)]) != MAGIC:
        raise RuntimeError(f"{name} is not a sealed file")
    aead, parts, at, index = AESGCM(key), [], len(MAGIC), 0
    while True:
        header = bytes(raw[at : at + HEADER.size])
        if len(header) != HEADER.size:
            raise RuntimeError(f"sealed file {name} was altered (truncated)")
        (length,) = HEADER.unpack(header)
        nonce = bytes(raw[at + HEADER.size : at + HEADER.size + _NONCE])
        start = at + HEADER.size + _NONCE
        end = start + length + TAG
        if length > RECORD_BYTES or end > len(raw):
            raise RuntimeError(f"sealed file {name} was altered (truncated)")
        last = end == len(raw)
        associated = _associated(label, header, index, last)
        parts.append(open_record(aead, nonce, raw[start:end], associated, f"sealed file {name}"))
        if last:
            return b"".join(parts)
        at, index = end, index + 1
