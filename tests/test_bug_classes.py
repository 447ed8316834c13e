"""Regression tests for the bug classes other DP libraries shipped (2023-2026), one per class.

Each test is named for the peer bug it guards against and fails on a deliberately broken
copy of our code (a mutant of ``tests/mutants/privacy_mutants.py`` whose ``focus`` is
this file; ``python tools/mutation_score.py --only <name>`` shows it caught).

1. Opacus #571 / #819: the update normalised by the *realised* batch size (or by a
   size derived from the private data) leaks the dataset size; at n = 2-10 neighbours
   become almost fully distinguishable.
2. diffprivlib #105: a sensitivity derived from bounds that is 0 (or too small) for
   some bounds, e.g. when the lower bound is 0.
3. SmartNoise #622: clipped values computed, unclipped ones used.
4. OpenDP #2345 / #2708: an empty declared key (group, category, cell) filled with an
   exact 0 or dropped instead of noised like any other cell.
5. jax-privacy #84: the sampler the accountant assumes is not the sampler run.

The exact statistic a release noises is read at the one choke point every Gaussian
release passes (``finish_release`` in :mod:`skfairdp.privacy.mechanisms`, with the
noise draw of :meth:`RandomSource.normal` forced to zero when the exact value is
wanted), and the std the release draws is read from that draw; the worst case is
brute-forced here over neighbouring datasets, not read from the code under test.
Statistical checks have a false-failure probability below 1e-4 each (exact binomial
and chi-square tails, Bonferroni-split over the p-values of one test).
"""

from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest
import torch
from scipy import stats
from test_noise_conformance import check_scale, memoise_step_calibration, releases
from test_out_of_core_sampling import p_values

import skfairdp.engine.loop as engine_loop
import skfairdp.evaluation.table as evaluation_table
from skfairdp import DPSGDClassifier
from skfairdp.distributed.sharding import (
    ShardedPoissonSampler,
    contiguous_shards,
    sampling_source,
)
from skfairdp.engine import NoiseConfig, train
from skfairdp.evaluation import PrivateMetricFrame
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler
from skfairdp.privacy import EventRecorder, PoissonSampler, RandomSource, mechanisms

pytestmark = pytest.mark.filterwarnings("ignore")

ALPHA = 1e-4  # false-failure probability of each statistical test
# DP-SGD fits with a fixed multiplier (no calibration) and a budget no step exhausts
FIXED_NOISE = {"epsilon": 1e4, "noise_multiplier": 1.0}


class Tap:
    """Records every Gaussian release: the std it draws and the value it releases.

    With ``zero=True`` the noise draw returns zeros (the random stream is not moved),
    so ``released`` holds the exact statistics; otherwise real noise is drawn.
    """

    def __init__(self, monkeypatch, zero: bool = True):
        self.stds: list[float] = []
        self.released: list[np.ndarray] = []
        normal, finish = RandomSource.normal, mechanisms.finish_release
        tap = self

        def patched_normal(source, shape, std, dtype=torch.float32):
            tap.stds.append(float(std))
            if zero:
                shape = (shape,) if isinstance(shape, int) else tuple(shape)
                return torch.zeros(shape, dtype=dtype, device=source.device)
            return normal(source, shape, std, dtype)

        def patched_finish(*values):
            out = finish(*values)
            first = out[0] if isinstance(out, tuple) else out
            tap.released.append(first.detach().double().cpu().numpy().ravel().copy())
            return out

        monkeypatch.setattr(RandomSource, "normal", patched_normal)
        monkeypatch.setattr(mechanisms, "finish_release", patched_finish)

    def clear(self) -> None:
        self.stds.clear()
        self.released.clear()

    def one(self) -> tuple[np.ndarray, float]:
        """The only release since the last ``clear``: ``(value, std)``."""
        assert len(self.released) == 1 and len(self.stds) == 1, (self.released, self.stds)
        return self.released[0], self.stds[0]


def _single_z(event) -> float:
    ((z, q, count),) = releases(event)
    assert q == 1.0 and count == 1
    return z


def _cached_table_multiplier(monkeypatch) -> None:
    cached = {}
    original = evaluation_table.table_noise_multiplier

    def multiplier(epsilon, delta):
        if (epsilon, delta) not in cached:
            cached[epsilon, delta] = original(epsilon, delta)
        return cached[epsilon, delta]

    monkeypatch.setattr(evaluation_table, "table_noise_multiplier", multiplier)


