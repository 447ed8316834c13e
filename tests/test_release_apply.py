"""The engine's step is release (clip + noise, on a batch) then apply (optimizer and dual update).

Regression: for the same seed, one-process training ``apply(release(...))`` gives the
models the fused step gave before the split (golden values recorded from commit
36ae028 by ``python tests/test_release_apply.py``, bit for bit up to float tolerance).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import make_biased_data  # noqa: E402

from skfairdp import (  # noqa: E402
    DPFermiClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    GlobalScalingDPClassifier,
    RaCODPClassifier,
)

GOLDEN = Path(__file__).parent / "data" / "release_apply_golden.npz"

CASES = {
    "fermi-dp": lambda: DPFermiClassifier(fairness_weight=2.0),
    "fermi-eo-mlp": lambda: DPFermiClassifier(
        fairness="equalized_odds", fairness_weight=2.0, hidden_layer_sizes=(4,)
    ),
    "fermi-sensitive": lambda: DPFermiClassifier(fairness_weight=2.0, privacy_unit="sensitive"),
    "fermi-nonprivate": lambda: DPFermiClassifier(fairness_weight=2.0, epsilon=np.inf),
    "raco-gaussian": lambda: RaCODPClassifier(tolerance=0.05),
    "raco-laplace": lambda: RaCODPClassifier(tolerance=0.05, histogram_noise="laplace"),
    "adapt": lambda: GlobalScalingDPClassifier(z_init=2.0),
    "clip": lambda: GlobalScalingDPClassifier(variant="clip"),
    "dpsgdf": lambda: DPSGDFClassifier(),
    "fairlens": lambda: FairLensClassifier(),
}


def _fit(name):
    X, y, s = make_biased_data(n=300, seed=5)
    est = CASES[name]()
    if "epsilon=inf" not in repr(est):
        est.set_params(epsilon=2.0)
    est.set_params(max_epochs=3, batch_size=50, random_state=11)
    kwargs = {} if isinstance(est, GlobalScalingDPClassifier) else {"sensitive_features": s}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, **kwargs)
    out = {f"{name}/{k}": v.detach().cpu().numpy() for k, v in est.module_.state_dict().items()}
    out[f"{name}/proba"] = est.predict_proba(X)
    for attr in ("W_", "lambda_", "z_history_", "group_clip_history_"):
        if hasattr(est, attr):
            out[f"{name}/{attr}"] = np.asarray(getattr(est, attr))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_seed_same_model_as_the_fused_step(name):
    golden = np.load(GOLDEN)
    got = _fit(name)
    expected = {k: golden[k] for k in golden.files if k.startswith(f"{name}/")}
    assert set(got) == set(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


if __name__ == "__main__":  # regenerate the golden file (only from the pre-split code)
    values = {}
    for case in sorted(CASES):
        values.update(_fit(case))
    np.savez_compressed(GOLDEN, **values)
    print(f"wrote {len(values)} arrays to {GOLDEN}")
