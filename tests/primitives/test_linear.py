"""Linear maps with constant sparse matrices (``sparsejac.primitives.linear``): the pattern is
``|M| @ deps``, operands with ``M = None`` pass through, several operands add up."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

import sparsejac
from sparsejac.primitives.linear import LINEAR_MAP, apply_sparse_map
from sparsejac.tracing import trace
from tests.primitives.util import rand

M = sp.csr_array(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, -1.0]]))  # (2, 3)


def check_map(f: Any, x: np.ndarray, expected: np.ndarray, value: np.ndarray) -> None:
    """``f`` (which binds the map and so runs only on traced input) has this pattern and value."""
    pat = sparsejac.jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(pat, expected)
    np.testing.assert_allclose(trace(f, x).out.value, value, rtol=1e-14)


def test_single_operand_pattern_is_the_matrix() -> None:
    """out = M @ u: the pattern is M's nonzeros."""
    u = rand((3,), 61)
    check_map(lambda t: apply_sparse_map((t,), (M,), (2,)), u, M.toarray() != 0, M @ u)


def test_identity_operand_and_sum_of_operands() -> None:
    """out = a + M @ b: ``None`` is the identity, terms are united."""
    def f(x: Any) -> Any:
        return apply_sparse_map((x[:2], x[2:]), (None, M), (2,))

    x = rand((5,), 62)
    expected = np.hstack([np.eye(2, dtype=bool), M.toarray() != 0])
    check_map(f, x, expected, x[:2] + M @ x[2:])


def test_constant_operand_contributes_no_dependencies() -> None:
    """A constant operand only shifts the value."""
    def f(u: Any) -> Any:
        return apply_sparse_map((u, np.array([1.0, 2.0, 3.0])), (M, M), (2,))

    u = rand((3,), 63)
    check_map(f, u, M.toarray() != 0, M @ u + M @ np.array([1.0, 2.0, 3.0]))


def test_output_shape_and_rank2_operand() -> None:
    """The flat map applies to a flattened (3, 1) operand and returns the requested shape."""
    def f(u: Any) -> Any:
        return apply_sparse_map((u.reshape(3, 1),), (M,), (1, 2))

    u = rand((3,), 64)
    check_map(f, u, M.toarray() != 0, (M @ u).reshape(1, 2))


def test_linear_map_primitive_name() -> None:
    """The primitive is registered under the name used in docs/supported.md."""
    assert LINEAR_MAP.name == "linear_map"
