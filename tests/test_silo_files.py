"""No silo rows in the clear on disk with the Flower backends, even after SIGKILL.

``backend="flower"`` and ``"flower-simulation"`` hand each silo's rows, and the silo's
report back, through files (``skfairdp.federated.silo_files``): sealed with AES-256-GCM
under a key drawn per fit and held in memory (the SuperNodes' environment), in an owned
``skfairdp-flower-fit-*`` directory the next start removes once its owner is dead. The
fast tests check the files and the key's ways; one test SIGKILLs a fitting driver as
soon as its silo files exist; one (slow) SIGKILLs it mid-run of a real federation.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from skfairdp.data import exits, sealed
from skfairdp.data.scratch import host_tag, owned_directory, owner, remove_directory
from skfairdp.federated import silo_files
from skfairdp.federated.flower_silo import SiloHost
from skfairdp.federated.flower_simulation import SiloNodeConfigs

#: Two adjacent feature columns hold these in every row: the plaintext of any row holds
#: these 8 bytes (float32, row-major), which are unlikely in ciphertext.
MARKER = np.array([0.123456789, -0.987654321], dtype=np.float32)
DEADLINE = 240.0  # seconds; a loaded 2-core machine imports torch and flwr slowly
RUN = {"fairness": "demographic_parity", "fairness-weight": 2.0, "n-classes": 2, "n-groups": 2}


def _rows(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.standard_normal((n, 2)), np.tile(MARKER, (n, 1))])
    return X.astype(np.float32), rng.integers(0, 2, n), rng.integers(0, 2, n)


def _plaintext_in(folder: Path) -> list[str]:
    """The files under ``folder`` that hold the marker's bytes (a plaintext row)."""
    found = []
    for path in folder.rglob("*"):
        try:
            if path.is_file() and MARKER.tobytes() in path.read_bytes():
                found.append(str(path))
        except OSError:  # a socket, or removed meanwhile
            continue
    return found


# -- the files ---------------------------------------------------------------------------
def test_a_silo_file_round_trips_and_its_bytes_hold_no_row(tmp_path, monkeypatch):
    X, y, s = _rows()
    key = sealed.new_key()
    path = tmp_path / "silo0.sealed"
    silo_files.write_data(path, X, y, s, key)
    on_disk = path.read_bytes()
    assert on_disk.startswith(sealed.MAGIC)
    assert MARKER.tobytes() not in on_disk and b"X.npy" not in on_disk  # not an .npz
    assert len(on_disk) < X.nbytes + y.nbytes + s.nbytes + 1024  # sealed, not padded
    with silo_files.key_scope(key):  # the simulation's way
        data = silo_files.read_data(path)
    monkeypatch.setenv(silo_files.KEY_ENV, key.hex())  # the SuperNodes' way
    again = silo_files.read_data(path)
    for got in (data, again):
        np.testing.assert_array_equal(got["X"], X)
        np.testing.assert_array_equal(got["y"], y)
        np.testing.assert_array_equal(got["s"], s)
    assert not list(tmp_path.glob("*.tmp"))


def test_records_round_trip_across_several_records(tmp_path, monkeypatch):
    monkeypatch.setattr(sealed, "RECORD_BYTES", 7)
    key, data = sealed.new_key(), bytes(range(50))
    sealed.write(tmp_path / "f", data, key)
    assert sealed.read(tmp_path / "f", key) == data
    sealed.write(tmp_path / "empty", b"", key)
    assert sealed.read(tmp_path / "empty", key) == b""


@pytest.mark.parametrize("damage", ["flip", "rename", "truncate", "drop-last", "extend", "key"])
def test_an_altered_silo_file_fails_with_a_clear_error(tmp_path, monkeypatch, damage):
    monkeypatch.setattr(sealed, "RECORD_BYTES", 64)  # several records per file
    key = sealed.new_key()
    X, y, s = _rows(20)
    path = tmp_path / "silo0.sealed"
    silo_files.write_data(path, X, y, s, key)
    data = bytearray(path.read_bytes())
    record = 8 + 12 + 64 + 16
    if damage == "flip":
        data[len(sealed.MAGIC) + 30] ^= 1
    elif damage == "truncate":
        data = data[:-5]
    elif damage == "drop-last":  # whole records: the new last one was not sealed as last
        data = data[: len(sealed.MAGIC) + 2 * record]
    elif damage == "extend":  # another copy of the first record appended
        data += data[len(sealed.MAGIC) : len(sealed.MAGIC) + record]
    elif damage == "rename":  # silo 1's file in silo 0's place
        silo_files.write_data(tmp_path / "silo1.sealed", X, y, s, key)
        data = bytearray((tmp_path / "silo1.sealed").read_bytes())
    else:  # another fit's key
        key = sealed.new_key()
    path.write_bytes(bytes(data))
    with silo_files.key_scope(key), pytest.raises(RuntimeError, match="was altered"):
        silo_files.read_data(path)


