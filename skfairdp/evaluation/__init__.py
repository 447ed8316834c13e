"""Private evaluation: fairness metrics released with differential privacy, with intervals.

:class:`PrivateMetricFrame` (also ``skfairdp.metrics.PrivateMetricFrame``) is
fairlearn's ``MetricFrame`` on one Gaussian release of the (group x y_true x
y_pred) count table (:mod:`.table`); every metric of the confusion matrix
(:mod:`.metrics`) and its interval over sampling and noise (:mod:`.intervals`)
is computed from that one release. doc/evaluation.md explains the method.
"""

from .frame import Interval, PrivateMetricFrame

__all__ = ["Interval", "PrivateMetricFrame"]
