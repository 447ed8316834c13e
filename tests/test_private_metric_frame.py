"""PrivateMetricFrame (issue 25): exact at epsilon=inf, one private release, honest intervals.

Statistical tests are seeded (deterministic); each states the probability that a
correct implementation fails it for a random seed, kept below 1e-4.
"""

from __future__ import annotations

import functools
import math
import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm
from fairlearn import metrics as flm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from skfairdp.evaluation import intervals as iv
from skfairdp.evaluation.metrics import METRICS, resolve_metric, supported_metrics
from skfairdp.evaluation.simulation import Population, noise_std, simulate
from skfairdp.evaluation.table import check_evaluation_data, exact_table
from skfairdp.metrics import PrivateMetricFrame, fair_violation_floor
from skfairdp.privacy import epsilon_spent, spent
from skfairdp.privacy.analytic import gaussian_delta

FAIRLEARN_METRICS = {
    "selection_rate": flm.selection_rate,
    "mean_prediction": flm.mean_prediction,
    "tpr": flm.true_positive_rate,
    "fpr": flm.false_positive_rate,
    "tnr": flm.true_negative_rate,
    "fnr": flm.false_negative_rate,
    "accuracy": skm.accuracy_score,
    "error": skm.zero_one_loss,
    "balanced_accuracy": skm.balanced_accuracy_score,
    "recall": skm.recall_score,
    "precision": skm.precision_score,
    "f1": skm.f1_score,
    "recall_pos1": functools.partial(skm.recall_score, pos_label=1),
}


def _data(n=400, seed=0, n_attributes=1, small=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.7, y, 1 - y)
    a = rng.choice(["f", "m", "x"], n, p=[0.45, 0.5, 0.05] if small else None)
    if n_attributes == 1:
        return y, p, pd.Series(a, name="sex")
    b = rng.choice(["black", "white"], n)
    # one intersection left empty: fairlearn shows it as NaN, so must we
    b[a == "x"] = "white"
    return y, p, pd.DataFrame({"sex": a, "race": b})


def _both(metrics, y, p, s, *, weights=None, **kwargs):
    ours = PrivateMetricFrame(metrics=metrics, y_true=y, y_pred=p, sensitive_features=s,
                              epsilon=np.inf, sample_weight=weights, **kwargs)  # fmt: skip
    params = None
    if weights is not None:
        params = {k: {"sample_weight": weights} for k in metrics if metrics[k] is not flm.count}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's zero-division warnings in small groups
        theirs = flm.MetricFrame(metrics=metrics, y_true=y, y_pred=p, sensitive_features=s,
                                 sample_params=params)  # fmt: skip
    return ours, theirs


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


# ------------------------------------------------------------------ exactness
@pytest.mark.parametrize("n_attributes", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_exact_values_equal_fairlearn(n_attributes, weighted):
    y, p, s = _data(n=300, seed=n_attributes, n_attributes=n_attributes, small=True)
    metrics = dict(FAIRLEARN_METRICS)
    if not weighted:
        metrics["count"] = flm.count
    w = np.random.default_rng(5).uniform(0, 3, y.size) if weighted else None
    ours, theirs = _both(metrics, y, p, s, weights=w)
    pd.testing.assert_index_equal(ours.by_group.index, theirs.by_group.index)
    assert list(ours.by_group.columns) == list(theirs.by_group.columns)
    _close(ours.by_group, theirs.by_group)
    _close(ours.overall, theirs.overall)
    for method in ("between_groups", "to_overall"):
        _close(ours.difference(method), theirs.difference(method))
        _close(ours.ratio(method), theirs.ratio(method))
    _close(ours.group_min(), theirs.group_min())
    _close(ours.group_max(), theirs.group_max())
    assert ours.privacy_spent_.epsilon == math.inf
    assert isinstance(ours.dp_event_, dp_accounting.NonPrivateDpEvent)


def test_edge_cells_follow_fairlearn_conventions():
    """Groups with no positives, no predicted positives, one class only: sklearn's zero rules."""
    y = np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 0])
    p = np.array([0, 1, 0, 1, 1, 0, 0, 0, 0, 0])
    s = np.array(["a", "a", "a", "b", "b", "b", "c", "c", "d", "d"])
    ours, theirs = _both(dict(FAIRLEARN_METRICS), y, p, s)
    _close(ours.by_group, theirs.by_group)


