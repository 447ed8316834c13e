"""Exact Poisson batches of a table that does not fit in memory: one pass, step-ordered buckets.

An epoch of ``S = ceil(1/q)`` steps is ``n * S`` independent Bernoulli(``q``) trials,
one per (row, step) pair. The pass reads the table in chunks of rows; for a chunk
of ``m`` rows it scans the chunk's ``m * S`` trials, ordered step-major, with the
geometric gaps of :func:`skfairdp.privacy.sampling.bernoulli_positions` (cost
proportional to the rows drawn, about ``m``), and appends each drawn (row, step)
record -- the row's index, the step, its features -- to the bucket file of its
step (one block per chunk: the count, the indices and steps, the feature rows). A
bucket holds a run of consecutive steps, about ``batch_rows`` records.
Training then reads bucket 0, sorts it by step (stably: rows stay in table order),
yields its steps' batches, and so on. Every trial of every pair is drawn once,
independently, at rate ``q``, whatever the chunking: each batch is exactly a
Poisson sample of all ``n`` rows, as the accountant assumes.

Memory: one chunk of features while writing, one bucket while reading; disk: one
epoch's records (about the table's float32 size), removed after the epoch. The
files are encrypted with a key held only in memory and removed on any exit Python
sees (:mod:`.scratch`, :mod:`.exits`).

With ``prefetch`` the next epoch's pass runs in a background thread while this
epoch trains (two epochs' records on disk then). The pass draws from its own
random stream (a child of the fit's), so what it draws does not depend on how
the two threads interleave.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..privacy.random import RandomSource
from ..privacy.sampling import bernoulli_positions
from . import exits
from .scratch import ScratchDir

__all__ = ["BucketedSampler"]

#: Bucket files open at once while writing (file descriptors).
MAX_BUCKETS = 256


class BucketedSampler:
    """The batches of one fit on a source: ``(row indices, feature rows)`` per step.

    Parameters
    ----------
    source : DataSource
        Rows read by ``source.iter_features()`` (``source.batch_rows`` per chunk).
    batch_size : int
        Expected batch size; the rate is ``q = min(1, batch_size / n)``.
    random : RandomSource
        Every inclusion is drawn from it (seeded or ``secure_mode``); used by the
        pass only (in its thread with ``prefetch``), never by the training steps.
    poisson : bool
        ``True`` (private fits): each row joins each step independently with
        probability ``q`` (``S = ceil(1/q)`` steps per epoch). ``False``
        (``epsilon=inf``): a random partition, each row in exactly one of
        ``S = ceil(n / batch_size)`` steps drawn uniformly (batch sizes vary
        around ``batch_size``; nothing is accounted).
    scratch_dir : str or path-like, optional
        Parent of each epoch's temporary directory (default: the system's). Its
        files are encrypted (:class:`~skfairdp.data.scratch.ScratchDir`); while
        :meth:`epoch` runs in the main thread, SIGTERM, SIGINT and SIGHUP remove
        them before the process acts on the signal, until :meth:`close`.
    verbose : int
        ``>= 1``: a progress bar over each pass's chunks.
    prefetch : bool
        Run the next epoch's pass in a background thread while this one trains
        (up to ``epochs`` passes in all).

    Attributes
    ----------
    epochs : int or None
        How many epochs the fit will ask for (set by the fit template); no pass
        is prefetched beyond it. ``None``: one more pass may be prefetched and
        then discarded by :meth:`close`.
    """

    def __init__(
        self,
        source,
        batch_size: int,
        random: RandomSource,
        *,
        poisson: bool,
        scratch_dir=None,
        verbose: int = 0,
        prefetch: bool = False,
    ):
        self.source = source
        self.n_samples = int(source.shape[0])
        self.batch_size = int(min(batch_size, self.n_samples))
        self.sampling_rate = min(1.0, batch_size / self.n_samples)
        self.random = random
        self.poisson = bool(poisson)
        self.scratch_dir = scratch_dir
        self.verbose = verbose
        self.prefetch = bool(prefetch)
        self.epochs: int | None = None
        self.passes = 0  # passes started
        target_rows = max(source.batch_rows, math.ceil(self.n_samples / MAX_BUCKETS))
        steps = self.steps_per_epoch
        self.steps_per_bucket = max(1, min(steps, int(target_rows * steps / self.n_samples)))
        self.n_buckets = math.ceil(steps / self.steps_per_bucket)
        self.n_features = int(source.shape[1])
        self._background = _Background()
        self._signals = _Signals()
        # a pass still pending when the sampler is dropped (a fit that failed before
        # training) is discarded with its files
        weakref.finalize(self, _drop, self._background, self._signals)

    @property
    def expected_batch_size(self) -> float:
        if self.poisson:
            return self.sampling_rate * self.n_samples
        return float(self.batch_size)

    @property
    def steps_per_epoch(self) -> int:
        if self.poisson:
            return max(1, math.ceil(1.0 / self.sampling_rate))
        return math.ceil(self.n_samples / self.batch_size)

    # -- one epoch -------------------------------------------------------------------
    def epoch(self):
        """Yield ``(indices, rows)`` per step: sorted int64 row indices, their float32 rows."""
        self._signals.hold()  # scratch files exist from here until close()
        pending = self._background.pending
        # pending stays known to close() while we wait: a KeyboardInterrupt here must
        # not leave the pass running on, unseen, into a folder nobody removes
        folder = pending.result() if pending is not None else self._pass()
        self._background.pending = None
        try:
            if self.epochs is None or self.passes < self.epochs:
                self.start()
            steps = self.steps_per_epoch
            for b in range(self.n_buckets):
                first = b * self.steps_per_bucket
                data = folder.read(b)
                yield from self._read_bucket(data, first, min(self.steps_per_bucket, steps - first))
        finally:
            folder.remove()
            self._background.folders.discard(folder)

    def start(self) -> None:
        """With ``prefetch``: start the next pass in a background thread."""
        if self.prefetch and self._background.pending is None:
            self._background.pending = self._background.submit(self._pass)

    def close(self) -> None:
        """Stop and discard a prefetched pass (its scratch files included); restore the signals."""
        self._background.discard()
        self._signals.release()

    def assign(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """The (step, row) pairs drawn for a chunk of ``m`` rows, sorted by step then row."""
        steps = self.steps_per_epoch
        if not self.poisson:
            # ceil(u S) - 1 for u in (0, 1]: uniform on 0 .. S-1
            step = (np.ceil(self.random.uniform(m) * steps) - 1).astype(np.int64)
            rows = np.argsort(step, kind="stable")
            return step[rows], rows
        if self.sampling_rate >= 1.0:
            return np.zeros(m, dtype=np.int64), np.arange(m)
        positions = bernoulli_positions(m * steps, self.sampling_rate, self.random)
        return positions // m, positions % m

    def _pass(self) -> ScratchDir:
        """One streaming pass: every chunk's draws appended to the bucket files of a new folder."""
        self.passes += 1
        folder = ScratchDir(self._scratch())
        self._background.folders.add(folder)
        edges = np.arange(1, self.n_buckets) * self.steps_per_bucket
        chunks = tqdm(
            self.source.iter_features(),
            total=math.ceil(self.n_samples / self.source.batch_rows),
            disable=self.verbose < 1,
            desc=f"sampling pass {self.passes}",
            unit="chunk",
            leave=False,
        )
        try:
            files = []
            try:
                files.extend(folder.open(b) for b in range(self.n_buckets))
                for start, X in chunks:
                    if self._background.cancel.is_set():
                        raise _Cancelled
                    step, rows = self.assign(len(X))
                    x = np.take(X, rows, axis=0)
                    cuts = [0, *np.searchsorted(step, edges).tolist(), len(step)]
                    for file, lo, hi in zip(files, cuts[:-1], cuts[1:]):
                        if hi > lo:  # one block: count, row indices, steps; then the rows
                            meta = np.concatenate([[hi - lo], rows[lo:hi] + start, step[lo:hi]])
                            file.write(meta.astype(np.int64, copy=False))
                            file.write(x[lo:hi])
            finally:
                for file in files:
                    file.close()
        except BaseException:
            folder.remove()
            raise
        return folder

    def _read_bucket(self, data: np.ndarray, first: int, count: int):
        """The steps ``first .. first + count - 1`` of a bucket's plaintext ``data``."""
        rows, steps, xs, offset = [], [], [], 0
        while offset < len(data):
            m = int(np.frombuffer(data, np.int64, 1, offset)[0])
            meta = np.frombuffer(data, np.int64, 2 * m, offset + 8)
            offset += 8 * (1 + 2 * m)
            xs.append(np.frombuffer(data, np.float32, m * self.n_features, offset))
            offset += 4 * m * self.n_features
            rows.append(meta[:m])
            steps.append(meta[m:])
        rows = np.concatenate(rows) if rows else np.empty(0, np.int64)
        steps = np.concatenate(steps) if steps else np.empty(0, np.int64)
        x = np.concatenate(xs).reshape(-1, self.n_features) if xs else None
        del data, xs
        order = np.argsort(steps, kind="stable")  # blocks in row order: rows stay sorted
        bounds = np.searchsorted(steps[order], np.arange(first, first + count + 1))
        for k in range(count):
            take = order[bounds[k] : bounds[k + 1]]
            rows_k = rows[take]
            if x is None:
                yield rows_k, np.empty((0, self.n_features), dtype=np.float32)
            else:
                yield rows_k, np.take(x, take, axis=0)

    def _scratch(self) -> str | None:
        folder = self.scratch_dir
        if folder is not None and not Path(folder).is_dir():
            raise FileNotFoundError(f"scratch_dir: no such directory: {str(folder)!r}")
        record = 16 + 4 * self.n_features  # index, step, features
        needed = self.n_samples * record * (1.1 if self.poisson else 1.0)
        free = shutil.disk_usage(folder or tempfile.gettempdir()).free
        if free < needed:
            raise OSError(
                f"scratch_dir: an epoch's sampling pass writes about {needed / 2**30:.1f} GiB "
                f"but {str(folder or tempfile.gettempdir())!r} has {free / 2**30:.1f} GiB free; "
                "set ParquetSource(scratch_dir=...) or SKFAIRDP_SCRATCH_DIR to a larger disk"
            )
        return None if folder is None else str(folder)


