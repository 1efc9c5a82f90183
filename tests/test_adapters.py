"""The solver adapters: drop-in ``jac=`` for ``solve_ivp``, ``least_squares`` and ``root``.

Each solver run with a sparsejac Jacobian reaches the same answer as scipy's own
finite-difference run (``jac_sparsity=`` or no ``jac``) to the solver's tolerance, and the
Jacobians handed to the solver are exact (checked against hand-derived ones, ``t`` included).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares, root

import sparsejac

EXACT_TOL = 1e-12

# ---------------------------------------------------------------------------------------------
# stiff ODEs
# ---------------------------------------------------------------------------------------------


def robertson(t, y):
    """Robertson's chemical kinetics (stiff, three species)."""
    k1, k2, k3 = 0.04, 3e7, 1e4
    a, b, c = y[0], y[1], y[2]
    return np.stack([-k1 * a + k3 * b * c, k1 * a - k3 * b * c - k2 * b * b, k2 * b * b])


def robertson_jac(t, y):
    k1, k2, k3 = 0.04, 3e7, 1e4
    _, b, c = y
    return np.array([[-k1, k3 * c, k3 * b],
                     [k1, -k3 * c - 2 * k2 * b, -k3 * b],
                     [0.0, 2 * k2 * b, 0.0]])


def reaction_diffusion(t, u, d, k):
    """1-D periodic diffusion with logistic reaction: u' = d Δu + k u (1 - u), stiff for big d."""
    return d * (np.roll(u, 1) - 2 * u + np.roll(u, -1)) + k * u * (1 - u)


def reaction_diffusion_jac(t, u, d, k):
    n = u.size
    lap = sp.diags_array([1.0, -2.0, 1.0], offsets=[-1, 0, 1], shape=(n, n)).toarray()
    lap[0, -1] = lap[-1, 0] = 1.0
    return d * lap + np.diag(k * (1 - 2 * u))


_N_RD = 40
_RD_ARGS = (400.0, 5.0)  # d = 400 (stiffness ~ 4 d), k = 5
_RD_Y0 = 0.5 + 0.4 * np.sin(2 * np.pi * np.arange(_N_RD) / _N_RD)

_PROBLEMS = {
    "robertson": (robertson, robertson_jac, (0.0, 40.0), np.array([1.0, 0.0, 0.0]), (),
                  {"rtol": 1e-6, "atol": 1e-10}),
    "reaction_diffusion": (reaction_diffusion, reaction_diffusion_jac, (0.0, 2.0), _RD_Y0,
                           _RD_ARGS, {"rtol": 1e-6, "atol": 1e-9}),
}


@pytest.mark.parametrize("method", ["BDF", "Radau"])
@pytest.mark.parametrize("name", list(_PROBLEMS))
def test_solve_ivp_matches_jac_sparsity_run(name, method):
    """solve_ivp with jac=ode_jacobian(...) matches the jac_sparsity= run to solver tolerance."""
    fun, _, t_span, y0, args, tol = _PROBLEMS[name]
    jac = sparsejac.ode_jacobian(fun, t_span[0], y0, args=args, format="csr")
    t_eval = np.linspace(*t_span, 9)
    ours = solve_ivp(fun, t_span, y0, method=method, jac=jac, args=args, t_eval=t_eval, **tol)
    theirs = solve_ivp(fun, t_span, y0, method=method, jac_sparsity=jac.sparsity, args=args,
                       t_eval=t_eval, **tol)
    assert ours.success
    assert theirs.success
    assert ours.njev >= 1
    # both runs are within ~rtol |y| + atol of the true solution; allow a few of those
    bound = 20 * (tol["rtol"] * np.abs(theirs.y) + tol["atol"])
    assert np.all(np.abs(ours.y - theirs.y) <= bound)
    assert jac.prepared.stats()["preparations"] == 1


@pytest.mark.parametrize("name", list(_PROBLEMS))
def test_ode_jacobian_is_exact_along_the_run(name, rng):
    """The Jacobian handed to the solver is the hand-derived one at the solver's points."""
    fun, jac_of, t_span, y0, args, _ = _PROBLEMS[name]
    jac = sparsejac.ode_jacobian(fun, t_span[0], y0, args=args, format="csr")
    np.testing.assert_array_equal(jac.sparsity.toarray(), jac_of(0.0, y0 + 1.0, *args) != 0)
    for t in (0.0, 0.7, 13.0):
        y = y0 + rng.uniform(0.1, 0.2, y0.size)
        expected = jac_of(t, y, *args)
        got = jac(t, y)
        assert isinstance(got, sp.csr_array)
        np.testing.assert_allclose(got.toarray(), expected, rtol=EXACT_TOL,
                                   atol=EXACT_TOL * np.abs(expected).max())


