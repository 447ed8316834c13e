"""Time per epoch of DPFermiClassifier's private step vs plain torch minibatch SGD.

Both run in this process on the same data (bundled Adult, 75% train split), same
model (logistic regression, 102 -> 2 logits), same batch size and thread count;
we report medians over epochs and the ratio. Run:

    python benchmarks/speed.py --threads 1 --out benchmarks/results

Writes ``speed.csv`` and ``speed.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split

from skfairdp.datasets import load_adult
from skfairdp.dpsgd import DPSGDClassifier
from skfairdp.fermi import DPFermiClassifier, linear_step
from skfairdp.raco import RaCODPClassifier

logging.getLogger("absl").setLevel(logging.ERROR)

#: issue 39: DP-FERMI's epoch CPU time at most this multiple of plain torch SGD's, and
#: RaCO-DP's at most this multiple of DPSGDClassifier's
TARGET_RATIO = 1.15
#: the rows RaCO-DP's target compares
RACO, DPSGD = "RaCO-DP eps=1 gamma=0.05 (DP)", "DPSGDClassifier eps=1"
#: the target row on the generic engine's step (skfairdp/fermi/linear_step.py switched off)
ENGINE = "DP-FERMI record eps=1 lambda=1, engine step"


def plain_sgd_epoch_seconds(X, y, batch_size, epochs, lr=0.5, clock=time.perf_counter):
    """A lean hand-written torch loop: shuffle, index, forward, backward, SGD step."""
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    model = torch.nn.Linear(X.shape[1], 2)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    times = []
    for _ in range(epochs):
        start = clock()
        perm = torch.randperm(len(X))
        for i in range(0, len(X), batch_size):
            idx = perm[i : i + batch_size]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(Xt[idx]), yt[idx])
            loss.backward()
            opt.step()
        times.append(clock() - start)
    return times


class EpochClock:
    """skorch-style callback: CPU seconds of each epoch (``time.process_time``)."""

    def __init__(self):
        self.times = []

    def on_epoch_begin(self, net, **kwargs):
        self._start = time.process_time()

    def on_epoch_end(self, net, **kwargs):
        self.times.append(time.process_time() - self._start)


def dataloader_sgd_epoch_seconds(X, y, batch_size, epochs, lr=0.5):
    """The textbook loop with torch's DataLoader (for context only)."""
    ds = torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(y))
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True)
    model = torch.nn.Linear(X.shape[1], 2)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
        times.append(time.perf_counter() - start)
    return times


