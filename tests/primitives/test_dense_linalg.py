"""Dense matrix functions of traced operands (sparsejac/primitives/dense_linalg.py).

Independent oracles: complex-step derivatives for the analytic matrix functions (solve, inv,
det, expm: ``Im f(A + ih E) / h`` is exact to rounding), hand-derived derivatives where they
are classical (eigenvalues ``v vᵀ``, singular values ``u vᵀ``, det = adjugate at singular
matrices), and the exact structure of the masks (Cholesky, QR, triangular solves) against the
nonzeros of the Jacobian at generic points; the prepared engine is checked at several points
in every mode. The registry-wide checks (finite differences, adjoint identity, fast paths) are
the cases of tests/test_rules.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.special

import sparsejac
from tests.primitives.util import check_exact, rand
from tests.scenarios import fd_jacobian

EXACT_MODES = ["forward", "reverse", "mixed"]


def complex_step(f: Callable[[Any], Any], x: np.ndarray, h: float = 1e-30) -> np.ndarray:
    """``J[:, j] = Im f(x + i h e_j) / h``: exact to rounding for real-analytic f."""
    flat = x.ravel().astype(complex)
    cols = []
    for j in range(flat.size):
        e = flat.copy()
        e[j] += 1j * h
        cols.append(np.imag(np.asarray(f(e.reshape(x.shape)))).ravel() / h)
    return np.stack(cols, axis=1)


def jac(f: Callable[[Any], Any], x: np.ndarray, **kw: Any) -> np.ndarray:
    return sparsejac.jacobian(f, x, **kw).toarray()


def shift(x: Any, c: float = 3.0) -> Any:
    return x + c * np.eye(x.shape[-1])


# -- complex-step oracles ------------------------------------------------------------------

ANALYTIC = [
    pytest.param(lambda x: np.linalg.solve(shift(x), x[:, 0] ** 2), (3, 3), id="solve_both"),
    pytest.param(lambda x: np.linalg.solve(shift(x[None] * [[[1.0]], [[2.0]]]), x[:, :2]),
                 (3, 3), id="solve_batched"),
    pytest.param(lambda x: np.linalg.inv(shift(x)), (3, 3), id="inv"),
    pytest.param(np.linalg.det, (4, 4), id="det"),
    pytest.param(lambda x: np.linalg.det(x.reshape(2, 3, 3)), (2, 9), id="det_batched"),
    pytest.param(lambda x: sla.expm(x - 1.0), (3, 3), id="expm"),
    pytest.param(lambda x: sla.expm(x.reshape(2, 2, 2)), (2, 4), id="expm_batched"),
    pytest.param(lambda x: np.linalg.matrix_power(shift(x), -3), (3, 3), id="matrix_power"),
]


@pytest.mark.parametrize(("f", "shape"), ANALYTIC)
def test_analytic_functions_match_the_complex_step(f: Any, shape: tuple[int, ...]) -> None:
    """solve, inv, det, expm and powers: Jacobian = complex-step Jacobian (and every mode)."""
    x = rand(shape, 3)
    want = complex_step(f, x)
    scale = np.abs(want).max()
    for mode in EXACT_MODES:
        np.testing.assert_allclose(jac(f, x, mode=mode), want, rtol=1e-11, atol=1e-12 * scale,
                                   err_msg=mode)


# -- hand-derived derivatives ----------------------------------------------------------------


def test_det_at_singular_matrices_is_the_adjugate() -> None:
    """d det / dA = adj(A)ᵀ also where A is singular (rank n-1: nonzero; rank n-2: zero)."""
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(jac(np.linalg.det, a).reshape(2, 2), [[4.0, -2.0], [-2.0, 1.0]],
                               atol=1e-14)
    u = np.array([[1.0], [2.0], [0.5]])
    rank1 = u @ u.T
    np.testing.assert_allclose(jac(np.linalg.det, rank1), 0.0, atol=1e-13)
    b = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 1.0], [1.0, 3.0, 4.0]])  # rank 2
    adj = np.array([[np.linalg.det(np.delete(np.delete(b, i, 0), j, 1)) * (-1) ** (i + j)
                     for j in range(3)] for i in range(3)])  # cofactors C = adj(B)ᵀ
    np.testing.assert_allclose(jac(np.linalg.det, b).reshape(3, 3), adj, atol=1e-13)


def test_eigenvalue_and_singular_value_gradients() -> None:
    """∂w_k/∂A = v_k v_kᵀ on the lower triangle (symmetrised), ∂s_k/∂A = u_k v_kᵀ."""
    a = rand((4, 4), 5)
    sym = np.tril(a) + np.tril(a, -1).T
    _, v = np.linalg.eigh(sym)
    got = jac(np.linalg.eigvalsh, a).reshape(4, 4, 4)
    for k in range(4):
        outer = np.outer(v[:, k], v[:, k])
        np.testing.assert_allclose(got[k], np.tril(outer + outer.T - np.diag(np.diag(outer))),
                                   atol=1e-12)
    b = rand((3, 5), 6)
    u, _, vh = np.linalg.svd(b, full_matrices=False)
    got = jac(lambda x: np.linalg.svd(x, compute_uv=False), b).reshape(3, 3, 5)
    for k in range(3):
        np.testing.assert_allclose(got[k], np.outer(u[:, k], vh[k]), atol=1e-12)


def test_logabsdet_gradient_is_the_inverse_transpose() -> None:
    """d log|det A| / dA = A⁻ᵀ, with a negative determinant (the sign has no derivative)."""
    a = shift(rand((3, 3), 7))
    a[[0, 1]] = a[[1, 0]]  # det < 0
    assert np.linalg.det(a) < 0
    got = jac(lambda x: np.linalg.slogdet(x)[1] + np.linalg.slogdet(x)[0], a)
    got = got.reshape(3, 3)
    np.testing.assert_allclose(got, np.linalg.inv(a).T, rtol=1e-12)


# -- structure of the masks at generic points -------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_structure(n: int, upper: bool) -> None:
    """L[i, j] depends on A[p, q] (p ≥ q, the triangle read) iff q ≤ j and (p ≤ j or p = i)."""
    x = rand((n, n), n) + n * np.eye(n)
    check_exact(lambda t: np.linalg.cholesky(t, upper=upper), x)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (5, 3), (3, 5), (4, 1), (1, 4), (2, 3)])
@pytest.mark.parametrize("mode", ["reduced", "r", "complete"])
def test_qr_structure_and_values(shape: tuple[int, int], mode: str) -> None:
    """Q's column i depends on A's columns up to i (not the last when Q is square)."""
    x = rand(shape, sum(shape))
    if mode == "r":
        check_exact(lambda t: np.linalg.qr(t, mode="r"), x)
        return
    m, n = shape
    check_exact(lambda t: np.linalg.qr(t, mode=mode)[1], x)
    if mode == "complete" and m > n:  # the extra columns are not unique: NaN derivative
        got = jac(lambda t: np.linalg.qr(t, mode="complete")[0], x).reshape(m, m, m * n)
        assert np.isnan(got[:, n:]).all()
        assert np.isfinite(got[:, :n]).all()
        return
    check_exact(lambda t: np.linalg.qr(t, mode=mode)[0], x)
    got = jac(lambda t: np.linalg.qr(t, mode=mode)[0], x)
    np.testing.assert_allclose(got, fd_jacobian(lambda t: np.linalg.qr(t, mode=mode)[0], x),
                               atol=1e-7)


@pytest.mark.parametrize("assume_a", ["upper triangular", "lower triangular"])
@pytest.mark.parametrize("transposed", [False, True])
def test_triangular_solves_have_triangular_patterns(assume_a: str, transposed: bool) -> None:
    """scipy's triangular solvers read a triangle; the inverse of a triangle is triangular."""
    x = rand((4, 6), 9)
    pat = check_exact(lambda t: sla.solve(shift(t[:, :4]), t[:, 4:], assume_a=assume_a,
                                          transposed=transposed), x)
    assert pat.sum() < pat.size  # not a dense block


