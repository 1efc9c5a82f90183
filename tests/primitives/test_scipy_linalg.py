"""scipy.linalg and scipy.sparse.linalg with traced operands (sparsejac/primitives/scipy_linalg.py).

Oracles: the structure of ``A⁻¹`` from the factors' reachability against the nonzeros of the
dense inverse of random sparse matrices (reducible ones included), Jacobians against
``np.linalg.inv`` of the dense matrix, scipy's own values; errors for what cannot be traced.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import sparsejac
from sparsejac.primitives.scipy_linalg import inverse_structure
from sparsejac.tracing import trace
from tests.primitives.util import rand


def _random_sparse(n: int, density: float, seed: int, blocks: int = 1) -> sp.csc_array:
    """A random nonsingular sparse matrix; ``blocks > 1`` makes it block-triangular, permuted."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((n, n), density=density, rng=rng, format="lil")
    a = a.toarray()
    if blocks > 1:  # zero the upper block triangle: a reducible matrix
        edges = np.linspace(0, n, blocks + 1).astype(int)
        for i in range(blocks):
            a[edges[i]:edges[i + 1], edges[i + 1]:] = 0.0
        perm = rng.permutation(n)
        a = a[perm][:, perm]
    a = a + np.diag(rng.uniform(2.0, 3.0, n))
    return sp.csc_array(a)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("blocks", [1, 3, 6])
def test_inverse_structure_is_the_nonzeros_of_the_inverse(seed: int, blocks: int) -> None:
    """Reachability in the graphs of L then U gives exactly the nonzeros of A⁻¹ (generic A)."""
    a = _random_sparse(12, 0.12, seed, blocks)
    lu = spla.splu(a)
    s = inverse_structure(lu.L, lu.U, lu.perm_r, lu.perm_c).toarray()
    inv = np.linalg.inv(a.toarray())
    np.testing.assert_array_equal(s, np.abs(inv) > 1e-13 * np.abs(inv).max())
    if blocks > 1:
        assert s.sum() < s.size


