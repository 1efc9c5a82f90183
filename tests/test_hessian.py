"""Sparse Hessians against independent oracles.

* random quadratic-plus-elementwise objectives (hypothesis) whose gradient is written by hand:
  the complex step of that gradient is the Hessian to rounding;
* the scenario catalogue and every registry case of ``test_rules``: the second-order rules
  against central differences of the first-order gradient (reverse mode, another code path),
  patterns containing every numeric nonzero, symmetry, Hessian-vector products;
* the API: lower-triangle structure and values, Lagrangian parameters, constraint Hessians,
  ``hessp``, scipy's optimisers, errors.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsejac
from sparsejac.ad import hvp, vjp
from sparsejac.ad.second_order import gradient_call
from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.tracing import trace
from tests import test_rules as rules
from tests.scenarios import SCENARIOS, Scenario

# -- oracles ---------------------------------------------------------------------------------


def cs_hessian(grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """Complex step of a hand-written gradient: exact to rounding."""
    h = 1e-30
    cols = []
    for j in range(x.size):
        z = x.astype(complex)
        z[j] += 1j * h
        cols.append(np.imag(grad(z)) / h)
    return np.column_stack(cols)


def cs_gradient(f: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """The gradient of a scalar ``f`` by the complex step: exact to rounding, no sparsejac."""
    h = 1e-30
    g = np.empty(x.size)
    for j in range(x.size):
        z = x.astype(complex)
        z.flat[j] += 1j * h
        g[j] = np.imag(np.asarray(f(z))).item() / h
    return g


def cs_fd_hessian(f: Callable[[Any], Any], x: np.ndarray, h: float = 2e-4) -> np.ndarray:
    """Fourth-order central differences of complex-step gradients (errors ~1e-11 relative)."""
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        e = e.reshape(x.shape)
        cols.append((-cs_gradient(f, x + 2 * e) + 8 * cs_gradient(f, x + e)
                     - 8 * cs_gradient(f, x - e) + cs_gradient(f, x - 2 * e)) / (12 * h))
    return np.column_stack(cols)


def fd_hessian(f: Callable[[Any], Any], x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central differences of the exact gradient (the reverse interpreter)."""
    def g(z: np.ndarray) -> np.ndarray:
        return np.asarray(vjp(f, z, np.ones(1))).ravel()

    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        e = e.reshape(x.shape)
        cols.append((g(x + e) - g(x - e)) / (2 * h))
    return np.column_stack(cols)


# -- random quadratic-plus-elementwise objectives ---------------------------------------------

#: elementwise functions with their first derivatives (both accept complex arguments)
ELEMENTWISE: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "sin": (np.sin, np.cos),
    "exp": (np.exp, np.exp),
    "tanh": (np.tanh, lambda u: 1.0 - np.tanh(u) ** 2),
    "log1p_sq": (lambda u: np.log1p(u * u), lambda u: 2.0 * u / (1.0 + u * u)),
    "cube": (lambda u: u ** 3, lambda u: 3.0 * u ** 2),
    "square": (np.square, lambda u: 2.0 * u),
}


