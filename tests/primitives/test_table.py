"""The supported-functions page (``sparsejac.primitives.table``) is generated from the registry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sparsejac
from sparsejac.primitives import supported_entries
from sparsejac.primitives.table import FAMILIES, NOT_SUPPORTED, markdown_table, write

DOC = Path(__file__).resolve().parents[2] / "docs" / "supported.md"


def test_committed_page_equals_generated_text() -> None:
    """docs/supported.md is exactly the generated text (regenerate with
    ``python -m sparsejac.primitives.table``)."""
    assert DOC.read_text(encoding="utf-8") == markdown_table()


def test_every_entry_has_a_row_in_its_family() -> None:
    """Each registered entry appears once, under its family's heading."""
    text = markdown_table()
    for e in supported_entries():
        assert text.count(f"| `{e.name}` |") == 1, e.name
        section = text.split(f"## {e.family} (")[1].split("\n## ")[0]
        assert f"| `{e.name}` |" in section
    assert set(FAMILIES) >= {e.family for e in supported_entries()}


WHOLLY_UNSUPPORTED = ["unique", "nonzero", "flatnonzero",
                      "argwhere", "extract", "linalg.eig", "linalg.eigvals", "modf", "frexp",
                      "frompyfunc"]


def test_not_supported_list_names_unregistered_functions() -> None:
    """Functions the page lists as unsupported are listed there and absent from the registry."""
    registered = {e.name for e in supported_entries()}
    listed = " ".join(funcs for funcs, _, _ in NOT_SUPPORTED)
    for name in WHOLLY_UNSUPPORTED:
        assert name.split(".")[-1] in listed, name
        assert f"numpy.{name}" not in registered, name


@pytest.mark.parametrize("func", [np.flatnonzero, np.unique, np.argwhere, np.nonzero,
                                  np.fft.hfft])
def test_listed_unsupported_functions_raise(func: object) -> None:
    """A function from the not-supported list raises UnsupportedPrimitiveError when traced."""
    with pytest.raises(sparsejac.UnsupportedPrimitiveError):
        sparsejac.jacobian_sparsity(lambda x: func(x), np.ones(3))  # type: ignore[operator]


def test_write_creates_the_file(tmp_path: Path) -> None:
    """``write`` puts the generated text at the given path."""
    target = write(tmp_path / "docs" / "supported.md")
    assert target.read_text(encoding="utf-8") == markdown_table()