def test_the_key_is_needed_and_a_plain_file_is_a_deployments_own(tmp_path, monkeypatch):
    X, y, s = _rows(10)
    key = sealed.new_key()
    silo_files.write_data(tmp_path / "sealed", X, y, s, key)
    np.savez(tmp_path / "plain.npz", X=X, y=y, s=s)
    monkeypatch.delenv(silo_files.KEY_ENV, raising=False)
    with pytest.raises(RuntimeError, match=f"data-path .* is sealed.*{silo_files.KEY_ENV}"):
        silo_files.read_data(tmp_path / "sealed")
    np.testing.assert_array_equal(silo_files.read_data(tmp_path / "plain.npz")["X"], X)
    with silo_files.key_scope(key), pytest.raises(RuntimeError, match="is not sealed"):
        silo_files.read_data(tmp_path / "plain.npz")
    monkeypatch.setenv(silo_files.KEY_ENV, "00ff")
    with pytest.raises(ValueError, match=silo_files.KEY_ENV):
        silo_files.read_data(tmp_path / "sealed")


def _host(tmp_path, n=60):
    X, y, s = _rows(n)
    silo_files.write_data(tmp_path / "silo0.sealed", X, y, s, silo_files.key())
    node = {
        "data-path": str(tmp_path / "silo0.sealed"), "epsilon": 1.0, "max-grad-norm": 1.0,
        "batch-size": 16, "rounds": 2, "seed": 0, "report-path": str(tmp_path / "silo0.json"),
    }  # fmt: skip
    return SiloHost(node, RUN)


def test_the_silos_report_is_sealed_and_the_driver_reads_it(tmp_path, monkeypatch):
    """The report's event gives the silo's size (q = batch / n): sealed, like the rows."""
    key = sealed.new_key()
    monkeypatch.setenv(silo_files.KEY_ENV, key.hex())
    host = _host(tmp_path)
    host.histogram("groups")
    for name in ("silo0.json", "silo0.json.event"):
        on_disk = (tmp_path / name).read_bytes()
        assert on_disk.startswith(sealed.MAGIC) and b"rounds_budget" not in on_disk
    report, event = silo_files.read_report(tmp_path / "silo0.json", key)
    assert report["histogram_done"] and report["rounds_budget"] == 2
    assert event == host.silo.dp_event
    with pytest.raises(RuntimeError, match="was altered"):
        silo_files.read_report(tmp_path / "silo0.json", sealed.new_key())


def test_simulated_silos_get_the_key_from_the_mod_only(tmp_path):
    """backend="flower-simulation": the ClientApp mod opens the key around each message."""
    key = sealed.new_key()
    X, y, s = _rows(10)
    silo_files.write_data(tmp_path / "silo0.sealed", X, y, s, key)
    mod = SiloNodeConfigs([{"data-path": str(tmp_path / "silo0.sealed")}], {}, key)
    context = SimpleNamespace(node_config={"partition-id": 0}, run_config={})

    def handler(message, context):
        return silo_files.read_data(context.node_config["data-path"])["X"]

    np.testing.assert_array_equal(mod(None, context, handler), X)
    assert silo_files.key() is None  # only inside the message
    with pytest.raises(RuntimeError, match="is sealed"):
        handler(None, SimpleNamespace(node_config={"data-path": tmp_path / "silo0.sealed"}))


def test_a_fits_directory_is_owned_and_a_live_owners_is_kept(tmp_path):
    """(A dead owner's is removed: the SIGKILL tests below.)"""
    pid, start = owner()
    alive = tmp_path / f"skfairdp-flower-fit-{host_tag()}-{pid}-{start}-bbbb"
    alive.mkdir()
    (alive / "silo0.sealed").write_bytes(b"x")
    made = owned_directory(tmp_path, "flower-fit")  # what the next fit does first
    try:
        assert alive.exists()
        assert made.name.startswith("skfairdp-flower-fit-") and str(made) in exits._live
        assert (made.stat().st_mode & 0o777) == 0o700
    finally:
        remove_directory(made)
    assert not made.exists() and str(made) not in exits._live
    with pytest.raises(ValueError, match="kind"):
        owned_directory(tmp_path, "Flower fit")


