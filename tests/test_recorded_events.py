"""Every fit's ``dp_event_`` is what its mechanisms recorded, and it is what calibration planned.

The mechanisms of :mod:`skfairdp.privacy.mechanisms` add noise and record the event
they executed; a fit's event is its recorder's. Here, for every estimator, that
recorded event is checked against the event calibration planned (captured by
spying on :mod:`skfairdp.privacy.calibration`) for the steps that ran: equal as
dp-accounting events, or of the same epsilon to 1e-9 where the structure
legitimately differs (a joint multiplier recomputed from the split ones, a
composition in another order, ``SelfComposed(x, 1)`` vs ``x``). Then: a fit stopped
early is charged its executed steps only, an empty Poisson batch is a step, and a
release whose noise is skipped leaves no event (mutants).
"""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
import torch
from conftest import make_biased_data
from torch import nn

import skfairdp.dpsgd.global_scaling as global_scaling
import skfairdp.engine.step as step
import skfairdp.fermi.priors as fermi
import skfairdp.privacy.sampling as sampling
from skfairdp import DPFermiClassifier, GlobalScalingDPClassifier, RaCODPClassifier
from skfairdp.baselines import DPSGDFClassifier, FairLensClassifier
from skfairdp.engine import NoiseConfig, train
from skfairdp.privacy import (
    EventRecorder,
    RandomSource,
    batch_event,
    calibration,
    epsilon_spent,
    gaussian_sum,
    noisy_count,
    noisy_histogram,
    sampled_gaussian_steps_event,
)
from skfairdp.privacy.joint import joint_sampled_event
from skfairdp.raco.problem import RacoProblem

G, L = dp_accounting.GaussianDpEvent, dp_accounting.LaplaceDpEvent
PS, SC = dp_accounting.PoissonSampledDpEvent, dp_accounting.SelfComposedDpEvent


# --------------------------------------------------------------------------- helpers
@pytest.fixture
def plans(monkeypatch):
    """Calls of the calibration routines: (kind, planned event of the parameter, value, account)."""
    calls = []
    noise, steps = calibration.calibrate_noise_multiplier, calibration.max_steps_within

    def spy_noise(target, delta, make_event, **account):
        z = noise(target, delta, make_event, **account)
        calls.append(("noise", make_event, z, account))
        return z

    def spy_steps(target, delta, make_event, cap, **account):
        t = steps(target, delta, make_event, cap, **account)
        calls.append(("steps", make_event, t, account))
        return t

    monkeypatch.setattr(calibration, "calibrate_noise_multiplier", spy_noise)
    monkeypatch.setattr(calibration, "max_steps_within", spy_steps)
    return calls


def _planned(plans):
    """The event planned by the (last) calibration call, and the accountant it used."""
    kind, make_event, value, account = plans[-1]
    return make_event(value), account


def _normalised(event):
    """Top-level parts composed by dp-accounting's builder (``SelfComposed(x, 1)`` -> ``x``)."""
    builder = dp_accounting.DpEventBuilder()
    for part in event.events if isinstance(event, dp_accounting.ComposedDpEvent) else [event]:
        builder.compose(part)
    return builder.build()


def _with_steps(event, steps):
    """``event`` with the count of its per-step part(s) set to ``steps``."""
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([_with_steps(e, steps) for e in event.events])
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return SC(event.event, steps)
    return event


def _step_count(event):
    """How many steps the (step part of the) recorded event holds."""
    if isinstance(event, dp_accounting.ComposedDpEvent):
        counts = [_step_count(e) for e in event.events if not isinstance(e, G)]
        assert len(set(counts)) == 1
        return counts[0]
    return event.count if isinstance(event, dp_accounting.SelfComposedDpEvent) else 1


def _assert_same(recorded, planned, delta, account, *, exact=False):
    """Equal events, or (``exact=False``) the same epsilon to 1e-9."""
    if recorded == _normalised(planned):
        return
    assert not exact, f"recorded {recorded}\n  planned {planned}"
    spent = epsilon_spent(recorded, delta, **account).epsilon
    assert spent == pytest.approx(epsilon_spent(planned, delta, **account).epsilon, rel=1e-9)