def objective(n: int, m: int, seed: int, kinds: list[str], sparse_ops: bool
              ) -> tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]:
    """``f(x) = ½ xᵀAx + bᵀx + Σ_k c_k φ_k(B_k x)`` and its hand-written gradient."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((n, n), density=min(1.0, 3.0 / n), rng=rng)
    a = sp.csr_array(a + a.T)
    b = rng.standard_normal(n)
    bs = [sp.csr_array(sp.random_array((m, n), density=min(1.0, 2.0 / n), rng=rng))
          for _ in kinds]
    cs = [rng.standard_normal(m) for _ in kinds]
    fns = [ELEMENTWISE[k] for k in kinds]
    dense_a = a.toarray()
    dense_bs = [bk.toarray() for bk in bs]

    def f(x: Any) -> Any:
        ax = a @ x if sparse_ops else dense_a @ x
        val = 0.5 * np.sum(x * ax) + np.sum(b * x)
        for bk, dbk, ck, (phi, _) in zip(bs, dense_bs, cs, fns, strict=True):
            u = bk @ x if sparse_ops else dbk @ x
            val = val + np.sum(ck * phi(u))
        return val

    def grad(x: np.ndarray) -> np.ndarray:
        g = dense_a @ x + b
        for dbk, ck, (_, dphi) in zip(dense_bs, cs, fns, strict=True):
            g = g + dbk.T @ (ck * dphi(dbk @ x))
        return g

    return f, grad


OBJECTIVES = {
    "n": st.integers(2, 14), "m": st.integers(1, 10), "seed": st.integers(0, 2**16),
    "kinds": st.lists(st.sampled_from(sorted(ELEMENTWISE)), min_size=0, max_size=3),
    "sparse_ops": st.booleans(), "method": st.sampled_from(["star", "acyclic"]),
}


@settings(max_examples=40, deadline=None)
@given(**OBJECTIVES)
def test_random_objectives_against_complex_step(n: int, m: int, seed: int, kinds: list[str],
                                                sparse_ops: bool, method: str) -> None:
    """Hessians exact to rounding, patterns containing every nonzero, at two points."""
    check_objective(n, m, seed, kinds, sparse_ops, method)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(**OBJECTIVES)
def test_random_objectives_long(n: int, m: int, seed: int, kinds: list[str],
                                sparse_ops: bool, method: str) -> None:
    """The same with many more objectives (run with -m slow)."""
    check_objective(n, m, seed, kinds, sparse_ops, method)


def check_objective(n: int, m: int, seed: int, kinds: list[str], sparse_ops: bool,
                    method: str) -> None:
    f, grad = objective(n, m, seed, kinds, sparse_ops)
    rng = np.random.default_rng(seed + 1)
    x0, x1 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    hess = sparsejac.SparseHessian(f, x0, method=method, path="products" if seed % 2 else "auto")
    pattern = sparsejac.hessian_sparsity(f, x0).toarray()
    seen = np.zeros_like(pattern)
    for x in (x0, x1):
        want = cs_hessian(grad, x)
        seen |= want != 0
        scale = 1.0 + np.abs(want).max()
        got = hess(x).toarray()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-11 * scale)
        assert not ((want != 0) & ~pattern).any(), "the pattern misses a nonzero"
        np.testing.assert_allclose(hess.gradient(x), grad(x), rtol=1e-12, atol=1e-12 * scale)
        v = rng.standard_normal((n, 2))
        np.testing.assert_allclose(hvp(f, x, v), want @ v, rtol=1e-10, atol=1e-10 * scale)
    # exact: no pair the Hessian is zero on at generic points (no cancellation here)
    np.testing.assert_array_equal(pattern, seen)


# -- the scenario catalogue -------------------------------------------------------------------

#: catalogue entries whose second derivatives are refused (eigenvalue derivatives)
REFUSED = {"eigvalsh_2x2"}
#: catalogue entries whose code is not complex-analytic (``abs``, conjugating
#: factorisations, scipy.stats discarding imaginary parts) or takes no complex input (SuperLU
#: of a real matrix, ``gammainc``): no complex-step oracle
NOT_ANALYTIC = {"norm_scalar_output", "cholesky_reads_lower", "norm_logpdf_fit",
                "gamma_logpdf_fit", "splu_solve_tridiagonal", "bessel_gammainc"}


def _objective(s: Scenario) -> Callable[[Any], Any]:
    return lambda x: np.sum(np.sin(s.f(x))) + 0.5 * np.sum(s.f(x) ** 2)


@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in SCENARIOS])
def test_catalogue_hessians(s: Scenario) -> None:
    """Hessian of ``Σ sin(F) + ½|F|²`` for every catalogue ``F``: against differences of
    complex-step gradients (of the exact reverse-mode gradient where ``F``'s numpy code is not
    complex-analytic), symmetric, inside its pattern, and ``hvp`` consistent with it."""
    phi = _objective(s)
    x = np.asarray(s.x0, dtype=np.float64)
    if s.name in REFUSED:
        with pytest.raises(UnsupportedPrimitiveError, match="second-order"):
            sparsejac.SparseHessian(phi, x)
        return
    hess = sparsejac.SparseHessian(phi, x)
    got = hess(x).toarray()
    np.testing.assert_allclose(sparsejac.SparseHessian(phi, x, path="products")(x).toarray(),
                               got, rtol=1e-12, atol=1e-12 * (1.0 + np.abs(got).max()))
    if s.name in NOT_ANALYTIC:
        want, tol = fd_hessian(phi, x), 2e-6
    else:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            want = cs_fd_hessian(phi, x)
        tol = 1e-8
    scale = 1.0 + np.abs(want).max()
    np.testing.assert_allclose(got, want, atol=tol * scale, rtol=tol)
    np.testing.assert_allclose(got, got.T, atol=1e-12 * scale)
    pattern = hess.sparsity.toarray()
    assert not ((np.abs(want) > 1e-6 * scale) & ~pattern).any()
    assert (pattern == pattern.T).all()
    v = np.random.default_rng(0).standard_normal((x.size, 2))
    np.testing.assert_allclose(hvp(phi, x, v), got @ v, rtol=1e-9, atol=1e-10 * scale)


# -- every registry case of the first-order rules --------------------------------------------

#: registry cases whose second derivatives are refused with a clear error: eigen- and
#: singular-value derivatives (their formulas use decompositions that are not traceable),
#: ``expm``'s Fréchet derivative, ``interp``/``stdtr`` with a traced position or degree
SECOND_ORDER_REFUSED = {
    "interp-traced_x", "interp-both_traced", "interp-both_traced_left_right",
    "scipy.interpolate.interp1d-linear",
    "linalg.eigh-values", "linalg.eigh-vectors_upper", "linalg.eigvalsh-eigvalsh",
    "linalg.svd-values", "linalg.svd-u_tall", "linalg.svd-vh_wide", "linalg.svd-square_full",
    "linalg.svdvals-svdvals", "linalg.pinv-wide", "linalg.pinv-hermitian",
    "linalg.lstsq-solution", "linalg.lstsq-traced_rhs", "linalg.lstsq-residuals",
    "linalg.cond-cond", "linalg.matrix_norm-nuclear", "linalg.norm-matrix_2",
    "linalg.norm-matrix_-2_axes", "scipy.linalg.expm-expm", "scipy.linalg.expm-batched",
}


def _check_weighted(f: Callable[[Any], Any], x: np.ndarray, case_id: str) -> None:
    rng = np.random.default_rng(7)
    y = np.asarray(f(x))
    w = rng.standard_normal(y.shape)

    def phi(z: Any) -> Any:
        return np.sum(w * f(z))

    if case_id in SECOND_ORDER_REFUSED:
        with pytest.raises(UnsupportedPrimitiveError):
            sparsejac.hessian_sparsity(phi, x)
        return
    n = x.size
    got = hvp(phi, x, np.eye(n))
    want = fd_hessian(phi, x)
    scale = 1.0 + np.abs(want).max()
    np.testing.assert_allclose(got, want, atol=2e-5 * scale, rtol=1e-4, err_msg=case_id)
    pattern = sparsejac.hessian_sparsity(phi, x).toarray()
    assert not ((np.abs(want) > 1e-4 * scale) & ~pattern).any(), case_id


@pytest.mark.parametrize("case", [pytest.param(c, id=rules._case_id(c)) for c in rules.CASES])
def test_registry_case_second_order(case: Any) -> None:
    """Every registry case: ``Σ w·f`` has exact second derivatives, or a clear refusal."""
    x = np.random.default_rng(3).uniform(*case.domain, size=case.shape)
    _check_weighted(case.f, x, rules._case_id(case))


@pytest.mark.parametrize("row", [pytest.param(r, id=rules._row_id(r))
                                 for r in rules.UNARY_ROWS])
def test_unary_row_second_order(row: Any) -> None:
    """Every elementwise function's second derivative."""
    x = rules.sample(row.domain, (3,), np.random.default_rng(5))
    _check_weighted(row.fn, x, "unary")


# -- patterns ---------------------------------------------------------------------------------


def test_linear_operations_add_no_interaction() -> None:
    """Linear maps, sums and constant scalings leave only the nonlinear pairs."""
    def f(x: Any) -> Any:
        lin = np.sum(3.0 * x) + np.cumsum(x)[-1]
        return lin + x[0] * x[2] + np.sin(x[3]) + np.sum(x[:2]) ** 2

    pat = sparsejac.hessian_sparsity(f, np.ones(5)).toarray()
    want = np.zeros((5, 5), dtype=bool)
    want[0, 2] = want[2, 0] = want[3, 3] = True
    want[:2, :2] = True
    np.testing.assert_array_equal(pat, want)