# ---------------------------------------------------------------------------
# 1. Opacus #571 / #819: the normaliser is public, never the realised batch size
# ---------------------------------------------------------------------------
def _recorded_rate(event) -> float:
    """The one sampling rate of the PoissonSampledDpEvents in ``event``."""
    rates = set()

    def walk(e):
        if isinstance(e, dp_accounting.PoissonSampledDpEvent):
            rates.add(float(e.sampling_probability))
        for child in getattr(e, "events", ()) or ():
            walk(child)
        if isinstance(e, dp_accounting.SelfComposedDpEvent):
            walk(e.event)

    walk(event)
    assert len(rates) == 1, rates
    return rates.pop()


def _record_steps(monkeypatch) -> list[tuple[int, float, np.ndarray]]:
    """``(realised batch size, denominator, noised primal sum)`` of every engine step."""
    steps = []
    original = engine_loop.release

    def release(module, grads_of, Xb, *args, **kwargs):
        out = original(module, grads_of, Xb, *args, **kwargs)
        steps.append((int(Xb.shape[0]), float(out.denominator), out.primal.double().numpy()))
        return out

    monkeypatch.setattr(engine_loop, "release", release)
    return steps


def test_opacus_571_update_normalised_by_a_public_constant_at_n_2_to_10(monkeypatch):
    """Neighbouring datasets of 2..10 rows: the step divides by the public batch size.

    ``batch_size=1`` gives ``q = 1/n < 1`` at every n, so the normaliser ``q n`` must be
    the declared batch size 1 whatever n and whatever the realised (Poisson) batch
    holds; the update ``(sum + noise) / 1`` then has the same law on D and on D plus a
    row whose clipped gradient is 0. Dividing by the realised size (Opacus #819's
    per-batch mean) or by a size derived from the private data makes the scale of the
    update depend on n or on the batch, and fails here. (At ``batch_size >= n`` the
    rate is 1 and the normaliser is n itself: n is declared public in doc/privacy.md.)
    """
    steps = _record_steps(monkeypatch)
    rng = np.random.default_rng(0)
    X10 = rng.normal(size=(10, 2))
    y10 = np.array([0, 1] * 5)
    realised = set()
    for n in range(2, 11):
        steps.clear()
        est = DPSGDClassifier(**FIXED_NOISE, batch_size=1, max_epochs=4, random_state=n)
        est.fit(X10[:n], y10[:n])
        q = _recorded_rate(est.dp_event_)
        assert q == pytest.approx(1.0 / n, rel=1e-12)
        assert len(steps) == 4 * n
        for size, denominator, _ in steps:
            realised.add(size)
            assert denominator == pytest.approx(1.0, rel=1e-12), (n, size, denominator)
    # the test has teeth: the realised batches were empty, single and larger
    assert {0, 1} <= realised and max(realised) >= 2


class _ZeroGradientProblem:
    """Every row's objective is 0: its (clipped) gradient is exactly 0."""

    private_primal = (True,)

    def prepare_batch(self, index):
        return (index,)

    def primal_objectives(self, outputs, index):
        zero = 0.0 * outputs.sum(1)
        return (zero,), {"zero": zero.detach()}


def test_opacus_571_zero_gradient_row_leaves_the_update_law_unchanged(monkeypatch):
    """Neighbours of 3..10 rows, each row with a zero gradient, sampled as a fit samples
    (``PoissonSampler(n, b / n)``): every update is the noise over the public ``b``, of
    std ``z C / b`` whatever n and the realised batch (exact chi-square test over all n
    together; a realised-size normaliser inflates it by ~1.3x and fails).
    """
    steps = _record_steps(monkeypatch)
    b, C, z = 2, 0.5, 1.0
    updates = []
    for n in range(3, 11):
        module = torch.nn.Linear(2, 2)
        recorder = EventRecorder()
        train(
            module,
            torch.zeros(n, 2),
            (torch.arange(n),),
            _ZeroGradientProblem(),
            sampler=PoissonSampler(n, b / n, RandomSource(n)),
            optimizer=torch.optim.SGD(module.parameters(), lr=1.0),
            noise=NoiseConfig(max_grad_norm=C, primal_multiplier=z, dual_multiplier=0.0),
            random=RandomSource(100 + n),
            max_epochs=40,
            recorder=recorder,
        )
        assert _recorded_rate(recorder.build()) == pytest.approx(b / n, rel=1e-12)
        updates += [primal / denominator for _, denominator, primal in steps]
        steps.clear()
    check_scale(np.concatenate(updates), z * C / b, "zero-gradient updates, n = 3..10")


