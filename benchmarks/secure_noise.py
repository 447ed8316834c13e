"""Cost of floating-point-safe noise under ``secure_mode=True`` (issue 35).

Before: secure releases added floating-point noise from ``os.urandom`` uniforms
(Box-Muller Gaussian, inverse-CDF Laplace). After: the statistic snapped to a
power-of-two grid plus integer noise (:mod:`skfairdp.privacy.grid`), drawn by table
inversion (:mod:`skfairdp.privacy.cdt`). The "before" path is reproduced in this
process by swapping the two grid releases in :mod:`skfairdp.privacy.mechanisms` for
the old noise (the same calls the old code made), and the exact rejection samplers of
:mod:`skfairdp.privacy.discrete` (the first grid version) are a third column, so all
run side by side, interleaved, on the same data. Measured:

- ``release``: one ``noisy_histogram`` call of ``d`` cells (Gaussian and Laplace) and
  a lone ``noisy_count``; each release's tables are built before timing (their
  one-off cost per noise scale is the ``table build`` rows, cold caches);
- ``fit``: the closed-form estimators' ``fit`` under ``secure_mode=True``
  (DPStandardScaler, DPOneHotEncoder, DPSimpleImputer) and a PrivateMetricFrame;
- ``dpsgd``: a 10,000-parameter gradient's noise: the exact discrete Gaussian on
  the grid against ``torch.normal`` (seeded, what a seeded DP-SGD step draws) and
  the old secure Box-Muller (what a secure DP-SGD step draws today).

Run::

    python benchmarks/secure_noise.py --repeats 15 [--cases REGEX]

Writes ``secure_noise.csv`` and ``.md``. Target (issue 35): closed-form releases at
<= 2x the old secure cost.
"""

from __future__ import annotations

import argparse
import platform
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import skfairdp.privacy.mechanisms as mechanisms
from skfairdp.evaluation import PrivateMetricFrame
from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler
from skfairdp.privacy import RandomSource, cdt, grid, noisy_count, noisy_histogram
from skfairdp.privacy.discrete import discrete_gaussian, two_sided_geometric
from skfairdp.privacy.grid import gaussian_release, laplace_release

warnings.filterwarnings("ignore")
NEW = {"gaussian_release": gaussian_release, "laplace_release": laplace_release}
SAMPLERS = {
    "discrete": (cdt.discrete_gaussian_cdt, cdt.two_sided_geometric_cdt),
    "exact": (lambda s2, d: discrete_gaussian(s2, d), two_sided_geometric),
}
IMPLS = ("float", "discrete", "exact")


def _old_gaussian(total, sensitivity, noise_multiplier, *, add_noise=True):
    if not add_noise:
        return total.clone()
    noise = RandomSource(secure_mode=True).normal(
        tuple(total.shape), noise_multiplier * sensitivity, dtype=total.dtype
    )
    return total + noise.to(total.device)


def _old_laplace(total, sensitivity, laplace_scale, *, add_noise=True):
    if not add_noise:
        return total.clone()
    noise = mechanisms.laplace_noise(
        RandomSource(secure_mode=True), tuple(total.shape), laplace_scale * sensitivity,
        total.device, total.dtype,
    )  # fmt: skip
    return total + noise


OLD = {"gaussian_release": _old_gaussian, "laplace_release": _old_laplace}


def use(impl: str) -> None:
    """``float``: the old secure noise; ``discrete``: the grid with table inversion (today);
    ``exact``: the grid with the exact rejection samplers (the first grid version)."""
    for name, fn in (OLD if impl == "float" else NEW).items():
        setattr(mechanisms, name, fn)
    if impl != "float":
        grid.discrete_gaussian_cdt, grid.two_sided_geometric_cdt = SAMPLERS[impl]


def build_rows() -> list[dict]:
    """Cold table builds (once per noise scale, then cached) for the release cases' scales."""
    rows = []
    for d in (1, 16, 256, 4096):
        for name, fn in (
            ("gaussian", lambda d=d: cdt.gaussian_plan(grid.gaussian_grid(1.0, 2.0, d)[2].sigma2)),
            ("laplace", lambda d=d: cdt.geometric_plan(grid.laplace_grid(1.0, 2.0, d)[2])),
        ):
            cdt.gaussian_plan.cache_clear(), cdt.gaussian_table.cache_clear()
            cdt.geometric_plan.cache_clear()
            rows.append(dict(case=f"table build {name} d={d}", impl="discrete", repeat=0,
                             seconds=seconds(fn)))  # fmt: skip
    return rows


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cases(rng):
    n = 5000
    X = rng.normal(size=(n, 10))
    holes = X.copy()
    holes[::7, 1] = np.nan
    cats = rng.integers(0, 4, size=(n, 3))
    y, s = rng.integers(0, 2, n), rng.integers(0, 3, n)
    secure = RandomSource(secure_mode=True)
    out = {}
    for d in (1, 16, 256, 4096):
        counts = torch.as_tensor(rng.uniform(0, 100, d))
        out[f"release gaussian d={d}"] = lambda c=counts: noisy_histogram(
            c, secure, noise_multiplier=2.0
        )
        out[f"release laplace d={d}"] = lambda c=counts: noisy_histogram(
            c, secure, laplace_scale=2.0
        )
    count = torch.tensor(41.0, dtype=torch.float64)
    out["release noisy_count (a lone count)"] = lambda: noisy_count(count, 2.0, secure)
    out["fit DPStandardScaler 5000x10"] = lambda: DPStandardScaler(
        bounds=(-4, 4), epsilon=1.0, secure_mode=True
    ).fit(X)
    out["fit DPOneHotEncoder 5000x3"] = lambda: DPOneHotEncoder(
        [[0, 1, 2, 3]] * 3, epsilon=1.0, secure_mode=True
    ).fit(cats)
    out["fit DPSimpleImputer 5000x10"] = lambda: DPSimpleImputer(
        bounds=(-4, 4), epsilon=1.0, secure_mode=True
    ).fit(holes)
    out["PrivateMetricFrame 5000 rows"] = lambda: PrivateMetricFrame(
        metrics="accuracy_score", y_true=y, y_pred=1 - y, sensitive_features=s,
        epsilon=1.0, n_draws=100, secure_mode=True,
    ).by_group  # fmt: skip
    return out