def test_spsolve_pattern_of_a_large_decoupled_system() -> None:
    """Implicit Euler on 5 000 decoupled pairs: the pattern is the 2 × 2 blocks, not dense."""
    n = 10_000
    pair = sp.csr_array([[-2.0, 1.0], [1.0, -3.0]])
    m = sp.csc_array(sp.eye_array(n) - 0.1 * sp.kron(sp.eye_array(n // 2), pair))

    def step(u: Any) -> Any:
        return spla.spsolve(m, u + 0.1 * u**2)

    pat = sparsejac.jacobian_sparsity(step, np.ones(n))
    assert pat.nnz == 2 * n
    u = rand((n,), 1)
    jac = sparsejac.SparseJacobian(step, u, mode="forward")
    assert jac.stats()["colors"]["forward"] == 2
    block = np.linalg.inv(np.eye(2) - 0.1 * pair.toarray())
    np.testing.assert_allclose(jac(u).toarray()[:2, :2], block * (1 + 0.2 * u[:2]), rtol=1e-12)


def test_values_are_scipys() -> None:
    """spsolve, splu().solve, lu_solve, cho_solve, expm, solve: the traced value is scipy's."""
    a = _random_sparse(6, 0.3, 2)
    dense = a.toarray()
    lu, cho = sla.lu_factor(dense), sla.cho_factor(dense @ dense.T)
    u = rand((6, 2), 3)
    calls = [
        lambda t: spla.spsolve(a, t[:, 0]),
        lambda t: spla.spsolve(a, t),
        lambda t: spla.spsolve(a, t[:, :1]),
        lambda t: spla.splu(a).solve(t),
        lambda t: spla.splu(a).solve(t[:, 0], trans="T"),
        lambda t: sla.lu_solve(lu, t, trans=1),
        lambda t: sla.cho_solve(cho, t),
        lambda t: sla.solve(dense + t[:, 0], t, assume_a="sym"),
        lambda t: sla.expm(t[:2] * 0.3),
    ]
    for call in calls:
        got = trace(call, u).out.value
        want = call(u)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_a_factorisation_made_before_the_trace_is_refused_with_the_fix() -> None:
    """lu = splu(A) outside f, lu.solve(u) inside: scipy's compiled solve converts u."""
    a = _random_sparse(5, 0.3, 4)
    outside = spla.splu(a)
    with pytest.raises(sparsejac.TracedConversionError, match=r"call splu\(A\).*inside `f`"):
        sparsejac.jacobian(lambda u: outside.solve(u), np.ones(5))
    # inside f it works, and equals A⁻¹
    got = sparsejac.jacobian(lambda u: spla.splu(a).solve(u), np.ones(5)).toarray()
    np.testing.assert_allclose(got, np.linalg.inv(a.toarray()), rtol=1e-12)


def test_traced_matrices_and_factors_are_refused_by_name() -> None:
    """A traced sparse matrix or a traced factorisation: clear errors naming the argument."""
    a = np.eye(3) * 2.0
    lu = sla.lu_factor(a)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="`lu_and_piv`"):
        sparsejac.jacobian(lambda t: sla.lu_solve((t.reshape(3, 3), lu[1]), np.ones(3)),
                           a.ravel())
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="traced matrix `A`"):
        sparsejac.jacobian(lambda t: spla.spsolve(t.reshape(3, 3), np.ones(3)), a.ravel())


def test_splu_outside_a_trace_is_scipys_object() -> None:
    """splu called outside f (or by scipy's own code) returns scipy's SuperLU."""
    a = _random_sparse(4, 0.3, 5)
    assert type(spla.splu(a)).__name__ == "SuperLU"
    seen = []

    def f(u: Any) -> Any:
        lu = spla.splu(a)
        seen.append(type(lu).__name__)
        np.testing.assert_allclose(lu.solve(np.ones(4)), spla.spsolve(a, np.ones(4)))
        return lu.solve(u)

    sparsejac.jacobian(f, np.ones(4))
    assert seen[0] == "TracedSuperLU"


@pytest.mark.parametrize("mode", ["forward", "reverse", "mixed"])
def test_newton_inner_solve_prepared_in_every_mode(mode: str) -> None:
    """A residual with an inner sparse solve: prepared once, exact at several points."""
    a = _random_sparse(8, 0.25, 6, blocks=4)
    ainv = np.linalg.inv(a.toarray())

    def residual(u: Any) -> Any:
        return u - spla.spsolve(a, np.sin(u)) + sla.cho_solve(_CHO, u[:3] ** 2).sum()

    def expected(u: np.ndarray) -> np.ndarray:
        j = np.eye(8) - ainv * np.cos(u)[None, :]
        g = np.zeros(8)
        g[:3] = np.linalg.inv(_M3).sum(axis=0) * 2 * u[:3]  # d/du 1ᵀ M⁻¹ u²
        return j + g[None, :]

    rng = np.random.default_rng(7)
    prepared = sparsejac.SparseJacobian(residual, rng.uniform(0.5, 1.5, 8), mode=mode)
    for _ in range(3):
        u = rng.uniform(0.5, 1.5, 8)
        np.testing.assert_allclose(prepared(u).toarray(), expected(u), rtol=1e-11, atol=1e-12)


_M3 = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 4.0]])
_CHO = sla.cho_factor(_M3)


def test_inv_and_det_of_a_traced_matrix() -> None:
    """Found from outside: scipy.linalg.inv and det of a traced matrix raised an
    AttributeError about ndarray.flags that named neither. They are traced now (as
    np.linalg.inv and det, reading the triangle assume_a says); inv of a triangular or
    diagonal matrix, whose exact pattern is sparser, is refused by name. Oracles: the
    inverse's derivative -A^-1 E A^-1 and Jacobi's formula det(A) A^-T, by hand."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    inv = np.linalg.inv(a)
    J = sparsejac.jacobian(lambda x: sla.inv(x.reshape(4, 4)).ravel(), a.ravel()).toarray()
    want = -np.einsum("ik,lj->ijkl", inv, inv).reshape(16, 16)
    np.testing.assert_allclose(J, want, rtol=1e-12, atol=1e-14)
    d = sparsejac.jacobian(lambda x: np.atleast_1d(sla.det(x.reshape(4, 4))), a.ravel())
    np.testing.assert_allclose(d.toarray().reshape(4, 4), np.linalg.det(a) * inv.T, rtol=1e-12)
    s = a @ a.T  # pos, reading the upper triangle: the lower one is never looked at
    up = np.triu(s) + 5.0 * np.tril(np.ones((4, 4)), -1)
    got = sparsejac.jacobian(lambda x: sla.inv(x.reshape(4, 4), assume_a="pos").ravel(),
                             up.ravel()).toarray().reshape(16, 4, 4)
    assert not got[:, np.tril_indices(4, -1)[0], np.tril_indices(4, -1)[1]].any()
    for assume in ("lower triangular", "diagonal"):
        with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"scipy\.linalg\.inv"):
            sparsejac.jacobian(lambda x, a=assume: sla.inv(x.reshape(4, 4), assume_a=a),
                               a.ravel())