def _fit(est, X, y, s):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FairLens / paper-calibration warnings
        if isinstance(est, GlobalScalingDPClassifier):
            return est.fit(X, y)
        return est.fit(X, y, sensitive_features=s)


def _fit_account(est):
    account = {}
    if hasattr(est, "accountant"):
        account["accountant"] = est.accountant
    if hasattr(est, "privacy_unit"):
        account["privacy_unit"] = est.privacy_unit
    return account


@pytest.fixture(scope="module")
def data():
    return make_biased_data(n=400, seed=0)


FERMI = dict(epsilon=2.0, batch_size=64, max_epochs=2, random_state=0)
# the steps alone: fallback_to_constant's release after training left out (its own tests:
# test_constant_check.py; the planned-event test above keeps it)
FERMI_STEPS = {**FERMI, "fallback_to_constant": False}
EO_PRIORS = {0: [0.5, 0.5], 1: [0.4, 0.6]}
DPSGD = dict(epsilon=2.0, hidden_layer_sizes=(), max_epochs=2, batch_size=100, random_state=0)
# enforce_tolerance's check after training is tested by "raco-enforced"
RACO = dict(epsilon=3.0, batch_size=50, max_epochs=1, random_state=0, enforce_tolerance=False)

ESTIMATORS = {
    "fermi-dp-record": DPFermiClassifier(**FERMI),
    "fermi-dp-record-public": DPFermiClassifier(group_priors=[0.5, 0.5], **FERMI),
    "fermi-eo-record": DPFermiClassifier(fairness="equalized_odds", **FERMI),
    "fermi-eo-record-public": DPFermiClassifier(
        fairness="equalized_odds", group_priors=EO_PRIORS, **FERMI
    ),
    "fermi-dp-sensitive": DPFermiClassifier(privacy_unit="sensitive", **FERMI),
    "fermi-dp-sensitive-public": DPFermiClassifier(
        privacy_unit="sensitive", group_priors=[0.5, 0.5], **FERMI
    ),
    "fermi-eo-sensitive": DPFermiClassifier(
        privacy_unit="sensitive", fairness="equalized_odds", **FERMI
    ),
    "fermi-eo-sensitive-public": DPFermiClassifier(
        privacy_unit="sensitive", fairness="equalized_odds", group_priors=EO_PRIORS, **FERMI
    ),
    "raco-gaussian": RaCODPClassifier(**RACO),
    "raco-laplace": RaCODPClassifier(histogram_noise="laplace", **RACO),
    "raco-enforced": RaCODPClassifier(**{**RACO, "enforce_tolerance": True}),
    "raco-fixed-histogram": RaCODPClassifier(histogram_noise_multiplier=8.0, **RACO),
    "raco-fixed-noise-capped": RaCODPClassifier(
        epsilon=2.0,
        noise_multiplier=2.0,
        batch_size=10,
        max_epochs=50,
        random_state=0,
        enforce_tolerance=False,
    ),
    "raco-fixed-noise-laplace": RaCODPClassifier(
        epsilon=2.0,
        noise_multiplier=2.0,
        histogram_noise="laplace",
        batch_size=20,
        max_epochs=10,
        random_state=0,
        enforce_tolerance=False,
    ),  # fmt: skip
    "fermi-fixed-noise-capped": DPFermiClassifier(
        noise_multiplier=2.0, **{**FERMI, "max_epochs": 30}
    ),
    "gs-fixed-noise-capped-composed": GlobalScalingDPClassifier(
        noise_multiplier=2.0,
        calibration="paper",
        count_noise_multiplier=3.0,
        **{**DPSGD, "max_epochs": 30},
    ),  # fmt: skip
    "gs-adapt": GlobalScalingDPClassifier(**DPSGD),
    "gs-adapt-composed": GlobalScalingDPClassifier(
        calibration="paper", count_noise_multiplier=3.0, **DPSGD
    ),
    "gs-global": GlobalScalingDPClassifier(variant="global", z_init=3.0, **DPSGD),
    "gs-clip": GlobalScalingDPClassifier(variant="clip", **DPSGD),
    "dpsgdf": DPSGDFClassifier(lr=0.5, **DPSGD),
    "fairlens": FairLensClassifier(**{**DPSGD, "max_epochs": 1}),
}
# recorded == planned as dp-accounting events (elsewhere: a joint multiplier recomputed
# from its split parts, or a composition in another order: the same epsilon)
EXACT = {
    "raco-laplace",
    "raco-fixed-histogram",
    "raco-fixed-noise-capped",
    "raco-fixed-noise-laplace",
    "gs-global",
    "gs-clip",
    "fairlens",
}