def dpsgd_rows(repeats: int, size: int = 10_000) -> list[dict]:
    sigma, generator = 1.0, torch.Generator().manual_seed(0)
    secure = RandomSource(secure_mode=True)
    zeros = torch.zeros(size)
    exact_v = grid.gaussian_grid(1.0, sigma, size)[2]
    fns = {
        "torch.normal (seeded)": lambda: torch.normal(0.0, sigma, (size,), generator=generator),
        "Box-Muller from os.urandom (secure today)": lambda: secure.normal(size, sigma),
        "grid discrete Gaussian (table inversion)": lambda: gaussian_release(zeros, 1.0, sigma),
        "grid discrete Gaussian (exact rejection)": lambda: discrete_gaussian(exact_v, size),
    }
    gaussian_release(zeros, 1.0, sigma)  # builds the tables
    rows = []
    for repeat in range(repeats):
        for name, fn in fns.items():
            rows.append(dict(case=f"dpsgd noise {size} params", impl=name, repeat=repeat,
                             seconds=seconds(fn)))  # fmt: skip
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--cases", default="", help="only the cases matching this regex")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = build_rows()
    for name, fn in cases(rng).items():
        if not re.search(args.cases, name):
            continue
        impls = IMPLS if name.startswith("release") else IMPLS[:2]
        for impl in impls:  # warm-up (builds the tables)
            use(impl)
            fn()
        for repeat in range(args.repeats):
            for impl in impls:
                use(impl)
                rows.append(dict(case=name, impl=impl, repeat=repeat, seconds=seconds(fn)))
        print(name, flush=True)
    use("discrete")
    if re.search(args.cases, "dpsgd"):
        rows += dpsgd_rows(args.repeats)
    df = pd.DataFrame(rows)
    df.to_csv(args.out / "secure_noise.csv", index=False)
    builds = df[df.case.str.startswith("table build")].set_index("case")["seconds"] * 1e3
    closed = df[~df.case.str.startswith(("dpsgd", "table build"))]
    med = closed.groupby(["case", "impl"], sort=False)["seconds"].median().unstack() * 1e3
    med["ratio"] = med["discrete"] / med["float"]
    med["exact / float"] = med["exact"] / med["float"]
    sgd = df[df.case.str.startswith("dpsgd")].groupby("impl", sort=False)["seconds"].median()
    sgd = (sgd * 1e3).rename("ms").to_frame()
    if len(sgd):
        sgd["ratio to torch.normal"] = sgd["ms"] / sgd["ms"].iloc[0]
    lines = [
        "# Floating-point-safe noise under secure_mode: cost (issue 35)",
        "",
        f"Command: `python benchmarks/secure_noise.py --repeats {args.repeats} --threads "
        f"{args.threads}`. torch {torch.__version__}, numpy {np.__version__}, "
        f"{platform.processor() or 'cpu'}. Medians (ms) over {args.repeats} interleaved runs; "
        "`float` = the old secure path (floating-point noise from os.urandom uniforms), "
        "`discrete` = grid + integer noise by table inversion (today's secure path), "
        "`exact` = grid + the exact rejection samplers (the first grid version); "
        "`ratio` = discrete / float. The machine was shared with other jobs.",
        "",
        "## Closed-form releases (secure_mode=True)",
        "",
        med.reset_index().to_markdown(index=False, floatfmt=".3f"),
        "",
        "## Table builds (once per noise scale, then cached; cold, ms)",
        "",
        builds.rename("ms").reset_index().to_markdown(index=False, floatfmt=".1f"),
        "",
        "## A DP-SGD step's gradient noise (10,000 parameters, CPU)",
        "",
        sgd.reset_index().to_markdown(index=False, floatfmt=".3f") if len(sgd) else "(not run)",
        "",
        "## Target (issue 35): closed-form releases <= 2x the old secure cost",
        "",
    ]
    for name, row in med.iterrows():
        ok = row["ratio"] <= 2.0
        lines.append(f"- {'PASS' if ok else 'FAIL'}: {name} {row['ratio']:.2f}x")
    (args.out / "secure_noise.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
