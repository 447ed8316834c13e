"""Engine: per-sample gradients, clipping sensitivity, and the noisy descent-ascent loop."""

import copy
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from torch import nn
from torch.nn import functional as F

from skfairdp.engine import (
    NoiseConfig,
    PerSampleGradients,
    check_per_sample_compatible,
    clipped_sum,
    train,
)
from skfairdp.privacy import PoissonSampler, RandomSource


def _objectives(outputs, y, c):
    """Two per-sample objectives (a loss and a fairness-like linear term) and a diagnostic."""
    loss = F.cross_entropy(outputs, y, reduction="none")
    probs = torch.softmax(outputs, dim=1)
    return (loss, (probs * c).sum(1)), {"loss": loss}


def _mlp(d=5, l=3, frozen_first=False, first_bias=True):
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Linear(d, 6, bias=first_bias),
        nn.Tanh(),
        nn.Linear(6, 4),
        nn.ReLU(),
        nn.Linear(4, l),
    )
    if frozen_first:
        net[0].weight.requires_grad_(False)
    return net


def _batch(n=7, d=5, l=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=gen)
    y = torch.randint(0, l, (n,), generator=gen)
    c = torch.randn(n, l, generator=gen)
    return X, y, c


def _loop_reference(module, X, objectives, *per_sample):
    """Per-sample gradients by one autograd call per sample (the definition)."""
    params = [p for p in module.parameters() if p.requires_grad]
    rows = [[] for _ in range(2)]
    for i in range(X.shape[0]):
        objs, _ = objectives(module(X[i : i + 1]), *(t[i : i + 1] for t in per_sample))
        for k, obj in enumerate(objs):
            grads = torch.autograd.grad(obj.sum(), params, allow_unused=True, retain_graph=True)
            flat = [
                torch.zeros_like(p).reshape(-1) if g is None else g.reshape(-1)
                for g, p in zip(grads, params)
            ]
            rows[k].append(torch.cat(flat))
    return [torch.stack(r) for r in rows]