def forced(t, y, omega):
    """A right-hand side whose Jacobian depends on t through numpy expressions only."""
    switch = np.where(t >= 1.0, 2.0, 0.5)
    return -(1.0 + np.sin(omega * t)) * y**3 + np.cos(t) * np.roll(y, 1) * y + switch * y


def forced_jac(t, y, omega):
    n = y.size
    jac = np.diag(-3 * (1.0 + np.sin(omega * t)) * y**2 + np.cos(t) * np.roll(y, 1)
                  + (2.0 if t >= 1.0 else 0.5))
    jac[np.arange(n), (np.arange(n) - 1) % n] += np.cos(t) * y
    return jac


@pytest.mark.parametrize("t", [0.0, 0.3, 1.0, 2.5, -4.0])
def test_time_dependent_rhs_gets_the_jacobian_at_each_t(t, rng):
    """t is traced as a parameter, not baked in at t0: the Jacobian follows t."""
    y0 = rng.uniform(0.5, 1.5, 6)
    jac = sparsejac.ode_jacobian(forced, 0.0, y0, args=(3.0,), format="csr")
    y = rng.uniform(0.5, 1.5, 6)
    expected = forced_jac(t, y, 3.0)
    np.testing.assert_allclose(jac(t, y).toarray(), expected, rtol=EXACT_TOL,
                               atol=EXACT_TOL * np.abs(expected).max())
    assert jac.prepared.stats()["preparations"] == 1


def test_ode_jacobian_takes_solve_ivp_args(rng):
    """solve_ivp passes ``args`` to jac too: the same objects reuse the preparation, others not."""
    y0 = rng.uniform(0.5, 1.5, 6)
    omega = 3.0
    jac = sparsejac.ode_jacobian(forced, 0.0, y0, args=(omega,), format="csr")
    y = rng.uniform(0.5, 1.5, 6)
    np.testing.assert_allclose(jac(0.4, y, omega).toarray(), forced_jac(0.4, y, omega),
                               rtol=EXACT_TOL, atol=1e-11)
    assert jac.prepared.stats()["preparations"] == 1
    np.testing.assert_allclose(jac(0.4, y, 7.0).toarray(), forced_jac(0.4, y, 7.0),
                               rtol=EXACT_TOL, atol=1e-11)
    assert jac.prepared.stats()["preparations"] == 2


def test_time_dependent_rhs_solves_like_jac_sparsity():
    """A t-dependent RHS integrated with BDF agrees with the jac_sparsity= run."""
    y0 = np.linspace(0.5, 1.0, 12)
    jac = sparsejac.ode_jacobian(forced, 0.0, y0, args=(3.0,), format="csr")
    kw = {"method": "BDF", "args": (3.0,), "rtol": 1e-7, "atol": 1e-10, "t_eval": [0.5, 1.5, 3]}
    ours = solve_ivp(forced, (0.0, 3.0), y0, jac=jac, **kw)
    theirs = solve_ivp(forced, (0.0, 3.0), y0, jac_sparsity=jac.sparsity, **kw)
    assert ours.success
    assert theirs.success
    np.testing.assert_allclose(ours.y, theirs.y, rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# least squares and root
# ---------------------------------------------------------------------------------------------


def broyden_residuals(x, b, *, weight):
    """Broyden's tridiagonal residuals with a shift b, weighted: zero at the solution."""
    r = (3 - 2 * x) * x + 1 - b
    r[1:] -= x[:-1]
    r[:-1] -= 2 * x[1:]
    return weight * r


def broyden_jac(x, b, weight):
    n = x.size
    jac = np.diag(3 - 4 * x) - np.eye(n, k=-1) - 2 * np.eye(n, k=1)
    return weight * jac


@pytest.mark.parametrize("method", ["trf", "dogbox"])
def test_least_squares_matches_its_own_finite_differences(method):
    """least_squares(jac=least_squares_jacobian(...)) converges to the same fit as 2-point FD."""
    n = 30
    x0 = -np.ones(n)
    b = np.linspace(-0.2, 0.2, n)
    kwargs = {"weight": 3.0}
    jac = sparsejac.least_squares_jacobian(broyden_residuals, x0, args=(b,), kwargs=kwargs)
    options = {"args": (b,), "kwargs": kwargs, "method": method, "xtol": 1e-14,
               "ftol": 1e-14, "gtol": 1e-14}
    ours = least_squares(broyden_residuals, x0, jac=jac, **options)
    theirs = least_squares(broyden_residuals, x0, jac_sparsity=jac.sparsity, **options)
    assert ours.success
    assert theirs.success
    assert ours.cost < 1e-24
    assert theirs.cost < 1e-20
    np.testing.assert_allclose(ours.x, theirs.x, rtol=1e-10, atol=1e-12)
    assert jac.stats()["preparations"] == 1  # scipy passed the same args objects every time
    # the Jacobian at the fit is exact; 30 unknowns: dense, for least_squares' exact steps
    expected = broyden_jac(ours.x, b, **kwargs)
    got = jac(ours.x, b, **kwargs)
    assert jac.format == "dense"
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, expected, rtol=EXACT_TOL,
                               atol=EXACT_TOL * np.abs(expected).max())