# --------------------------------------------------------------------------- recorded == planned
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_recorded_event_is_the_planned_event(name, data, plans):
    X, y, s = data
    est = _fit(ESTIMATORS[name], X, y, s)
    planned, account = _planned(plans)
    delta = est.privacy_spent_.delta
    recorded = est.dp_event_
    assert _step_count(recorded) == est.n_steps_
    if "fixed-noise" in name:  # step capping: the plan is T(epsilon) steps
        assert plans[-1][0] == "steps" and plans[-1][2] == est.n_steps_
        assert est.noise_multiplier_ == est.noise_multiplier
        planned_steps = est.max_epochs * math.ceil(400 / est.batch_size)
        assert est.n_steps_ < planned_steps if "capped" in name else est.n_steps_ <= planned_steps
    assert est.privacy_spent_ == epsilon_spent(recorded, delta, **_fit_account(est))
    _assert_same(recorded, planned, delta, account, exact=name in EXACT)
    assert est.privacy_spent_.epsilon <= est.epsilon * (1 + 1e-9)
    # the per-epoch epsilon ends at the recorded event's, or below it by the release after
    # training (enforce_tolerance's check)
    check = getattr(est, "constant_check_", None)  # DP-FERMI's fallback_to_constant
    if getattr(est, "enforce_tolerance", False) or (check and check.noise_multiplier):
        assert isinstance(recorded.events[-1], G)
        assert est.history_[-1]["epsilon"] < est.privacy_spent_.epsilon
    else:
        assert est.history_[-1]["epsilon"] == est.privacy_spent_.epsilon
    eps = [row["epsilon"] for row in est.history_]
    assert eps == sorted(eps)


def test_fermi_releases_histogram_then_steps(data):
    """The up-front histogram is recorded when it runs, then the T joint steps."""
    X, y, s = data
    est = _fit(DPFermiClassifier(**FERMI_STEPS), X, y, s)
    hist, steps = est.dp_event_.events
    assert isinstance(hist, G) and isinstance(steps, SC) and steps.count == est.n_steps_
    q = 64 / 400
    z = (est.noise_multiplier_**-2 + est.dual_noise_multiplier_**-2) ** -0.5
    assert steps.event == PS(q, G(z))
    public = _fit(DPFermiClassifier(group_priors=[0.5, 0.5], **FERMI_STEPS), X, y, s)
    assert public.dp_event_ == SC(PS(q, G(public.effective_noise_multiplier_)), public.n_steps_)


@pytest.mark.parametrize("histogram_noise", ["gaussian", "laplace"])
def test_raco_paper_calibration_plans_the_separate_view(histogram_noise, data, plans):
    """calibration="paper": the plan is the authors' separate composition; ``paper_epsilon_``
    prices the same releases recorded that way, ``dp_event_`` the sound (joint) way."""
    X, y, s = data
    est = _fit(
        RaCODPClassifier(calibration="paper", histogram_noise=histogram_noise, **RACO), X, y, s
    )
    planned, account = _planned(plans)
    assert account == {"accountant": "pld"}
    delta = est.privacy_spent_.delta
    planned_eps = epsilon_spent(planned, delta, **account).epsilon
    assert est.paper_epsilon_ == pytest.approx(planned_eps, rel=1e-9)
    assert est.paper_epsilon_ <= est.epsilon * (1 + 1e-9)
    sound = est._event(est.noise_multiplier_, est.histogram_noise_multiplier_, 50 / 400, 8)
    _assert_same(est.dp_event_, sound, delta, {"accountant": est.accountant})
    assert est.privacy_spent_.epsilon > est.paper_epsilon_