# ---------------------------------------------------------------------------
# 2. diffprivlib #105: bounds-derived sensitivities, fuzzed over the bounds
# ---------------------------------------------------------------------------
BOUNDS = {
    "zero-anchored": (0.0, 1.0),
    "zero-anchored-wide": (0.0, 100.0),
    "zero-top": (-5.0, 0.0),
    "negative-only": (-10.0, -2.0),
    "positive-only": (3.0, 7.0),
    "asymmetric": (-1.0, 1e6),
    "narrow": (1.0, 1.0 + 1e-9),
    "per-column": {0: (0.0, 2.0), 1: (-3.0, -1.0)},
}


def _lower_upper(bounds) -> tuple[np.ndarray, np.ndarray]:
    """The two columns' lower and upper bounds of a ``BOUNDS`` entry."""
    if isinstance(bounds, dict):
        return np.array([bounds[j][0] for j in (0, 1)]), np.array([bounds[j][1] for j in (0, 1)])
    return np.full(2, bounds[0]), np.full(2, bounds[1])


def _corner_values(lower: float, upper: float, missing: bool) -> list[float]:
    values = [lower, upper, (lower + upper) / 2, -1e12, 1e12]
    return values + [np.nan] if missing else values


def _brute_force_sensitivity(tap, fit, X, lower, upper, missing=False) -> tuple[float, float]:
    """``(worst L2 change of the exact release, std drawn)`` over D + one corner row and
    D with row 0 replaced by a corner row (halved: replace-one is two add/removes)."""
    tap.clear()
    fit(X)
    base, std = tap.one()
    worst = 0.0
    columns = [_corner_values(lo, hi, missing) for lo, hi in zip(lower, upper)]
    for row in itertools.product(*columns):
        for neighbour, factor in ((np.vstack([X, row]), 1.0), (np.vstack([row, X[1:]]), 0.5)):
            tap.clear()
            fit(neighbour)
            value, drawn = tap.one()
            assert drawn == std  # the noise does not depend on the data
            worst = max(worst, factor * float(np.linalg.norm(value - base)))
    return worst, std


def _data(bounds, n=8, seed=0, missing=False):
    rng = np.random.default_rng(seed)
    lo, hi = _lower_upper(bounds)
    X = lo + (hi - lo) * rng.uniform(size=(n, 2))
    if missing:
        X[1, 0] = np.nan
    return X


@pytest.mark.parametrize("bounds", list(BOUNDS.values()), ids=list(BOUNDS))
@pytest.mark.parametrize("which", ["scaler", "imputer-mean", "imputer-median"])
def test_diffprivlib_105_bounds_derived_sensitivity_covers_brute_force(monkeypatch, which, bounds):
    """The std drawn is at least z times the worst change of the released statistic over
    neighbours with a row at the bounds' corners (and beyond them, and missing)."""
    memoise_step_calibration(monkeypatch)
    tap = Tap(monkeypatch)
    lower, upper = _lower_upper(bounds)
    missing = which != "scaler"
    events = []

    def fit(X):
        if which == "scaler":
            est = DPStandardScaler(bounds=bounds, epsilon=1.0, random_state=0)
        else:
            est = DPSimpleImputer(strategy=which.split("-")[1], bounds=bounds, n_bins=4,
                                  epsilon=1.0, random_state=0)  # fmt: skip
        events.append(est.fit(X).dp_event_)

    X = _data(bounds, missing=missing)
    worst, std = _brute_force_sensitivity(tap, fit, X, lower, upper, missing)
    z = _single_z(events[0])
    assert worst > 0
    assert std >= z * worst * (1 - 1e-9), (which, bounds, std / z, worst)