@pytest.mark.parametrize(("n", "fmt", "dense"), [(500, "auto", True), (501, "auto", False),
                                                 (20, "csr", False), (300, "dense", True)])
def test_least_squares_jacobian_format(n: int, fmt: str, dense: bool) -> None:
    """Dense up to DENSE_LSQ_MAX unknowns (least_squares then takes exact SVD steps), a
    csr_array above or on request; both exact, with new args passed through (a second
    preparation) and ``out=`` giving the csr_array."""
    from sparsejac.adapters import DENSE_LSQ_MAX

    if fmt == "auto":
        assert dense == (n <= DENSE_LSQ_MAX)
    x0 = -np.ones(n)
    b = np.linspace(-0.2, 0.2, n)
    jac = sparsejac.least_squares_jacobian(broyden_residuals, x0, args=(b,),
                                           kwargs={"weight": 3.0}, format=fmt)
    assert jac.format == ("dense" if dense else "csr")
    x = np.linspace(-1.0, 0.5, n)
    for bb in (b, b + 1.0):  # the second args object prepares again
        got = jac(x, bb, weight=3.0)
        assert isinstance(got, np.ndarray) == dense
        want = broyden_jac(x, bb, weight=3.0)
        np.testing.assert_allclose(got if dense else got.toarray(), want, rtol=EXACT_TOL,
                                   atol=EXACT_TOL * np.abs(want).max())
    assert jac.stats()["preparations"] == 2
    first = jac(x, b, weight=3.0, out=None)
    matrix = sparsejac.SparseJacobian.__call__(jac, x, b, weight=3.0)
    refilled = jac(x, b, weight=3.0, out=matrix)
    assert sp.issparse(refilled)
    np.testing.assert_allclose(refilled.toarray(), first if dense else first.toarray())


def test_least_squares_jacobian_pickles_and_copies_with_its_format() -> None:
    """A pickled or copied LeastSquaresJacobian is one again, with the same format, args and
    Jacobian (it is prepared again from its inputs, as a SparseJacobian is)."""
    import copy
    import pickle

    b = np.linspace(-0.2, 0.2, 12)
    for fmt in ("auto", "csr"):
        jac = sparsejac.least_squares_jacobian(broyden_residuals, -np.ones(12), args=(b,),
                                               kwargs={"weight": 2.0}, format=fmt)
        for other in (pickle.loads(pickle.dumps(jac)), copy.deepcopy(jac)):
            assert type(other) is type(jac)
            assert other.format == jac.format
            x = np.linspace(-1.0, 0.5, 12)
            got, want = other(x, b, weight=2.0), jac(x, b, weight=2.0)
            np.testing.assert_array_equal(got if fmt == "auto" else got.toarray(),
                                          want if fmt == "auto" else want.toarray())


def test_least_squares_jacobian_refuses_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="`format` must be 'auto', 'csr' or 'dense'"):
        sparsejac.least_squares_jacobian(broyden_residuals, -np.ones(4), format="coo")


def test_small_least_squares_takes_exact_steps() -> None:
    """The Moré-Garbow-Hillstrom discrete boundary value problem at n = 100: with the dense
    Jacobian least_squares converges in a few exact steps, as with its own dense finite
    differences (a sparse one sends it to lsmr, which needed 166 Jacobians here)."""
    n = 100
    h = 1 / (n + 1)
    t = h * np.arange(1, n + 1)

    def dbv(x):
        xp = np.concatenate([[0.0], x, [0.0]])
        return 2 * x - xp[:-2] - xp[2:] + h ** 2 * (x + t + 1) ** 3 / 2

    x0 = t * (t - 1)
    ours = least_squares(dbv, x0, jac=sparsejac.least_squares_jacobian(dbv, x0))
    theirs = least_squares(dbv, x0)
    assert ours.njev <= theirs.njev + 1
    assert ours.cost < 1e-10  # (least_squares' default tolerances end it there)


def test_least_squares_with_lsmr_accepts_the_sparse_matrix():
    """tr_solver='lsmr' works directly on the csr_array the adapter returns."""
    n = 600
    x0 = -np.ones(n)
    b = np.zeros(n)
    jac = sparsejac.least_squares_jacobian(broyden_residuals, x0, args=(b,),
                                           kwargs={"weight": 1.0})
    res = least_squares(broyden_residuals, x0, jac=jac, args=(b,), kwargs={"weight": 1.0},
                        tr_solver="lsmr")
    assert res.success
    assert res.cost < 1e-16
    assert isinstance(jac(res.x, b, weight=1.0), sp.csr_array)


