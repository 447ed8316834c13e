"""What encrypting the scratch files costs: a Parquet pass and a Parquet fit, with and without.

An out-of-core fit writes each epoch's sampled rows to scratch files encrypted with
AES-256-GCM (:mod:`skfairdp.data.scratch`). The baseline is the same code with the
cipher replaced by the identity (:class:`PlainScratchDir`: the same files, records
and 16-byte tags, zeros), so the difference is the encryption alone. Two
measurements on the table of ``benchmarks/large_data.py`` (float32 ``x0..x99``,
group ``s``, label ``y``), in one process, the two modes alternated:

(pass) one epoch of :class:`~skfairdp.data.buckets.BucketedSampler` (Poisson at batch
    256, no prefetch): the streaming pass that writes the buckets, then reading every
    bucket back; nothing is trained. This is where all the encryption is.
(fit) ``DPFermiClassifier(epsilon=1, fairness_weight=1, max_epochs=EPOCHS,
    random_state=seed)`` on a :class:`~skfairdp.data.ParquetSource`, one torch thread:
    the whole fit; the two modes' models must be equal (encryption is transparent).

Run::

    nice -n 5 python benchmarks/scratch_encryption.py --scratch /tmp --out benchmarks/results

Writes ``scratch_encryption.csv`` (one row per run) and ``scratch_encryption.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from skfairdp.data import buckets
from skfairdp.data.scratch import ScratchDir


class PlainScratchDir(ScratchDir):
    """The baseline: the same files and records, the cipher replaced by the identity."""

    def _seal(self, nonce, data, header):
        return bytes(data) + bytes(16)

    def _open(self, nonce, sealed, header, path):
        return sealed[:-16]


MODES = {"encrypted": ScratchDir, "plain": PlainScratchDir}


def _large_data():
    spec = importlib.util.spec_from_file_location(
        "large_data", Path(__file__).with_name("large_data.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_pass(path: Path, scratch: Path, mode: str, seed: int) -> dict:
    from skfairdp.data import ParquetSource
    from skfairdp.privacy.random import RandomSource

    buckets.ScratchDir = MODES[mode]
    try:
        source = ParquetSource(path, target="y", sensitive_features="s", scratch_dir=scratch)
        sampler = buckets.BucketedSampler(
            source, 256, RandomSource(seed), poisson=True, scratch_dir=scratch
        )
        start, cpu = time.perf_counter(), time.process_time()
        rows = sum(len(idx) for idx, _ in sampler.epoch())
        seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
        sampler.close()
    finally:
        buckets.ScratchDir = ScratchDir
    return dict(part="pass", mode=mode, seed=seed, seconds=seconds, cpu_s=cpu_s, rows_drawn=rows)


def one_fit(
    path: Path, scratch: Path, mode: str, seed: int, epochs: int
) -> tuple[dict, np.ndarray]:
    import torch

    from skfairdp.data import ParquetSource
    from skfairdp.fermi import DPFermiClassifier

    torch.set_num_threads(1)
    buckets.ScratchDir = MODES[mode]
    try:
        source = ParquetSource(path, target="y", sensitive_features="s", scratch_dir=scratch)
        est = DPFermiClassifier(
            epsilon=1.0, fairness_weight=1.0, max_epochs=epochs, random_state=seed
        )
        start, cpu = time.perf_counter(), time.process_time()
        est.fit(source)
        seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    finally:
        buckets.ScratchDir = ScratchDir
    weights = np.concatenate([p.detach().numpy().ravel() for p in est.module_.parameters()])
    row = dict(
        part="fit",
        mode=mode,
        seed=seed,
        seconds=seconds,
        cpu_s=cpu_s,
        epoch_mean_s=float(np.mean([float(d) for d in est.history_[:, "dur"]])),
    )
    return row, weights


def report(frame: pd.DataFrame, args, same: bool) -> str:
    lines = [
        "# Scratch-file encryption: its cost in a Parquet pass and a Parquet fit",
        "",
        f"Command: `nice -n 5 python benchmarks/scratch_encryption.py --rows {args.rows} "
        f"--repeats {args.repeats} --fit-repeats {args.fit_repeats} --epochs {args.epochs}`. "
        "A shared 2-core machine (other "
        "jobs running), one process, the modes alternated; `plain` is the same code with "
        "the AES-GCM cipher replaced by the identity (see the script's docstring). "
        f"{args.rows:,} rows x 100 float32 features.",
        "",
        "| part | plain (median s) | encrypted (median s) | encrypted / plain: medians "
        "| paired by seed: median [min, max] | CPU s, encrypted / plain (medians) | runs |",
        "|---|---|---|---|---|---|---|",
    ]
    for part in ("pass", "fit"):
        rows = frame[frame.part == part]
        if rows.empty:
            continue
        wide = rows.pivot(index="seed", columns="mode", values="seconds")
        cpu = rows.pivot(index="seed", columns="mode", values="cpu_s").median()
        plain, enc = wide["plain"].median(), wide["encrypted"].median()
        paired = wide["encrypted"] / wide["plain"]
        lines.append(
            f"| {part} | {plain:.3f} | {enc:.3f} | **{enc / plain:.3f}x** "
            f"| {paired.median():.3f}x [{paired.min():.2f}, {paired.max():.2f}] "
            f"| {cpu['encrypted']:.2f} / {cpu['plain']:.2f} "
            f"= {cpu['encrypted'] / cpu['plain']:.3f}x "
            f"| {len(rows)} |"
        )
    lines += [
        "",
        "`pass`: one epoch of the out-of-core sampler (write every bucket, read every bucket "
        "back), nothing trained. `fit`: a whole DPFermiClassifier fit of "
        f"{args.epochs} epochs (the columns' pass, calibration, every epoch's pass and steps).",
        "",
        "Seeded fits are unchanged by the encryption: the plain and encrypted models of each "
        f"seed are {'bit for bit equal' if same else 'NOT equal'}.",
        "",
        "## Every run",
        "",
        frame.to_markdown(index=False, floatfmt=".4g"),
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=5, help="pass runs per mode")
    parser.add_argument("--fit-repeats", type=int, default=2, help="fit runs per mode")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--scratch", default=None, help="where the table and buckets go")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    runs, same = [], True
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        tmp = Path(tmp)
        path = tmp / "table.parquet"
        _large_data().write_table(path, args.rows, seed=0)
        one_pass(path, tmp, "encrypted", seed=99)  # warm-up (imports, caches): not recorded
        one_fit(path, tmp, "encrypted", seed=99, epochs=1)
        for r in range(args.repeats):
            for mode in ("plain", "encrypted") if r % 2 == 0 else ("encrypted", "plain"):
                runs.append(one_pass(path, tmp, mode, seed=r))
                print(runs[-1], flush=True)
        for r in range(args.fit_repeats):
            weights = {}
            for mode in ("plain", "encrypted") if r % 2 == 0 else ("encrypted", "plain"):
                row, weights[mode] = one_fit(path, tmp, mode, seed=r, epochs=args.epochs)
                runs.append(row)
                print(runs[-1], flush=True)
            same = same and np.array_equal(weights["plain"], weights["encrypted"])
    frame = pd.DataFrame(runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "scratch_encryption.csv", index=False)
    text = report(frame, args, same)
    (out / "scratch_encryption.md").write_text(text, encoding="utf-8")
    print(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
