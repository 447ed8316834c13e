"""PLD accounting at least as tight as RDP wherever the library uses it, and still sound (issue 35).

dp-accounting's pessimistic PLD is an upper bound at any grid, but on the fixed grid 1e-3
it was looser than RDP for many steps of small loss (sigma 3, q 0.001, 50,000 steps, delta
1e-5: 0.402 against RDP's 0.283), so ``privacy_unit="sensitive"`` (PLD by default) added
more noise than it needed. :func:`~skfairdp.privacy.accountant.pld_discretization` now
picks the grid per event (doc/privacy.md, "PLD discretisation").
"""

from __future__ import annotations

import itertools
import math

import dp_accounting as dp
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy.special import ndtr

import skfairdp.privacy.accountant as accountant
from skfairdp.privacy import calibrate_noise_multiplier, epsilon_spent

#: PLD may exceed RDP by this relative slack (both are upper bounds; RDP's conversion is
#: looser, so in practice PLD is below it everywhere on the grid: at most 0.961 of it).
SLACK = 1e-3
GOLDEN = dp.SelfComposedDpEvent(dp.PoissonSampledDpEvent(0.001, dp.GaussianDpEvent(3.0)), 50_000)


def steps(q: float, sigma: float, count: int) -> dp.DpEvent:
    return dp.SelfComposedDpEvent(dp.PoissonSampledDpEvent(q, dp.GaussianDpEvent(sigma)), count)


def pld(event, delta, unit="record") -> float:
    return epsilon_spent(event, delta, accountant="pld", privacy_unit=unit).epsilon


def rdp(event, delta) -> float:
    return epsilon_spent(event, delta, accountant="rdp").epsilon


@pytest.fixture
def fixed_grid(monkeypatch):
    """The accounting before issue 35: every PLD on the grid 1e-3."""
    monkeypatch.setattr(accountant, "pld_discretization", lambda event, unit="record": 1e-3)


def test_golden_case_is_tighter_than_rdp():
    """The issue's case: 0.402 on the fixed grid, RDP 0.283, converged PLD 0.2557."""
    assert rdp(GOLDEN, 1e-5) == pytest.approx(0.28256, abs=1e-4)
    assert pld(GOLDEN, 1e-5) == pytest.approx(0.2566, abs=1e-3)
    assert pld(GOLDEN, 1e-5) >= 0.2557  # the grid-converged value (1e-5 grid): still above it


def test_the_fixed_grid_fails_the_golden_case(fixed_grid):
    """The checks here can fail: the old grid is 42 % above RDP on the golden case."""
    assert pld(GOLDEN, 1e-5) == pytest.approx(0.40234, abs=1e-4)
    assert pld(GOLDEN, 1e-5) > rdp(GOLDEN, 1e-5) * (1 + SLACK)


#: DP-SGD fits: q 1e-4..0.2, sigma 0.5..20, 10..100,000 steps, delta 1e-5 and 1e-8. Cases
#: whose RDP epsilon exceeds 100 are left out (no fit is calibrated there; they are the
#: slowest, and PLD is far below RDP in them: benchmarks/results/pld_discretisation.md).
GRID = list(itertools.product((1e-4, 1e-3, 1e-2, 0.05, 0.2), (0.5, 1.0, 3.0, 10.0, 20.0),
                              (10, 1000, 100_000)))  # fmt: skip


def test_pld_is_at_least_as_tight_as_rdp_on_dp_sgd_events():
    looser = []
    for q, sigma, count in GRID:
        event = steps(q, sigma, count)
        bounds = [rdp(event, delta) for delta in (1e-5, 1e-8)]
        if bounds[0] > 100:
            continue
        acc = accountant.make_accountant("pld", "record", event)
        acc.compose(event)
        for delta, bound in zip((1e-5, 1e-8), bounds, strict=True):
            value = acc.get_epsilon(delta)
            if value > bound * (1 + SLACK) + 1e-9:
                looser.append((q, sigma, count, delta, value, bound))
    assert not looser, looser


@pytest.mark.parametrize(
    "extra",
    [dp.GaussianDpEvent(5.0), dp.GaussianDpEvent(0.8), dp.LaplaceDpEvent(20.0),
     dp.LaplaceDpEvent(1.0), dp.SelfComposedDpEvent(dp.GaussianDpEvent(50.0), 10)],
    ids=["gaussian-5", "gaussian-0.8", "laplace-20", "laplace-1", "10-gaussians-50"],
)  # fmt: skip
@pytest.mark.parametrize("dpsgd", [GOLDEN, steps(0.01, 1.0, 1000)], ids=["golden", "q0.01"])
def test_pld_is_at_least_as_tight_as_rdp_with_closed_form_releases(extra, dpsgd):
    event = dp.ComposedDpEvent([dpsgd, extra])
    for delta in (1e-5, 1e-8):
        assert pld(event, delta) <= rdp(event, delta) * (1 + SLACK)


