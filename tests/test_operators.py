"""sparsejac/operators.py: matrix-free J(x) products against hand-derived and dense FD Jacobians."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, gmres, lsqr

import sparsejac


def chain(x):
    """Nonlinear chain with a dense row: J hand-derived in ``chain_jac``."""
    return np.concatenate([x[1:] ** 2 - np.sin(x[:-1]), [np.sum(x ** 3)]])


def chain_jac(x):
    n = x.size
    J = np.zeros((n, n))
    i = np.arange(n - 1)
    J[i, i + 1] = 2 * x[1:]
    J[i, i] = -np.cos(x[:-1])
    J[n - 1] = 3 * x ** 2
    return J


def with_solve(x):
    """An opaque-ish node (a dense solve) inside: checked against central differences."""
    a = np.eye(3) * 4 + np.outer(x[:3], x[3:6])
    return np.concatenate([np.linalg.solve(a, x[6:9]), np.exp(x[:5]) * x[1:6]])


def central_fd(f, x, h=1e-6):
    cols = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.array(cols).T


@pytest.mark.parametrize("mode", ["forward", "reverse", "mixed"])
def test_products_equal_the_hand_derived_jacobian(mode):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 12)
    jac = sparsejac.SparseJacobian(chain, np.ones(12), mode=mode, engine="chain")
    A = jac.linear_operator(x)
    assert isinstance(A, LinearOperator)
    assert A.shape == (12, 12)
    assert A.matrix_free
    J = chain_jac(x)
    v, w = rng.normal(size=12), rng.normal(size=12)
    V, W = rng.normal(size=(12, 3)), rng.normal(size=(12, 4))
    np.testing.assert_allclose(A.matvec(v), J @ v, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A @ v, J @ v, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.rmatvec(w), J.T @ w, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.T @ w, J.T @ w, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.H @ w, J.T @ w, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.matmat(V), J @ V, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A @ V, J @ V, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.rmatmat(W), J.T @ W, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.value, chain(x), rtol=1e-15)
    # a column vector keeps its shape, as scipy's operators do
    assert (A @ v.reshape(-1, 1)).shape == (12, 1)


def test_products_through_a_dense_solve_match_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 0.9, 9)
    A = sparsejac.SparseJacobian(with_solve, np.full(9, 0.5)).linear_operator(x)
    J = central_fd(with_solve, x)
    np.testing.assert_allclose(A @ np.eye(9), J, atol=1e-8)
    np.testing.assert_allclose((A.T @ np.eye(A.shape[0])).T, J, atol=1e-8)


def test_no_trace_and_no_call_of_f_per_product():
    calls = []

    def f(x):
        calls.append(1)
        return np.roll(x, 1) * x - np.cos(x)

    jac = sparsejac.SparseJacobian(f, np.ones(20), verify=False)
    before = len(calls)
    A = jac.linear_operator(np.linspace(0, 1, 20))
    for _ in range(5):
        A @ np.ones(20)
        A.T @ np.ones(20)
    assert len(calls) == before  # products replay nothing through f


def test_params_are_used():
    jac = sparsejac.SparseJacobian(lambda x, t: np.sin(t) * x ** 2, np.ones(3), params=(0.0,))
    A = jac.linear_operator(np.arange(3.0), params=(np.pi / 2,))
    np.testing.assert_allclose(A @ np.ones(3), 2 * np.arange(3.0), atol=1e-15)


@pytest.mark.parametrize("engine", ["tape", "chain"])
def test_both_engines_give_the_same_products(engine):
    """A compiled tape (small programs) is swept by a chain program built from its program."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, 12)
    A = sparsejac.SparseJacobian(chain, np.ones(12), engine=engine).linear_operator(x)
    assert A.matrix_free
    assert not A.approximate
    assert "approximate" not in repr(A)
    V = rng.normal(size=(12, 2))
    np.testing.assert_allclose(A @ V, chain_jac(x) @ V, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.T @ V, chain_jac(x).T @ V, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A.value, chain(x), rtol=1e-15)


def test_fd_mode_falls_back_to_the_assembled_matrix():
    x = np.linspace(-1, 1, 10)
    A = sparsejac.SparseJacobian(chain, np.ones(10), mode="fd",
                                 sparsity=chain_jac(np.ones(10)) != 0).linear_operator(x)
    assert not A.matrix_free
    assert A.approximate
    assert "approximate (finite differences)" in repr(A)
    np.testing.assert_allclose(A @ np.ones(10), chain_jac(x) @ np.ones(10), rtol=1e-6)
    np.testing.assert_allclose(A.T @ np.ones(10), chain_jac(x).T @ np.ones(10), rtol=1e-6)
    np.testing.assert_allclose(A.value, chain(x))


