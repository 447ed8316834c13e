"""Privacy core: closed-form calibration, accountant facade, delta rule, randomness, sampling."""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
import torch
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS
from opacus.accountants import RDPAccountant

from skfairdp.fermi.theorem import theorem_3_3_preconditions, theorem_3_3_sigmas
from skfairdp.privacy import (
    PoissonSampler,
    RandomSource,
    ShuffledBatches,
    calibrate_noise_multiplier,
    epsilon_spent,
    gaussian_release_event,
    joint_noise_multiplier,
    make_accountant,
    neighboring_relation,
    resolve_delta,
    sampled_gaussian_steps_event,
)
from skfairdp.privacy.events import compose

# ---------------------------------------------------------------------------
# Theorem 3.3 closed form (digest §2.4)
# ---------------------------------------------------------------------------
GOLDEN = dict(epsilon=1.0, delta=1e-5, n_samples=10_000, steps=5000, rho=0.3)
GOLDEN_MODEL = dict(lipschitz=1.0, w_bound=2.0, n_classes=2)


@pytest.mark.parametrize(
    "sensitive_only, sigma_theta, sigma_w",
    [(True, 0.350435, 0.175217), (False, 1.292340, 0.367539)],
)
def test_theorem_3_3_golden_sigmas(sensitive_only, sigma_theta, sigma_w):
    sigmas = theorem_3_3_sigmas(**GOLDEN, **GOLDEN_MODEL, sensitive_only=sensitive_only)
    assert sigmas.sigma_theta == pytest.approx(sigma_theta, abs=1e-6)
    assert sigmas.sigma_w == pytest.approx(sigma_w, abs=1e-6)


def test_theorem_3_3_preconditions():
    ok = dict(epsilon=1.0, delta=1e-5, n_samples=10_000, batch_size=100)
    assert theorem_3_3_preconditions(**ok, steps=5000) == []
    problems = theorem_3_3_preconditions(**ok, steps=1000)
    assert len(problems) == 1 and "T=1000" in problems[0] and "2500" in problems[0]
    # epsilon > 2 ln(1/delta) = 23.03 is flagged too
    big = theorem_3_3_preconditions(
        epsilon=30.0, delta=1e-5, n_samples=100, batch_size=100, steps=10**6
    )
    assert len(big) == 1 and "epsilon=30" in big[0]


# ---------------------------------------------------------------------------
# Accountant facade
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "q, z, steps, delta",
    [
        (0.01, 1.1, 1000, 1e-5),
        (0.004, 1.0, 5000, 1e-5),
        (0.05, 2.0, 300, 1e-6),
        (0.25, 5.0, 40, 1e-5),
        (1.0, 10.0, 20, 1e-5),
    ],
)
def test_rdp_epsilon_matches_opacus(q, z, steps, delta):
    # Parameters where opacus' and dp-accounting's fractional-order RDP series
    # both converge (for z < 1 they disagree at orders < 3 by up to ~0.3%).
    event = sampled_gaussian_steps_event(z, q, steps)
    ours = epsilon_spent(event, delta, accountant="rdp")
    opacus = RDPAccountant()
    opacus.history = [(z, q, steps)]
    reference = opacus.get_epsilon(delta, alphas=list(DEFAULT_RDP_ORDERS))
    assert ours.epsilon == pytest.approx(reference, rel=1e-6)
    assert ours.delta == delta
    pld = epsilon_spent(event, delta, accountant="pld")
    assert 0 < pld.epsilon <= ours.epsilon
    assert epsilon_spent(event, delta).epsilon == ours.epsilon  # auto = RDP for records


