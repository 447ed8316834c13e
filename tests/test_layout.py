"""The layout the package promises (doc/design.md): layers without import circles, small
estimator modules, explicit ``__init__``s. Issue 23's targets, checked on every run."""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import tokenize
from pathlib import Path

import pytest

import skfairdp
from skfairdp.model_selection import FairModelSearch, PrivateSearchCV
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler

PACKAGE = Path(skfairdp.__file__).parent
PUBLIC_ESTIMATORS = [
    *(getattr(skfairdp, name) for name in skfairdp.__all__ if name != "__version__"),
    PrivateSearchCV,
    FairModelSearch,
    DPStandardScaler,
    DPOneHotEncoder,
    DPSimpleImputer,
    DPThresholdOptimizer,
]
#: The meta-estimators may be longer: they orchestrate other fits.
LONGER = {"CGOOReduction": 450, "PrivateSearchCV": 450, "FederatedDPFermiClassifier": 450}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(module: str) -> bool:
    return (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists()


def _exists(module: str) -> bool:
    path = PACKAGE.parent / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, child.end_lineno + 1))
    return lines


def import_graph() -> dict[str, set[str]]:
    """Module -> the skfairdp modules it imports, at import time or inside functions."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if "flower_app" in path.parts:
            continue
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        skip = _type_checking_lines(tree)
        edges = graph.setdefault(module, set())
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [source]
                targets += [
                    f"{source}.{a.name}" for a in node.names if _exists(f"{source}.{a.name}")
                ]
            else:
                continue
            for target in targets:
                if target.startswith("skfairdp") and _exists(target) and target != module:
                    if _is_package(target) and any(t.startswith(target + ".") for t in targets):
                        continue  # "from .pkg import submodule": the submodule is the edge
                    edges.add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def code_lines(path: Path) -> int:
    """Lines holding code: docstrings, comments and blank lines not counted."""
    source = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(
                getattr(first, "value", None), ast.Constant
            ):
                if isinstance(first.value.value, str):
                    docstrings.update(range(first.lineno, first.end_lineno + 1))
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in skipped or token.type == tokenize.ENDMARKER:
            continue
        lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docstrings)
    return len(lines)


def test_no_import_circle():
    """No circle among skfairdp's modules, imports deferred into functions included."""
    assert find_cycle(import_graph()) is None, " -> ".join(find_cycle(import_graph()) or [])


def test_the_cycle_finder_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_privacy_and_fairness_know_no_estimator():
    """privacy/ and fairness/ import no estimator package and no fit template."""
    upper = ("skfairdp._fit", "skfairdp.fermi", "skfairdp.raco", "skfairdp.dpsgd",
             "skfairdp.baselines", "skfairdp.reductions", "skfairdp.federated",
             "skfairdp.model_selection", "skfairdp.preprocessing", "skfairdp.engine",
             "skfairdp.postprocessing")  # fmt: skip
    for module, targets in import_graph().items():
        if module.startswith(("skfairdp.privacy", "skfairdp.fairness")):
            wrong = sorted(t for t in targets if t.startswith(upper))
            assert not wrong, f"{module} imports {wrong}"


def test_evaluation_knows_no_estimator():
    """evaluation/ (PrivateMetricFrame) reads predictions only: no estimator, fit or engine."""
    upper = ("skfairdp._fit", "skfairdp.fermi", "skfairdp.raco", "skfairdp.dpsgd",
             "skfairdp.baselines", "skfairdp.reductions", "skfairdp.federated",
             "skfairdp.model_selection", "skfairdp.preprocessing", "skfairdp.engine",
             "skfairdp.postprocessing", "skfairdp.cli")  # fmt: skip
    for module, targets in import_graph().items():
        if module.startswith("skfairdp.evaluation"):
            wrong = sorted(t for t in targets if t.startswith(upper))
            assert not wrong, f"{module} imports {wrong}"


def test_at_most_twelve_modules_at_the_package_root():
    assert len(list(PACKAGE.glob("*.py"))) <= 12, sorted(p.name for p in PACKAGE.glob("*.py"))


@pytest.mark.parametrize("estimator", PUBLIC_ESTIMATORS, ids=lambda cls: cls.__name__)
def test_estimator_module_is_short(estimator):
    path = Path(inspect.getfile(estimator))
    limit = LONGER.get(estimator.__name__, 300)
    assert code_lines(path) <= limit, f"{path.relative_to(PACKAGE)}: {code_lines(path)} > {limit}"


@pytest.mark.parametrize("estimator", PUBLIC_ESTIMATORS, ids=lambda cls: cls.__name__)
def test_estimator_has_its_own_init(estimator):
    """An ``__init__`` a reader can find, storing parameters; no deprecated placeholders."""
    assert "__init__" in vars(estimator), f"{estimator.__name__} inherits or generates __init__"
    assert inspect.getsourcefile(estimator.__init__) == inspect.getsourcefile(estimator)
    defaults = [p.default for p in inspect.signature(estimator).parameters.values()]
    assert "deprecated" not in [d for d in defaults if isinstance(d, str)]


def test_code_lines_skips_docstrings_comments_and_blanks(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Doc."""\n\n# comment\ndef f():\n    """Doc\n    more."""\n    return 1\n')
    assert code_lines(path) == 2


@pytest.mark.parametrize(
    "module",
    ["skfairdp", "skfairdp.privacy", "skfairdp.metrics", "skfairdp.datasets",
     "skfairdp.model_selection", "skfairdp.preprocessing", "skfairdp.fairness",
     "skfairdp.federated", "skfairdp.oracle", "skfairdp.global_scaling",
     "skfairdp.postprocessing", "skfairdp.evaluation"],
)  # fmt: skip
def test_public_import_paths_keep_working(module):
    """Every name in a public module's ``__all__`` imports (``skfairdp.privacy.spent`` too)."""
    imported = importlib.import_module(module)
    for name in imported.__all__:
        assert getattr(imported, name) is not None, f"{module}.{name}"
    from skfairdp.privacy import spent

    assert callable(spent)
