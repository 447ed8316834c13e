"""The Flower backend of skfairdp.federated: a real SuperLink and SuperNodes on 127.0.0.1.

Marked ``flower`` (``pytest -m flower``; ``-m "not flower"`` skips them); skipped when
``flwr`` is not installed (``pip install -e ".[federated]"`` from a checkout, Python >= 3.11).
"""

import json
import math
import os
import pickle
import re
import threading
import time

import numpy as np
import pytest
import torch
from conftest import make_tradeoff_data

flwr = pytest.importorskip("flwr")

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from skfairdp.federated import Server, Silo, SiloConfig, objective  # noqa: E402
from skfairdp.federated import flower as fl  # noqa: E402
from skfairdp.federated.flower_runner import LoopbackFederation  # noqa: E402
from skfairdp.federated.local import run_local  # noqa: E402
from skfairdp.federated.server import aggregation_weights  # noqa: E402

pytestmark = pytest.mark.flower
os.environ.setdefault("FLWR_DISABLE_UPDATE_CHECK", "1")

RUN = {
    "fairness": "demographic_parity",
    "fairness-weight": 2.0,
    "n-classes": 2,
    "n-groups": 2,
    "dual-rates": "hard",
    "hidden-layer-sizes": "",
}


def _silo_config(rounds, local_steps=1):
    return SiloConfig(
        epsilon=1.0, batch_size=16, rounds=rounds, histogram=True, fairness_weight=2.0,
        local_steps=local_steps,
    )  # fmt: skip


@pytest.fixture
def task_identity():
    """Outside a Flower runtime, a Message needs a run and node identity."""
    before = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = before


@pytest.mark.parametrize("local_steps", [1, 3])
def test_client_app_replies_only_the_declared_noisy_arrays(tmp_path, task_identity, local_steps):
    X, y, s = make_tradeoff_data(120, seed=0)
    np.savez(tmp_path / "silo.npz", X=X, y=y, s=s)
    config = _silo_config(3, local_steps)
    node = fl.node_config_for(config, tmp_path / "silo.npz", seed=3)
    assert node["local-steps"] == local_steps
    node["silo-worker"] = False  # the silo in this process (the federations use workers)
    context = Context(run_id=1, node_id=1, node_config=node, state=RecordDict(), run_config=RUN)
    state = {
        "theta": np.zeros(8, np.float32),
        "W": np.zeros((1, 2, 2), np.float32),
        "pinv": np.full((1, 2), math.sqrt(2), np.float32),
        "label_weights": np.ones(2),
    }

    # the server's public step sizes (every round; a silo taking local steps uses them)
    steps = {"lr": 0.5, "lr_dual": 0.05, "dual_bound": 3.0}

    def request(extra=None):
        config = {"round": 0, **steps, **(extra or {})}
        content = RecordDict(
            {
                "state": ArrayRecord({k: Array(v) for k, v in state.items()}),
                "config": ConfigRecord(config),
            }
        )
        return Message(content, dst_node_id=1, message_type="train")

    reply = fl.train(request(), context).content
    assert list(reply.array_records) == ["reply"]
    assert not reply.config_records and not reply.metric_records
    assert sorted(reply["reply"]) == ["W", "theta"]
    # the same reply as an in-process silo with the same seed and config
    silo = Silo(X, y, s, config, seed=3)
    module = fl._module(3, 2, RUN)
    fl._load_theta(module, state["theta"])
    from skfairdp.engine import PerSampleGradients

    expected = silo.release({**state, "round": 0, **steps}, module, PerSampleGradients(module))
    for key in ("theta", "W"):
        assert np.allclose(reply["reply"][key].numpy(), expected[key], atol=1e-6)
    # the silo's state (stream, counters, events) persisted in its context
    assert "silo" in context.state.config_records
    with pytest.raises(ValueError, match="not the server's to send"):
        fl.train(request({"noise-multiplier": 0.0}), context)


def _local_rounds(silos, run, rounds):
    """The local backend on the same silos: round 0 then ``rounds`` rounds."""
    counts = [silo.histogram("groups")["counts"] for silo in silos]
    stats = objective.public_statistics(
        fairness=run["fairness"], fairness_weight=run["fairness-weight"], n_classes=2,
        n_groups=2, rho=0.05, cells="groups", totals=np.sum(counts, axis=0), group_priors=None,
    )  # fmt: skip
    module = fl._module(3, 2, run, seed=run["init-seed"])
    server = Server(
        module, torch.optim.SGD(module.parameters(), lr=run["lr"]), stats,
        fairness=run["fairness"], fairness_weight=run["fairness-weight"], privacy_unit="record",
        private=True, dual_rates="hard", dual_bound=stats["dual_bound_auto"],
        lr_dual=run["lr-dual"], weights=aggregation_weights("uniform", None, len(silos)),
        rounds=run["rounds"], n_classes=2, iterate="last",
    )  # fmt: skip
    run_local(server, silos, rounds)
    return server