def test_single_metric_shapes_and_names_follow_fairlearn():
    y, p, s = _data()
    for metric in (flm.selection_rate, skm.recall_score):
        ours, theirs = _both({"m": metric}, y, p, s)
        single = PrivateMetricFrame(metrics=metric, y_true=y, y_pred=p, sensitive_features=s,
                                    epsilon=np.inf)  # fmt: skip
        reference = flm.MetricFrame(metrics=metric, y_true=y, y_pred=p, sensitive_features=s)
        assert isinstance(single.overall, float) and single.overall == reference.overall
        pd.testing.assert_series_equal(single.by_group, reference.by_group, check_dtype=False)
        assert isinstance(single.difference(), float)
        low, high = single.interval("by_group")
        assert isinstance(low, pd.Series) and (low <= single.by_group).all()
        assert (single.by_group <= high).all()


def test_string_names_are_the_same_metrics():
    y, p, s = _data()
    named = {"selection_rate": "selection_rate", "tpr": "true_positive_rate", "acc": "accuracy",
             "bal": "balanced_accuracy", "prec": "precision", "err": "error_rate"}  # fmt: skip
    functions = {"selection_rate": flm.selection_rate, "tpr": flm.true_positive_rate,
                 "acc": skm.accuracy_score, "bal": skm.balanced_accuracy_score,
                 "prec": skm.precision_score, "err": skm.zero_one_loss}  # fmt: skip
    a = PrivateMetricFrame(metrics=named, y_true=y, y_pred=p, sensitive_features=s, epsilon=np.inf)
    _, theirs = _both(functions, y, p, s)
    _close(a.by_group, theirs.by_group)


def test_pos_label_other_than_one():
    y, p, s = _data()
    labels = np.array(["no", "yes"])
    a = PrivateMetricFrame(metrics={"tpr": "true_positive_rate"}, y_true=labels[y],
                           y_pred=labels[p], sensitive_features=s, epsilon=np.inf,
                           pos_label="yes")  # fmt: skip
    b = PrivateMetricFrame(metrics={"tpr": "true_positive_rate"}, y_true=y, y_pred=p,
                           sensitive_features=s, epsilon=np.inf)  # fmt: skip
    _close(a.by_group, b.by_group)


def test_unsupported_metric_lists_the_supported_ones():
    y, p, s = _data()
    for bad in (skm.roc_auc_score, "auc", functools.partial(skm.recall_score, pos_label=0),
                lambda t, q: 0.0):  # fmt: skip
        with pytest.raises(ValueError, match="not a metric of the confusion table.*supported"):
            PrivateMetricFrame(metrics={"m": bad}, y_true=y, y_pred=p, sensitive_features=s,
                               epsilon=1.0)  # fmt: skip
    assert set(METRICS) <= set(supported_metrics())
    assert resolve_metric(flm.count, 1).is_count


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"y_true": [0, 1, np.nan, 1]}, "y_true has missing values"),
        ({"y_pred": [0, None, 1, 1]}, "y_pred has missing values"),
        ({"sensitive_features": ["a", "b", "a"]}, "sensitive_features has 3 rows but y_true has 4"),
        ({"sensitive_features": ["a", None, "a", "b"]}, "sensitive_features"),
        ({"y_pred": [0, 1, 1]}, "y_true has 4 rows but y_pred has 3"),
        ({"epsilon": 0}, "epsilon must be a number > 0"),
        ({"epsilon": -1.0}, "epsilon must be a number > 0"),
        ({"delta": 1.0}, r"delta must be 'auto' or a float in \(0, 1\)"),
        ({"delta": 0.0}, r"delta must be 'auto' or a float in \(0, 1\)"),
        ({"y_true": [0, 1, 2, 1]}, "y_true and y_pred must be binary"),
        ({"y_true": ["a", "b", "a", "b"], "y_pred": ["a", "b", "b", "b"]}, "pos_label=1 is not"),
        ({"sample_weight": [1, 1, 2, 1]}, "at most max_sample_weight=1"),
        ({"sample_weight": [1, 1, 1]}, "sample_weight has 3 values but y_true has 4"),
        ({"sample_weight": [1, np.nan, 1, 1]}, "sample_weight must be finite"),
        ({"max_sample_weight": 0}, "max_sample_weight must be a finite number > 0"),
        ({"metrics": {}}, "metrics is an empty dict"),
    ],
)
def test_bad_input_is_a_clear_error(change, message):
    kwargs = dict(metrics={"sr": "selection_rate"}, y_true=[0, 1, 0, 1], y_pred=[0, 1, 1, 1],
                  sensitive_features=["a", "b", "a", "b"], epsilon=1.0)  # fmt: skip
    kwargs.update(change)
    with pytest.raises(ValueError, match=message):
        PrivateMetricFrame(**kwargs)


