"""Private model selection: :class:`PrivateSearchCV` tunes inside one stated budget;
:class:`FairModelSearch` goes from a stated fairness bound to a certified model."""

from .certificate import Certificate
from .distributions import draw_n_runs, n_runs_pmf, run_distribution_shape
from .fair_search import FairModelSearch, NoQualifyingCandidateWarning
from .families import FairCandidate, default_space
from .search import PrivateSearchCV

__all__ = [
    "Certificate",
    "FairCandidate",
    "FairModelSearch",
    "NoQualifyingCandidateWarning",
    "PrivateSearchCV",
    "default_space",
    "draw_n_runs",
    "n_runs_pmf",
    "run_distribution_shape",
]