def coupled_cubic(x, c):
    """x_i^3 + x_{i-1} = c: a sparse nonlinear system with root x_i = 1 when c = 2."""
    return x**3 + np.roll(x, 1) - c


@pytest.mark.parametrize("method", ["hybr", "lm"])
def test_root_with_args_matches_its_own_finite_differences(method):
    """root(jac=root_jacobian(..., args=...)) finds the same root as root's own FD run."""
    x0 = np.linspace(0.2, 0.8, 10)
    c = np.full(10, 2.0)
    jac = sparsejac.root_jacobian(coupled_cubic, x0, args=(c,))
    ours = root(coupled_cubic, x0, args=(c,), jac=jac, method=method)
    theirs = root(coupled_cubic, x0, args=(c,), method=method)
    assert ours.success
    assert theirs.success
    np.testing.assert_allclose(ours.x, theirs.x, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.x, 1.0, atol=1e-10)
    assert jac.prepared.stats()["preparations"] == 1


def test_root_jacobian_returns_dense_exact_values(rng):
    """The root adapter returns a dense ndarray (MINPACK needs one) with exact values."""
    c = np.full(7, 2.0)
    jac = sparsejac.root_jacobian(coupled_cubic, np.ones(7), args=(c,))
    x = rng.uniform(0.5, 1.5, 7)
    got = jac(x, c)
    assert isinstance(got, np.ndarray)
    expected = np.diag(3 * x**2)
    expected[np.arange(7), (np.arange(7) - 1) % 7] = 1.0
    np.testing.assert_allclose(got, expected, rtol=EXACT_TOL, atol=EXACT_TOL * 7)
    assert repr(jac).startswith("RootJacobian(SparseJacobian(coupled_cubic, shape=(7, 7)")
    assert jac.sparsity.nnz == 14


def _coupled(t, y, coupling):
    """Decoupled y' = -y (4 entries), plus a coupling between neighbours when asked."""
    dy = -y
    if coupling:  # a Python branch on a constant argument: the pattern depends on args
        dy = dy + 0.5 * np.roll(y, 1)
    return dy


@pytest.mark.parametrize("adapter", ["ode", "least_squares", "root"])
def test_sparsity_follows_a_new_preparation(adapter):
    """Regression: the adapters' sparsity is the pattern in use, not the first preparation's
    (an ode_jacobian whose second args add a coupling reported nnz 4 instead of 8)."""
    y0 = np.ones(4)
    off, on = False, True
    if adapter == "ode":
        jac = sparsejac.ode_jacobian(_coupled, 0.0, y0, args=(off,), format="csr")
        assert jac.sparsity.nnz == 4
        got = jac(0.0, y0, on)
    else:
        make = (sparsejac.least_squares_jacobian if adapter == "least_squares"
                else sparsejac.root_jacobian)
        jac = make(lambda y, c: _coupled(0.0, y, c), y0, args=(off,))
        assert jac.sparsity.nnz == 4
        got = sp.csr_array(jac(y0, on))
    assert jac.sparsity.nnz == 8
    assert getattr(jac, "prepared", jac).sparsity.nnz == 8  # least_squares: it is the prepared
    assert sp.csr_array(got).nnz == 8


# -- solve_bvp ------------------------------------------------------------------------------

def _bvp_fun(x, y, p=None):
    """y0' = y1, y1' = -p exp(y0) x (p = 1 without parameters); hand-derived Jacobian below."""
    lam = 1.0 if p is None else p[0]
    return np.vstack([y[1], -lam * np.exp(y[0]) * x])


def _bvp_fun_jac(x, y, p=None):
    lam = 1.0 if p is None else p[0]
    m = y.shape[1]
    d = np.zeros((2, 2, m))
    d[0, 1] = 1.0
    d[1, 0] = -lam * np.exp(y[0]) * x
    if p is None:
        return d
    return d, (-np.exp(y[0]) * x).reshape(1, 1, m) * np.array([[[0.0]], [[1.0]]])