# -- derivatives that do not exist ------------------------------------------------------------


def test_coincident_eigenvalues_give_nan_vector_derivatives() -> None:
    """At a repeated eigenvalue the eigenvectors are not differentiable: NaN, values fine."""
    a = np.diag([1.0, 1.0, 2.0])
    got = jac(lambda x: np.linalg.eigh(x)[1], a)
    assert np.isnan(got).any()
    values = jac(lambda x: np.linalg.eigh(x)[0], a)
    assert np.isfinite(values).all()
    # a Jacobian that does not use the vectors is unaffected
    assert np.isfinite(jac(lambda x: np.linalg.eigh(x)[0] * 2, a)).all()


def test_coincident_eigenvalues_each_take_the_derivative_of_their_mean() -> None:
    """Found from outside: eigenvalues that coincide got the derivative of whichever
    eigenvector basis LAPACK returned. Each now takes the derivative of their mean (the same
    in every basis): 1/3 each for eigvalsh(diag(1 + x)) at 0, as np.min at a three-way tie;
    at Q diag(1, 1, 3) Qᵀ (eigenvalues 1 apart by rounding) against central differences of
    the cluster's mean, one-off and prepared; a distinct eigenvalue keeps its own."""
    third = np.full((3, 3), 1.0 / 3.0)
    np.testing.assert_allclose(
        sparsejac.jacobian(lambda x: np.linalg.eigvalsh(np.diag(1 + x)), np.zeros(3)).toarray(),
        third)
    np.testing.assert_allclose(
        sparsejac.jacobian(lambda x: np.min(1 + x, keepdims=True), np.zeros(3)).toarray(),
        third[:1])
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))
    a = q @ np.diag([1.0, 1.0, 3.0]) @ q.T

    def f(x):
        return np.linalg.eigvalsh(a + np.diag(x))

    h = 1e-6
    fd = np.array([(f(h * e) - f(-h * e)) / (2 * h) for e in np.eye(3)]).T
    want = np.vstack([fd[:2].mean(axis=0), fd[:2].mean(axis=0), fd[2]])
    for got in (sparsejac.jacobian(f, np.zeros(3)),
                sparsejac.SparseJacobian(f, np.full(3, 0.1))(np.zeros(3))):
        np.testing.assert_allclose(got.toarray(), want, atol=1e-7)
    _, v = np.linalg.eigh(a + np.diag([0.0, 0.5, 1.0]))  # distinct: v_k v_kᵀ's diagonal
    np.testing.assert_allclose(sparsejac.jacobian(f, np.array([0.0, 0.5, 1.0])).toarray(),
                               (v * v).T, atol=1e-12)