@pytest.mark.slow
def test_superlink_and_three_supernodes_match_the_local_backend(tmp_path):
    """Round 0 + 1 round agree with the local backend (1e-5); silo 2's budget is 1
    round, so round 2 is refused: the run fails naming it, every silo's own report
    counts exactly what it released."""
    X, y, s = make_tradeoff_data(450, seed=1)
    parts = np.array_split(np.arange(450), 3)
    budgets, seeds = [2, 2, 1], [11, 12, 13]
    nodes = []
    for j, idx in enumerate(parts):
        np.savez(tmp_path / f"silo{j}.npz", X=X[idx], y=y[idx], s=s[idx])
        nodes.append(
            fl.node_config_for(
                _silo_config(budgets[j]),
                tmp_path / f"silo{j}.npz",
                seeds[j],
                report_path=tmp_path / f"silo{j}.json",
            )  # fmt: skip
        )
    run = {
        **RUN, "num-silos": 3, "rounds": 2, "lr": 0.5, "lr-dual": 0.05, "iterate": "last",
        "init-seed": 5, "n-features": 3, "histogram-cells": "groups",
        "output-path": str(tmp_path / "server.npz"), "round-timeout": 120.0,
    }  # fmt: skip
    with LoopbackFederation(nodes, workdir=tmp_path / "federation") as federation:
        result = federation.run(run, timeout=240.0)
        logs = federation.logs()
    assert result["status"] == "finished:failed", result["log"][-3000:] + logs
    assert "round 2" in result["log"] and "1 budgeted rounds" in result["log"]
    out = np.load(tmp_path / "server.npz")
    assert int(out["rounds_done"]) == 1 and not bool(out["final"])

    silos = [
        Silo(X[idx], y[idx], s[idx], _silo_config(budgets[j]), seed=seeds[j])
        for j, idx in enumerate(parts)
    ]
    server = _local_rounds(silos, run, 1)
    assert np.abs(out["theta"] - server.theta()).max() < 1e-5
    assert np.abs(out["W"].ravel() - server.W.numpy().ravel()).max() < 1e-5
    # each silo's own accounting: silos 0 and 1 also answered round 2, silo 2 refused it
    for j, silo in enumerate(silos):
        report = json.loads((tmp_path / f"silo{j}.json").read_text())
        assert report["rounds_done"] == (2 if j < 2 else 1)
        assert report["histogram_done"] and report["epsilon"] <= 1.0
        event = pickle.loads((tmp_path / f"silo{j}.json.event").read_bytes())
        if j == 2:
            assert event == silo.dp_event  # histogram + the same round, recorded
    # what the silos sent per round: 3 x (8 theta + 4 W float32 values), plus Flower's framing
    assert len(out["reply_bytes"]) == 1 and min(out["reply_bytes"]) >= 3 * 4 * (8 + 4)