def test_bad_interval_arguments():
    frame = PrivateMetricFrame(metrics="selection_rate", y_true=[0, 1, 0, 1], y_pred=[0, 1, 1, 1],
                               sensitive_features=["a", "b", "a", "b"], epsilon=1.0,
                               random_state=0)  # fmt: skip
    with pytest.raises(ValueError, match="kind must be one of"):
        frame.interval("groups")
    with pytest.raises(ValueError, match="confidence must be a number in"):
        frame.interval("by_group", confidence=95)
    with pytest.raises(ValueError, match="method must be one of"):
        frame.difference("pairwise")


# ------------------------------------------------------------------ coverage and width
#: 12 settings x 2 metrics x 3 targets (two groups, their difference) = 72 coverage checks.
#: Each coverage count of a correct 95 % interval is Binomial(1000, 0.95); the acceptance
#: band below makes a correct method fail any of the 72 with probability < 1e-4 (Bonferroni:
#: 0.7e-6 per tail and check). It is wider than the issue's 93-97 %: at 1,000 evaluations a
#: correct method leaves 93-97 % in about one check out of 270, so the grid of
#: experiments/results/private_metric_frame_coverage.md (4,000 draws, the frame's default) is
#: where that target is read; every count there lies in 93-97 % except where noted.
N_CHECKS = 72
LOW, HIGH = (int(stats.binom.ppf(0.7e-6, 1000, 0.95)), int(stats.binom.isf(0.7e-6, 1000, 0.95)))
SETTINGS = [(shares, n, eps) for shares in ((0.95, 0.05), (0.7, 0.3)) for n in (2000, 20000)
            for eps in (0.1, 1.0, np.inf)]  # fmt: skip


def test_acceptance_band_has_the_stated_false_alarm_rate():
    assert (LOW, HIGH) == (914, 980)
    tail = stats.binom.cdf(LOW - 1, 1000, 0.95) + stats.binom.sf(HIGH, 1000, 0.95)
    assert N_CHECKS * tail < 1e-4


@pytest.mark.parametrize(("shares", "n", "eps"), SETTINGS)
def test_intervals_cover_the_population_value(shares, n, eps):
    """1,000 simulated evaluations per setting (seed 0, deterministic), 1,000 posterior draws."""
    population = Population(shares, base_rates=(0.3, 0.2), tpr=(0.7, 0.5), fpr=(0.1, 0.05))
    rows = simulate(population, n, eps, n_evaluations=1000, n_draws=1000, n_oracle=20_000, seed=0)
    for row in rows:
        where = f"{shares} n={n} eps={eps} {row['metric']} {row['target']}: {row['covered']}"
        assert row["covered"] >= LOW, where
        # a noise-dominated value's interval is close to the prior's: conservative, not exact
        if row["noise_dominated"] != row["noise_dominated"] or row["noise_dominated"] < 0.5:
            assert row["covered"] <= HIGH, where
        # width: the oracle interval (the plug-in estimate's own central range at the truth)
        assert row["mean_width"] <= 1.3 * row["oracle_width"], where
        if eps == np.inf and row["target"] != "difference":
            assert row["mean_width"] <= 1.1 * row["wilson_width"], where