def test_non_private_fits_record_a_non_private_event(data):
    X, y, s = data
    for est in (
        DPFermiClassifier(epsilon=np.inf, max_epochs=1),
        RaCODPClassifier(epsilon=np.inf, max_epochs=1),
        GlobalScalingDPClassifier(epsilon=np.inf, hidden_layer_sizes=(), max_epochs=1),
    ):
        est = _fit(est, X, y, s)
        assert isinstance(est.dp_event_, dp_accounting.NonPrivateDpEvent)
        assert est.privacy_spent_ == (math.inf, 0.0)


# --------------------------------------------------------------------------- early stop
class _StopAfter:
    """Raises KeyboardInterrupt at the end of epoch ``epochs`` (as skorch's EarlyStopping)."""

    def __init__(self, epochs):
        self.epochs, self.seen = epochs, 0

    def on_epoch_end(self, net, **kwargs):
        self.seen += 1
        if self.seen >= self.epochs:
            raise KeyboardInterrupt


@pytest.mark.parametrize(
    "est",
    [
        DPFermiClassifier(**{**FERMI_STEPS, "max_epochs": 4}),
        DPFermiClassifier(privacy_unit="sensitive", **{**FERMI, "max_epochs": 4}),
        RaCODPClassifier(histogram_noise="laplace", **{**RACO, "max_epochs": 4}),
        GlobalScalingDPClassifier(**{**DPSGD, "max_epochs": 4}),
        GlobalScalingDPClassifier(calibration="paper", **{**DPSGD, "max_epochs": 4}),
    ],
    ids=["fermi", "fermi-sensitive", "raco-laplace", "gs-adapt", "gs-composed"],
)
def test_early_stop_records_only_executed_steps(est, data, plans):
    X, y, s = data
    est = _fit(est.set_params(callbacks=[_StopAfter(2)]), X, y, s)
    planned, account = _planned(plans)
    planned_steps = _step_count(_normalised(planned))
    assert len(est.history_) == 2 and est.n_steps_ == planned_steps // 2
    assert _step_count(est.dp_event_) == est.n_steps_
    delta = est.privacy_spent_.delta
    _assert_same(est.dp_event_, _with_steps(planned, est.n_steps_), delta, account)
    assert est.privacy_spent_.epsilon < epsilon_spent(planned, delta, **account).epsilon
    assert est.history_[-1]["epsilon"] == est.privacy_spent_.epsilon


# --------------------------------------------------------------------------- empty batches
class _Problem:
    private_primal = (True,)
    dual_clip = 1.0

    def prepare_batch(self, y):
        return (y,)

    def primal_objectives(self, outputs, y):
        loss = nn.functional.cross_entropy(outputs, y, reduction="none")
        return (loss,), {"loss": loss}

    def dual_contributions(self, outputs, y):
        return None

    def dual_step(self, gradient):  # pragma: no cover
        pass


class _Batches:
    """Fixed batches, declared Poisson with rate ``sampling_rate``."""

    poisson = True

    def __init__(self, batches, sampling_rate, n):
        self.batches = [np.asarray(b, dtype=np.int64) for b in batches]
        self.sampling_rate = sampling_rate
        self.expected_batch_size = sampling_rate * n
        self.steps_per_epoch = len(self.batches)

    def epoch(self):
        yield from self.batches