@pytest.mark.parametrize("max_sample_weight", [1e-3, 0.5, 1.0, 3.0])
def test_diffprivlib_105_metric_frame_weight_bound(monkeypatch, max_sample_weight):
    """Weights in the zero-anchored ``[0, max_sample_weight]``: the table's noise covers a
    row of any weight in that range landing in any cell (brute force)."""
    _cached_table_multiplier(monkeypatch)
    tap = Tap(monkeypatch)
    rng = np.random.default_rng(2)
    n = 12
    t, p, s = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
    w = rng.uniform(0, max_sample_weight, n)

    def frame(t, p, s, w):
        tap.clear()
        f = PrivateMetricFrame(metrics="selection_rate", y_true=t, y_pred=p,
                               sensitive_features=s, sensitive_values=[0, 1], epsilon=1.0,
                               sample_weight=w, max_sample_weight=max_sample_weight,
                               delta=1e-6, n_draws=100, random_state=0)  # fmt: skip
        return (*tap.one(), f)

    base, std, f = frame(t, p, s, w)
    worst = 0.0
    for tt, pp, ss, ww in itertools.product((0, 1), (0, 1), (0, 1), (0.0, max_sample_weight)):
        value, drawn, _ = frame(np.r_[t, tt], np.r_[p, pp], np.r_[s, ss], np.r_[w, ww])
        assert drawn == std
        worst = max(worst, float(np.linalg.norm(value - base)))
    assert worst == pytest.approx(max_sample_weight)
    assert std >= _single_z(f.dp_event_) * worst * (1 - 1e-9)


# ---------------------------------------------------------------------------
# 3. SmartNoise #622: the clipped value is the one used
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("extreme", [1e12, -1e12])
@pytest.mark.parametrize("which", ["scaler", "imputer-mean", "imputer-median"])
def test_smartnoise_622_extreme_row_moves_release_by_at_most_sensitivity(
    monkeypatch, which, extreme
):
    """A planted row at +-1e12 moves the exact released statistic by at most the
    sensitivity the noise is drawn for (std / z), for every bounds of the fuzz set."""
    memoise_step_calibration(monkeypatch)
    tap = Tap(monkeypatch)
    for bounds in BOUNDS.values():
        X = _data(bounds, missing=which != "scaler")
        outs = []
        for data in (X, np.vstack([X, np.full(X.shape[1], extreme)])):
            tap.clear()
            if which == "scaler":
                est = DPStandardScaler(bounds=bounds, epsilon=1.0, random_state=0)
            else:
                est = DPSimpleImputer(strategy=which.split("-")[1], bounds=bounds, n_bins=4,
                                      epsilon=1.0, random_state=0)  # fmt: skip
            est.fit(data)
            outs.append((*tap.one(), _single_z(est.dp_event_)))
        (base, std, z), (planted, _, _) = outs
        moved = float(np.linalg.norm(planted - base))
        assert moved <= std / z * (1 + 1e-9), (which, bounds, moved, std / z)


def test_smartnoise_622_engine_uses_clipped_gradients(monkeypatch):
    """One full-batch DP-SGD step (q = 1): adding a row of features +-1e12 (either label)
    moves the noised gradient sum (noise forced to 0) by at most the clipping norm C."""
    Tap(monkeypatch)
    steps = _record_steps(monkeypatch)
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(20, 3)), np.array([0, 1] * 10)

    def step_sum(data, labels):
        steps.clear()
        est = DPSGDClassifier(**FIXED_NOISE, batch_size=64, max_epochs=1, max_grad_norm=0.5,
                              random_state=0)  # fmt: skip
        est.fit(data, labels)
        ((size, _, primal),) = steps
        assert size == len(data)
        return primal

    base, moves = step_sum(X, y), []
    for extreme, label in itertools.product((1e12, -1e12), (0, 1)):
        planted = step_sum(np.vstack([X, np.full(3, extreme)]), np.r_[y, label])
        moves.append(float(np.linalg.norm(planted - base)))
    assert max(moves) <= 0.5 * (1 + 1e-5), moves
    assert max(moves) > 0.25, moves  # the planted row's gradient is not zero: it was clipped


def test_smartnoise_622_metric_frame_refuses_an_out_of_bound_weight():
    """A weight of 1e12 above ``max_sample_weight`` is refused, never used as is."""
    rng = np.random.default_rng(4)
    t, p, s = rng.integers(0, 2, 10), rng.integers(0, 2, 10), rng.integers(0, 2, 10)
    w = np.ones(10)
    w[3] = 1e12
    with pytest.raises(ValueError, match="max_sample_weight"):
        PrivateMetricFrame(metrics="selection_rate", y_true=t, y_pred=p, sensitive_features=s,
                           epsilon=1.0, sample_weight=w, max_sample_weight=1.0)  # fmt: skip