def test_local_pattern_follows_the_branch() -> None:
    """Python control flow on values: refused globally, the branch taken at x locally."""
    def f(x: Any) -> Any:
        if x[0] > 0:
            return x[0] * x[1]
        return np.sin(x[2])

    with pytest.raises(sparsejac.ConcretizationError):
        sparsejac.hessian_sparsity(f, np.ones(3))
    loc = sparsejac.hessian_sparsity(f, np.ones(3), local=True).toarray()
    np.testing.assert_array_equal(loc, [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    loc = sparsejac.hessian_sparsity(f, -np.ones(3), local=True).toarray()
    np.testing.assert_array_equal(loc, [[0, 0, 0], [0, 0, 0], [0, 0, 1]])


def test_selections_have_no_second_order_term() -> None:
    """``max`` and ``sort`` select at x: exact Hessians on either side of a switch."""
    def f(x: Any) -> Any:
        return np.max(x ** 2) + np.sum(np.sort(x) * np.arange(1.0, 4.0) ** 2)

    hess = sparsejac.SparseHessian(f, np.array([0.1, 0.2, 3.0]))
    for x in (np.array([0.1, 0.2, 3.0]), np.array([-2.0, 0.5, 0.1])):
        np.testing.assert_allclose(hess(x).toarray(), fd_hessian(f, x), atol=1e-6)


def _sorted_quadratic(x: Any) -> Any:
    return np.sum(np.sort(x)[:3] ** 2 * np.arange(1.0, 4.0))


SELECTION_OBJECTIVES = {
    "sort": _sorted_quadratic,
    "partition, median": lambda x: np.sum(np.partition(x, 3)[:4] ** 3) + np.median(x) ** 2,
    "running extrema": lambda x: (np.sum(np.maximum.accumulate(x) ** 2)
                                  + np.sum(np.minimum.accumulate(x[::-1]) ** 3)),
    "sort along axes": lambda x: (np.sum(np.sort(x.reshape(4, 6), axis=0)[:2] ** 2)
                                  + np.sum(np.sort(x.reshape(4, 6) ** 2, axis=1)[:, -1] ** 3)),
}


@pytest.mark.parametrize("name", list(SELECTION_OBJECTIVES))
def test_selections_pull_back_by_a_scatter(name: str) -> None:
    """A recorded reverse sweep through a sort is one scatter node, not the lanes' whole block.

    Its hand-written jvp and vjp (O(n) per product) equal the rules derived from its local
    Jacobian, and the Hessians it gives are exact away from the preparation point.
    """
    f = SELECTION_OBJECTIVES[name]
    rng = np.random.default_rng(11)
    x0, x = rng.uniform(-1.5, 1.5, 24), rng.uniform(-1.5, 1.5, 24)
    grad = gradient_call(trace(f, x0))
    assert "sort_scatter" in {node.prim.name for node in trace(grad, x).nodes}
    rules.check_fast_paths(grad, x, rng)
    hess = sparsejac.SparseHessian(f, x0)
    np.testing.assert_allclose(hess(x).toarray(), fd_hessian(f, x), atol=1e-6)
    np.testing.assert_allclose(sparsejac.hessian(f, x).toarray(), fd_hessian(f, x), atol=1e-6)


def test_sorted_quadratic_hessian_by_hand() -> None:
    """``sum(w * sort(x)[:3] ** 2)``: ``2 w_k`` at the k-th smallest element, zero elsewhere."""
    x = np.array([0.7, -0.2, 1.9, 0.1, -1.3, 2.4])
    want = np.zeros((6, 6))
    for k, j in enumerate(np.argsort(x)[:3]):
        want[j, j] = 2.0 * (k + 1)
    hess = sparsejac.SparseHessian(_sorted_quadratic, np.zeros(6))
    np.testing.assert_array_equal(hess(x).toarray(), want)


# -- the API ----------------------------------------------------------------------------------


def chain(x: Any) -> Any:
    return np.sum((x[1:] - x[:-1] ** 2) ** 2) + 0.1 * np.sum(x ** 4)


def chain_hessian(x: np.ndarray) -> np.ndarray:
    """Hand-derived Hessian of :func:`chain`."""
    n = x.size
    h = np.diag(1.2 * x ** 2)
    r = x[1:] - x[:-1] ** 2
    for i in range(n - 1):
        # d²/dx² of (x_{i+1} - x_i²)²
        h[i, i] += -4.0 * r[i] + 8.0 * x[i] ** 2
        h[i, i + 1] += -4.0 * x[i]
        h[i + 1, i] += -4.0 * x[i]
        h[i + 1, i + 1] += 2.0
    return h


@pytest.mark.parametrize("path", ["auto", "products"])
@pytest.mark.parametrize("method", ["star", "acyclic"])
def test_prepared_hessian_at_many_points(method: str, path: str) -> None:
    """Hand-derived Hessian at several points, assembled directly or from 3 products."""
    for n in (30, 1500):  # the compiled tape's products, then the chain's direct assembly
        hess = sparsejac.SparseHessian(chain, np.ones(n), method=method, path=path)
        assert hess.n_products <= 3
        chain_engine = hess.stats()["engine"]["engine"] == "chain"
        assert chain_engine == (n == 1500)
        assert hess.stats()["path"] == ("direct" if path == "auto" and chain_engine
                                        else "compressed")
        rng = np.random.default_rng(0)
        for _ in range(3):
            x = rng.uniform(-2, 2, n)
            np.testing.assert_allclose(hess(x).toarray(), chain_hessian(x), rtol=1e-12,
                                       atol=1e-12)


def test_one_off_hessian() -> None:
    x = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(sparsejac.hessian(chain, x).toarray(), chain_hessian(x),
                               rtol=1e-12, atol=1e-12)


def test_structure_and_values_are_the_lower_triangle() -> None:
    hess = sparsejac.SparseHessian(chain, np.ones(6))
    rows, cols = hess.structure()
    assert (rows >= cols).all()
    x = np.linspace(-1, 1, 6)
    full = chain_hessian(x)
    np.testing.assert_allclose(hess.values(x), full[rows, cols], rtol=1e-12, atol=1e-12)
    lower = sp.coo_array((hess.values(x), (rows, cols)), shape=(6, 6)).toarray()
    np.testing.assert_allclose(lower + np.tril(lower, -1).T, full, rtol=1e-12, atol=1e-12)


def test_lagrangian_parameters_are_not_retraced() -> None:
    """σ and λ change per call; one preparation serves them all."""
    f = chain

    def c(x: Any) -> Any:
        return np.array([np.sum(x ** 2) - 1.0, x[0] * x[-1]])

    x = np.linspace(-1, 1, 5)
    hl = sparsejac.lagrangian_hessian(f, c, x)
    for sigma, lam in ((1.0, [0.0, 0.0]), (0.5, [2.0, -1.0]), (0.0, [1.0, 3.0])):
        want = sigma * chain_hessian(x) + lam[0] * 2.0 * np.eye(5)
        want[0, -1] += lam[1]
        want[-1, 0] += lam[1]
        np.testing.assert_allclose(hl(x, lam, sigma).toarray(), want, rtol=1e-12,
                                   atol=1e-12)
        rows, cols = hl.structure()
        np.testing.assert_allclose(hl.values(x, lam, sigma), want[rows, cols], atol=1e-12)
    assert hl.hessian.stats()["preparations"] == 1


def test_constraint_hessian_for_nonlinear_constraint() -> None:
    def c(x: Any) -> Any:
        return np.array([x[0] * x[1], np.sum(x ** 3)])

    hc = sparsejac.constraint_hessian(c, np.ones(3))
    x, v = np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.5])
    want = np.diag(0.5 * 6.0 * x)
    want[0, 1] += 2.0
    want[1, 0] += 2.0
    np.testing.assert_allclose(hc(x, v).toarray(), want, rtol=1e-12)


