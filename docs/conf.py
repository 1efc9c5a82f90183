"""Sphinx configuration of the sparsejac documentation (built by ``make docs``)."""

from __future__ import annotations

import sparsejac

project = "sparsejac"
author = "The sparsejac developers"
copyright = "2026, the sparsejac developers"  # noqa: A001
release = sparsejac.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

html_theme = "alabaster"
html_title = f"sparsejac {release}"
html_static_path = ["_static"]
html_theme_options = {
    "description": "Exact sparse Jacobians of plain numpy programs",
    "fixed_sidebar": True,
}
