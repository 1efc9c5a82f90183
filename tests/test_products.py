"""``sparsejac.from_products``: products computed elsewhere, coloured and decompressed here.

Oracles: hand-written products of functions whose Jacobians are known, dense products
``J @ S`` computed from the true Jacobian, and sparsejac's own traced Jacobian.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac


def arrow(x: Any) -> Any:
    """A tridiagonal residual plus a dense last row and a dense last column."""
    r = np.sin(x) * x
    r[1:] += x[:-1] ** 2
    r = r + 0.5 * x[-1]
    return np.append(r, np.sum(np.cos(x)))


def arrow_jacobian(x: np.ndarray) -> np.ndarray:
    n = x.size
    j = np.zeros((n + 1, n))
    j[:n] = np.diag(np.cos(x) * x + np.sin(x))
    j[np.arange(1, n), np.arange(n - 1)] += 2 * x[:-1]
    j[:n, -1] += 0.5
    j[n] = -np.sin(x)
    return j


def products(jac_fn: Any) -> tuple[Any, Any, list[int]]:
    calls: list[int] = []

    def jvp(x: np.ndarray, S: np.ndarray, *args: Any) -> np.ndarray:
        assert not S.flags.writeable
        calls.append(S.shape[1])
        return jac_fn(x, *args) @ S

    def vjp(x: np.ndarray, W: np.ndarray, *args: Any) -> np.ndarray:
        calls.append(W.shape[0])
        return W @ jac_fn(x, *args)

    return jvp, vjp, calls


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse", "mixed"])
def test_every_mode_recovers_the_jacobian(mode: str) -> None:
    n = 30
    x0 = np.linspace(0.2, 1.2, n)
    pattern = sparsejac.jacobian_sparsity(arrow, x0)
    jvp, vjp, calls = products(arrow_jacobian)
    jac = sparsejac.from_products(jvp=jvp, vjp=vjp, sparsity=pattern, mode=mode)
    x = np.linspace(-1.0, 0.7, n)
    np.testing.assert_allclose(jac(x).toarray(), arrow_jacobian(x), rtol=1e-14, atol=1e-14)
    assert sum(calls) == jac.n_products
    if mode == "auto":
        assert jac.mode == "mixed"  # dense row and column: only mixed is cheap
        assert jac.n_products <= 6


def test_one_sided_products_and_args() -> None:
    """Only vjp: reverse mode; extra arguments reach the products."""
    def jac_fn(x: np.ndarray, scale: float) -> np.ndarray:
        return scale * np.diag(2 * x) + np.eye(x.size, k=1)

    _, vjp, _ = products(jac_fn)
    pattern = sp.csr_array(jac_fn(np.ones(6), 1.0) != 0)
    jac = sparsejac.from_products(vjp=vjp, sparsity=pattern)
    assert jac.mode == "reverse"
    x = np.arange(6.0)
    np.testing.assert_allclose(jac(x, 3.0).toarray(), jac_fn(x, 3.0))
    csc = jac.evaluate(x, params=(3.0,), format="csc")
    assert csc.format == "csc"
    np.testing.assert_allclose(csc.toarray(), jac_fn(x, 3.0))


def test_refusals_name_the_argument() -> None:
    pattern = sp.eye_array(4, format="csr")
    with pytest.raises(ValueError, match=r"needs `jvp` \(forward products\), `vjp`"):
        sparsejac.from_products(sparsity=pattern)
    with pytest.raises(ValueError, match=r"mode='forward' needs `jvp`"):
        sparsejac.from_products(vjp=lambda x, w: w, sparsity=pattern, mode="forward")
    with pytest.raises(TypeError, match="`jvp` must be callable"):
        sparsejac.from_products(jvp=3, sparsity=pattern)
    jac = sparsejac.from_products(jvp=lambda x, s: np.ones((4, 9)), sparsity=pattern)
    with pytest.raises(ValueError, match=r"`jvp` must return J @ S of shape \(4, 1\)"):
        jac(np.ones(4))
    with pytest.raises(ValueError, match="`x` must have 4 elements"):
        sparsejac.from_products(jvp=lambda x, s: s, sparsity=pattern)(np.ones(5))
