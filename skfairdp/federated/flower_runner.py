"""A Flower deployment on this machine's loopback: a SuperLink, one SuperNode per silo.

What ``FederatedDPFermiClassifier(backend="flower")`` and the integration tests
use. The processes are the ones a multi-machine deployment runs (doc/federated.md),
started on 127.0.0.1 with free ports, each silo's data in a file sealed under the
fit's key (:mod:`~skfairdp.federated.silo_files`; the key in the SuperNodes'
environment only) and its privacy settings in its SuperNode's ``--node-config``;
the run is submitted with ``flwr run`` and followed with ``flwr ls --format json``.
The fit's directory is an owned one (:func:`skfairdp.data.scratch.owned_directory`):
removed on every exit Python sees, and by the next fit or Parquet pass in the same
place after a ``SIGKILL``.

Every process the federation starts, and every process those start (Flower's
SuperExecs, ServerApp and ClientApps, some in sessions of their own), is stopped
within seconds when the federation closes: on a normal exit, an exception, Ctrl-C,
SIGTERM or SIGHUP to the driver (:mod:`~skfairdp.federated.processes`), or when one
of its processes dies while a run is under way (:meth:`LoopbackFederation.run`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from skorch.history import History

from ..data import exits, scratch, sealed
from . import silo_files
from .flower_install import require_flwr
from .processes import signals_raise, stop_processes

APP_DIR = Path(__file__).parent / "flower_app"

__all__ = ["APP_DIR", "LoopbackFederation", "fit_flower", "free_port", "require_flwr"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return json.dumps(str(value))


def _kv(config: dict) -> str:
    return " ".join(f"{k}={_toml_value(v)}" for k, v in config.items())


def _bin_dir() -> Path:
    """Where this interpreter's console scripts are (a virtual environment's ``bin``)."""
    return Path(sys.executable).parent


def _bin(name: str) -> str:
    here = _bin_dir() / name
    return str(here) if here.exists() else name


class LoopbackFederation:
    """SuperLink + SuperNodes on 127.0.0.1 (a context manager; kills them on exit).

    Parameters
    ----------
    node_configs : list of dict
        One SuperNode per entry, with that node config.
    workdir : str or Path, optional
        Where logs and ``FLWR_HOME`` go (a temporary directory by default).
    node_env : dict, optional
        Environment variables of the SuperNodes only (and of the processes they
        start): the fit's key of the silo files (:mod:`.silo_files` says why there).
    """

    def __init__(self, node_configs: list[dict], workdir=None, node_env: dict | None = None):
        self.node_configs = list(node_configs)
        self.node_env = dict(node_env or {})
        self._own_dir = workdir is None
        self.workdir = Path(
            tempfile.mkdtemp(prefix="skfairdp-flower-") if workdir is None else workdir
        )
        self.home = self.workdir / "flwr_home"
        self.processes: list[subprocess.Popen] = []
        self.env = dict(
            os.environ,
            # Flower's executables start each other by name (flower-superlink starts
            # flower-superexec): the running interpreter's bin first, so an environment
            # that was not activated still finds its own Flower
            PATH=os.pathsep.join([str(_bin_dir()), os.environ.get("PATH", os.defpath)]),
            FLWR_HOME=str(self.home),
            FLWR_DISABLE_UPDATE_CHECK="1",
            # SuperExec (one per SuperNode, one for the SuperLink's ServerApp) polls
            # for tasks every 1 s by default (0.2 s here); a ClientApp process starts per
            # message, so this wait is paid by every silo in every round
            FLWR_SUPEREXEC_TASK_POLL_INTERVAL=os.environ.get(
                "FLWR_SUPEREXEC_TASK_POLL_INTERVAL", "0.2"
            ),
            OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
            MKL_NUM_THREADS=os.environ.get("MKL_NUM_THREADS", "1"),
        )
        self.port = None
        self._signals = None

    def _start(self, args: list[str], log: str, env: dict | None = None) -> subprocess.Popen:
        out = open(self.workdir / log, "wb")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(
            args, env=env or self.env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        proc._log = out  # type: ignore[attr-defined]
        self.processes.append(proc)
        return proc

    def __enter__(self) -> LoopbackFederation:
        self.home.mkdir(parents=True, exist_ok=True)
        self._signals = signals_raise()
        self._signals.__enter__()
        try:
            self.port = free_port()
            self._start(
                [
                    _bin("flower-superlink"),
                    "--insecure",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--disable-runtime-dependency-installation",
                ],
                "superlink.log",
            )
            _wait_for_port(self.port, 60.0, self.processes[0])
            (self.home / "config.toml").write_text(
                '[superlink]\ndefault = "loopback"\n\n[superlink.loopback]\n'
                f'address = "127.0.0.1:{self.port}"\ninsecure = true\n'
            )
            for j, node in enumerate(self.node_configs):
                self._start(
                    [
                        _bin("flower-supernode"),
                        "--insecure",
                        "--superlink",
                        f"127.0.0.1:{self.port}",
                        "--port",
                        str(free_port()),
                        "--node-config",
                        _kv(node),
                    ],
                    f"supernode{j}.log",
                    {**self.env, **self.node_env},
                )
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop every process this federation started and all their descendants.

        SIGTERM to each process group and process, SIGKILL to whatever is left
        after :data:`~skfairdp.federated.processes.GRACE_SECONDS`.
        """
        try:
            stop_processes([p.pid for p in self.processes])
            for proc in self.processes:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5.0)
                proc._log.close()  # type: ignore[attr-defined]
            self.processes = []
            if self._own_dir:
                shutil.rmtree(self.workdir, ignore_errors=True)
        finally:
            if self._signals is not None:
                signals, self._signals = self._signals, None
                signals.__exit__(None, None, None)

    def kill_node(self, j: int) -> None:
        """Kill SuperNode ``j`` (and its ClientApp processes) now."""
        proc = self.processes[1 + j]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def node_id(self, j: int, timeout: float = 120.0) -> int:
        """Flower's node id of SuperNode ``j`` (from its log, once it has connected)."""
        deadline = time.monotonic() + timeout
        path = self.workdir / f"supernode{j}.log"
        while True:
            self.processes[1 + j]._log.flush()  # type: ignore[attr-defined]
            found = re.search(r"SuperNode ID: (\d+)", path.read_text(errors="replace"))
            if found:
                return int(found.group(1))
            if time.monotonic() > deadline:
                raise RuntimeError(f"SuperNode {j} did not connect in {timeout:g} s")
            time.sleep(0.2)

    def flwr(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        return subprocess.run(
            [_bin("flwr"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.workdir,
        )

    def run(
        self,
        run_config: dict,
        app_dir=APP_DIR,
        timeout: float = 600.0,
        *,
        stop_on_exit: bool = True,
        progress=None,
    ) -> dict:
        """Submit the app with ``run_config``, follow its log until it ends.

        Parameters
        ----------
        run_config : dict
        app_dir : path, default=APP_DIR
        timeout : float, default=600.0
            Seconds before the run is abandoned (:class:`subprocess.TimeoutExpired`).
        stop_on_exit : bool, default=True
            Stop waiting, with a ``RuntimeError`` naming it, as soon as a process of
            the federation (the SuperLink, a SuperNode) exits; ``False`` leaves it to
            the ServerApp (a missing reply, Flower's "Node Unavailable").
        progress : callable, optional
            Called about every 0.2 s while the run is under way.

        Returns
        -------
        dict
            ``run_id``, ``status`` (Flower's, e.g. ``"finished:completed"``) and
            ``log`` (what ``flwr run --stream`` printed).
        """
        log_path = self.workdir / "flwr-run.out"
        args = [_bin("flwr"), "run", str(app_dir), "loopback", "--run-config", _kv(run_config)]
        with open(log_path, "wb") as out:
            proc = subprocess.Popen(
                [*args, "--stream"], env=self.env, stdout=out, stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + timeout
                while proc.poll() is None:
                    if time.monotonic() > deadline:
                        raise subprocess.TimeoutExpired(args, timeout)
                    dead = self._exited() if stop_on_exit else None
                    if dead:
                        raise RuntimeError(
                            f"{dead}; the run is stopped (every silo keeps its own accounting "
                            "of what it released)\n" + self.logs()
                        )
                    if progress is not None:
                        progress()
                    time.sleep(0.2)
            finally:
                if proc.poll() is None:
                    stop_processes([proc.pid])
                    proc.wait()
        log = log_path.read_text(errors="replace")
        found = re.search(r"run_id `?(\d+)", log)
        if proc.returncode != 0 and found is None:
            raise RuntimeError(f"flwr run failed:\n{log}")
        run_id = int(found.group(1))
        status = ""
        for _ in range(20):  # the status can lag the end of the log stream
            listed = self.flwr("ls", "loopback", "--run-id", str(run_id), "--format", "json")
            if listed.returncode == 0:
                runs = json.loads(listed.stdout).get("runs", [])
                status = runs[0]["status"] if runs else ""
                if status.startswith("finished"):
                    break
            time.sleep(0.5)
        return {"run_id": run_id, "status": status, "log": log}

    def _exited(self) -> str | None:
        """Which of the federation's processes has exited (``None``: all are running)."""
        for j, proc in enumerate(self.processes):
            if proc.poll() is not None:
                name = "the SuperLink" if j == 0 else f"SuperNode {j - 1}"
                return f"{name} exited with code {proc.returncode}"
        return None

    def logs(self) -> str:
        """Everything the processes wrote (for error messages)."""
        parts = []
        for path in sorted(self.workdir.glob("*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)


def _wait_for_port(port: int, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"flower-superlink exited with code {proc.returncode}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"flower-superlink did not open port {port} in {timeout:g} s")


def fit_flower(estimator, X, y, groups, parts, config, seeds, cells, simulation=False) -> dict:
    """``FederatedDPFermiClassifier.fit`` on a loopback Flower deployment.

    Writes each silo's rows to a file sealed under a key drawn for this fit
    (:mod:`~skfairdp.federated.silo_files`), starts the federation with one SuperNode
    per silo (its :class:`~skfairdp.federated.silo.SiloConfig` as node config, the
    key in its environment), runs the app, and reads back the server's output and
    each silo's own sealed report. With ``simulation`` the same app runs on Flower's
    Simulation Engine instead (:mod:`~skfairdp.federated.flower_simulation`,
    ``backend="flower-simulation"``). The files are in an owned directory
    (``skfairdp-flower-fit-*``), removed on every exit Python sees and, after a
    ``SIGKILL``, by the next owned directory made in the same place.
    """
    held = exits.hold()  # SIGTERM/SIGINT/SIGHUP outside the federation remove the files too
    try:
        tmp = scratch.owned_directory(None, "flower-fit")
        try:
            return _fit_in(tmp, estimator, X, y, groups, parts, config, seeds, cells, simulation)
        finally:
            scratch.remove_directory(tmp)
    finally:
        if held:
            exits.release()


def _fit_in(tmp: Path, estimator, X, y, groups, parts, config, seeds, cells, simulation) -> dict:
    from .flower import _load_theta, node_config_for
    from .silo import Silo

    key = sealed.new_key()  # this fit's: in memory here, in the silos' environment there
    nodes, dual_noise = [], []
    for j, idx in enumerate(parts):
        path = tmp / f"silo{j}.sealed"
        silo_files.write_data(path, X[idx], y[idx], groups[idx], key)
        nodes.append(node_config_for(config, path, seeds[j], report_path=tmp / f"silo{j}.json"))
        # each silo's multipliers are public numbers; lr_dual="auto" uses them
        if estimator.lr_dual == "auto" and config.private and config.fairness_weight > 0:
            if config.calibration == "paper":
                raise ValueError("backend='flower' with calibration='paper' needs lr_dual")
            silo = Silo(X[idx], y[idx], groups[idx], config, seed=0)
            dual_noise.append(silo.calibrate(None)["dual"] / silo.expected_batch_size)
    run_config = _run_config(
        estimator, X.shape[1], len(parts), seeds[-1], cells, tmp / "server.npz", dual_noise
    )
    rounds = int(run_config["rounds"])
    if simulation:
        from .flower_simulation import run_simulated

        if estimator.verbose:
            print(f"Flower Simulation Engine: {len(parts)} silos, {rounds} rounds", flush=True)
        run_simulated(nodes, run_config, str(APP_DIR), key=key)
    else:
        _run_loopback(estimator, nodes, run_config, tmp, len(parts), key)
    with np.load(tmp / "server.npz") as saved:
        out = dict(saved)
    module = estimator._initial_module(X.shape[1], len(estimator.classes_), seeds[-1])
    _load_theta(module, out["theta"])
    reports = [silo_files.read_report(tmp / f"silo{j}.json", key) for j in range(len(parts))]
    events = [event for _, event in reports]
    reports = [report for report, _ in reports]
    from ..privacy.accountant import PrivacySpent, epsilon_spent

    def spent(report, event):
        if report["epsilon"] is not None:  # the silo's own, after its last budgeted round
            return PrivacySpent(report["epsilon"], report["delta"])
        return epsilon_spent(  # a run that stopped early: the accountant's value of its event
            event, report["delta"], accountant=config.accountant, privacy_unit=config.privacy_unit
        )

    estimator.group_priors_ = out["priors"]
    estimator.label_weights_ = out["label_weights"]
    estimator.dual_bound_ = float(out["dual_bound"])
    estimator.flower_round_seconds_ = out["round_seconds"]
    history = History()
    seconds, per_epoch = out["round_seconds"], max(1, estimator._rounds_per_epoch)
    for start in range(0, len(seconds), per_epoch):
        history.new_epoch()
        history.record("epoch", len(history))
        history.record("rounds", min(start + per_epoch, len(seconds)))
        history.record("dur", float(seconds[start : start + per_epoch].sum()))
    return {
        "history": history,
        "aggregation_weights": out["aggregation_weights"],
        "module": module,
        "W": out["W"],
        "events": events,
        "spent": [spent(r, e) for r, e in zip(reports, events)],
        "noise": [r["noise"] for r in reports],
    }


def _run_loopback(estimator, nodes, run_config, tmp, n_silos, key: bytes) -> None:
    rounds = int(run_config["rounds"])
    progress = _Progress(tmp / "server.npz", rounds, bool(estimator.verbose))
    if estimator.verbose:
        print(expected_duration_line(rounds, n_silos), flush=True)
    node_env = {silo_files.KEY_ENV: key.hex()}  # the SuperNodes' only: silo_files says why
    with LoopbackFederation(nodes, workdir=tmp / "federation", node_env=node_env) as fed:
        result = fed.run(run_config, timeout=600.0 + 60.0 * rounds, progress=progress)
        if result["status"] != "finished:completed":
            raise RuntimeError(
                f"the Flower run ended with status {result['status']!r}:\n" + result["log"][-6000:]
            )


#: seconds per Flower round of a default fit on loopback (3 silos, the ServerApp and the
#: SuperNodes on one 2-core machine), measured by benchmarks/federated_flower.py
#: (benchmarks/results/federated_flower.md); the estimate printed before a run
ROUND_SECONDS = 8.8
#: seconds to start the SuperLink and SuperNodes and run round 0
START_SECONDS = 45.0


def expected_duration_line(rounds: int, n_silos: int) -> str:
    """What ``verbose`` prints before a Flower run: rounds x the measured round time."""
    total = START_SECONDS + rounds * ROUND_SECONDS
    return (
        f"Flower: a SuperLink and {n_silos} SuperNodes on 127.0.0.1, {rounds} rounds; "
        f"expect about {total / 60:.0f} min ({rounds} x {ROUND_SECONDS:g} s per round, "
        "as measured on a 2-core machine by benchmarks/federated_flower.py, plus "
        f"{START_SECONDS:g} s to start)"
    )


class _Progress:
    """Prints each new round the ServerApp saved, with the elapsed and remaining time."""

    def __init__(self, path: Path, rounds: int, verbose: bool):
        self.path, self.rounds, self.verbose = path, rounds, verbose
        self.done, self.start, self.next_check = 0, time.monotonic(), 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if not self.verbose or now < self.next_check or not self.path.exists():
            return
        self.next_check = now + 1.0
        try:
            with np.load(self.path) as out:
                done, seconds = int(out["rounds_done"]), out["round_seconds"]
        except (OSError, ValueError, KeyError, EOFError):
            return  # being replaced
        if done > self.done:
            from .local import progress_line

            self.done = done
            elapsed = now - self.start
            # remaining from the rounds' own times (the start-up is behind us)
            remaining = float(np.mean(seconds)) * (self.rounds - done) if len(seconds) else 0
            line = progress_line(done, self.rounds, elapsed)
            print(line.split(", about")[0] + f", about {_minutes(remaining)} remaining", flush=True)


def _minutes(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _run_config(estimator, n_features, n_silos, init_seed, cells, output, dual_noise) -> dict:
    """The run config of ``backend="flower"`` (the app's ``[tool.flwr.app.config]``).

    The server's side of the protocol: the estimator's public settings, resolved by
    its ``fit`` (``n_rounds_``, the histogram layout ``cells``), and each silo's
    declared W-noise per batch ``dual_noise`` (for ``lr_dual="auto"``).
    """
    lam = float(estimator.fairness_weight)
    n_groups = estimator.group_encoder_.n_groups_ if estimator.group_encoder_ is not None else 1
    priors = estimator._declared_priors()
    return {
        "num-silos": n_silos,
        "rounds": estimator.n_rounds_,
        "local-steps": int(estimator.local_steps),
        "rounds-per-epoch": estimator._rounds_per_epoch,
        "lr": float(estimator.lr_),
        "lr-decay": float(estimator.lr_decay),
        "lr-dual": "auto" if estimator.lr_dual == "auto" else float(estimator.lr_dual),
        "dual-noise-per-batch": json.dumps([float(z) for z in dual_noise]),
        "dual-bound": "auto" if estimator.dual_bound == "auto" else float(estimator.dual_bound),
        "aggregation": estimator.aggregation,
        "iterate": estimator.iterate,
        "init-seed": int(init_seed),
        "n-features": int(n_features),
        "hidden-layer-sizes": ",".join(str(h) for h in estimator.hidden_layer_sizes),
        "output-path": str(output),
        "fairness": estimator.fairness,
        "fairness-weight": lam,
        "n-classes": len(estimator.classes_),
        "n-groups": n_groups,
        "dual-rates": estimator.dual_rates,
        "rho": float(estimator.rho),
        "privacy-unit": estimator.privacy_unit,
        "private": bool(math.isfinite(estimator.epsilon)),
        "histogram-cells": cells or "",
        "group-priors": "" if priors is None else json.dumps(priors.tolist()),
    }
