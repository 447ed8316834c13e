"""Our private estimators side by side with their peers on the same Adult rows.

Logistic regression (102 -> 2 logits), expected batch 256, Poisson sampling,
epsilon = 1, delta = 1e-5, one thread; every method trains on the same rows (the
75% train split of bundled Adult, seed 0) and is scored on the same test rows:

* **Opacus 1.6** DP-SGD (``PrivacyEngine.make_private_with_epsilon``, Poisson
  sampling, per-sample hooks, clip 1, lr 0.1): the peer of ``DPSGDClassifier`` and
  DP-FERMI's nearest equivalent. Skipped with a message when opacus is missing.
* **DPSGDClassifier** and **DPFermiClassifier** (demographic parity, lambda = 1).
* **DP-FERMI authors' per-sample loop: a re-implementation**, not their code
  (which cannot be reached from here): the 2024 rewrite's step as the digest in
  ``/work/shared/research/seed-000-dp-fermi.md`` (section 2.1/2.3) describes it:
  one forward/backward per sample (batch 1) accumulated over the batch, each
  per-sample gradient of ``(loss + lambda psi) / B`` clipped at ``L`` (so at ``L B``
  unscaled), Gaussian noise on theta and W, W projected. Only its CPU time per step
  is measured (on ``--loop-steps`` steps, scaled to an epoch); it has no accountant.
* **RaCO-DP authors' JAX code**: skipped with a message (their repository is not
  reachable from this machine; ``pip download jax --no-deps`` does work).

For each method: CPU seconds per training epoch (``time.process_time``, median
over epochs, the first excluded) and of the whole fit (calibration included), test
error, demographic parity violation, the epsilon the method reports, and the epsilon dp-accounting's
RDP accountant gives for what the method releases (its ``dp_event_``, or for
Opacus the Poisson-subsampled Gaussian it ran, composed over its steps). Run::

    python benchmarks/peers.py --out benchmarks/results          # full
    python benchmarks/peers.py --quick --out /tmp/peers           # seconds

Writes ``peers.csv`` and ``peers.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import math
import platform
import time
from pathlib import Path

import dp_accounting
import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split

from skfairdp.datasets import load_adult
from skfairdp.dpsgd import DPSGDClassifier
from skfairdp.fairness.metrics import demographic_parity_violation
from skfairdp.fermi import DPFermiClassifier

logging.getLogger("absl").setLevel(logging.ERROR)

EPSILON, DELTA, BATCH, CLIP, LR = 1.0, 1e-5, 256, 1.0, 0.1


def rdp_epsilon(event, delta: float = DELTA) -> float:
    """dp-accounting's RDP epsilon at ``delta`` for a DpEvent."""
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def _speed():
    """benchmarks/speed.py (its epoch clock), loaded beside this script."""
    spec = importlib.util.spec_from_file_location("speed", Path(__file__).with_name("speed.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EpochClock = _speed().EpochClock


def median_epoch(times) -> float:
    """Median epoch time, the first epoch (warm-up) excluded when there are others."""
    return float(np.median(times[1:] if len(times) > 1 else times))


def score(predict, X_test, y_test, s_test) -> tuple[float, float]:
    y_pred = np.asarray(predict(X_test))
    error = float(np.mean(y_pred != y_test))
    violation = demographic_parity_violation(y_test, y_pred, sensitive_features=s_test)
    return error, float(violation)


def run_ours(name, estimator, X, y, s, test, epochs):
    clock = EpochClock()
    estimator.set_params(callbacks=[clock])
    start = time.process_time()
    estimator.fit(X, y, **({"sensitive_features": s} if "FERMI" in name else {}))
    cpu = time.process_time() - start
    error, violation = score(estimator.predict, *test)
    reported = estimator.privacy_spent_
    reported = float(reported[0] if isinstance(reported, tuple) else reported)
    return dict(
        method=name,
        implementation="skfairdp (this repository)",
        epochs=epochs,
        epoch_cpu_s=median_epoch(clock.times),
        fit_cpu_s=cpu,
        error=error,
        dp_violation=violation,
        epsilon_reported=reported,
        epsilon_dp_accounting=rdp_epsilon(estimator.dp_event_),
        note="",
    )


def run_opacus(X, y, test, epochs, seed=0):
    try:
        import opacus
        from opacus import PrivacyEngine
    except ImportError:
        return None, "opacus not installed (pip install opacus==1.6.0): Opacus rows skipped"
    import warnings

    torch.manual_seed(seed)
    start = time.process_time()
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(Xt, yt), batch_size=BATCH, shuffle=True
    )
    model = torch.nn.Linear(X.shape[1], 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    engine = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            target_epsilon=EPSILON,
            target_delta=DELTA,
            epochs=epochs,
            max_grad_norm=CLIP,
            poisson_sampling=True,
        )
        steps, times = 0, []
        for _ in range(epochs):
            epoch_start = time.process_time()
            for xb, yb in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                optimizer.step()
                steps += 1
            times.append(time.process_time() - epoch_start)
    cpu = time.process_time() - start
    with torch.no_grad():
        error, violation = score(lambda A: model(torch.from_numpy(A)).argmax(1).numpy(), *test)
    q = BATCH / len(X)
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(optimizer.noise_multiplier)
        ),
        steps,
    )
    return dict(
        method="DP-SGD",
        implementation=f"Opacus {opacus.__version__} (Poisson, per-sample hooks)",
        epochs=epochs,
        epoch_cpu_s=median_epoch(times),
        fit_cpu_s=cpu,
        error=error,
        dp_violation=violation,
        epsilon_reported=float(engine.get_epsilon(DELTA)),
        epsilon_dp_accounting=rdp_epsilon(event),
        note=f"noise multiplier {optimizer.noise_multiplier:.4g}, {steps} steps",
    ), ""