def test_hessp_reuses_the_hessian_at_one_point() -> None:
    hess = sparsejac.SparseHessian(chain, np.ones(8))
    x = np.linspace(0, 1, 8)
    p = np.arange(8.0)
    np.testing.assert_allclose(hess.hessp(x, p), chain_hessian(x) @ p, rtol=1e-12)
    first = hess._cache
    hess.hessp(x, 2 * p)
    assert hess._cache is first  # no new Hessian at the same x


def test_hessp_sees_parameters_changed_in_place() -> None:
    """Multipliers updated in place between hessp calls at one x: the kept Hessian (compared
    by identity of the parameters) answered for the old values."""
    hess = sparsejac.SparseHessian(lambda x, s: np.sum(s * x ** 3), np.ones(3),
                                   params=(np.ones(3),))
    x, p, v = np.array([1.0, 2.0, 3.0]), np.ones(3), np.ones(3)
    np.testing.assert_allclose(hess.hessp(x, p, params=(v,)), 6 * v * x)
    v[:] = 2.0
    np.testing.assert_allclose(hess.hessp(x, p, params=(v,)), 6 * v * x)
    first = hess._cache
    hess.hessp(x, 2 * p, params=(v.copy(),))  # equal values: the kept Hessian
    assert hess._cache is first


def _logistic(X: np.ndarray) -> Any:
    def loss(w: np.ndarray, s: Any = 1.0) -> Any:
        z = X @ w
        return s * np.sum(np.logaddexp(0.0, z) - 0.3 * z) + 0.5 * w @ w
    return loss


def _logistic_hessian(X: np.ndarray, w: np.ndarray, s: float = 1.0) -> np.ndarray:
    """By hand: X^T diag(s sigma(z)(1 - sigma(z))) X + I."""
    sig = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ (X * (s * sig * (1 - sig))[:, None]) + np.eye(X.shape[1])


def test_hessp_computes_a_few_products_alone_before_a_dense_hessian() -> None:
    """A dense Hessian of 70 products, not recorded (its products walk the gradient's
    program): at each new x the first products are single Hessian-vector products (forward
    over the recorded gradient), the Hessian is computed once they reach 70 /
    HESSP_RENT_SHARE, and kept; every product against the Hessian by hand. Another x, other
    parameter values (in place) and a changed global start again. A recorded Hessian (40
    unknowns: the chain engine) is computed at the first product."""
    from sparsejac.hessians import HESSP_RENT_SHARE

    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 70)) / 6
    scale = [1.0]
    loss = _logistic(X)
    hess = sparsejac.SparseHessian(lambda w, s: scale[0] * loss(w, s), np.zeros(70),
                                   params=(np.ones(1),))
    assert hess.n_products == 70
    assert hess.stats()["engine"]["engine"] == "replay"
    alone = 70 // HESSP_RENT_SHARE  # the products before the one that computes H
    s = np.ones(1)
    for k, x in enumerate((rng.normal(size=70), rng.normal(size=70))):
        want = _logistic_hessian(X, x)
        for i in range(alone + 3):
            p = rng.normal(size=70)
            np.testing.assert_allclose(hess.hessp(x, p, params=(s,)), want @ p,
                                       rtol=1e-12, atol=1e-12)
            assert hess.stats()["hessp"] == {
                "single_products": alone * k + min(i + 1, alone),
                "hessians": k + (i >= alone)}
    s[:] = 2.0  # in place: the kept products and Hessian answered for s = 1
    p = rng.normal(size=70)
    np.testing.assert_allclose(hess.hessp(x, p, params=(s,)), _logistic_hessian(X, x, 2.0) @ p,
                               rtol=1e-12)
    assert hess.stats()["hessp"]["single_products"] == 2 * alone + 1
    scale[0] = 3.0  # a changed global: f is prepared again, nothing kept is used
    np.testing.assert_allclose(hess.hessp(x, p, params=(s,)),
                               3.0 * _logistic_hessian(X, x, 2.0) @ p, rtol=1e-12)
    small = _logistic(X[:, :40])
    recorded = sparsejac.SparseHessian(small, np.zeros(40), path="products")
    assert recorded.n_products == 40
    assert recorded.stats()["engine"]["engine"] == "chain"
    x = rng.normal(size=40)
    np.testing.assert_allclose(recorded.hessp(x, np.ones(40)),
                               _logistic_hessian(X[:, :40], x) @ np.ones(40), rtol=1e-12)
    assert recorded.stats()["hessp"] == {"single_products": 0, "hessians": 1}


def test_hessp_of_a_hessian_of_few_products_computes_it_at_once() -> None:
    """Eight products or fewer (here three colours, or entries assembled directly): the
    first product computes the Hessian, as a single product would not save anything."""
    hess = sparsejac.SparseHessian(chain, np.ones(8))
    assert hess.n_products <= 8
    hess.hessp(np.linspace(0, 1, 8), np.ones(8))
    assert hess.stats()["hessp"] == {"single_products": 0, "hessians": 1}


