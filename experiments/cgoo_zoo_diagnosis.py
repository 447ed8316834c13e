"""Where does CGOOReduction's error on the zoo come from? (issue 34)

Zoo protocol (``zoo.split``), DP bound 0.05, seeds 0 1; for each table:
the zoo's CGOO at epsilon 1, the same reduction at epsilon inf, the private
oracle alone (unconstrained DPSGDClassifier with cgoo's default oracle schedule,
full budget), and variants given on the command line. Reports test error, test DP,
the weight on the constant atoms and the number of atoms.

    PYTHONPATH=. python experiments/cgoo_zoo_diagnosis.py --tables cps1988 \
        --variants base inf oracle
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import torch  # noqa: E402
import zoo  # noqa: E402

from skfairdp import CGOOReduction, DPSGDClassifier  # noqa: E402
from skfairdp._fit.schedules import cgoo_oracle_params  # noqa: E402
from skfairdp.fairness.metrics import demographic_parity_violation  # noqa: E402
from skfairdp.reductions.atoms import ConstantAtom  # noqa: E402

VARIANTS = {
    "base": {},
    "inf": {"epsilon": math.inf},
    "margin0": {"noise_margin": 0.0},
    "objmargin0.5": {"noise_margin_pair": (0.5, 0.5)},
    "iter3": {"max_iter": 3},
    "iter6": {"max_iter": 6},
    "iter10": {"max_iter": 10},
    "iter20": {"max_iter": 20},
    "split_oracle": {"budget_split": (0.05, 0.15, 0.8)},
}


def run(table, variant, seed, bound):
    Xtr, Xte, ytr, yte, s_tr, s_te = zoo.split(table, seed)
    t0 = time.perf_counter()
    info = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if variant == "oracle":
            model = DPSGDClassifier(epsilon=1.0, random_state=seed, **cgoo_oracle_params(len(ytr)))
            model.fit(Xtr, ytr)
            pred = model.predict(Xte)
        else:
            kw = dict(VARIANTS[variant])
            model = CGOOReduction(
                constraints="demographic_parity", difference_bound=bound, random_state=seed,
                **{k: v for k, v in kw.items() if k != "noise_margin_pair"},
            )  # fmt: skip
            model.fit(Xtr, ytr, sensitive_features=s_tr)
            pred = zoo._predict(model, Xte, s_te, seed)
            const = sum(
                w for a, w in zip(model.predictors_, model.weights_) if isinstance(a, ConstantAtom)
            )
            info = {"const_w": const, "atoms": len(model.predictors_), "T": model.n_iter_}
    err = float(np.mean(pred != yte))
    dp = demographic_parity_violation(yte, pred, sensitive_features=s_te)
    return err, dp, info, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    tables = ["cps1988", "communities-crime", "college-distance"]
    p.add_argument("--tables", nargs="+", default=tables)
    p.add_argument("--variants", nargs="+", default=["base", "inf", "oracle"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--bound", type=float, default=0.05)
    a = p.parse_args()
    torch.set_num_threads(1)
    for table in a.tables:
        for variant in a.variants:
            res = [run(table, variant, seed, a.bound) for seed in a.seeds]
            e = np.mean([r[0] for r in res])
            d = np.mean([r[1] for r in res])
            infos = [r[2] for r in res]
            extra = ""
            if infos[0]:
                const = [round(float(i["const_w"]), 2) for i in infos]
                extra = f" const_w={const} atoms={[i['atoms'] for i in infos]} T={infos[0]['T']}"
            per_seed = " ".join(f"{r[0]:.3f}@{r[1]:.3f}" for r in res)
            seconds = sum(r[3] for r in res)
            print(
                f"{table:18s} {variant:13s} err={e:.3f} dp={d:.3f} ({per_seed})"
                f" {seconds:.0f}s{extra}",
                flush=True,
            )


if __name__ == "__main__":
    main()
