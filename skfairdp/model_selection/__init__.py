"""Private model selection: :class:`PrivateSearchCV` tunes inside one stated budget."""

from .distributions import draw_n_runs, n_runs_pmf, run_distribution_shape
from .search import PrivateSearchCV

__all__ = ["PrivateSearchCV", "draw_n_runs", "n_runs_pmf", "run_distribution_shape"]
