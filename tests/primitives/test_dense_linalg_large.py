"""Large dense matrix functions go by products, not by their local Jacobian.

sparsejac/primitives/dense_products.py: above a block size a matrix function of a traced
matrix states no local Jacobian; its JVP is its tangent formula, its VJP its cotangent formula
(or the tangent formula on chunks of unit directions), and a recorded gradient (second order)
pulls through the cotangent formula. Checked here: every such rule against the block path on
small matrices (the limits lowered to 0), and a Gaussian-process likelihood at m = 60 against
its closed-form gradient and the complex step of it, with a peak-memory bound that the dense
3,600 × 3,600 block would break.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.linalg as sla

import sparsejac
from sparsejac.primitives import dense_products as dp
from sparsejac.tracing import trace
from tests.primitives.util import rand


def shift(x: Any, c: float = 3.0) -> Any:
    return x + c * np.eye(x.shape[-1])


def spd(x: Any) -> Any:
    return x @ x.T + 4.0 * np.eye(x.shape[-1])


FUNCTIONS = [
    pytest.param(lambda x: np.linalg.solve(shift(x), x[:, 0] ** 2), id="solve_both"),
    pytest.param(lambda x: np.linalg.solve(shift(x[None] * [[[1.0]], [[2.0]]]), x[:, :2]),
                 id="solve_batched"),
    pytest.param(lambda x: sla.solve(shift(x), x[:, :2], transposed=True), id="solve_transposed"),
    pytest.param(lambda x: sla.solve(shift(x), x[:, :2], assume_a="lower triangular"),
                 id="solve_lower_triangular"),
    pytest.param(lambda x: sla.solve(shift(x), x[:, 1], assume_a="upper triangular",
                                     transposed=True), id="solve_upper_transposed"),
    pytest.param(lambda x: np.linalg.inv(shift(x)), id="inv"),
    pytest.param(lambda x: np.linalg.det(x), id="det"),
    pytest.param(lambda x: np.linalg.slogdet(shift(x))[1], id="slogdet"),
    pytest.param(lambda x: np.linalg.cholesky(spd(x)), id="cholesky"),
    pytest.param(lambda x: np.linalg.cholesky(shift(x) + 1.0, upper=True), id="cholesky_upper"),
    pytest.param(lambda x: np.linalg.cholesky(shift(x) + x.T), id="cholesky_one_triangle"),
    pytest.param(lambda x: np.linalg.eigh(spd(x))[0], id="eigvalsh_chunked_vjp"),
    pytest.param(lambda x: np.linalg.qr(shift(x))[1], id="qr_r_chunked_vjp"),
]


@pytest.fixture
def by_products(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    def force() -> None:
        monkeypatch.setattr(dp, "BLOCK_LIMIT", 0)
        monkeypatch.setattr(dp, "SECOND_ORDER_LIMIT", 0)
    return force


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_products_match_the_local_jacobian(f: Any, mode: str,
                                           by_products: Callable[[], None]) -> None:
    x = rand((4, 4), seed=3)
    block = sparsejac.jacobian(f, x, mode=mode)
    by_products()
    prog = trace(f, x)
    assert any(getattr(n.prim, "by_products", None) and n.prim.by_products(n)
               for n in prog.nodes)
    prod = sparsejac.jacobian(f, x, mode=mode)
    # the pattern is dense within a block (a superset); the values agree to rounding
    assert set(zip(*block.nonzero(), strict=True)) <= set(zip(*prod.nonzero(), strict=True))
    np.testing.assert_allclose(prod.toarray(), block.toarray(), rtol=1e-11, atol=1e-12)
    jp = sparsejac.SparseJacobian(f, x, mode=mode)  # the prepared engine: an opaque node
    x2 = rand((4, 4), seed=4)
    np.testing.assert_allclose(jp(x2).toarray(), _block(f, x2, mode), rtol=1e-11, atol=1e-12)


def _block(f: Any, x: np.ndarray, mode: str) -> np.ndarray:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dp, "BLOCK_LIMIT", 1 << 20)
        return sparsejac.jacobian(f, x, mode=mode).toarray()


SCALARS = [
    pytest.param(lambda x: np.sum(np.linalg.solve(shift(x), x[:, 0]) ** 2), id="solve"),
    pytest.param(lambda x: np.sum(np.linalg.inv(shift(x)) * x), id="inv"),
    pytest.param(lambda x: np.linalg.det(x) ** 2, id="det"),
    pytest.param(lambda x: np.linalg.slogdet(spd(x))[1], id="slogdet"),
    pytest.param(lambda x: np.sum(np.log(np.diag(np.linalg.cholesky(spd(x))))), id="cholesky"),
    pytest.param(lambda x: np.sum(np.linalg.cholesky(spd(x), upper=True) ** 3),
                 id="cholesky_upper"),
]


@pytest.mark.parametrize("f", SCALARS)
def test_hessians_through_the_cotangent_formulas(f: Any,
                                                 by_products: Callable[[], None]) -> None:
    x = rand((3, 3), seed=5)
    block = sparsejac.hessian(f, x).toarray()
    by_products()
    np.testing.assert_allclose(sparsejac.hessian(f, x).toarray(), block,
                               rtol=1e-10, atol=1e-11)


def test_second_order_without_a_cotangent_formula_names_the_call(
        by_products: Callable[[], None]) -> None:
    by_products()
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="is too large here"):
        sparsejac.hessian(lambda x: np.sum(np.linalg.qr(shift(x))[1] ** 2), rand((3, 3)))


# -- a Gaussian process at m = 60 ----------------------------------------------------------

M = 60
_PTS = np.sort(np.random.default_rng(0).uniform(0.0, 10.0, M))
_D = np.abs(_PTS[:, None] - _PTS[None, :])
_Y = np.sin(_PTS) + 0.1 * np.random.default_rng(1).standard_normal(M)
THETA = np.array([1.3, 2.0, 0.3])


def _kernel(t: Any) -> Any:
    return t[0] * np.exp(-_D / t[1]) + t[2] * np.eye(M)


def nll_cholesky(t: Any) -> Any:
    low = np.linalg.cholesky(_kernel(t))
    a = np.linalg.solve(low, _Y)
    return np.sum(np.log(np.diag(low))) + 0.5 * np.sum(a ** 2)


def nll_solve(t: Any) -> Any:
    k = _kernel(t)
    return 0.5 * _Y @ np.linalg.solve(k, _Y) + 0.5 * np.linalg.slogdet(k)[1]


def gradient_closed_form(t: Any) -> Any:
    """``0.5 tr((K⁻¹ − α αᵀ) dK/dθ_i)``, ``α = K⁻¹ y`` (analytic: complex step works)."""
    k = _kernel(t)
    kinv = np.linalg.inv(k)
    alpha = kinv @ _Y
    e = np.exp(-_D / t[1])
    dk = [e, t[0] * e * _D / t[1] ** 2, np.eye(M)]
    return np.array([0.5 * np.sum((kinv - np.outer(alpha, alpha)) * d) for d in dk])


def hessian_complex_step(t: np.ndarray, h: float = 1e-30) -> np.ndarray:
    cols = []
    for i in range(t.size):
        e = t.astype(complex)
        e[i] += 1j * h
        cols.append(np.imag(gradient_closed_form(e)) / h)
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("nll", [nll_cholesky, nll_solve], ids=["cholesky", "solve"])
def test_gaussian_process_gradient_and_hessian(nll: Any) -> None:
    assert np.isclose(nll(THETA), nll(THETA))  # plain numpy runs
    tracemalloc.start()
    try:
        g = sparsejac.jacobian(nll, THETA).toarray().ravel()
        peak_gradient = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        h = sparsejac.hessian(nll, THETA).toarray()
        peak_hessian = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(g, gradient_closed_form(THETA), rtol=1e-11)
    np.testing.assert_allclose(h, hessian_complex_step(THETA), rtol=1e-9, atol=1e-12)
    # the local Jacobian of cholesky (or of an inverse in the gradient program) would be a
    # 3,600 x 3,600 block: 104 MB of values alone, several GB recorded in a gradient program
    assert peak_gradient < 30e6, f"gradient: peak {peak_gradient / 1e6:.0f} MB"
    # (the Hessian still preaccumulates the gradient program's products of two traced
    # matrices, m³ entries each: docs/limitations.md)
    assert peak_hessian < 600e6, f"Hessian: peak {peak_hessian / 1e6:.0f} MB"


def test_gaussian_process_prepared_in_every_mode() -> None:
    want = gradient_closed_form(THETA)
    for mode in ("forward", "reverse", "mixed"):
        jp = sparsejac.SparseJacobian(nll_cholesky, THETA, mode=mode)
        np.testing.assert_allclose(jp(THETA).toarray().ravel(), want, rtol=1e-11)
    prog = trace(nll_cholesky, THETA)
    chol = next(n for n in prog.nodes if n.prim.name == "cholesky")
    assert chol.prim.by_products(chol)
    assert chol.prim.linearize(chol) is None
