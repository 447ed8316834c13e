"""Privacy mutants the rest of the suite let through: each test fails on one of them.

(a) The engine sums the dual (W) per-sample rows without clipping them at
    ``problem.dual_clip``: the W noise is then calibrated to a sensitivity the
    release does not have.
(b) RaCO-DP's histogram noise is smaller than the noise the accountant assumes
    (e.g. its standard deviation halved in ``privatize`` or ``histogram_scale``).

The noise checks compare the empirical noise of the real ``RacoProblem.privatize``
of a real fit with the scale read back from the fit's DP event, by exact
distributions (chi-square, gamma): a correct implementation fails with a stated
probability far below 1e-4 whatever the seed, and a halved scale fails always.
"""

import dp_accounting
import numpy as np
import pytest
import torch
from conftest import make_biased_data
from scipy import stats
from torch import nn

import skfairdp.fermi.problem as fermi_core
from skfairdp.engine import NoiseConfig, train
from skfairdp.fermi import DPFermiClassifier
from skfairdp.fermi.problem import ErmiProblem
from skfairdp.privacy import RandomSource
from skfairdp.raco import RaCODPClassifier
from skfairdp.raco.problem import RacoProblem

# These fits are run for their noise and clipping, not their accuracy (tiny data, large
# noise or step sizes): a warning that the fitted model is degenerate is expected here.
pytestmark = pytest.mark.filterwarnings(r"ignore:\w+Classifier. the fitted model:UserWarning")


def _manual_clipped_sum(rows: torch.Tensor, clip: float) -> torch.Tensor:
    """``sum_i min(1, C / ||r_i||) r_i`` in float64 (written out, not the engine's helper)."""
    rows = rows.double()
    norms = torch.linalg.vector_norm(rows, dim=1)
    factors = torch.where(norms > clip, clip / norms, torch.ones_like(norms))
    return (factors.unsqueeze(1) * rows).sum(0)


# ---------------------------------------------------------------------------
# (a) the loop clips the dual rows at problem.dual_clip
# ---------------------------------------------------------------------------
class _FixedBatches:
    def __init__(self, batches, expected_batch_size):
        self.batches = [np.asarray(b, dtype=np.int64) for b in batches]
        self.expected_batch_size = float(expected_batch_size)
        self.steps_per_epoch = len(self.batches)

    def epoch(self):
        yield from self.batches


class _FactoredRows:
    """Per-sample rows behind the ``norms()`` / ``weighted_sum()`` protocol only."""

    def __init__(self, rows):
        self.rows = rows

    def norms(self):
        return torch.linalg.vector_norm(self.rows, dim=1)

    def weighted_sum(self, weights):
        return weights @ self.rows


class _DualRowsProblem:
    """A zero primal objective and fixed dual rows of known, mostly large, norms."""

    private_primal = (True,)

    def __init__(self, rows, dual_clip, public=None, factored=False):
        self.rows = rows
        self.dual_clip = dual_clip
        self.public = public
        self.factored = factored
        self.received = []

    def prepare_batch(self, index):
        return (index,)

    def primal_objectives(self, outputs, index):
        zero = 0.0 * outputs.sum(1)
        return (zero,), {"zero": zero.detach()}

    def dual_contributions(self, outputs, index):
        rows = self.rows.index_select(0, index)
        return self.public, _FactoredRows(rows) if self.factored else rows

    def dual_step(self, gradient):
        self.received.append(gradient.clone())


# Row norms 0, 0.5, 1, 3, 40 and 1000 around a clip of 1.5 (some bind, some do not).
_NORMS = torch.tensor([0.0, 0.5, 1.0, 3.0, 40.0, 1000.0, 2.0, 7.5])