def test_a_changed_constant_is_seen_by_verify():
    k = [1.0]
    jac = sparsejac.SparseJacobian(lambda x: k[0] * x ** 2, np.ones(3))
    k[0] = 3.0
    A = jac.linear_operator(np.ones(3))
    np.testing.assert_allclose(A @ np.ones(3), np.full(3, 6.0))


def test_gmres_and_lsqr_solve_with_the_operator():
    n = 200

    def f(x):
        return 4 * x - np.roll(x, 1) - np.roll(x, -1) + x ** 3

    x = np.linspace(0, 1, n)
    jac = sparsejac.SparseJacobian(f, np.ones(n))
    A = jac.linear_operator(x)
    J = sp.csr_array(jac(x))
    b = np.sin(np.arange(n))
    dx, info = gmres(A, b, rtol=1e-12, atol=0.0)
    assert info == 0
    np.testing.assert_allclose(J @ dx, b, atol=1e-9)
    np.testing.assert_allclose(dx, sp.linalg.spsolve(sp.csc_array(J), b), atol=1e-9)
    sol = lsqr(A, b, atol=1e-14, btol=1e-14)[0]   # uses rmatvec
    np.testing.assert_allclose(sol, dx, atol=1e-8)


def test_newton_krylov_with_the_operator_converges_quadratically():
    def f(x):
        return 4 * x - np.roll(x, 1) - np.roll(x, -1) + x ** 3 - 1.0

    jac = sparsejac.SparseJacobian(f, np.zeros(100))
    x = np.zeros(100)
    norms = []
    for _ in range(6):
        A = jac.linear_operator(x)
        norms.append(np.linalg.norm(A.value))
        dx, _ = gmres(A, -A.value, rtol=1e-13, atol=0.0)
        x = x + dx
    assert norms[-1] < 1e-10 * norms[0]
    np.testing.assert_allclose(f(x), 0.0, atol=1e-10)


def _bratu_1d(x):
    return 2 * x - np.roll(x, 1) - np.roll(x, -1) + 0.1 * np.exp(x) - 0.05


@pytest.mark.parametrize("solver", ["gmres", "lgmres", "bicgstab"])
def test_krylov_method_inside_newton_krylov_matches_scipys_own_solution(solver):
    from scipy.optimize import newton_krylov

    x0 = np.zeros(80)
    km = sparsejac.KrylovMethod(sparsejac.SparseJacobian(_bratu_1d, x0), solver=solver)
    ours = newton_krylov(_bratu_1d, x0, f_tol=1e-11, **km.jac_options)
    ref = newton_krylov(_bratu_1d, x0, f_tol=1e-11)  # scipy's finite-difference products
    assert km.n_products > 0
    assert km.operator is not None
    np.testing.assert_allclose(_bratu_1d(ours), 0.0, atol=1e-11)
    np.testing.assert_allclose(ours, ref, atol=1e-8)


def test_krylov_method_in_root_krylov():
    from scipy.optimize import root

    x0 = np.zeros(60)
    km = sparsejac.KrylovMethod(sparsejac.SparseJacobian(_bratu_1d, x0))
    sol = root(_bratu_1d, x0, method="krylov",
               options={"jac_options": km.jac_options, "fatol": 1e-11})
    assert sol.success
    np.testing.assert_allclose(_bratu_1d(sol.x), 0.0, atol=1e-11)
    assert km.n_products > 0


def test_krylov_method_arguments_are_checked():
    jac = sparsejac.SparseJacobian(_bratu_1d, np.zeros(5))
    with pytest.raises(ValueError, match="`solver` must be"):
        sparsejac.KrylovMethod(jac, solver="cg-ish")
    with pytest.raises(TypeError, match="`jacobian` must be a SparseJacobian"):
        sparsejac.KrylovMethod(np.eye(5))


def test_krylov_method_refuses_a_solver_with_other_args():
    """root(..., args=...) with a KrylovMethod prepared for other arguments: refused at the
    solver's first step (it steered every Newton step with the wrong Jacobian: 10,100
    iterations). A point where the arguments cancel (a constant x0) does not hide it."""
    from scipy.optimize import root

    def F(x, c):
        return c * (np.roll(x, 1) - 2 * x + np.roll(x, -1)) + x ** 3 - 1.0

    x0 = np.full(50, 0.5)
    jac = sparsejac.SparseJacobian(F, x0, args=(1.0,))
    ok = root(F, x0, args=(1.0,), method="krylov",
              options={"jac_options": sparsejac.KrylovMethod(jac).jac_options})
    assert ok.success
    with pytest.raises(ValueError, match="other arguments than the solver passes"):
        root(F, x0, args=(2.0,), method="krylov",
             options={"jac_options": sparsejac.KrylovMethod(jac).jac_options})