def test_bvp_jacobian_blocks_equal_the_hand_derived_ones():
    rng = np.random.default_rng(3)
    x = np.linspace(0, 1, 7)
    y = rng.normal(size=(2, 7))
    jac = sparsejac.bvp_jacobian(_bvp_fun, lambda ya, yb: np.array([ya[0], yb[0]]), x, y)
    np.testing.assert_allclose(jac.fun_jac(x, y), _bvp_fun_jac(x, y), rtol=1e-14)
    # another mesh size (solve_bvp refines, and evaluates at the midpoints)
    x2, y2 = np.linspace(0, 1, 12), rng.normal(size=(2, 12))
    np.testing.assert_allclose(jac.fun_jac(x2, y2), _bvp_fun_jac(x2, y2), rtol=1e-14)
    dya, dyb = jac.bc_jac(y[:, 0], y[:, -1])
    np.testing.assert_array_equal(dya, [[1.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(dyb, [[0.0, 0.0], [1.0, 0.0]])


def test_bvp_jacobian_with_parameters_matches_hand_derived_and_fd():
    rng = np.random.default_rng(4)
    x, y, p = np.linspace(0, 1, 6), rng.normal(size=(2, 6)), np.array([2.0])

    def bc(ya, yb, p):
        return np.array([ya[0], yb[0], ya[1] * p[0] - 1.0])

    jac = sparsejac.bvp_jacobian(_bvp_fun, bc, x, y, p=p)
    dy, dp = jac.fun_jac(x, y, p)
    hy, hp = _bvp_fun_jac(x, y, p)
    np.testing.assert_allclose(dy, hy, rtol=1e-14)
    np.testing.assert_allclose(dp, hp, rtol=1e-14)
    dya, dyb, dbp = jac.bc_jac(y[:, 0], y[:, -1], p)
    np.testing.assert_allclose(dya, [[1, 0], [0, 0], [0, p[0]]])
    np.testing.assert_allclose(dyb, [[0, 0], [1, 0], [0, 0]])
    np.testing.assert_allclose(dbp, [[0], [0], [y[1, 0]]])


def test_solve_bvp_with_the_exact_jacobians_matches_scipys_own_solution():
    from scipy.integrate import solve_bvp

    def fun(x, y):  # Bratu in 1-D: y'' = -exp(y)
        return np.vstack([y[1], -np.exp(y[0])])

    def bc(ya, yb):
        return np.array([ya[0], yb[0]])

    x, y = np.linspace(0, 1, 5), np.zeros((2, 5))
    jac = sparsejac.bvp_jacobian(fun, bc, x, y)
    ours = solve_bvp(fun, bc, x, y, fun_jac=jac.fun_jac, bc_jac=jac.bc_jac, tol=1e-8)
    ref = solve_bvp(fun, bc, x, y, tol=1e-8)  # scipy's finite-difference Jacobians
    assert ours.success
    assert ref.success
    grid = np.linspace(0, 1, 11)
    np.testing.assert_allclose(ours.sol(grid), ref.sol(grid), atol=1e-7)


def test_bvp_jacobian_refuses_a_fun_that_couples_nodes():
    def fun(x, y):
        return np.vstack([y[1], np.roll(y[0], 1)])

    x, y = np.linspace(0, 1, 4), np.ones((2, 4))
    jac = sparsejac.bvp_jacobian(fun, lambda ya, yb: ya - yb, x, y)
    with pytest.raises(ValueError, match="couples different mesh nodes"):
        jac.fun_jac(x, y)


# -- constraints for minimize ---------------------------------------------------------------

def _circle_chain(x):
    return x[1:] ** 2 + x[:-1] ** 2


@pytest.mark.parametrize("method", ["trust-constr", "SLSQP"])
def test_nonlinear_constraint_jacobian_in_minimize(method):
    from scipy.optimize import NonlinearConstraint, minimize

    n = 12
    jac = sparsejac.SparseJacobian(_circle_chain, np.full(n, 0.5))
    x = np.random.default_rng(5).uniform(-1, 1, n)
    hand = np.zeros((n - 1, n))
    hand[np.arange(n - 1), np.arange(n - 1)] = 2 * x[:-1]
    hand[np.arange(n - 1), np.arange(1, n)] = 2 * x[1:]
    np.testing.assert_array_equal(jac(x).toarray(), hand)
    con = NonlinearConstraint(_circle_chain, -np.inf, 1.0, jac=jac)
    res = minimize(lambda z: np.sum((z - 1) ** 2), np.full(n, 0.1),
                   jac=lambda z: 2 * (z - 1), method=method, constraints=[con],
                   **({"tol": 1e-10} if method == "SLSQP" else {}))
    assert res.success
    # the hand-derived optimum, to the solver's own tolerance (trust-constr's barrier stops
    # a little inside the constraint by default)
    np.testing.assert_allclose(res.x, np.sqrt(0.5), atol=1e-6 if method == "SLSQP" else 1e-3)
    assert np.all(_circle_chain(res.x) <= 1.0 + 1e-8)


def test_slsqp_dict_constraint_with_a_dense_jacobian():
    from scipy.optimize import minimize

    n = 8
    jac = sparsejac.root_jacobian(_circle_chain, np.full(n, 0.5))  # dense, as SLSQP's old API
    res = minimize(lambda z: np.sum((z - 1) ** 2), np.full(n, 0.1), jac=lambda z: 2 * (z - 1),
                   method="SLSQP", tol=1e-10,
                   constraints=[{"type": "ineq", "fun": lambda z: 1.0 - _circle_chain(z),
                                 "jac": lambda z: -jac(z)}])
    assert res.success
    np.testing.assert_allclose(res.x, np.sqrt(0.5), atol=1e-6)


def test_small_systems_get_dense_jacobians() -> None:
    """format="auto": a dense ndarray up to DENSE_ODE_MAX unknowns (dense LU in solve_ivp),
    equal to the CSR Jacobian; csr above; a bad format is refused."""
    from scipy.integrate import solve_ivp

    from sparsejac.adapters import DENSE_ODE_MAX

    def rhs(t: float, y: Any) -> Any:
        dy = -y ** 3 + np.sin(t) * y
        dy[1:] += y[:-1]
        return dy

    small = sparsejac.ode_jacobian(rhs, 0.0, np.ones(DENSE_ODE_MAX))
    large = sparsejac.ode_jacobian(rhs, 0.0, np.ones(DENSE_ODE_MAX + 1))
    assert (small.format, large.format) == ("dense", "csr")
    y = np.linspace(0.5, 1.5, DENSE_ODE_MAX)
    got = small(0.7, y)
    assert isinstance(got, np.ndarray)
    csr = sparsejac.ode_jacobian(rhs, 0.0, np.ones(DENSE_ODE_MAX), format="csr")(0.7, y)
    np.testing.assert_array_equal(got, csr.toarray())
    assert isinstance(large(0.7, np.ones(DENSE_ODE_MAX + 1)), sp.csr_array)
    sol = solve_ivp(rhs, (0.0, 1.0), y, method="Radau", jac=small, rtol=1e-8, atol=1e-10)
    ref = solve_ivp(rhs, (0.0, 1.0), y, method="Radau", rtol=1e-8, atol=1e-10,
                    jac=sparsejac.ode_jacobian(rhs, 0.0, y, format="csr"))
    assert sol.success
    assert ref.success
    np.testing.assert_allclose(sol.y[:, -1], ref.y[:, -1], rtol=1e-7)
    with pytest.raises(ValueError, match="format"):
        sparsejac.ode_jacobian(rhs, 0.0, np.ones(3), format="coo")


def test_ode_jacobian_gives_dense_integrators_a_dense_matrix() -> None:
    """``solve_ivp(method="LSODA")``, ``scipy.integrate.ode`` and ``odeint`` wrap Fortran
    integrators that need a dense Jacobian: above DENSE_ODE_MAX unknowns ``format="auto"``
    gives them an ndarray (a csr_array made LSODA fail with numpy's "setting an array element
    with a sequence"), and BDF still gets the csr_array. Same solutions as the solvers' own
    finite differences."""
    from scipy.integrate import ode, odeint

    n = 100

    def rhs(t, y):
        d = np.zeros_like(y)
        d[1:-1] = y[2:] - 2 * y[1:-1] + y[:-2]
        return 5000 * d - y ** 3  # stiff: LSODA switches to BDF and asks for J

    y0 = np.sin(np.linspace(0, np.pi, n))
    jac = sparsejac.ode_jacobian(rhs, 0.0, y0)
    assert jac.format == "csr"
    assert sp.issparse(jac(0.0, y0))  # called directly, or by BDF: sparse
    opts = {"rtol": 1e-8, "atol": 1e-10}
    ours = solve_ivp(rhs, (0, 2), y0, method="LSODA", jac=jac, **opts)
    theirs = solve_ivp(rhs, (0, 2), y0, method="LSODA", **opts)
    assert ours.success
    assert ours.njev > 0
    np.testing.assert_allclose(ours.y[:, -1], theirs.y[:, -1], rtol=1e-6, atol=1e-8)
    got = odeint(rhs, y0, [0.0, 2.0], Dfun=jac, tfirst=True, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got[-1], theirs.y[:, -1], rtol=1e-6, atol=1e-8)
    r = ode(rhs, jac).set_integrator("vode", method="bdf", rtol=1e-8, atol=1e-10,
                                     nsteps=100_000)
    r.set_initial_value(y0, 0.0)
    end = r.integrate(2.0)
    assert r.successful()

    def exact(t, y):  # hand-derived, dense: vode's answer with the exact Jacobian
        i = np.arange(1, n - 1)
        full = np.zeros((n, n))
        full[i, i - 1] = full[i, i + 1] = 5000.0
        full[i, i] = -10000.0
        full[np.arange(n), np.arange(n)] -= 3 * y ** 2
        return full

    # vode's own answer moves with its Jacobian (y[0] stays 0 with its finite differences,
    # 3e-8 with the exact Jacobian on some builds): the oracle is vode given the exact one
    r_exact = ode(rhs, exact).set_integrator("vode", method="bdf", rtol=1e-8, atol=1e-10,
                                             nsteps=100_000)
    r_exact.set_initial_value(y0, 0.0)
    np.testing.assert_allclose(end, r_exact.integrate(2.0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(end, theirs.y[:, -1], rtol=1e-6, atol=1e-7)
    bdf = solve_ivp(rhs, (0, 2), y0, method="BDF", jac=jac, **opts)
    np.testing.assert_allclose(bdf.y[:, -1], theirs.y[:, -1], rtol=1e-6, atol=1e-8)


def test_ode_jacobian_pickles_after_a_call(tmp_path, monkeypatch):
    """The dense positions an OdeJacobian keeps after its first call are a cache, left out of
    its pickle (they may hold the preparation's local objects)."""
    import pickle

    (tmp_path / "omod.py").write_text(
        "import numpy as np\ndef rhs(t, u):\n    return -u ** 2 + np.roll(u, 1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import omod

    jac = sparsejac.ode_jacobian(omod.rhs, 0.0, np.ones(3))
    want = jac(0.0, np.arange(3.0))
    again = pickle.loads(pickle.dumps(jac))
    np.testing.assert_array_equal(again(0.0, np.arange(3.0)), want)


def test_a_python_float_zero_divisor_gives_numpy_s_inf():
    """``x / 0.0`` divides like numpy (inf), in the derivative too, instead of raising
    ZeroDivisionError inside a partial derivative."""
    with np.errstate(divide="ignore"):
        for f in (lambda x: x / 0.0, lambda x: x / 0, lambda x: np.divide(x, 0.0)):
            j = sparsejac.jacobian(f, np.array([1.0, 2.0])).toarray()
            assert np.isinf(np.diag(j)).all()


def test_an_empty_output_is_a_clear_error_for_a_prepared_jacobian():
    with pytest.raises(ValueError, match="returns an empty array at x0"):
        sparsejac.SparseJacobian(lambda x: x[1:] * x[:-1], np.ones(1))
    assert sparsejac.jacobian(lambda x: x[1:] * x[:-1], np.ones(1)).shape == (0, 1)


def test_adapter_errors_name_the_solver_s_arguments():
    """ode_jacobian's ``y`` and bvp_jacobian's ``x``, ``y``, ``p``, ``ya``, ``yb`` are named as
    the solver calls them (they were reported as ``x``/``x0``), and a mesh whose ``x`` and
    ``y`` disagree is refused."""
    o = sparsejac.ode_jacobian(lambda t, y: -y ** 2, 0.0, np.ones(3))
    with pytest.raises(ValueError, match="`y` must be finite"):
        o(0.0, np.array([1.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match=r"`y` has shape \(4,\) but .* `y0`"):
        o(0.0, np.ones(4))

    def fun(x, y, p):
        return np.vstack([y[1], -p[0] * y[0]])

    def bc(ya, yb, p):
        return np.array([ya[0], yb[0], ya[1] - 1.0])

    x, y = np.linspace(0.0, 1.0, 5), np.ones((2, 5))
    j = sparsejac.bvp_jacobian(fun, bc, x, y, p=[1.0])
    with pytest.raises(ValueError, match="`y` must be finite"):
        j.fun_jac(x, np.full((2, 5), np.nan), [1.0])
    with pytest.raises(ValueError, match=r"`y` must have shape \(2, m\)"):
        j.fun_jac(x, np.zeros((3, 5)), [1.0])
    with pytest.raises(ValueError, match="`p` is missing"):
        j.fun_jac(x, y)
    with pytest.raises(ValueError, match="one node per column"):
        j.fun_jac(x, np.ones((2, 6)), [1.0])
    with pytest.raises(ValueError, match="`ya` must have shape"):
        j.bc_jac(np.zeros(3), np.zeros(2), [1.0])


def test_lsoda_with_args_gets_dense_jacobians_at_any_size():
    """solve_ivp(method="LSODA", args=...) calls jac through a lambda of its own: the dense
    answer for LSODA must see through it (a csr_array made scipy's ode raise)."""
    from scipy.integrate import solve_ivp

    def rhs(t, u, d):
        return d * (np.roll(u, 1) - 2 * u + np.roll(u, -1)) - u ** 3

    u0, args = np.linspace(0.5, 1.0, 100), (400.0,)
    jac = sparsejac.ode_jacobian(rhs, 0.0, u0, args=args)
    ours = solve_ivp(rhs, (0.0, 1.0), u0, method="LSODA", jac=jac, args=args)
    theirs = solve_ivp(rhs, (0.0, 1.0), u0, method="LSODA", args=args)
    assert ours.success
    np.testing.assert_allclose(ours.y[:, -1], theirs.y[:, -1], rtol=1e-6)


def test_an_ill_conditioned_residual_gets_exact_steps_by_default() -> None:
    """Found from outside: a 1-D Bratu residual scaled by 1/h^2 (n = 300) got a csr_array,
    so least_squares took lsmr's steps and did not converge in 200 Jacobians, where
    scipy's default (dense finite differences, exact steps) takes 4. Up to 500 unknowns
    the Jacobian is dense by default."""
    from scipy.optimize import least_squares

    n = 300
    h = 1.0 / (n + 1)

    def bratu(u: Any, lam: float) -> Any:
        up = np.r_[u[1:], 0.0]
        um = np.r_[0.0, u[:-1]]
        return (up - 2 * u + um) / h**2 + lam * np.exp(u)

    jac = sparsejac.least_squares_jacobian(bratu, np.zeros(n), args=(0.1,))
    assert jac.format == "dense"
    got = least_squares(bratu, np.zeros(n), args=(0.1,), jac=jac, max_nfev=50)
    assert got.status > 0
    assert got.njev <= 10
    assert np.abs(bratu(got.x, 0.1)).max() < 1e-8


def test_adapters_check_their_arguments_under_their_own_names() -> None:
    """Found from outside: ode_jacobian said "`x0` must be ..." for its y0, and an unknown
    keyword came back from SparseJacobian.__init__."""
    rhs = lambda t, y: -y  # noqa: E731
    with pytest.raises(TypeError, match=r"`y0` must be an array of real numbers"):
        sparsejac.ode_jacobian(rhs, 0.0, np.array([1 + 1j, 1.0]))
    with pytest.raises(ValueError, match=r"`y0` must be finite"):
        sparsejac.ode_jacobian(rhs, 0.0, np.array([1.0, np.inf]))
    with pytest.raises(TypeError, match=r"`fun` must be callable"):
        sparsejac.least_squares_jacobian(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match=r"ode_jacobian\(\) got an unexpected keyword argument "
                                        r"'jac_sparsity'"):
        sparsejac.ode_jacobian(rhs, 0.0, np.ones(3), jac_sparsity=np.eye(3))
    with pytest.raises(TypeError, match=r"root_jacobian\(\) got an unexpected keyword"):
        sparsejac.root_jacobian(lambda x: x ** 2, np.ones(3), tol=1e-3)
    with pytest.raises(TypeError, match=r"traces `t` as its parameter"):
        sparsejac.ode_jacobian(rhs, 0.0, np.ones(3), params=(1.0,))


def test_lsoda_through_a_users_wrapper_gets_a_dense_matrix() -> None:
    """LSODA needs a dense Jacobian; a counting wrapper between it and the adapter hid the
    caller, and a sparse matrix failed with numpy's "setting an array element"."""
    from scipy.integrate import solve_ivp

    n = 100

    def rd(t: float, u: Any) -> Any:
        lap = np.empty_like(u)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        lap[0], lap[-1] = 2 * (u[1] - u[0]), 2 * (u[-2] - u[-1])
        return 50.0 * lap + 5 * u ** 2 * (1 - u)

    u0 = np.exp(-50 * (np.linspace(0, 1, n) - 0.5) ** 2)
    jac = sparsejac.ode_jacobian(rd, 0.0, u0)
    calls: list[float] = []

    def counting(t: float, y: Any) -> Any:
        calls.append(t)
        return jac(t, y)

    sol = solve_ivp(rd, (0, 1), u0, method="LSODA", jac=counting)
    ref = solve_ivp(rd, (0, 1), u0, method="LSODA", jac=jac)
    assert sol.status == 0
    assert calls
    np.testing.assert_allclose(sol.y[:, -1], ref.y[:, -1], rtol=1e-8)
    assert sp.issparse(jac(0.0, u0))  # (called directly by the user: the sparse matrix)


def test_bvp_parameters_given_to_a_jacobian_prepared_without_are_refused() -> None:
    """solve_bvp(p=...) with a BvpJacobian prepared without p failed with "not enough
    values to unpack"; p is refused by name."""
    def fun(x: Any, y: Any, p: Any = None) -> Any:
        k = 1.0 if p is None else p[0]
        return np.vstack([y[1], -k * y[0]])

    def bc(ya: Any, yb: Any, p: Any = None) -> Any:
        return np.array([ya[0], yb[0] - 1.0])

    x = np.linspace(0, 1, 5)
    jac = sparsejac.bvp_jacobian(fun, bc, x, np.ones((2, 5)))
    for call in (lambda: jac.fun_jac(x, np.ones((2, 5)), np.array([6.0])),
                 lambda: jac.bc_jac(np.ones(2), np.ones(2), np.array([6.0]))):
        with pytest.raises(ValueError, match=r"prepared without parameters: pass p=\.\.\."):
            call()


def test_the_ode_adapter_shows_its_prepared_jacobians_attributes() -> None:
    """getting_started shows ``jac.mode`` and ``jac.reason``; on ode_jacobian's result they
    raised an AttributeError (found from outside)."""
    jac = sparsejac.ode_jacobian(lambda t, y: -y ** 2, 0.0, np.ones(3))
    assert jac.mode == jac.prepared.mode
    assert jac.reason == jac.prepared.reason
    assert jac.stats()["nnz"] == 3
    with pytest.raises(AttributeError):
        _ = jac.no_such_attribute
