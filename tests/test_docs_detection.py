"""The worked examples of docs/patterns.md and docs/detection.md run and print what they say."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.parametrize("page", ["patterns.md", "detection.md"])
def test_doc_examples(page: str) -> None:
    """Every ``>>>`` example on the page produces the output shown."""
    path = DOCS / page
    if not path.is_file():
        pytest.fail(f"{path} is missing")
    result = doctest.testfile(
        str(path), module_relative=False, verbose=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
    )
    assert result.attempted > 0, f"{page} has no examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
