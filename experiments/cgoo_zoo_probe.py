"""CGOO's defaults across a zoo of tables (issue 34): which default change costs where.

Per table, seed and difference bound (demographic parity, epsilon = 1, delta = 1e-5):
a 75/25 ``train_test_split(random_state=seed, stratify=group)``, a CGOOReduction
fit under one *setting* (below), hard test predictions (``predict(random_state=seed)``),
test error and test DP violation; plus the majority class and non-private fairlearn
``ExponentiatedGradient(LogisticRegression, DP bound 0.02)`` per seed as anchors.

Settings (the three issue-24 changes, each alone and together):

* ``new``: the issue-24 defaults (the cap on every private oracle call);
* ``current``: the defaults of this tree;
* ``old``: ``T = round((n eps)^(2/3) / 50)`` in [3, 20], ``budget_split=(0.05, 0.15, 0.8)``,
  oracle weights scaled by their largest (no cap);
* ``T100``: ``old`` with ``T`` from the divisor 100 only;
* ``split``: ``old`` with the issue-24 ``"auto"`` split for the old ``T`` only;
* ``cap``: ``old`` with the 1.5 x mean weight cap only;
* ``new-nocap`` / ``new-oldsplit`` / ``new-T50``: ``new`` less one change;
* ``new-cap<x>``: ``new`` with the weight cap at ``x`` times the mean, on every call;
* ``new-always`` / ``new-alt`` / ``new-adaptive``: the cap (1.5) on every private
  oracle call (the issue-24 default), on the odd calls, or by ``cgoo_capped_task``'s
  adaptive rule; ``old``, ``cap`` etc. cap on every call.

Tables (raw columns from ``zoo_data/``): ``hi`` (Ecdat HI, white/black, label whi,
group black), ``hmda`` (AER HMDA, label deny == "no", group afam; every setting predicts
the majority class there), ``college`` (AER CollegeDistance, label education >= 14
years, group ethnicity == "afam", 4,739 rows; the zoo's ``college-distance`` labels
education > 12 with three groups), the Adult 5 % women draw of ``minority_share.py``,
and bundled datasets by name.

Example::

    python experiments/cgoo_zoo_probe.py --tables hi --settings new old --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

#: the zoo's shipped raw tables (experiments/zoo_data, built by zoo_data/make.py)
ZOO_DATA = Path(__file__).parent / "zoo_data"
OUT = Path(__file__).parent / "results" / "cgoo_zoo_probe.csv"
FIELDS = [
    "table",
    "setting",
    "bound",
    "seed",
    "n_train",
    "T",
    "stat_share",
    "error",
    "dp",
    "seconds",
]


def _zscore(df):
    import pandas as pd

    X = pd.get_dummies(df, dtype=float).to_numpy(np.float64)
    sd = X.std(0)
    sd[sd == 0] = 1.0
    return ((X - X.mean(0)) / sd).astype(np.float32)


def load(table):
    """``X, y, s`` (s: 1 for the minority group)."""
    import pandas as pd

    if table == "hi":
        d = pd.read_csv(ZOO_DATA / "hi.csv.gz")
        d = d[d.race.isin(["white", "black"])]
        y = (d.whi == "yes").to_numpy(int)
        s = (d.race == "black").to_numpy(int)
        f = d[["whrswk", "experience", "kidslt6", "kids618", "husby"]].astype(float)
        for c in ("hhi", "hhi2", "hispanic"):
            f[c] = (d[c] == "yes").astype(float)
        f = pd.concat([f, pd.get_dummies(d[["education", "region"]], dtype=float)], axis=1)
        return _zscore(f), y, s
    if table == "hmda":
        d = pd.read_csv(ZOO_DATA / "hmda.csv.gz")
        y = (d.deny == "no").to_numpy(int)
        s = (d.afam == "yes").to_numpy(int)
        return _zscore(d.drop(columns=["deny", "afam"])), y, s
    if table == "college":
        d = pd.read_csv(ZOO_DATA / "college-distance.csv.gz")
        y = (d.education >= 14).to_numpy(int)
        s = (d.ethnicity == "afam").to_numpy(int)
        return _zscore(d.drop(columns=["education", "ethnicity"])), y, s
    if table == "adult-5":
        sys.path.insert(0, str(Path(__file__).parent))
        from minority_share import _load

        X, y, s, minority = _load("adult-sex", 0.05)
        return X, np.asarray(y).astype(int), (s == minority).astype(int)
    from skfairdp.datasets import load_dataset

    X, y, s = load_dataset(table, return_X_y_s=True)
    s = np.asarray(s)
    values, counts = np.unique(s, return_counts=True)
    return (
        np.asarray(X, np.float32),
        np.asarray(y).astype(int),
        (s == values[counts.argmin()]).astype(int),
    )


def dp_violation(pred, s):
    return abs(pred[s == 1].mean() - pred[s == 0].mean())


def setting_params(setting, n, eps):
    """(CGOOReduction kwargs, weight cap) for a setting on ``n`` training rows."""
    from skfairdp._fit import schedules as sch

    t_old = sch.reduction_iterations(n, eps, 50.0, *sch.CGOO_ITER_RANGE)
    t_100 = sch.reduction_iterations(n, eps, 100.0, *sch.CGOO_ITER_RANGE)
    fixed = (0.05, 0.15, 0.8)
    cap = sch.CGOO_ORACLE_WEIGHT_CAP if sch.CGOO_ORACLE_WEIGHT_CAP is not None else 1.5
    table = {
        "new": ({}, "default"),
        "old": ({"max_iter": t_old, "budget_split": fixed}, None),
        "T100": ({"max_iter": t_100, "budget_split": fixed}, None),
        "split": ({"max_iter": t_old, "budget_split": sch.cgoo_budget_split(t_old)}, None),
        "cap": ({"max_iter": t_old, "budget_split": fixed}, cap),
        "new-nocap": ({}, None),
        "new-oldsplit": ({"budget_split": fixed}, "default"),
        "new-T50": ({"max_iter": t_old}, "default"),
        "new-split35": ({"budget_split": (0.05, 0.35, 0.6)}, "default"),
    }
    if setting == "current":  # the defaults of this tree, whatever they are
        return {}, "current"
    if setting in ("new-alt", "new-adaptive", "new-always"):  # cgoo_capped_task's rules
        return {}, setting[4:]
    if setting.startswith("new-cap"):  # new-cap<x>: the defaults with the cap at x
        return {}, float(setting[len("new-cap") :])
    return table[setting]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--tables", nargs="+", default=["hi"])
    p.add_argument("--settings", nargs="+", default=["new", "old"])
    p.add_argument("--bounds", nargs="+", type=float, default=[0.02, 0.05])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--anchors", action="store_true", help="majority class and ExpGrad rows")
    p.add_argument("--out", default=str(OUT))
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    from sklearn.model_selection import train_test_split

    from skfairdp import CGOOReduction
    from skfairdp._fit import schedules as sch
    from skfairdp.reductions import atoms as atoms_mod

    default_cap = atoms_mod.CGOO_ORACLE_WEIGHT_CAP
    default_rule = sch.CGOO_ORACLE_CAP_RULE
    out = Path(a.out)
    new_file = not out.exists()
    with out.open("a", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        if new_file:
            w.writeheader()
        for table in a.tables:
            X, y, s = load(table)
            for seed in a.seeds:
                Xtr, Xte, ytr, yte, str_, ste = train_test_split(
                    X, y, s, test_size=0.25, random_state=seed, stratify=s
                )
                n = len(ytr)
                row = {"table": table, "seed": seed, "n_train": n}
                if a.anchors:
                    maj = int(ytr.mean() >= 0.5)
                    w.writerow(
                        {
                            **row,
                            "setting": "majority",
                            "bound": "",
                            "error": float((yte != maj).mean()),
                            "dp": 0.0,
                        }
                    )
                    from fairlearn.reductions import DemographicParity, ExponentiatedGradient
                    from sklearn.linear_model import LogisticRegression

                    t0 = time.time()
                    eg = ExponentiatedGradient(
                        LogisticRegression(max_iter=1000), DemographicParity(difference_bound=0.02)
                    ).fit(Xtr, ytr, sensitive_features=str_)
                    pr = eg.predict(Xte, random_state=seed)
                    w.writerow(
                        {
                            **row,
                            "setting": "expgrad",
                            "bound": 0.02,
                            "error": float((pr != yte).mean()),
                            "dp": dp_violation(pr, ste),
                            "seconds": round(time.time() - t0, 1),
                        }
                    )
                    fh.flush()
                for setting in a.settings:
                    kwargs, cap = setting_params(setting, n, a.epsilon)
                    rules = {"alt": "alternate", "adaptive": "adaptive", "always": "always"}
                    sch.CGOO_ORACLE_CAP_RULE = (
                        default_rule if cap == "current" else rules.get(cap, "always")
                    )
                    cap = "default" if cap in rules or cap == "current" else cap
                    atoms_mod.CGOO_ORACLE_WEIGHT_CAP = default_cap if cap == "default" else cap
                    for bound in a.bounds:
                        t0 = time.time()
                        est = CGOOReduction(
                            difference_bound=bound,
                            epsilon=a.epsilon,
                            delta=1e-5,
                            random_state=seed,
                            **kwargs,
                        ).fit(Xtr, ytr, sensitive_features=str_)
                        pr = est.predict(Xte, random_state=seed)
                        from skfairdp.reductions.inputs import check_budget_split

                        split = check_budget_split(est.budget_split, est.n_iter_)
                        w.writerow(
                            {
                                **row,
                                "setting": setting,
                                "bound": bound,
                                "T": est.n_iter_,
                                "stat_share": split[1],
                                "error": float((pr != yte).mean()),
                                "dp": dp_violation(pr, ste),
                                "seconds": round(time.time() - t0, 1),
                            }
                        )
                        fh.flush()
                        print(
                            table,
                            setting,
                            bound,
                            seed,
                            est.n_iter_,
                            split[1],
                            round(float((pr != yte).mean()), 4),
                            round(dp_violation(pr, ste), 4),
                            round(time.time() - t0, 1),
                            flush=True,
                        )
                    atoms_mod.CGOO_ORACLE_WEIGHT_CAP = default_cap


if __name__ == "__main__":
    main()
