"""Smoke tests of the examples: every examples/*.py runs in a fresh process and succeeds.

Examples read SPARSEJAC_EXAMPLE_SMALL=1 to shrink themselves; each gets a generous timeout.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


#: Optional extra check per example: substrings its output must contain.
EXPECTED_OUTPUT = {"demo": ["brusselator_2d_32.mtx", "2048 x 2048", "best:"]}


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_example_runs(script):
    """The example exits with status 0 and prints something (and what is expected of it)."""
    env = {**os.environ, "SPARSEJAC_EXAMPLE_SMALL": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=EXAMPLES.parent,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, f"{script.name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{script.name} printed nothing"
    for expected in EXPECTED_OUTPUT.get(script.stem, []):
        assert expected in proc.stdout, f"{script.name} did not print {expected!r}"


def test_bundled_pattern_is_up_to_date():
    """examples/data/brusselator_2d_32.mtx is what the demo's generator produces."""
    spec = importlib.util.spec_from_file_location("demo", EXAMPLES / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    stored = scipy.io.mmread(demo.DATA).tocsr()
    fresh = demo.brusselator_pattern()
    assert stored.shape == fresh.shape
    np.testing.assert_array_equal((stored != 0).toarray(), (fresh != 0).toarray())