@pytest.mark.parametrize(
    "options",
    [{}, {"frozen_first": True}, {"first_bias": False}],
    ids=["plain", "frozen", "nobias"],
)
def test_linear_and_vmap_strategies_equal_autograd_loop(options):
    module = _mlp(**options)
    X, y, c = _batch()
    reference = _loop_reference(module, X, _objectives, y, c)
    weights = torch.rand(X.shape[0], generator=torch.Generator().manual_seed(1))
    for strategy in ("linear", "vmap"):
        grads_of = PerSampleGradients(module, strategy)
        assert grads_of.n_params == reference[0].shape[1]
        grads, outputs, diagnostics = grads_of(X, _objectives, y, c)
        torch.testing.assert_close(outputs, module(X).detach())
        torch.testing.assert_close(
            diagnostics["loss"], F.cross_entropy(module(X), y, reduction="none").detach()
        )
        assert not diagnostics["loss"].requires_grad
        for g, ref in zip(grads, reference):
            torch.testing.assert_close(g.dense(), ref, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(g.norms(), ref.norm(dim=1).double(), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(g.weighted_sum(weights), weights @ ref, rtol=1e-5, atol=1e-6)
        if hasattr(grads_of, "close"):
            grads_of.close()


class _SharedLayer(nn.Module):
    """Applies one Linear twice (the factored fast path must fall back to dense)."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(5, 5)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        return self.head(torch.tanh(self.inner(torch.tanh(self.inner(x)))))


class _Sequence(nn.Module):
    """Linear on 3-D input (B, T, d), then a mean over T."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 6)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        return self.head(torch.relu(self.proj(x)).mean(1))


@pytest.mark.parametrize("make, shape", [(_SharedLayer, (6, 5)), (_Sequence, (6, 2, 4))])
def test_non_simple_linear_modules(make, shape):
    torch.manual_seed(0)
    module = make()
    X = torch.randn(*shape)
    _, y, c = _batch(n=shape[0])
    reference = _loop_reference(module, X, _objectives, y, c)
    for strategy in ("linear", "vmap"):
        grads, _, _ = PerSampleGradients(module, strategy)(X, _objectives, y, c)
        for g, ref in zip(grads, reference):
            torch.testing.assert_close(g.dense(), ref, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(g.norms(), ref.norm(dim=1).double(), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(g.weighted_sum(torch.ones(shape[0])), ref.sum(0))


def test_strategy_selection_and_errors():
    assert PerSampleGradients(_mlp()).strategy == "linear"
    with_norm = nn.Sequential(nn.Linear(5, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    assert PerSampleGradients(with_norm).strategy == "vmap"
    with pytest.raises(ValueError, match="Linear"):
        PerSampleGradients(with_norm, "linear")
    with pytest.raises(ValueError, match="strategy"):
        PerSampleGradients(_mlp(), "opacus")


@pytest.mark.parametrize("norm", [nn.BatchNorm1d(4), nn.SyncBatchNorm(4)])
def test_batchnorm_is_rejected(norm):
    module = nn.Sequential(nn.Linear(5, 4), norm, nn.Linear(4, 2))
    with pytest.raises(ValueError, match="BatchNorm.*batch statistics"):
        check_per_sample_compatible(module)
    for strategy in ("auto", "vmap"):
        with pytest.raises(ValueError, match="BatchNorm"):
            PerSampleGradients(module, strategy)
    check_per_sample_compatible(nn.Sequential(nn.Linear(5, 4), nn.GroupNorm(2, 4)))


class _SubRows(nn.Module):
    """DeepSets-style: one Linear scores each of a sample's 4 sub-rows (the batch reshaped
    to (4 B, 3) before it), summed per sample: a Linear layer that does not see samples."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x.reshape(-1, 3)).reshape(len(x), 4, 3).sum(1)


class _Centred(nn.Module):
    """A parameterless layer that mixes samples: ``h - h.mean(0)``."""

    def __init__(self, n_features=3, n_outputs=3):
        super().__init__()
        self.first, self.last = nn.Linear(n_features, 4), nn.Linear(4, n_outputs)

    def forward(self, x):
        h = self.first(x)
        return self.last(torch.tanh(h - h.mean(0, keepdim=True)))


def _remove_one_sensitivity(module, strategy, X, C):
    """Largest change of the clipped sum when one sample is removed (brute force)."""
    _, y, c = _batch(n=len(X))
    grads_of = PerSampleGradients(module, strategy)
    full = clipped_sum(grads_of(X, _objectives, y, c)[0][0], C)[0]
    worst = 0.0
    for i in range(len(X)):
        keep = torch.tensor([j for j in range(len(X)) if j != i])
        without = clipped_sum(grads_of(X[keep], _objectives, y[keep], c[keep])[0][0], C)[0]
        worst = max(worst, float(torch.linalg.vector_norm(full - without)))
    return worst, grads_of.strategy


def test_a_linear_layer_on_reshaped_rows_is_clipped_per_sample():
    # "auto" picks the factored path (one Linear), which would clip each of a sample's 4
    # sub-rows at C: one sample would move the sum by up to 4 C
    torch.manual_seed(0)
    X = torch.randn(6, 12) * 50
    worst, strategy = _remove_one_sensitivity(_SubRows(), "auto", X, 1.0)
    assert strategy == "vmap" and worst <= 1.0 + 1e-4
    with pytest.raises(ValueError, match="one row per sample"):
        _remove_one_sensitivity(_SubRows(), "linear", X, 1.0)


@pytest.mark.parametrize("strategy", ["auto", "vmap"])
def test_a_module_that_mixes_samples_is_rejected(strategy):
    from skfairdp import DPSGDClassifier

    X, y, c = _batch(n=6)
    with pytest.raises(ValueError, match="depends on the other samples"):
        PerSampleGradients(_Centred(), strategy)(X[:, :3], _objectives, y, c)
    Xn = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    yn = np.arange(40) % 3
    with pytest.raises(ValueError, match="depends on the other samples"):
        DPSGDClassifier(module=_Centred, max_epochs=1).fit(Xn, yn)


def test_a_tiny_output_gradient_beside_a_huge_input_keeps_its_norm():
    # float32 squares 2e-23 to 0: the row's norm |b| |(a, 1)| (about 2e-4) must not read
    # as 0, or its clip factor is 1 and the row passes unclipped at a small C
    from skfairdp.engine.per_sample import FactoredLinearGradients

    layer = nn.Linear(4, 2)
    a = torch.tensor([[1.0e19, 1.0e18, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    b = torch.tensor([[2.0e-23, 0.0], [0.1, -0.1]])
    factors = [(layer.weight, layer.bias, a, b)]
    grads = FactoredLinearGradients([layer.weight, layer.bias], factors, 2)
    true = grads._raw_dense().double().norm(dim=1)
    torch.testing.assert_close(grads.norms(), true, rtol=1e-5, atol=0.0)
    alone = FactoredLinearGradients(
        [layer.weight, layer.bias], [(layer.weight, layer.bias, a[1:], b[1:])], 1
    )
    for C in (1e-6, 1e-4):
        moved = clipped_sum(grads, C)[0] - clipped_sum(alone, C)[0]
        assert float(torch.linalg.vector_norm(moved.double())) <= C * (1 + 1e-4)


def test_linear_strategy_close_removes_hooks():
    module = _mlp()
    grads_of = PerSampleGradients(module, "linear")
    grads_of(*_batch()[:1], _objectives, *_batch()[1:])
    grads_of.close()
    assert all(not m._forward_hooks for m in module.modules())


# ---------------------------------------------------------------------------
# Clipping: the clipped sum's sensitivity is what the accountant assumes
# ---------------------------------------------------------------------------
def test_clipped_sum_basics():
    G = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], dtype=torch.float64)
    total, norms = clipped_sum(G, 1.0)
    torch.testing.assert_close(norms, torch.tensor([5.0, 0.5, 0.0], dtype=torch.float64))
    torch.testing.assert_close(total, torch.tensor([0.9, 1.2], dtype=torch.float64))


_rows = st.integers(1, 6).flatmap(
    lambda b: st.integers(1, 5).flatmap(
        lambda p: arrays(np.float64, (b, p), elements=st.floats(-1e3, 1e3))
    )
)


@settings(max_examples=150, deadline=None)
@given(G=_rows, C=st.floats(1e-3, 1e2), data=st.data())
def test_clipped_sum_add_remove_and_replace_sensitivity(G, C, data):
    G = torch.from_numpy(G)
    full, _ = clipped_sum(G, C)
    tol = 1e-9 * (1 + C * G.shape[0])
    for i in range(G.shape[0]):
        without, _ = clipped_sum(torch.cat([G[:i], G[i + 1 :]]), C)
        assert float(torch.linalg.vector_norm(full - without)) <= C + tol
    i = data.draw(st.integers(0, G.shape[0] - 1))
    new_row = torch.from_numpy(
        data.draw(arrays(np.float64, (G.shape[1],), elements=st.floats(-1e3, 1e3)))
    )
    replaced = G.clone()
    replaced[i] = new_row
    assert float(torch.linalg.vector_norm(full - clipped_sum(replaced, C)[0])) <= 2 * C + tol


@settings(max_examples=15, deadline=None)
@given(
    X=arrays(np.float32, (5, 5), elements=st.floats(-30, 30, width=32)),
    C=st.floats(1e-2, 10.0),
)
def test_factored_clipped_sum_remove_one_sensitivity(X, C):
    module = _mlp()
    grads_of = PerSampleGradients(module, "linear")
    X = torch.from_numpy(X)
    _, y, c = _batch(n=5)
    full = clipped_sum(grads_of(X, _objectives, y, c)[0][1], C)[0]
    for i in range(5):
        keep = torch.tensor([j for j in range(5) if j != i])
        grads = grads_of(X[keep], _objectives, y[keep], c[keep])[0][1]
        without = clipped_sum(grads, C)[0]
        assert float(torch.linalg.vector_norm(full - without)) <= C * (1 + 1e-4) + 1e-5
    grads_of.close()


# ---------------------------------------------------------------------------
# The training loop
# ---------------------------------------------------------------------------
class _ListSampler:
    """Yields fixed batches every epoch."""

    def __init__(self, batches, expected_batch_size):
        self.batches = [np.asarray(b, dtype=np.int64) for b in batches]
        self.expected_batch_size = float(expected_batch_size)
        self.steps_per_epoch = len(self.batches)

    def epoch(self):
        yield from self.batches


class _Problem:
    """Cross-entropy (``private``) plus an optional public objective; a recording dual."""

    dual_clip = 1.0

    def __init__(self, sensitive=False, scale=1.0, dual_dim=0):
        self.private_primal = (False, True) if sensitive else (True,)
        self.scale = scale
        self.dual_dim = dual_dim
        self.dual_gradients = []

    def prepare_batch(self, y):
        return (y,)

    def primal_objectives(self, outputs, y):
        loss = F.cross_entropy(outputs, y, reduction="none")
        if len(self.private_primal) == 2:  # public loss, private zero-gradient term
            return (loss, 0.0 * outputs.sum(1)), {"loss": loss}
        return (self.scale * loss,), {"loss": loss}

    def dual_contributions(self, outputs, y):
        if not self.dual_dim:
            return None
        b = 0 if outputs is None else outputs.shape[0]
        return None, torch.zeros(b, self.dual_dim)

    def dual_step(self, gradient):
        self.dual_gradients.append(gradient.clone())


def _train(module, X, y, problem, sampler, noise, lr=1.0, seed=0, **kw):
    return train(
        module,
        X,
        (y,),
        problem,
        sampler=sampler,
        optimizer=torch.optim.SGD(module.parameters(), lr=lr),
        noise=noise,
        random=RandomSource(seed),
        max_epochs=kw.pop("max_epochs", 1),
        **kw,
    )


def _manual_sgd(module, X, y, batches, lr, denominator=None, clip=None):
    for idx in batches:
        idx = torch.as_tensor(idx)
        module.zero_grad()
        losses = F.cross_entropy(module(X[idx]), y[idx], reduction="none")
        scale = 1.0 / (len(idx) if denominator is None else denominator)
        (losses.sum() * scale).backward()
        with torch.no_grad():
            for p in module.parameters():
                p -= lr * p.grad


def test_non_private_loop_is_minibatch_sgd():
    X, y, _ = _batch(n=20, d=5)
    batches = [np.arange(0, 8), np.arange(8, 16), np.arange(16, 20)]
    module, reference = _mlp(), _mlp()
    result = _train(module, X, y, _Problem(), _ListSampler(batches, 8), NoiseConfig(), lr=0.3)
    _manual_sgd(reference, X, y, batches, lr=0.3)
    assert result.steps == 3 and result.epochs == 1 and not result.stopped_early
    for p, q in zip(module.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert {"steps", "epoch", "dur"} <= set(result.history[-1])
    assert "loss" not in result.history[-1]  # raw diagnostics are opt-in


def test_private_loop_divides_by_expected_batch_size():
    """With no noise and a clip that never binds, a private step is SGD over m, not |B|."""
    X, y, _ = _batch(n=20, d=5)
    batches = [np.arange(0, 3), np.arange(3, 14)]
    module, reference = _mlp(), _mlp()
    noise = NoiseConfig(max_grad_norm=1e6, primal_multiplier=0.0)
    _train(module, X, y, _Problem(), _ListSampler(batches, 10), noise, lr=0.3)
    _manual_sgd(reference, X, y, batches, lr=0.3, denominator=10)
    for p, q in zip(module.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_private_loop_clips_private_part_only():
    """Sensitive unit: the public loss gradient is exact even with a tiny clip."""
    X, y, _ = _batch(n=12, d=5)
    batches = [np.arange(12)]
    module, reference = _mlp(), _mlp()
    noise = NoiseConfig(max_grad_norm=1e-8, primal_multiplier=0.0)
    _train(module, X, y, _Problem(sensitive=True), _ListSampler(batches, 12), noise, lr=0.3)
    _manual_sgd(reference, X, y, batches, lr=0.3)
    for p, q in zip(module.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    # record unit: the same tiny clip freezes the model
    clipped, start = _mlp(), _mlp()
    _train(clipped, X, y, _Problem(), _ListSampler(batches, 12), noise, lr=0.3)
    for p, q in zip(clipped.parameters(), start.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)


def test_noise_scale_and_empty_batches():
    """Each step adds N(0, (z C)^2) to the sum and divides by m; empty batches still step."""
    torch.manual_seed(0)
    module = nn.Linear(300, 10)
    start = [p.detach().clone() for p in module.parameters()]
    X = torch.randn(10, 300)
    y = torch.zeros(10, dtype=torch.long)
    z, C, m = 3.0, 2.0, 5.0
    problem = _Problem(scale=0.0, dual_dim=400)
    noise = NoiseConfig(max_grad_norm=C, primal_multiplier=z, dual_multiplier=2 * z)
    sampler = _ListSampler([[], [1, 2], []], m)  # two of three steps see no data
    result = _train(module, X, y, problem, sampler, noise, lr=1.0)
    assert result.steps == 3
    delta = torch.cat([(p.detach() - s).reshape(-1) for p, s in zip(module.parameters(), start)])
    expected = math.sqrt(3) * z * C / m  # three independent draws, lr = 1
    assert float(delta.std()) == pytest.approx(expected, rel=0.1)
    assert len(problem.dual_gradients) == 3
    for g in problem.dual_gradients:  # dual noise std: z_w * dual_clip / m
        assert float(g.std()) == pytest.approx(2 * z * problem.dual_clip / m, rel=0.15)


def test_loop_noise_is_seeded():
    X, y, _ = _batch(n=20, d=5)
    noise = NoiseConfig(max_grad_norm=1.0, primal_multiplier=1.0)
    finals = []
    for seed in (0, 0, 1):
        module = _mlp()
        sampler = PoissonSampler(20, 0.5, RandomSource(seed))
        _train(module, X, y, _Problem(), sampler, noise, lr=0.1, seed=seed, max_epochs=2)
        finals.append(torch.cat([p.detach().reshape(-1) for p in module.parameters()]))
    torch.testing.assert_close(finals[0], finals[1])
    assert not torch.allclose(finals[0], finals[2])


class _Recorder:
    def __init__(self, stop_after=None):
        self.calls = []
        self.stop_after = stop_after

    def initialize(self):
        self.calls.append("initialize")

    def on_train_begin(self, net, **kwargs):
        self.calls.append("train_begin")

    def on_epoch_begin(self, net, **kwargs):
        self.calls.append("epoch_begin")

    def on_epoch_end(self, net, **kwargs):
        self.calls.append("epoch_end")
        if self.stop_after is not None and self.calls.count("epoch_end") >= self.stop_after:
            raise KeyboardInterrupt

    def on_train_end(self, net, **kwargs):
        self.calls.append("train_end")


def test_callbacks_and_early_stop():
    X, y, _ = _batch(n=20, d=5)
    sampler = _ListSampler([np.arange(10), np.arange(10, 20)], 10)
    full = _Recorder()
    result = _train(
        _mlp(), X, y, _Problem(), sampler, NoiseConfig(), callbacks=[full], max_epochs=3
    )
    assert full.calls == ["initialize", "train_begin"] + ["epoch_begin", "epoch_end"] * 3 + [
        "train_end"
    ]
    assert result.steps == 6 and len(result.history) == 3
    stop = _Recorder(stop_after=2)
    result = _train(
        _mlp(), X, y, _Problem(), sampler, NoiseConfig(), callbacks=[stop], max_epochs=5
    )
    assert result.stopped_early and result.steps == 4 and result.epochs == 2
    assert stop.calls[-1] == "train_end"


def _output_gradients(outputs, y, c):
    """``_objectives`` differentiated by hand in the outputs (d CE = p - e_y, d <c,p>)."""
    probs = torch.softmax(outputs, dim=1)
    onehot = F.one_hot(y, outputs.shape[1]).to(probs.dtype)
    fair = (probs * c).sum(1, keepdim=True)
    loss = F.cross_entropy(outputs, y, reduction="none")
    return (probs - onehot, probs * (c - fair)), {"loss": loss}


@pytest.mark.parametrize(
    "make",
    [
        lambda: _mlp(),
        lambda: _mlp(frozen_first=True),
        lambda: nn.Linear(5, 3),
        lambda: nn.Linear(5, 3, bias=False),
        lambda: nn.Sequential(nn.Linear(5, 3), nn.Tanh()),  # output is not the layer's
    ],
    ids=["mlp", "frozen", "linear", "linear-nobias", "linear-then-tanh"],
)
def test_output_gradient_path_equals_autograd_loop(make):
    """Hand-written output gradients give the same per-sample gradients, also on later calls."""
    module = make()
    objectives = _objectives
    grads_of = PerSampleGradients(module, "linear")
    for seed in range(3):  # the single-layer shortcut is decided on the first call
        X, y, c = _batch(seed=seed)
        reference = _loop_reference(module, X, objectives, y, c)
        grads, outputs, diag = grads_of(X, objectives, y, c, output_gradients=_output_gradients)
        torch.testing.assert_close(outputs, module(X).detach())
        torch.testing.assert_close(diag["loss"], F.cross_entropy(module(X), y, reduction="none"))
        for g, ref in zip(grads, reference):
            torch.testing.assert_close(g.dense(), ref, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(g.norms(), ref.norm(dim=1).double(), rtol=1e-5, atol=1e-6)
    grads_of.close()


@pytest.mark.parametrize("max_norm", [0.0, -1.0, float("nan")])
def test_clipped_sum_rejects_non_positive_norm(max_norm):
    with pytest.raises(ValueError, match="max_norm"):
        clipped_sum(torch.ones(3, 2), max_norm)


class _CountingModule(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.forwards = 0

    def forward(self, x):
        self.forwards += 1
        return self.inner(x)


class _ReleasingProblem(_Problem):
    """Scales each row's loss by a weight computed from this batch's outputs."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def prepare_batch(self, y):
        return y, torch.ones(len(y))

    def release_batch_statistics(self, outputs, y, weight):
        self.seen.append(outputs.clone())
        assert not outputs.requires_grad
        return (y, torch.full((len(y),), 2.0)), {}

    def primal_objectives(self, outputs, y, weight):
        loss = F.cross_entropy(outputs, y, reduction="none")
        return (weight * loss,), {"loss": loss}

    def dual_contributions(self, outputs, y, weight):
        return None


@pytest.mark.parametrize("strategy", ["linear", "vmap"])
def test_release_hook_sees_the_step_outputs_and_its_batch_reaches_the_objective(strategy):
    """release_batch_statistics gets this step's outputs (one forward pass on the linear
    path, empty batches included) and its returned tensors are what the objective uses."""
    X, y, _ = _batch(n=20, d=5)
    batches = [np.arange(0, 8), np.array([], dtype=np.int64), np.arange(8, 20)]
    module = _CountingModule(nn.Linear(5, 3))
    reference = copy.deepcopy(module.inner)
    problem = _ReleasingProblem()
    start = [p.detach().clone() for p in module.parameters()]
    train(
        module,
        X,
        (y,),
        problem,
        sampler=_ListSampler(batches, 8),
        optimizer=torch.optim.SGD(module.parameters(), lr=0.3),
        noise=NoiseConfig(),
        random=RandomSource(0),
        max_epochs=1,
        per_sample_strategy=strategy,
    )
    assert len(problem.seen) == 3 and problem.seen[1].shape == (0, 3)
    torch.testing.assert_close(problem.seen[0], reference(X[:8]).detach())
    if strategy == "linear":
        # one per step (the empty batch's too), no extra pass; and once, before the first
        # step, the sample-independence probe's four (three rows together, then alone)
        assert module.forwards == 3 + 4
    # the weight 2 from the release doubles the loss: same as SGD with twice the rate
    with torch.no_grad():
        for p, p0 in zip(reference.parameters(), start):
            p.copy_(p0)
    _manual_sgd(reference, X, y, [batches[0], batches[2]], lr=0.6)
    for p, q in zip(module.inner.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
