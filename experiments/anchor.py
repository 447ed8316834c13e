"""Parser of the published DP-FERMI reference points (``anchor-dpfermi-curves.txt``).

The anchor file holds the points behind the figures of Lowy, Gupta & Razaviyayn
(ICLR 2023), extracted from the authors' summarized result files (15 seeds,
logistic regression), for DP-FERMI and the baselines Tran et al. 2021a
(``DP-ERM_Mitigation``), Tran et al. 2021b (PFLD) and Jagielski et al. 2019.

Its layout, one curve per line under a ``## ... Experiments`` section header::

    DP-FERMI | adult | eps=1 | lam=0: err=0.1585 viol=0.2017 ; lam=0.25: err=...
    Tran2021b(PFLD) | adult | eps=1 | err=0.1825 DP=0.0612 EO=0.0610
    Jagielski2019 | adult | eps=1 | err=0.1653 EO=0.2291 ; err=0.2512 EO=0.0781 ; ...

``viol`` is the demographic-parity violation in the "Demographic Parity" section
and the equalized-odds violation in the "Equalized Odds" section. Every point is
returned as a :class:`AnchorPoint` whose ``violation`` is the violation of the
section's notion (for PFLD: its ``DP`` value in the DP section, ``EO`` in the EO
section; both are also kept in ``extra``).

Usage (``experiments/`` is not a package; the benchmark scripts put their own
folder on ``sys.path``)::

    from anchor import load_anchor, select
    points = load_anchor()  # [] when no anchor file is found
    select(points, method="DP-FERMI", dataset="adult", notion="dp", eps=1.0)

``python experiments/anchor.py [FILE]`` prints every parsed point.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["AnchorPoint", "DEFAULT_LOCATIONS", "find_anchor_file", "load_anchor", "select"]

_HERE = Path(__file__).resolve().parent
# Looked up in this order: $SKFAIRDP_ANCHOR, the copy committed next to the
# results, the shared research folder.
DEFAULT_LOCATIONS = (
    _HERE / "results" / "tradeoff_anchor-dpfermi-curves.txt",
    Path("/work/shared/research/anchor-dpfermi-curves.txt"),
)

_SECTIONS = {"demographic parity": "dp", "equalized odds": "eo"}
_KV = re.compile(r"([A-Za-z_]+)=([-+0-9.eE]+|inf)")


@dataclass(frozen=True)
class AnchorPoint:
    """One published (error, violation) point."""

    method: str  # "DP-FERMI", "Tran2021a", "Tran2021b(PFLD)", "Jagielski2019"
    dataset: str  # "adult", "credit-card", "parkinsons", "retired-adult"
    notion: str  # "dp" or "eo": the section, i.e. which violation ``violation`` is
    eps: float  # math.inf for eps=inf
    error: float  # test misclassification error
    violation: float  # violation of ``notion``
    lam: float | None = None  # the method's own lambda, when given
    index: int = 0  # position of the point within its curve
    extra: dict = field(default_factory=dict, compare=False, hash=False)


def _number(text: str) -> float:
    return math.inf if text == "inf" else float(text)


def _parse_point(method, dataset, notion, eps, chunk, index, lineno):
    """One ``;``-separated chunk, e.g. ``lam=0.25: err=0.16 viol=0.14``."""
    lam = None
    head, sep, tail = chunk.partition(":")
    if sep and head.strip().startswith("lam="):
        lam = _number(head.strip()[4:])
        chunk = tail
    values = {k: _number(v) for k, v in _KV.findall(chunk)}
    if "err" not in values:
        raise ValueError(f"anchor line {lineno}: no err= in point {chunk!r}")
    key = {"dp": "DP", "eo": "EO"}[notion]
    if "viol" in values:
        violation = values["viol"]
    elif key in values:
        violation = values[key]
    else:
        raise ValueError(f"anchor line {lineno}: no violation ({key}= or viol=) in {chunk!r}")
    extra = {k: v for k, v in values.items() if k not in ("err", "viol")}
    return AnchorPoint(method, dataset, notion, eps, values["err"], violation, lam, index, extra)


def parse_anchor(lines: Iterable[str]) -> list[AnchorPoint]:
    """Parse the lines of an anchor file into points (see the module docstring)."""
    notion = None
    points: list[AnchorPoint] = []
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("##"):
            title = line.lstrip("#").strip().lower()
            notion = next((v for k, v in _SECTIONS.items() if title.startswith(k)), None)
            if notion is None:
                raise ValueError(f"anchor line {lineno}: unknown section {line!r}")
            continue
        if line.startswith("#"):
            continue
        if notion is None:
            raise ValueError(f"anchor line {lineno}: data before any '## ... Experiments' header")
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 4 or not fields[2].startswith("eps="):
            raise ValueError(f"anchor line {lineno}: expected 'method | dataset | eps=.. | ..'")
        method, dataset, eps_text, body = fields
        eps = _number(eps_text[4:])
        for index, chunk in enumerate(c for c in body.split(";") if c.strip()):
            points.append(_parse_point(method, dataset, notion, eps, chunk, index, lineno))
    return points


def find_anchor_file(path: str | os.PathLike | None = None) -> Path | None:
    """The anchor file to use: ``path``, else $SKFAIRDP_ANCHOR, else the defaults."""
    candidates = [path] if path else []
    if os.environ.get("SKFAIRDP_ANCHOR"):
        candidates.append(os.environ["SKFAIRDP_ANCHOR"])
    candidates.extend(DEFAULT_LOCATIONS)
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def load_anchor(path: str | os.PathLike | None = None) -> list[AnchorPoint]:
    """Points of the anchor file found by :func:`find_anchor_file` ([] if none)."""
    found = find_anchor_file(path)
    if found is None:
        return []
    with open(found, encoding="utf-8") as handle:
        return parse_anchor(handle)


def select(points, *, method=None, dataset=None, notion=None, eps=None) -> list[AnchorPoint]:
    """Filter points; ``method`` matches by prefix (``"Tran2021b"`` finds PFLD)."""
    out = []
    for p in points:
        if method is not None and not p.method.startswith(method):
            continue
        if dataset is not None and p.dataset != dataset:
            continue
        if notion is not None and p.notion != notion:
            continue
        if eps is not None and not (p.eps == eps or (math.isinf(p.eps) and math.isinf(eps))):
            continue
        out.append(p)
    return sorted(out, key=lambda p: p.index)


if __name__ == "__main__":  # pragma: no cover - quick look at the file
    import sys

    pts = load_anchor(sys.argv[1] if len(sys.argv) > 1 else None)
    print(f"{len(pts)} points from {find_anchor_file(sys.argv[1] if len(sys.argv) > 1 else None)}")
    for p in pts:
        print(p.method, p.dataset, p.notion, p.eps, p.lam, p.error, p.violation, p.extra)