def test_coincident_singular_values_each_take_the_derivative_of_their_mean() -> None:
    """Coincident positive singular values (a repeated largest one: norm(A, 2) there is a
    max of two smooth branches) each take the derivative of their mean, against central
    differences of that mean; a distinct one keeps its own."""
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    r, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    a = q @ np.diag([2.0, 2.0, 1.0]) @ r.T

    def f(x):
        return np.linalg.svd(a + x.reshape(3, 3), compute_uv=False)

    h = 1e-6
    fd = np.array([(f(h * e) - f(-h * e)) / (2 * h) for e in np.eye(9)]).T
    got = sparsejac.jacobian(f, np.zeros(9)).toarray()
    np.testing.assert_allclose(got, np.vstack([fd[:2].mean(axis=0)] * 2 + [fd[2]]),
                               atol=1e-8)
    top = sparsejac.jacobian(lambda x: np.atleast_1d(np.linalg.norm(a + x.reshape(3, 3), 2)),
                             np.zeros(9)).toarray()
    np.testing.assert_allclose(top[0], fd[:2].mean(axis=0), atol=1e-8)


def test_cond_of_a_singular_matrix_names_cond() -> None:
    """Found from outside: cond(A, 1) at a singular A, inf for numpy, raised the bare
    LinAlgError of the inverse it is computed with; the refusal names cond now."""
    def f(x):
        return np.atleast_1d(np.linalg.cond(x.reshape(2, 2), 1))

    with pytest.raises(sparsejac.errors.UnsupportedPrimitiveError,
                       match=r"numpy\.linalg\.cond .*singular"):
        sparsejac.jacobian(f, np.array([1.0, 2.0, 2.0, 4.0]))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), fd_jacobian(f, x),
                               rtol=1e-6)


def test_svd_full_matrices_extra_columns_are_nan() -> None:
    """The columns of a full U beyond the n-th are not unique: NaN; the others are exact."""
    x = rand((4, 2), 11)
    got = jac(lambda t: np.linalg.svd(t)[0], x).reshape(4, 4, 8)
    assert np.isnan(got[:, 2:]).all()
    thin = jac(lambda t: np.linalg.svd(t, full_matrices=False)[0], x).reshape(4, 2, 8)
    np.testing.assert_array_equal(got[:, :2], thin)


