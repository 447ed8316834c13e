"""PrivateMetricFrame: fairlearn's MetricFrame on one noisy count table, with honest intervals."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..privacy import PrivacySpent, RandomSource, epsilon_spent
from . import control as _control
from . import intervals
from .metrics import ConfusionMetric, metric_name, resolve_metric
from .table import (
    ACCOUNTING,
    Release,
    check_evaluation_data,
    check_privacy,
    exact_table,
    release_table,
)

__all__ = ["Interval", "PrivateMetricFrame"]

KINDS = ("overall", "by_group", "difference", "ratio")
METHODS = ("between_groups", "to_overall")


class Interval(NamedTuple):
    """Lower and upper bounds, each shaped like the point value they bound."""

    lower: Any
    upper: Any


class PrivateMetricFrame:
    """Group metrics of a binary classifier, released with differential privacy, with intervals.

    fairlearn's :class:`~fairlearn.metrics.MetricFrame` interface (``overall``,
    ``by_group``, ``difference``, ``ratio``, ``group_min``, ``group_max``) for every
    metric of the per-group confusion matrix. The evaluation rows are private
    too: a group's exact rates can reveal a person's group (Hamman, Chen and Dutta,
    2022). Everything here derives from **one** Gaussian release of the (group x
    y_true x y_pred) count table, so asking for more metrics, intervals or plots
    costs nothing more. Adding or removing one row moves one cell by its weight:
    the sensitivity is ``max_sample_weight`` with ``sample_weight``, else 1.

    :meth:`interval` bounds the *population* value (the rows are a sample of it)
    under both the sampling error and the noise, from a Bayesian posterior
    (Jeffreys prior on the cell probabilities, the known Gaussian noise integrated
    out; :mod:`skfairdp.evaluation.intervals`, doc/evaluation.md). At
    ``epsilon=np.inf`` the values are exact (fairlearn's) and the intervals cover
    sampling alone.

    Like fairlearn's ``MetricFrame`` (and unlike an estimator) the frame computes
    everything when it is constructed.

    Parameters
    ----------
    metrics : str, callable or dict of str to (str or callable)
        One metric, or a dict ``name -> metric`` as in fairlearn. A metric is a
        name (``"selection_rate"``, ``"accuracy"``, ``"error_rate"``,
        ``"balanced_accuracy"``, ``"true_positive_rate"``, ``"false_positive_rate"``,
        ``"true_negative_rate"``, ``"false_negative_rate"``, ``"precision"``,
        ``"f1"``, ``"count"`` and aliases), or one of scikit-learn's
        (``accuracy_score``, ``recall_score``, ``precision_score``,
        ``balanced_accuracy_score``, ``f1_score``, ``zero_one_loss``) or fairlearn's
        (``selection_rate``, ``true_positive_rate``, ..., ``count``) functions. Any
        other is an error listing the supported ones.
    y_true, y_pred : array-like of shape (n_samples,)
        Binary labels and hard predictions. Here and in every array argument a
        polars (or other narwhals-supported) Series/DataFrame is read as pandas.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Group membership in fairlearn's formats; several attributes give
        intersectional groups (a ``MultiIndex``, every combination, as fairlearn).
        A single group is accepted, as by fairlearn: the release is then the one
        group's noisy ``tn, fp, fn, tp`` (the overall table, at the same price),
        ``by_group`` equals ``overall``, and ``difference`` and ``ratio`` (and
        their intervals) are exactly 0 and 1, which reveals nothing.
    epsilon : float
        Budget of the release, ``> 0``; ``np.inf``: exact values, no noise.
    delta : float or "auto", default="auto"
        ``"auto"``: ``0.1 / n_samples`` rounded down.
    sample_weight : array-like of shape (n_samples,), optional
        Public weights in ``[0, max_sample_weight]``; each row counts its weight
        (``count`` is then the weighted count, unlike fairlearn's ``count``).
        Intervals read weights as frequency weights.
    max_sample_weight : float, default=1.0
        The public bound on ``sample_weight``: the table's sensitivity.
    pos_label : object, default=1
        The positive label of ``y_true`` and ``y_pred``.
    sensitive_values : list, list of lists or dict, optional
        Public declaration of the groups (as the estimators take it), so that which
        groups exist is not read from the private rows. Default: the groups observed.
    n_draws : int, default=4000
        Posterior draws behind the intervals.
    control_features : array-like of shape (n_samples,) or (n_samples, n_controls), optional
        fairlearn's control features: ``by_group`` is indexed by the control levels
        then the groups, and ``overall``, ``group_min``, ``group_max``,
        ``difference``, ``ratio`` and every interval but ``"by_group"`` are computed
        within each control level (indexed by it). Free: every row is in exactly one
        (control, group) cell of the one released table, so the sensitivity is
        unchanged. A (control, group) cell without rows reads NaN at
        ``epsilon=inf``, as in fairlearn.
    random_state : int, RandomState or None, default=None
        Seeds the noise and the posterior draws. A seed known to others lets them
        subtract the noise: for experiments only.
    secure_mode : bool, default=False
        Draw the noise from the OS CSPRNG.

    Attributes
    ----------
    table_ : DataFrame
        The released counts: one row per group, columns ``tn, fp, fn, tp``
        (negative counts possible; the metrics clip them at 0).
    noise_multiplier_ : float
        Noise std over the sensitivity (0 at ``epsilon=inf``).
    sensitivity_ : float
        1, or ``max_sample_weight`` with ``sample_weight``.
    noise_std_ : float
        The std of each cell's noise.
    delta_ : float
    dp_event_ : dp_accounting.DpEvent
        ``GaussianDpEvent(noise_multiplier_)``; ``NonPrivateDpEvent`` at ``epsilon=inf``.
    privacy_spent_ : PrivacySpent
        The PLD accountant's ``(epsilon, delta)`` of ``dp_event_``.
        ``skfairdp.privacy.spent([model, frame])`` composes it with a model's fit.

    Examples
    --------
    >>> from skfairdp.metrics import PrivateMetricFrame
    >>> frame = PrivateMetricFrame(
    ...     metrics={"selection_rate": "selection_rate", "tpr": "true_positive_rate"},
    ...     y_true=y_test, y_pred=model.predict(X_test), sensitive_features=s_test,
    ...     epsilon=0.2, random_state=0)  # doctest: +SKIP
    >>> frame.difference(), frame.interval("difference")  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        metrics: str | Callable | Mapping[str, str | Callable],
        y_true: Any,
        y_pred: Any,
        sensitive_features: Any,
        epsilon: float,
        delta: float | str = "auto",
        sample_weight: Any = None,
        max_sample_weight: float = 1.0,
        pos_label: Any = 1,
        sensitive_values: Any = None,
        control_features: Any = None,
        n_draws: int = 4000,
        random_state: Any = None,
        secure_mode: bool = False,
    ):
        self.epsilon, self.delta = epsilon, delta
        self.max_sample_weight, self.pos_label = max_sample_weight, pos_label
        self.n_draws, self.random_state, self.secure_mode = n_draws, random_state, secure_mode
        check_privacy(epsilon, delta, max_sample_weight)
        if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)) or n_draws < 100:
            raise ValueError(f"n_draws must be an integer >= 100, got {n_draws!r}")
        self._single = not isinstance(metrics, Mapping)
        self._metrics: dict[str, ConfusionMetric] = _resolve_metrics(metrics, pos_label)
        y_true, y_pred, sensitive_features, sample_weight, control_features = (
            _control.to_pandas(v)
            for v in (y_true, y_pred, sensitive_features, sample_weight, control_features)
        )
        data = check_evaluation_data(
            y_true, y_pred, sensitive_features, sample_weight=sample_weight,
            pos_label=pos_label, private=self._private, max_sample_weight=max_sample_weight,
            sensitive_values=sensitive_values,
        )  # fmt: skip
        index, self._levels = _group_index(data.encoder), None
        if control_features is not None:
            codes, levels = _control.encode_control(control_features, data.y_true.shape[0])
            cells, index, level_of_cell = _control.combine(codes, levels, data.groups, index)
            data = replace(data, groups=cells)
            self._levels = (levels, level_of_cell)
        random = RandomSource(random_state, secure_mode=secure_mode)
        release = release_table(
            exact_table(data, n_groups=len(index)), epsilon=float(epsilon), delta=delta,
            n_samples=data.y_true.shape[0], weighted=data.sample_weight is not None,
            max_sample_weight=max_sample_weight, random=random,
        )  # fmt: skip
        self._seed = random.shareable_seed()  # never the noise's seed unless the user's
        self._set_release(release, index)

    def _set_release(
        self, release: Release, index: pd.Index, spent: PrivacySpent | None = None
    ) -> None:
        """Every value of the frame, from the released table (post-processing).

        ``spent``: the release's known cost (else priced here, by PLD).
        """
        self._release = release
        self._released = release.table
        self._index = index
        self.table_ = pd.DataFrame(
            release.table, index=self._index, columns=["tn", "fp", "fn", "tp"]
        )
        self.noise_multiplier_ = release.noise_multiplier
        self.sensitivity_ = release.sensitivity
        self.noise_std_ = release.noise_std
        self.delta_ = release.delta
        self.dp_event_ = release.event
        if spent is None:
            spent = (
                epsilon_spent(self.dp_event_, self.delta_, **ACCOUNTING)
                if self._private else PrivacySpent(math.inf, 0.0)
            )  # fmt: skip
        self.privacy_spent_ = spent
        clipped = np.maximum(self._released, 0.0)
        self._by_group = pd.DataFrame(
            {name: m(clipped) for name, m in self._metrics.items()}, index=self._index
        )
        if self._levels is None:
            self._overall = pd.Series(
                {name: float(m(clipped.sum(axis=0))) for name, m in self._metrics.items()},
                dtype=float,
            )
        else:
            levels, level_of_cell = self._levels
            pooled = np.stack([clipped[level_of_cell == k].sum(axis=0) for k in range(len(levels))])
            self._overall = pd.DataFrame(
                {name: m(pooled) for name, m in self._metrics.items()}, index=levels
            )
        self._draws_cache: dict[str, intervals.Posterior] = {}  # shared by with_metrics

    @classmethod
    def _from_release(
        cls,
        release: Release,
        index: pd.Index,
        *,
        metrics: str | Callable | Mapping[str, str | Callable],
        epsilon: float,
        pos_label: Any = 1,
        n_draws: int = 4000,
        seed: int | None = None,
        secure_mode: bool = False,
        spent: PrivacySpent | None = None,
        levels: tuple[pd.Index, np.ndarray] | None = None,
    ) -> PrivateMetricFrame:
        """A frame over a table released elsewhere (e.g. by PrivateSearchCV), without a new release.

        ``release.event`` must be what that release executed, already accounted by its
        owner; ``epsilon`` is its cost alone (``inf`` for exact counts). ``seed`` seeds
        the posterior draws (None: fresh entropy); ``spent``: the release's cost if known.
        """
        frame = cls.__new__(cls)
        frame.epsilon, frame.delta = epsilon, release.delta
        frame.max_sample_weight, frame.pos_label = release.sensitivity, pos_label
        frame.n_draws, frame.random_state, frame.secure_mode = n_draws, seed, secure_mode
        frame._single = not isinstance(metrics, Mapping)
        frame._metrics = _resolve_metrics(metrics, pos_label)
        frame._seed = seed
        frame._levels = levels
        frame._set_release(release, index, spent)
        return frame

    def with_metrics(self, metrics: str | Callable | Mapping[str, str | Callable]):
        """The same release read through other metrics: no new noise, no further cost.

        Parameters
        ----------
        metrics : str, callable or dict of str to (str or callable)
            As in the constructor.

        Returns
        -------
        PrivateMetricFrame
            Same ``table_``, ``dp_event_`` and ``privacy_spent_``; its intervals use
            the same posterior seed.
        """
        frame = type(self)._from_release(
            self._release, self._index, metrics=metrics, epsilon=self.epsilon,
            pos_label=self.pos_label, n_draws=int(self.n_draws), seed=self._seed,
            secure_mode=self.secure_mode, spent=self.privacy_spent_, levels=self._levels,
        )  # fmt: skip
        frame.delta, frame.random_state = self.delta, self.random_state
        frame.max_sample_weight = self.max_sample_weight
        frame._draws_cache = self._draws_cache  # one posterior for every metric
        return frame

    @property
    def _private(self) -> bool:
        return not math.isinf(self.epsilon)

    def _accountant_options(self) -> dict:
        return dict(ACCOUNTING)

    # ---------------------------------------------------------------- points
    def _shape(self, frame_or_series: pd.Series | pd.DataFrame):
        """fairlearn's types: a scalar/Series for one callable, a Series/DataFrame for a dict."""
        if not self._single:
            return frame_or_series
        name = next(iter(self._metrics))
        value = frame_or_series[name]
        return value if isinstance(value, pd.Series) else float(value)

    @property
    def overall(self) -> float | pd.Series:
        """The metrics on all rows (a float for one metric, a Series for a dict)."""
        return self._shape(self._overall)

    @property
    def by_group(self) -> pd.Series | pd.DataFrame:
        """The metrics in each group (a Series for one metric, a DataFrame for a dict)."""
        return self._shape(self._by_group)

    def _per_level(self, values: pd.DataFrame, how: str) -> pd.Series | pd.DataFrame:
        """``values`` (one row per cell) reduced over groups, per control level if any."""
        if self._levels is None:
            return getattr(values, how)()
        levels, level_of_cell = self._levels
        return (
            getattr(values.groupby(level_of_cell), how)()
            .reindex(range(len(levels)))
            .set_axis(levels)
        )

    def _overall_per_cell(self) -> pd.Series | pd.DataFrame:
        """``overall`` aligned with ``by_group`` (each cell's control level's value)."""
        if self._levels is None:
            return self._overall
        return pd.DataFrame(
            self._overall.to_numpy()[self._levels[1]],
            index=self._index,
            columns=self._overall.columns,
        )

    def group_min(self) -> float | pd.Series | pd.DataFrame:
        """The smallest value over groups of each metric (per control level if any)."""
        return self._shape(self._per_level(self._by_group, "min"))

    def group_max(self) -> float | pd.Series | pd.DataFrame:
        """The largest value over groups of each metric (per control level if any)."""
        return self._shape(self._per_level(self._by_group, "max"))

    def difference(self, method: str = "between_groups") -> float | pd.Series | pd.DataFrame:
        """The largest absolute gap: ``group_max - group_min`` or to ``overall`` (fairlearn's)."""
        _check_method(method)
        if method == "between_groups":
            gap = self._per_level(self._by_group, "max") - self._per_level(self._by_group, "min")
            return self._shape(gap)
        return self._shape(self._per_level((self._by_group - self._overall_per_cell()).abs(),
                                           "max"))  # fmt: skip

    def ratio(self, method: str = "between_groups") -> float | pd.Series | pd.DataFrame:
        """The smallest ratio (at most 1): ``group_min / group_max`` or to ``overall``."""
        _check_method(method)
        if method == "between_groups":
            return self._shape(self._per_level(self._by_group, "min")
                               / self._per_level(self._by_group, "max"))  # fmt: skip
        ratios = self._by_group / self._overall_per_cell()
        ratios = ratios.apply(lambda col: col.transform(lambda x: 1 / x if x > 1 else x))
        return self._shape(self._per_level(ratios, "min"))

    # ------------------------------------------------------------- intervals
    def _draws(self) -> tuple[intervals.Posterior, intervals.Posterior]:
        cache = self._draws_cache
        if not cache:
            rng = np.random.default_rng(None if self._seed is None else [self._seed, 1])
            cache["posterior"] = intervals.draw_posterior(
                self._released, self.noise_std_, int(self.n_draws), rng
            )
            cache["sampling"] = intervals.sampling_only(self._released, int(self.n_draws), rng)
        return cache["posterior"], cache["sampling"]

    def interval(
        self, kind: str = "by_group", confidence: float = 0.95, *, method: str = "between_groups"
    ) -> Interval:
        """Bounds on the population value under the sampling error and the DP noise.

        Parameters
        ----------
        kind : {"overall", "by_group", "difference", "ratio"}, default="by_group"
        confidence : float in (0, 1), default=0.95
            The posterior probability of the interval.
        method : {"between_groups", "to_overall"}, default="between_groups"
            For ``"difference"`` and ``"ratio"``, as in :meth:`difference`.

        Returns
        -------
        Interval
            ``(lower, upper)``, each shaped like the point value (``overall``,
            ``by_group``, ``difference(method)``, ``ratio(method)``). For ``count``
            the bounds are on the evaluation sample's count (the noise only).
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if not (isinstance(confidence, float | int) and 0 < confidence < 1):
            raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
        _check_method(method)
        posterior, _ = self._draws()
        if kind == "by_group" or self._levels is None:
            lower, upper = self._bounds(posterior, self._released, self._by_group,
                                        self._overall, kind, confidence, method)  # fmt: skip
            return Interval(*(self._wrap(bounds, kind) for bounds in (lower, upper)))
        levels, level_of_cell = self._levels
        rows = {"lower": [], "upper": []}
        for k in range(len(levels)):  # each control level on its own cells (fairlearn's)
            cells = level_of_cell == k
            sub = intervals.Posterior(
                posterior.counts[..., cells, :], posterior.rates[..., cells, :]
            )
            low, high = self._bounds(sub, self._released[cells], self._by_group[cells],
                                     self._overall.iloc[k], kind, confidence, method)  # fmt: skip
            rows["lower"].append(low)
            rows["upper"].append(high)
        return Interval(*(
            self._shape(pd.DataFrame(
                [{n: float(v) for n, v in row.items()} for row in rows[side]], index=levels))
            for side in ("lower", "upper")
        ))  # fmt: skip

    def _bounds(self, posterior, released, by_group, overall, kind, confidence, method):
        """Lower and upper bounds of each metric on one set of cells (all, or one control level)."""
        lower, upper = {}, {}
        for name, metric in self._metrics.items():
            groups, pooled = posterior.by_group(metric), posterior.overall(metric)
            if kind == "overall":
                lower[name], upper[name] = (float(v) for v in
                                            intervals.equal_tailed(pooled, confidence))  # fmt: skip
                continue
            if kind == "by_group":
                low, high = intervals.equal_tailed(groups, confidence)
            else:
                bound = intervals.difference_interval if kind == "difference" else (
                    intervals.ratio_interval)  # fmt: skip
                points = by_group[name].to_numpy(dtype=float)
                extra = {}
                if kind == "difference" and not metric.is_count:
                    extra["test"] = intervals.GapTest(released, self.noise_std_, metric,
                                                      float(self.max_sample_weight))  # fmt: skip
                    extra["max_gap"] = 1.0  # a gap between two rates
                low, high = bound(groups, pooled, points, np.float64(overall[name]), method,
                                  confidence, **extra)  # fmt: skip
            lower[name], upper[name] = low, high
        return lower, upper

    def _wrap(self, values: dict, kind: str):
        if kind == "by_group":
            shaped = pd.DataFrame(values, index=self._index)
        else:
            shaped = pd.Series({k: float(v) for k, v in values.items()}, dtype=float)
        return self._shape(shaped)

    @property
    def noise_dominated(self) -> pd.Series | pd.DataFrame:
        """Per group and metric: whether the DP noise makes over half of its posterior variance.

        False everywhere at ``epsilon=inf``. A flagged value is mostly noise: its
        interval is wide, and reading its point as the group's rate misleads.
        """
        posterior, sampling = self._draws()
        flags = {
            name: intervals.noise_dominated(
                posterior.by_group(m), m.function(sampling.rates), self._private
            )
            for name, m in self._metrics.items()
        }
        return self._shape(pd.DataFrame(flags, index=self._index))

    # ------------------------------------------------------------------ plot
    def by_group_plot(self, metric: str | None = None, *, ax=None, confidence: float = 0.95,
                      **kwargs):  # fmt: skip
        """Bar chart of a metric by group with the intervals as error bars (like fairlearn's).

        Parameters
        ----------
        metric : str, optional
            The metric's name (the dict key); needed when there are several.
        ax : matplotlib Axes, optional
            Where to draw; ``None``: a new figure.
        confidence : float, default=0.95
        **kwargs
            Passed to ``pandas.Series.plot(kind="bar", ...)``.

        Returns
        -------
        matplotlib Axes
        """
        if metric is None:
            if len(self._metrics) > 1:
                raise ValueError(f"metric must name one of {list(self._metrics)} to plot")
            metric = next(iter(self._metrics))
        if metric not in self._metrics:
            raise ValueError(f"metric must be one of {list(self._metrics)}, got {metric!r}")
        points = self._by_group[metric]
        lower, upper = self.interval("by_group", confidence)
        if not self._single:
            lower, upper = lower[metric], upper[metric]
        yerr = np.vstack([(points - lower).clip(lower=0), (upper - points).clip(lower=0)])
        kwargs.setdefault("title", f"{metric} ({confidence:.0%} interval)")
        if ax is None:  # a figure of its own, not whatever axes pyplot holds current
            import matplotlib.pyplot as plt

            _, ax = plt.subplots()
        return points.plot(kind="bar", yerr=yerr, ax=ax, capsize=4, **kwargs)

    plot = by_group_plot

    def by_group_with_intervals(self, confidence: float = 0.95) -> pd.DataFrame:
        """``by_group`` plus one ``"<metric> interval"`` column per metric, for fairlearn's plots.

        The layout fairlearn 0.15's ``plot_metric_frame(..., conf_intervals=...)`` reads:
        each interval cell is ``array([lower, upper])``, and
        ``conf_intervals=[f"{name} interval" for name in metrics]``. Away from
        ``epsilon=inf`` a noisy point can lie outside its interval: plot with
        :meth:`by_group_errors` (bars clipped at 0) or :meth:`by_group_plot`.

        Parameters
        ----------
        confidence : float, default=0.95

        Returns
        -------
        DataFrame
            Indexed like ``by_group``; the metric columns then the interval columns.
        """
        lower, upper = self.interval("by_group", confidence)
        if self._single:
            name = next(iter(self._metrics))
            lower, upper = lower.to_frame(name), upper.to_frame(name)
        out = self._by_group.copy()
        for name in self._metrics:
            bounds = np.column_stack([lower[name].to_numpy(), upper[name].to_numpy()])
            out[f"{name} interval"] = list(bounds)
        return out

    def by_group_errors(self, confidence: float = 0.95) -> pd.DataFrame:
        """Per group and metric, ``(below, above)``: the error bars fairlearn's plotter draws.

        ``point - lower`` and ``upper - point``, clipped at 0: a noisy point can fall
        outside its own posterior interval (matplotlib refuses negative bars). The
        shape of fairlearn 0.15's ``df_all_errors`` (one tuple per cell).

        Parameters
        ----------
        confidence : float, default=0.95

        Returns
        -------
        DataFrame
            Indexed like ``by_group``, one column per metric.
        """
        frame = self.by_group_with_intervals(confidence)
        errors = {}
        for name in self._metrics:
            bounds = np.stack(frame[f"{name} interval"].to_list())
            points = frame[name].to_numpy(dtype=float)
            below = np.clip(points - bounds[:, 0], 0, None)
            above = np.clip(bounds[:, 1] - points, 0, None)
            errors[name] = list(zip(below, above, strict=True))
        return pd.DataFrame(errors, index=self._index)

    def __repr__(self) -> str:
        return (
            f"PrivateMetricFrame(metrics={list(self._metrics)}, n_groups={len(self._index)}, "
            f"epsilon={self.epsilon!r}, noise_std={self.noise_std_:.4g})"
        )


def _resolve_metrics(metrics, pos_label) -> dict[str, ConfusionMetric]:
    named = {metric_name(metrics): metrics} if not isinstance(metrics, Mapping) else dict(metrics)
    if not named:
        raise ValueError("metrics is an empty dict: give at least one metric")
    return {str(name): resolve_metric(m, pos_label) for name, m in named.items()}


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def _group_index(encoder) -> pd.Index:
    labels = list(encoder.group_labels_)
    if len(encoder.names_) > 1:
        return pd.MultiIndex.from_tuples(labels, names=encoder.names_)
    return pd.Index(labels, name=encoder.names_[0])
