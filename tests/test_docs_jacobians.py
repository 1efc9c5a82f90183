"""docs/jacobians.md: its figures are filled in, dated and reproducible.

Its ``>>>`` examples run in tests/test_docs.py, with every other page's.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "jacobians.md"


def test_page_has_examples():
    """The page teaches by checked examples (solve_ivp, least_squares, root, modes, fd)."""
    text = PAGE.read_text()
    assert text.count(">>> ") >= 20
    for call in ("ode_jacobian(", "least_squares_jacobian(", "root_jacobian(", 'mode="fd"',
                 "calibrate=True"):
        assert call in text, call


def test_figures_are_filled_in_and_dated():
    """The benchmark table and example outputs are present, with command, date and machine."""
    text = PAGE.read_text()
    assert not re.search(r"\b[A-Z]+_(TABLE|OUTPUT)\b", text), "a placeholder is left"
    assert "python benchmarks/jacobian.py" in text
    assert re.search(r"date: \d{4}-\d{2}-\d{2}", text)
    assert "machine: " in text
    assert (REPO / "benchmarks" / "jacobian.py").is_file()
    assert (REPO / "examples" / "brusselator_bdf.py").is_file()
    assert (REPO / "examples" / "bundle_adjustment.py").is_file()