def test_single_hessp_products_keep_zero_times_inf_zero() -> None:
    """Where the Hessian is infinite (x ** 1.5 at 0) a zero in p contributes zero, by single
    products as by the kept Hessian (mul0_matmul)."""
    from sparsejac.primitives.derive import mul0_matmul

    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 70))

    def f(w: np.ndarray) -> Any:
        return np.sum(np.sqrt(1.0 + (X @ w) ** 2)) + np.sum(np.abs(w[:3]) ** 1.5)

    hess = sparsejac.SparseHessian(f, np.ones(70))
    assert hess.stats()["engine"]["engine"] == "replay"
    x = rng.normal(size=70)
    x[0] = 0.0
    p = rng.normal(size=70)
    p[0] = 0.0
    got = hess.hessp(x, p)
    assert hess.stats()["hessp"]["single_products"] == 1
    full = hess(x)
    assert np.isinf(full[0, 0])
    np.testing.assert_allclose(got, mul0_matmul(full, p.reshape(-1, 1)).ravel(), rtol=1e-12)


def test_scipy_optimisers_converge() -> None:
    """trust-constr with hess=, Newton-CG and trust-krylov with hessp=."""
    x0 = np.full(20, 0.5)
    hess = sparsejac.SparseHessian(chain, x0)
    for method, kw in (("trust-constr", {"hess": hess}), ("Newton-CG", {"hessp": hess.hessp}),
                       ("trust-krylov", {"hessp": hess.hessp}),
                       ("trust-exact", {"hess": lambda x: hess(x).toarray()})):
        res = so.minimize(chain, x0, jac=hess.gradient, method=method, **kw)
        assert res.success or np.linalg.norm(hess.gradient(res.x)) < 1e-6, method
        assert abs(res.fun) < 1e-6, method


def test_changed_constant_prepares_again() -> None:
    k = [1.0]
    hess = sparsejac.SparseHessian(lambda x: k[0] * np.sum(x ** 3), np.ones(2))
    k[0] = 2.0
    np.testing.assert_allclose(hess(np.ones(2)).toarray(), 12.0 * np.eye(2))


def test_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="scalar"):
        sparsejac.SparseHessian(lambda x: x ** 2, np.ones(3))
    with pytest.raises(ValueError, match="method"):
        sparsejac.SparseHessian(chain, np.ones(3), method="distance2")
    with pytest.raises(ValueError, match="path"):
        sparsejac.SparseHessian(chain, np.ones(3), path="direct")
    with pytest.raises(ValueError, match="symmetric"):
        sparsejac.SparseHessian(chain, np.ones(3), sparsity=np.triu(np.ones((3, 3))))
    with pytest.raises(ValueError, match="miss"):
        sparsejac.SparseHessian(chain, np.ones(3), sparsity=np.eye(3))
    with pytest.raises(ValueError, match="p"):
        sparsejac.SparseHessian(chain, np.ones(3)).hessp(np.ones(3), np.ones(4))


# -- from outside: scipy's own test functions and its trust-constr tutorial --------------------


def test_scipy_rosenbrock_functions() -> None:
    """``scipy.optimize.rosen`` (written with the array API) against scipy's own derivatives."""
    from scipy.optimize import rosen, rosen_der, rosen_hess, rosen_hess_prod

    x = np.random.default_rng(0).uniform(-1.0, 2.0, 30)
    hess = sparsejac.SparseHessian(rosen, x)
    want = rosen_hess(x)
    np.testing.assert_allclose(hess(x).toarray(), want, rtol=1e-13, atol=1e-13 * abs(want).max())
    np.testing.assert_allclose(hess.gradient(x), rosen_der(x), rtol=1e-13, atol=1e-10)
    p = np.arange(30.0)
    np.testing.assert_allclose(hess.hessp(x, p), rosen_hess_prod(x, p), rtol=1e-12)
    assert hess.n_products == 3  # tridiagonal
    np.testing.assert_allclose(sparsejac.jacobian(rosen_der, x).toarray(), want, rtol=1e-13,
                               atol=1e-12)
    np.testing.assert_allclose(sparsejac.jacobian(lambda z: rosen_hess_prod(z, p), x).toarray(),
                               sparsejac.hessian(lambda z: np.dot(rosen_der(z), p), x).toarray(),
                               rtol=1e-12, atol=1e-9)


def test_scipy_trust_constr_tutorial() -> None:
    """The constrained Rosenbrock problem of scipy's trust-constr tutorial, with sparsejac's
    gradient and Hessians: the tutorial's answer."""
    from scipy.optimize import Bounds, LinearConstraint, NonlinearConstraint, rosen

    def cons_f(x: Any) -> Any:
        return [x[0] ** 2 + x[1], x[0] ** 2 - x[1]]

    x0 = np.array([0.5, 0.0])
    hess = sparsejac.SparseHessian(rosen, x0)
    nonlinear = NonlinearConstraint(cons_f, -np.inf, 1, jac=sparsejac.SparseJacobian(
        lambda x: np.array(cons_f(x)), x0), hess=sparsejac.constraint_hessian(cons_f, x0))
    linear = LinearConstraint([[1, 2], [2, 1]], [-np.inf, 1], [1, 1])
    res = so.minimize(rosen, x0, method="trust-constr", jac=hess.gradient, hess=hess,
                      constraints=[linear, nonlinear], bounds=Bounds([0, -0.5], [1.0, 2.0]),
                      options={"sparse_jacobian": True})  # scipy: one kind for all constraints
    np.testing.assert_allclose(res.x, [0.41494531, 0.17010937], rtol=1e-6)