def test_refused_forms_say_why() -> None:
    """svd(hermitian=True) and qr(mode='raw') are refused by name; shapes are checked."""
    x = rand((3, 3), 12)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="hermitian=True"):
        jac(lambda t: np.linalg.svd(t, hermitian=True)[1], x)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="mode='raw'"):
        jac(lambda t: np.linalg.qr(t, mode="raw")[0], x)
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        jac(lambda t: np.linalg.inv(t[:2]), x)


def test_lstsq_rank_deficient_needs_local_mode() -> None:
    """A rank-deficient matrix at the trace point changes lstsq's outputs: local mode only."""
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    b = np.array([1.0, 0.0, 2.0])

    def f(x: Any) -> Any:
        sol, res, _, s = np.linalg.lstsq(x, b)
        assert res.shape == (0,)
        return sol + s[0]

    with pytest.raises(sparsejac.ConcretizationError, match="rank"):
        sparsejac.jacobian_sparsity(f, a)
    assert sparsejac.jacobian_sparsity(f, a, local=True).shape == (2, 6)


def test_lstsq_outputs_match_numpy() -> None:
    """Solution, residuals, rank and singular values are numpy's."""
    from sparsejac.tracing import trace

    a = rand((5, 3), 13)
    b = rand((5, 2), 14)
    prog = trace(lambda x: np.concatenate([np.ravel(v) for v in np.linalg.lstsq(x, b)]), a)
    want = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(prog.out.value, np.concatenate([np.ravel(v) for v in want]),
                               rtol=1e-14)


# -- prepared replays in every mode ----------------------------------------------------------


def _mixed_linalg(x: Any) -> Any:
    a = shift(x[:9].reshape(3, 3))
    l_ = np.linalg.cholesky(a @ a.T)
    w = np.linalg.eigvalsh(a + a.T)
    q, r = np.linalg.qr(a)
    return np.concatenate([np.linalg.solve(a, x[9:]), np.ravel(l_), w, np.ravel(q @ r.T),
                           [np.linalg.det(a), np.linalg.norm(a, 2)], np.ravel(np.linalg.pinv(
                               x[:6].reshape(2, 3)))])


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_prepared_replays_at_several_points(mode: str) -> None:
    """One preparation, several points: equal to central differences (and the eager engine)."""
    rng = np.random.default_rng(15)
    x0 = rng.uniform(0.5, 1.5, 12)
    prepared = sparsejac.SparseJacobian(_mixed_linalg, x0, mode=mode)
    for _ in range(3):
        x = rng.uniform(0.5, 1.5, 12)
        got = prepared(x).toarray()
        np.testing.assert_allclose(got, jac(_mixed_linalg, x), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got, fd_jacobian(_mixed_linalg, x), atol=2e-6)
    assert prepared.stats()["preparations"] == 1


def test_prepared_lstsq_and_transposed_solve_with_both_operands_traced():
    """The prepared engine asks whether an operand's local Jacobian is one matrix for every
    column after the trace-point values are released: it must not read them (lstsq raised
    numpy's LinAlgError, solve(transposed=True) an AxisError)."""
    import scipy.linalg as sla

    import sparsejac
    from tests.test_rules import fd4_jacobian

    x = np.random.default_rng(0).standard_normal(16)
    cases = [
        (lambda z: np.linalg.lstsq(z[:12].reshape(4, 3), z[12:], rcond=None)[0], x),
        (lambda z: sla.solve(z[:9].reshape(3, 3) + 4 * np.eye(3), z[9:12], transposed=True),
         x[:12]),
    ]
    for fn, x0 in cases:
        for mode in ("forward", "reverse", "mixed"):
            jac = sparsejac.SparseJacobian(fn, x0, mode=mode)
            np.testing.assert_allclose(jac(x0 + 0.1).toarray(), fd4_jacobian(fn, x0 + 0.1),
                                       rtol=1e-6, atol=1e-8)


def _simple_eigenvector(z: np.ndarray) -> np.ndarray:
    """The vector of the simple eigenvalue 2 next to the double 1, its sign fixed (an oracle
    by differences must not see it flip)."""
    v = np.linalg.eigh(np.diag([1.0, 1.0, 2.0]) + z.reshape(3, 3))[1][:, 2]
    return v * np.sign(v[2])