# -- SIGKILL to a fitting driver -----------------------------------------------------------
#: A driver fitting with backend="flower" on rows that hold MARKER. With "files", the
#: federation never starts: the driver prints "files" once the silo files are written and
#: waits to be killed. With "reports", a real federation runs until killed.
DRIVER = r"""
import sys, time
import numpy as np
import torch
torch.set_num_threads(1)
from skfairdp.federated import FederatedDPFermiClassifier
from skfairdp.federated import flower_runner

if sys.argv[1] == "files":
    def enter(self):
        print("files", flush=True)
        time.sleep(600)
    flower_runner.LoopbackFederation.__enter__ = enter
rng = np.random.default_rng(0)
n = 300
X = np.column_stack([rng.standard_normal((n, 2)), np.tile({marker}, (n, 1))])
y, s = rng.integers(0, 2, n), rng.integers(0, 2, n)
clf = FederatedDPFermiClassifier(backend="flower", max_epochs=50, verbose=1, random_state=0)
clf.fit(X.astype(np.float32), y, sensitive_features=s)
"""


def _start_driver(tmp_path: Path, how: str) -> tuple[subprocess.Popen, list[str]]:
    root = str(Path(__file__).parents[1])
    env = dict(
        os.environ, TMPDIR=str(tmp_path), OMP_NUM_THREADS="1", FLWR_DISABLE_UPDATE_CHECK="1",
        PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    )  # fmt: skip
    env.pop(silo_files.KEY_ENV, None)
    script = DRIVER.replace("{marker}", repr(MARKER.tolist()))
    driver = subprocess.Popen(
        [sys.executable, "-c", script, how], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(driver.stdout), daemon=True).start()
    return driver, lines


def _wait(driver, lines, ready) -> None:
    deadline = time.monotonic() + DEADLINE
    while not ready():
        if driver.poll() is not None or time.monotonic() > deadline:
            pytest.fail("the driver ended or hung:\n" + "".join(lines))
        time.sleep(0.1)


def _sigkill(driver) -> int:
    """SIGKILL the driver; then stop what it started, which outlives it (Flower's processes
    run in sessions of their own): its descendants and their sessions' members, listed
    while it lives. Returns the driver's exit status."""
    from skfairdp.federated.processes import descendants, stop_processes

    federation = descendants([driver.pid]) if driver.poll() is None else set()
    sessions = set()
    for pid in federation:
        with contextlib.suppress(OSError):
            sessions.add(os.getsid(pid))
    sessions.discard(os.getsid(0))
    driver.send_signal(signal.SIGKILL)
    status = driver.wait(timeout=30)
    federation |= descendants(federation)
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        with contextlib.suppress(OSError):
            if os.getsid(pid) in sessions:
                federation.add(pid)
    stop_processes(sorted(federation))
    return status


def _fit_dir(tmp_path: Path) -> Path | None:
    found = list(tmp_path.glob("skfairdp-flower-fit-*"))
    return found[0] if found else None


def _check_left(tmp_path: Path, fit: Path) -> None:
    """Nothing readable left; the fit's directory goes at the next start."""
    assert fit.exists()  # SIGKILL: nobody removed it
    assert sorted(p.name for p in fit.glob("silo*.sealed")) == [f"silo{j}.sealed" for j in range(3)]
    for path in fit.glob("silo*"):  # a .tmp a killed writer had not flushed may be empty
        data = path.read_bytes()
        assert data.startswith(sealed.MAGIC) or (path.suffix == ".tmp" and not data), path
    assert _plaintext_in(tmp_path) == []
    made = owned_directory(tmp_path, "flower-fit")  # the next fit, or Parquet pass
    assert not fit.exists()
    remove_directory(made)


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc")
def test_sigkill_once_the_silo_files_exist_leaves_nothing_readable(tmp_path):
    pytest.importorskip("flwr")
    driver, lines = _start_driver(tmp_path, "files")
    try:
        _wait(driver, lines, lambda: any(line.startswith("files") for line in list(lines)))
    finally:
        status = _sigkill(driver)
    assert status == -signal.SIGKILL
    _check_left(tmp_path, _fit_dir(tmp_path))


@pytest.mark.slow
@pytest.mark.flower
@pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc")
def test_sigkill_mid_run_of_a_federation_leaves_nothing_readable(tmp_path):
    """A real loopback federation: SIGKILL once every silo has written its report
    (round 0 answered); the federation's processes, which outlive their driver, are
    stopped before the files are read."""
    pytest.importorskip("flwr")
    driver, lines = _start_driver(tmp_path, "reports")

    def reports():
        fit = _fit_dir(tmp_path)
        return fit is not None and len(list(fit.glob("silo?.json.event"))) == 3

    try:
        _wait(driver, lines, reports)
    finally:
        status = _sigkill(driver)
    assert status == -signal.SIGKILL
    fit = _fit_dir(tmp_path)
    for name in ("silo0.json", "silo0.json.event"):
        report = (fit / name).read_bytes()
        assert b"rounds_budget" not in report and not report.startswith(b"{")
    _check_left(tmp_path, fit)
