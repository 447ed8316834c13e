"""``benchmarks/peers.py``: its pieces on tiny synthetic rows, without opacus.

The full run (and Opacus itself, whose noise calibration alone takes tens of seconds on
2 cores) is not a test: the benchmarks are never required by the suite.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import dp_accounting
import numpy as np
import pytest

PEERS = Path(__file__).resolve().parents[1] / "benchmarks" / "peers.py"


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("peers_benchmark", PEERS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny(n=512, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    s = rng.integers(0, 2, n).astype(np.int64)
    y = (X[:, 0] + s + rng.normal(size=n) > 0.5).astype(np.int64)
    return X, y, s


def test_rdp_epsilon_of_a_known_event(peers):
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 100
    )
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(event)
    assert peers.rdp_epsilon(event, 1e-5) == pytest.approx(accountant.get_epsilon(1e-5))


def test_authors_loop_reimplementation_runs(peers):
    X, y, s = tiny()
    seconds = peers.authors_fermi_loop_step_seconds(X, y, s, n_steps=1)
    assert seconds > 0


def test_opacus_missing_is_skipped_with_a_message(peers, monkeypatch):
    monkeypatch.setitem(sys.modules, "opacus", None)  # import opacus now raises ImportError
    X, y, s = tiny()
    row, message = peers.run_opacus(X, y, (X, y, s), epochs=1)
    assert row is None and "opacus not installed" in message