def authors_fermi_loop_step_seconds(X, y, s, n_steps, lam=1.0, L=CLIP, seed=0):
    """CPU seconds per step of a re-implementation of the DP-FERMI authors' 2024 step.

    Per sample (batch 1): forward, ``(loss + lam psi_i) / B`` with W detached,
    backward, clip the (1/B-scaled) gradient at ``L``, accumulate; then one Gaussian
    draw on theta, the W gradient from the batch's probabilities with Gaussian noise,
    and the Frobenius projection of W. Not the authors' code (see the module doc).
    """
    gen = torch.Generator().manual_seed(seed)
    Xt, yt, st = torch.from_numpy(X), torch.from_numpy(y), torch.from_numpy(s)
    k = int(st.max()) + 1
    p_s = torch.bincount(st, minlength=k).float() / len(st)
    pinv = p_s.rsqrt()
    model = torch.nn.Linear(X.shape[1], 2)
    W = torch.zeros(k, 2)
    sigma_theta = sigma_w = 1.0
    eta_theta = eta_w = LR
    params = list(model.parameters())
    times = []
    for _ in range(n_steps):
        start = time.process_time()
        idx = torch.randint(len(X), (BATCH,), generator=gen)
        accumulated = [torch.zeros_like(p) for p in params]
        probabilities = []
        for i in idx.tolist():
            x_i, y_i, s_i = Xt[i : i + 1], yt[i : i + 1], st[i]
            logits = model(x_i)
            F = torch.softmax(logits, dim=1)
            c = 2 * W[s_i] * pinv[s_i] - (W**2).sum(0)
            psi = (c * F).sum() - 1.0
            loss = torch.nn.functional.cross_entropy(logits, y_i)
            grads = torch.autograd.grad((loss + lam * psi) / BATCH, params)
            norm = torch.sqrt(sum((g**2).sum() for g in grads))
            factor = min(1.0, L / (float(norm) + 1e-12))
            for a, g in zip(accumulated, grads):
                a.add_(g, alpha=factor)
            probabilities.append(F.detach())
        with torch.no_grad():
            for p, a in zip(params, accumulated):
                p.sub_(eta_theta * (a + sigma_theta * torch.randn(a.shape, generator=gen)))
            F = torch.cat(probabilities)
            onehot = torch.nn.functional.one_hot(st[idx], k).float()
            G_W = -2 * W * F.mean(0) + (2 / BATCH) * pinv.unsqueeze(1) * (onehot.T @ F)
            W = W + eta_w * (lam * G_W + sigma_w * torch.randn(W.shape, generator=gen))
            W = W * min(1.0, 1.0 / max(float(W.norm()), 1e-12))
        times.append(time.process_time() - start)
    return float(np.median(times))