def private_epoch_seconds(
    X, y, s, batch_size, epochs, estimator=DPFermiClassifier, engine_step=False, **params
):
    """Wall-clock and CPU seconds per epoch, and steps per epoch, of a private fit
    (DP-FERMI unless ``estimator`` says otherwise; groups go to those that take them).
    ``engine_step``: DP-FERMI on the generic engine's step (its linear step switched off)."""
    clock = EpochClock()
    est = estimator(
        batch_size=batch_size, max_epochs=epochs, random_state=0, callbacks=[clock], **params
    )
    enabled = linear_step.ENABLED
    linear_step.ENABLED = not engine_step
    try:
        est.fit(X, y, **({} if estimator is DPSGDClassifier else {"sensitive_features": s}))
    finally:
        linear_step.ENABLED = enabled
    return list(est.history_[:, "dur"]), clock.times, list(est.history_[:, "steps"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = load_adult(preprocess=True)
    X, y, s = (
        np.ascontiguousarray(data.data.to_numpy(np.float32)),
        data.target.to_numpy().astype(np.int64),
        data.sensitive_features.to_numpy(),
    )
    X, _, y, _, s, _ = train_test_split(X, y, s, test_size=0.25, random_state=0)
    X = np.ascontiguousarray(X)
    variants = {
        "DP-FERMI record eps=1 lambda=1": dict(epsilon=1.0, delta=1e-5, fairness_weight=1.0),
        ENGINE: dict(epsilon=1.0, delta=1e-5, fairness_weight=1.0, engine_step=True),
        "DP-FERMI sensitive eps=1 lambda=1": dict(
            epsilon=1.0, delta=1e-5, fairness_weight=1.0, privacy_unit="sensitive"
        ),
        "DP-FERMI record eps=1 lambda=0 (DP-SGD)": dict(epsilon=1.0, delta=1e-5, fairness_weight=0),
        "FERMI non-private (eps=inf) lambda=1": dict(epsilon=np.inf, fairness_weight=1.0),
        RACO: dict(estimator=RaCODPClassifier, epsilon=1.0, delta=1e-5, tolerance=0.05),
        DPSGD: dict(estimator=DPSGDClassifier, epsilon=1.0, delta=1e-5),
    }
    rows = []
    for batch_size in args.batch_sizes:
        steps_plain = int(np.ceil(len(X) / batch_size))
        plain_sgd_epoch_seconds(X, y, batch_size, 1)  # warm-up
        wall = {name: [] for name in ["plain", *variants]}
        cpu = {name: [] for name in ["plain", *variants]}
        steps = {}
        # Rounds interleave the methods, so load changes on a shared machine hit all alike.
        for _ in range(args.rounds):
            wall["plain"] += plain_sgd_epoch_seconds(X, y, batch_size, args.epochs)
            cpu["plain"] += plain_sgd_epoch_seconds(
                X, y, batch_size, args.epochs, clock=time.process_time
            )
            for name, params in variants.items():
                durations, cpu_times, n_steps = private_epoch_seconds(
                    X, y, s, batch_size, args.epochs, **params
                )
                wall[name] += durations[1:]  # the first epoch is warm-up
                cpu[name] += cpu_times[1:]
                steps[name] = n_steps[0]
        loader = float(np.median(dataloader_sgd_epoch_seconds(X, y, batch_size, 2)))
        plain_wall, plain_cpu = float(np.median(wall["plain"])), float(np.median(cpu["plain"]))
        rows.append(
            dict(
                batch_size=batch_size,
                method="plain torch SGD (lean loop)",
                epoch_s=plain_wall,
                epoch_cpu_s=plain_cpu,
                step_ms=1000 * plain_cpu / steps_plain,
                ratio_wall=1.0,
                ratio_cpu=1.0,
            )
        )
        rows.append(
            dict(
                batch_size=batch_size,
                method="plain torch SGD (DataLoader, context)",
                epoch_s=loader,
                epoch_cpu_s=np.nan,
                step_ms=np.nan,
                ratio_wall=loader / plain_wall,
                ratio_cpu=np.nan,
            )
        )
        for name in variants:
            epoch_wall, epoch_cpu = float(np.median(wall[name])), float(np.median(cpu[name]))
            rows.append(
                dict(
                    batch_size=batch_size,
                    method=name,
                    epoch_s=epoch_wall,
                    epoch_cpu_s=epoch_cpu,
                    step_ms=1000 * epoch_cpu / steps[name],
                    ratio_wall=epoch_wall / plain_wall,
                    ratio_cpu=epoch_cpu / plain_cpu,
                )
            )
    frame = pd.DataFrame(rows)
    dpsgd_cpu = frame[frame.method == DPSGD].set_index("batch_size").epoch_cpu_s
    frame["ratio_cpu_vs_dpsgd"] = frame.epoch_cpu_s / frame.batch_size.map(dpsgd_cpu)
    frame.loc[~frame.method.isin([RACO, DPSGD]), "ratio_cpu_vs_dpsgd"] = np.nan
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "speed.csv", index=False)
    # issue 39's target: DP-FERMI's step (record unit) at <= 1.15x plain SGD, batch 256 and 1024
    verdict = ""
    for batch_size in (256, 1024):
        target = frame[
            (frame.batch_size == batch_size) & (frame.method == "DP-FERMI record eps=1 lambda=1")
        ]
        if len(target):
            r_cpu, r_wall = float(target.ratio_cpu.iloc[0]), float(target.ratio_wall.iloc[0])
            verdict += (
                f"**Target (CPU ratio <= {TARGET_RATIO} at batch {batch_size}, record unit): "
                f"{'PASS' if r_cpu <= TARGET_RATIO else 'FAIL'}** ({r_cpu:.2f}); wall-clock "
                f"ratio {r_wall:.2f}.\n\n"
            )
        raco = frame[(frame.batch_size == batch_size) & (frame.method == RACO)]
        if len(raco):
            ratio = float(raco.ratio_cpu_vs_dpsgd.iloc[0])
            verdict += (
                f"**Target (RaCO-DP's CPU time <= {TARGET_RATIO} x DPSGDClassifier's at batch "
                f"{batch_size}): {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}** ({ratio:.2f}).\n\n"
            )
    header = (
        "# Speed: private DP-FERMI and RaCO-DP steps vs plain torch SGD and our DP-SGD "
        "(Adult, logistic regression)\n\n"
        f"Command: `python benchmarks/speed.py --threads {args.threads} --epochs {args.epochs} "
        f"--rounds {args.rounds}`\n\n"
        f"Machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"{args.threads} thread(s), load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores at the end; n_train = {len(X)}, 102 features. Methods run "
        f"interleaved in one process, {args.rounds} rounds of {args.epochs} epochs; medians over "
        "epochs (each fit's first epoch excluded as warm-up). `epoch_s` is wall-clock, "
        "`epoch_cpu_s` this process's CPU time (`time.process_time`, robust to other processes "
        "on a shared machine; one thread, so it is the time on a dedicated core); `step_ms` is "
        "CPU time per step. Ratios are against the lean plain loop; `ratio_cpu_vs_dpsgd` "
        "(RaCO-DP's target) against DPSGDClassifier's epoch in the same run. DP-FERMI with a "
        "logistic regression takes its linear step (`skfairdp/fermi/linear_step.py`, the "
        "engine's step bit for bit); the `engine step` row is the same fit on the generic "
        "engine's step. RaCO-DP likewise takes its linear step (`skfairdp/raco/linear_step.py`: "
        "the same releases and events as the engine's step, the released histogram's "
        "post-processing in float64 on the host, so its models differ in the last bits).\n"
        "The authors' per-sample loop takes about 85 ms per 512-row step (seed 001, Table 2).\n\n"
        + verdict
    )
    (out / "speed.md").write_text(header + frame.to_markdown(index=False, floatfmt=".4g") + "\n")
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
