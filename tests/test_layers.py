"""The layers of sparsejac hold: every import (module-level or inside a function) points down.

Every module of ``sparsejac/`` belongs to one layer (:data:`LAYERS`, by module-name prefix, the
longest prefix wins) and may import only the layers :data:`ALLOWED` lists for it (and its own).
The imports are read with ``ast`` from the source, so a function-level import cannot hide a
cycle. ``docs/internals.md`` shows the same table; :func:`test_internals_page_shows_the_table`
keeps them equal.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sparsejac"
INTERNALS = ROOT / "docs" / "internals.md"

#: layer -> module-name prefixes (the longest matching prefix decides a module's layer)
LAYERS: dict[str, tuple[str, ...]] = {
    "base": ("sparsejac.errors", "sparsejac.numeric", "sparsejac.kernels"),
    "pattern": ("sparsejac.pattern",),
    "tracing": ("sparsejac.tracing",),
    "coloring": ("sparsejac.coloring",),
    "primitives": ("sparsejac.primitives",),
    "detection": ("sparsejac.detection",),
    "ad": ("sparsejac.ad",),
    "fd": ("sparsejac.fd",),
    "api": ("sparsejac.pipeline", "sparsejac.validation", "sparsejac.sparse_jacobian",
            "sparsejac.one_off", "sparsejac.adapters", "sparsejac.operators", "sparsejac.report",
            "sparsejac.plot", "sparsejac.products", "sparsejac.plans", "sparsejac.engines",
            "sparsejac.hessians", "sparsejac.deferred", "sparsejac.verifying", "sparsejac.watching",
            "sparsejac.warmup",
            "sparsejac.memory", "sparsejac.constrained"),
    "cli": ("sparsejac.cli", "sparsejac.__main__"),
    "package": ("sparsejac",),
}
#: layer -> the layers it may import (besides itself)
ALLOWED: dict[str, frozenset[str]] = {
    "base": frozenset(),
    "pattern": frozenset({"base"}),
    "tracing": frozenset({"base"}),
    "coloring": frozenset({"base", "pattern"}),
    "primitives": frozenset({"base", "pattern", "tracing"}),
    "detection": frozenset({"base", "tracing", "primitives"}),
    "ad": frozenset({"base", "tracing", "primitives"}),
    "fd": frozenset({"base", "pattern", "coloring"}),
    "api": frozenset({"base", "pattern", "tracing", "coloring", "primitives", "detection", "ad",
                      "fd"}),
    "cli": frozenset({"base", "pattern", "coloring", "api"}),
    "package": frozenset({"base", "pattern", "tracing", "coloring", "primitives", "detection",
                          "ad", "fd", "api"}),
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    best, best_len = None, -1
    for layer, prefixes in LAYERS.items():
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = layer, len(p)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS"
    return best


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(imported sparsejac module, line) for every import statement in the file, any depth."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.startswith("sparsejac")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("sparsejac"):
                continue
            # `from sparsejac.primitives import depsets` imports a submodule: count it as one
            for a in node.names:
                sub = f"{mod}.{a.name}"
                found.append((sub if (PACKAGE.parent / (sub.replace(".", "/") + ".py")).exists()
                              or (PACKAGE.parent / sub.replace(".", "/")).is_dir() else mod,
                              node.lineno))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_point_down(path: Path) -> None:
    """No module imports a layer above it or beside it (module- and function-level)."""
    me = layer_of(module_name(path))
    bad = [f"line {line}: {mod} ({layer_of(mod)})" for mod, line in imports_of(path)
           if layer_of(mod) != me and layer_of(mod) not in ALLOWED[me]]
    assert not bad, f"{module_name(path)} ({me}) imports against the layering: {bad}"


def test_tracing_imports_nothing_from_primitives() -> None:
    """The tracer dispatches through a hook; it never imports the registry."""
    for path in (PACKAGE / "tracing").rglob("*.py"):
        assert not [m for m, _ in imports_of(path) if m.startswith("sparsejac.primitives")], path


def test_no_module_over_800_lines() -> None:
    """Every module of sparsejac/ stays under 800 lines."""
    long = {module_name(p): n for p in MODULES if (n := len(p.read_text().splitlines())) > 800}
    assert not long, long


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    """The checker sees a function-level upward import (it would fail the suite)."""
    probe = PACKAGE / "tracing" / "_probe_for_test.py"
    probe.write_text("def f():\n    from sparsejac.primitives import core\n    return core\n")
    try:
        assert ("sparsejac.primitives.core", 2) in imports_of(probe)
        with pytest.raises(AssertionError, match="imports against the layering"):
            test_imports_point_down(probe)
    finally:
        probe.unlink()


def test_internals_page_shows_the_table() -> None:
    """docs/internals.md lists each layer with exactly the layers it may import."""
    text = INTERNALS.read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]*) \|", text, re.M))
    assert set(rows) == set(ALLOWED), "the layer table of docs/internals.md lists other layers"
    for layer, allowed in ALLOWED.items():
        shown = set(re.findall(r"`(\w+)`", rows[layer]))
        assert shown == set(allowed), f"docs/internals.md: `{layer}` may import {sorted(allowed)}"
