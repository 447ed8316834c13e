"""Sphinx configuration of the skfairdp documentation.

Build (warnings are errors, as CI does; torch first, as for the package)::

    pip install torch==2.13.0 && pip install ".[docs]"
    python -m sphinx -W --keep-going -b html doc doc/_build/html

``SKFAIRDP_DOCS_GALLERY=0`` skips running the examples (the gallery pages then
show code without output), for a fast check of the rest.

The API reference (``_autogen/api.rst``) is written by this file from each
public module's ``__all__``, so every public name is documented and a new one
needs no edit here; a re-exported name is documented once, where it is first
listed.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import skfairdp  # noqa: E402

project = "skfairdp"
author = "the skfairdp developers"
copyright = "skfairdp developers, BSD-3-Clause"  # noqa: A001
release = skfairdp.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "**/*.md5"]
templates_path = ["_templates"]

# -- MyST (the Markdown pages of the user guide) ------------------------------------
myst_heading_anchors = 4  # "page.md#a-section" links resolve
myst_enable_extensions = ["dollarmath"]

# -- autodoc / autosummary / numpydoc ----------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autoclass_content = "class"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- theme --------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skfairdp {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    # the top level is "User guide", "Examples", "API reference": all in the navbar
    "header_links_before_dropdown": 6,
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]  # wide tables scroll instead of being clipped

# -- sphinx-gallery -----------------------------------------------------------------
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    # run the plot_*.py examples; the others (dpfermi_defaults.py: 8 minutes) are shown
    # as code, without output
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    # each API page lists the examples that use its object (the minigallery directive
    # of _templates/autosummary), and the examples' code links to the API pages
    "doc_module": ("skfairdp",),
    "backreferences_dir": "_autogen/backreferences",
    "reference_url": {"skfairdp": None},
    "plot_gallery": os.environ.get("SKFAIRDP_DOCS_GALLERY", "1") != "0",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 1,
    "show_memory": False,
    "reset_modules": ("matplotlib",),
}
warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")

# -- the API reference, from __all__ -----------------------------------------------
API_SECTIONS = [
    ("skfairdp", "Estimators", "Differentially private and fair estimators (``import skfairdp``)."),
    ("skfairdp.metrics", "Metrics and scorers", None),
    ("skfairdp.fairness", "Fairness notions and rate constraints", None),
    ("skfairdp.privacy", "Privacy accounting and mechanisms", None),
    ("skfairdp.model_selection", "Private model selection", None),
    ("skfairdp.preprocessing", "Private preprocessing", None),
    ("skfairdp.data", "Tables larger than memory", None),
    ("skfairdp.postprocessing", "Private post-processing", None),
    ("skfairdp.oracle", "Oracle contract of meta-estimators", None),
    ("skfairdp.federated", "Federated learning across silos", None),
    ("skfairdp.distributed", "Data-parallel training on torch.distributed", None),
    ("skfairdp.datasets", "Bundled datasets", None),
    ("skfairdp.diagnostics", "Disparate-impact diagnostics", None),
    ("skfairdp.audit", "Empirical privacy auditing", None),
    ("skfairdp.audit_one_run", "Privacy auditing with one training run", None),
    ("skfairdp.benchmarks", "Benchmarks (``skfairdp benchmark``)", None),
]


def _first_line(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


# short name of each public class and function -> its documented full name
API_TARGETS: dict[str, str] = {}


def write_api_reference(path: Path) -> None:
    """Write the API page: one autosummary table per public module present."""
    lines = [
        ".. This file is generated by doc/conf.py from each module's __all__; do not edit.",
        "",
        "API reference",
        "=============",
        "",
        "Every public name of skfairdp, by module. A name that a module re-exports is",
        "listed once, under the first module that lists it.",
        "",
    ]
    seen: set[int] = set()
    API_TARGETS.clear()
    for module_name, title, intro in API_SECTIONS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional part this checkout lacks
            continue
        names = [n for n in getattr(module, "__all__", []) if not n.startswith("__")]
        entries = []
        for name in names:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                API_TARGETS.setdefault(name, f"{module_name}.{name}")
            entries.append(name)  # constants too (their ``#:`` comment is the docstring)
        if not entries:
            continue
        lines += [title, "-" * len(title), "", f".. py:module:: {module_name}", ""]
        lines += [intro or _first_line(module), ""]
        lines += [f".. currentmodule:: {module_name}", "", ".. autosummary::"]
        lines += ["   :toctree: ../generated/", "   :nosignatures:", ""]
        lines += [f"   {name}" for name in entries]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


write_api_reference(HERE / "_autogen" / "api.rst")


# -- the user guide's pages ---------------------------------------------------------
# In order; a page that this checkout lacks (an optional part) is left out, and a page
# of doc/ that is in no toctree is a warning, hence an error under -W.
USER_GUIDE = [
    "choosing",
    "privacy",
    "dpfermi",
    "raco",
    "cgoo",
    "global_scaling",
    "federated",
    "large_data",
    "distributed",
    "model_selection",
    "preprocessing",
    "postprocessing",
    "evaluation",
    "datasets",
    "zoo",
    "design",
    "contributing",
]
PLACEHOLDER = "%USER_GUIDE_PAGES%"

# `DPFermiClassifier`, `skfairdp.DPFermiClassifier`, `skfairdp.fermi.DPFermiClassifier`
# (a code span, nothing else in it)
CODE_NAME = re.compile(r"(?<![`\w])`((?:skfairdp\.(?:\w+\.)*)?(\w+))`(?![`\w])")
# a link to an example of the repository, e.g. ](../examples/plot_x.py)
EXAMPLE_LINK = re.compile(r"\]\(\.\./examples/(\w+)\.py\)")


def _link_api_names(text: str) -> str:
    """Make the code spans that name a public class or function links to its API page.

    The Markdown pages name them in backticks, which reads well on a forge; on the
    site they become cross-references. Code blocks and headings are left alone.
    """

    def link(match: re.Match) -> str:
        spelled, name = match.group(1), match.group(2)
        target = API_TARGETS.get(name)
        if target is None or not (spelled == name or spelled.startswith("skfairdp.")):
            return match.group(0)
        return f"{{py:obj}}`{spelled} <{target}>`"

    lines, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.startswith("#"):
            line = CODE_NAME.sub(link, line)
        lines.append(line)
    return "\n".join(lines)


def _source_read(app, docname: str, source: list[str]) -> None:
    if docname == "user_guide" and PLACEHOLDER in source[0]:
        pages = [p for p in USER_GUIDE if (HERE / f"{p}.md").exists()]
        source[0] = source[0].replace(PLACEHOLDER, "\n".join(pages))
    if not str(app.env.doc2path(docname)).endswith(".md"):
        return
    # The pages link to the examples of the repository so that they read well on a
    # forge; on the site those links open the gallery's pages.
    source[0] = EXAMPLE_LINK.sub(r"](auto_examples/\1.rst)", source[0])
    # Other files of the repository outside doc/ (benchmark results) are downloads.
    for folder in ("benchmarks", "experiments", "examples"):
        source[0] = source[0].replace(f"](../{folder}/", f"](path:../{folder}/")
    source[0] = _link_api_names(source[0])


def _skip_member(app, what, name, obj, skip, options):
    """Document skfairdp's own members only, not those scikit-learn or skorch define."""
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and module and not module.startswith("skfairdp"):
        return True
    if name.startswith("set_") and name.endswith("_request"):  # metadata-routing setters
        return True
    return skip


def setup(app) -> None:  # noqa: D103
    app.connect("source-read", _source_read)
    app.connect("autodoc-skip-member", _skip_member)
