"""Data-parallel DPFermiClassifier on torch.distributed: 2 ranks against 1 on the same batches.

Throughput (training rows per second) of one process against two gloo ranks on
loopback, each with one torch thread, at the same total expected batch; then
accuracy and demographic-parity violation on held-out rows, 1 vs 2 ranks, over
seeds. Every rank generates the same synthetic data (float32 Gaussian features,
a label correlated with the group) and passes all of it to ``fit``
(``shard="full"``). The load average of the machine is recorded beside each run
(the numbers are only as good as the cores were free). Run:

    python benchmarks/distributed.py --out benchmarks/results

Writes ``distributed.csv`` and ``distributed.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def make_data(n_rows: int, n_features: int, seed: int):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n_rows)
    X = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    X[:, 0] += s
    y = (X[:, 0] + X[:, 1] + rng.standard_normal(n_rows, dtype=np.float32) > 0.5).astype(np.int64)
    return X, y, s


class TrainClock:
    """skorch-style callback: wall and CPU seconds of this process's training loop."""

    def on_train_begin(self, net, **kwargs):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def on_train_end(self, net, **kwargs):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def rank_main(rank: int, world_size: int, init_file: str, config: dict, out_file: str) -> None:
    """One rank (or the one process): fit, and rank 0 writes what it measured."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
    logging.getLogger("absl").setLevel(logging.ERROR)
    import torch.distributed as dist

    from skfairdp import DPFermiClassifier
    from skfairdp.metrics import demographic_parity_violation

    if world_size > 1:
        dist.init_process_group(
            "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size
        )
    n, n_test = config["n_rows"], config["n_test"]
    X, y, s = make_data(n + n_test, config["n_features"], 0)
    est = DPFermiClassifier(
        fairness_weight=1.0,
        epsilon=1.0,
        delta=1e-7,
        batch_size=config["batch_size"],
        max_epochs=config["epochs"],
        random_state=config["seed"],
        n_jobs=1,
        callbacks=[TrainClock()],
    )
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    est.fit(X[:n], y[:n], sensitive_features=s[:n])
    fit_s = time.perf_counter() - start
    if world_size > 1:
        dist.destroy_process_group()
    clock = est.callbacks[0]
    if rank != 0:
        with open(f"{out_file}.{rank}", "w") as f:
            json.dump({"train_cpu_s": clock.cpu}, f)
        return
    train_s = float(np.sum(est.history_[:, "dur"]))
    result = dict(config)
    result.update(
        ranks=world_size,
        train_s=train_s,
        fit_s=fit_s,
        rows_per_s=n * config["epochs"] / train_s,
        train_cpu_s=clock.cpu,
        steps=int(est.n_steps_),
        epsilon_spent=est.privacy_spent_.epsilon,
        load_1min_before=load_before,
        load_1min_after=os.getloadavg()[0],
    )
    if n_test:
        pred = est.predict(X[n:])
        result["test_accuracy"] = float((pred == y[n:]).mean())
        result["dp_violation"] = float(
            demographic_parity_violation(y[n:], pred, sensitive_features=s[n:])
        )
    with open(out_file, "w") as f:
        json.dump(result, f)


def compute_main(rank: int, world_size: int, steps: int, out_file: str) -> None:
    """The machine's own parallelism: a fixed amount of matmul work split over processes
    that never communicate (what two ranks could reach at best on these cores)."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
    a = torch.randn(400, 400)
    start = time.perf_counter()
    for _ in range(steps // world_size):
        a = torch.tanh(a @ a * 0.01)
    with open(f"{out_file}.{rank}", "w") as f:
        json.dump({"wall_s": time.perf_counter() - start}, f)


def machine_speedup(steps: int = 2000) -> dict:
    """Wall time of ``steps`` matmuls in one process over the slowest of two doing half each."""
    import torch.multiprocessing as mp

    walls = {}
    for world_size in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            out_file = os.path.join(tmp, "compute.json")
            args = (world_size, steps, out_file)
            load = os.getloadavg()[0]
            mp.start_processes(compute_main, args=args, nprocs=world_size, start_method="spawn")
            walls[world_size] = max(
                json.load(open(f"{out_file}.{rank}"))["wall_s"] for rank in range(world_size)
            )
    return {"study": "machine", "speedup": walls[1] / walls[2], "load_1min_before": load}


def run(world_size: int, config: dict) -> dict:
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "result.json")
        args = (world_size, os.path.join(tmp, "init"), config, out_file)
        mp.start_processes(rank_main, args=args, nprocs=world_size, start_method="spawn")
        with open(out_file) as f:
            result = json.load(f)
        for rank in range(1, world_size):
            with open(f"{out_file}.{rank}") as f:
                cpu = json.load(f)["train_cpu_s"]
            result["train_cpu_s"] = max(result["train_cpu_s"], cpu)
        return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[256, 4096, 16384])
    parser.add_argument("--speed-epochs", type=int, default=2)
    parser.add_argument("--quality-batch", type=int, default=4096)
    parser.add_argument("--quality-epochs", type=int, default=10)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument(
        "--studies",
        nargs="+",
        choices=["throughput", "quality"],
        default=["throughput", "quality"],
        help="run these; the other study's rows are kept from the existing distributed.csv",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    base = dict(n_rows=args.rows, n_features=args.features, n_test=0, seed=0)
    rows = []
    if (out / "distributed.csv").exists() and len(args.studies) < 2:
        kept = pd.read_csv(out / "distributed.csv")
        dropped = [*args.studies, "machine"] if "throughput" in args.studies else args.studies
        rows = kept[~kept.study.isin(dropped)].to_dict("records")
    if "throughput" in args.studies:
        rows.append(machine_speedup())
        print(json.dumps(rows[-1]), flush=True)
    for batch in args.batch_sizes if "throughput" in args.studies else []:
        for world_size in (1, 2):
            config = dict(base, batch_size=batch, epochs=args.speed_epochs, study="throughput")
            rows.append(run(world_size, config))
            print(json.dumps(rows[-1]), flush=True)
    for seed in args.seeds if "quality" in args.studies else []:
        for world_size in (1, 2):
            config = dict(
                base,
                n_test=200_000,
                seed=seed,
                batch_size=args.quality_batch,
                epochs=args.quality_epochs,
                study="quality",
            )
            rows.append(run(world_size, config))
            print(json.dumps(rows[-1]), flush=True)
    frame = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "distributed.csv", index=False)
    (out / "distributed.md").write_text(report(frame, argv, args.studies))


