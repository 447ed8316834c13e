"""RaCO-DP's dual walk (``skfairdp.raco.problem.DUAL_WALK``) swept on small tables (issue 34).

Each key fits RaCODPClassifier at gamma = 0.05, epsilon = 1, with the tolerance check on
and off, and records hard-prediction errors and violations on the zoo split's held-out
rows. Measured 0.15 (the default), 0.5 and 1.5 on chile-vote, islr-wage, card-wage,
acs12, aids2, college-distance, seeds 0-2 (``results/raco_dual_walk.csv``; not adopted:
doc/zoo.md, "Four more held-out tables").

Usage (from the repository root)::

    python experiments/raco_dual_walk_probe.py TABLES WALKS OUT.csv
    python experiments/raco_dual_walk_probe.py chile-vote,acs12 0.15,0.5,1.5 out.csv
"""

import itertools
import json
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parent))
import zoo  # noqa: E402

import skfairdp.raco.problem as P  # noqa: E402
from skfairdp import RaCODPClassifier  # noqa: E402
from skfairdp.fairness.metrics import demographic_parity_violation as dpv  # noqa: E402
from skfairdp.fairness.metrics import equalized_odds_violation as eov  # noqa: E402

torch.set_num_threads(1)


def one(key):
    table, notion, gamma, walk, seed = key
    P.DUAL_WALK = walk
    V = dpv if notion == "demographic_parity" else eov
    Xtr, Xte, ytr, yte, str_, ste = zoo.split(table, seed)
    out = dict(table=table, notion=notion, gamma=gamma, walk=walk, seed=seed)
    for enforce in (True, False):
        m = RaCODPClassifier(
            notion, gamma, epsilon=1.0, random_state=seed, enforce_tolerance=enforce
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(Xtr, ytr, sensitive_features=str_)
        ptr, pte = m.predict(Xtr, random_state=seed), m.predict(Xte, random_state=seed)
        tag = "" if enforce else "_raw"
        out.update(
            {
                f"train_viol{tag}": V(ytr, ptr, sensitive_features=str_),
                f"test_viol{tag}": V(yte, pte, sensitive_features=ste),
                f"test_err{tag}": float(np.mean(pte != yte)),
            }
        )
        if enforce:
            out["mixing"] = float(getattr(m, "tolerance_mixing_", 0.0) or 0.0)
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    tables = sys.argv[1].split(",")
    walks = [float(w) for w in sys.argv[2].split(",")]
    keys = list(
        itertools.product(
            tables, ["demographic_parity", "equalized_odds"], [0.05], walks, [0, 1, 2]
        )
    )
    with ProcessPoolExecutor(2) as ex:
        rows = list(ex.map(one, keys))
    pd.DataFrame(rows).to_csv(sys.argv[3], index=False)
