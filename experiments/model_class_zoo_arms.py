"""Issue 37: which encoding of the continuous columns a private base should get, table by table.

Over every table of the zoo, 75/25 splits stratified by (group, label), hard test
predictions, demographic parity, total ε = 1, each estimator at its defaults
(``--estimator``): ``dpto``, DPThresholdOptimizer on ``DPSGDClassifier`` (its ``"auto"``
batch and epochs, lr 1); ``dpto_eo``, the same for equalized odds (its violation column
is then the equalized-odds violation); ``dpfermi``, ``raco``, ``cgoo``: DPFermiClassifier,
RaCODPClassifier, CGOOReduction (the group not used at predict), at their default knob
or at one given after ``@`` (``dpfermi@4``: ``fairness_weight=4``). Arms, on the zoo's
encoded features (continuous columns are z-scores; binary columns pass through):

- ``linear``: the features as they are (today's base);
- ``bins20``: each continuous column cut into 20 uniform bins of [-3, 3], one-hot
  (``DPKBinsDiscretizer``, public: reads no row);
- ``hybrid20``: the z-scores *and* those bins, the bins' one-hot block scaled by
  ``1 / sqrt(number of continuous columns)`` so that it adds at most 1 to a row's
  squared norm: a linear trend plus a shrunk step-function correction (``hybrid10``,
  ``hybrid40``: 10 or 40 bins).

Rows: table, estimator, arm, seed, epsilon spent, test error, DP violation, seconds,
appended to ``results/model_class_zoo_arms.tsv``; ``--report`` writes, per estimator, the
per-table means and the worst table of each arm against ``linear`` to
``results/model_class_zoo_arms.md``.

    python experiments/model_class_zoo_arms.py [--estimator dpfermi] [--tables adult hi]
        [--seeds 0 1 2] [--jobs 2]
    python experiments/model_class_zoo_arms.py --report
"""

from __future__ import annotations

import argparse
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "results" / "model_class_zoo_arms.tsv"
ARMS = ("linear", "bins20", "hybrid20", "hybrid10", "hybrid40")
COLUMNS = ["table", "estimator", "arm", "seed", "epsilon", "error", "dp_violation", "seconds"]
ESTIMATORS = ("dpto", "dpto_eo", "dpfermi", "raco", "cgoo")


def _scale(factor):
    from sklearn.preprocessing import FunctionTransformer

    return FunctionTransformer(lambda Z, f=factor: Z * f)