def test_smartnoise_622_threshold_histogram_clips_scores(monkeypatch):
    """A row scoring 1e12 (or -1e12) outside ``score_range`` moves the exact histogram by
    one count: it lands in an end bin."""
    from test_postprocessing import ScoreColumn

    tap = Tap(monkeypatch)
    rng = np.random.default_rng(5)
    X, y, g = rng.uniform(size=(60, 1)), np.array([0, 1] * 30), rng.integers(0, 2, 60)
    outs = []
    for extra in (None, 1e12, -1e12):
        Xe, ye, ge = (X, y, g) if extra is None else (np.vstack([X, [[extra]]]), np.r_[y, 1],
                                                       np.r_[g, 0])  # fmt: skip
        tap.clear()
        DPThresholdOptimizer(ScoreColumn().fit(None), prefit=True, epsilon=1.0, n_bins=10,
                             predict_method="decision_function", score_range=(0.0, 1.0),
                             random_state=0).fit(Xe, ye, sensitive_features=ge)  # fmt: skip
        outs.append(tap.one()[0])
    for planted in outs[1:]:
        assert float(np.linalg.norm(planted - outs[0])) == pytest.approx(1.0)


# ---------------------------------------------------------------------------
# 4. OpenDP #2345 / #2708: an empty declared key is noised like any other
# ---------------------------------------------------------------------------
def _empty_cells_noise(values: list[np.ndarray], exact_zero: np.ndarray) -> np.ndarray:
    noise = np.concatenate([v[exact_zero] for v in values])
    assert np.all(noise != 0.0), "an empty cell was released as an exact 0"
    return noise


def test_opendp_2345_encoder_empty_categories_are_noised(monkeypatch):
    """98 declared categories without a row: their released counts are never exactly 0,
    are all present, and have the noise law of the non-empty counts (chi-square)."""
    memoise_step_calibration(monkeypatch)
    X = np.r_[np.zeros(30), np.ones(20)][:, None]
    declared = list(range(100))
    released, z = [], None
    for seed in range(25):
        est = DPOneHotEncoder([declared], epsilon=1.0, min_count=0.0, random_state=seed).fit(X)
        (counts,) = est.noisy_counts_
        assert counts.shape == (100,)
        released.append(counts - np.r_[30.0, 20.0, np.zeros(98)])
        z = _single_z(est.dp_event_)
    empty = _empty_cells_noise(released, np.arange(100) >= 2)
    check_scale(empty, z * 1.0, "empty categories")


def test_opendp_2708_metric_frame_declared_empty_groups_are_noised(monkeypatch):
    """``sensitive_values`` declares 40 groups, 2 have rows: the 38 empty groups keep
    their rows of the table, never exact zeros, with the noise law of a full cell."""
    _cached_table_multiplier(monkeypatch)
    rng = np.random.default_rng(6)
    n = 200
    t, p, s = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
    released, z = [], None
    for seed in range(20):
        f = PrivateMetricFrame(metrics="selection_rate", y_true=t, y_pred=p,
                               sensitive_features=s, sensitive_values=list(range(40)),
                               epsilon=1.0, n_draws=100, random_state=seed)  # fmt: skip
        table = f.table_.to_numpy()
        assert table.shape == (40, 4)
        released.append(table[2:].ravel())
        z = _single_z(f.dp_event_)
    empty = _empty_cells_noise(released, np.ones(152, dtype=bool))
    check_scale(empty, z * 1.0, "empty groups")


def test_opendp_2345_threshold_histogram_empty_cells_are_noised():
    """Scores in 2 of 50 bins: the empty (group, label, bin) cells of ``histogram_`` are
    released noised, never exactly 0, with the noise law of a full cell."""
    from test_postprocessing import ScoreColumn

    rng = np.random.default_rng(7)
    n = 300
    X = rng.choice([0.01, 0.99], size=(n, 1))
    y, g = rng.integers(0, 2, n), rng.integers(0, 3, n)
    exact = np.zeros((3, 2, 50))
    np.add.at(exact, (g, y, np.floor(X[:, 0] * 50).astype(int)), 1.0)
    released, z = [], None
    for seed in range(6):
        est = DPThresholdOptimizer(ScoreColumn().fit(None), prefit=True, epsilon=1.0,
                                   n_bins=50, score_range=(0.0, 1.0),
                                   random_state=seed).fit(X, y, sensitive_features=g)  # fmt: skip
        assert est.histogram_.shape == exact.shape
        released.append((est.histogram_ - exact).ravel())
        z = _single_z(est.dp_event_)
    empty = _empty_cells_noise(released, exact.ravel() == 0)
    check_scale(empty, z * 1.0, "empty histogram cells")


# ---------------------------------------------------------------------------
# 5. jax-privacy #84: the sampler run is the sampler the accountant prices
# ---------------------------------------------------------------------------
N, BATCH, EPOCHS = 40, 5, 250  # q = 1/8 recorded, 8 steps an epoch, 2000 steps


