"""FederatedDPFermiClassifier(backend="flower") on loopback against Flower's own floor.

One run measures, on the same machine, one after the other:

``floor``
    A trivial Flower app (each round: 64 float32 to each of 3 SuperNodes and 64 back,
    nothing computed) on the same loopback deployment as ``backend="flower"``
    (:class:`~skfairdp.federated.flower_runner.LoopbackFederation`: a SuperLink, 3
    SuperNodes, the same polling settings): Flower's own seconds per round.
``flower``
    ``FederatedDPFermiClassifier(backend="flower", epsilon=1, random_state=0)`` with
    default settings on a 6,000-row Adult subsample (stratified by label and group),
    tested on the other rows: wall time of ``fit``, seconds per round
    (``flower_round_seconds_``), test error and demographic-parity violation.
``local``
    The same fit on the local backend (its error is the reference).
``flower-simulation``
    The same fit on Flower's Simulation Engine (``backend="flower-simulation"``; run
    when ``ray`` is importable): the same app without a SuperLink or SuperNodes.

Run::

    python benchmarks/federated_flower.py --out benchmarks/results

Writes ``federated_flower.csv`` and ``federated_flower.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np

FIELDS = ["run", "rounds", "wall_seconds", "median_round_seconds", "mean_round_seconds",
          "error", "dp_violation", "epsilon_spent"]  # fmt: skip
TRIVIAL_ROUNDS = 8

TRIVIAL_APP = {
    "pyproject.toml": """
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "trivial-floor"
        version = "0.1.0"
        dependencies = []

        [tool.hatch.build.targets.wheel]
        packages = ["."]

        [tool.flwr.app]
        publisher = "skfairdp"

        [tool.flwr.app.components]
        serverapp = "trivial_floor.apps:server_app"
        clientapp = "trivial_floor.apps:client_app"

        [tool.flwr.app.config]
        num-silos = 3
        rounds = 8
        output-path = ""
    """,
    "trivial_floor/__init__.py": "",
    "trivial_floor/apps.py": '''
        """Flower's floor: 64 floats each way, nothing computed (same polling as skfairdp's)."""
        import time

        import numpy as np
        from flwr.app import Array, ArrayRecord, Message, RecordDict
        from flwr.clientapp import ClientApp
        from flwr.serverapp import ServerApp

        client_app = ClientApp()
        server_app = ServerApp()


        @client_app.train()
        def train(message, context):
            values = message.content["state"]["values"].numpy()
            return Message(RecordDict({"reply": ArrayRecord({"values": Array(values)})}),
                           reply_to=message)


        @server_app.main()
        def main(grid, context):
            run = dict(context.run_config)
            while len(grid.get_node_ids()) < int(run["num-silos"]):
                time.sleep(0.2)
            nodes = sorted(grid.get_node_ids())
            seconds = []
            for t in range(int(run["rounds"])):
                start = time.perf_counter()
                state = ArrayRecord({"values": Array(np.zeros(64, np.float32))})
                msgs = [Message(RecordDict({"state": state}), dst_node_id=n,
                                message_type="train", group_id=str(t)) for n in nodes]
                ids = set(grid.push_messages(msgs))
                while ids:
                    for reply in grid.pull_messages(ids):
                        ids.discard(reply.metadata.reply_to_message_id)
                    if ids:
                        time.sleep(0.1)
                seconds.append(time.perf_counter() - start)
                np.save(run["output-path"], np.array(seconds))
    ''',
}


def floor(workdir: Path) -> dict:
    from skfairdp.federated.flower_runner import LoopbackFederation

    app = workdir / "trivial_app"
    for name, text in TRIVIAL_APP.items():
        (app / name).parent.mkdir(parents=True, exist_ok=True)
        (app / name).write_text(textwrap.dedent(text).lstrip())
    out = workdir / "floor.npy"
    start = time.perf_counter()
    with LoopbackFederation([{"silo": j} for j in range(3)], workdir=workdir / "fed") as fed:
        result = fed.run(
            {"num-silos": 3, "rounds": TRIVIAL_ROUNDS, "output-path": str(out)}, app_dir=app
        )
    if result["status"] != "finished:completed":
        raise RuntimeError(result["log"][-3000:])
    seconds = np.load(out)
    return {"run": "floor", "rounds": len(seconds), "wall_seconds": time.perf_counter() - start,
            "median_round_seconds": float(np.median(seconds)),
            "mean_round_seconds": float(np.mean(seconds))}  # fmt: skip


def adult_subsample(n: int = 6000, seed: int = 0):
    from sklearn.model_selection import train_test_split

    from skfairdp.datasets import load_dataset

    bunch = load_dataset("adult")
    X = np.ascontiguousarray(np.asarray(bunch.data, dtype=np.float32))
    y = np.asarray(bunch.target).astype(np.int64)
    _, s = np.unique(np.asarray(bunch.sensitive_features), return_inverse=True)
    strata = 2 * s + y
    return train_test_split(X, y, s, train_size=n, random_state=seed, stratify=strata)


def fit(backend: str, parts) -> dict:
    from skfairdp.federated import FederatedDPFermiClassifier
    from skfairdp.metrics import demographic_parity_violation

    Xtr, Xte, ytr, yte, str_, ste = parts
    clf = FederatedDPFermiClassifier(backend=backend, epsilon=1.0, random_state=0, verbose=1)
    start = time.perf_counter()
    clf.fit(Xtr, ytr, sensitive_features=str_)
    wall = time.perf_counter() - start
    pred = clf.predict(Xte)
    seconds = getattr(clf, "flower_round_seconds_", None)
    if seconds is None:
        seconds = np.array([h["dur"] / max(1, clf._rounds_per_epoch) for h in clf.history_])
    return {
        "run": backend, "rounds": clf.n_rounds_, "wall_seconds": wall,
        "median_round_seconds": float(np.median(seconds)),
        "mean_round_seconds": float(np.mean(seconds)),
        "error": float(np.mean(pred != yte)),
        "dp_violation": float(demographic_parity_violation(yte, pred, sensitive_features=ste)),
        "epsilon_spent": clf.privacy_spent_.epsilon,
    }  # fmt: skip


def report(rows: list[dict], out: Path) -> None:
    import csv

    with (out / "federated_flower.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    by = {r["run"]: r for r in rows}

    def cell(value, fmt):
        return "" if value in (None, "") else format(value, fmt)

    lines = [
        "# FederatedDPFermiClassifier over Flower on loopback (issue 27)",
        "",
        f"Written by `benchmarks/federated_flower.py` on {platform.node() or 'this machine'} "
        f"({os.cpu_count()} CPUs, load average at the end "
        f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}), flwr "
        f"{__import__('flwr').__version__}. A SuperLink and 3 SuperNodes on 127.0.0.1; the "
        "fit: default settings, epsilon = 1, random_state = 0, 6,000 Adult rows (stratified "
        "by label and group), tested on the other 39,222.",
        "",
        "| run | rounds | wall s | median s / round | mean s / round | test error | dp "
        "violation | epsilon spent |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['run']} | {r['rounds']} | {r['wall_seconds']:.1f} | "
            f"{r['median_round_seconds']:.3f} | {r['mean_round_seconds']:.3f} | "
            f"{cell(r.get('error'), '.4f')} | {cell(r.get('dp_violation'), '.4f')} | "
            f"{cell(r.get('epsilon_spent'), '.3f')} |"
        )
    if {"floor", "flower", "local"} <= set(by):
        fl, fo, lo = by["flower"], by["floor"], by["local"]
        over = fl["median_round_seconds"] <= fo["median_round_seconds"] + 1
        lines += [
            "",
            f"- Flower round over Flower's floor: {fl['median_round_seconds']:.2f} s against "
            f"{fo['median_round_seconds']:.2f} s (medians; target: at most floor + 1 s, "
            f"{'met' if over else 'missed'}).",
            f"- Whole fit over Flower: {fl['wall_seconds'] / 60:.1f} min (target: at most 10 "
            f"min, {'met' if fl['wall_seconds'] <= 600 else 'missed'}).",
            f"- Test error, Flower against local: {fl['error']:.4f} against {lo['error']:.4f} "
            f"(difference {fl['error'] - lo['error']:+.4f}; target: within 0.005).",
        ]
    if {"flower-simulation", "local"} <= set(by):
        si, lo = by["flower-simulation"], by["local"]
        lines.append(
            f"- Flower's Simulation Engine (one machine, silos not isolated): "
            f"{si['median_round_seconds']:.3f} s per round (median), whole fit "
            f"{si['wall_seconds']:.0f} s with Ray's start; test error {si['error']:.4f} "
            f"(local {lo['error']:.4f})."
        )
    (out / "federated_flower.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    import importlib.util

    runs = ["floor", "flower", "local"]
    if importlib.util.find_spec("ray") is not None:
        runs.append("flower-simulation")
    parser.add_argument("--runs", nargs="+", default=runs)
    args = parser.parse_args(argv)
    os.environ.setdefault("FLWR_DISABLE_UPDATE_CHECK", "1")
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    parts = adult_subsample()
    rows = []
    with tempfile.TemporaryDirectory(prefix="skfairdp-bench-") as tmp:
        for run in args.runs:
            row = floor(Path(tmp)) if run == "floor" else fit(run, parts)
            print(row, flush=True)
            rows.append(row)
    report(rows, args.out)


if __name__ == "__main__":
    main()
