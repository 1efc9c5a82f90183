"""Every registry entry's local Jacobian (``linearize``) through the prepared engines.

Reuses the representative calls of ``tests/test_rules.py``: for each elementwise row and each
entry case, the program is recorded once (global mode) and replayed at a *new* point; the
prepared forward sweep with the identity seed (``B = J``) and the reverse sweep (``C = J``)
must equal the eager interpreters' Jacobian there to 1e-12. The compiled tape
(:class:`sparsejac.ad.Tape`) is checked the same way wherever it encodes the program. Cases
whose trace needs local mode (index arrays read from values) cannot be prepared and are
listed by the skip reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import PreparedProgram, Tape, jvp
from sparsejac.errors import ConcretizationError
from sparsejac.tracing import trace

from ..test_rules import (
    CASES,
    OPERAND_DOMAINS,
    UNARY_ROWS,
    UNARY_SHAPES,
    Case,
    Row,
    _binary_f,
    _case_id,
    _row_id,
    binary_row_params,
    sample,
    sample_operands,
)


def check_prepared(f: Any, x0: np.ndarray, x1: np.ndarray) -> None:
    """Prepared forward and reverse Jacobians at x1 equal the eager one."""
    try:
        prog = trace(f, x0)
    except ConcretizationError:
        pytest.skip("the call reads traced values (local mode only): not preparable")
    engines: list[Any] = [PreparedProgram(prog, width=2)]
    tape = Tape.build(prog)
    if tape is not None:
        engines.append(tape)
    n = x0.size
    for pp in engines:
        out1, b = pp.forward(x1, np.arange(n), n)
        m = int(np.size(out1))
        jac = jvp(f, x1, np.eye(n)).reshape(m, n)
        scale = 1.0 + np.abs(jac).max(initial=0.0)
        np.testing.assert_allclose(b, jac, rtol=0, atol=1e-12 * scale)
        _, c = pp.reverse(x1, np.arange(m), m)
        np.testing.assert_allclose(c, jac, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(np.ravel(out1), np.ravel(f(x1)), rtol=1e-14, atol=1e-14)
        if isinstance(pp, Tape) and m:  # the fused call: sweeps and decompression in one
            for partition in ("column", "row"):
                c = sparsejac.color(np.ones((m, n)), partition)  # every entry, row-major
                got = pp.jacobian_data(x1, c)
                if got is not None:  # None: a value is not finite (the chain answers)
                    np.testing.assert_allclose(got[0], jac.ravel(), rtol=0,
                                               atol=1e-12 * scale)


@pytest.mark.parametrize("shape", [pytest.param(s, id=str(s)) for s in UNARY_SHAPES])
@pytest.mark.parametrize("row", [pytest.param(r, id=_row_id(r)) for r in UNARY_ROWS])
def test_unary_row(row: Row, shape: tuple[int, ...], rng: np.random.Generator) -> None:
    """A unary row's local Jacobian gives the right prepared Jacobian at a new point."""
    check_prepared(row.fn, sample(row.domain, shape, rng), sample(row.domain, shape, rng))


@pytest.mark.parametrize(("row", "sa", "sb", "traced"), binary_row_params())
def test_binary_row(row: Row, sa: tuple[int, ...], sb: tuple[int, ...], traced: str,
                    rng: np.random.Generator) -> None:
    """A binary row's local Jacobians (broadcasting, constant operands) are right."""
    da, db = OPERAND_DOMAINS.get(row.fn, (row.domain, row.domain))
    a, b = sample_operands(row, sa, sb, rng)
    f = _binary_f(row.fn, sa, sb, traced, {"a": a, "b": b})

    def point() -> np.ndarray:
        pa, pb = sample(da, sa, rng), sample(db, sb, rng)
        x = {"ab": np.concatenate([np.ravel(pa), np.ravel(pb)]), "a": pa, "b": pb}[traced]
        return np.asarray(x, dtype=np.float64)

    check_prepared(f, point(), point())


@pytest.mark.parametrize("case", [pytest.param(c, id=_case_id(c)) for c in CASES])
def test_entry(case: Case, rng: np.random.Generator) -> None:
    """A registry entry's representative call gives the right prepared Jacobian."""
    x0 = rng.uniform(*case.domain, size=case.shape)
    x1 = rng.uniform(*case.domain, size=case.shape)
    check_prepared(case.f, x0, x1)


_LIBRARY_CASES = [c for c in CASES if c.entry.startswith(("numpy.linalg.", "scipy."))]


@pytest.mark.parametrize("case", [pytest.param(c, id=_case_id(c)) for c in _LIBRARY_CASES])
def test_library_entry_at_several_points(case: Case, rng: np.random.Generator) -> None:
    """Linear algebra, scipy.special and scipy.stats: one program replayed at three points."""
    x0 = rng.uniform(*case.domain, size=case.shape)
    prog = trace(case.f, x0)
    pp = PreparedProgram(prog, width=2)
    n = x0.size
    for _ in range(3):
        x1 = rng.uniform(*case.domain, size=case.shape)
        out1, b = pp.forward(x1, np.arange(n), n)
        m = int(np.size(out1))
        jac = jvp(case.f, x1, np.eye(n)).reshape(m, n)
        scale = 1.0 + np.abs(jac).max(initial=0.0)
        np.testing.assert_allclose(b, jac, rtol=0, atol=1e-12 * scale)
        _, c = pp.reverse(x1, np.arange(m), m)
        np.testing.assert_allclose(c, jac, rtol=0, atol=1e-12 * scale)