def exact_gaussian_epsilon(z: float, delta: float) -> float:
    """Balle & Wang's exact epsilon of one Gaussian release (multiplier ``z``) at ``delta``."""

    def delta_at(eps: float) -> float:
        return ndtr(0.5 / z - eps * z) - math.exp(eps) * ndtr(-0.5 / z - eps * z)

    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta_at(mid) > delta else (lo, mid)
    return hi


UPPER_CASES = [
    (0.001, 3.0, 50_000),
    (0.0001, 1.0, 100_000),
    (0.0001, 20.0, 1000),
    (0.05, 1.0, 1000),
]


@pytest.mark.parametrize(("q", "sigma", "count"), UPPER_CASES)
@pytest.mark.parametrize("unit", ["record", "sensitive"])
def test_pld_stays_an_upper_bound(q, sigma, count, unit):
    """Never below dp-accounting's optimistic PLD on a fine grid (a lower bound on the true
    epsilon) of the same event (privacy buckets rounded down on the grid 1e-4)."""
    relation = accountant.neighboring_relation(unit)
    lower = pld_lib.from_gaussian_mechanism(
        sigma, sampling_prob=q, pessimistic_estimate=False, value_discretization_interval=1e-4,
        use_connect_dots=False, neighboring_relation=relation,
    ).self_compose(count)  # fmt: skip
    for delta in (1e-5, 1e-8):
        assert pld(steps(q, sigma, count), delta, unit) >= lower.get_epsilon_for_delta(delta)


@pytest.mark.parametrize("z", [0.6, 1.0, 3.0, 10.0])
def test_one_gaussian_release_stays_above_the_exact_epsilon(z):
    for delta in (1e-5, 1e-8):
        event = dp.GaussianDpEvent(z)
        assert pld(event, delta) >= exact_gaussian_epsilon(z, delta) - 1e-12
        # a single release keeps the 1e-3 grid: PrivateMetricFrame's multipliers are unchanged
        assert accountant.pld_discretization(event) == 1e-3


def test_grid_is_never_coarser_than_before_and_unknown_events_keep_it():
    assert accountant.pld_discretization(GOLDEN) == pytest.approx(6.856e-05, rel=1e-3)
    assert accountant.pld_discretization(GOLDEN, "sensitive") == pytest.approx(1.335e-4, rel=1e-3)
    for q, sigma, count in GRID:
        grid = accountant.pld_discretization(steps(q, sigma, count))
        assert accountant.PLD_MIN_DISCRETIZATION <= grid <= accountant.PLD_DISCRETIZATION
    unknown = dp.ComposedDpEvent([GOLDEN, dp.RandomizedResponseDpEvent(0.5, 2)])
    assert accountant.pld_discretization(unknown, "sensitive") == 1e-3
    # no Laplace PLD under replace-one: the grid falls back, dp-accounting's error stands
    laplace = dp.ComposedDpEvent([GOLDEN, dp.LaplaceDpEvent(1.0)])
    assert accountant.pld_discretization(laplace, "sensitive") == 1e-3
    with pytest.raises(dp.UnsupportedEventError):
        epsilon_spent(laplace, 1e-5, privacy_unit="sensitive")


CALIBRATION = (1.0, 1e-5, lambda z: steps(0.001, z, 50_000))


def test_replace_one_calibration_needs_no_more_noise(monkeypatch):
    """privacy_unit='sensitive' (PLD): the smallest multiplier for epsilon 1 at q 0.001 over
    50,000 steps is 1.69 on the per-event grid against 1.79 on the fixed grid (5.5 % less
    noise); both events spend at most epsilon 1 under the accounting that priced them."""
    target, delta, make = CALIBRATION
    new = calibrate_noise_multiplier(target, delta, make, accountant="pld",
                                     privacy_unit="sensitive")  # fmt: skip
    assert pld(make(new), delta, "sensitive") <= target
    monkeypatch.setattr(accountant, "pld_discretization", lambda event, unit="record": 1e-3)
    old = calibrate_noise_multiplier(target, delta, make, accountant="pld",
                                     privacy_unit="sensitive")  # fmt: skip
    assert new <= old
    assert new == pytest.approx(1.6914, abs=1e-3)
    assert old == pytest.approx(1.7891, abs=1e-3)
