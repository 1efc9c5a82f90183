"""A constrained minimal surface with ``scipy.optimize.minimize(method="trust-constr")``.

The surface ``u`` over the unit square has fixed boundary values (a saddle, ``x² - y²``) and
minimal area, subject to a nonlinear constraint on its mean square height,
``h² Σ u² <= c``, which pushes it below the free minimal surface. On an ``N × N`` interior
grid there are ``n = N²`` unknowns (10,000 by default).

sparsejac supplies everything the solver asks for from the numpy code below:

* ``jac=`` and ``hess=``: the gradient and the sparse Hessian of the area
  (:class:`sparsejac.SparseHessian`, star colouring, forward-over-reverse products);
* the constraint's ``jac=`` (:class:`sparsejac.SparseJacobian`) and ``hess=``
  (:func:`sparsejac.constraint_hessian`, ``hess(x, v)`` = the Hessian of ``v · c(x)``).

The same solve is then run with the Hessians replaced by finite differences of the exact
gradients, with the same pattern and column groups (scipy's ``approx_derivative``, which
is what a careful user would do without sparsejac): approximate, and slower per Hessian.

Run ``python examples/minimal_surface_trust_constr.py`` (``SPARSEJAC_EXAMPLE_SMALL=1``:
a 20 × 20 grid).
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import NonlinearConstraint, minimize
from scipy.optimize._numdiff import approx_derivative, group_columns

import sparsejac

SMALL = os.environ.get("SPARSEJAC_EXAMPLE_SMALL") == "1"
N = 20 if SMALL else 100
H = 1.0 / (N + 1)
_S = np.linspace(0.0, 1.0, N + 2)
_X, _Y = np.meshgrid(_S, _S, indexing="ij")
#: the boundary values on the (N+2) × (N+2) grid, zero inside
BOUNDARY = np.where((_X == 0) | (_X == 1) | (_Y == 0) | (_Y == 1), _X**2 - _Y**2, 0.0)
MEAN_SQUARE_MAX = 0.02


def area(u):
    """Area of the surface: one term per grid cell (forward differences)."""
    full = np.pad(u.reshape(N, N), 1) + BOUNDARY
    dx = (full[1:, :-1] - full[:-1, :-1]) / H
    dy = (full[:-1, 1:] - full[:-1, :-1]) / H
    return H**2 * np.sum(np.sqrt(1.0 + dx**2 + dy**2))


def mean_square(u):
    """The constraint: ``h² Σ u²`` (one value)."""
    return np.array([H**2 * np.sum(u**2)])


def solve(jac, hess, cjac, chess, x0):
    con = NonlinearConstraint(mean_square, -np.inf, MEAN_SQUARE_MAX, jac=cjac, hess=chess)
    return minimize(area, x0, jac=jac, hess=hess, constraints=[con], method="trust-constr",
                    options={"gtol": 1e-8, "xtol": 1e-10, "maxiter": 400})


def main() -> None:
    n = N * N
    x0 = np.zeros(n)

    t0 = time.perf_counter()
    hess = sparsejac.SparseHessian(area, x0)
    cjac = sparsejac.SparseJacobian(mean_square, x0)
    chess = sparsejac.constraint_hessian(mean_square, x0)
    prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = solve(hess.gradient, hess, cjac, chess, x0)
    t_sj = time.perf_counter() - t0
    how = ("assembled directly (no products)" if hess.stats()["path"] == "direct" else
           f"{hess.n_products} Hessian-vector products ({hess.coloring.method} colouring)")
    print(f"minimal surface, {N} x {N} grid: n = {n:,} unknowns, Hessian nnz = "
          f"{hess.sparsity.nnz:,}, {how}")
    print(f"sparsejac jac/hess: {res.nit} iterations, area {res.fun:.6f}, constraint "
          f"{mean_square(res.x)[0]:.6f} <= {MEAN_SQUARE_MAX}, status {res.status}; "
          f"preparation {prep:.2f} s + solve {t_sj:.2f} s")

    # finite differences of the exact gradients, same pattern and the same kind of groups
    pattern = sp.csr_array(hess.sparsity, dtype=np.int8)
    groups = group_columns(pattern)

    def fd_hess(x):
        return sp.csr_array(approx_derivative(hess.gradient, x, sparsity=(pattern, groups)))

    def fd_chess(x, v):
        def g(z):
            return 2.0 * H**2 * v[0] * z

        return sp.csr_array(approx_derivative(g, x, sparsity=(pattern, groups)))

    t0 = time.perf_counter()
    res_fd = solve(hess.gradient, fd_hess, cjac, fd_chess, x0)
    t_fd = time.perf_counter() - t0
    print(f"finite-difference Hessians ({groups.max() + 1} groups, approximate): {res_fd.nit} "
          f"iterations, area {res_fd.fun:.6f}, status {res_fd.status}; solve {t_fd:.2f} s")
    print(f"time to the answer: sparsejac {prep + t_sj:.2f} s, finite differences "
          f"{t_fd:.2f} s")
    assert res.status in (1, 2), res.message
    assert mean_square(res.x)[0] <= MEAN_SQUARE_MAX * (1 + 1e-6)


if __name__ == "__main__":
    main()