@pytest.mark.parametrize(
    "accountant, unit", [("rdp", "record"), ("pld", "record"), ("auto", "sensitive")]
)
def test_calibrated_multiplier_is_tight(accountant, unit):
    q, steps, delta, target = 0.02, 200, 1e-5, 2.0

    def make_event(z):
        return sampled_gaussian_steps_event(z, q, steps)

    account = dict(accountant=accountant, privacy_unit=unit)
    z = calibrate_noise_multiplier(target, delta, make_event, **account)
    assert epsilon_spent(make_event(z), delta, **account).epsilon <= target
    assert epsilon_spent(make_event(0.98 * z), delta, **account).epsilon > target


def test_calibration_infinite_target_and_unreachable():
    assert calibrate_noise_multiplier(math.inf, 1e-5, gaussian_release_event) == 0.0
    with pytest.raises(ValueError, match="no noise multiplier"):
        calibrate_noise_multiplier(1.0, 1e-5, lambda z: dp_accounting.NonPrivateDpEvent())


def test_replace_one_costs_more_than_add_remove():
    event = sampled_gaussian_steps_event(1.0, 0.05, 100)
    record = epsilon_spent(event, 1e-5, accountant="pld", privacy_unit="record")
    sensitive = epsilon_spent(event, 1e-5, privacy_unit="sensitive")
    assert sensitive.epsilon > record.epsilon


def test_special_events():
    assert epsilon_spent(dp_accounting.NonPrivateDpEvent(), 1e-5) == (math.inf, 0.0)
    assert epsilon_spent(dp_accounting.NoOpDpEvent(), 1e-5) == (0.0, 0.0)
    mixed = dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(1.0), dp_accounting.NonPrivateDpEvent()]
    )
    assert epsilon_spent(mixed, 1e-5).epsilon == math.inf
    nested = dp_accounting.SelfComposedDpEvent(dp_accounting.NonPrivateDpEvent(), 3)
    assert epsilon_spent(nested, 1e-5).epsilon == math.inf


def test_event_builders():
    assert isinstance(gaussian_release_event(math.inf), dp_accounting.NoOpDpEvent)
    assert isinstance(gaussian_release_event(0.0), dp_accounting.NonPrivateDpEvent)
    assert gaussian_release_event(2.0) == dp_accounting.GaussianDpEvent(2.0)
    assert isinstance(sampled_gaussian_steps_event(1.0, 0.1, 0), dp_accounting.NoOpDpEvent)
    assert isinstance(sampled_gaussian_steps_event(math.inf, 0.1, 5), dp_accounting.NoOpDpEvent)
    assert isinstance(sampled_gaussian_steps_event(0.0, 0.1, 5), dp_accounting.NonPrivateDpEvent)
    full = sampled_gaussian_steps_event(2.0, 1.0, 5)  # q = 1: no subsampling wrapper
    assert full == dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 5)
    sub = sampled_gaussian_steps_event(2.0, 0.1, 5)
    assert sub.event == dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(2.0))
    g = dp_accounting.GaussianDpEvent(1.0)
    assert compose([dp_accounting.NoOpDpEvent(), g]) is g
    assert isinstance(compose([dp_accounting.NoOpDpEvent()]), dp_accounting.NoOpDpEvent)
    assert compose([g, g]) == dp_accounting.ComposedDpEvent([g, g])


def test_joint_noise_multiplier():
    assert joint_noise_multiplier(1.0, 1.0) == pytest.approx(1 / math.sqrt(2))
    assert joint_noise_multiplier(2.0, 3.0) == pytest.approx((2.0**-2 + 3.0**-2) ** -0.5)
    assert joint_noise_multiplier(1.5, math.inf) == pytest.approx(1.5)
    assert joint_noise_multiplier(math.inf, math.inf) == math.inf
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="> 0"):
            joint_noise_multiplier(1.0, bad)
    # two Gaussians on the same data cost exactly what one with the joint multiplier costs
    two = dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(2.0), dp_accounting.GaussianDpEvent(3.0)]
    )
    one = dp_accounting.GaussianDpEvent(joint_noise_multiplier(2.0, 3.0))
    assert epsilon_spent(two, 1e-5).epsilon == pytest.approx(epsilon_spent(one, 1e-5).epsilon)


