"""Linalg family (``sparsejac.primitives.linalg``): every contraction spelling with a constant
operand and with both operands traced, constant ``scipy.sparse`` matrices and arrays, norms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from tests.primitives.util import check_exact, rand

X34 = rand((3, 4), 41)
# a constant with structural zeros: its zeros must drop out of contraction patterns
K = np.array([[1.0, 0.0, -2.0], [0.0, 3.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 1.0]])  # (4, 3)

CONTRACTIONS = [
    pytest.param(lambda x: np.dot(x, K), id="dot_const_right"),
    pytest.param(lambda x: np.dot(K.T, x.T), id="dot_const_left"),
    pytest.param(lambda x: np.dot(x[0], x[1]), id="dot_vectors"),
    pytest.param(lambda x: np.dot(x, x[0]), id="dot_matrix_vector"),
    pytest.param(lambda x: np.dot(x[0, 0], x), id="dot_scalar"),
    pytest.param(lambda x: np.dot(x.reshape(3, 2, 2), x[:2, :2]), id="dot_nd"),
    pytest.param(lambda x: x.dot(K), id="dot_method"),
    pytest.param(lambda x: x @ K, id="matmul_const_right"),
    pytest.param(lambda x: K.T @ x.T, id="matmul_const_left_reflected"),
    pytest.param(lambda x: x @ x.T, id="matmul_both"),
    pytest.param(lambda x: x[0] @ x.T, id="matmul_vector_matrix"),
    pytest.param(lambda x: x @ x[1], id="matmul_matrix_vector"),
    pytest.param(lambda x: x[0] @ x[1], id="matmul_vectors"),
    pytest.param(lambda x: np.stack([x, -x]) @ K, id="matmul_batch_const"),
    pytest.param(lambda x: x.reshape(3, 2, 2) @ x[:, :2].reshape(3, 2, 1), id="matmul_batch"),
    pytest.param(lambda x: np.matmul(x[None], x.T[None, None]), id="matmul_broadcast_batch"),
    pytest.param(lambda x: np.outer(x[0], x[1, :2]), id="outer_both"),
    pytest.param(lambda x: np.outer(x, K[:, 0]), id="outer_const_2d_input"),
    pytest.param(lambda x: np.inner(x, x[2]), id="inner"),
    pytest.param(lambda x: np.inner(x, K.T), id="inner_const"),
    pytest.param(lambda x: np.vdot(x, K.T), id="vdot_const"),
    pytest.param(lambda x: np.einsum("ij,jk->ik", x, K), id="einsum_const"),
    pytest.param(lambda x: np.einsum("ij,kj->ik", x, x), id="einsum_both"),
    pytest.param(lambda x: np.einsum("ij,ij->i", x, x[::-1]), id="einsum_rowwise"),
    pytest.param(lambda x: np.einsum("ii->i", x[:, :3]), id="einsum_diagonal"),
    pytest.param(lambda x: np.einsum("ii", x[:, 1:]), id="einsum_trace_implicit"),
    pytest.param(lambda x: np.einsum("...j,jk", x, K), id="einsum_ellipsis_implicit"),
    pytest.param(lambda x: np.einsum("ij,jk,k->i", x, K, x[0, :3]), id="einsum_three"),
    pytest.param(lambda x: np.einsum("i,j->ij", x[0], x[1]), id="einsum_outer"),
    pytest.param(lambda x: np.tensordot(x, K, axes=1), id="tensordot_int"),
    pytest.param(lambda x: np.tensordot(x, x, axes=([0], [0])), id="tensordot_both"),
    pytest.param(lambda x: np.tensordot(x, x**2, axes=([-1], [-1])), id="tensordot_negative"),
    pytest.param(lambda x: np.tensordot(x[0], x[1], axes=0), id="tensordot_outer"),
    pytest.param(lambda x: np.tensordot(x, x, axes=2), id="tensordot_full"),
    pytest.param(lambda x: np.kron(x[:2, :2], K[:2, :2]), id="kron_const"),
    pytest.param(lambda x: np.kron(x[0], x[1:, :2]), id="kron_both"),
]


@pytest.mark.parametrize("f", CONTRACTIONS)
def test_contraction_is_exact(f: Callable[[Any], Any]) -> None:
    """Each contraction spelling gives the exact pattern (a constant's zeros are structural)."""
    check_exact(f, X34)


def test_constant_zeros_hand_written() -> None:
    """``K.T @ x`` for a vector x: row i reads the columns where K[:, i] is nonzero."""
    check_exact(lambda x: K.T @ x, rand((4,), 42), K.T != 0)


def test_both_traced_einsum_pattern_hand_written() -> None:
    """``P @ Q`` with both traced: out[i, k] reads row i of P and column k of Q."""
    def f(x: Any) -> Any:
        return x[:4].reshape(2, 2) @ x[4:].reshape(2, 2)

    expected = np.array([[1, 1, 0, 0, 1, 0, 1, 0], [1, 1, 0, 0, 0, 1, 0, 1],
                         [0, 0, 1, 1, 1, 0, 1, 0], [0, 0, 1, 1, 0, 1, 0, 1]], dtype=bool)
    check_exact(f, rand((8,), 43), expected)


# ---------------------------------------------------------------------------------------------
# constant scipy.sparse operands
# ---------------------------------------------------------------------------------------------

_LAP = sp.diags_array([1.0, -2.0, 1.0], offsets=[-1, 0, 1], shape=(5, 5), format="csr")
_RECT = sp.csr_array(np.array([[0.0, 1.0, 0.0, 0.0, 2.0], [3.0, 0.0, 0.0, 0.0, 0.0],
                               [0.0, 0.0, 0.0, 4.0, 5.0]]))  # (3, 5)
KINDS = [
    pytest.param(sp.csr_array, id="csr_array"),
    pytest.param(sp.csr_matrix, id="csr_matrix"),
    pytest.param(sp.csc_array, id="csc_array"),
    pytest.param(sp.coo_array, id="coo_array"),
    pytest.param(sp.coo_matrix, id="coo_matrix"),
    pytest.param(sp.dia_matrix, id="dia_matrix"),
    pytest.param(sp.lil_array, id="lil_array"),
]


@pytest.mark.parametrize("kind", KINDS)
def test_sparse_matrix_times_traced_vector(kind: Any) -> None:
    """``L @ u`` and ``L.dot(u)`` for every scipy.sparse format: the pattern of L itself."""
    lap = kind(_LAP)
    u = rand((5,), 44)
    check_exact(lambda t: lap @ t, u, _LAP.toarray() != 0)
    check_exact(lambda t: lap.dot(t), u, _LAP.toarray() != 0)


@pytest.mark.parametrize("kind", KINDS)
def test_laplacian_plus_square(kind: Any) -> None:
    """The PDE idiom ``L @ u + u**2``: the tridiagonal pattern."""
    lap = kind(_LAP)
    check_exact(lambda t: lap @ t + t**2, rand((5,), 45), _LAP.toarray() != 0)


@pytest.mark.parametrize("kind", KINDS)
def test_sparse_products_in_every_position(kind: Any) -> None:
    """Rectangular L: ``L @ u``, ``u @ L``, ``L @ U`` (2-D), ``U @ L`` and ``L.T @ v``, every
    format (COO's ``u @ L`` transposed ``u`` with a ``range`` of axes, which failed)."""
    rect = kind(_RECT)
    dense = _RECT.toarray()
    check_exact(lambda t: rect @ t, rand((5,), 46), dense != 0)
    check_exact(lambda t: t @ rect, rand((3,), 47), dense.T != 0)
    check_exact(lambda t: rect.T @ t, rand((3,), 48), dense.T != 0)
    check_exact(lambda t: rect @ t.reshape(5, 2), rand((10,), 49))
    check_exact(lambda t: t.reshape(2, 3) @ rect, rand((6,), 50))


def test_spmatrix_star_is_matrix_product() -> None:
    """For the spmatrix classes ``L * u`` is the matrix product (as in scipy)."""
    lap = sp.csr_matrix(_LAP)
    check_exact(lambda t: lap * t, rand((5,), 51), _LAP.toarray() != 0)


def test_explicit_zeros_in_sparse_matrix_are_not_dependencies() -> None:
    """Stored zeros of a constant sparse matrix are not in the pattern."""
    lap = _LAP.copy()
    lap.data[lap.data == 1.0] = 0.0  # keep them stored
    assert lap.nnz == 13
    check_exact(lambda t: lap @ t, rand((5,), 52), np.eye(5, dtype=bool))


def test_sparse_matrix_shape_mismatch() -> None:
    """A dimension mismatch is reported like numpy's."""
    with pytest.raises(ValueError, match="dimension mismatch"):
        sparsejac.jacobian_sparsity(lambda t: _LAP @ t, np.ones(4))


# ---------------------------------------------------------------------------------------------
# norms and the cross product
# ---------------------------------------------------------------------------------------------

NORMS = [
    pytest.param(lambda x: np.linalg.norm(x), id="frobenius"),
    pytest.param(lambda x: np.linalg.norm(x, "fro", keepdims=True), id="fro_keepdims"),
    pytest.param(lambda x: np.linalg.norm(x[0]), id="vector_2"),
    pytest.param(lambda x: np.linalg.norm(x, axis=0), id="axis0"),
    pytest.param(lambda x: np.linalg.norm(x, ord=1, axis=-1), id="ord1"),
    pytest.param(lambda x: np.linalg.norm(x, ord=3, axis=1, keepdims=True), id="ord3"),
    pytest.param(lambda x: np.linalg.norm(x, axis=(0, 1)), id="axes"),
    pytest.param(lambda x: np.linalg.vector_norm(x), id="vector_norm_all"),
    pytest.param(lambda x: np.linalg.vector_norm(x, ord=1, axis=(-1, 0), keepdims=True),
                 id="vector_norm_axes"),
]


@pytest.mark.parametrize("f", NORMS)
def test_norms_are_exact(f: Callable[[Any], Any]) -> None:
    """np.linalg.norm and vector_norm: every reduced element is read."""
    check_exact(f, X34)


def test_inf_norm_global_and_local() -> None:
    """The inf-norm reads a whole row globally and its largest element locally."""
    x = np.array([[1.0, -3.0], [0.5, 0.2]])
    f = lambda t: np.linalg.norm(t, ord=np.inf, axis=1)  # noqa: E731
    np.testing.assert_array_equal(sparsejac.jacobian_sparsity(f, x).toarray(),
                                  [[1, 1, 0, 0], [0, 0, 1, 1]])
    check_exact(f, x, [[0, 1, 0, 0], [0, 0, 1, 0]], local=True)


def test_matrix_norms_have_hand_derived_jacobians() -> None:
    """Matrix 2-norm, nuclear norm and 1-norm (once refused) against their derivatives.

    d‖A‖₂/dA = u₁v₁ᵀ, d‖A‖_*/dA = U Vᵀ (thin SVD), d‖A‖₁/dA = sign(A) in the column of
    largest absolute sum.
    """
    u, _, vh = np.linalg.svd(X34, full_matrices=False)
    got = sparsejac.jacobian(lambda x: np.linalg.norm(x, ord=2), X34).toarray()
    np.testing.assert_allclose(got.reshape(3, 4), np.outer(u[:, 0], vh[0]), atol=1e-12)
    got = sparsejac.jacobian(lambda x: np.linalg.norm(x, ord="nuc"), X34).toarray()
    np.testing.assert_allclose(got.reshape(3, 4), u @ vh, atol=1e-12)
    got = sparsejac.jacobian(lambda x: np.linalg.norm(x - 1.0, ord=1), X34).toarray()
    col = np.argmax(np.abs(X34 - 1.0).sum(axis=0))
    expected = np.zeros((3, 4))
    expected[:, col] = np.sign(X34[:, col] - 1.0)
    np.testing.assert_array_equal(got.reshape(3, 4), expected)


def test_every_norm_order_matches_numpy() -> None:
    """Every vector and matrix ord, axis and keepdims: the traced value is numpy's."""
    from sparsejac.tracing import trace

    x = rand((3, 4), 43) - 0.5
    calls = [((None,), {}), ((2,), {}), ((-2,), {}), (("nuc",), {}), (("fro",), {}),
             ((1,), {}), ((-1,), {}), ((np.inf,), {}), ((-np.inf,), {}),
             ((2,), {"axis": (1, 0), "keepdims": True}), ((1,), {"axis": (1, 0)}),
             ((None,), {"axis": 0}), ((0,), {"axis": 1}), ((3,), {"axis": -1}),
             ((-np.inf,), {"axis": 0, "keepdims": True}), ((-1.5,), {"axis": 1})]
    for args, kw in calls:
        prog = trace(lambda t, a=args, k=kw: np.linalg.norm(t, *a, **k), x)
        np.testing.assert_allclose(prog.out.value, np.linalg.norm(x, *args, **kw),
                                   rtol=1e-13, err_msg=f"{args} {kw}")


def test_cross_product() -> None:
    """np.cross of traced 3-vectors (rows), also with a constant operand."""
    check_exact(lambda x: np.cross(x[:, :3], x[:, 1:]), X34)
    check_exact(lambda x: np.cross(x[:, :3], [0.0, 0.0, 1.0]), X34)


@pytest.mark.parametrize("name", ["linalg.matmul", "linalg.outer", "linalg.vecdot",
                                  "linalg.trace", "linalg.diagonal", "linalg.cross",
                                  "linalg.matrix_transpose", "linalg.tensordot", "vecdot",
                                  "matvec", "vecmat", "var correction", "std mean"])
def test_numpy2_array_api_spellings(name: str) -> None:
    """numpy 2's array-API spellings (np.linalg.trace reads the *last* two axes, unlike
    np.trace) and var/std's correction=/mean= keywords. Oracle: central differences of
    numpy's own function."""
    A = lambda u: u[:9].reshape(3, 3)  # noqa: E731
    fs = {
        "linalg.matmul": lambda u: np.linalg.matmul(A(u), u[:3] ** 2),
        "linalg.outer": lambda u: np.linalg.outer(u[:3], u[3:6] ** 2),
        "linalg.vecdot": lambda u: np.linalg.vecdot(A(u), u[3:6] ** 2),
        "linalg.trace": lambda u: np.linalg.trace(u[:12].reshape(3, 2, 2) ** 2, offset=1),
        "linalg.diagonal": lambda u: np.linalg.diagonal(u[:12].reshape(2, 2, 3) ** 2),
        "linalg.cross": lambda u: np.linalg.cross(u[:3], u[3:6] ** 2),
        "linalg.matrix_transpose": lambda u: np.linalg.matrix_transpose(A(u) ** 2),
        "linalg.tensordot": lambda u: np.linalg.tensordot(A(u), A(u) ** 2, axes=1),
        "vecdot": lambda u: np.vecdot(A(u), u[3:6] ** 2),
        "matvec": lambda u: np.matvec(A(u), u[3:6] ** 2),
        "vecmat": lambda u: np.vecmat(u[3:6] ** 2, A(u)),
        "var correction": lambda u: np.var(A(u), axis=0, correction=1),
        "std mean": lambda u: np.std(A(u), axis=1, mean=np.mean(A(u), axis=1, keepdims=True)),
    }
    f = fs[name]
    x = np.random.default_rng(5).uniform(0.5, 1.5, 12)
    want = np.array([(np.asarray(f(x + 1e-6 * e)) - np.asarray(f(x - 1e-6 * e))).ravel()
                     / 2e-6 for e in np.eye(12)]).T
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-7, atol=1e-9)


