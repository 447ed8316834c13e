"""No private rows in the clear after any exit (skfairdp.data.scratch, skfairdp.data.exits).

A Parquet fit's scratch files are encrypted with a key held only in memory; SIGTERM
and SIGINT remove them before the process acts on the signal; the files a SIGKILL
leaves hold no plaintext row and are removed by the next scratch directory made in
the same place. The signal tests run a real fit in a child process whose temporary
directory is the test's, wait (polling, with a deadline) until it holds bucket files,
signal it and look at what is left.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from skfairdp.data import ParquetSource, exits  # noqa: E402
from skfairdp.data.scratch import PREFIX, ScratchDir, host_tag, owner, remove_stale  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc")


@pytest.fixture(autouse=True)
def _interruptible():
    """Run each test as a foreground process would: a shell starts background jobs
    with SIGINT ignored, and an ignored signal rightly stays ignored by the fit."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


#: Two adjacent feature columns set to these in every row: each plaintext record of a
#: row holds these 8 bytes (float32, row-major), which are unlikely in ciphertext.
MARKER = np.array([0.123456789, -0.987654321], dtype=np.float32)
DEADLINE = 120.0  # seconds; a loaded 2-core machine imports torch slowly

#: Imports torch and skfairdp once (and warms a fit up, on one thread), then forks one
#: fit per request line ``table<TAB>tmpdir<TAB>how``: it answers the fit's pid, and
#: its exit code when it ends. Each fit is a process of its own, with its own pid,
#: temporary directory and signal handlers; the fork spares each one the imports.
SERVER = r"""
import os, signal, sys, tempfile
import numpy as np
import torch
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
from skfairdp import DPSGDClassifier
from skfairdp.data import ParquetSource
X = np.random.default_rng(0).standard_normal((64, 2))
DPSGDClassifier(epsilon=1.0, max_epochs=1).fit(X, X[:, 0] > 0)
print("ready", flush=True)

def fit(table, tmp, how):
    os.environ["TMPDIR"] = tmp
    tempfile.tempdir = None  # the system's temporary directory is now tmp
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if how == "hard-exit":  # a program whose own Ctrl-C handler leaves at once
        signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    epochs = 1 if how == "short" else 500
    source = ParquetSource(table, target="y", sensitive_features="s", batch_rows=100)
    model = DPSGDClassifier(epsilon=1.0, batch_size=16, max_epochs=epochs, random_state=0)
    model.fit(source)
    return 0 if len(model.history_) < epochs or how == "short" else 3  # 0: stopped early

for line in sys.stdin:
    table, tmp, how = line.rstrip("\n").split("\t")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            sys.stdin.close()
            code = fit(table, tmp, how)
        finally:
            os._exit(code)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def _write_table(path: Path, n: int = 3000) -> Path:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 3)).astype(np.float32)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    frame["m0"], frame["m1"] = MARKER[0], MARKER[1]
    frame["s"] = rng.integers(0, 2, n)
    frame["y"] = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=500)
    return path


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    return _write_table(tmp_path_factory.mktemp("table") / "marked.parquet")


class _Server:
    """The forking server of :data:`SERVER` (one per module)."""

    def __init__(self):
        env = {k: v for k, v in os.environ.items() if k != "SKFAIRDP_SCRATCH_DIR"}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.readline() == "ready"

    def readline(self) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], DEADLINE)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            pytest.fail(f"the fit server stopped answering:\n{self.proc.stderr.read()[-3000:]}")
        return line.strip()

    def start(self, table: Path, tmp: Path, how: str) -> _Fit:
        self.proc.stdin.write(f"{table}\t{tmp}\t{how}\n")
        self.proc.stdin.flush()
        return _Fit(self, int(self.readline()))


class _Fit:
    """A fit forked by the server: its pid, and its exit code once it ends."""

    def __init__(self, server: _Server, pid: int):
        self.server, self.pid = server, pid

    def running(self) -> bool:
        ready, _, _ = select.select([self.server.proc.stdout], [], [], 0)
        return not ready  # the server writes the exit code when the fit ends

    def signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self) -> int:
        return int(self.server.readline())


@pytest.fixture(scope="module")
def server():
    server = _Server()
    yield server
    server.proc.stdin.close()
    server.proc.wait(timeout=DEADLINE)


def _bucket_bytes(tmp: Path) -> dict[Path, bytes]:
    """Every file under the scratch directories in ``tmp`` and its bytes (now)."""
    found = {}
    for path in tmp.glob(f"{PREFIX}*/*"):
        try:
            found[path] = path.read_bytes()
        except OSError:  # removed meanwhile
            pass
    return found


def _wait_for_buckets(fit: _Fit, tmp: Path) -> None:
    """Poll until the fit's scratch directories hold bucket bytes (or fail at a deadline)."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if not fit.running():
            pytest.fail(f"the fit ended (code {fit.wait()}) before its scratch files were seen")
        if any(len(data) for data in _bucket_bytes(tmp).values()):
            return
        time.sleep(0.02)
    fit.signal(signal.SIGKILL)
    pytest.fail(f"no scratch files in {DEADLINE:g} s")


