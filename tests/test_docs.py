"""The documentation's examples run: every ``>>>`` in docs/*.md is a doctest."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if ">>>" in p.read_text())


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_examples(page: Path) -> None:
    """Every interactive example of the page prints what the page shows."""
    result = doctest.testfile(
        str(page), module_relative=False, verbose=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {page}"


def test_concepts_page_is_checked() -> None:
    """The concepts page's worked example is among the checked pages."""
    assert DOCS / "concepts.md" in PAGES