def test_intervals_integrate_the_noise():
    """Ignoring the noise (the sampling-only posterior) under-covers at epsilon=0.1: the
    coverage test above can fail."""
    population = Population((0.95, 0.05), base_rates=(0.3, 0.2), tpr=(0.7, 0.5), fpr=(0.1, 0.05))
    sigma = noise_std(0.1, 2000)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(2000, population.cells().ravel(), size=500).reshape(500, 2, 4)
    noisy = counts + sigma * rng.standard_normal(counts.shape)
    metric = METRICS["selection_rate"]
    truth = population.by_group("selection_rate")
    for posterior, expect_low in ((iv.sampling_only(noisy, 1000, rng), True),
                                  (iv.draw_posterior(noisy, sigma, 1000, rng), False)):  # fmt: skip
        low, high = iv.equal_tailed(posterior.by_group(metric), 0.95)
        covered = ((low <= truth) & (truth <= high)).sum(axis=0)
        # 500 evaluations: a correct method covers >= 440 with probability 1 - 1e-8
        assert (covered.min() < 440) == expect_low, covered


def test_folded_interval_has_exact_coverage_for_a_normal_estimate():
    rng = np.random.default_rng(0)
    for delta in (0.0, 0.5, 1.5, 4.0):
        estimates = delta + rng.standard_normal(20_000)
        low, high = iv.folded_interval(estimates, np.ones_like(estimates), 0.95)
        covered = ((low <= delta) & (delta <= high)).mean()
        # 20,000 draws: sd 0.0015; at delta = 0 the interval holds 0 unless |d| > 2.24: 97.5 %
        assert abs(covered - (0.975 if delta == 0 else 0.95)) < 0.008, (delta, covered)


def test_fair_violation_floor_agrees_with_the_difference_interval():
    """fair_violation_floor is the gap sampling alone shows (an exactly fair classifier at these
    cell sizes); PrivateMetricFrame's interval at epsilon=inf says the same: a gap no larger
    than the floor is within sampling error (lower bound 0); above it, the interval still
    reaches the floor. 20 samples of an exactly fair classifier, seeded."""
    within = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        s = rng.choice(["a", "b"], 600, p=[0.8, 0.2])
        y = rng.integers(0, 2, 600)
        p = (rng.random(600) < 0.3).astype(int)
        frame = PrivateMetricFrame(metrics="selection_rate", y_true=y, y_pred=p,
                                   sensitive_features=s, epsilon=np.inf)  # fmt: skip
        low, high = frame.interval("difference")
        floor = fair_violation_floor(y, p, sensitive_features=s, n_draws=2000)
        if frame.difference() <= floor:
            assert low == 0.0, seed
            within += 1
        else:
            assert floor < high, seed
    assert within >= 8  # the floor is the mean gap: about half the samples are below it


# ------------------------------------------------------------------ privacy
@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    n=st.integers(1, 30),
    weighted=st.booleans(),
    max_weight=st.sampled_from([0.5, 1.0, 3.0]),
    seed=st.integers(0, 2**16),
)
def test_one_row_moves_the_table_by_at_most_the_sensitivity(n, weighted, max_weight, seed):
    """Add/remove one row: the exact table moves by that row's weight in one cell, so its L2
    (and L1) distance is at most max_sample_weight (1 unweighted): the frame's sensitivity_
    (next test). The group domain is declared (public): the table's shape is fixed."""
    rng = np.random.default_rng(seed)
    y, p = rng.integers(0, 2, n + 1), rng.integers(0, 2, n + 1)
    s = rng.choice(["a", "b", "c"], n + 1)
    w = rng.uniform(0, max_weight, n + 1) if weighted else None

    def table(rows):
        data = check_evaluation_data(y[rows], p[rows], s[rows], private=True,
                                     sample_weight=None if w is None else w[rows],
                                     max_sample_weight=max_weight,
                                     sensitive_values=["a", "b", "c"])  # fmt: skip
        return exact_table(data)

    full = table(np.arange(n + 1))
    sensitivity = 0.0
    for i in range(n + 1):
        diff = full - table(np.delete(np.arange(n + 1), i))
        assert np.count_nonzero(diff) <= 1
        sensitivity = max(sensitivity, float(np.linalg.norm(diff)), float(np.abs(diff).sum()))
    assert sensitivity <= (max_weight if weighted else 1.0) + 1e-12