def test_operators_and_krylov_method_pickle(tmp_path, monkeypatch):
    """A JacobianOperator pickles as the linear_operator call that made it; a KrylovMethod
    as its Jacobian and options (both failed: a local function, a module)."""
    import pickle

    (tmp_path / "kmod.py").write_text(
        "import numpy as np\n"
        "def F(x):\n    return np.roll(x, 1) - 2 * x + np.roll(x, -1) + x ** 3 - 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import kmod

    jac = sparsejac.SparseJacobian(kmod.F, np.full(20, 0.5))
    op = jac.linear_operator(np.linspace(0.0, 1.0, 20))
    again = pickle.loads(pickle.dumps(op))
    v = np.arange(20.0)
    np.testing.assert_array_equal(again @ v, op @ v)
    np.testing.assert_array_equal(again.T @ v, op.T @ v)
    km = pickle.loads(pickle.dumps(sparsejac.KrylovMethod(jac)))
    from scipy.optimize import root

    assert root(kmod.F, np.full(20, 0.5), method="krylov",
                options={"jac_options": km.jac_options}).success


def _mean_coupled(p):
    """scipy's root(method="krylov") example in small: a 2-D Laplacian plus a rank-one term
    (every residual reads np.cosh(p).mean()): J is dense, its program is not."""
    n = p.shape[0]
    h = 1.0 / (n - 1)
    d2x, d2y = np.zeros_like(p), np.zeros_like(p)
    d2x[1:-1] = (p[2:] - 2 * p[1:-1] + p[:-2]) / h / h
    d2x[0] = (p[1] - 2 * p[0]) / h / h
    d2x[-1] = (p[-2] - 2 * p[-1]) / h / h
    d2y[:, 1:-1] = (p[:, 2:] - 2 * p[:, 1:-1] + p[:, :-2]) / h / h
    d2y[:, 0] = (p[:, 1] - 2 * p[:, 0]) / h / h
    d2y[:, -1] = (1.0 - 2 * p[:, -1] + p[:, -2]) / h / h
    return d2x + d2y + 5 * np.cosh(p).mean() ** 2


def test_products_of_a_dense_jacobian_walk_the_program(monkeypatch):
    """J of a rank-one term has n² entries: products multiplied by them (18 ms at n = 5,625,
    after 12.7 s building their structure). Above DENSE_PRODUCTS nonzeros per row and column
    the operator walks the program node by node; its products equal J's."""
    import sparsejac.operators as ops

    monkeypatch.setattr(ops, "DENSE_PRODUCTS", 4)
    x0 = np.zeros((12, 12))
    jac = sparsejac.SparseJacobian(_mean_coupled, x0)
    monkeypatch.setattr(ops, "DENSE_PRODUCTS_MIN", 0)
    rng = np.random.default_rng(1)
    x = rng.uniform(-0.5, 0.5, x0.shape)
    A = jac.linear_operator(x)
    assert isinstance(A._lin, sparsejac.ad.InterpretedLinearization)
    J = jac(x).toarray()
    V, W = rng.normal(size=(144, 3)), rng.normal(size=(144, 2))
    np.testing.assert_allclose(A @ V, J @ V, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(A.T @ W, J.T @ W, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(A.value, _mean_coupled(x).ravel())


def test_walked_products_keep_zero_times_inf_zero_and_reuse_partials():
    """The walk's products are plain products with partials kept from the first one; where a
    zero derivative meets an infinite one (x * sqrt(x) at 0, a where whose untaken branch is
    NaN) the result is not finite and is computed again with mul0's convention: products
    equal those of the prepared Jacobian (mul0 throughout), at a point with such zeros and
    one without, in any order, and the partials are computed once."""
    from sparsejac.ad import InterpretedLinearization
    from sparsejac.tracing import trace

    def f(x):
        safe = np.where(x > 0, np.sqrt(np.abs(x)), 0.0)
        return x * np.sqrt(np.abs(x)) + safe * x[::-1] + np.exp(x) * np.mean(x)

    prog = trace(f, np.ones(6))
    jac = sparsejac.SparseJacobian(f, np.ones(6))
    rng = np.random.default_rng(4)
    for x in (np.array([0.0, -1.0, 2.0, 0.0, 3.0, -0.5]), rng.uniform(0.5, 2.0, 6)):
        lin = InterpretedLinearization(prog, x)
        J = jac(x).toarray()
        assert np.isfinite(J).all()
        for V in (np.eye(6), rng.normal(size=(6, 2)), np.eye(6)[:, [0]]):
            np.testing.assert_allclose(lin.jvp(V), J @ V, rtol=1e-13, atol=1e-13)
        kept = dict(lin._partials)
        assert kept
        lin.jvp(np.eye(6))
        assert all(lin._partials[k] is v for k, v in kept.items())  # not computed again


def test_krylov_method_of_the_function_refuses_a_special_case_at_its_tie():
    """Found from outside: F(x) = where(x == 0, 1, expm1(x) / x) + ... is smooth, but at 0
    the trace takes the special case, whose derivative (0) is not F's (1/2). Every path
    refuses that tie; KrylovMethod(F) answered 0 at newton_krylov's usual start, x0 = 0."""
    def F(x):
        return np.where(x == 0, 1.0, np.expm1(x) / x) + 0.1 * np.roll(x, 1) - 2.0

    km = sparsejac.KrylovMethod(F, shape=(6,))
    with np.errstate(invalid="ignore"), pytest.raises(sparsejac.errors.ConcretizationError):
        km.update(np.zeros(6))  # (F's own 0 / 0 in the branch np.where discards)
    km.update(np.full(6, 0.5))  # away from the tie: F's derivative
    want = sparsejac.jacobian(F, np.full(6, 0.5)).toarray()
    np.testing.assert_allclose(km.operator @ np.eye(6), want, rtol=1e-13)


@pytest.mark.parametrize("solver", ["lgmres", "gmres"])
def test_krylov_method_of_the_function_itself(solver):
    """KrylovMethod(F, shape=...) traces F at each Newton point (no pattern, no preparation):
    scipy's root(method="krylov") example solves to scipy's own answer."""
    from scipy.optimize import root

    x0 = np.zeros((15, 15))
    km = sparsejac.KrylovMethod(_mean_coupled, solver, shape=x0.shape)
    sol = root(_mean_coupled, x0, method="krylov",
               options={"jac_options": km.jac_options, "fatol": 1e-9})
    ref = root(_mean_coupled, x0, method="krylov", options={"fatol": 1e-9})
    assert sol.success
    assert km.n_products > 0
    np.testing.assert_allclose(sol.x, ref.x, atol=1e-6)
    with pytest.raises(ValueError, match="`shape` \\(4, 4\\) does not hold"):
        root(_mean_coupled, x0, method="krylov",
             options={"jac_options": sparsejac.KrylovMethod(_mean_coupled,
                                                            shape=(4, 4)).jac_options})
    with pytest.raises(ValueError, match="`shape` and `args` are for KrylovMethod\\(F"):
        sparsejac.KrylovMethod(sparsejac.SparseJacobian(_bratu_1d, np.zeros(5)), shape=(5,))


def test_krylov_method_of_the_function_takes_the_solvers_args():
    from scipy.optimize import root

    def F(x, a):
        return 4 * x - np.roll(x, 1) - np.roll(x, -1) + x**3 - a

    km = sparsejac.KrylovMethod(F, args=(2.0,))
    sol = root(F, np.zeros(30), args=(2.0,), method="krylov",
               options={"jac_options": km.jac_options, "fatol": 1e-10})
    assert sol.success
    np.testing.assert_allclose(F(sol.x, 2.0), 0.0, atol=1e-10)
    with pytest.raises(ValueError, match="other arguments than the solver passes"):
        root(F, np.zeros(30), args=(3.0,), method="krylov",
             options={"jac_options": km.jac_options})


def test_fd_bounds_as_a_two_row_array():
    x0 = np.array([0.5, 0.5])
    b = np.array([[0.0, 0.0], [1.0, 1.0]])  # least_squares takes a (2, n) array too
    jac = sparsejac.SparseJacobian(lambda x: x**2, x0, mode="fd", sparsity=np.eye(2), bounds=b)
    np.testing.assert_allclose(jac(np.array([1.0, 0.0])).toarray(), np.diag([2.0, 0.0]),
                               atol=1e-6)


def test_a_krylov_method_serves_problems_of_another_size() -> None:
    """Found from outside: LGMRES's outer vectors were kept for the KrylovMethod's whole
    life, so a second solve of another size failed with scipy's "dimension mismatch"."""
    from scipy.optimize import newton_krylov

    def F(x: Any) -> Any:
        return 4 * x - np.roll(x, 1) - np.roll(x, -1) + x ** 3 - 1.0

    km = sparsejac.KrylovMethod(F)
    for n in (50, 80, 50):
        u = newton_krylov(F, np.zeros(n), f_tol=1e-10, **km.jac_options)
        assert np.abs(F(u)).max() < 1e-9
