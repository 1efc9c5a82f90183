"""The 2D Brusselator with solve_ivp(method="BDF"): exact sparsejac Jacobian vs finite differences.

The periodic 2D Brusselator reaction-diffusion system on an N×N grid of the unit square, in
the definition used by the SciML benchmarks and by asdex (A = 3.4, B = 1, alpha = 10 / dx²,
two species u and v per grid point, a forcing of 5 on the disc of radius 0.1 around
(0.3, 0.6) switched on for t ≥ 1.1):

    du/dt = alpha Δu + B + u²v - (A + 1) u + f(x, y, t)
    dv/dt = alpha Δv + A u - u²v

The right-hand side is plain numpy (``np.roll`` for the periodic Laplacian, ``np.where`` on
``t`` for the forcing). It is integrated three ways:

1. ``jac=sparsejac.ode_jacobian(rhs, t0, y0)``: exact Jacobians, 2N² × 2N², evaluated by a
   handful of compressed forward products;
2. ``jac_sparsity=``: scipy's own compressed finite differences with the same pattern;
3. dense finite differences (no ``jac``, no ``jac_sparsity``), only for small N: each Jacobian
   costs 2N² evaluations of f and each LU factorisation is dense.

BDF reuses its Jacobian and factorises ``I - h γ J`` with a sparse LU in runs 1 and 2, so the
LU dominates both and the gain of exact Jacobians shows as fewer f evaluations (the finite
differences spend one f evaluation per colour per Jacobian); run 3 shows what the sparsity
buys in the first place.

    python examples/brusselator_bdf.py            # N = 64 (n = 8,192)
    python examples/brusselator_bdf.py 32         # another N
    SPARSEJAC_EXAMPLE_SMALL=1 python examples/brusselator_bdf.py   # N = 8, short span (smoke test)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy.integrate import solve_ivp

import sparsejac

A, B, ALPHA = 3.4, 1.0, 10.0
#: Largest state size for which the dense finite-difference run is attempted (N = 32: about
#: half a minute). At n = 8,192 (N = 64) each Jacobian costs 8,192 f evaluations and each of
#: the ~100 LU factorisations is dense (8,192², ~3.7e11 flops, seconds each on 2 cores), so
#: the run would take well over a minute.
DENSE_MAX_N = 2 * 32 * 32
RTOL, ATOL = 1e-6, 1e-8


def make_problem(n: int) -> tuple:
    """The right-hand side ``rhs(t, y)`` and initial state of the N×N Brusselator."""
    xyd = np.linspace(0.0, 1.0, n)
    alpha = ALPHA / (xyd[1] - xyd[0]) ** 2
    x, y = np.meshgrid(xyd, xyd, indexing="ij")
    disc = (((x - 0.3) ** 2 + (y - 0.6) ** 2) <= 0.1**2).astype(float)

    def laplacian(a):
        return np.roll(a, 1, 0) + np.roll(a, -1, 0) + np.roll(a, 1, 1) + np.roll(a, -1, 1) - 4 * a

    def rhs(t, state):
        s = state.reshape(n, n, 2)
        u, v = s[..., 0], s[..., 1]
        forcing = disc * np.where(t >= 1.1, 5.0, 0.0)
        du = alpha * laplacian(u) + B + u * u * v - (A + 1) * u + forcing
        dv = alpha * laplacian(v) + A * u - u * u * v
        return np.stack([du, dv], axis=-1).ravel()

    u0 = np.empty((n, n, 2))
    u0[..., 0] = 22 * (y * (1 - y)) ** 1.5
    u0[..., 1] = 27 * (x * (1 - x)) ** 1.5
    return rhs, u0.ravel()


def counting(rhs):
    """``rhs`` with a counter of its calls (solve_ivp's nfev excludes Jacobian evaluations)."""
    calls = [0]

    def wrapped(t, y):
        calls[0] += 1
        return rhs(t, y)

    return wrapped, calls


def solve(rhs, y0, t_span, t_eval, **options):
    """One BDF run; returns the solution, the total f calls, the wall and the CPU time."""
    fun, calls = counting(rhs)
    t0, c0 = time.perf_counter(), time.process_time()
    sol = solve_ivp(fun, t_span, y0, method="BDF", t_eval=t_eval, rtol=RTOL, atol=ATOL,
                    **options)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol, calls[0], elapsed, cpu


def main(n: int, t_end: float, repeats: int) -> None:
    rhs, y0 = make_problem(n)
    size = y0.size
    t_span = (0.0, t_end)
    t_eval = np.linspace(0.0, t_end, 12)
    print(f"2D Brusselator, N = {n} (n = {size:,}), BDF on [0, {t_end}], rtol={RTOL}, "
          f"atol={ATOL}")

    t0 = time.perf_counter()
    jac = sparsejac.ode_jacobian(rhs, 0.0, y0)
    prep = time.perf_counter() - t0
    print(f"sparsejac preparation: {prep:.2f} s  ->  {jac!r}")
    print(f"pattern: {jac.sparsity.nnz:,} nonzeros\n")

    runs = {
        "sparsejac jac=": {"jac": jac},
        "scipy jac_sparsity=": {"jac_sparsity": jac.sparsity},
    }
    if size <= DENSE_MAX_N:
        runs["dense finite differences"] = {}
    # interleaved repeats, the order alternating, so that a slow spell of a shared machine
    # hits both runs alike; both sparse runs factorise the same matrices (same nlu, same
    # fill), so their LU time, most of the total, is the same up to noise
    results: dict = {}
    walls: dict = {name: [] for name in runs}
    for rep in range(repeats):
        for name in (list(runs) if rep % 2 == 0 else list(reversed(runs))):
            if rep and name == "dense finite differences":
                continue
            sol, calls, elapsed, cpu = solve(rhs, y0, t_span, t_eval, **runs[name])
            walls[name].append(elapsed)
            if name not in results:
                results[name] = (sol, calls, elapsed, cpu)
            else:  # keep the minima (other processes only ever add time)
                results[name] = (sol, calls, min(elapsed, results[name][2]),
                                 min(cpu, results[name][3]))

    print(f"{'run':<26} {'nfev':>6} {'f calls':>8} {'njev':>5} {'nlu':>5} {'wall [s]':>9} "
          f"{'median':>7} {'CPU [s]':>8}   (minimum and median of {repeats} interleaved runs)")
    for name, (sol, calls, elapsed, cpu) in results.items():
        print(f"{name:<26} {sol.nfev:>6} {calls:>8} {sol.njev:>5} {sol.nlu:>5} "
              f"{elapsed:>9.2f} {np.median(walls[name]):>7.2f} {cpu:>8.2f}")
    if size > DENSE_MAX_N:
        print(f"{'dense finite differences':<26} skipped: n = {size:,} > {DENSE_MAX_N:,} "
              "(each Jacobian would cost n f evaluations and each of ~100 LU factorisations "
              "would be dense: well over a minute in all)")
    print("\n(nfev: solve_ivp's count, which excludes the f calls of finite-difference "
          "Jacobians; f calls: every call of f, the fair comparison)")

    (_, ours, w_ours, c_ours), (_, theirs, w_theirs, c_theirs) = (
        results["sparsejac jac="], results["scipy jac_sparsity="])
    print(f"\nsparsejac vs jac_sparsity: {ours} vs {theirs} f calls ({theirs - ours} fewer with "
          f"sparsejac); time ratio {w_ours / w_theirs:.2f} wall, {c_ours / c_theirs:.2f} CPU "
          "(both factorise the same sparse matrices, which dominates)")
    ref = results["sparsejac jac="][0].y
    scale = np.abs(ref).max()
    for name, (sol, *_) in results.items():
        if name == "sparsejac jac=":
            continue
        diff = np.abs(sol.y - ref).max()
        print(f"max |y_sparsejac - y_{name.split()[0]}| over t_eval = {diff:.2e} "
              f"({diff / scale:.1e} relative to max |y| = {scale:.3g})")


if __name__ == "__main__":
    small = bool(os.environ.get("SPARSEJAC_EXAMPLE_SMALL"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("N", nargs="?", type=int, default=8 if small else 64,
                        help="grid points per side (n = 2 N²); default 64, or 8 with "
                             "SPARSEJAC_EXAMPLE_SMALL=1")
    args = parser.parse_args()
    if args.N < 3:
        parser.error(f"N must be at least 3 (a periodic stencil needs 3 points), got {args.N}")
    main(args.N, t_end=1.5 if small else 11.5, repeats=1 if small else 5)
