"""Newton–Krylov on a 2-D nonlinear PDE with exact matrix-free Jacobian products.

The Bratu problem ``Δu + λ exp(u) = 0`` on the unit square (zero boundary values, λ = 6),
5-point finite differences on an N × N grid (N = 320: n = 102,400 unknowns). Three solvers:

1. ``scipy.optimize.newton_krylov`` with its defaults (LGMRES, finite-difference
   Jacobian-vector products ``(F(u + εv) − F(u)) / ε``);
2. the same inexact Newton loop twice, LGMRES on a ``LinearOperator``: once with those
   finite-difference products, once with ``SparseJacobian.linear_operator(u)`` (exact JVPs:
   one sweep of the prepared program per product, no trace and no call of F).

and ``newton_krylov`` once more with ``sparsejac.KrylovMethod`` (its inner LGMRES on the
exact operator). It prints the time of each side by side, and the cost of one product.

    python examples/newton_krylov.py            # N = 320 (about a minute on one core)
    python examples/newton_krylov.py --quick    # N = 40 (as the test suite runs it)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np
import scipy.optimize
from scipy.sparse.linalg import LinearOperator, lgmres

import sparsejac

QUICK = "--quick" in sys.argv or os.environ.get("SPARSEJAC_EXAMPLE_SMALL") == "1"
N = 40 if QUICK else 320
H = 1.0 / (N + 1)
LAM = 6.0
MAXITER = 30  # LGMRES restarts (of 30 products each) per Newton step
F_TOL = 1e-7 * H ** 2 * LAM  # max |F(u)| at the solution: 1e-7 times max |F(0)|


def bratu(u: np.ndarray) -> np.ndarray:
    """The residual ``h² (Δu + λ exp(u))`` on the grid, flattened (scaled to O(h²))."""
    U = u.reshape(N, N)
    P = np.pad(U, 1)
    lap = P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * U
    return (lap + H ** 2 * LAM * np.exp(U)).ravel()


def newton(operator: Callable[[np.ndarray], tuple[LinearOperator, np.ndarray]],
           u0: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Inexact Newton: LGMRES to a relative 1e-4 per step (at most ``MAXITER`` restarts).

    Returns u, the Newton steps and the Jacobian-vector products.
    """
    u = u0.copy()
    steps = products = 0
    while True:
        A, r = operator(u)
        if np.abs(r).max() < F_TOL or steps == 30:
            return u, steps, products
        counted = LinearOperator(A.shape, dtype=float, matvec=A.matvec)
        count = [0]

        def matvec(v: np.ndarray, a: LinearOperator = counted, c: list[int] = count
                   ) -> np.ndarray:
            c[0] += 1
            return np.asarray(a.matvec(v))

        du, _ = lgmres(LinearOperator(A.shape, dtype=float, matvec=matvec), -r,
                       rtol=1e-4, atol=0.0, maxiter=MAXITER)
        u += du
        steps += 1
        products += count[0]


def fd_operator(u: np.ndarray) -> tuple[LinearOperator, np.ndarray]:
    """Finite-difference products, as scipy's KrylovJacobian makes them."""
    f0 = bratu(u)
    omega = np.sqrt(np.finfo(float).eps) * max(1.0, np.abs(u).max()) / max(1.0, np.abs(f0).max())

    def matvec(v: np.ndarray) -> np.ndarray:
        nv = np.linalg.norm(v)
        if nv == 0:
            return 0 * v
        sc = omega / nv
        return (bratu(u + sc * v) - f0) / sc

    return LinearOperator((u.size, u.size), dtype=float, matvec=matvec), f0


def per_call(fn: Callable[[], object], repeats: int = 20) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t) / repeats


def main() -> None:
    n = N * N
    u0 = np.zeros(n)
    print(f"Bratu problem, {N} x {N} grid: n = {n:,} unknowns, lambda = {LAM}, "
          f"stop at max|F| < {F_TOL:.1e}")

    t = time.perf_counter()
    jac = sparsejac.SparseJacobian(bratu, u0)
    t_prep = time.perf_counter() - t
    print(f"{jac}\npreparation: {t_prep:.2f} s (once)")

    def exact_operator(u: np.ndarray) -> tuple[LinearOperator, np.ndarray]:
        A = jac.linear_operator(u)
        return A, A.value

    rng = np.random.default_rng(0)
    x, v = rng.uniform(0, 1, n), rng.normal(size=n)
    A = jac.linear_operator(x)
    fd_A, _ = fd_operator(x)
    print("\none product J(x) v:")
    print(f"  f(x) itself                     {per_call(lambda: bratu(x)) * 1e3:8.3f} ms")
    print(f"  finite differences              {per_call(lambda: fd_A @ v) * 1e3:8.3f} ms")
    print(f"  sparsejac linear_operator       {per_call(lambda: A @ v) * 1e3:8.3f} ms "
          f"(+ {per_call(lambda: jac.linear_operator(x)) * 1e3:.3f} ms per point)")
    t_ad = per_call(lambda: sparsejac.ad.jvp(bratu, x, v), 3)
    print(f"  sparsejac.ad.jvp (traces again) {t_ad * 1e3:8.3f} ms")
    fd_err = np.abs(fd_A @ v - A @ v).max() / np.abs(A @ v).max()
    print(f"  relative error of the finite-difference product: {fd_err:.1e}")

    rows = []
    t = time.perf_counter()
    sol = scipy.optimize.newton_krylov(bratu, u0, f_tol=F_TOL)
    rows.append(("scipy newton_krylov (FD products)", time.perf_counter() - t, "-", "-",
                 np.abs(bratu(sol)).max()))
    km = sparsejac.KrylovMethod(jac, solver="lgmres")
    t = time.perf_counter()
    sol = scipy.optimize.newton_krylov(bratu, u0, f_tol=F_TOL, **km.jac_options)
    rows.append(("scipy newton_krylov (sparsejac)", time.perf_counter() - t, "-",
                 str(km.n_products), np.abs(bratu(sol)).max()))
    for name, op in (("Newton-LGMRES, FD products", fd_operator),
                     ("Newton-LGMRES, sparsejac operator", exact_operator)):
        t = time.perf_counter()
        u, steps, products = newton(op, u0)
        rows.append((name, time.perf_counter() - t, str(steps), str(products),
                     np.abs(bratu(u)).max()))
    print(f"\n{'solver':36s} {'time':>8s} {'steps':>6s} {'JVPs':>6s} {'max|F|':>9s}")
    for name, secs, steps_, prods, res in rows:
        print(f"{name:36s} {secs:7.2f}s {steps_:>6s} {prods:>6s} {res:9.1e}")
    if not all(r[4] < F_TOL for r in rows):
        print(f"(a solver stopped above max|F| = {F_TOL:.1e})")


if __name__ == "__main__":
    main()