def test_units_and_accountant_validation():
    assert neighboring_relation("record") == dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    assert neighboring_relation("sensitive") == dp_accounting.NeighboringRelation.REPLACE_ONE
    with pytest.raises(ValueError, match="privacy_unit"):
        neighboring_relation("row")
    with pytest.raises(ValueError, match="accountant"):
        make_accountant("prv")
    event = sampled_gaussian_steps_event(1.0, 0.1, 10)
    for call in (
        lambda: make_accountant("rdp", "sensitive"),
        lambda: epsilon_spent(event, 1e-5, accountant="rdp", privacy_unit="sensitive"),
        lambda: calibrate_noise_multiplier(
            1.0, 1e-5, gaussian_release_event, accountant="rdp", privacy_unit="sensitive"
        ),
    ):
        with pytest.raises(ValueError, match="accountant='rdp'.*privacy_unit='sensitive'"):
            call()


# ---------------------------------------------------------------------------
# delta
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "n, expected", [(33_916, 2e-6), (1000, 1e-4), (7, 1e-2), (10, 1e-2), (123_456, 8e-7)]
)
def test_delta_auto_rule(n, expected):
    delta = resolve_delta("auto", n)
    assert delta == pytest.approx(expected, rel=1e-12)
    assert delta < 1 / n


def test_delta_warns_at_or_above_one_over_n():
    with pytest.warns(UserWarning, match="1/n"):
        assert resolve_delta(0.01, 100) == 0.01
    with pytest.warns(UserWarning, match="1/n"):
        resolve_delta(0.5, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_delta(1e-3, 100) == 1e-3


@pytest.mark.parametrize("bad", [1.0, 1.5, 0.0, -1e-5, "tiny", True, None])
def test_delta_out_of_range_raises(bad):
    with pytest.raises(ValueError, match="delta"):
        resolve_delta(bad, 100)


# ---------------------------------------------------------------------------
# RandomSource
# ---------------------------------------------------------------------------
def test_seeded_source_is_reproducible():
    a, b, c = RandomSource(7), RandomSource(7), RandomSource(8)
    np.testing.assert_array_equal(a.uniform(50), b.uniform(50))
    torch.testing.assert_close(a.normal((4, 5), 2.0), b.normal((4, 5), 2.0))
    np.testing.assert_array_equal(a.permutation(30), b.permutation(30))
    assert a.torch_seed() == b.torch_seed()
    assert not np.array_equal(RandomSource(7).uniform(50), c.uniform(50))


@pytest.mark.parametrize("secure", [False, True])
def test_random_source_distributions(secure):
    source = RandomSource(0, secure_mode=secure)
    u = source.uniform(20_000)
    assert u.dtype == np.float64 and u.min() > 0 and u.max() <= 1
    assert abs(u.mean() - 0.5) < 0.02
    z = source.normal(20_001, 2.0)  # odd size: Box-Muller pairs are trimmed
    assert z.shape == (20_001,) and z.dtype == torch.float32
    assert abs(float(z.mean())) < 0.1 and float(z.std()) == pytest.approx(2.0, rel=0.05)
    assert source.normal((3, 4), 1.0, dtype=torch.float64).shape == (3, 4)
    perm = source.permutation(100)
    np.testing.assert_array_equal(np.sort(perm), np.arange(100))
    assert isinstance(source.torch_seed(), int)


def test_secure_mode_is_not_reproducible():
    a, b = RandomSource(0, secure_mode=True), RandomSource(0, secure_mode=True)
    assert a.seed is None and a.cpu_generator is None
    assert not np.array_equal(a.uniform(10), b.uniform(10))
    assert not torch.equal(a.normal(10, 1.0), b.normal(10, 1.0))
    first, second = PoissonSampler(1000, 0.1, a).sample(2)
    assert not np.array_equal(first, second)


# ---------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------
def test_poisson_batch_size_distribution():
    n, q, draws = 2000, 0.05, 400
    sampler = PoissonSampler(n, q, RandomSource(0))
    batches = sampler.sample(draws)
    assert len(batches) == draws
    sizes = np.array([len(b) for b in batches])
    mean, var = q * n, n * q * (1 - q)
    # the sample mean has standard error sqrt(var / draws) ~ 0.49: 5 standard errors
    assert abs(sizes.mean() - mean) < 5 * math.sqrt(var / draws)
    # the sample variance has relative standard error ~ sqrt(2 / draws) ~ 7%
    assert 0.7 * var < sizes.var(ddof=1) < 1.3 * var
    for b in batches:
        assert b.dtype.kind == "i"
        assert np.all(np.diff(b) > 0)  # sorted and unique
        assert b.size == 0 or (b[0] >= 0 and b[-1] < n)
    # every row is equally likely: inclusion counts are Binomial(draws, q)
    counts = np.bincount(np.concatenate(batches), minlength=n)
    assert abs(counts.mean() - q * draws) < 0.5
    assert counts[0] > 0 and counts[-1] > 0  # both ends reachable


def test_poisson_edge_cases():
    everything = PoissonSampler(37, 1.0, RandomSource(0))
    (batch,) = everything.sample()
    np.testing.assert_array_equal(batch, np.arange(37))
    assert everything.steps_per_epoch == 1
    tiny = PoissonSampler(10, 1e-4, RandomSource(0))
    batches = tiny.sample(50)
    assert len(batches) == 50 and sum(map(len, batches)) < 5  # empty batches are steps too
    sampler = PoissonSampler(1000, 0.03, RandomSource(0))
    assert sampler.expected_batch_size == pytest.approx(30.0)
    assert sampler.steps_per_epoch == 34
    assert len(list(sampler.epoch())) == 34
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="sampling_rate"):
            PoissonSampler(10, bad, RandomSource(0))