def _leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob(f"{PREFIX}*"))


def _marker_in(tmp: Path) -> list[Path]:
    pattern = MARKER.tobytes()
    return [p for p in tmp.rglob("*") if p.is_file() and pattern in p.read_bytes()]


# -- signals in a real fit -----------------------------------------------------------------
def test_sigterm_removes_the_scratch_files_then_ends_by_the_signal(server, table, tmp_path):
    fit = server.start(table, tmp_path, "default")
    _wait_for_buckets(fit, tmp_path)
    fit.signal(signal.SIGTERM)
    assert fit.wait() == -signal.SIGTERM  # the default action, after the clean-up
    assert _leftovers(tmp_path) == []
    assert _marker_in(tmp_path) == []


@pytest.mark.parametrize(
    ("how", "code"),
    [("default", 0), ("hard-exit", 130)],
    ids=["KeyboardInterrupt", "own-handler-exits"],
)
def test_sigint_removes_the_scratch_files_then_runs_the_previous_handler(
    server, table, tmp_path, how, code
):
    """Ctrl-C: KeyboardInterrupt still reaches the fit (an early stop: code 0); a handler
    of the program's own that exits at once (``os._exit``) finds no files left."""
    fit = server.start(table, tmp_path, how)
    _wait_for_buckets(fit, tmp_path)
    fit.signal(signal.SIGINT)
    assert fit.wait() == code
    assert _leftovers(tmp_path) == [], [(p, p.stat().st_size) for p in tmp_path.rglob("*")]


def test_sigkill_leaves_no_plaintext_and_the_next_start_removes_it(server, table, tmp_path):
    fit = server.start(table, tmp_path, "default")
    _wait_for_buckets(fit, tmp_path)
    deadline = time.monotonic() + DEADLINE
    while True:  # freeze the fit with bucket bytes on disk, then kill it
        fit.signal(signal.SIGSTOP)
        snapshot = _bucket_bytes(tmp_path)
        if sum(map(len, snapshot.values())) > 1000 or time.monotonic() > deadline:
            break
        fit.signal(signal.SIGCONT)
        time.sleep(0.01)
    fit.signal(signal.SIGKILL)
    assert fit.wait() == -signal.SIGKILL
    left = _bucket_bytes(tmp_path)
    # what the kill left: the sampled rows of >= 1 bucket, and no row in the clear
    assert sum(map(len, left.values())) > 1000
    pattern = MARKER.tobytes()
    assert [p.name for p, data in left.items() if pattern in data] == []
    assert [p.name for p, data in snapshot.items() if pattern in data] == []
    stale = _leftovers(tmp_path)
    assert stale and all(f"-{fit.pid}-" in name for name in stale)
    # the next start: a new process's fit in the same temporary directory removes them
    assert server.start(table, tmp_path, "short").wait() == 0
    assert _leftovers(tmp_path) == []


