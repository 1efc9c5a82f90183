"""The documentation site hangs together: pages in the toctree, figures with provenance, the
README's figures taken from the benchmarks page, and the extension guide leaving no trace.

(Every ``>>>`` example of every page runs in tests/test_docs.py; the CLI outputs in
tests/test_docs_cli.py; the API reference in tests/test_docs_reference.py.)
"""

from __future__ import annotations

import doctest
import json
import re
from pathlib import Path

import numpy as np
import pytest

import sparsejac
from sparsejac.primitives.core import FUNCTIONS, UFUNCS
from sparsejac.tracing import library

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = (REPO / "README.md").read_text()
BENCHMARKS = (DOCS / "benchmarks.md").read_text()
FIGURES = ("coloring_vs_colpack", "jacobian_time_vs_n")


def test_every_page_is_in_a_toctree() -> None:
    """Each docs/*.md page is listed in a toctree of index.md (Sphinx -W fails otherwise)."""
    index = (DOCS / "index.md").read_text()
    listed = set(re.findall(r"^([a-z_]+)$", index, re.M))
    pages = {p.stem for p in DOCS.glob("*.md")} - {"index"}
    assert pages <= listed, f"pages missing from the toctree: {sorted(pages - listed)}"


def test_adding_a_primitive_leaves_the_registry_as_it_was() -> None:
    """The worked examples register entries and remove them again, even the failing ones."""
    library.run_deferred(force=True)  # rules registered on a library's import, up front
    before = (dict(FUNCTIONS), {u: dict(e.methods) for u, e in UFUNCS.items()})
    result = doctest.testfile(str(DOCS / "adding_a_primitive.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    after = (dict(FUNCTIONS), {u: dict(e.methods) for u, e in UFUNCS.items()})
    assert result.attempted > 0
    assert result.failed == 0
    assert after == before


def test_unsupported_error_points_to_the_extension_guide() -> None:
    """The error message of an unknown function names the page that says how to add it."""
    with pytest.raises(sparsejac.UnsupportedPrimitiveError) as info:
        sparsejac.jacobian_sparsity(np.unique, np.ones(3))
    assert "docs/adding_a_primitive.md" in str(info.value)
    assert (DOCS / "adding_a_primitive.md").is_file()


@pytest.mark.parametrize("name", FIGURES)
def test_benchmark_figure_has_data_and_provenance(name: str) -> None:
    """Each figure is committed with its JSON (command, date, machine) and shown on the page."""
    png, data = DOCS / "_static" / f"{name}.png", DOCS / "_static" / f"{name}.json"
    assert png.is_file()
    assert data.is_file()
    meta = json.loads(data.read_text())
    assert meta["command"].startswith("python benchmarks/figures.py")
    assert "--quick" not in meta["command"], "the published figure is from a full run"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", meta["date"])
    assert meta["machine"]
    assert meta["rows"]
    assert f"_static/{name}.png" in BENCHMARKS
    assert meta["date"] in BENCHMARKS


def test_benchmarks_page_gives_commands_dates_and_machine() -> None:
    """Every benchmark script's command is on the page, with a date and the machine."""
    for script in ("jacobian.py", "coloring.py", "detection.py", "reverse_cost.py",
                   "figures.py"):
        assert f"python benchmarks/{script}" in BENCHMARKS, script
        assert (REPO / "benchmarks" / script).is_file()
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", BENCHMARKS)
    for fact in ("2 cores", "Python 3.11.7", "numpy 2.4.6", "scipy 1.17.1"):
        assert fact in BENCHMARKS, fact


def test_readme_quick_start_and_measured_figures() -> None:
    """The Quick start is the two commands; every figure the README quotes is on the page."""
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```\n(.*?)```", quick, re.S)[0].split()
    assert commands == ["make", "demo", "make", "test"]
    assert "sparsejac-numpy" in README
    figures = README.split("## Measured", 1)[1].split("\n## ", 1)[0]
    assert "docs/benchmarks.md" in figures
    numbers = re.findall(r"\b(\d+(?:\.\d+)?)(?:x|×| ms| s)", figures)
    assert len(numbers) >= 5, "the README quotes too few measured figures"
    for number in numbers:
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", BENCHMARKS), (
            f"{number} (README, Measured) is not on docs/benchmarks.md")


def test_readme_example_runs() -> None:
    """The README's example runs, and costs the 3 products its text says."""
    what = README.split("## What it does", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", what, re.S)[0]
    assert len(code.strip().splitlines()) <= 6
    scope: dict[str, object] = {}
    exec(code, scope)
    assert scope["sol"].success  # type: ignore[attr-defined]
    assert scope["jac"].prepared.n_products == 3  # type: ignore[attr-defined]
    assert "3 compressed products" in what