class _Signals:
    """One sampler's :func:`~skfairdp.data.exits.hold` of the signal handlers."""

    def __init__(self):
        self.held = False

    def hold(self) -> None:
        if not self.held:
            self.held = exits.hold()

    def release(self) -> None:
        if self.held:
            self.held = False
            exits.release()


def _drop(background: _Background, signals: _Signals) -> None:
    """A dropped sampler: discard its pending pass, release its hold."""
    background.discard()
    signals.release()


class _Cancelled(Exception):
    """A prefetched pass stopped by :meth:`BucketedSampler.close`."""


class _Background:
    """The thread of the prefetched passes, the pass pending in it, and the passes' folders.

    ``folders`` holds every folder a pass made that no epoch has consumed yet:
    :meth:`discard` removes them all, so a pass whose future was lost (a
    ``KeyboardInterrupt`` raised inside ``submit``, after the work was queued but
    before ``pending`` was set) leaves nothing behind either.
    """

    def __init__(self):
        self.executor: ThreadPoolExecutor | None = None
        self.pending: Future | None = None
        self.cancel = threading.Event()
        self.folders: set[ScratchDir] = set()

    def submit(self, function) -> Future:
        if self.executor is None:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix=_THREAD_PREFIX)
        return self.executor.submit(function)

    def discard(self) -> None:
        """Cancel the passes, wait for the running one, remove every unconsumed folder."""
        self.cancel.set()
        self.pending = None
        if self.executor is not None:
            # the last reference to the sampler may drop in the pass's own thread,
            # which cannot wait for itself (its pass has ended by then)
            own = threading.current_thread().name.startswith(_THREAD_PREFIX)
            self.executor.shutdown(wait=not own, cancel_futures=True)
            self.executor = None
        for folder in list(self.folders):
            folder.remove()
        self.folders.clear()
        self.cancel.clear()


_THREAD_PREFIX = "skfairdp-pass"
