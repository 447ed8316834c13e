"""``benchmarks/speed.py`` of two checkouts, alternately, on the same machine.

The speed target of a change that should not cost speed (issue 23's restructuring):
the ratio of a private DP-FERMI step to a lean plain-SGD step, measured by each
checkout's own ``benchmarks/speed.py`` (which runs both in one process), in
alternating subprocesses so that load on a shared machine hits both alike. Run:

    python benchmarks/compare_speed.py --old ../old-checkout --rounds 3

Writes ``speed_compare.csv`` and ``speed_compare.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
METHOD = "DP-FERMI record eps=1 lambda=1"


def run_speed(checkout: Path, batch_sizes: list[int], epochs: int) -> pd.DataFrame:
    """One run of ``checkout``'s speed benchmark (its own package on ``PYTHONPATH``)."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        command = [sys.executable, str(checkout / "benchmarks" / "speed.py"), "--threads", "1",
                   "--epochs", str(epochs), "--rounds", "1", "--out", out,
                   "--batch-sizes", *map(str, batch_sizes)]  # fmt: skip
        subprocess.run(command, cwd=checkout, env=env, check=True, capture_output=True)
        return pd.read_csv(Path(out) / "speed.csv")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[256])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args(argv)
    rows = []
    for round_ in range(args.rounds):
        for label, checkout in (("new", REPO), ("old", args.old.resolve())):
            frame = run_speed(checkout, args.batch_sizes, args.epochs)
            for _, row in frame[frame["method"] == METHOD].iterrows():
                rows.append({"round": round_, "code": label, "batch_size": row["batch_size"],
                             "ratio_cpu": row["ratio_cpu"], "ratio_wall": row["ratio_wall"],
                             "step_ms": row["step_ms"]})  # fmt: skip
    frame = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "speed_compare.csv", index=False)
    summary = frame.groupby(["batch_size", "code"])[["ratio_cpu", "ratio_wall", "step_ms"]]
    table = summary.median().reset_index()
    old = subprocess.run(["git", "-C", str(args.old), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    new = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    text = (
        f"# Speed of the restructured code against the old (`{METHOD}`)\n\n"
        f"Command: `python benchmarks/compare_speed.py --old <checkout of {old}> "
        f"--rounds {args.rounds} --epochs {args.epochs}`; new = {new} (plus the working tree).\n"
        "Each round runs `benchmarks/speed.py --threads 1 --rounds 1` of the new checkout, then "
        "of the old one (alternating subprocesses; each measures DP-FERMI and a lean plain-SGD "
        "loop in one process). Medians over rounds of the ratio to plain SGD (`ratio_cpu`: "
        "process CPU time, robust to other load; `ratio_wall`: wall clock).\n\n"
        + table.to_markdown(index=False, floatfmt=".4g")
        + "\n\nPer round:\n\n"
        + frame.to_markdown(index=False, floatfmt=".4g")
        + "\n"
    )
    (args.out / "speed_compare.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