def _train(sampler, noise, problem=None, recorder=None, max_epochs=1):
    torch.manual_seed(0)
    module = nn.Linear(4, 2)
    X, y = torch.randn(10, 4), torch.randint(0, 2, (10,))
    return train(
        module, X, (y,), problem or _Problem(), sampler=sampler,
        optimizer=torch.optim.SGD(module.parameters(), lr=0.1), noise=noise,
        random=RandomSource(0), max_epochs=max_epochs, recorder=recorder,
    )  # fmt: skip


def test_empty_batch_is_a_recorded_step():
    sampler = _Batches([[], [1, 2], [], [3]], 0.2, 10)
    result = _train(sampler, NoiseConfig(1.0, 2.0), max_epochs=2)
    assert result.steps == 8
    assert result.recorder.build() == SC(PS(0.2, G(2.0)), 8)
    assert result.epoch_events == [SC(PS(0.2, G(2.0)), 4), SC(PS(0.2, G(2.0)), 8)]
    # only Poisson sampling is amplified: any other sampler is recorded with q = 1
    sampler.poisson = False
    assert _train(sampler, NoiseConfig(1.0, 2.0)).recorder.build() == SC(G(2.0), 4)


def test_non_private_training_records_nothing():
    result = _train(_Batches([[1, 2], []], 0.2, 10), NoiseConfig())
    assert isinstance(result.recorder.build(), dp_accounting.NoOpDpEvent)


def test_engine_refuses_a_recorder_other_than_the_problems():
    problem = _Problem()
    problem.recorder = EventRecorder()
    with pytest.raises(ValueError, match="another EventRecorder"):
        _train(_Batches([[1]], 0.2, 10), NoiseConfig(1.0, 2.0), problem, EventRecorder())
    # by default the engine records where the problem does
    result = _train(_Batches([[1]], 0.2, 10), NoiseConfig(1.0, 2.0), problem)
    assert result.recorder is problem.recorder


@pytest.mark.parametrize(
    "est",
    [
        GlobalScalingDPClassifier(
            epsilon=50.0,
            hidden_layer_sizes=(),
            max_epochs=2,
            batch_size=1,
            delta=1e-3,
            random_state=0,
        ),  # fmt: skip
        RaCODPClassifier(epsilon=50.0, batch_size=1, max_epochs=1, delta=1e-3, random_state=0),
        DPFermiClassifier(
            epsilon=50.0,
            batch_size=1,
            max_epochs=1,
            delta=1e-3,
            random_state=0,
            fallback_to_constant=False,
        ),
    ],
    ids=["gs-adapt", "raco", "fermi"],
)
def test_empty_poisson_batches_are_recorded_steps(est, monkeypatch, plans):
    """q = 1/60: most batches are empty, and each records the same step (count and all)."""
    X, y, s = make_biased_data(n=60, seed=0)
    sizes = []
    original = sampling.PoissonSampler.sample

    def spy(self, steps=1):
        batches = original(self, steps)
        sizes.extend(len(b) for b in batches)
        return batches

    monkeypatch.setattr(sampling.PoissonSampler, "sample", spy)
    est = _fit(est, X, y, s)
    assert sizes.count(0) > 10 and len(sizes) == est.n_steps_
    planned, account = _planned(plans)
    assert _step_count(est.dp_event_) == est.n_steps_ == _step_count(_normalised(planned))
    _assert_same(est.dp_event_, planned, est.privacy_spent_.delta, account)


# --------------------------------------------------------------------------- mutants
def _skip(value, *args, **kwargs):
    """A release whose noise (and so its mechanism call) is skipped."""
    return value, None


def test_mutant_raco_histogram_without_noise_is_not_recorded(data, monkeypatch, plans):
    X, y, s = data
    monkeypatch.setattr(RacoProblem, "privatize", lambda self, H: H)
    est = _fit(RaCODPClassifier(histogram_noise="laplace", **RACO), X, y, s)
    planned, _ = _planned(plans)
    assert est.dp_event_ != _normalised(planned)
    assert est.dp_event_ == SC(PS(50 / 400, G(est.noise_multiplier_)), est.n_steps_)