@pytest.mark.slow
def test_a_supernode_killed_mid_run_fails_the_run_naming_it(tmp_path):
    """SuperNode 2 is killed once round 1 is applied: the run fails, naming its node,
    with the last good round saved; every silo's own report (the killed one's included)
    prices exactly the histogram and the rounds it released."""
    X, y, s = make_tradeoff_data(300, seed=2)
    parts = np.array_split(np.arange(300), 3)
    seeds, budget = [21, 22, 23], 50
    nodes = []
    for j, idx in enumerate(parts):
        np.savez(tmp_path / f"silo{j}.npz", X=X[idx], y=y[idx], s=s[idx])
        nodes.append(
            fl.node_config_for(
                _silo_config(budget),
                tmp_path / f"silo{j}.npz",
                seeds[j],
                report_path=tmp_path / f"silo{j}.json",
            )  # fmt: skip
        )
    out_path = tmp_path / "server.npz"
    run = {
        **RUN, "num-silos": 3, "rounds": budget, "lr": 0.5, "lr-dual": 0.05, "iterate": "last",
        "init-seed": 5, "n-features": 3, "histogram-cells": "groups",
        "output-path": str(out_path), "round-timeout": 150.0,
    }  # fmt: skip
    with LoopbackFederation(nodes, workdir=tmp_path / "federation") as federation:
        killed = federation.node_id(2)
        result = {}
        # stop_on_exit=False: the ServerApp's own handling of a dead node, not the runner's
        thread = threading.Thread(
            target=lambda: result.update(federation.run(run, timeout=480, stop_on_exit=False))
        )
        thread.start()
        deadline = time.monotonic() + 300
        while not (out_path.exists() and int(np.load(out_path)["rounds_done"]) >= 1):
            assert thread.is_alive() and time.monotonic() < deadline, federation.logs()
            time.sleep(0.2)
        federation.kill_node(2)
        thread.join()
        logs = federation.logs()
    assert result["status"] == "finished:failed", result["log"][-3000:] + logs
    done = int(np.load(out_path)["rounds_done"])
    assert 1 <= done < budget and not bool(np.load(out_path)["final"])
    failure = re.search(rf"round {done + 1}: silos (?:on nodes \[|refused or failed: node )(\d+)",
                        result["log"])  # fmt: skip
    assert failure and int(failure.group(1)) == killed, result["log"][-3000:]
    assert "did not reply" in result["log"] or "Node Unavailable" in result["log"]
    for j, idx in enumerate(parts):
        report = json.loads((tmp_path / f"silo{j}.json").read_text())
        # a silo released round `done + 1` if it answered it (or, killed, ran it)
        assert done <= report["rounds_done"] <= done + 1, (j, report)
        assert report["histogram_done"]
        # its accounting: exactly the histogram and its rounds, priced by its own config
        silo = Silo(X[idx], y[idx], s[idx], _silo_config(budget), seed=seeds[j])
        silo.histogram("groups")
        module = fl._module(3, 2, run)
        from skfairdp.engine import PerSampleGradients

        state = {
            "theta": np.zeros(8, np.float32), "W": np.zeros((1, 2, 2), np.float32),
            "pinv": np.full((1, 2), math.sqrt(2), np.float32), "label_weights": np.ones(2),
        }  # fmt: skip
        for t in range(report["rounds_done"]):
            silo.release({**state, "round": t}, module, PerSampleGradients(module))
        event = pickle.loads((tmp_path / f"silo{j}.json.event").read_bytes())
        assert event == silo.dp_event
        # its epsilon: computed once, after its last budgeted round (not reached here)
        assert report["epsilon"] is None and report["rounds_budget"] == budget


DRIVER = """
import sys
sys.path.insert(0, {tests!r})
from conftest import make_tradeoff_data
from skfairdp.federated import FederatedDPFermiClassifier

X, y, s = make_tradeoff_data(300, seed=0)
clf = FederatedDPFermiClassifier(backend="flower", max_epochs=50, verbose=1, random_state=0)
clf.fit(X, y, sensitive_features=s)
"""


@pytest.mark.slow
def test_sigterm_to_the_driver_stops_every_process_of_the_federation(tmp_path):
    """A driver fitting with backend="flower" gets SIGTERM once round 1 is printed: it
    exits (status 143) and 10 s later none of the processes it had started, nor theirs
    (the SuperLink's detached SuperExec and ServerApp included), is alive."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from skfairdp.federated.processes import _alive, descendants

    tests = str(Path(__file__).parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tests).parent), tests]))
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER.format(tests=tests)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(driver.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while not any(line.startswith("round 1/") for line in list(lines)):
        assert driver.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.2)
    federation = descendants([driver.pid])
    assert len(federation) >= 5, federation  # SuperLink, 3 SuperNodes, their SuperExecs, ...
    # and whatever was re-parented out of the tree (the silos' workers): their sessions
    sessions = {os.getsid(pid) for pid in federation if _alive(pid)} - {os.getsid(0)}
    federation |= {pid for pid in _pids() if _sid(pid) in sessions}
    sent = time.monotonic()
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(timeout=30) == 128 + signal.SIGTERM, "".join(lines)
    time.sleep(max(0.0, 10.0 - (time.monotonic() - sent)))
    alive = [pid for pid in federation if _alive(pid)]
    assert not alive, (alive, "".join(lines))


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _sid(pid):
    try:
        return os.getsid(pid)
    except OSError:
        return None


def test_simulation_engine_backend_matches_the_local_backend():
    """backend="flower-simulation" (Flower's Simulation Engine, ray) runs the same app
    and silo code as a deployment: the same model (1e-5) and each silo's same event as
    the local backend, with the default 3 local steps."""
    pytest.importorskip("ray")
    from skfairdp.federated import FederatedDPFermiClassifier

    X, y, s = make_tradeoff_data(450, seed=1)
    kw = dict(fairness_weight=2.0, max_epochs=2, random_state=3)
    sim = FederatedDPFermiClassifier(backend="flower-simulation", **kw)
    sim.fit(X, y, sensitive_features=s)
    local = FederatedDPFermiClassifier(**kw).fit(X, y, sensitive_features=s)
    assert sim.n_rounds_ == local.n_rounds_ and len(sim.flower_round_seconds_) == sim.n_rounds_
    for a, b in zip(sim.module_.parameters(), local.module_.parameters()):
        assert torch.allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(sim.W_, local.W_, atol=1e-5)
    assert sim.silo_dp_event_ == local.silo_dp_event_
    assert sim.privacy_spent_ == local.privacy_spent_
