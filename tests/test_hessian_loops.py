"""Hessians of code written as loops over elements: exact, and a gradient program that grows
with the loop, not with the loop times the vector it reads or writes.

The recorded reverse sweep pulls each read ``x[i]`` back to a cotangent of the whole of
``x``, and each write ``out[k] = ...`` past a cotangent of the whole buffer. Summed node by
node, K reads of an n-vector recorded K nodes of size n (Rosenbrock as a loop at n = 2,000:
9.5 s to prepare, 503 ms a Hessian). Those contributions are now gathered and recorded as
one linear map where the cotangent is read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad.second_order import gradient_program


def rosen_loop(x: Any) -> Any:
    s = 0.0
    for i in range(x.size - 1):
        s = s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def rosen_hessian(x: np.ndarray) -> np.ndarray:
    """Hand-derived Hessian of the chained Rosenbrock function."""
    n = x.size
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] -= 400.0 * x[i]
        h[i + 1, i] -= 400.0 * x[i]
    return h


def _elements(f: Any, x: np.ndarray) -> int:
    """The entries of every node of ``f``'s recorded gradient program, summed."""
    prog = gradient_program(f, x)
    return sum(int(node.out.size) for node in prog.nodes)


def test_a_loop_of_element_reads_has_a_linear_gradient_program(
        rng: np.random.Generator) -> None:
    """Rosenbrock written as a scalar loop: the Hessian equals the hand-derived one, and
    doubling n doubles the gradient program (it quadrupled: every read's cotangent was a
    vector of n)."""
    small, large = (_elements(rosen_loop, np.linspace(-1.0, 1.2, n)) for n in (100, 200))
    assert large < 2.2 * small
    x0 = rng.uniform(-1.0, 1.5, 40)
    hess = sparsejac.SparseHessian(rosen_loop, x0)
    for x in (x0, rng.uniform(-2.0, 2.0, 40)):
        np.testing.assert_allclose(hess(x).toarray(), rosen_hessian(x), rtol=1e-13,
                                   atol=1e-10)
    np.testing.assert_allclose(sparsejac.hessian(rosen_loop, x0).toarray(),
                               rosen_hessian(x0), rtol=1e-13, atol=1e-10)


def _defects(K: int) -> Any:
    """Trapezoidal defects of a pendulum, written interval by interval into one buffer."""
    h = 3.0 / K

    def c(z: Any) -> Any:
        th, om, u = z[:K + 1], z[K + 1:2 * K + 2], z[2 * K + 2:]
        out = np.zeros(2 * K)
        for k in range(K):
            out[k] = th[k + 1] - th[k] - 0.5 * h * (om[k + 1] + om[k])
            out[K + k] = om[k + 1] - om[k] - 0.5 * h * ((-np.sin(th[k + 1]) + u[k + 1])
                                                        + (-np.sin(th[k]) + u[k]))
        return out
    return c


def _defects_hessian(K: int, z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Hand-derived Hessian of ``v @ c(z)``: only the sines have second derivatives."""
    h = 3.0 / K
    hess = np.zeros((z.size, z.size))
    for k in range(K):
        for j in (k, k + 1):  # d2/dth_j2 of 0.5 h sin(th_j) v[K + k]
            hess[j, j] -= 0.5 * h * np.sin(z[j]) * v[K + k]
    return hess


@pytest.mark.parametrize("K", [6, 20])
def test_a_loop_writing_into_a_buffer_has_a_linear_constraint_hessian(
        K: int, rng: np.random.Generator) -> None:
    """The constraint Hessian of collocation defects written into a buffer element by
    element, with multipliers that change (traced): exact, and its tape grows with K (it
    held 2·10⁷ slots at K = 1,000, the cotangent of the whole buffer past every write)."""
    c = _defects(K)
    z0 = rng.uniform(-1.0, 1.0, 3 * K + 3)
    ch = sparsejac.constraint_hessian(c, z0)
    for z, v in ((z0, rng.uniform(-1, 1, 2 * K)), (z0[::-1].copy(), rng.uniform(-1, 1, 2 * K))):
        np.testing.assert_allclose(ch(z, v).toarray(), _defects_hessian(K, z, v),
                                   rtol=1e-13, atol=1e-14)


def test_the_buffer_loop_gradient_grows_linearly() -> None:
    """Doubling K about doubles the Lagrangian's gradient program (it quadrupled)."""
    sizes = []
    for K in (40, 80):
        c = _defects(K)
        v = np.linspace(0.5, 1.5, 2 * K)

        def lagrangian(z: Any, c: Any = c, v: Any = v) -> Any:
            return v @ c(z)

        sizes.append(_elements(lagrangian, np.linspace(0.0, 1.0, 3 * K + 3)))
    assert sizes[1] < 2.2 * sizes[0]
