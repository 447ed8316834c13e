"""``skfairdp._lazy.lazy_exports``: the PEP 562 exports of skfairdp and skfairdp.federated."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import pytest

import skfairdp
import skfairdp.federated
from skfairdp._lazy import lazy_exports

PACKAGE = "_skfairdp_lazy_demo"
HEAVY = ("torch", "sklearn", "numpy", "pandas", "scipy", "skorch", "fairlearn", "flwr")


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A package exporting ``VALUE`` lazily from ``a``; also ``b``, ``broken``, ``__hidden__``."""
    root = tmp_path / PACKAGE
    root.mkdir()
    (root / "__init__.py").write_text(
        textwrap.dedent(
            """\
            from skfairdp._lazy import lazy_exports

            _EXPORTS = {"VALUE": "a"}
            __all__ = ["VALUE"]
            __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
            """
        )
    )
    (root / "a.py").write_text("VALUE = object()\n")
    (root / "b.py").write_text("B = 1\n")
    (root / "broken.py").write_text("import _skfairdp_no_such_dependency\n")
    (root / "__hidden__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(PACKAGE)
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def test_export_is_imported_on_first_use_and_cached(demo):
    assert f"{PACKAGE}.a" not in sys.modules
    assert "VALUE" not in vars(demo)
    value = demo.VALUE
    assert value is sys.modules[f"{PACKAGE}.a"].VALUE
    assert vars(demo)["VALUE"] is value  # later look-ups skip __getattr__
    assert "VALUE" in dir(demo) and dir(demo) == sorted(dir(demo))


def test_submodule_and_missing_names(demo):
    assert demo.b.B == 1
    with pytest.raises(AttributeError, match=f"module '{PACKAGE}' has no attribute 'nope'"):
        demo.nope  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute '__nope__'"):
        demo.__nope__  # noqa: B018
    # dunder probes (inspect, pickle, doctest) never import a submodule
    with pytest.raises(AttributeError, match="no attribute '__hidden__'"):
        demo.__hidden__  # noqa: B018
    # a submodule that exists but lacks a dependency reports the dependency
    with pytest.raises(ModuleNotFoundError) as info:
        demo.broken  # noqa: B018
    assert info.value.name == "_skfairdp_no_such_dependency"


def test_dir_lists_all_before_any_import():
    namespace = {"__all__": ["X", "Y"], "_private": 0}
    _, dir_ = lazy_exports("nowhere", {"X": "x", "Y": "y"}, namespace)
    assert dir_() == ["X", "Y", "__all__", "_private"]


@pytest.mark.parametrize("module", [skfairdp, skfairdp.federated])
def test_package_exports_match_all(module):
    assert set(module._EXPORTS) == set(module.__all__) - {"__version__"}
    assert set(module.__all__) <= set(dir(module))


def test_importing_the_packages_loads_no_heavy_module():
    code = (
        "import json, sys\n"
        "import skfairdp, skfairdp.federated\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
