"""Every public name is in the API reference (docs/api.md) with an example that doctest runs.

Public names are the ``__all__`` of the modules in :data:`MODULES`. A function or class must be
listed in one of the page's ``autosummary`` tables (under a ``currentmodule`` from which it
resolves to the same object) and carry a numpydoc ``Examples`` section with ``>>>`` lines
(classes: in the class docstring); those run with ``pytest --doctest-modules``. A constant
or type alias has no docstring of its own: it must appear in a ``>>>`` line of the page,
whose examples run in tests/test_docs.py.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"
MODULES = ("sparsejac", "sparsejac.ad", "sparsejac.fd", "sparsejac.coloring", "sparsejac.plot",
           "sparsejac.cli", "sparsejac.pattern", "sparsejac.detection")
EXAMPLES = re.compile(r"^Examples\n-{8,}\n(.*)", re.M | re.S)


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


TEXT = API.read_text()
LISTED = autosummary_entries(TEXT)
DOCTEST_LINES = "\n".join(line for line in TEXT.splitlines()
                          if line.startswith((">>> ", "... ")))


def _resolve(module: str, name: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj


@pytest.mark.parametrize(("module", "name"), [pytest.param(m, n, id=f"{m}.{n}")
                                              for m, n in public_names()])
def test_public_name_is_in_the_reference(module: str, name: str) -> None:
    """The name is listed on docs/api.md (a table entry, or a checked example for data)."""
    obj = getattr(importlib.import_module(module), name)
    if is_documented_object(obj):
        assert any(_resolve(m, n) is obj for m, n in LISTED), (
            f"{module}.{name} is not in an autosummary table of docs/api.md")
    else:
        assert re.search(rf"\b{re.escape(name)}\b", DOCTEST_LINES), (
            f"the constant {module}.{name} appears in no `>>>` example of docs/api.md")


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
    missing = sorted(f"{m}.{n}" for m, n in LISTED if _resolve(m, n) is None)
    assert not missing, missing
