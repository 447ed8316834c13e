"""Exact Poisson sampling out of core (skfairdp.data.buckets): what the accountant assumes.

Statistical tests run at a false-alarm rate of 1e-4 each (seeded, so deterministic);
each is shown to reject a wrong sampler (power). The end-to-end test drives the
in-memory fit by the same sampled batches and gets the Parquet fit's model.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from skfairdp import DPFermiClassifier, RaCODPClassifier
from skfairdp._fit import template
from skfairdp.data import BucketedSampler, DataSource
from skfairdp.data.buckets import MAX_BUCKETS
from skfairdp.privacy import PoissonSampler, RandomSource

ALPHA = 1e-4


class ArraySource(DataSource):
    """Rows in memory, streamed in chunks of the given sizes (as a Parquet scan would)."""

    def __init__(self, X, sizes):
        self.X, self.sizes = X, list(sizes)
        assert sum(self.sizes) == len(X)
        self.shape = X.shape
        self.batch_rows = max(self.sizes)

    def iter_features(self):
        start = 0
        for size in self.sizes:
            yield start, self.X[start : start + size]
            start += size


def _sizes(n, batch_rows):
    return [min(batch_rows, n - start) for start in range(0, n, batch_rows)]


def inclusions(sampler, epochs):
    """``(epochs, n, steps)`` booleans: which rows each step of each epoch drew."""
    n, steps = sampler.n_samples, sampler.steps_per_epoch
    drawn = np.zeros((epochs, n, steps), dtype=bool)
    for e in range(epochs):
        for s, (idx, rows) in enumerate(sampler.epoch()):
            assert np.all(np.diff(idx) > 0)
            np.testing.assert_array_equal(rows, sampler.source.X[idx])
            drawn[e, idx, s] = True
    return drawn


def _chi2_gof(observed, pmf):
    """p-value of a chi-square goodness of fit, bins pooled until each expects >= 5."""
    expected = pmf * observed.sum()
    obs, exp, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    obs[-1] += acc_o
    exp[-1] += acc_e
    obs, exp = np.array(obs), np.array(exp)
    return stats.chi2.sf(((obs - exp) ** 2 / exp).sum(), len(obs) - 1)


def p_values(drawn, q):
    """The four tests: the rate, each (row, step) cell's rate, batch sizes, steps per row."""
    epochs, n, steps = drawn.shape
    rate = stats.binomtest(int(drawn.sum()), drawn.size, q).pvalue
    cells = drawn.sum(axis=0).ravel()
    cell_stat = ((cells - epochs * q) ** 2 / (epochs * q * (1 - q))).sum()
    per_cell = stats.chi2.sf(cell_stat, cells.size)  # ~ chi2(n * steps) under the null
    sizes = np.bincount(drawn.sum(axis=1).ravel(), minlength=n + 1)
    batch = _chi2_gof(sizes, stats.binom.pmf(np.arange(n + 1), n, q))
    per_row = np.bincount(drawn.sum(axis=2).ravel(), minlength=steps + 1)
    row = _chi2_gof(per_row, stats.binom.pmf(np.arange(steps + 1), steps, q))
    return {"rate": rate, "per_cell": per_cell, "batch_sizes": batch, "steps_per_row": row}


N, BATCH, BATCH_ROWS, EPOCHS = 40, 5, 6, 800  # q = 1/8, 8 steps, chunks of 6 (and 4)


def _sampler(seed=0, poisson=True, scratch_dir=None, prefetch=False):
    X = np.arange(N * 2, dtype=np.float32).reshape(N, 2)
    source = ArraySource(X, _sizes(N, BATCH_ROWS))
    return BucketedSampler(
        source,
        BATCH,
        RandomSource(seed),
        poisson=poisson,
        scratch_dir=scratch_dir,
        prefetch=prefetch,
    )


@pytest.fixture(scope="module")
def drawn():
    return inclusions(_sampler(), EPOCHS)


def test_inclusion_is_independent_per_row_and_step_at_rate_q(drawn):
    q = BATCH / N
    assert _sampler().steps_per_epoch == 8
    for name, p in p_values(drawn, q).items():
        assert p > ALPHA, (name, p)


