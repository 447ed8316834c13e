"""PLD accounting: the fixed 1e-3 grid against the per-event grid, and RDP (issue 35).

For sampled-Gaussian DP-SGD events (and a few compositions with closed-form
releases) this reports epsilon at delta under

* PLD with the old fixed ``value_discretization_interval=1e-3``,
* PLD with the grid :func:`skfairdp.privacy.accountant.pld_discretization`
  chooses for the event (what ``epsilon_spent(..., accountant="pld")`` uses now),
* RDP (``accountant="rdp"``; add/remove only: dp-accounting's RDP has no
  sampled Gaussian under replace-one),

with the wall time of one ``epsilon_spent`` call under each PLD grid, and the time
and result of a full replace-one calibration (``calibrate_noise_multiplier``,
``privacy_unit="sensitive"``) under both grids. Run::

    python benchmarks/pld_discretisation.py --out benchmarks/results

Writes ``pld_discretisation.csv`` and ``pld_discretisation.md`` (about a minute on one core).
"""

from __future__ import annotations

import argparse
import csv
import logging
import platform
import time
from pathlib import Path

import dp_accounting as dp

import skfairdp.privacy.accountant as accountant
from skfairdp.privacy import calibrate_noise_multiplier, epsilon_spent

logging.getLogger("absl").setLevel(logging.ERROR)

#: (q, sigma, steps): the issue's golden case first, then the corners of the range fits use.
CASES = [
    (0.001, 3.0, 50_000),
    (0.0001, 1.0, 100_000),
    (0.0001, 20.0, 1_000),
    (0.001, 1.0, 10_000),
    (0.001, 10.0, 100_000),
    (0.01, 1.0, 1_000),
    (0.01, 3.0, 10_000),
    (0.05, 3.0, 1_000),
    (0.2, 20.0, 100),
    (0.2, 10.0, 10_000),
]
DELTAS = (1e-5, 1e-8)
#: Calibrations: (target epsilon, q, steps), replace-one, delta 1e-5.
CALIBRATIONS = [(1.0, 0.001, 50_000), (3.0, 0.01, 5_000), (0.5, 0.0001, 100_000)]


def steps_event(q: float, sigma: float, steps: int) -> dp.DpEvent:
    return dp.SelfComposedDpEvent(dp.PoissonSampledDpEvent(q, dp.GaussianDpEvent(sigma)), steps)


def timed(function, repeats: int = 3) -> tuple[float, float]:
    """``(result, best wall time of repeats)``."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return result, best


class fixed_grid:  # noqa: N801 (a context manager read as a phrase)
    """The old accounting: every PLD on the fixed 1e-3 grid."""

    def __enter__(self):
        self._saved = accountant.pld_discretization
        accountant.pld_discretization = lambda event, unit="record": 1e-3
        return self

    def __exit__(self, *exc):
        accountant.pld_discretization = self._saved


def rows_for(name: str, event: dp.DpEvent, unit: str) -> list[dict]:
    rows = []
    for delta in DELTAS:

        def pld(event=event, delta=delta):
            return epsilon_spent(event, delta, accountant="pld", privacy_unit=unit).epsilon

        with fixed_grid():
            old, old_s = timed(pld)
        new, new_s = timed(pld)
        rdp = (
            epsilon_spent(event, delta, accountant="rdp").epsilon
            if unit == "record"
            else float("nan")
        )
        rows.append({
            "event": name, "privacy_unit": unit, "delta": delta,
            "grid": accountant.pld_discretization(event, unit), "pld_old": old, "pld_new": new,
            "rdp": rdp, "old_s": old_s, "new_s": new_s,
        })  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def calibrations() -> list[dict]:
    rows = []
    for target, q, steps in CALIBRATIONS:

        def search(q=q, steps=steps, target=target):
            return calibrate_noise_multiplier(
                target, 1e-5, lambda z: steps_event(q, z, steps),
                accountant="pld", privacy_unit="sensitive",
            )  # fmt: skip

        with fixed_grid():
            old, old_s = timed(search, repeats=1)
        new, new_s = timed(search, repeats=1)
        rows.append({"epsilon": target, "q": q, "steps": steps, "z_old": old, "z_new": new,
                     "old_s": old_s, "new_s": new_s})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def _g(value: float) -> str:
    return "–" if value != value else f"{value:.4g}"


def report(rows: list[dict], calib: list[dict]) -> str:
    lines = [
        "# PLD discretisation: fixed 1e-3 grid against the per-event grid",
        "",
        "`python benchmarks/pld_discretisation.py` on "
        f"{platform.processor() or platform.machine()} (Python {platform.python_version()}). "
        "epsilon at delta of sampled-Gaussian DP-SGD events (`q`, `sigma`, steps) and of "
        "compositions with closed-form releases; *old*: PLD on the fixed grid 1e-3; *new*: "
        "PLD on the grid `pld_discretization(event)` (both pessimistic: upper bounds); RDP: "
        "dp-accounting's RDP (add/remove only). Times: best of 3 single `epsilon_spent` calls.",
        "",
        "| event | unit | delta | grid | PLD old | PLD new | RDP | old s | new s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['event']} | {r['privacy_unit']} | {r['delta']:g} | {r['grid']:.2g} | "
            f"{_g(r['pld_old'])} | {_g(r['pld_new'])} | {_g(r['rdp'])} | {r['old_s']:.3f} | "
            f"{r['new_s']:.3f} |"
        )
    lines += [
        "",
        '## Replace-one calibration (`privacy_unit="sensitive"`, delta 1e-5)',
        "",
        "`calibrate_noise_multiplier` of a DP-SGD event: the smallest noise multiplier whose "
        "PLD epsilon meets the target, and the wall time of the whole search.",
        "",
        "| target epsilon | q | steps | multiplier old | multiplier new | old s | new s |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in calib:
        lines.append(
            f"| {c['epsilon']:g} | {c['q']:g} | {c['steps']} | {c['z_old']:.4g} | "
            f"{c['z_new']:.4g} | {c['old_s']:.2f} | {c['new_s']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    rows = []
    for q, sigma, steps in CASES:
        event = steps_event(q, sigma, steps)
        for unit in ("record", "sensitive"):
            rows += rows_for(f"q={q:g}, sigma={sigma:g}, {steps:,} steps", event, unit)
    golden = steps_event(0.001, 3.0, 50_000)
    for name, extra in (
        ("golden + Gaussian release (z=5)", dp.GaussianDpEvent(5.0)),
        ("golden + Laplace release (b=20)", dp.LaplaceDpEvent(20.0)),
        ("golden + 10 Gaussian releases (z=50)",
         dp.SelfComposedDpEvent(dp.GaussianDpEvent(50.0), 10)),
    ):  # fmt: skip
        event = dp.ComposedDpEvent([golden, extra])
        units = ("record",) if isinstance(extra, dp.LaplaceDpEvent) else ("record", "sensitive")
        for unit in units:
            rows += rows_for(name, event, unit)
    calib = calibrations()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "pld_discretisation.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "pld_discretisation.md").write_text(report(rows, calib))
    print(f"wrote {out / 'pld_discretisation.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