@pytest.mark.parametrize("path", ["auto", "products"])
def test_hessian_preparation_colours_only_what_it_uses(monkeypatch, path):
    """The gradient Jacobian's colourings are replaced by the Hessian's own: preparing a
    SparseHessian runs none of them (a mixed-mode bicolouring of a dense Hessian cost
    seconds), and the Hessian is still exact, assembled directly or from products."""
    import sparsejac.coloring.by_mode as by_mode
    import sparsejac.pipeline as pipeline

    def refuse(*args, **kwargs):
        raise AssertionError("the gradient Jacobian was coloured")

    monkeypatch.setattr(pipeline, "colour_modes", refuse)
    monkeypatch.setattr(by_mode, "colour_modes", refuse)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((30, 30))
    a = a + a.T

    def f(x):
        return 0.5 * x @ (a @ x) + np.sum(np.log1p(x ** 2))

    x = rng.standard_normal(30)
    hess = sparsejac.SparseHessian(f, x, path=path)
    exact = a + np.diag((2 - 2 * x ** 2) / (1 + x ** 2) ** 2)
    np.testing.assert_allclose(hess(x).toarray(), exact, rtol=1e-13, atol=1e-12)
    assert hess.n_products == 30  # a dense Hessian: one product per column


def test_gradient_and_hessp_follow_a_changed_global():
    """``gradient`` and a kept ``hessp`` Hessian check the recording as the Hessian does
    (``verify=True``): after a global changes, they are f's, not the old program's."""
    c = [1.0]

    def f(x):
        return c[0] * np.sum(x ** 4) - np.sum(x)

    h = sparsejac.SparseHessian(f, np.ones(3))
    np.testing.assert_array_equal(h.hessp(np.ones(3), np.ones(3)), np.full(3, 12.0))
    c[0] = 2.0
    np.testing.assert_array_equal(h.gradient(np.ones(3)), np.full(3, 7.0))  # 8 x^3 - 1
    np.testing.assert_array_equal(h.hessp(np.ones(3), np.ones(3)), np.full(3, 24.0))


def test_multipliers_of_the_wrong_length_are_refused():
    """``v``, ``lagrange`` and ``obj_factor`` are checked against the constraints' count
    (a length-1 vector was broadcast silently; others failed inside numpy)."""
    hl = sparsejac.lagrangian_hessian(lambda x: np.sum(x ** 3), lambda x: x ** 2, np.ones(3))
    for lam in ([1.0], [1.0, 2.0], np.ones(4), [1.0, np.nan, 2.0]):
        with pytest.raises(ValueError, match="`lagrange`"):
            hl.values(np.ones(3), lagrange=lam, obj_factor=1.0)
    for lam in ("abc", None, np.ones(3) * 1j):  # None was read as NaN, complex as its real part
        with pytest.raises(TypeError, match="`lagrange` must be 3 finite real numbers"):
            hl.values(np.ones(3), lagrange=lam, obj_factor=1.0)
    with pytest.raises(TypeError, match="`obj_factor` must be 1 finite real number; got "
                                        "NoneType"):
        hl.values(np.ones(3), lagrange=np.ones(3), obj_factor=None)
    with pytest.raises(ValueError, match="`obj_factor`"):
        hl.values(np.ones(3), lagrange=np.ones(3), obj_factor=np.ones(3))
    np.testing.assert_array_equal(hl(np.ones(3), np.ones((3, 1))).diagonal(), np.full(3, 8.0))
    ch = sparsejac.constraint_hessian(lambda x: x ** 2, np.ones(3))
    for v in (np.ones(1), np.ones(4)):
        with pytest.raises(ValueError, match="`v` has"):
            ch(np.ones(3), v)
    h = sparsejac.SparseHessian(lambda x, v: np.sum(v * x ** 2), np.ones(3), params=(np.ones(3),))
    with pytest.raises(ValueError, match=r"`params\[0\]` has shape \(1,\); this was prepared "
                       r"with shape \(3,\)"):
        h.evaluate(np.ones(3), params=(np.ones(1),))
    # a (3, 1) weight: numpy would broadcast f to another shape; it said "f must be
    # deterministic"
    for call in (h.evaluate, h.gradient):
        with pytest.raises(ValueError, match=r"`params\[0\]` has shape \(3, 1\)"):
            call(np.ones(3), params=(np.ones((3, 1)),))
    j = sparsejac.SparseJacobian(lambda x, w: w * x ** 3, np.ones(3), params=(np.ones(3),))
    with pytest.raises(ValueError, match=r"`params\[0\]` has shape \(3, 1\)"):
        j.evaluate(np.ones(3), params=(np.ones((3, 1)),))


def test_hessians_pickle_and_copy(tmp_path, monkeypatch):
    """SparseHessian, constraint and Lagrangian Hessians pickle and deep-copy (prepared again
    from their inputs) when their functions pickle."""
    import copy
    import pickle

    (tmp_path / "hmod.py").write_text(
        "import numpy as np\n"
        "def obj(x):\n    return np.sum(x ** 4) + x[0] * x[1]\n"
        "def cons(x):\n    return x[1:] ** 2 - x[:-1]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import hmod

    x = np.array([0.5, 1.5, 2.5])
    h = sparsejac.SparseHessian(hmod.obj, np.ones(3), order="natural")
    for other in (pickle.loads(pickle.dumps(h)), copy.deepcopy(h)):
        np.testing.assert_array_equal(other(x).toarray(), h(x).toarray())
    ch = sparsejac.constraint_hessian(hmod.cons, np.ones(3))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ch))(x, [1.0, 2.0]).toarray(),
                                  ch(x, [1.0, 2.0]).toarray())
    hl = sparsejac.lagrangian_hessian(hmod.obj, hmod.cons, np.ones(3))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(hl)).values(x, [1.0, 2.0], 2.0),
                                  hl.values(x, [1.0, 2.0], 2.0))


def test_unknown_order_is_refused_on_every_path():
    with pytest.raises(ValueError, match="Unknown `order`"):
        sparsejac.SparseHessian(lambda x: np.sum(x ** 3), np.ones(3), order="nope")


def test_a_gradient_rule_without_a_rule_of_its_own_says_where_it_came_from():
    """np.interp's derivative looks its slope up by an index computed from x, which a global
    trace cannot follow: the Hessian's error names interp, says it came from tracing the
    gradient, and that Hessians have no mode='fd'."""
    xp = np.linspace(0.0, 1.0, 5)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError,
                       match=r"interp .*while tracing the gradient of f for second derivatives"):
        sparsejac.hessian(lambda x: np.sum(np.interp(x, xp, xp ** 2) ** 2),
                          np.array([0.3, 0.6]))