@pytest.mark.parametrize("weighted", [False, True])
def test_the_release_is_scaled_to_the_stated_sensitivity(weighted):
    y, p, s = _data(n=200)
    w = np.full(200, 0.5) if weighted else None
    frame = PrivateMetricFrame(metrics="count", y_true=y, y_pred=p, sensitive_features=s,
                               sample_weight=w, max_sample_weight=3.0, epsilon=1.0,
                               random_state=0)  # fmt: skip
    assert frame.sensitivity_ == (3.0 if weighted else 1.0)
    assert frame.noise_std_ == frame.noise_multiplier_ * frame.sensitivity_


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(0.1, "auto"), (0.2, 1e-6), (1.0, "auto"), (4.0, 1e-5)]
)
def test_event_is_priced_by_dp_accounting_within_the_budget(epsilon, delta):
    y, p, s = _data(n=500)
    frame = PrivateMetricFrame(metrics="selection_rate", y_true=y, y_pred=p, sensitive_features=s,
                               epsilon=epsilon, delta=delta, random_state=0)  # fmt: skip
    assert frame.delta_ == (2e-4 if delta == "auto" else delta)  # 0.1 / 500
    assert frame.dp_event_ == dp_accounting.GaussianDpEvent(frame.noise_multiplier_)
    relation = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    pld = dp_accounting.pld.PLDAccountant(relation, value_discretization_interval=1e-3)
    pld_epsilon = pld.compose(frame.dp_event_).get_epsilon(frame.delta_)
    assert pld_epsilon == pytest.approx(frame.privacy_spent_.epsilon, rel=1e-9)
    assert frame.privacy_spent_.epsilon <= epsilon
    # exact (Balle & Wang) and RDP views of the same Gaussian: both within the budget's reach
    assert gaussian_delta(epsilon, frame.noise_multiplier_) <= frame.delta_
    rdp = dp_accounting.rdp.RdpAccountant(neighboring_relation=relation)
    assert rdp.compose(frame.dp_event_).get_epsilon(frame.delta_) >= pld_epsilon - 1e-3


