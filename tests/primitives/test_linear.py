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


def test_a_matrix_storing_an_entry_twice_is_summed_as_scipy_does() -> None:
    """Found from outside: a CSR/CSC matrix that stores an entry twice (legal: scipy's
    products add the copies) failed every entry point with an internal AssertionError. Its
    entries are summed on a copy; the caller's matrix is left as it was."""
    X = sp.csr_matrix((np.array([2.0, 1.0, 3.0, 5.0, 6.0]), np.array([0, 2, 2, 1, 2]),
                       np.array([0, 3, 4, 5])), shape=(3, 3))
    dense = X.toarray()
    data, indices = X.data.copy(), X.indices.copy()
    w = np.array([0.3, -0.2, 0.5])
    np.testing.assert_array_equal(sparsejac.jacobian(lambda v: X @ v, w).toarray(), dense)
    np.testing.assert_array_equal(sparsejac.jacobian(lambda v: X.tocsc() @ v, w).toarray(),
                                  dense)
    np.testing.assert_array_equal(sparsejac.jacobian_sparsity(lambda v: X.T @ v, w).toarray(),
                                  dense.T != 0)
    s = 1.0 / (1.0 + np.exp(-(dense @ w)))
    hess = sparsejac.hessian(lambda v: np.sum(np.logaddexp(0.0, X @ v)), w).toarray()
    np.testing.assert_allclose(hess, dense.T @ (dense * (s * (1 - s))[:, None]), rtol=1e-13)
    np.testing.assert_array_equal(X.data, data)
    np.testing.assert_array_equal(X.indices, indices)