def test_non_unique_columns_keep_their_nan_out_of_the_unique_ones_in_every_mode():
    """A complete QR's extra column, a full SVD's, and the vectors of coincident eigenvalues
    have no derivative (NaN); the unique columns do, and reverse and mixed mode must give them
    as forward mode does (a NaN local derivative times a zero cotangent contributed NaN)."""
    import sparsejac
    from tests.test_rules import fd4_jacobian

    x = np.random.default_rng(0).standard_normal(12)
    cases = [
        (lambda z: np.linalg.qr(z.reshape(4, 3), mode="complete")[0][:, :3].ravel(), x),
        (lambda z: np.linalg.svd(z.reshape(4, 3), full_matrices=True)[0][:, :3].ravel(), x),
        (lambda z: np.linalg.qr(z.reshape(4, 3), mode="complete")[0][:, 0], x),
        (_simple_eigenvector, np.zeros(9)),
    ]
    for fn, x0 in cases:
        want = fd4_jacobian(fn, x0)
        for mode in ("forward", "reverse", "mixed"):
            for got in (sparsejac.jacobian(fn, x0, mode=mode),
                        sparsejac.SparseJacobian(fn, x0, mode=mode)(x0)):
                np.testing.assert_allclose(got.toarray(), want, rtol=1e-6, atol=1e-8)
    full = sparsejac.jacobian(lambda z: np.linalg.qr(z.reshape(4, 3), mode="complete")[0]
                              .ravel(), x, mode="reverse").toarray()
    assert np.isnan(full).sum() == 4 * 12  # the fourth column's 4 entries, each row all NaN


@pytest.mark.parametrize(("name", "f"), [
    ("det of a nested list", lambda u: np.linalg.det([[u[0], u[1]], [u[2], 1.0]])),
    ("det of np.array([...])", lambda u: np.linalg.det(np.array([[u[0], u[1]], [u[2], 1.0]]))),
    ("inv of a list", lambda u: np.linalg.inv([[u[0], 0.5], [u[1], u[2]]]).ravel()),
    ("solve of lists", lambda u: np.linalg.solve([[u[0], 1.0], [0.0, u[2]]], [u[1], 1.0])),
    ("eigvalsh of np.array", lambda u: np.linalg.eigvalsh(np.array([[u[0], u[1]],
                                                                      [u[1], u[2]]]))),
    ("norm of a list", lambda u: np.linalg.norm([u[0], u[1]])),
    ("logsumexp of a list", lambda u: scipy.special.logsumexp([u[0], u[1], u[2]])),
])
def test_lists_of_traced_values_reach_the_rules(name: str, f: Any) -> None:
    """numpy does not dispatch a list of Tracers, or np.array([...]) of traced scalars (an
    object array), to the tracer: np.linalg's code then failed on dtype('O') (a foreign
    UFuncTypeError). Oracle: central differences of numpy's values."""
    x = np.array([2.0, 0.5, 3.0])
    want = np.array([(np.asarray(f(x + 1e-6 * e)) - np.asarray(f(x - 1e-6 * e))) / 2e-6
                     for e in np.eye(3)]).T
    got = sparsejac.jacobian(f, x).toarray()
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-7, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_det_hessian_at_singular_matrices(n: int) -> None:
    """det is a polynomial: its Hessian exists everywhere. The second-order rule used
    det(A) inv(A), which raised numpy's LinAlgError at a singular matrix (the zero matrix, a
    common start). Oracle: the Hessian of the Leibniz formula, by hand: d2 det / da_ij da_kl
    is the signed (n-2)-minor without rows i, k and columns j, l."""
    def f(u: Any) -> Any:
        return np.linalg.det(u.reshape(n, n))

    for a in (np.zeros((n, n)), np.ones((n, n)), np.arange(float(n * n)).reshape(n, n)):
        want = np.zeros((n * n, n * n))
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    for m in range(n):
                        if i == k or j == m:
                            continue
                        rows = [r for r in range(n) if r not in (i, k)]
                        cols = [c for c in range(n) if c not in (j, m)]
                        minor = np.linalg.det(a[np.ix_(rows, cols)]) if rows else 1.0
                        # sign of the permutation placing (i, j), (k, m) first
                        sign = (-1) ** (i + j + k + m) * (1 if (i < k) == (j < m) else -1)
                        want[i * n + j, k * n + m] = sign * minor
        got = sparsejac.hessian(f, a.ravel()).toarray()
        np.testing.assert_allclose(got, want, atol=1e-12)
        np.testing.assert_allclose(sparsejac.SparseHessian(f, np.eye(n).ravel() * 2)(
            a.ravel()).toarray(), want, atol=1e-12)
