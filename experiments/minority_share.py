"""Why the fairness knobs stop working when the minority group is small (issue item 1).

Adult by sex with the female group subsampled to a share of 2, 5, 10, 20 or 33 % of
the rows (all male rows kept, female rows drawn once with a fixed seed, 0; 33 % is
about the full table), optionally Adult by race (non-White subsampled; a share above
the table's 14 % subsamples the White rows instead). Per table and seed: a 75/25
``train_test_split(random_state=seed, stratify=group)``, then

* ``DPFermiClassifier`` at lambda in {0, 4, 16, 64}, epsilon = 1 (and lambda in
  {4, 64} at epsilon = inf as a reference), defaults otherwise;
* ``RaCODPClassifier`` at gamma in {0.02, 0.05}, epsilon = 1, defaults otherwise;
* the majority class and (non-private) fairlearn ``ExponentiatedGradient`` at
  demographic-parity bound 0.02 (LogisticRegression), as anchors.

Recorded per fit (``results/minority_share.csv``): hard test error, test and
training DP violation, :func:`~skfairdp.metrics.fair_violation_floor` of the test
split at the fit's operating point, and the causes:

* noise vs. the minority cells at epsilon = 1: the group-prior histogram's noise std
  (the rule of ``fermi/priors.py``: 5 % of epsilon) against the minority count, the
  released prior against the true share and what ``rho = 0.05`` clamps it to; the
  per-step noise on W's released histograms (``dual_noise_multiplier_`` over the
  expected batch size) against the expected number of minority rows per batch, and
  the noise of W's running mean (rate ``lr_dual_``) on the minority's rate; for
  RaCO-DP the per-step histogram noise against the minority rows per batch;
* lambda's effective scale: the psi coefficients' logit push ``c_1 - c_0`` per group
  (``c = 2 W[s] pinv[s] - sum_r W[r]^2``; the penalty's output gradient is
  ``lambda F_1 F_0 (c_1 - c_0)``), and the mean norm of the penalty's per-sample
  parameter gradient per group, at the trained model (``ErmiProblem``'s own
  ``primal_output_gradients``);
* the clip: per group, the fraction of rows whose per-sample gradient of
  ``loss + lambda psi`` (one vector under ``privacy_unit="record"``) exceeds
  ``max_grad_norm_``, and the penalty force left after clipping (norm of the mean
  clipped penalty gradient of the group's rows) against the per-step noise;
* the trajectory (``results/minority_share_epochs.csv``): per epoch, the hard
  positive rate of each group on the training rows and the quantities above at the
  current iterate (a callback; the fit's problem is captured by a subclass that keeps
  the ``ErmiProblem`` it builds).

These diagnostics read the raw training data: they are analysis only, not private,
and the models they describe should not be shipped with them.

Examples::

    python experiments/minority_share.py run --seeds 0 1
    python experiments/minority_share.py run --tables adult-race --shares 0.05 --seeds 0
    python experiments/minority_share.py report
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from _results_csv import append, completed
from sklearn.model_selection import train_test_split

from skfairdp import DPFermiClassifier, RaCODPClassifier
from skfairdp._fit.budget import reserved_noise_multiplier
from skfairdp.fermi.problem import GROUP_PRIOR_BUDGET_SHARE
from skfairdp.metrics import demographic_parity_violation, fair_violation_floor

RESULTS = Path(__file__).parent / "results"
CSV = RESULTS / "minority_share.csv"
EPOCHS_CSV = RESULTS / "minority_share_epochs.csv"
DELTA = 1e-5
DATA_SEED = 0
SHARES = (0.02, 0.05, 0.10, 0.20, 0.33)
#: table -> (bundled dataset, minority label)
TABLES = {
    "adult-sex": ("adult", "Female"),
    "adult-race": ("adult-race", "non-White"),
    # the held-out table's size (22,101 rows) and share (5.6 %): both groups drawn
    "adult-sex-22k": ("adult", "Female"),
    # a second table: Credit Card default by age (<= 25 at 12.9 % of 30,000 rows)
    "credit-age": ("credit-card-age", "<=25"),
    # a small table with a small group as it comes (ages < 25 or >= 60: 5.3 % of 4,521 rows)
    "bank": ("bank-marketing", "<25 or >=60"),
}
#: tables whose total number of rows is drawn too (after the share)
TABLE_ROWS = {"adult-sex-22k": 22_101}
FERMI_LAMBDAS = {1.0: (0.0, 4.0, 16.0, 64.0), math.inf: (4.0, 64.0)}
RACO_GAMMAS = (0.02, 0.05)
EXPGRAD_BOUND = 0.02
#: DPThresholdOptimizer's score bins: its default (50) and a coarser histogram
DPTO_BINS = (50.0, 20.0)
METHODS = ("majority", "dpfermi", "raco", "expgrad", "dpto")
#: Ablations, each removing one suspected cause (epsilon = 1, lambda in ABLATION_LAMBDAS):
#: ``rho``: rho = 0.01 (no clamp of a 2 % prior); ``public``: the true training share as
#: public group_priors (no prior noise) with rho = 0.01; ``clip``: max_grad_norm = 10 (the
#: record clip no longer binds the penalty); ``ascent``: lr_dual = 0.01 (the paper's
#: projected ascent instead of the shrunk best response). RaCO-DP at epsilon = inf
#: (``raco-inf``) separates its privacy noise from the train/test gap.
ABLATIONS = {
    "dpfermi-rho": {"rho": 0.01},
    "dpfermi-public": {"rho": 0.01, "group_priors": "true"},
    "dpfermi-clip": {"max_grad_norm": 10.0},
    "dpfermi-ascent": {"lr_dual": 0.01},
    # analysis only: W's running mean at the rate 0.05 (memory ~20 steps, the rate without
    # noise) instead of auto_dual_rate's 4/T at a small share (memory a quarter of the run)
    "dpfermi-fastw": {"_dual_rate": 0.05},
}
ABLATION_LAMBDAS = (16.0, 64.0)
KEY = ("table", "share", "method", "epsilon", "param", "seed")
GROUPS = ("min", "maj")
PROBE = [
    f"{q}_{g}"
    for q in ("pos_rate", "coef_gap", "loss_norm", "pen_norm", "clip_frac", "pen_kept", "force")
    for g in GROUPS
]
FIELDS = [
    *KEY, "n_train", "n_min_train", "true_share", "test_error", "test_violation",
    "train_error", "train_violation", "test_floor", "majority_error", "degenerate",
    "epsilon_spent", "fit_seconds", "batch_size", "max_grad_norm", "noise_multiplier",
    "noise_per_step", "prior_noise_std", "prior_released", "prior_used", "dual_noise_multiplier",
    "dual_cell_std", "min_rows_per_batch", "dual_rate", "dual_rate_noise", "loss_scale",
    "penalty_scale", "raco_count_std", "raco_rate_noise", *PROBE,
]  # fmt: skip
EPOCH_FIELDS = [*KEY, "epoch", *PROBE]


# --------------------------------------------------------------------------- data
def _load(table: str, share: float):
    """The table with its minority group at ``share`` of the rows (fixed draw)."""
    from skfairdp.datasets import load_dataset

    name, minority = TABLES[table]
    X, y, s = load_dataset(name, return_X_y_s=True)
    X, y, s = np.asarray(X, dtype=np.float32), np.asarray(y), np.asarray(s)
    rng = np.random.default_rng(DATA_SEED)
    is_min = s == minority
    if table in TABLE_ROWS:  # draw the rows first, then the share below
        total = TABLE_ROWS[table]
        n_min = round(share * total)
        rows = np.sort(
            np.concatenate(
                [
                    rng.choice(np.flatnonzero(is_min), n_min, False),
                    rng.choice(np.flatnonzero(~is_min), total - n_min, False),
                ]
            )
        )
        return X[rows], y[rows], s[rows], minority
    n_min, n_maj = int(is_min.sum()), int((~is_min).sum())
    if share < n_min / len(s) - 1e-3:  # draw minority rows
        keep_min = round(share / (1.0 - share) * n_maj)
        rows = np.sort(
            np.concatenate(
                [np.flatnonzero(~is_min), rng.choice(np.flatnonzero(is_min), keep_min, False)]
            )
        )
    elif share > n_min / len(s) + 0.02:  # draw majority rows
        keep_maj = round((1.0 - share) / share * n_min)
        rows = np.sort(
            np.concatenate(
                [np.flatnonzero(is_min), rng.choice(np.flatnonzero(~is_min), keep_maj, False)]
            )
        )
    else:  # about the whole table
        rows = np.arange(len(s))
    return X[rows], y[rows], s[rows], minority


def _split(data, seed: int):
    X, y, s, _ = data
    return train_test_split(X, y, s, test_size=0.25, random_state=seed, stratify=s)


# --------------------------------------------------------------------------- probes
class _Traced(DPFermiClassifier):
    """DPFermiClassifier that keeps the ``ErmiProblem`` and row tensors of its fit."""

    _dual_rate = None  # an ablation's override of W's running-mean rate

    def _make_problem(self, ctx, plan):
        problem = super()._make_problem(ctx, plan)
        if self._dual_rate is not None and problem.best_response:
            problem.dual_rate = self.lr_dual_ = float(self._dual_rate)
        self._probe = (problem, self._per_row_tensors(ctx), ctx.groups.copy())
        return problem


class _TracedRaco(RaCODPClassifier):
    def _make_problem(self, ctx, plan):
        problem = super()._make_problem(ctx, plan)
        self._probe = (problem, None, ctx.groups.copy())
        return problem


def _linear(module):
    params = [p for p in module.parameters()]
    if len(params) != 2 or params[0].dim() != 2:
        raise ValueError("the probes assume the default logistic-regression module")
    return params


def _minority_code(est, minority) -> int:
    return list(est.group_encoder_.group_labels_).index(minority)


def probe(est, X: torch.Tensor, minority: str) -> dict:
    """Per-group diagnostics of ``est``'s current module (and W, for DP-FERMI).

    Reads raw training rows: analysis only, not private.
    """
    problem, tensors, groups = est._probe
    mask_min = torch.as_tensor(groups == _minority_code(est, minority))
    out: dict = {}
    with torch.no_grad():
        outputs = est.module_(X)
        pred = outputs.argmax(dim=1).float()
        for g, mask in (("min", mask_min), ("maj", ~mask_min)):
            out[f"pos_rate_{g}"] = float(pred[mask].mean())
        if tensors is None:  # RaCO-DP: rates only
            return out
        _linear(est.module_)
        codes, weights = tensors
        batch = problem.prepare_batch(codes, weights)
        (grads,), _ = _output_grads(problem, outputs, batch)
        y = batch[0]
        F = torch.softmax(outputs, dim=1)
        d_loss = problem.loss_scale * F.scatter_add(
            1, y.unsqueeze(1), F.new_full((len(y), 1), -1.0)
        )
        d_pen = grads - d_loss
        xnorm = (X.pow(2).sum(dim=1) + 1.0).sqrt()  # ||[x, 1]||: a linear layer with bias
        loss_n = d_loss.norm(dim=1) * xnorm
        pen_n = d_pen.norm(dim=1) * xnorm
        tot_n = grads.norm(dim=1) * xnorm
        private = math.isfinite(est.epsilon)
        C = float(est.max_grad_norm_) if private else math.inf
        clip = (C / tot_n).clamp(max=1.0) if private else torch.ones_like(tot_n)
        own, shared = batch[-2], batch[-1]
        c = own + shared
        Xb = torch.cat([X, torch.ones(len(X), 1)], dim=1)
        n = len(X)
        for g, mask in (("min", mask_min), ("maj", ~mask_min)):
            out[f"coef_gap_{g}"] = float((c[mask, 1] - c[mask, 0]).mean())
            out[f"loss_norm_{g}"] = float(loss_n[mask].mean())
            out[f"pen_norm_{g}"] = float(pen_n[mask].mean())
            out[f"clip_frac_{g}"] = float((tot_n[mask] > C).float().mean())
            out[f"pen_kept_{g}"] = float((clip[mask] * pen_n[mask]).mean())
            # the group's share of the mean clipped penalty gradient (parameter space)
            force = (clip[mask, None] * d_pen[mask]).T @ Xb[mask] / n
            out[f"force_{g}"] = float(force.norm())
    return out


def _output_grads(problem, outputs, batch):
    grads, diag = problem.primal_output_gradients(outputs, *batch)
    if len(grads) == 2:  # "sensitive": (public, private)
        grads = (grads[0] + grads[1],)
    return grads, diag


class _EpochProbe:
    """Callback: :func:`probe` at the end of every epoch (the current iterate)."""

    def __init__(self, X, minority, key):
        self.X, self.minority, self.key, self.rows = torch.as_tensor(X), minority, key, []

    def on_epoch_end(self, net, **_):
        row = dict(zip(KEY, self.key))
        row["epoch"] = len(self.rows) + 1
        # 4 decimals: the trajectories file stays small
        row.update({k: round(v, 4) for k, v in probe(net, self.X, self.minority).items()})
        self.rows.append(row)


# --------------------------------------------------------------------------- runs
def _model(method, eps, param, seed, callbacks, s_tr=None, minority=None):
    common = {"epsilon": eps, "random_state": seed, "callbacks": callbacks}
    if math.isfinite(eps):
        common["delta"] = DELTA
    if method.startswith("dpfermi"):
        extra = dict(ABLATIONS.get(method, {}))
        if extra.get("group_priors") == "true":
            labels = sorted(np.unique(s_tr).tolist())
            extra["group_priors"] = {g: float(np.mean(s_tr == g)) for g in labels}
        dual_rate = extra.pop("_dual_rate", None)
        model = _Traced(fairness_weight=param, **common, **extra)
        model._dual_rate = dual_rate
        return model
    return _TracedRaco("demographic_parity", param, **common)


def _plan(tables, shares, methods, seeds):
    for seed in seeds:
        for table in tables:
            for share in shares:
                for method in methods:
                    if method == "dpfermi":
                        for eps, lambdas in FERMI_LAMBDAS.items():
                            for lam in lambdas:
                                yield table, share, method, eps, lam, seed
                    elif method == "raco":
                        for gamma in RACO_GAMMAS:
                            yield table, share, method, 1.0, gamma, seed
                    elif method == "raco-inf":
                        for gamma in RACO_GAMMAS:
                            yield table, share, method, math.inf, gamma, seed
                    elif method in ABLATIONS:
                        for lam in ABLATION_LAMBDAS:
                            yield table, share, method, 1.0, lam, seed
                    elif method == "expgrad":
                        yield table, share, method, math.inf, EXPGRAD_BOUND, seed
                    elif method == "dpto":  # DP-SGD + DPThresholdOptimizer; param: n_bins
                        for n_bins in DPTO_BINS:
                            yield table, share, method, 1.0, n_bins, seed
                    else:
                        yield table, share, method, math.inf, 0.0, seed


def _fit_one(method, eps, param, seed, split, minority, key):
    Xtr, Xte, ytr, yte, s_tr, s_te = split
    row = dict.fromkeys(FIELDS, math.nan)
    epochs: list = []
    start = time.perf_counter()
    degenerate = False
    if method == "majority":
        label = np.bincount(ytr).argmax()
        pred_tr, pred_te = np.full_like(ytr, label), np.full_like(yte, label)
        model = None
    elif method == "expgrad":
        from frontier import _NonPrivate

        model = _NonPrivate("expgrad", "demographic_parity", param, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(Xtr, ytr, s_tr)
        pred_tr, pred_te = model.predict(Xtr, s_tr), model.predict(Xte, s_te)
    elif method == "dpto":
        from skfairdp import DPSGDClassifier
        from skfairdp.postprocessing import DPThresholdOptimizer

        model = DPThresholdOptimizer(
            DPSGDClassifier(),
            constraints="demographic_parity",
            epsilon=eps,
            n_bins=int(param),
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(Xtr, ytr, sensitive_features=s_tr)
        pred_tr = model.predict(Xtr, sensitive_features=s_tr)
        pred_te = model.predict(Xte, sensitive_features=s_te)
    else:
        cb = _EpochProbe(Xtr, minority, key)
        model = _model(method, eps, param, seed, [cb], s_tr, minority)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(Xtr, ytr, sensitive_features=s_tr)
        degenerate = any(w.category.__name__ == "DegenerateModelWarning" for w in caught)
        pred_tr, pred_te = model.predict(Xtr), model.predict(Xte)
        epochs = cb.rows
    seconds = time.perf_counter() - start
    n_min = int((s_tr == minority).sum())
    row.update(dict(zip(KEY, key)))
    row.update(
        n_train=len(ytr), n_min_train=n_min, true_share=n_min / len(ytr),
        test_error=float(np.mean(pred_te != yte)),
        test_violation=demographic_parity_violation(yte, pred_te, sensitive_features=s_te),
        train_error=float(np.mean(pred_tr != ytr)),
        train_violation=demographic_parity_violation(ytr, pred_tr, sensitive_features=s_tr),
        test_floor=fair_violation_floor(yte, pred_te, sensitive_features=s_te, n_draws=5000),
        majority_error=float(np.mean(yte != np.bincount(ytr).argmax())),
        degenerate=degenerate, fit_seconds=seconds,
    )  # fmt: skip
    if model is not None and method not in ("expgrad", "dpto"):
        row.update(_causes(model, method, eps, Xtr, minority, n_min, len(ytr)))
    return row, epochs


def _causes(model, method, eps, Xtr, minority, n_min, n):
    """The fit's noise scales against the minority's cells, and the final probe."""
    m = float(model.batch_size_)
    p = n_min / n
    private = math.isfinite(eps)
    out = {
        "epsilon_spent": model.privacy_spent_.epsilon,
        "batch_size": m,
        "max_grad_norm": model.max_grad_norm_,
        "min_rows_per_batch": m * p,
    }
    z = getattr(model, "noise_multiplier_", None)
    if private and z is not None:
        out["noise_multiplier"] = z
        out["noise_per_step"] = z * model.max_grad_norm_ / m  # std per coordinate, mean grad
    if method.startswith("dpfermi"):
        code = _minority_code(model, minority)
        problem = model._probe[0]
        out.update(
            prior_released=float(model.group_priors_[0, code]),
            prior_used=float(problem.pinv[0, code]) ** -2,
            loss_scale=model.objective_scales_[0],
            penalty_scale=model.objective_scales_[1],
            dual_rate=model.lr_dual_,
        )
        if private:
            zs = (
                math.nan
                if model.group_priors is not None
                else reserved_noise_multiplier(
                    GROUP_PRIOR_BUDGET_SHARE, eps, DELTA, sensitivity=1.0
                )
            )
            out["prior_noise_std"] = zs  # sensitivity 1 count
            zw = model.dual_noise_multiplier_
            if zw is not None and math.isfinite(zw) and model.fairness_weight > 0:
                cell = zw / m  # per-cell std of a released batch histogram / m
                out["dual_noise_multiplier"] = zw
                out["dual_cell_std"] = cell
                # running-mean noise on the minority's rate P(Yhat=j | S=min)
                out["dual_rate_noise"] = cell * math.sqrt(model.lr_dual_ / 2.0) / p
        out.update(probe(model, torch.as_tensor(Xtr), minority))
    else:
        out.update(probe(model, torch.as_tensor(Xtr), minority))
        if private:
            sigma = float(model.histogram_noise_multiplier_)  # std per count (sensitivity 1)
            out["raco_count_std"] = sigma
            out["raco_rate_noise"] = sigma / (m * p)  # one step's noise on the minority rate
    return out


def run(tables, shares, methods, seeds, resume) -> None:
    RESULTS.mkdir(exist_ok=True)
    done = completed(CSV, KEY) if resume else set()
    torch.set_num_threads(1)
    cache: dict = {}
    for table, share, method, eps, param, seed in _plan(tables, shares, methods, seeds):
        key = (table, share, method, eps, param, seed)
        if tuple(map(str, key)) in done:
            continue
        if (table, share) not in cache:
            cache = {(table, share): _load(table, share)}
        data = cache[(table, share)]
        split = _split(data, seed)
        row, epochs = _fit_one(method, eps, param, seed, split, data[3], key)
        append(CSV, FIELDS, row)
        for e in epochs:
            append(EPOCHS_CSV, EPOCH_FIELDS, e)
        print(
            f"{table} share={share} {method:8s} eps={eps:<4} p={param:<5} seed={seed} "
            f"err={row['test_error']:.4f} dp={row['test_violation']:.4f} "
            f"train_dp={row['train_violation']:.4f} floor={row['test_floor']:.4f} "
            f"clip_min={row['clip_frac_min']:.2f} ({row['fit_seconds']:.1f}s)",
            flush=True,
        )


# --------------------------------------------------------------------------- report
def _fmt(mean, sd, digits=3) -> str:
    sd = 0.0 if sd is None or (isinstance(sd, float) and math.isnan(sd)) else sd
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def _table(df, columns, digits=3):
    """Mean ± sd over seeds of ``columns``, one row per (table, share, method, eps, param)."""
    keys = ["table", "share", "method", "epsilon", "param"]
    g = df.groupby(keys, sort=True)
    out = g.size().rename("seeds").reset_index()
    for col in columns:
        mean, sd = g[col].mean().to_numpy(), g[col].std().to_numpy()
        out[col] = [_fmt(a, b, digits) if not math.isnan(a) else "" for a, b in zip(mean, sd)]
    return out


def _swings(ep):
    """Per DP-FERMI fit at epsilon = 1: how far the iterate's group rates swing."""
    import pandas as pd

    ep = ep[ep.method.str.startswith("dpfermi") & (ep.param > 0)]
    rows = []
    for key, g in ep.groupby(list(KEY)):
        half = g.epoch.max() / 2.0
        low = g[["pos_rate_min", "pos_rate_maj"]].min(axis=1)
        gap = (g.pos_rate_maj - g.pos_rate_min).abs()
        first, second = g.epoch <= half, g.epoch > half
        rows.append(
            dict(
                zip(KEY, key),
                low_first=low[first].min(),
                low_second=low[second].min(),
                gap_sd_second=gap[second].std(),
                shrunk=float((g.coef_gap_min.abs() < 1e-9).mean()),
                clip_min=g.clip_frac_min.mean(),
                clip_maj=g.clip_frac_maj.mean(),
            )
        )
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    cols = ["low_first", "low_second", "gap_sd_second", "shrunk", "clip_min", "clip_maj"]
    return _table(df, cols)


