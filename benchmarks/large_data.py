"""DPFermiClassifier on tables larger than memory: a ParquetSource against the in-memory fit.

Three measurements (each fit in a fresh child process, so that its peak RSS --
``VmHWM`` of ``/proc/self/status`` -- is its own):

(a) time per epoch per row at 1M rows x 100 float32 features, in memory and from
    Parquet (target: Parquet within 1.5x of in memory);
(c) accuracy and demographic-parity violation of those fits on a held-out table,
    3 seeds (target: equal within seed spread);
(b) 10M rows x 100 float32 features from Parquet (about 4 GB on disk, generated in
    chunks into a scratch directory and deleted after): peak RSS (target <= 1.5 GB).

The table: features ``x0..x99`` i.i.d. N(0, 1) in float32; a group ``s`` in {0, 1}
with P(s = 1) = 0.3 that shifts ``x0`` by 1; a label
``y = 1[x0 + x1 + N(0, 1) > 0.5]`` (learnable, and correlated with the group, so an
unconstrained model has a demographic-parity gap). Chunk ``k`` of a table with seed
``seed`` is drawn from ``numpy.random.default_rng([seed, k])``, so the rows do not
depend on how the table is read. Written with pyarrow: row groups of 65,536 rows,
snappy, no dictionary encoding. The fits: ``DPFermiClassifier(epsilon=1,
fairness_weight=1, max_epochs=EPOCHS, random_state=seed)``, defaults otherwise
(batch 256), one torch thread. Run::

    nice -n 5 python benchmarks/large_data.py --scratch /tmp --out benchmarks/results

Writes ``large_data.csv`` (one row per fit) and ``large_data.md``; ``--parts a`` or
``--parts b`` reruns one part and keeps the other's rows.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

N_FEATURES = 100
CHUNK = 65536
TEST_ROWS = 200_000


def generate(n: int, seed: int, start_chunk: int = 0):
    """``(X, y, s)`` chunk by chunk (see the module docstring)."""
    for k, start in enumerate(range(0, n, CHUNK), start=start_chunk):
        m = min(CHUNK, n - start)
        rng = np.random.default_rng([seed, k])
        s = (rng.random(m) < 0.3).astype(np.int8)
        X = rng.standard_normal((m, N_FEATURES), dtype=np.float32)
        X[:, 0] += s
        y = (X[:, 0] + X[:, 1] + rng.standard_normal(m, dtype=np.float32) > 0.5).astype(np.int8)
        yield X, y, s


def write_table(path: Path, n: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for X, y, s in generate(n, seed):
        columns = {f"x{j}": X[:, j] for j in range(N_FEATURES)}
        columns.update(y=y, s=s)
        table = pa.table(columns)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, use_dictionary=False)
        writer.write_table(table, row_group_size=CHUNK)
    writer.close()


def in_memory(n: int, seed: int):
    X = np.empty((n, N_FEATURES), dtype=np.float32)
    y, s = np.empty(n, dtype=np.int8), np.empty(n, dtype=np.int8)
    start = 0
    for Xc, yc, sc in generate(n, seed):
        X[start : start + len(Xc)], y[start : start + len(Xc)], s[start : start + len(Xc)] = (
            Xc,
            yc,
            sc,
        )
        start += len(Xc)
    return X, y, s


def _hwm_mb() -> float:
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmHWM"].split()[0]) / 1024


def run_fit(mode: str, n: int, seed: int, epochs: int, path: str | None) -> dict:
    import torch

    from skfairdp.fermi import DPFermiClassifier

    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    est = DPFermiClassifier(epsilon=1.0, fairness_weight=1.0, max_epochs=epochs, random_state=seed)
    if mode == "memory":
        X, y, s = in_memory(n, 1000 + seed) if path is None else _read(path)
        data_mb = _hwm_mb()
        start = time.perf_counter()
        est.fit(X, y, sensitive_features=s)
        del X, y, s
    else:
        from skfairdp.data import ParquetSource

        source = ParquetSource(path, target="y", sensitive_features="s")
        data_mb = _hwm_mb()
        start = time.perf_counter()
        est.fit(source)
    fit_s = time.perf_counter() - start
    peak_mb = _hwm_mb()
    X_test, y_test, s_test = in_memory(TEST_ROWS, 999)
    pred = est.predict(X_test)
    durations = [float(d) for d in est.history_[:, "dur"]]
    return dict(
        mode=mode,
        n_rows=n,
        seed=seed,
        epochs=epochs,
        epoch_1_s=durations[0],
        epoch_rest_s=float(np.mean(durations[1:])) if len(durations) > 1 else float("nan"),
        epoch_mean_s=float(np.mean(durations)),
        fit_s=fit_s,
        steps_per_epoch=int(est.history_[0, "steps"]),
        peak_rss_mb=peak_mb,
        rss_before_fit_mb=data_mb,
        epsilon=est.privacy_spent_.epsilon,
        test_accuracy=float(np.mean(pred == y_test)),
        test_dp_violation=float(abs(pred[s_test == 1].mean() - pred[s_test == 0].mean())),
    )


def _read(path: str):
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    n = file.metadata.num_rows
    X = np.empty((n, N_FEATURES), dtype=np.float32)
    y, s = np.empty(n, dtype=np.int8), np.empty(n, dtype=np.int8)
    start = 0
    for batch in file.iter_batches(batch_size=CHUNK):
        m = batch.num_rows
        names = [f"x{j}" for j in range(N_FEATURES)]
        X[start : start + m] = batch.select(names).to_tensor().to_numpy()
        y[start : start + m] = batch.column("y").to_numpy()
        s[start : start + m] = batch.column("s").to_numpy()
        start += m
    return X, y, s


def child(mode: str, n: int, seed: int, epochs: int, path: str | None) -> dict:
    command = [sys.executable, __file__, "--child", mode, str(n), str(seed), str(epochs)]
    command += [path] if path else []
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    row = json.loads(out.strip().splitlines()[-1])
    print(row, flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["a", "b"], choices=["a", "b"])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of (a) and (c)")
    parser.add_argument("--large-rows", type=int, default=10_000_000, help="rows of (b)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--large-epochs", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--scratch", default=None, help="where the tables are written")
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite large_data.md from the CSV"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        mode, n, seed, epochs, *path = args.child
        print(json.dumps(run_fit(mode, int(n), int(seed), int(epochs), path[0] if path else None)))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        (out / "large_data.md").write_text(report(pd.read_csv(out / "large_data.csv"), args))
        return
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="skfairdp-large-", dir=args.scratch))
    try:
        if "a" in args.parts:
            for seed in args.seeds:
                path = folder / f"table-{seed}.parquet"
                write_table(path, args.rows, 1000 + seed)
                for mode in ("memory", "parquet"):
                    rows.append(
                        dict(part="a,c", **child(mode, args.rows, seed, args.epochs, str(path)))
                    )
                path.unlink()
        if "b" in args.parts:
            path = folder / "large.parquet"
            start = time.perf_counter()
            write_table(path, args.large_rows, 2000)
            written = time.perf_counter() - start
            size_gb = path.stat().st_size / 1e9
            row = child("parquet", args.large_rows, 0, args.large_epochs, str(path))
            rows.append(dict(part="b", file_gb=size_gb, write_s=written, **row))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    frame = pd.DataFrame(rows)
    previous = out / "large_data.csv"
    if previous.exists():  # keep the rows of the parts not rerun
        kept = pd.read_csv(previous)
        kept = kept[~kept.part.isin(frame.part.unique())]
        frame = pd.concat([kept, frame], ignore_index=True)
    frame["epoch_s_per_1m_rows"] = frame.epoch_mean_s / (frame.n_rows / 1e6)
    frame.to_csv(out / "large_data.csv", index=False)
    (out / "large_data.md").write_text(report(frame, args))


def report(frame: pd.DataFrame, args) -> str:
    lines = [
        "# Large data: DPFermiClassifier from Parquet (out of core) and in memory",
        "",
        "Command: `nice -n 5 python benchmarks/large_data.py "
        f"--rows {args.rows} --large-rows {args.large_rows} --epochs {args.epochs} "
        f"--large-epochs {args.large_epochs} --seeds {' '.join(map(str, args.seeds))}`. "
        "A shared 2-core machine (other jobs running), one torch thread, each fit in a fresh "
        "child process; `peak_rss_mb` is its VmHWM (the data included). Table and fits: see "
        "the script's docstring. The Parquet fit's epoch time includes its sampling pass; "
        "from the second epoch on, that pass ran in a background thread during the previous "
        "epoch (`prefetch=True`, the default).",
        "",
    ]
    small = frame[frame.part == "a,c"]
    if len(small):
        by = small.groupby("mode")
        columns = ["epoch_1_s", "epoch_rest_s", "epoch_mean_s", "fit_s", "peak_rss_mb",
                   "test_accuracy", "test_dp_violation"]  # fmt: skip
        mean, std = by[columns].mean(), by[columns].std()
        summary = mean.map(lambda v: f"{v:.4g}") + " ± " + std.map(lambda v: f"{v:.2g}")
        mem, pq_ = by.get_group("memory"), by.get_group("parquet")
        ratio = pq_.epoch_mean_s.mean() / mem.epoch_mean_s.mean()
        ratio_rest = pq_.epoch_rest_s.mean() / mem.epoch_rest_s.mean()
        ratio_fit = pq_.fit_s.mean() / mem.fit_s.mean()
        lines += [
            f"## (a) time per epoch and (c) accuracy, violation at {args.rows:,} rows",
            "",
            f"Mean ± standard deviation over seeds {', '.join(map(str, args.seeds))}:",
            "",
            summary.to_markdown(),
            "",
            f"Parquet / in memory, time per epoch (mean over all epochs): **{ratio:.2f}x** "
            f"(target <= 1.5x); epochs 2+ only: {ratio_rest:.2f}x; whole fit (the reading "
            f"of the columns, calibration and every epoch): {ratio_fit:.2f}x.",
            "",
        ]
    large = frame[frame.part == "b"]
    if len(large):
        row = large.iloc[0]
        lines += [
            f"## (b) {int(row.n_rows):,} rows from Parquet",
            "",
            f"File {row.file_gb:.2f} GB (written in {row.write_s:.0f} s). Peak RSS "
            f"**{row.peak_rss_mb:.0f} MB** (target <= 1536 MB); before the fit (Python, torch, "
            f"skfairdp imported, the source opened) {row.rss_before_fit_mb:.0f} MB. Epoch 1 "
            f"{row.epoch_1_s:.0f} s, later epochs {row.epoch_rest_s:.0f} s "
            f"({row.steps_per_epoch} steps each); epsilon spent {row.epsilon:.3f}; test "
            f"accuracy {row.test_accuracy:.4f}, violation {row.test_dp_violation:.4f}.",
            "",
        ]
    lines += ["## Every fit", "", frame.to_markdown(index=False, floatfmt=".4g"), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
