"""Time per epoch: GlobalScalingDPClassifier's variants and DPSGD-F vs Opacus DP-SGD.

Same process, same data (Adult, balanced M/F as in ``global_scaling_adult.py``,
23,512 training rows), same model (MLP 102-256-256-2, tanh), same expected batch
size (256, Poisson sampling), same thread count. Opacus (benchmark-only
dependency) runs ``PrivacyEngine.make_private`` DP-SGD (hooks-based per-sample
gradients, flat clipping, noise) over its Poisson ``DPDataLoader``. The
measurements alternate (ours, Opacus, ours, ...) so that load on a shared
machine hits both alike; we report medians over epochs and the ratio
ours / Opacus. Run:

    python benchmarks/global_scaling_speed.py --epochs 3 --repeats 3 --threads 1

Writes ``global_scaling_speed.csv`` and ``.md``. Target (issue 4): <= 1.2x Opacus.
"""

from __future__ import annotations

import argparse
import logging
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from skfairdp.baselines import DPSGDFClassifier
from skfairdp.dpsgd.global_scaling import GlobalScalingDPClassifier

logging.getLogger("absl").setLevel(logging.ERROR)
warnings.filterwarnings("ignore")

HIDDEN = (256, 256)


def ours_epoch_seconds(name, X, y, s, epochs):
    common = dict(epsilon=3.41, delta=1e-6, max_grad_norm=0.5, hidden_layer_sizes=HIDDEN,
                  activation="tanh", batch_size=256, max_epochs=epochs, random_state=0)  # fmt: skip
    if name == "DPSGD-F":
        est = DPSGDFClassifier(lr=0.01, **common).fit(X, y, sensitive_features=s)
    else:
        variant = {"clip": "clip", "global": "global", "adapt": "adapt"}[name]
        est = GlobalScalingDPClassifier(variant=variant, lr=0.1, **common).fit(X, y)
    return [float(d) for d in est.history_[:, "dur"]]


def opacus_epoch_seconds(X, y, epochs, noise_multiplier=1.0):
    from opacus import PrivacyEngine

    torch.manual_seed(0)
    widths = [X.shape[1], *HIDDEN]
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.Tanh()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(widths[-1], 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(y))
    loader = torch.utils.data.DataLoader(dataset, batch_size=256)
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader,
        noise_multiplier=noise_multiplier, max_grad_norm=0.5, poisson_sampling=True,
    )  # fmt: skip
    criterion = torch.nn.CrossEntropyLoss()
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        times.append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--methods", nargs="*", default=["clip", "global", "adapt", "DPSGD-F"])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    from global_scaling_adult import load

    X, _, y, _, s, _ = load(0)
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = y.astype(np.int64)
    rows = []
    for repeat in range(args.repeats):
        for name in args.methods:
            for t in ours_epoch_seconds(name, X, y, s, args.epochs):
                rows.append(dict(method=name, impl="skfairdp", repeat=repeat, seconds=t))
            for t in opacus_epoch_seconds(X, y, args.epochs):
                rows.append(dict(method=name, impl="opacus", repeat=repeat, seconds=t))
            print(repeat, name, flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(args.out / "global_scaling_speed.csv", index=False)
    med = df.groupby(["method", "impl"])["seconds"].median().unstack()
    med["ratio"] = med["skfairdp"] / med["opacus"]
    lines = [
        "# Time per epoch vs Opacus DP-SGD (Adult, MLP 102-256-256-2 tanh, batch 256)",
        "",
        f"Command: `python benchmarks/global_scaling_speed.py --epochs {args.epochs} "
        f"--repeats {args.repeats} --threads {args.threads}`. {len(y)} training rows, "
        f"torch {torch.__version__}, {args.threads} thread(s), {platform.processor() or 'cpu'}. "
        "Opacus measured in the same process right after each of our runs (median of "
        f"{args.epochs * args.repeats} epochs each; the Opacus column of a row is from the "
        "runs interleaved with that row's method). The machine was shared with other jobs.",
        "",
        med.reset_index().to_markdown(index=False, floatfmt=".3f"),
        "",
        "## Target (issue 4): <= 1.2x Opacus per epoch",
        "",
    ]
    for name, row in med.iterrows():
        ok = row["ratio"] <= 1.2
        lines.append(f"- {'PASS' if ok else 'FAIL'}: {name} {row['ratio']:.2f}x Opacus")
    (args.out / "global_scaling_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