def test_mutant_count_without_noise_is_not_recorded(data, monkeypatch, plans):
    X, y, s = data
    monkeypatch.setattr(global_scaling, "noisy_count", _skip)
    est = _fit(GlobalScalingDPClassifier(**DPSGD), X, y, s)
    planned, _ = _planned(plans)
    assert est.dp_event_ == SC(PS(0.25, G(est.noise_multiplier_)), est.n_steps_)
    assert est.dp_event_ != _normalised(planned)


def test_mutant_dual_release_without_noise_is_not_recorded(data, monkeypatch, plans):
    X, y, s = data
    real = step.gaussian_sum

    def primal_only(total, sensitivity, noise_multiplier, random, recorder=None):
        if sensitivity != 1.0:  # the dual release (its clip is lambda * 2 max pinv, not C = 1)
            return total, None
        return real(total, sensitivity, noise_multiplier, random, recorder)

    monkeypatch.setattr(step, "gaussian_sum", primal_only)
    # lr_dual=0.025: W's ascent, whose dual release is told apart by its clip (with the
    # best-response W of lr_dual="auto" both releases have sensitivity 1)
    est = _fit(DPFermiClassifier(group_priors=[0.5, 0.5], lr_dual=0.025, **FERMI_STEPS), X, y, s)
    planned, _ = _planned(plans)
    assert est.dp_event_ == SC(PS(64 / 400, G(est.noise_multiplier_)), est.n_steps_)
    assert est.dp_event_ != _normalised(planned)


def test_mutant_group_histogram_without_noise_is_not_recorded(data, monkeypatch, plans):
    X, y, s = data
    monkeypatch.setattr(fermi, "noisy_histogram", _skip)
    est = _fit(DPFermiClassifier(**FERMI_STEPS), X, y, s)
    planned, _ = _planned(plans)
    assert isinstance(_normalised(planned), dp_accounting.ComposedDpEvent)  # hist + steps
    assert isinstance(est.dp_event_, dp_accounting.SelfComposedDpEvent)  # steps only


# --------------------------------------------------------------------------- mechanisms
def test_gaussian_sum_adds_the_stated_noise_and_records_it():
    total = torch.arange(6, dtype=torch.float32)
    recorder = EventRecorder()
    noisy, event = gaussian_sum(total, 2.0, 1.5, RandomSource(3), recorder)
    expected = RandomSource(3).normal((6,), 3.0)
    torch.testing.assert_close(noisy - total, expected, rtol=0, atol=1e-6)
    assert event == G(1.5) and recorder.build() == G(1.5)
    assert torch.equal(total, torch.arange(6, dtype=torch.float32))  # input untouched
    zero, event = gaussian_sum(total, 1.0, 0.0, RandomSource(0))
    assert torch.equal(zero, total) and isinstance(event, dp_accounting.NonPrivateDpEvent)
    for bad in (math.inf, -1.0, math.nan):
        with pytest.raises(ValueError, match="noise_multiplier"):
            gaussian_sum(total, 1.0, bad, RandomSource(0))
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_sum(total, 0.0, 1.0, RandomSource(0))


def test_noisy_count_and_histogram():
    count = torch.tensor(5.0, dtype=torch.float64)
    noisy, event = noisy_count(count, 2.0, RandomSource(1))
    assert noisy.shape == () and noisy.dtype == torch.float64 and event == G(2.0)
    assert float(noisy - count) == float(RandomSource(1).normal(1, 2.0, torch.float64)[0])
    counts = torch.zeros(3, 4)
    _, event = noisy_histogram(counts, RandomSource(0), noise_multiplier=2.0)
    assert event == G(2.0)
    noisy, event = noisy_histogram(counts, RandomSource(0), laplace_scale=3.0)
    assert event == L(3.0) and noisy.shape == (3, 4) and noisy.dtype == torch.float32
    with pytest.raises(ValueError, match="exactly one"):
        noisy_histogram(counts, RandomSource(0))
    with pytest.raises(ValueError, match="exactly one"):
        noisy_histogram(counts, RandomSource(0), noise_multiplier=1.0, laplace_scale=1.0)


