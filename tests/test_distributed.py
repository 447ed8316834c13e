"""Data-parallel fits on torch.distributed: two ranks on loopback (gloo) against one process.

One spawn of two ranks (file init, no port) fits every case once; the tests read
what each rank saved. A two-rank fit must record the one-process event and spend,
end with identical parameters and dual state on every rank, and, with the same
batches and noise (``data_parallel(simulate=2)``: one process sampling the two
shards with the ranks' streams), be the same model up to float reassociation.
"""

from __future__ import annotations

import functools
import math
import pickle
import time
import warnings

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
import two_ranks

from skfairdp.distributed import data_parallel
from skfairdp.distributed.sharding import ShardedPoissonSampler, sampling_source
from skfairdp.privacy import RandomSource, gaussian_sum, noisy_histogram
from skfairdp.privacy.collective import sum_over_ranks, summed_over

SPAWN_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """What each of two ranks fitted (one spawn for the module)."""
    out = tmp_path_factory.mktemp("two_ranks")
    context = mp.start_processes(
        two_ranks.run_rank,
        args=(2, str(out / "init"), str(out)),
        nprocs=2,
        join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + SPAWN_TIMEOUT_S
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the two ranks did not finish (a collective out of step?)")
    results = []
    for rank in range(2):
        with open(out / f"rank{rank}.pkl", "rb") as f:
            results.append(pickle.load(f))
        assert "traceback" not in results[rank], results[rank]["traceback"]
    return results


@functools.cache
def _one_process(case: str, **config) -> dict:
    X, y, s = two_ranks.make_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with data_parallel(**config) if config else _nothing():
            return two_ranks.fitted_state(two_ranks.fit(two_ranks.estimator(case), X, y, s))


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


CASES = two_ranks.CASES


@pytest.mark.parametrize("case", [*CASES, "fermi_local", "fermi_secure"])
def test_every_rank_ends_with_the_same_model_and_accounting(ranks, case):
    first, second = ranks[0][case], ranks[1][case]
    np.testing.assert_array_equal(first["params"], second["params"])
    np.testing.assert_array_equal(first["dual"], second["dual"])
    assert first["event"] == second["event"]
    assert first["spent"] == second["spent"]


@pytest.mark.parametrize("case", CASES)
def test_two_ranks_record_the_one_process_event(ranks, case):
    one = _one_process(case)
    assert ranks[0][case]["event"] == one["event"]
    assert ranks[0][case]["spent"] == one["spent"]
    assert ranks[0][case]["steps"] == one["steps"]


@pytest.mark.parametrize("case", CASES)
def test_two_ranks_train_the_model_of_one_process_on_the_same_batches(ranks, case):
    """Same batches and noise: equal up to float32 reassociation of the sums."""
    simulated = _one_process(case, simulate=2)
    np.testing.assert_allclose(ranks[0][case]["params"], simulated["params"], atol=1e-5)
    np.testing.assert_allclose(ranks[0][case]["dual"], simulated["dual"], atol=1e-5)
    assert ranks[0][case]["event"] == simulated["event"]
    # a different noise stream gives a visibly different model: the check can fail
    assert np.abs(_one_process(case)["params"] - simulated["params"]).max() > 1e-3


#: all-reduces per training step (a release that steers the step's gradient, RaCO-DP's
#: histogram, or one made inside the clipping hook, Global Scaling's count, is its own)
#: and before or after training (DP-FERMI: the group histogram, the public label counts and
#: fallback_to_constant's counts, noisy or, under privacy_unit="sensitive", exact;
#: RaCO-DP: enforce_tolerance's check of the returned model).
ALL_REDUCES = {
    "fermi": (1, 3),
    "fermi_sensitive": (1, 3),
    "fermi_random": (1, 3),
    "dpsgd": (1, 0),
    "raco": (2, 1),
    "global_scaling": (2, 0),
    "dpsgdf": (2, 0),
    "fermi_tiny": (1, 3),
    "raco_tiny": (2, 1),
    "fermi_weighted": (1, 3),
}


@pytest.mark.parametrize("case", CASES)
def test_one_all_reduce_sums_a_steps_gradient_and_dual_releases(ranks, case):
    per_step, upfront = ALL_REDUCES[case]
    for rank in ranks:
        assert rank[case]["all_reduces"] == per_step * rank[case]["steps"] + upfront


def test_local_shards_train_the_model_of_full_data(ranks):
    """Each rank passing only its block (shard="local") is the fit of shard="full"."""
    np.testing.assert_array_equal(ranks[0]["fermi_local"]["params"], ranks[0]["fermi"]["params"])
    assert ranks[0]["fermi_local"]["event"] == ranks[0]["fermi"]["event"]


@pytest.mark.parametrize(
    "name, words",
    [
        ("lr", ["different parameters", "lr", "rank 0: 0.1", "rank 1: 0.2"]),
        ("n_features", ["n_features_in_", "rank 0: 3", "rank 1: 2"]),
        ("data", ["same X, y, groups, weights"]),
    ],
)
def test_ranks_that_disagree_get_a_clear_error_on_every_rank(ranks, name, words):
    for rank in ranks:
        message = rank[f"error_{name}"]
        assert message is not None, f"no error when the ranks disagree on {name}"
        for word in words:
            assert word in message


def test_data_parallel_needs_an_initialised_process_group():
    X, y, s = two_ranks.make_data()
    with data_parallel(True), pytest.raises(RuntimeError, match="init_process_group"):
        two_ranks.estimator("fermi").fit(X, y, sensitive_features=s)


def test_a_data_parallel_fit_needs_a_finite_epsilon():
    X, y, s = two_ranks.make_data()
    with data_parallel(simulate=2), pytest.raises(ValueError, match="finite epsilon"):
        two_ranks.estimator("fermi", epsilon=math.inf).fit(X, y, sensitive_features=s)


def test_an_estimator_whose_step_couples_the_batch_refuses_data_parallel():
    from skfairdp import FairLensClassifier

    X, y, s = two_ranks.make_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its unbounded sensitivity
        with data_parallel(simulate=2), pytest.raises(ValueError, match="whole batch"):
            FairLensClassifier(epsilon=1.0).fit(X, y, sensitive_features=s)


def test_data_parallel_checks_its_arguments():
    with pytest.raises(ValueError, match="shard"), data_parallel(shard="mine"):
        pass
    with pytest.raises(ValueError, match="simulate"), data_parallel(simulate=0):
        pass


def test_no_change_outside_a_process_group():
    """data_parallel(False) and no block at all: the same one-process fit, bit for bit."""
    plain = _one_process("fermi")
    off = _one_process("fermi", enabled=False)
    np.testing.assert_array_equal(plain["params"], off["params"])
    assert not torch.distributed.is_initialized()


def test_sharded_sampling_is_poisson_sampling_of_all_rows():
    """Every row joins each step with probability q, independently of the other rows.

    Three shards (sizes 7, 5, 8) at q = 0.3 for 6000 steps: each row's count is
    Binomial(6000, 0.3) (within 4.8 sd: a false alarm below 3.2e-5 over 20 rows), and
    rows are pairwise uncorrelated (|r| within 5.3 / sqrt(T): below 2.2e-5 over 190
    pairs, within a shard and across shards).
    """
    random = RandomSource(11)
    sizes, q, steps = [7, 5, 8], 0.3, 6000
    sampler = ShardedPoissonSampler(sizes, q, [sampling_source(random, r) for r in range(3)], 20)
    assert sampler.steps_per_epoch == 4 and sampler.expected_batch_size == pytest.approx(6.0)
    hits = np.zeros((0, 20), dtype=bool)
    while len(hits) < steps:
        epoch = np.zeros((sampler.steps_per_epoch, 20), dtype=bool)
        for t, idx in enumerate(sampler.epoch()):
            epoch[t, idx] = True
        hits = np.concatenate([hits, epoch])
    hits = hits[:steps].astype(float)
    counts = hits.sum(axis=0)
    sd = math.sqrt(steps * q * (1 - q))
    assert np.all(np.abs(counts - steps * q) < 4.8 * sd), counts
    corr = np.corrcoef(hits.T)[np.triu_indices(20, 1)]
    assert np.all(np.abs(corr) < 5.3 / math.sqrt(steps)), np.abs(corr).max()


def test_ranks_draw_their_own_sampling_streams():
    random = RandomSource(5)
    first = sampling_source(random, 0).uniform(4)
    np.testing.assert_array_equal(first, sampling_source(RandomSource(5), 0).uniform(4))
    assert not np.array_equal(first, sampling_source(random, 1).uniform(4))
    assert sampling_source(RandomSource(secure_mode=True), 0).secure_mode


class _Rank:
    """A collective of rank ``rank`` whose all-reduce adds ``other`` (the other ranks' part)."""

    def __init__(self, rank, other):
        self.rank, self.world_size, self.other, self.calls = rank, 2, other, 0

    def all_reduce(self, tensors):
        self.calls += 1
        return [t + o for t, o in zip(tensors, self.other)]

    def broadcast(self, tensor):
        return tensor


def test_only_rank_zero_adds_noise_and_one_all_reduce_sums_the_ranks():
    total = torch.tensor([1.0, 2.0])
    other = [torch.tensor([10.0, 20.0])]
    # rank 1: its exact sum, no draw from its stream
    random = RandomSource(0)
    with summed_over(_Rank(1, other)):
        noisy, event = gaussian_sum(total, 1.0, 2.0, random)
    np.testing.assert_array_equal(noisy.numpy(), [11.0, 22.0])
    assert event.noise_multiplier == 2.0
    np.testing.assert_array_equal(random.uniform(2), RandomSource(0).uniform(2))
    # rank 0: the one-process noise, then the sum over ranks
    collective = _Rank(0, other)
    with summed_over(collective):
        noisy, _ = noisy_histogram(total, RandomSource(0), noise_multiplier=2.0)
    alone, _ = noisy_histogram(total, RandomSource(0), noise_multiplier=2.0)
    np.testing.assert_allclose(noisy.numpy(), alone.numpy() + [10.0, 20.0])
    assert collective.calls == 1


class _GridRank1:
    """Rank 0's collective when rank 1 holds ``other``: the backend adds rank 1's grid release
    (no noise) in the dtype it is handed, as gloo adds float32 tensors."""

    rank, world_size = 0, 2

    def __init__(self, other, release):
        self.other, self.release, self.dtypes = other, release, set()

    def all_reduce(self, tensors):
        self.dtypes.update(t.dtype for t in tensors)
        theirs = [self.release(torch.full_like(t, self.other), add_noise=False) for t in tensors]
        return [t + o for t, o in zip(tensors, theirs)]

    def broadcast(self, tensor):
        return tensor


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_secure_grid_releases_stay_exact_over_the_ranks(kind):
    """A secure-mode histogram summed over ranks is a function of the noisy integer alone.

    The ranks' grid values are summed in float64 (exact), whatever the counts' dtype. In
    float32, rank 0's noisy grid value plus rank 1's exact one rounds half to even: for the
    Gaussian grid here, when rank 1's snapped sum is odd the release's last mantissa bit
    is always 0 (1 in about a quarter of the cells otherwise), a test that tells the
    neighbours apart; summed in float64, the bit is 1 as often with that sum as without.
    """
    from skfairdp.privacy import grid

    d, multiplier = 8, 1.0
    if kind == "gaussian":
        g = grid.gaussian_grid(1.0, multiplier, d)[0]
        noise = {"noise_multiplier": multiplier}

        def release(t, add_noise):
            return grid.gaussian_release(t, 1.0, multiplier, add_noise=add_noise)
    else:
        g = grid.laplace_grid(1.0, multiplier, d)[0]
        noise = {"laplace_scale": multiplier}

        def release(t, add_noise):
            return grid.laplace_release(t, 1.0, multiplier, add_noise=add_noise)

    assert 300.0 > 2**24 * g  # rank 0's sums are past float32's exact grid
    odd_sum = 100.0 + g  # rank 1's snapped sum 100 / g + 1: odd
    assert round(odd_sum / g) % 2 == 1
    counts = torch.full((d,), 300.123456, dtype=torch.float32)
    random = RandomSource(secure_mode=True)
    bits = []
    for _ in range(250):
        collective = _GridRank1(odd_sum, release)
        with summed_over(collective):
            noisy, _ = noisy_histogram(counts, random, **noise)
        assert noisy.dtype == torch.float32 and collective.dtypes == {torch.float64}
        bits.append(noisy.numpy().view(np.int32) & 1)
    if kind == "gaussian":
        # 2,000 cells at a rate near 0.25 (sd 0.01): below 0.15 by chance about never
        assert np.mean(bits) > 0.15


def test_sum_over_ranks_is_the_identity_in_one_process():
    values = (torch.ones(2), None, np.arange(3.0))
    assert all(a is b for a, b in zip(sum_over_ranks(*values), values))
    with summed_over(_Rank(0, [torch.ones(2), torch.ones(3, dtype=torch.float64)])):
        first, none, array = sum_over_ranks(*values)
    assert none is None and isinstance(array, np.ndarray)
    np.testing.assert_array_equal(array, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(first.numpy(), [2.0, 2.0])