# -- the handlers in this process ------------------------------------------------------------
class _Probe:
    """A callback recording the SIGTERM and SIGINT handlers during training."""

    def __init__(self):
        self.seen = []

    def on_epoch_end(self, net, **kwargs):
        self.seen.append((signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)))


def test_handlers_are_installed_during_the_fit_and_restored_after(table, tmp_path):
    from skfairdp import DPSGDClassifier

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    probe = _Probe()
    source = ParquetSource(
        table, target="y", sensitive_features="s", batch_rows=500, scratch_dir=tmp_path
    )
    model = DPSGDClassifier(epsilon=1.0, batch_size=64, max_epochs=2, callbacks=[probe])
    model.fit(source)
    assert probe.seen == [(exits._handler, exits._handler)] * 2
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    assert _leftovers(tmp_path) == []


class _SlowSource:
    """Rows in memory; the passes in the background thread are slow (a big table)."""

    def __init__(self, n=40, features=2, chunk=8, delay=0.05):
        self.X = np.tile(MARKER, (n, features // 2)).astype(np.float32)
        self.shape, self.batch_rows, self.delay = self.X.shape, chunk, delay

    def iter_features(self):
        import threading

        for start in range(0, self.shape[0], self.batch_rows):
            if threading.current_thread() is not threading.main_thread():
                time.sleep(self.delay)
            yield start, self.X[start : start + self.batch_rows]


def test_ctrl_c_while_an_epoch_waits_for_its_prefetched_pass(tmp_path, monkeypatch):
    """The pass being waited for is not lost: close() stops it and removes its folder,
    also when it makes that folder after the signal's clean-up (a busy machine)."""
    import threading

    from skfairdp.data import BucketedSampler, scratch
    from skfairdp.privacy.random import RandomSource

    def late(parent, sweep=scratch.remove_stale):
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.3)  # the background pass starts late
        return sweep(parent)

    monkeypatch.setattr(scratch, "remove_stale", late)
    sampler = BucketedSampler(
        _SlowSource(), 5, RandomSource(0), poisson=True, scratch_dir=tmp_path, prefetch=True
    )
    list(sampler.epoch())  # epoch 1 starts the slow pass of epoch 2 in the background
    main = threading.main_thread().ident
    timer = threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT))  # Ctrl-C
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        next(sampler.epoch())  # while epoch 2 waits for its pass
    timer.join()
    sampler.close()  # what the training loop does on KeyboardInterrupt
    for thread in threading.enumerate():
        if thread.name.startswith("skfairdp-pass"):
            thread.join(timeout=DEADLINE)  # a pass nobody waits for would write on here
    assert list(tmp_path.iterdir()) == []


def test_an_ignored_signal_stays_ignored():
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        assert exits.hold()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is exits._handler
        exits.release()
        assert signal.getsignal(signal.SIGINT) is not exits._handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_no_handler_is_installed_off_the_main_thread():
    import threading

    held = []
    thread = threading.Thread(target=lambda: held.append(exits.hold()))
    thread.start()
    thread.join()
    assert held == [False]
    assert signal.getsignal(signal.SIGTERM) is not exits._handler


# -- the files ---------------------------------------------------------------------------------
def test_files_are_encrypted_and_read_back_exactly(tmp_path):
    scratch = ScratchDir(tmp_path)
    rows = np.tile(MARKER, (1000, 3))
    ids = np.arange(7, dtype=np.int64)
    for number in (0, 1):
        writer = scratch.open(number)
        writer.write(ids)
        writer.write(rows)
        writer.close()
    on_disk = scratch.file(0).read_bytes()
    assert MARKER.tobytes() not in on_disk and ids.tobytes() not in on_disk
    assert len(on_disk) == ids.nbytes + rows.nbytes + 2 * (8 + 16)  # length + tag per record
    plain = scratch.read(0)
    assert plain.tobytes() == ids.tobytes() + rows.tobytes()
    assert not scratch.file(0).exists()  # read once, then unlinked
    assert (scratch.path.stat().st_mode & 0o777) == 0o700
    scratch.remove()
    assert not scratch.path.exists() and str(scratch.path) not in exits._live


