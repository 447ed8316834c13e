"""The ranks of tests/test_distributed.py: each fits the cases on loopback (gloo) and saves them.

Spawned by torch.multiprocessing; a module of its own (not the test module) so that
the spawned processes import it without pytest.
"""

from __future__ import annotations

import os
import pickle
import traceback

import numpy as np
import torch

CASES = (
    "fermi",
    "fermi_sensitive",
    "dpsgd",
    "raco",
    "global_scaling",
    "dpsgdf",
    "fermi_random",
    # about one row per rank and step: a rank's batch is often empty while the other's is not
    "fermi_tiny",
    "raco_tiny",
    # sample weights: each rank keeps its block of them too
    "fermi_weighted",
)


def make_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    X[:, 0] += 1.5 * s
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0.75).astype(np.int64)
    return X, y, s


def estimator(case: str, **extra):
    """The estimator of ``case`` (RDP accounting where offered: PLD dominates tiny fits)."""
    return _fast_accounting(_make(case, **extra))


def _make(case: str, **extra):
    from skfairdp import (
        DPFermiClassifier,
        DPSGDClassifier,
        DPSGDFClassifier,
        GlobalScalingDPClassifier,
        RaCODPClassifier,
    )

    common = {
        "epsilon": 8.0,
        "noise_multiplier": 1.0,
        "batch_size": 64,
        "max_epochs": 2,
        "random_state": 3,
    }
    common.update(extra)
    if case == "fermi":
        return DPFermiClassifier(fairness_weight=1.0, **common)
    if case == "fermi_sensitive":
        return DPFermiClassifier(
            fairness="equalized_odds", privacy_unit="sensitive", iterate="average", **common
        )
    if case == "fermi_tiny":
        return DPFermiClassifier(
            privacy_unit="sensitive", **{**common, "batch_size": 2, "max_epochs": 1}
        )
    if case == "raco_tiny":
        return RaCODPClassifier(**{**common, "batch_size": 2, "max_epochs": 1})
    if case == "fermi_weighted":
        return DPFermiClassifier(max_sample_weight=2.0, **common)
    if case == "fermi_random":
        return DPFermiClassifier(iterate="random", **common)
    if case == "dpsgd":
        return DPSGDClassifier(**common)
    if case == "raco":
        return RaCODPClassifier(**common)
    if case == "global_scaling":
        return GlobalScalingDPClassifier(**common)
    if case == "dpsgdf":
        return DPSGDFClassifier(**common)
    raise ValueError(case)


def _fast_accounting(est):
    if "accountant" in est.get_params() and est.get_params().get("privacy_unit") != "sensitive":
        est.set_params(accountant="rdp")
    return est


def fit(est, X, y, s):
    """``est.fit`` with ``sensitive_features`` where the estimator takes them, and weights
    in [1, 2] where it bounds them."""
    weights = {}
    if est.get_params().get("max_sample_weight") == 2.0:
        weights["sample_weight"] = 1.0 + (np.arange(len(y)) % 3) / 2.0
    if type(est).__name__ in ("DPSGDClassifier", "GlobalScalingDPClassifier"):
        return est.fit(X, y, **weights)
    return est.fit(X, y, sensitive_features=s, **weights)


def fitted_state(est) -> dict:
    params = torch.cat([p.detach().reshape(-1) for p in est.module_.parameters()]).numpy()
    return {
        "params": params.copy(),
        # the dual state: DP-FERMI's W, RaCO-DP's lambda
        "dual": np.asarray(getattr(est, "W_", getattr(est, "lambda_", np.zeros(0)))).copy(),
        "event": repr(est.dp_event_),
        "spent": (est.privacy_spent_.epsilon, est.privacy_spent_.delta),
        "steps": est.n_steps_,
    }


def fit_cases(rank: int) -> dict:
    import warnings

    from skfairdp.distributed import data_parallel

    X, y, s = make_data()
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in CASES:
            calls = _count_all_reduces()
            out[case] = fitted_state(fit(estimator(case), X, y, s))
            out[case]["all_reduces"] = calls.pop()
        # each rank passes only its block: the same fit as shard="full"
        lo, hi = (0, 150) if rank == 0 else (150, 300)
        with data_parallel(shard="local"):
            est = estimator("fermi").fit(X[lo:hi], y[lo:hi], sensitive_features=s[lo:hi])
        out["fermi_local"] = fitted_state(est)
        secure = estimator("fermi", secure_mode=True, random_state=None)
        out["fermi_secure"] = fitted_state(secure.fit(X, y, sensitive_features=s))
        # ranks that disagree get a clear error (on every rank)
        for name, make in {
            "lr": lambda: estimator("fermi", lr=0.1 if rank == 0 else 0.2).fit(
                X, y, sensitive_features=s
            ),
            "n_features": lambda: _local_features(rank, X, y, s),
            "data": lambda: estimator("fermi").fit(X + rank, y, sensitive_features=s),
        }.items():
            try:
                make()
                out[f"error_{name}"] = None
            except ValueError as exc:
                out[f"error_{name}"] = str(exc)
    return out


def _count_all_reduces() -> list:
    """Count ``torch.distributed.all_reduce`` calls until the list is popped."""
    import torch.distributed as dist

    original = getattr(dist.all_reduce, "__wrapped__", dist.all_reduce)
    calls = [0]

    def counted(*args, **kwargs):
        if calls:
            calls[0] += 1
        return original(*args, **kwargs)

    counted.__wrapped__ = original
    dist.all_reduce = counted
    return calls


def _local_features(rank, X, y, s):
    from skfairdp.distributed import data_parallel

    columns = 3 if rank == 0 else 2
    with data_parallel(shard="local"):
        return estimator("fermi").fit(X[:, :columns], y, sensitive_features=s)


def run_rank(rank: int, world_size: int, init_file: str, out_dir: str) -> None:
    """One rank: join the group (file init, no port), fit every case, pickle the results."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size
    )
    try:
        result = fit_cases(rank)
    except Exception:  # the test reads the traceback
        result = {"traceback": traceback.format_exc()}
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(result, f)