def _check_bernoulli(drawn: np.ndarray, q: float) -> None:
    """Rate, per-(row, step) rates, batch sizes, steps per row and a pair's co-inclusions
    all as independent Bernoulli(q) trials: five p-values, each above ALPHA / 5."""
    pv = p_values(drawn, q)
    flat = drawn.transpose(0, 2, 1).reshape(-1, drawn.shape[1])  # (steps, rows)
    both = int(np.sum(flat[:, 0] & flat[:, 1]))
    pv["pair"] = stats.binomtest(both, flat.shape[0], q * q).pvalue
    for name, p in pv.items():
        assert p > ALPHA / len(pv), (name, p)
    sizes = flat.sum(axis=1)
    assert sizes.min() < sizes.max()  # not fixed-size batches


def _fit_drawn(monkeypatch, X, y, epochs) -> tuple[np.ndarray, float]:
    """A DP-SGD fit whose first feature marks each row's index: ``(drawn, recorded q)``."""
    batches = []
    original = engine_loop.row_batches

    def row_batches(*args, **kwargs):
        for batch in original(*args, **kwargs):
            batches.append(np.rint(batch.X[:, 0].numpy()).astype(np.int64))
            yield batch

    monkeypatch.setattr(engine_loop, "row_batches", row_batches)
    est = DPSGDClassifier(**FIXED_NOISE, batch_size=BATCH, max_epochs=epochs, lr=1e-12,
                          random_state=0)  # fmt: skip
    est.fit(X, y)
    q = _recorded_rate(est.dp_event_)
    steps = est.n_steps_
    assert steps == epochs * math.ceil(1 / q) == len(batches)
    drawn = np.zeros((epochs, N, steps // epochs), dtype=bool)
    for k, idx in enumerate(batches):
        drawn[k // drawn.shape[2], idx, k % drawn.shape[2]] = True
    return drawn, q


def _marked(n=N):
    X = np.column_stack([np.arange(n, dtype=np.float64), np.zeros(n)])
    return X, np.arange(n) % 2


def test_jax_privacy_84_in_memory_sampler_matches_recorded_event(monkeypatch):
    X, y = _marked()
    drawn, q = _fit_drawn(monkeypatch, X, y, EPOCHS)
    assert q == pytest.approx(BATCH / N)
    _check_bernoulli(drawn, q)


def test_jax_privacy_84_out_of_core_sampler_matches_recorded_event(monkeypatch, tmp_path):
    """The Parquet path (bucketed passes) of a real fit, against its own dp_event_."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from skfairdp.data import ParquetSource

    X, y = _marked()
    table = pa.table({"idx": X[:, 0], "zero": X[:, 1], "y": y})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=15)
    source = ParquetSource(tmp_path / "t.parquet", target="y")
    source.batch_rows = 12
    drawn, q = _fit_drawn(monkeypatch, source, None, 120)
    assert q == pytest.approx(BATCH / N)
    _check_bernoulli(drawn, q)


def test_jax_privacy_84_sharded_sampler_matches_recorded_event(monkeypatch):
    """The data-parallel shards (3 ranks' streams, sampled in one process) at the rate the
    fit records for the same n and batch size: their union is Poisson at that rate."""
    X, y = _marked()
    _, q = _fit_drawn(monkeypatch, X, y, 1)
    shards = contiguous_shards(N, 3)
    random = RandomSource(0)
    sampler = ShardedPoissonSampler(
        [b - a for a, b in shards], q, [sampling_source(random, r) for r in range(3)], N
    )
    assert sampler.expected_batch_size == pytest.approx(BATCH)
    steps = sampler.steps_per_epoch
    drawn = np.zeros((EPOCHS, N, steps), dtype=bool)
    for e in range(EPOCHS):
        for s, idx in enumerate(sampler.epoch()):
            drawn[e, idx, s] = True
    _check_bernoulli(drawn, q)


def test_jax_privacy_84_checks_have_power():
    """A fixed-size shuffled batch of the same mean (what jax-privacy ran) is rejected."""
    rng = np.random.default_rng(8)
    drawn = np.zeros((EPOCHS, N, 8), dtype=bool)
    for e in range(EPOCHS):
        for s in range(8):
            drawn[e, rng.permutation(N)[:BATCH], s] = True
    with pytest.raises(AssertionError):
        _check_bernoulli(drawn, BATCH / N)
