"""What `make demo` runs: a colouring report on a bundled pattern, then the main job.

The bundled matrix, examples/data/brusselator_2d_32.mtx, is the Jacobian sparsity pattern of
the 2D Brusselator reaction-diffusion system on a periodic 32×32 grid (two species, u and v,
so 2048 unknowns; the pattern does not depend on the state):

    du/dt = 1 + u²v - 4.4 u + alpha * laplacian(u)
    dv/dt = 3.4 u - u²v     + alpha * laplacian(v)

Row (s, i, j) has nonzeros at the 5-point stencil of species s around (i, j) and at the
other species at (i, j): six per row. A finite-difference or AD Jacobian therefore needs 2048
passes without colouring and about six with it.

Part 1 prints ``sparsejac report`` for that file. Part 2 is the main job: the same system
written as a plain numpy right-hand side (:func:`brusselator_rhs`) gets its pattern detected
(it equals the bundled file), an exact prepared Jacobian (compared with central finite
differences and timed against scipy's ``approx_derivative`` with the same pattern), and a
stiff ``solve_ivp(method="BDF")`` run with ``jac=`` next to the ``jac_sparsity=`` run.

    python examples/demo.py                # what `make demo` does
    python examples/demo.py --regenerate   # rewrite the .mtx file from brusselator_pattern()

SPARSEJAC_EXAMPLE_SMALL=1 shrinks the time budget of order "best" and the integration (used
by the smoke tests).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.integrate import solve_ivp
from scipy.optimize._numdiff import approx_derivative

import sparsejac
from sparsejac.cli import main

DATA = Path(__file__).resolve().parent / "data" / "brusselator_2d_32.mtx"
N = 32


def brusselator_pattern(n: int = N) -> sp.csr_array:
    """Jacobian pattern of the periodic 2D Brusselator on an n×n grid, unknowns [u, v]."""
    size = n * n
    idx = np.arange(size).reshape(n, n)
    rows, cols = [], []
    for shift in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
        nb = np.roll(idx, shift, axis=(0, 1)).ravel()
        for s in (0, size):  # the diffusion stencil couples a species with itself
            rows.append(idx.ravel() + s)
            cols.append(nb + s)
    rows += [idx.ravel(), idx.ravel() + size]  # the reaction couples u and v at one point
    cols += [idx.ravel() + size, idx.ravel()]
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_array((np.ones(r.size), (r, c)), shape=(2 * size, 2 * size))


def brusselator_rhs(n: int = N):
    """The right-hand side ``rhs(t, y)`` of the system above, unknowns ``y = [u, v]``."""
    alpha = 0.02 * (n - 1) ** 2  # diffusion 0.02 on the unit square

    def laplacian(a):
        return np.roll(a, 1, 0) + np.roll(a, -1, 0) + np.roll(a, 1, 1) + np.roll(a, -1, 1) - 4 * a

    def rhs(t, y):
        u = y[: n * n].reshape(n, n)
        v = y[n * n:].reshape(n, n)
        du = 1.0 + u * u * v - 4.4 * u + alpha * laplacian(u)
        dv = 3.4 * u - u * u * v + alpha * laplacian(v)
        return np.concatenate([du.ravel(), dv.ravel()])

    grid = np.linspace(0.0, 1.0, n)
    x, yy = np.meshgrid(grid, grid, indexing="ij")
    y0 = np.concatenate([(1.0 + 0.5 * np.sin(2 * np.pi * x)).ravel(),
                         (3.0 + 0.5 * np.cos(2 * np.pi * yy)).ravel()])
    return rhs, y0


def best_time(fn, repeats: int = 10) -> float:
    """Minimum wall time of ``repeats`` calls."""
    t = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main_job(small: bool) -> None:
    """Detection, an exact prepared Jacobian, and a stiff solve with it."""
    rhs, y0 = brusselator_rhs()
    print("\n--- the main job: an exact sparse Jacobian of plain numpy code ---\n")
    pattern = sparsejac.jacobian_sparsity(lambda y: rhs(0.0, y), y0)
    bundled = sp.csr_array(scipy.io.mmread(DATA))
    same = (pattern != (bundled != 0)).nnz == 0
    print(f"detected pattern: {pattern.shape[0]} x {pattern.shape[1]}, {pattern.nnz} nonzeros; "
          f"equal to {DATA.name}: {same}")
    if not same:
        raise SystemExit("the detected pattern differs from the bundled one")

    t0 = time.perf_counter()
    jac = sparsejac.ode_jacobian(rhs, 0.0, y0)
    prep = time.perf_counter() - t0
    print(f"prepared in {prep:.2f} s: {jac.prepared!r}")
    J = jac(0.0, y0)
    fd = approx_derivative(lambda y: rhs(0.0, y), y0, method="3-point")
    print(f"max |J - J_central_fd| / max |J| = {np.abs(J.toarray() - fd).max() / abs(J).max():.1e}"
          " (finite differences are approximate; J is exact)")
    groups = sparsejac.color(pattern, "column").column_groups
    t_j = best_time(lambda: jac(0.0, y0))
    t_fd = best_time(lambda: approx_derivative(lambda y: rhs(0.0, y), y0,
                                               sparsity=(pattern, groups)), 5)
    t_f = best_time(lambda: rhs(0.0, y0))
    print(f"one Jacobian: {t_j * 1e3:.2f} ms (f: {t_f * 1e3:.3f} ms); scipy approx_derivative "
          f"with the same pattern and groups: {t_fd * 1e3:.2f} ms ({t_fd / t_j:.1f}x slower)")

    t_end = 2.0 if small else 10.0
    print(f"\nsolve_ivp(method='BDF') on [0, {t_end:g}]:")
    runs: dict[str, tuple] = {}
    setups = (("jac=sparsejac", {"jac": jac}), ("jac_sparsity=", {"jac_sparsity": pattern}))
    for _ in range(1 if small else 2):  # interleaved; the faster of two runs each
        for name, extra in setups:
            calls = [0]

            def counted(t, y, calls=calls):
                calls[0] += 1
                return rhs(t, y)

            t0 = time.perf_counter()
            sol = solve_ivp(counted, (0.0, t_end), y0, method="BDF", rtol=1e-6, atol=1e-8,
                            **extra)
            elapsed = time.perf_counter() - t0
            if name not in runs or elapsed < runs[name][2]:
                runs[name] = (sol, calls[0], elapsed)
    for name, (sol, n_calls, elapsed) in runs.items():
        print(f"  {name:<14} f calls {n_calls:>5}  njev {sol.njev:>3}  nlu {sol.nlu:>4}  "
              f"time {elapsed:.2f} s  success {sol.success}")
    a, b = (r[0] for r in runs.values())
    print(f"  max difference of the final states: {np.abs(a.y[:, -1] - b.y[:, -1]).max():.1e}")


def regenerate() -> None:
    """Write the bundled pattern file."""
    scipy.io.mmwrite(
        DATA,
        sp.coo_array(brusselator_pattern()),
        comment=f" Jacobian pattern of the periodic 2D Brusselator, {N}x{N} grid, unknowns [u, v]"
        " (generated by examples/demo.py --regenerate)",
        field="pattern",
    )


if __name__ == "__main__":
    if "--regenerate" in sys.argv[1:]:
        regenerate()
        print(f"wrote {DATA}")
        sys.exit(0)
    small = bool(os.environ.get("SPARSEJAC_EXAMPLE_SMALL"))
    argv = ["report", str(DATA), "--order", "all"]
    if small:
        argv += ["--time-budget", "0.2"]
    status = main(argv)
    if status:
        sys.exit(status)
    main_job(small)
