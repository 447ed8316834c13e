"""``max_epochs="auto"`` on large tables (a cap on steps) and the long-fit announcement."""

import math

import numpy as np
import pytest

from skfairdp import DPFermiClassifier, DPSGDClassifier, RaCODPClassifier
from skfairdp._fit import schedules
from skfairdp._fit.schedules import resolve_schedule
from skfairdp.datasets import load_adult, load_communities_crime, load_german_credit
from skfairdp.engine import loop

ESTIMATORS = [DPFermiClassifier, RaCODPClassifier, DPSGDClassifier]
# the rule before the cap: min_epochs passes, or more to take min_steps steps
OLD = {
    DPFermiClassifier: (schedules.FERMI_MIN_EPOCHS, schedules.FERMI_MIN_STEPS, True),
    RaCODPClassifier: (schedules.RACO_MIN_EPOCHS, schedules.RACO_MIN_STEPS, True),
    DPSGDClassifier: (schedules.DPSGD_MIN_EPOCHS, schedules.DPSGD_MIN_STEPS, False),
}


def old_auto_epochs(cls, n_samples: int, batch_size: int) -> int:
    min_epochs, min_steps, whole = OLD[cls]
    per_epoch = (
        max(1, math.ceil(n_samples / batch_size)) if whole else max(1.0, n_samples / batch_size)
    )
    return int(max(min_epochs, math.ceil(min_steps / per_epoch)))


def _n_rows(loader) -> int:
    return len(loader().target)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("loader", [load_german_credit, load_communities_crime, load_adult])
def test_auto_schedule_unchanged_on_bundled_tables(cls, loader):
    n = _n_rows(loader)
    for rows in (n, int(0.8 * n)):  # the whole table and a train split
        batch, epochs = resolve_schedule(cls(epsilon=1.0), rows)
        assert epochs == old_auto_epochs(cls, rows, batch), (cls.__name__, rows)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("n", [10**5, 3 * 10**5, 10**6, 3 * 10**6, 10**8])
def test_auto_epochs_cut_to_about_max_steps_on_large_tables(cls, n):
    batch, epochs = resolve_schedule(cls(epsilon=1.0), n)
    per_epoch = n / batch
    old = old_auto_epochs(cls, n, batch)
    assert 1 <= epochs <= old
    if old * per_epoch > schedules.MAX_AUTO_STEPS:
        # the fewest passes that still take MAX_AUTO_STEPS steps
        assert epochs * math.ceil(per_epoch) >= schedules.MAX_AUTO_STEPS
        assert epochs == 1 or (epochs - 1) * per_epoch < schedules.MAX_AUTO_STEPS
    else:
        assert epochs == old
    if n >= 10**8:
        assert epochs == 1


def _small_fit(**params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    est = DPSGDClassifier(epsilon=1.0, batch_size=16, max_epochs=2, random_state=0, **params)
    return est.fit(X, y)


def test_long_fit_prints_its_expected_duration(monkeypatch, capsys):
    monkeypatch.setattr(loop, "ANNOUNCE_SECONDS", 0.0)
    _small_fit(verbose=1)
    out = capsys.readouterr().out
    assert "this fit takes 50 steps: expect about" in out
    assert "first 20 steps took" in out


def test_short_fit_says_nothing(recwarn, capsys):
    _small_fit(verbose=1)
    assert "expect about" not in capsys.readouterr().out
    assert not [w for w in recwarn if issubclass(w.category, loop.LongFitWarning)]


def test_very_long_fit_warns_at_any_verbosity(monkeypatch):
    monkeypatch.setattr(loop, "WARN_SECONDS", 0.0)
    with pytest.warns(loop.LongFitWarning, match="expect about"):
        _small_fit(verbose=0)