@pytest.mark.parametrize("damage", ["flip", "swap", "truncate", "key"])
def test_an_altered_file_fails_authentication(tmp_path, damage):
    scratch = ScratchDir(tmp_path)
    for number in (0, 1):
        writer = scratch.open(number)
        writer.write(np.full(10, number, dtype=np.int64))
        writer.write(np.full(10, number, dtype=np.float32))
        writer.close()
    zero, one = scratch.file(0), scratch.file(1)
    data = bytearray(zero.read_bytes())
    if damage == "flip":
        data[30] ^= 1
        zero.write_bytes(bytes(data))
    elif damage == "swap":  # bucket 1's records in bucket 0's place
        zero.write_bytes(one.read_bytes())
    elif damage == "truncate":  # the last record dropped
        zero.write_bytes(bytes(data[: 8 + 80 + 16]))
    else:  # another directory's key: the files of a dead process stay unreadable
        other = ScratchDir(tmp_path)
        other._records[0] = 2
        os.replace(zero, other.file(0))
        with pytest.raises(RuntimeError, match="was altered"):
            other.read(0)
        other.remove()
        scratch.remove()
        return
    with pytest.raises(RuntimeError, match="was altered"):
        scratch.read(0)
    scratch.remove()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_directories_of_dead_owners_are_removed_at_the_next_start(tmp_path):
    pid, start = owner()
    tag = host_tag()
    names = {
        "dead": f"{PREFIX}{tag}-{_dead_pid()}-{start}-aaaa",
        "pid reused": f"{PREFIX}{tag}-{pid}-{start + 1}-bbbb",
        "alive": f"{PREFIX}{tag}-{pid}-{start}-cccc",
        "another host": f"{PREFIX}{'0' * 8 if tag != '0' * 8 else '1' * 8}-{_dead_pid()}-1-dddd",
        "not ours": f"{PREFIX}legacy1",
    }
    for name in names.values():
        (tmp_path / name).mkdir()
        (tmp_path / name / "bucket-00000.bin").write_bytes(b"x")
    scratch = ScratchDir(tmp_path)  # what a new pass does first
    kept = set(_leftovers(tmp_path)) - {scratch.path.name}
    assert kept == {names["alive"], names["another host"], names["not ours"]}
    assert remove_stale(tmp_path) == []  # nothing more to remove; the new one is alive
    scratch.remove()


def test_atexit_removes_what_is_still_live(tmp_path):
    scratch = ScratchDir(tmp_path)
    scratch.open(0).close()
    exits.remove_all()  # what the atexit hook runs
    assert not scratch.path.exists()


def test_a_directory_made_while_the_handler_removes_is_removed_too(tmp_path, monkeypatch):
    """A thread making a scratch directory when the signal comes: the handler waits for it.

    The race CI saw once (an empty bucket directory left after SIGTERM): a prefetching
    thread tracked its directory, the handler removed every live directory (that one
    did not exist yet), then the thread made it. ``mkdir`` is slowed here so that the
    handler runs inside that window every time; without the lock the directory stays.
    """
    import threading

    from skfairdp.data.scratch import owned_directory

    entered = threading.Event()
    real_mkdir = Path.mkdir

    def slow_mkdir(self, *args, **kwargs):
        entered.set()
        time.sleep(0.3)
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", slow_mkdir)
    made = []
    thread = threading.Thread(target=lambda: made.append(owned_directory(tmp_path, "buckets")))
    thread.start()
    assert entered.wait(10)
    monkeypatch.setitem(exits._previous, signal.SIGTERM, lambda signum, frame: None)
    exits._handler(signal.SIGTERM, None)  # a Python previous handler: the process goes on
    thread.join(10)
    assert not exits.closing()
    assert sorted(tmp_path.glob(f"{PREFIX}*")) == []
