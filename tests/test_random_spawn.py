"""RandomSource.spawn: independent, reproducible child streams for repeated oracle fits."""

import numpy as np
import pytest
import torch

from skfairdp import DPFermiClassifier
from skfairdp.privacy import RandomSource


def test_children_are_reproducible_and_distinct():
    first = [RandomSource(7).spawn().seed for _ in range(1)]
    parent = RandomSource(7)
    children = [parent.spawn() for _ in range(5)]
    assert children[0].seed == first[0]  # same parent seed, same first child
    assert len({c.seed for c in children}) == 5
    again = RandomSource(7)
    assert [again.spawn().seed for _ in range(5)] == [c.seed for c in children]


def test_children_draw_independent_noise():
    parent = RandomSource(0)
    a, b = parent.spawn(), parent.spawn()
    x, y = a.normal(20000, 1.0, dtype=torch.float64), b.normal(20000, 1.0, dtype=torch.float64)
    # correlation of independent N(0,1) samples: sd 1/sqrt(20000) = 0.007; 0.05 is 7 sd
    assert abs(float(torch.corrcoef(torch.stack([x, y]))[0, 1])) < 0.05
    assert not torch.equal(parent.normal(5, 1.0), RandomSource(0).spawn().normal(5, 1.0))


def test_secure_children_stay_secure():
    child = RandomSource(secure_mode=True).spawn()
    assert child.secure_mode and child.estimator_params() == {
        "random_state": None,
        "secure_mode": True,
    }


# 100 rows at epsilon 1: the noisy group priors of a child's fit may fall below rho
@pytest.mark.filterwarnings("ignore:.*below the minimum group fraction rho:UserWarning")
def test_oracle_fits_seeded_from_children_differ_but_reproduce(small_data):
    X, y, s = small_data
    parent = RandomSource(3)

    def fit(source):
        est = DPFermiClassifier(epsilon=1.0, max_epochs=2, batch_size=20)
        est.set_params(**source.estimator_params())
        return est.fit(X, y, sensitive_features=s).module_.layers[0].weight.detach().numpy()

    w1, w2 = fit(parent.spawn()), fit(parent.spawn())
    assert not np.allclose(w1, w2)  # independent noise, not the same noise twice
    replay = RandomSource(3)
    np.testing.assert_array_equal(fit(replay.spawn()), w1)