def test_traced_transpose_takes_axes_as_numpy_does() -> None:
    """A range, None, separate ints, and an empty tuple (numpy's error for a 2-D array; it
    reversed the axes)."""
    x = rand((6,), 52)
    for call in (lambda a: a.transpose(range(1, -1, -1)), lambda a: a.transpose(None),
                 lambda a: a.transpose(1, 0), lambda a: a.transpose()):
        check_exact(lambda t, call=call: call(t.reshape(2, 3)).ravel(), x)
    with pytest.raises(ValueError, match="axes don't match array"):
        sparsejac.jacobian(lambda t: t.reshape(2, 3).transpose(()).ravel(), x)


def test_sparse_diagonal_matrices_from_arrays_made_inside_f() -> None:
    """sp.diags(np.ones(n)) inside f (np.ones is a traced buffer there) failed with scipy's
    "Different number of diagonals and offsets"; the matrix is the constant it is. Oracle:
    the matrix itself. Diagonals that depend on x are refused by name, with the way out."""
    import scipy.sparse as sp

    import sparsejac

    n = 5
    x = np.linspace(1.0, 2.0, n)
    band = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(n, n)).toarray()
    cases = [(lambda u: sp.diags(np.ones(n)) @ u, np.eye(n)),
             (lambda u: sp.diags(2.0 * np.ones(n)) @ u, 2 * np.eye(n)),
             (lambda u: sp.diags_array(np.full(n, 3.0)) @ u, 3 * np.eye(n)),
             (lambda u: sp.diags(np.ones(n - 1), 1) @ u, np.eye(n, k=1)),
             (lambda u: sp.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)],
                                 [-1, 0, 1]) @ u, band),
             (lambda u: sp.spdiags(np.ones((1, n)), 0, n, n) @ u, np.eye(n))]
    for f, J in cases:
        np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), J)
        np.testing.assert_array_equal(sparsejac.SparseJacobian(f, x)(x[::-1]).toarray(), J)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"scipy\.sparse\.diags .*d \* u"):
        sparsejac.jacobian(lambda u: sp.diags(u) @ u, x)
