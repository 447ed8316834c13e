"""Private model selection: :class:`PrivateSearchCV` tunes inside one stated budget."""

from .search import PrivateSearchCV, draw_n_runs, n_runs_pmf, run_distribution_shape

__all__ = ["PrivateSearchCV", "draw_n_runs", "n_runs_pmf", "run_distribution_shape"]