def load(quick: bool):
    data = load_adult(preprocess=True)
    X = np.ascontiguousarray(data.data.to_numpy(np.float32))
    y = data.target.to_numpy().astype(np.int64)
    s = data.sensitive_features.to_numpy()
    s = pd.factorize(s, sort=True)[0].astype(np.int64) if s.dtype.kind not in "iu" else s
    if quick:
        X, y, s = X[:4000], y[:4000], s[:4000]
    X, X_test, y, y_test, s, s_test = train_test_split(X, y, s, test_size=0.25, random_state=0)
    return np.ascontiguousarray(X), y, s, (np.ascontiguousarray(X_test), y_test, s_test)


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--loop-steps", type=int, default=5, help="steps of the per-sample loop")
    parser.add_argument("--quick", action="store_true", help="4000 rows, 1 epoch, no Opacus")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    epochs = 1 if args.quick else args.epochs
    X, y, s, test = load(args.quick)
    common = dict(epsilon=EPSILON, delta=DELTA, batch_size=BATCH, max_epochs=epochs, lr=LR)
    rows, skipped = [], []
    # warm-up: one-time costs (lazy imports, first kernels) out of the timed fits
    DPSGDClassifier(random_state=0, **{**common, "max_epochs": 1}).fit(X[:2000], y[:2000])
    DPFermiClassifier(random_state=0, **{**common, "max_epochs": 1}).fit(
        X[:2000], y[:2000], sensitive_features=s[:2000]
    )
    rows.append(
        run_ours(
            "DP-SGD",
            DPSGDClassifier(max_grad_norm=CLIP, random_state=0, **common),
            X,
            y,
            s,
            test,
            epochs,
        )
    )
    rows.append(
        run_ours(
            "DP-FERMI (DP, lambda=1)",
            DPFermiClassifier(fairness_weight=1.0, random_state=0, **common),
            X,
            y,
            s,
            test,
            epochs,
        )
    )
    if args.quick:
        skipped.append("--quick: Opacus not run")
    else:
        row, message = run_opacus(X, y, test, epochs)
        if row is None:
            skipped.append(message)
        else:
            rows.append(row)
    loop_steps = 1 if args.quick else args.loop_steps
    step_s = authors_fermi_loop_step_seconds(X, y, s, loop_steps)
    rows.append(
        dict(
            method="DP-FERMI (DP, lambda=1)",
            implementation="authors' per-sample loop (re-implementation, step time only)",
            epochs=float("nan"),
            epoch_cpu_s=step_s * math.ceil(len(X) / BATCH),
            fit_cpu_s=float("nan"),
            error=float("nan"),
            dp_violation=float("nan"),
            epsilon_reported=float("nan"),
            epsilon_dp_accounting=float("nan"),
            note=f"median of {loop_steps} steps x {math.ceil(len(X) / BATCH)} steps/epoch; "
            "no accountant in their code",
        )
    )
    skipped.append(
        "RaCO-DP authors' JAX code: not run (their repository is not reachable from this "
        "machine; only package registries are; jax itself downloads from the index)"
    )
    frame = pd.DataFrame(rows)
    ours = frame[frame.implementation.str.startswith("skfairdp")].set_index("method")
    frame["opacus_over_this"] = np.nan
    opacus_rows = frame[frame.implementation.str.startswith("Opacus")]
    if len(opacus_rows):
        opacus_s = float(opacus_rows.epoch_cpu_s.iloc[0])
        frame["opacus_over_this"] = opacus_s / frame.epoch_cpu_s
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "peers.csv", index=False)
    verdicts = []
    if len(opacus_rows):
        for name in ours.index:
            r = opacus_s / float(ours.loc[name, "epoch_cpu_s"])
            verdicts.append(
                f"- {name}: Opacus / ours = {r:.1f}x ({'PASS' if r >= 5 else 'FAIL'} on >= 5x)"
            )
    header = (
        "# Peers: our private estimators vs Opacus and the authors' loops (Adult, logistic "
        "regression)\n\n"
        f"Command: `python benchmarks/peers.py{' --quick' if args.quick else ''} "
        f"--epochs {epochs} --loop-steps {loop_steps}`\n\n"
        f"Machine: {platform.machine()}, torch {torch.__version__}, 1 thread; "
        f"n_train = {len(X)}, n_test = {len(test[0])}; expected batch {BATCH}, Poisson "
        f"sampling, epsilon = {EPSILON}, delta = {DELTA}, clip {CLIP}, lr {LR}, seed 0. "
        "`epoch_cpu_s` is the median CPU time of a training epoch (first epoch excluded), "
        "`fit_cpu_s` the whole fit's (noise calibration and accounting included); one run "
        "each, so +-10% on a shared machine. `epsilon_dp_accounting` is dp-accounting's RDP "
        "epsilon of what the method releases. `opacus_over_this`: Opacus's epoch time over the "
        "row's.\n\n"
        + "\n".join(verdicts)
        + "\n\nSkipped:\n\n"
        + "\n".join(f"- {m}" for m in skipped)
        + "\n\n"
    )
    (out / "peers.md").write_text(header + frame.to_markdown(index=False, floatfmt=".4g") + "\n")
    print(frame.to_string(index=False))
    for m in skipped:
        print("skipped:", m)
    return frame


if __name__ == "__main__":
    main()