def test_an_unsupported_call_in_f_points_hessians_to_finite_differences_of_a_gradient():
    """The refusal's generic advice (mode='fd') is for Jacobians: a Hessian's adds that
    Hessians have none and names the way that exists (found by a hunt from outside)."""
    for make in (lambda f: sparsejac.SparseHessian(f, np.ones(3)),
                 lambda f: sparsejac.hessian(f, np.ones(3)),
                 lambda f: sparsejac.constraint_hessian(f, np.ones(3))):
        with pytest.raises(sparsejac.UnsupportedPrimitiveError,
                           match=r"numpy\.nansum.*Hessians have no mode='fd'.*SparseJacobian"):
            make(lambda x: np.nansum(x ** 2) * np.ones(1))


def test_hessp_is_the_column_where_the_hessian_has_an_overflowed_entry():
    """hessp(x, e_j) equals column j of H(x) also when another entry of H is NaN: a zero of p
    times it contributes nothing (it made whole products NaN)."""
    def f(x):
        return np.sum(1.0 / (1.0 + np.exp(x[1:] * x[:-1])))

    x = np.array([30.0, 30.0, -30.0, 30.0])
    with np.errstate(over="ignore", invalid="ignore"):
        hess = sparsejac.SparseHessian(f, np.ones(4))
        full = hess(x).toarray()
        for j in range(4):
            np.testing.assert_array_equal(hess.hessp(x, np.eye(4)[j]), full[:, j])