def test_the_added_noise_has_the_recorded_scale():
    """4,000 noise values (1,000 declared groups x 4 cells) of one seeded release per weight
    setting: sum(e^2) / std^2 is chi-square(4000); two-sided bounds at 1e-5 each (false
    alarm < 1e-4 over both settings), and the mean within 4.9 standard errors (1e-6)."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(1000), 3)
    y, p = rng.integers(0, 2, groups.size), rng.integers(0, 2, groups.size)
    chi2_low, chi2_high = stats.chi2.ppf(1e-5, 4000), stats.chi2.isf(1e-5, 4000)
    for weights, bound in ((None, 1.0), (rng.uniform(0, 2.5, groups.size), 2.5)):
        frame = PrivateMetricFrame(metrics="count", y_true=y, y_pred=p, sensitive_features=groups,
                                   epsilon=0.5, sample_weight=weights, max_sample_weight=bound,
                                   random_state=1)  # fmt: skip
        data = check_evaluation_data(y, p, groups, sample_weight=weights, max_sample_weight=bound)
        noise = (frame.table_.to_numpy() - exact_table(data)).ravel()
        std = frame.dp_event_.noise_multiplier * bound
        assert frame.noise_std_ == pytest.approx(std)
        assert chi2_low < np.sum(noise**2) / std**2 < chi2_high
        assert abs(noise.mean()) < 4.9 * std / np.sqrt(noise.size)


@pytest.mark.filterwarnings("ignore::skfairdp.privacy.UnaccountedStepWarning")  # asserted inf
def test_spent_composes_frames_with_fits():
    y, p, s = _data(n=500)
    a = PrivateMetricFrame(metrics="selection_rate", y_true=y, y_pred=p, sensitive_features=s,
                           epsilon=0.3, random_state=0)  # fmt: skip
    b = PrivateMetricFrame(metrics="accuracy", y_true=y, y_pred=p, sensitive_features=s,
                           epsilon=0.5, random_state=1)  # fmt: skip
    assert spent(a) == a.privacy_spent_
    both = spent([a, b])
    composed = dp_accounting.ComposedDpEvent([a.dp_event_, b.dp_event_])
    assert both == epsilon_spent(composed, a.delta_, accountant="pld")
    assert 0.5 < both.epsilon <= 0.8 + 1e-9
    exact = PrivateMetricFrame(metrics="selection_rate", y_true=y, y_pred=p, sensitive_features=s,
                               epsilon=np.inf)  # fmt: skip
    assert spent([a, exact]).epsilon == math.inf


def test_one_release_serves_every_metric_and_interval():
    y, p, s = _data(n=500, n_attributes=2)
    frame = PrivateMetricFrame(metrics=dict(FAIRLEARN_METRICS), y_true=y, y_pred=p,
                               sensitive_features=s, epsilon=1.0, random_state=0)  # fmt: skip
    event = frame.dp_event_
    for kind in ("overall", "by_group", "difference", "ratio"):
        low, high = frame.interval(kind)
        assert np.all(np.asarray(low, dtype=float) <= np.asarray(high, dtype=float))
    frame.interval("difference", method="to_overall")
    frame.interval("ratio", method="to_overall")
    assert frame.noise_dominated.shape == frame.by_group.shape
    assert frame.dp_event_ is event  # nothing more was released
    again = PrivateMetricFrame(metrics=dict(FAIRLEARN_METRICS), y_true=y, y_pred=p,
                               sensitive_features=s, epsilon=1.0, random_state=0)  # fmt: skip
    pd.testing.assert_frame_equal(frame.table_, again.table_)  # seeded: reproducible


def test_by_group_plot_draws_error_bars():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    y, p, s = _data(n=500)
    frame = PrivateMetricFrame(metrics={"sr": "selection_rate", "tpr": "true_positive_rate"},
                               y_true=y, y_pred=p, sensitive_features=s, epsilon=1.0,
                               random_state=0)  # fmt: skip
    ax = frame.by_group_plot("tpr")
    assert len(ax.patches) == 3 and ax.containers
    with pytest.raises(ValueError, match="metric must name one of"):
        frame.by_group_plot()


def test_with_metrics_reads_the_same_release_at_no_cost():
    """More metrics from one release: same table, event, cost and posterior draws."""
    y, p, a = _data(n=600, seed=3)
    frame = PrivateMetricFrame(metrics="selection_rate", y_true=y, y_pred=p,
                               sensitive_features=a, epsilon=0.5, random_state=0)  # fmt: skip
    both = {"selection_rate": "selection_rate", "tpr": "true_positive_rate"}
    more = frame.with_metrics(both)
    assert more.table_.equals(frame.table_) and more.dp_event_ == frame.dp_event_
    assert more.privacy_spent_ == frame.privacy_spent_ and more.noise_std_ == frame.noise_std_
    direct = PrivateMetricFrame(metrics=both, y_true=y, y_pred=p, sensitive_features=a,
                                epsilon=0.5, random_state=0)  # fmt: skip
    pd.testing.assert_frame_equal(more.by_group, direct.by_group)
    for kind in ("by_group", "difference"):
        for got, want in zip(more.interval(kind), direct.interval(kind)):
            np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float))
    assert frame.interval("difference").lower == more.interval("difference").lower[
        "selection_rate"]  # fmt: skip