def test_batch_event_combines_one_batchs_releases():
    q = 0.1
    joint = (2.0**-2 + 3.0**-2) ** -0.5
    assert batch_event([G(2.0), G(3.0)], q) == PS(q, G(joint))
    assert batch_event([G(2.0)], q) == PS(q, G(2.0))
    assert batch_event([L(4.0), G(2.0)], q) == joint_sampled_event(
        q, gaussian_multiplier=2.0, laplace_scale=4.0
    )
    assert batch_event([G(2.0), G(3.0)], 1.0) == G(joint)  # q = 1: no subsampling
    assert batch_event([G(2.0), G(3.0)], q, "separate") == dp_accounting.ComposedDpEvent(
        [PS(q, G(2.0)), PS(q, G(3.0))]
    )
    assert isinstance(batch_event([], q), dp_accounting.NoOpDpEvent)
    assert isinstance(
        batch_event([G(2.0), dp_accounting.NonPrivateDpEvent()], q),
        dp_accounting.NonPrivateDpEvent,
    )
    with pytest.raises(dp_accounting.UnsupportedEventError):
        batch_event([PS(q, G(1.0))], q)
    with pytest.raises(ValueError, match="same_batch"):
        batch_event([G(1.0)], q, "independent")


def test_recorder_builds_what_was_recorded():
    recorder = EventRecorder()
    assert isinstance(recorder.build(), dp_accounting.NoOpDpEvent)
    recorder.record(G(5.0))  # an up-front release
    for _ in range(3):
        with recorder.batch(0.1):
            recorder.record(G(2.0))
            recorder.record(G(3.0))
    with recorder.batch(0.1):
        pass  # a batch without releases records nothing
    step = PS(0.1, G((2.0**-2 + 3.0**-2) ** -0.5))
    assert recorder.build() == dp_accounting.ComposedDpEvent([G(5.0), SC(step, 3)])
    assert recorder.build("separate") == dp_accounting.ComposedDpEvent(
        [G(5.0), SC(dp_accounting.ComposedDpEvent([PS(0.1, G(2.0)), PS(0.1, G(3.0))]), 3)]
    )
    single = EventRecorder()
    with single.batch(0.1):
        single.record(G(2.0))
    assert single.build() == PS(0.1, G(2.0))  # one step: no SelfComposed(., 1)
    with pytest.raises(RuntimeError, match="nest"):
        with single.batch(0.1):
            with single.batch(0.1):
                pass
    with pytest.raises(ValueError, match="once"):
        with single.batch(0.1):
            single.record(G(1.0), count=2)
    with pytest.raises(TypeError):
        single.record(2.0)


def test_recorder_keeps_releases_of_a_failed_step():
    recorder = EventRecorder()
    with pytest.raises(FloatingPointError):
        with recorder.batch(0.5):
            recorder.record(G(2.0))
            raise FloatingPointError("the step failed after its release")
    assert recorder.build() == PS(0.5, G(2.0))


# --------------------------------------------------------------------------- calibration
def test_one_calibration_routine():
    from skfairdp.privacy import calibrate_noise_multiplier, max_steps_within

    assert calibrate_noise_multiplier is calibration.calibrate_noise_multiplier
    assert max_steps_within is calibration.max_steps_within
    q, delta = 0.05, 1e-5

    def steps_event(t):
        return sampled_gaussian_steps_event(2.0, q, t)

    t = max_steps_within(1.0, delta, steps_event, 10**5)
    assert epsilon_spent(steps_event(t), delta).epsilon <= 1.0
    assert epsilon_spent(steps_event(t + 1), delta).epsilon > 1.0
    assert max_steps_within(100.0, delta, steps_event, 50) == 50  # the cap binds
    with pytest.raises(ValueError, match="single step"):
        max_steps_within(1e-4, delta, steps_event, 50)
