"""The `$ sparsejac ...` blocks of docs/cli.md and docs/report.md are the command's real output.

Each ```text block whose first line is ``$ sparsejac ARGS`` is run as
``sparsejac.cli.main(ARGS)`` from the repository root (stdout and stderr together, 100
columns) and compared with the rest of the block as a doctest would: ``...`` matches
anything (timings), runs of whitespace are equal. Blocks listed in :data:`NOT_RUN` are
documented outputs of slow commands: they are marked slow (``make test-slow`` runs them) and
the default suite only checks that they are still on their page.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import shlex
from pathlib import Path

import pytest

from sparsejac.cli import main

REPO = Path(__file__).resolve().parent.parent
PAGES = ("cli.md", "report.md")
#: Commands whose output is re-run only by ``make test-slow``: (page, command) -> why.
NOT_RUN = {
    ("report.md", "sparsejac report examples/data/brusselator_2d_32.mtx"):
        "order 'best' spends its 2 s time budget on each of four partitions",
}
BLOCK = re.compile(r"^```text\n\$ (sparsejac[^\n]*)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str, str]]:
    """(page, command, expected output) of every command block."""
    found = []
    for page in PAGES:
        text = (REPO / "docs" / page).read_text()
        found += [(page, m.group(1).strip(), m.group(2)) for m in BLOCK.finditer(text)]
    return found


BLOCKS = blocks()


def test_pages_have_command_blocks() -> None:
    """Both pages show commands, and every block that is not run is still on its page."""
    assert {page for page, _, _ in BLOCKS} == set(PAGES)
    shown = {(page, cmd) for page, cmd, _ in BLOCKS}
    assert set(NOT_RUN) <= shown


@pytest.mark.parametrize(("page", "command", "expected"),
                         [pytest.param(p, c, e, id=f"{p}:{c}",
                                       marks=[pytest.mark.slow] if (p, c) in NOT_RUN else [])
                          for p, c, e in BLOCKS])
def test_command_block_is_real_output(page: str, command: str, expected: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Running the block's command prints what the block shows."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("COLUMNS", "100")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(shlex.split(command)[1:])
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert checker.check_output(expected, out.getvalue(), flags), (
        f"docs/{page}: the output of `{command}` changed; replace the block with:\n"
        f"{out.getvalue()}"
    )