def _prep(arm: str, cont: list[int], other: list[int]):
    """``linear``, ``bins<k>`` or ``hybrid<k>`` (the trend and k unit-norm bins)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline

    from skfairdp.preprocessing import DPKBinsDiscretizer

    if arm == "linear":
        return "passthrough"
    k = int("".join(c for c in arm if c.isdigit()))
    bins = DPKBinsDiscretizer(bounds=(-3.0, 3.0), n_bins=k)
    if arm.startswith("bins"):
        return ColumnTransformer([("num", bins, cont), ("rest", "passthrough", other)])
    shrunk = make_pipeline(bins, _scale(1 / np.sqrt(len(cont))))
    return ColumnTransformer(
        [("num", "passthrough", cont), ("bins", shrunk, cont), ("rest", "passthrough", other)]
    )


def fit_one(key) -> list:
    import torch
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from zoo_tables import load_zoo_table

    from skfairdp import DPSGDClassifier
    from skfairdp.metrics import demographic_parity_violation, equalized_odds_violation
    from skfairdp.postprocessing import DPThresholdOptimizer
    from skfairdp.privacy import spent

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    name, estimator, arm, seed = key
    table = load_zoo_table(name)
    X, y = np.asarray(table.data, float), np.asarray(table.target)
    s = np.asarray(table.sensitive_features).astype(str)
    cont = [j for j in range(X.shape[1]) if len(np.unique(X[:, j])) > 2]
    other = [j for j in range(X.shape[1]) if j not in cont]
    Xtr, Xte, ytr, yte, s_tr, s_te = train_test_split(
        X, y, s, test_size=0.25, stratify=np.char.add(s, y.astype(str)), random_state=seed
    )
    notion = "equalized_odds" if estimator == "dpto_eo" else "demographic_parity"
    if estimator.startswith("dpto"):
        base = DPSGDClassifier(lr=1.0, random_state=seed)
        last = DPThresholdOptimizer(base, constraints=notion, epsilon=1.0, random_state=seed)
    else:
        from skfairdp import CGOOReduction, DPFermiClassifier, RaCODPClassifier

        make = {"dpfermi": DPFermiClassifier, "raco": RaCODPClassifier, "cgoo": CGOOReduction}
        knob = {"dpfermi": "fairness_weight", "raco": "tolerance", "cgoo": "difference_bound"}
        family, _, value = estimator.partition("@")  # "dpfermi@4": fairness_weight 4
        params = {knob[family]: float(value)} if value else {}
        last = make[family](epsilon=1.0, random_state=seed, **params)
    model = make_pipeline(_prep(arm, cont, other), last)
    step = model.steps[-1][0]
    tic = time.perf_counter()
    model.fit(Xtr, ytr, **{f"{step}__sensitive_features": s_tr})
    if estimator.startswith("dpto"):
        pred = model.predict(Xte, sensitive_features=s_te)
    else:
        pred = model.predict(Xte)
    violation = {
        "demographic_parity": demographic_parity_violation,
        "equalized_odds": equalized_odds_violation,
    }[notion]
    dp = violation(yte, pred, sensitive_features=s_te)
    error = float(np.mean(pred != yte))
    seconds = time.perf_counter() - tic
    return [name, estimator, arm, seed, round(spent(model).epsilon, 4), round(error, 5),
            round(float(dp), 5), round(seconds, 1)]  # fmt: skip


def report(out: Path = OUT) -> None:
    import pandas as pd

    frame_all = pd.read_csv(out, sep="\t", names=COLUMNS)
    lines = ["# Encodings of the continuous columns for a private base, table by table (issue 37)",
             "", "`python experiments/model_class_zoo_arms.py`; total ε = 1, demographic parity "
             "(equalized odds for `dpto_eo`), "
             "each estimator at its defaults (DPThresholdOptimizer on DPSGDClassifier with lr 1); "
             "hard test predictions; mean (sd) error @ mean DP violation over seeds; `vs linear`: "
             "the arm's mean error minus linear's, `*` where that is more than the larger seed "
             "sd, and `v` where its mean violation is above linear's by more than the larger "
             "violation sd.", ""]  # fmt: skip
    present = set(frame_all.estimator)
    ordered = [e for e in ESTIMATORS if e in present] + sorted(present - set(ESTIMATORS))
    for estimator in ordered:
        lines += [f"## {estimator}", ""] + _report_one(frame_all[frame_all.estimator == estimator])
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _report_one(df) -> list[str]:
    import pandas as pd

    cells = df.groupby(["table", "arm"]).agg(
        error=("error", "mean"), sd=("error", "std"), dp=("dp_violation", "mean"),
        dp_sd=("dp_violation", "std"), seeds=("seed", "nunique"),
    ).reset_index()  # fmt: skip
    wide = cells.pivot(index="table", columns="arm", values=["error", "sd", "dp", "dp_sd"])
    lines = []
    rows = []
    for table in wide.index:
        row = {"table": table}
        for arm in ARMS:
            if ("error", arm) in wide.columns and not np.isnan(wide.loc[table, ("error", arm)]):
                row[arm] = (f"{wide.loc[table, ('error', arm)]:.4f} "
                            f"({wide.loc[table, ('sd', arm)]:.4f}) @ "
                            f"{wide.loc[table, ('dp', arm)]:.3f}")  # fmt: skip
                if arm != "linear":
                    diff = wide.loc[table, ("error", arm)] - wide.loc[table, ("error", "linear")]
                    sd = max(wide.loc[table, ("sd", arm)], wide.loc[table, ("sd", "linear")])
                    rise = wide.loc[table, ("dp", arm)] - wide.loc[table, ("dp", "linear")]
                    dp_sd = max(
                        wide.loc[table, ("dp_sd", arm)], wide.loc[table, ("dp_sd", "linear")]
                    )
                    row[f"{arm} vs linear"] = (
                        f"{diff:+.4f}{' *' if diff > sd else ''}{' v' if rise > dp_sd else ''}"
                    )
        rows.append(row)
    frame = pd.DataFrame(rows)
    lines.append(frame.to_markdown(index=False))
    lines.append("")
    for arm in ARMS[1:]:
        col = f"{arm} vs linear"
        if col in frame:
            marks = frame[col].fillna("")
            diffs = marks.str.split(" ").str[0].replace("", np.nan).astype(float)
            worst = frame.table[diffs.idxmax()]
            worse = int(marks.str.contains("*", regex=False).sum())
            higher = int(marks.str.endswith("v").sum())
            lines.append(f"- {arm}: error worse beyond the sd on {worse} of "
                         f"{diffs.notna().sum()} tables, violation on {higher}; worst {worst} "
                         f"({diffs.max():+.4f}); best {frame.table[diffs.idxmin()]} "
                         f"({diffs.min():+.4f}).")  # fmt: skip
    return lines + [""]


def main(argv=None) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from zoo_tables import ZOO

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=list(ZOO))
    parser.add_argument("--arms", nargs="+", default=list(ARMS[:3]))
    parser.add_argument(
        "--estimator", default="dpto",
        help=f"one of {', '.join(ESTIMATORS)}, or an in-processing one at a knob: dpfermi@4",
    )  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--report", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=OUT,
        help="the rows' TSV (the report goes beside it as .md); e.g. the held-out tables' own",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.report:
        return report(args.out)
    keys = [(t, args.estimator, a, s) for t in args.tables for s in args.seeds for a in args.arms]
    with ProcessPoolExecutor(args.jobs) as pool:
        for row in pool.map(fit_one, keys, chunksize=1):
            with args.out.open("a") as f:
                f.write("\t".join(map(str, row)) + "\n")
            print("\t".join(map(str, row)), flush=True)


if __name__ == "__main__":
    main()