def test_poisson_seeded_is_reproducible():
    a = PoissonSampler(500, 0.1, RandomSource(3))
    b = PoissonSampler(500, 0.1, RandomSource(3))
    for x, y in zip(a.sample(5), b.sample(5)):
        np.testing.assert_array_equal(x, y)
    assert len(list(a.epoch())) == a.steps_per_epoch == 10


def test_shuffled_batches_cover_each_epoch_once():
    sampler = ShuffledBatches(23, 5, RandomSource(0))
    assert sampler.steps_per_epoch == 5 and sampler.expected_batch_size == 5.0
    epochs = [list(sampler.epoch()) for _ in range(2)]
    for batches in epochs:
        assert [len(b) for b in batches] == [5, 5, 5, 5, 3]
        np.testing.assert_array_equal(np.sort(np.concatenate(batches)), np.arange(23))
    assert not all(np.array_equal(a, b) for a, b in zip(*epochs))  # reshuffled
    assert ShuffledBatches(4, 10, RandomSource(0)).batch_size == 4


@pytest.mark.parametrize(
    "event",
    [
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(0.0075, dp_accounting.GaussianDpEvent(1.1)), 5320
        ),
        dp_accounting.ComposedDpEvent(
            [
                dp_accounting.GaussianDpEvent(40.0),
                dp_accounting.NoOpDpEvent(),
                dp_accounting.SelfComposedDpEvent(
                    dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(3.0)),
                    17,
                ),
                dp_accounting.LaplaceDpEvent(2.0),
            ]
        ),
    ],
    ids=["sampled-steps", "nested"],
)
def test_cached_rdp_curves_equal_rdp_accountant(event):
    """epsilon_spent's memoised RDP composition gives dp-accounting's own numbers."""
    from dp_accounting.rdp import RdpAccountant

    reference = RdpAccountant()
    reference.compose(event)
    for delta in (1e-5, 1e-8):
        assert epsilon_spent(event, delta).epsilon == pytest.approx(
            reference.get_epsilon(delta), rel=1e-12
        )
