"""The ``Examples`` sections of the public API run, and every public estimator has one.

Each public class and function of the modules that the API reference documents (their
``__all__``) has its docstring's examples run with :mod:`doctest`, so an example that the
code has outgrown fails here rather than on a reader. The examples use a few hundred
synthetic rows and a few epochs, to stay fast.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator

# The modules of doc/conf.py's API_SECTIONS.
PUBLIC_MODULES = (
    "skfairdp",
    "skfairdp.metrics",
    "skfairdp.fairness",
    "skfairdp.privacy",
    "skfairdp.model_selection",
    "skfairdp.preprocessing",
    "skfairdp.data",
    "skfairdp.postprocessing",
    "skfairdp.oracle",
    "skfairdp.federated",
    "skfairdp.datasets",
    "skfairdp.diagnostics",
    "skfairdp.audit",
    "skfairdp.audit_one_run",
    "skfairdp.benchmarks",
)

# An example whose fit the degenerate-model check flags teaches a bad configuration.
pytestmark = pytest.mark.filterwarnings("error::skfairdp._fit.degenerate.DegenerateModelWarning")

# Examples whose object warns by design at every fit (the warning is the object's own
# test's subject); the doctest checks the example, not the warning.
EXPECTED_WARNINGS = {
    "FairLensClassifier": "ignore::skfairdp.baselines.UnboundedSensitivityWarning",
}


def _public_objects() -> dict[str, object]:
    objects: dict[int, tuple[str, object]] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and id(obj) not in objects:
                objects[id(obj)] = (f"{module_name}.{name}", obj)
    return dict(objects.values())


PUBLIC = _public_objects()
WITH_EXAMPLES = {name: obj for name, obj in PUBLIC.items() if ">>>" in (inspect.getdoc(obj) or "")}


def _params():
    for name in sorted(WITH_EXAMPLES):
        expected = EXPECTED_WARNINGS.get(name.rsplit(".", 1)[1])
        marks = [pytest.mark.filterwarnings(expected)] if expected else []
        yield pytest.param(name, id=name, marks=marks)


@pytest.mark.parametrize("name", _params())
def test_docstring_examples_run(name):
    obj = WITH_EXAMPLES[name]
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    report: list[str] = []
    with np.printoptions(legacy=False):  # each example imports what it uses: no globals
        for test in finder.find(obj, name, module=inspect.getmodule(obj), globs={}):
            runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, "".join(report)


ESTIMATORS = sorted(
    name for name, obj in PUBLIC.items() if inspect.isclass(obj) and issubclass(obj, BaseEstimator)
)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_public_estimator_has_a_running_example(name):
    """An ``Examples`` section that fits the estimator, with nothing skipped."""
    doc = inspect.getdoc(PUBLIC[name]) or ""
    assert "\nExamples\n--------\n" in doc, f"{name} has no Examples section"
    examples = doctest.DocTestParser().get_examples(doc)
    fits = any(call in e.source for e in examples for call in (".fit(", ".fit_transform("))
    assert fits, f"{name}: no example fits"
    skipped = [e.source for e in examples if e.options.get(doctest.SKIP)]
    assert not skipped, f"{name} skips examples: {skipped}"
