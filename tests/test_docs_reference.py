"""Every exported name is documented: the public ones on docs/api.md, the rest on
docs/developer_reference.md, each with an example that doctest runs.

Public names are :data:`PUBLIC` (``sparsejac.__all__`` and a few user-facing names of the
subpackages); every other name in the ``__all__`` of :data:`MODULES` is internal. A function or
class must be listed in an ``autosummary`` table of its page (under a ``currentmodule`` from
which it resolves to the same object) and carry a numpydoc ``Examples`` section with ``>>>``
lines (classes: in the class docstring); those run with ``pytest --doctest-modules``. A
constant or type alias has no docstring of its own: it must appear in a ``>>>`` line of its
page, whose examples run in tests/test_docs.py.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
API = DOCS / "api.md"
DEV = DOCS / "developer_reference.md"
#: What users call (module -> names); ``sparsejac`` means its whole ``__all__``.
PUBLIC: dict[str, tuple[str, ...]] = {
    "sparsejac": tuple(importlib.import_module("sparsejac").__all__),
    "sparsejac.ad": ("jvp", "vjp", "hvp"),
    "sparsejac.coloring": ("intersection_graph", "ORDERS", "BIDIRECTIONAL_ORDERS",
                           "DEFAULT_EFFORT", "SYMMETRIC_METHODS", "color", "ColoringResult"),
    "sparsejac.plot": ("plot_coloring",),
}
MODULES = ("sparsejac", "sparsejac.ad", "sparsejac.fd", "sparsejac.coloring", "sparsejac.plot",
           "sparsejac.cli", "sparsejac.pattern", "sparsejac.detection", "sparsejac.pipeline",
           "sparsejac.validation", "sparsejac.tracing", "sparsejac.primitives",
           "sparsejac.numeric", "sparsejac.errors", "sparsejac.one_off",
           "sparsejac.sparse_jacobian", "sparsejac.adapters", "sparsejac.report",
           "sparsejac.products", "sparsejac.plans", "sparsejac.engines", "sparsejac.hessians",
           "sparsejac.deferred", "sparsejac.constrained")
EXAMPLES = re.compile(r"^Examples\n-{8,}\n(.*)", re.M | re.S)


def _is_public(module: str, name: str) -> bool:
    """A name of PUBLIC, or a re-export of the same function or class."""
    if name in PUBLIC.get(module, ()):
        return True
    obj = getattr(importlib.import_module(module), name)
    return is_documented_object(obj) and any(
        getattr(importlib.import_module(m), n) is obj for m, names in PUBLIC.items()
        for n in names)


def public_names() -> list[tuple[str, str]]:
    """(module, name) for every name in the modules' ``__all__``."""
    return [(m, n) for m in MODULES for n in importlib.import_module(m).__all__]


def is_documented_object(obj: Any) -> bool:
    """Functions and classes defined by sparsejac (not constants or typing aliases)."""
    return ((inspect.isfunction(obj) or inspect.isclass(obj))
            and getattr(obj, "__module__", "").startswith("sparsejac"))


def autosummary_entries(text: str) -> set[tuple[str, str]]:
    """(currentmodule, name) of every autosummary line of the page."""
    entries = set()
    module = None
    in_table = False
    for line in text.splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line.strip()):
            module = m.group(1)
        elif line.strip().startswith(".. autosummary::"):
            in_table = True
        elif in_table and line.startswith("```"):
            in_table = False
        elif in_table and re.fullmatch(r" {3}[A-Za-z_][\w.]*", line) and module:
            entries.add((module, line.strip()))
    return entries


def _doctest_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.startswith((">>> ", "... ")))


PAGES = {page: (autosummary_entries(page.read_text()), _doctest_lines(page.read_text()))
         for page in (API, DEV)}


def _resolve(module: str, name: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj


@pytest.mark.parametrize(("module", "name"), [pytest.param(m, n, id=f"{m}.{n}")
                                              for m, n in public_names()])
def test_public_name_is_in_the_reference(module: str, name: str) -> None:
    """The name is on its page: api.md if public, developer_reference.md otherwise (a table
    entry, or a checked example for data)."""
    obj = getattr(importlib.import_module(module), name)
    page = API if _is_public(module, name) else DEV
    listed, doctest_lines = PAGES[page]
    if is_documented_object(obj):
        assert any(_resolve(m, n) is obj for m, n in listed), (
            f"{module}.{name} is not in an autosummary table of docs/{page.name}")
    else:
        assert re.search(rf"\b{re.escape(name)}\b", doctest_lines), (
            f"the constant {module}.{name} appears in no `>>>` example of docs/{page.name}")


def test_api_page_lists_only_public_names() -> None:
    """docs/api.md is what users call: every entry of its tables is a public name."""
    public = {id(getattr(importlib.import_module(m), n)) for m, names in PUBLIC.items()
              for n in names}
    extra = sorted(f"{m}.{n}" for m, n in PAGES[API][0] if id(_resolve(m, n)) not in public)
    assert not extra, f"internal names on docs/api.md (move them to the developer page): {extra}"


@pytest.mark.parametrize(("module", "name"), [pytest.param(m, n, id=f"{m}.{n}")
                                              for m, n in public_names()
                                              if is_documented_object(
                                                  getattr(importlib.import_module(m), n))])
def test_public_name_has_a_doctested_example(module: str, name: str) -> None:
    """Its numpydoc docstring has an Examples section with ``>>>`` lines."""
    obj = getattr(importlib.import_module(module), name)
    doc = inspect.cleandoc(obj.__doc__ or "")
    found = EXAMPLES.search(doc)
    assert found, f"{module}.{name} has no numpydoc Examples section"
    assert ">>>" in found.group(1), f"the Examples of {module}.{name} have no >>> lines"


def test_table_entries_resolve() -> None:
    """Every autosummary entry names an existing object (Sphinx would warn otherwise)."""
    missing = sorted(f"{m}.{n}" for page in PAGES.values() for m, n in page[0]
                     if _resolve(m, n) is None)
    assert not missing, missing
