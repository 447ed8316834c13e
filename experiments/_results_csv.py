"""Append-as-you-go CSV results of the benchmark scripts (``--resume`` skips done rows)."""

from __future__ import annotations

import csv
from pathlib import Path


def completed(path: Path, key: tuple[str, ...]) -> set[tuple[str, ...]]:
    """The ``key`` columns of every row already in ``path`` (as strings)."""
    if not path.exists():
        return set()
    with path.open() as f:
        return {tuple(row[k] for k in key) for row in csv.DictReader(f)}


def append(path: Path, fields: list[str], row: dict) -> None:
    """Append ``row`` to ``path``, writing the header first when the file is new."""
    new = not path.exists()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerow(row)