def test_a_nan_point_is_refused_naming_the_callers_argument():
    """``hessian(f, x)`` names ``x`` (it named ``x0``, the prepared Hessian's argument)."""
    x = np.array([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match=r"^`x` must be finite; element 1 \(flat index\)"):
        sparsejac.hessian(lambda v: np.sum(v ** 3), x)
    with pytest.raises(ValueError, match=r"^`x0` must be finite; element 1"):
        sparsejac.SparseHessian(lambda v: np.sum(v ** 3), x)
    np.testing.assert_array_equal(sparsejac.hessian(lambda v: np.sum(v ** 3), [1, 2]).toarray(),
                                  np.diag([6.0, 12.0]))


def test_a_hessian_of_f_that_cancels_the_recordings_rounding_is_not_refused():
    """The recorded sum of x @ x rounds differently from BLAS; f cancels it to that rounding.
    A fresh preparation disagreeing by that much was refused as a non-deterministic f."""
    rng = np.random.default_rng(0)

    def f(x):
        return (x @ x) * 1e12 - np.sum(x * x) * 1e12 + np.sum(x**3)

    hess = sparsejac.SparseHessian(f, np.ones(30))
    for _ in range(4):
        x = rng.normal(size=30)
        # H = diag(6 x) + 2e12 I - 2e12 I, exact to the rounding of 2e12
        np.testing.assert_allclose(hess(x).toarray(), np.diag(6 * x), atol=1e-3)
    assert hess.stats()["preparations"] <= 3


def test_lagrangian_of_an_objective_that_writes_into_x():
    """f shifting its x in place (scipy hands it a copy) made c see the shifted x inside the
    Lagrangian: H[0, 0] was 2.88 instead of 8.88. The Lagrangian gives f a copy."""

    def f(x):
        x -= 1.0
        return np.sum(x**4)

    def c(x):
        return np.array([x[0] ** 3, x[1] * x[2]])

    x = np.array([0.2, 1.5, -1.0])
    lam = np.array([1.0, -2.0])
    hl = sparsejac.lagrangian_hessian(f, c, x)
    want = 2.5 * np.diag(12.0 * (x - 1.0) ** 2)  # sigma * H(f), by hand
    want[0, 0] += lam[0] * 6.0 * x[0]
    want[1, 2] += lam[1]
    want[2, 1] += lam[1]
    np.testing.assert_allclose(hl(x, lagrange=lam, obj_factor=2.5).toarray(), want)
    np.testing.assert_array_equal(x, [0.2, 1.5, -1.0])


def test_constraint_and_lagrangian_hessians_refresh():
    w = np.array([1.0])
    ch = sparsejac.constraint_hessian(lambda x: w * x**2, np.ones(1))
    hl = sparsejac.lagrangian_hessian(lambda x: np.sum(w * x**3), lambda x: x, np.ones(1))
    w[0] = 3.0
    ch.refresh()
    hl.refresh()
    np.testing.assert_array_equal(ch(np.ones(1), np.ones(1)).toarray(), [[6.0]])
    np.testing.assert_array_equal(hl(np.ones(1), lagrange=[0.0]).toarray(), [[18.0]])


def test_one_off_hessian_follows_the_branch_taken_at_x():
    """hessian(f, x) refused Python branches on values (its message suggested a local=True
    it does not take); like jacobian(f, x) it now gives the Hessian of the branch at x.
    SparseHessian (every x) still refuses, pointing at hessian(f, x)."""

    def f(x):
        if x[0] > 0:
            return np.sum(x**3) + x[0] * x[1]
        return np.sum(x**2)

    x = np.array([0.5, -1.0, 2.0])
    want = np.diag(6.0 * x)
    want[0, 1] = want[1, 0] = 1.0
    got = sparsejac.hessian(f, x)
    np.testing.assert_allclose(got.toarray(), want)
    assert (got != got.T).nnz == 0
    np.testing.assert_allclose(sparsejac.hessian(f, -x).toarray(), 2.0 * np.eye(3))
    with pytest.raises(sparsejac.ConcretizationError, match=r"sparsejac\.hessian\(f, x\)"):
        sparsejac.SparseHessian(f, x)
    with pytest.raises(sparsejac.ConcretizationError, match=r"holds at this x"):
        sparsejac.hessian(lambda z: np.sum(z**2) * (2.0 if z[0] == 0.5 else 1.0), x)


@pytest.mark.parametrize(("f", "x"), [(lambda x: np.linalg.norm(x), np.zeros(3)),
                                      (lambda x: np.std(x), np.ones(3)),
                                      (lambda x: np.sqrt(np.sum(x**2)), np.zeros(3))])
def test_hessians_at_singular_points_under_errstate_raise(f, x):
    """inf * 0 in the recorded derivatives at a singular point raised FloatingPointError from
    inside an elementwise rule under np.errstate(all="raise"); the derivatives are sparsejac's
    computation, not f's: the Hessian is the one numpy's default gives (inf/nan entries)."""
    want = sparsejac.hessian(f, x).toarray()
    hess = sparsejac.SparseHessian(f, x + 1.0)
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(sparsejac.hessian(f, x).toarray(), want)
        np.testing.assert_array_equal(hess(x).toarray(), want)
        hess.hessp(x, np.ones(3))
        sparsejac.SparseHessian(f, x)


def test_cbrt_second_derivative_at_zero_follows_the_power_convention():
    """cbrt's derivative 1 / (3 out out), differentiated again at 0, met 0 * inf in a
    product's rule and gave 0 where x ** (1/3) and sqrt give -inf (their one-sided limit)."""
    x = np.array([0.0, 1.0, -8.0])
    h = sparsejac.hessian(lambda x: np.sum(np.cbrt(x)), x).diagonal()
    assert h[0] == -np.inf
    np.testing.assert_allclose(h[1:], -2.0 / (9.0 * np.cbrt(x[1:]) ** 5))
    assert sparsejac.hessian(lambda x: np.sum(x ** (1 / 3)), np.zeros(2)).diagonal()[0] == h[0]


def test_one_off_hessian_of_a_cache_answering_near_its_key_warns():
    class Memo:
        key = val = None

        def f(self, x):
            if self.key is None or not np.allclose(x, self.key):
                self.key, self.val = np.array(x, copy=True), np.sum(x**3)
            return self.val

    m, x = Memo(), np.array([0.1, 0.5, -0.3])
    m.f(x)
    with pytest.warns(RuntimeWarning, match="does not depend on x") as record:
        sparsejac.hessian(m.f, x)
    assert record[0].filename == __file__


@pytest.mark.parametrize("square", [
    pytest.param(lambda a: a ** 2, id="power"),
    pytest.param(lambda a: np.square(a), id="square"),
    pytest.param(lambda a: a * a, id="same_modulus"),
    pytest.param(None, id="two_moduli"),
    pytest.param(lambda a: np.power(a, 2.0), id="float_power_2"),
])
def test_the_square_of_a_modulus_is_smooth_at_zero(square) -> None:
    """|x|² is x²: its second derivative is 2 at 0 too. The modulus's conventional derivative
    there (0), squared, gave 0 (a Huber loss's quadratic part gave 0 where 1)."""
    def f(x):
        if square is None:
            return np.sum(np.abs(x) * np.abs(x)) + np.sum(x[:2])
        return np.sum(square(np.abs(x))) + np.sum(x[:2])

    x0 = np.array([0.0, 1.5, -2.0, 0.0])
    np.testing.assert_array_equal(sparsejac.hessian(f, x0).toarray(), 2.0 * np.eye(4))
    prepared = sparsejac.SparseHessian(f, np.arange(1.0, 5.0))
    np.testing.assert_array_equal(prepared(x0).toarray(), 2.0 * np.eye(4))
    np.testing.assert_array_equal(prepared.gradient(x0), 2 * x0 + [1, 1, 0, 0])
    # the value is numpy's, bit for bit
    assert f(x0) == float(np.sum(x0 ** 2) + x0[0] + x0[1])


def test_a_huber_loss_has_its_quadratic_curvature_at_zero_residuals() -> None:
    r0 = np.array([0.0, 0.5, 3.0])

    def huber(r):
        a = np.abs(r)
        return np.sum(np.where(a <= 1.0, 0.5 * a ** 2, a - 0.5))

    np.testing.assert_array_equal(sparsejac.hessian(huber, r0).diagonal(), [1.0, 1.0, 0.0])


def test_lagrangian_with_obj_factor_zero_leaves_out_an_undefined_objective_hessian():
    """obj_factor = 0 (IPOPT's restoration phase) gives the constraints' Hessian alone, also
    where the objective's is NaN (np.linalg.norm(x) ** 2 at 0); other factors keep the NaN."""
    f = lambda x: np.linalg.norm(x) ** 2  # noqa: E731
    c = lambda x: np.array([x[0] * x[1] + x[2] ** 3, x[1] * x[2]])  # noqa: E731
    hl = sparsejac.lagrangian_hessian(f, c, np.ones(3))
    x0, lam = np.zeros(3), np.array([2.0, -1.0])
    want = np.array([[0.0, 2.0, 0.0], [2.0, 0.0, -1.0], [0.0, -1.0, 0.0]])  # by hand
    np.testing.assert_allclose(hl(x0, lagrange=lam, obj_factor=0.0).toarray(), want,
                               rtol=1e-15)
    rows, cols = hl.structure()
    np.testing.assert_allclose(hl.values(x0, lagrange=lam, obj_factor=0.0), want[rows, cols],
                               rtol=1e-15)
    assert np.isnan(hl.values(x0, lagrange=lam, obj_factor=1.0)).any()
    # an object made before the fallback existed (unpickled: no attribute of its own) has it
    old = sparsejac.lagrangian_hessian(f, c, np.ones(3))
    old.__dict__.pop("_constraints", None)
    np.testing.assert_allclose(old.values(x0, lagrange=lam, obj_factor=0.0), want[rows, cols],
                               rtol=1e-15)
    # away from the kink, obj_factor = 0 is the prepared Hessian itself
    x1 = np.array([1.0, 2.0, 3.0])
    want1 = np.array([[0.0, 2.0, 0.0], [2.0, 0.0, -1.0], [0.0, -1.0, 36.0]])
    np.testing.assert_allclose(hl(x1, lagrange=lam, obj_factor=0.0).toarray(), want1,
                               rtol=1e-14)


def test_the_column_search_of_a_hessian_is_weighed_against_the_star_colouring():
    """Found from outside: a ridge logistic regression's Hessian (a sparse design matrix)
    ran the column colouring's mandatory DSATUR pass (5 s at 10⁴ unknowns, 3,386 colours)
    though the star colouring had 1,126: the pass is weighed against what it could save
    below the star colouring's count, as the one-sided searches weigh theirs."""
    import scipy.sparse as sp

    from sparsejac.coloring.budget import Budget
    from sparsejac.coloring.symmetric import AdjacencyGraph, best_symmetric
    from sparsejac.pattern import as_pattern

    rng = np.random.default_rng(3)
    n, d = 100_000, 10_000
    X = sp.csr_array((np.ones(n * 5), (np.repeat(np.arange(n), 5), rng.integers(0, d, n * 5))),
                     shape=(n, d))
    pattern = as_pattern((X.T @ X + sp.eye_array(d)) != 0)
    s = best_symmetric(AdjacencyGraph(pattern), "star", np.random.default_rng(0), Budget(0.0))
    names = [c.name for c in s.candidates]
    assert "column:dsatur" not in names
    assert s.name == "natural"