def report(frame: pd.DataFrame, argv, studies=("throughput", "quality")) -> str:
    command = "python benchmarks/distributed.py " + " ".join(argv or sys.argv[1:])
    speed = frame[frame.study == "throughput"].astype({"ranks": int, "batch_size": int})
    pivot = speed.pivot(index="batch_size", columns="ranks", values="rows_per_s")
    speedup = (pivot[2] / pivot[1]).rename("speedup")
    cpu = speed.pivot(index="batch_size", columns="ranks", values="train_cpu_s")
    cpu_speedup = (cpu[1] / cpu[2]).rename("CPU-time ratio")
    load = speed.groupby("batch_size")[["load_1min_before", "load_1min_after"]].max()
    table = pd.concat(
        [pivot.rename(columns=lambda r: f"rows/s, {r} rank(s)"), speedup, cpu_speedup, load], axis=1
    )
    machine = frame[frame.study == "machine"]
    machine_line = (
        "The same cores run two processes that never communicate, each doing half of a fixed "
        f"matmul loop, at {machine.speedup.iloc[0]:.2f}x the speed of one doing all of it "
        f"(load {machine.load_1min_before.iloc[0]:.2f} before): the most two ranks could reach "
        "here."
        if len(machine)
        else ""
    )
    quality = frame[frame.study == "quality"].astype({"ranks": int, "seed": int})
    per_seed = quality[
        [
            "ranks",
            "seed",
            "test_accuracy",
            "dp_violation",
            "epsilon_spent",
            "train_s",
            "load_1min_after",
        ]
    ]
    summary = quality.groupby("ranks")[["test_accuracy", "dp_violation"]].agg(["mean", "std"])
    n = int(frame.n_rows.iloc[0])
    return "\n".join(
        [
            "# Data-parallel DPFermiClassifier (torch.distributed, gloo on loopback)",
            "",
            f"Command: `{command.strip()}`",
            "",
            f"{n:,} training rows x {int(frame.n_features.iloc[0])} float32 features, "
            "epsilon=1, delta=1e-7, fairness_weight=1, one torch thread per rank; every rank "
            'passes all rows (`shard="full"`) and trains on its half. Throughput: training '
            "rows per second of the training loop (`history_` durations; setup, validation "
            "and calibration excluded), at the same total expected batch. 2 cores shared "
            "with other jobs: the 1-minute load average is beside each row. `CPU-time ratio`: "
            "the training loop's CPU seconds in one process over the busiest rank's in two "
            "(waiting in an all-reduce costs none): the speedup two free cores would give "
            "if the ranks never waited for each other.",
            "",
            "## Throughput, 2 ranks vs 1 (target: >= 1.6x)",
            "",
            table.to_markdown(floatfmt=".3g"),
            "",
            machine_line,
            "",
            f"## Accuracy and violation, 1 vs 2 ranks ({len(quality) // 2} seeds, held-out rows)",
            "",
            "Batch 4,096, 10 epochs, 200,000 held-out rows"
            + ("." if "quality" in studies else " (kept from an earlier run of every study)."),
            "",
            summary.to_markdown(floatfmt=".4f"),
            "",
            per_seed.astype({"ranks": str, "seed": str}).to_markdown(index=False, floatfmt=".4f"),
            "",
        ]
    )


if __name__ == "__main__":
    main()