def test_the_tests_have_power():
    """Each test rejects a sampler that breaks what it checks (p < 1e-4)."""
    q, rng = BATCH / N, np.random.default_rng(1)
    shape = (EPOCHS, N, 8)
    too_often = rng.random(shape) < 1.1 * q
    assert p_values(too_often, q)["rate"] < ALPHA
    uneven = rng.random(shape) < q * np.where(np.arange(N) < N // 2, 0.7, 1.3)[None, :, None]
    assert p_values(uneven, q)["per_cell"] < ALPHA
    # a chunk of rows drawn together (rows correlated): batch sizes too spread
    chunks = rng.random((EPOCHS, N // 4, 8)) < q
    assert p_values(np.repeat(chunks, 4, axis=1), q)["batch_sizes"] < ALPHA
    # a shuffled partition (each row once per epoch): steps per row never vary
    partition = inclusions(_sampler(poisson=False), 200)
    assert np.all(partition.sum(axis=2) == 1)
    assert p_values(partition, q)["steps_per_row"] < ALPHA


def test_each_step_draws_the_pairs_of_one_scan_per_chunk():
    """The epoch yields exactly the (row, step) pairs the per-chunk scans drew, in order."""
    sampler = _sampler(seed=3)
    replay = _sampler(seed=3)
    expected = [[] for _ in range(sampler.steps_per_epoch)]
    for start, X in replay.source.iter_features():
        steps, rows = replay.assign(len(X))
        assert np.all(np.diff(steps * len(X) + rows) > 0)  # sorted by step, then row
        for s, r in zip(steps, rows):
            expected[s].append(start + r)
    got = [idx.tolist() for idx, _ in sampler.epoch()]
    assert got == expected


def test_scratch_is_removed_after_an_epoch_and_on_early_stop(tmp_path):
    sampler = _sampler(scratch_dir=tmp_path)
    for _ in sampler.epoch():
        assert len(list(tmp_path.iterdir())) == 1  # the epoch's folder, while it runs
    assert not list(tmp_path.iterdir())
    epoch = sampler.epoch()
    next(epoch)
    epoch.close()  # what a CappedSampler or an interrupted loop does
    assert not list(tmp_path.iterdir())
    with pytest.raises(FileNotFoundError, match="scratch_dir: no such directory"):
        next(_sampler(scratch_dir=tmp_path / "missing").epoch())


def test_prefetched_passes_draw_the_same_batches(tmp_path):
    """A pass in a background thread draws what it would draw in line; close() discards one."""
    plain, prefetching = _sampler(seed=7), _sampler(seed=7, scratch_dir=tmp_path, prefetch=True)
    for _ in range(3):
        expected = [idx.tolist() for idx, _ in plain.epoch()]
        assert [idx.tolist() for idx, _ in prefetching.epoch()] == expected
    assert prefetching._background.pending is not None  # the 4th pass, started in the 3rd epoch
    prefetching.close()
    assert not list(tmp_path.iterdir())
    prefetching.epochs = 2  # the fit template's bound: no pass beyond the last epoch
    for _ in range(2):
        list(prefetching.epoch())
    assert prefetching._background.pending is None


def test_a_dropped_sampler_discards_its_pending_pass(tmp_path):
    import gc

    sampler = _sampler(scratch_dir=tmp_path, prefetch=True)
    sampler.start()
    sampler._background.pending.result()  # the pass wrote its buckets
    assert len(list(tmp_path.iterdir())) == 1
    del sampler
    gc.collect()
    assert not list(tmp_path.iterdir())


def test_close_removes_the_folder_of_a_pass_whose_future_was_lost(tmp_path):
    """SIGINT's KeyboardInterrupt can fire inside ``executor.submit`` after the pass is
    queued and before ``pending`` is set: close() must still remove what it wrote (a
    fit that then leaves by ``os._exit`` runs no atexit clean-up)."""
    sampler = _sampler(scratch_dir=tmp_path, prefetch=True)
    lost = sampler._background.submit(sampler._pass)  # never stored in pending
    lost.result()
    assert len(list(tmp_path.iterdir())) == 1
    sampler.close()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("n", [10**4, 10**7, 10**8])
def test_memory_is_one_chunk_and_one_bucket(n):
    """Buckets hold about max(batch_rows, n / 256) expected rows; at most 256 files open."""

    class Shape:
        shape, batch_rows = (n, 100), 65536

    sampler = BucketedSampler(Shape(), 256, RandomSource(0), poisson=True)
    per_bucket = sampler.steps_per_bucket * sampler.expected_batch_size
    assert per_bucket <= max(Shape.batch_rows, math.ceil(n / MAX_BUCKETS)) * 1.01
    assert sampler.n_buckets <= MAX_BUCKETS + 1
    assert sampler.n_buckets * sampler.steps_per_bucket >= sampler.steps_per_epoch


def test_rate_and_steps_match_the_in_memory_sampler():
    sampler = _sampler()
    memory = PoissonSampler(N, min(1.0, BATCH / N), RandomSource(0))
    assert sampler.sampling_rate == memory.sampling_rate
    assert sampler.steps_per_epoch == memory.steps_per_epoch
    assert sampler.expected_batch_size == memory.expected_batch_size
    assert sampler.poisson


class IndicesOnly:
    """An out-of-core sampler whose batches the in-memory path indexes itself."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.poisson = True
        self.sampling_rate = sampler.sampling_rate
        self.expected_batch_size = sampler.expected_batch_size
        self.steps_per_epoch = sampler.steps_per_epoch

    def epoch(self):
        for idx, _ in self.sampler.epoch():
            yield idx


@pytest.mark.filterwarnings("ignore::UserWarning")  # a small noisy fit may be degenerate
@pytest.mark.parametrize("make", [DPFermiClassifier, RaCODPClassifier])
def test_parquet_fit_equals_the_in_memory_fit_on_the_same_batches(tmp_path, monkeypatch, make):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from conftest import make_biased_data

    from skfairdp.data import ParquetSource

    X, y, s = make_biased_data(500, seed=4)
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y, "s": s})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=150)
    params = dict(epsilon=2.0, batch_size=64, max_epochs=2, random_state=5)
    source = ParquetSource(tmp_path / "t.parquet", target="y", sensitive_features="s")
    source.batch_rows = 100  # chunks of 100 and 50 (row groups of 150)
    sizes = [len(chunk) for _, chunk in source.iter_features()]
    on_source = make(**params).fit(source)

    def replaying(n, q, random):
        # the source's sampler draws from the first child of the fit's stream
        sampler = BucketedSampler(ArraySource(X, sizes), 64, random.spawn(), poisson=True)
        assert sampler.sampling_rate == q and sampler.n_samples == n
        return IndicesOnly(sampler)

    monkeypatch.setattr(template, "PoissonSampler", replaying)
    in_memory = make(**params).fit(X, y, sensitive_features=s)
    assert in_memory.dp_event_ == on_source.dp_event_
    for a, b in zip(on_source.module_.parameters(), in_memory.module_.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(on_source.predict(source), in_memory.predict(X))
