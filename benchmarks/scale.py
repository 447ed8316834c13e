"""Time per epoch and peak memory of DPFermiClassifier at 100k and 1M rows x 100 features.

Each size runs in a fresh subprocess so that its peak RSS (``ru_maxrss``) is its
own. Synthetic data: float32 Gaussian features, a label correlated with the
group. Run:

    python benchmarks/scale.py --sizes 100000 1000000 --out benchmarks/results

Writes ``scale.csv`` and ``scale.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd


def run_one(n_rows: int, n_features: int, epochs: int) -> dict:
    import torch

    from skfairdp.fermi import DPFermiClassifier

    logging.getLogger("absl").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    s = rng.integers(0, 2, n_rows)
    X = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    X[:, 0] += s
    y = (X[:, 0] + X[:, 1] + rng.standard_normal(n_rows, dtype=np.float32) > 0.5).astype(np.int64)
    rss_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    est = DPFermiClassifier(
        epsilon=1.0, delta=1e-7, fairness_weight=1.0, max_epochs=epochs, random_state=0
    ).fit(X, y, sensitive_features=s)
    fit_s = time.perf_counter() - start
    accuracy = float((est.predict(X[:100_000]) == y[:100_000]).mean())
    return dict(
        n_rows=n_rows,
        n_features=n_features,
        epochs=epochs,
        epoch_s=float(np.median(est.history_[:, "dur"])),
        fit_s=fit_s,
        steps_per_epoch=int(est.history_[0, "steps"]),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        data_rss_mb=rss_data,
        epsilon=est.privacy_spent_.epsilon,
        train_accuracy=accuracy,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_one(args.child, args.features, args.epochs)))
        return
    rows = []
    for n in args.sizes:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                str(n),
                "--features",
                str(args.features),
                "--epochs",
                str(args.epochs),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    frame["epoch_s_per_100k_rows"] = frame.epoch_s / (frame.n_rows / 100_000)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "scale.csv", index=False)
    text = (
        "# Scale: DPFermiClassifier on synthetic data (100 features, logistic regression)\n\n"
        f"Command: `python benchmarks/scale.py --sizes {' '.join(map(str, args.sizes))} "
        f"--epochs {args.epochs}`\n\n"
        "One thread; epsilon=1, delta=1e-7, fairness_weight=1, batch 256 (defaults otherwise). "
        "`peak_rss_mb` is the child process's maximum resident set size (data included); "
        "`data_rss_mb` the RSS right after generating the data. Targets: time linear in n, "
        "peak RSS <= 2.5 GB at 1M rows.\n\n" + frame.to_markdown(index=False, floatfmt=".4g") + "\n"
    )
    (out / "scale.md").write_text(text)


if __name__ == "__main__":
    main()