def _rows(dim=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    directions = torch.randn(len(_NORMS), dim, generator=gen, dtype=torch.float64)
    directions /= torch.linalg.vector_norm(directions, dim=1, keepdim=True)
    return (directions * _NORMS.double().unsqueeze(1)).float()


@pytest.mark.parametrize("factored", [False, True], ids=["dense", "factored"])
@pytest.mark.parametrize("with_public", [False, True], ids=["private-only", "with-public"])
def test_loop_clips_dual_rows_at_dual_clip(factored, with_public):
    """With zero dual noise, each dual step receives exactly (public + clipped sum) / m."""
    rows, clip, m = _rows(), 1.5, 4.0
    public = torch.tensor([5.0, -3.0, 0.0, 1.0, 2.0, 0.5]) if with_public else None
    problem = _DualRowsProblem(rows, clip, public=public, factored=factored)
    batches = [[0, 1, 2, 3], [4, 5], [], [6, 7, 4], list(range(8))]
    module = nn.Linear(3, 2)
    train(
        module,
        torch.randn(len(_NORMS), 3),
        (torch.arange(len(_NORMS)),),
        problem,
        sampler=_FixedBatches(batches, m),
        optimizer=torch.optim.SGD(module.parameters(), lr=0.1),
        noise=NoiseConfig(max_grad_norm=1.0, primal_multiplier=0.0, dual_multiplier=0.0),
        random=RandomSource(0),
        max_epochs=1,
    )
    assert len(problem.received) == len(batches)
    for batch, gradient in zip(batches, problem.received):
        index = torch.as_tensor(batch, dtype=torch.long)
        clipped = _manual_clipped_sum(rows[index], clip)
        expected = (clipped + (public.double() if public is not None else 0.0)) / m
        torch.testing.assert_close(gradient.double(), expected, rtol=1e-6, atol=1e-6)
        # the private part's sensitivity: each row moves it by at most the clip
        private_part = gradient.double() * m - (public.double() if public is not None else 0.0)
        assert float(torch.linalg.vector_norm(private_part)) <= len(batch) * clip + 1e-5
    # the mutant's plain sum is far off on the batches holding a long row
    plain = rows[torch.as_tensor(batches[1])].double().sum(0) / m
    assert float(torch.linalg.vector_norm(plain - problem.received[1].double())) > 100


@pytest.mark.parametrize(
    "params, must_bind",
    [
        ({"privacy_unit": "record"}, True),
        ({"privacy_unit": "record", "fairness": "equalized_odds"}, True),
        ({"privacy_unit": "record", "factored": True}, True),
        # the own rows are within the clip by construction: a structural check only
        ({"privacy_unit": "sensitive"}, False),
    ],
    ids=["record-dense", "record-eo", "record-factored", "sensitive"],
)
def test_dpfermi_dual_step_gets_clipped_rows_plus_accounted_noise(monkeypatch, params, must_bind):
    """Through a real fit: every W step is (public + rows clipped at dual_clip + the step's
    W noise of std dual_noise_multiplier_ * dual_clip) / m, exactly.

    A large ball and step size push W far from 0 and from the independence optimum,
    where a record-unit row is longer than ``dual_clip``: there the loop must clip.
    """
    params = dict(params)
    factored_rows = params.pop("factored", False)
    if factored_rows:
        # ErmiProblem reads it from skfairdp._fermi_core, where it lives
        monkeypatch.setattr(fermi_core, "DENSE_W_LIMIT", 0)  # W's rows stay factored
    X, y, s = make_biased_data(n=400, seed=0)
    draws, pending, steps, factored = [], [], [], []
    original_normal = RandomSource.normal
    original_contributions = ErmiProblem.dual_contributions
    original_step = ErmiProblem.dual_step

    def normal(self, shape, std, dtype=torch.float32):
        out = original_normal(self, shape, std, dtype)
        draws.append((std, out.clone()))
        return out

    def dual_contributions(self, outputs, *batch):
        result = original_contributions(self, outputs, *batch)
        public, rows = result
        factored.append(not isinstance(rows, torch.Tensor))
        dense = (rows if isinstance(rows, torch.Tensor) else rows.dense()).double()
        norms = torch.linalg.vector_norm(dense, dim=1)
        pending.append(
            {
                "public": public.double() if public is not None else 0.0,
                "clipped": _manual_clipped_sum(dense, self.dual_clip),
                "plain": dense.sum(0),
                "max_norm": float(norms.max()) if len(norms) else 0.0,
                "rows": len(norms),
            }
        )
        return result

    def dual_step(self, gradient):
        steps.append((gradient.clone().double(), pending[-1], draws[-1], self.dual_clip))
        original_step(self, gradient)

    monkeypatch.setattr(RandomSource, "normal", normal)
    monkeypatch.setattr(ErmiProblem, "dual_contributions", dual_contributions)
    monkeypatch.setattr(ErmiProblem, "dual_step", dual_step)
    est = DPFermiClassifier(
        fairness_weight=5.0,
        epsilon=5.0,
        lr_dual=20.0,
        dual_bound=50.0,
        batch_size=100,
        max_epochs=3,
        random_state=0,
        **params,
    ).fit(X, y, sensitive_features=s)
    m = 100.0  # expected Poisson batch size: rate 100 / 400 times n
    assert any(factored) == factored_rows  # the path under test was taken
    assert len(steps) == est.n_steps_ == 12
    largest_gap = 0.0
    for gradient, part, (std, noise), clip in steps:
        assert std == pytest.approx(est.dual_noise_multiplier_ * clip, rel=1e-12)
        assert noise.shape == gradient.shape
        expected = (part["public"] + part["clipped"] + noise.double()) / m
        scale = (part["rows"] * clip + float(torch.linalg.vector_norm(noise))) / m
        torch.testing.assert_close(gradient, expected, rtol=1e-4, atol=1e-5 * scale)
        gap = float(torch.linalg.vector_norm(part["plain"] - part["clipped"])) / m
        largest_gap = max(largest_gap, gap / scale)
        if not must_bind:
            assert part["max_norm"] <= clip * (1 + 1e-5)
    if must_bind:
        # rows longer than the clip occurred, and clipping them moved a step by far more
        # than the tolerance above: an unclipped sum fails the comparison
        assert max(part["max_norm"] / clip for _, part, _, clip in steps) > 5
        assert largest_gap > 1e-2


# ---------------------------------------------------------------------------
# (b) RaCO-DP's histogram noise has the scale the accountant assumes
# ---------------------------------------------------------------------------
# Per check, a correct implementation fails with probability ALPHA (two-sided, exact
# distributions below); each test makes at most two checks, so a correct fit fails a
# test with probability <= 2e-6 < 1e-4 (seeded fits are deterministic anyway; the
# bound is what holds for any seed and in secure mode).
ALPHA = 1e-6


def _event_leaves(event):
    if isinstance(event, dp_accounting.SelfComposedDpEvent | dp_accounting.PoissonSampledDpEvent):
        return _event_leaves(event.event)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return [leaf for e in event.events for leaf in _event_leaves(e)]
    return [event]


def _accounted_histogram_scale(est):
    """The histogram's noise per cell (sensitivity 1) as the fit's DP event accounts it.

    Gaussian: gradient and histogram form one Gaussian mechanism of multiplier
    ``z_eff = (z_grad^-2 + z_hist^-2)^-1/2``, so ``z_hist = (z_eff^-2 - z_grad^-2)^-1/2``.
    Laplace: the event's Laplace release; its scale over the L1 sensitivity 1.
    """
    leaves = _event_leaves(est.dp_event_)
    if est.histogram_noise == "gaussian":
        (gaussian,) = leaves
        z_eff, z_grad = gaussian.noise_multiplier, est.noise_multiplier_
        return (z_eff**-2 - z_grad**-2) ** -0.5
    (laplace,) = [e for e in leaves if isinstance(e, dp_accounting.LaplaceDpEvent)]
    return laplace.noise_multiplier


def _check_noise_scale(noise: np.ndarray, scale: float, kind: str):
    """Exact two-sided test at level ALPHA of ``noise`` ~ iid N(0, scale^2) or Laplace(0, scale).

    Gaussian: ``sum x^2 / scale^2 ~ chi2(N)``. Laplace: ``|x| / scale ~ Exp(1)``, so
    ``sum |x| / scale ~ Gamma(N, 1)``. With N >= 2000 the acceptance band of the
    scale is within +-12% (asserted), so a scale 20% off is rejected all but surely
    and a halved one (statistic at 1/4 or 1/2 of its expectation) with probability
    > 1 - 1e-12 (also asserted: the design cannot silently lose its power).
    """
    n = noise.size
    assert n >= 2000
    if kind == "gaussian":
        statistic = float(np.sum(noise.astype(np.float64) ** 2)) / scale**2
        dist, power = stats.chi2(n), 2  # statistic scales as scale^2
    else:
        statistic = float(np.sum(np.abs(noise.astype(np.float64)))) / scale
        dist, power = stats.gamma(n), 1
    lo, hi = dist.ppf(ALPHA / 2), dist.ppf(1 - ALPHA / 2)
    # the band on the scale itself, and the chance that a halved scale passes
    assert (lo / dist.mean()) ** (1 / power) > 0.88 and (hi / dist.mean()) ** (1 / power) < 1.12
    assert dist.sf(lo / 0.5**power) < 1e-12
    assert lo <= statistic <= hi, (
        f"{kind} noise: statistic {statistic:.1f} outside [{lo:.1f}, {hi:.1f}] for N={n}; "
        f"empirical scale / accounted scale = {(statistic / dist.mean()) ** (1 / power):.3f}"
    )


@pytest.mark.parametrize("secure_mode", [False, True], ids=["seeded", "secure"])
@pytest.mark.parametrize("histogram_noise", ["gaussian", "laplace"])
def test_raco_histogram_noise_has_the_accounted_scale(monkeypatch, histogram_noise, secure_mode):
    """The real privatize of a real fit adds noise of the scale the DP event accounts."""
    X, y, s = make_biased_data(n=100, seed=1, strength=1.0)
    releases = []
    original = RacoProblem.privatize

    def privatize(self, H):
        out = original(self, H)
        releases.append((self, H.detach().double().clone(), out.detach().double().clone()))
        return out

    monkeypatch.setattr(RacoProblem, "privatize", privatize)
    est = RaCODPClassifier(
        epsilon=4.0,
        histogram_noise=histogram_noise,
        batch_size=10,
        max_epochs=50,
        enforce_tolerance=False,  # its check after training: tests/test_raco_enforcement.py
        random_state=None if secure_mode else 0,
        secure_mode=secure_mode,
    ).fit(X, y, sensitive_features=s)
    scale = _accounted_histogram_scale(est)
    assert scale == pytest.approx(est.histogram_noise_multiplier_, rel=1e-9)
    assert len(releases) == est.n_steps_ == 500
    problem = releases[0][0]
    assert all(p is problem for p, _, _ in releases)
    # 1. the 500 releases of the fit: 2 parts x 2 classes = 4 noisy cells each
    noise = torch.stack([out - H for _, H, out in releases]).numpy()
    assert noise.shape == (500, 2, 2)
    _check_noise_scale(noise.ravel(), scale, histogram_noise)
    # 2. more releases of the fitted problem's own privatize, for a sharper check
    H = torch.zeros(100, 100)
    extra = (original(problem, H) - H).numpy()
    _check_noise_scale(extra.ravel(), scale, histogram_noise)