def report() -> None:
    import pandas as pd

    df = pd.read_csv(CSV)
    df = df.sort_values(["table", "share", "method", "epsilon", "param"])
    seeds = sorted(df.seed.unique())
    lines = [
        "# Small minority groups: what we measured",
        "",
        "Written by `python experiments/minority_share.py report` from "
        "`results/minority_share.csv` (per-epoch trajectories: `minority_share_epochs.csv`). "
        "`adult-sex`: Adult by sex, the female group subsampled to each share (all male rows "
        "kept, a fixed draw; 0.33 is the whole table). `adult-race`: Adult by race, non-White "
        "subsampled to 5 %, White subsampled for 20 %. `adult-sex-22k`: 22,101 rows at a 5.6 % "
        "female share (the size and share of the held-out table of the issue). Methods: "
        "`dpfermi` (defaults, lambda = `param`), its ablations `dpfermi-rho` (rho = 0.01), "
        "`dpfermi-public` (true training share as public `group_priors`, rho = 0.01), "
        "`dpfermi-clip` (`max_grad_norm=10`), `dpfermi-ascent` (`lr_dual=0.01`, the paper's "
        "ascent), `dpfermi-fastw` (W's running-mean rate forced to 0.05, analysis only); "
        "`raco` (gamma = `param`) and `raco-inf` (its epsilon = inf reference); "
        "`expgrad` (fairlearn, non-private, bound 0.02); `majority`. "
        "75/25 splits stratified by group; hard predictions; mean ± sd over seeds "
        f"{', '.join(map(str, seeds))} (column `seeds`: how many behind a row). epsilon = 1 "
        "unless inf; delta = 1e-5. The diagnostics (`pos_rate`, `coef_gap`, `*_norm`, "
        "`clip_frac`, `pen_kept`, `force`) read the raw training rows at the trained model: "
        "analysis only, not private.",
        "",
        "## Outcomes",
        "",
        "`test_floor`: the expected test DP violation of an exactly fair classifier at the "
        "fit's positive rate on this test split (`fair_violation_floor`). `degenerate`: "
        "share of seeds with a DegenerateModelWarning.",
        "",
    ]
    df["degenerate"] = df.degenerate.astype(float)
    cols = ["test_error", "test_violation", "train_violation", "test_floor", "degenerate"]
    lines += [_table(df, cols).to_markdown(index=False), ""]
    private = df[df.method.isin(["dpfermi", "raco"]) & (df.epsilon == 1.0)]
    lines += [
        "## Noise against the minority's cells (epsilon = 1)",
        "",
        "`n_min_train`: minority rows in the training split. `prior_noise_std`: std of the "
        "group-prior histogram's noise per count (5 % of epsilon, sensitivity 1). "
        "`prior_released` / `prior_used`: the released minority prior and the one W uses "
        "(clamped at rho = 0.05). `min_rows_per_batch`: expected minority rows in a "
        "Poisson batch. `dual_cell_std`: std of one released W histogram cell (divided by "
        "the batch size), i.e. `dual_noise_multiplier / m`; `dual_rate_noise`: the noise "
        "of W's running mean (rate `dual_rate`) on the minority's rate P(Yhat | S=min). "
        "RaCO-DP: `raco_count_std` per histogram count and `raco_rate_noise`, one step's "
        "noise on the minority's positive rate (`raco_count_std / min_rows_per_batch`).",
        "",
    ]
    noise_cols = [
        "n_min_train", "prior_noise_std", "prior_released", "prior_used", "batch_size",
        "min_rows_per_batch", "dual_noise_multiplier", "dual_cell_std", "dual_rate",
        "dual_rate_noise", "raco_count_std", "raco_rate_noise",
    ]  # fmt: skip
    nz = private[private.param != 0.0].copy()
    lines += [_table(nz, noise_cols, 4).to_markdown(index=False), ""]
    fermi = df[df.method == "dpfermi"]
    lines += [
        "## lambda's effective scale and the clip (DP-FERMI, trained model)",
        "",
        "`coef_gap`: the psi coefficients' logit push `c_1 - c_0` on the group's rows "
        "(the penalty's output gradient is `lambda F_1 F_0 (c_1 - c_0)`; `c` carries "
        "`pinv[s] = p_S(s)^-1/2`). `pen_norm`, `loss_norm`: mean norm of the per-sample "
        "parameter gradient of `lambda psi` and of the loss. `clip_frac`: share of the "
        "group's rows whose gradient of `loss + lambda psi` exceeds `max_grad_norm` (3 "
        "here). `pen_kept`: the penalty norm after the row's clip factor. `force`: norm of "
        "the group's summed clipped penalty gradient over n (its part of the mean "
        "gradient), to compare with `noise_per_step` (std per coordinate of theta's noise "
        "on the mean gradient).",
        "",
    ]
    scale_cols = [
        "coef_gap_min", "coef_gap_maj", "pen_norm_min", "pen_norm_maj", "loss_norm_min",
        "loss_norm_maj", "clip_frac_min", "clip_frac_maj", "pen_kept_min", "pen_kept_maj",
        "force_min", "force_maj", "noise_per_step",
    ]  # fmt: skip
    lines += [_table(fermi, scale_cols, 3).to_markdown(index=False), ""]
    if EPOCHS_CSV.exists():
        ep = pd.read_csv(EPOCHS_CSV)
        swings = _swings(ep)
        if not swings.empty:
            lines += [
                "## Swings over training (DP-FERMI and its ablations)",
                "",
                "Per fit, from the per-epoch probes of the current iterate (mean ± sd over "
                "seeds): `low_first` / `low_second`: the lowest hard positive rate of either "
                "group over the first / second half of the epochs (the tail average is over "
                "the second half); `gap_sd_second`: the sd of the training DP gap over the "
                "second half; `shrunk`: share of epochs at which W was shrunk to independence "
                "(no push on any row); `clip_min` / `clip_maj`: mean clip fraction over epochs.",
                "",
                swings.to_markdown(index=False),
                "",
            ]
        ep = ep[(ep.method == "dpfermi") & (ep.epsilon == 1.0)]
        if not ep.empty:
            last = int(ep.epoch.max())
            picks = sorted({1, 2, 5, 10, 20, last} & set(ep.epoch.unique()))
            ep = ep[ep.epoch.isin(picks)]
            piv = ep.groupby(["table", "share", "param", "epoch"])[
                ["pos_rate_min", "pos_rate_maj", "coef_gap_min", "clip_frac_min", "clip_frac_maj"]
            ].mean()
            lines += [
                "## Trajectories (DP-FERMI, epsilon = 1, mean over seeds)",
                "",
                "Hard positive rate of each group on the training rows at the current "
                "iterate (not the tail average), with the psi push and the clip fractions.",
                "",
                piv.reset_index().to_markdown(index=False, floatfmt=".3f"),
                "",
            ]
    (RESULTS / "minority_share.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tables", nargs="+", default=["adult-sex"], choices=list(TABLES))
    r.add_argument("--shares", nargs="+", type=float, default=list(SHARES))
    r.add_argument(
        "--methods",
        nargs="+",
        default=list(METHODS),
        choices=[*METHODS, "raco-inf", *ABLATIONS],
    )
    r.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    r.add_argument("--resume", action="store_true")
    sub.add_parser("report")
    args = parser.parse_args()
    if args.command == "run":
        run(args.tables, args.shares, args.methods, args.seeds, args.resume)
    else:
        report()


if __name__ == "__main__":
    main()
