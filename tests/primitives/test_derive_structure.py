"""A local Jacobian's CSR structure: entries already in CSR order skip the sort (the usual
elementwise and gather case) and give exactly what the sorting path gives."""

from __future__ import annotations

import numpy as np
import pytest

from sparsejac.primitives.core import LocalJac
from sparsejac.primitives.derive import _in_csr_order, _matrix, _structure


def _dense(s, vals=None):
    return _matrix(s, vals, None).toarray()


@pytest.mark.parametrize("seed", range(12))
def test_in_order_entries_match_the_sorted_path(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = rng.integers(1, 30, size=2)
    cells = np.flatnonzero(rng.random(m * n) < 0.3)
    rows, cols = np.divmod(cells, n)  # strictly increasing: CSR order
    values = rng.standard_normal(cells.size)
    values[rng.random(cells.size) < 0.2] = 0.0  # zeros of a constant local Jacobian drop
    shuffle = rng.permutation(cells.size)
    ordered = _structure(LocalJac(rows, cols, const=values), (m, n))
    shuffled = _structure(LocalJac(rows[shuffle], cols[shuffle], const=values[shuffle]),
                          (m, n))
    assert _in_csr_order(rows, cols)
    np.testing.assert_array_equal(ordered.indptr, shuffled.indptr)
    np.testing.assert_array_equal(ordered.indices, shuffled.indices)
    np.testing.assert_array_equal(_dense(ordered), _dense(shuffled))
    expected = np.zeros((m, n))
    expected[rows, cols] = values
    np.testing.assert_array_equal(_dense(ordered), expected)
    dyn = LocalJac(rows, cols, dyn=lambda vals, out: vals[0])  # values at call time
    dyn_shuffled = LocalJac(rows[shuffle], cols[shuffle], dyn=lambda vals, out: vals[0])
    np.testing.assert_array_equal(
        _dense(_structure(dyn, (m, n)), [values]),
        _dense(_structure(dyn_shuffled, (m, n)), [values[shuffle]]))


def test_order_check() -> None:
    """Strictly increasing (row, column) only: a repeat or a step back takes the sort."""
    assert _in_csr_order(np.array([0, 0, 1, 3]), np.array([1, 4, 0, 0]))
    assert not _in_csr_order(np.array([0, 0, 1]), np.array([1, 1, 0]))  # repeated entry
    assert not _in_csr_order(np.array([0, 1, 0]), np.array([0, 0, 1]))  # a row steps back
    assert not _in_csr_order(np.array([2, 2]), np.array([3, 1]))         # a column steps back
    assert _in_csr_order(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    with pytest.raises(AssertionError, match="repeated entries"):
        _structure(LocalJac(np.array([0, 0]), np.array([1, 1]), const=1.0), (1, 2))



def test_scalar_elementwise_pattern_equals_the_general_one() -> None:
    """Element loops take a short path for one-element elementwise nodes: on every such node
    of a loop with structural zeros (a constant zero factor, ``np.where`` on a constant),
    a three-operand ufunc call and repeated operands, it equals the general broadcasting
    path, and the loop's pattern is the hand-derived one."""
    import sparsejac
    from sparsejac.detection import program_sparsity
    from sparsejac.primitives import depsets
    from sparsejac.primitives.elementwise import Elementwise
    from sparsejac.tracing import trace

    def loop(x):  # type: ignore[no-untyped-def]
        out = np.zeros(x.size)
        for i in range(x.size):
            a, b, c = x[i], x[(i + 1) % x.size], x[(i + 3) % x.size]
            keep = i % 2 == 0
            out[i] = (a * b + np.where(keep, a, c) + 0.0 * c + np.clip(a, b, 2.0) + a * a
                      + np.hypot(a, b))
        return out

    x = np.linspace(0.2, 1.4, 7)
    prog = trace(loop, x)
    state = {prog.x.id: depsets.identity(prog.n_in)}
    checked = 0
    for node in prog.nodes:
        if not node.out.active:
            continue
        ins = [state.get(v.id) if v.active else None for v in node.inputs]
        d = node.prim.pattern(node, ins, False)
        if isinstance(node.prim, Elementwise) and node.out.size == 1 and d is not None:
            general = node.prim._general_pattern(node, ins, False)
            assert general is not None
            np.testing.assert_array_equal(d.toarray(), general.toarray())
            checked += 1
        if d is not None:
            state[node.out.id] = d
    assert checked >= 7 * 8
    want = np.zeros((7, 7), dtype=bool)  # a, b, and c where np.where picks it
    for i in range(7):
        want[i, i] = want[i, (i + 1) % 7] = True
        if i % 2:
            want[i, (i + 3) % 7] = True
    np.testing.assert_array_equal(program_sparsity(prog).toarray(), want)
    np.testing.assert_array_equal(sparsejac.jacobian_sparsity(loop, x).toarray(), want)
