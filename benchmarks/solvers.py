"""Time to the solver's answer: sparsejac's exact Jacobians against scipy's finite differences.

Users call solvers, not Jacobians. Each case runs one scipy solver twice in the same process,
alternating, best of ``--repeats``:

* **sparsejac**: the solver with ``jac=`` a sparsejac adapter; the time includes preparing it
  (tracing, detection, colouring, recording), as a user pays it;
* **FD**: the same solver with scipy's own finite differences given the true pattern
  (``jac_sparsity=`` for ``solve_ivp``/``least_squares``, ``finite_diff_jac_sparsity=`` for a
  ``NonlinearConstraint``), the strongest thing scipy offers without a hand-written Jacobian
  (the pattern is given to it for free).

Cases:

* ``solve_ivp`` BDF and Radau on stiff test-set problems: HIRES (n = 8, t ≤ 321.8122),
  POLLU (n = 20, t ≤ 60), the Medical Akzo Nobel problem with N = 200 (n = 400; up to t = 5,
  before the boundary switch) and the 2-D Brusselator of ``examples/brusselator_bdf.py`` at
  N = 32, 64, 128 (n = 2 N², t ≤ 1.5);
* ``least_squares`` (trf, the default) on Broyden's tridiagonal function at n = 10⁴ and 10⁵;
* ``minimize(method="trust-constr")`` with a chain of nonlinear equality constraints
  (n = 2,000 and 20,000), the Hessians written by hand and the same in both runs (only the
  constraint Jacobian differs).

Columns: the number of Jacobians the solver asked for (``njev``), sparsejac's total, its
preparation and the time inside its Jacobian calls, the FD total, FD / sparsejac (above 1:
sparsejac is faster), and FD / floor, where the floor is sparsejac's total minus its
preparation and Jacobians: the solver's own work (steps, LU factorisations, evaluations of
``f``), which no Jacobian removes. FD / floor is the largest ratio any Jacobian, even a free
one, could reach on that case. A fresh
process pays import and compilation once; every kernel is compiled by an untimed warm-up first
(``benchmarks/startup.py`` measures cold starts).

    .venv/bin/python benchmarks/solvers.py            # every case (a few minutes)
    .venv/bin/python benchmarks/solvers.py --quick    # the small cases (under a minute)
    .venv/bin/python benchmarks/solvers.py --quick --without-numba   # each case in a fresh
        # process that has not imported numba: the interpreted and numpy paths small
        # problems run on until the process's fallback budget is spent
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from common import machine  # benchmarks/common.py
from scipy.integrate import solve_ivp
from scipy.optimize import NonlinearConstraint, least_squares, minimize

import sparsejac

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))

import brusselator_bdf  # noqa: E402  (examples/ is not a package)
from problems import HIRES_Y0, broyden, hires  # noqa: E402  (re-exported)

# ---------------------------------------------------------------------------------------------
# stiff test set (Hairer & Wanner; Mazzia & Magherini's IVP test set descriptions)
# ---------------------------------------------------------------------------------------------



POLLU_K = np.array([
    0.35, 26.6, 1.23e4, 8.6e-4, 8.2e-4, 1.5e4, 1.3e-4, 2.4e4, 1.65e4, 9.0e3, 2.2e-2, 1.2e4,
    1.88, 1.63e4, 4.8e6, 3.5e-4, 1.75e-2, 1.0e8, 4.44e11, 1.24e3, 2.1, 5.78, 4.74e-2, 1.78e3,
    3.12])


def pollu(t: Any, y: Any) -> Any:
    """POLLU: air pollution, 20 species and 25 reactions (Verwer 1994)."""
    k = POLLU_K
    r = [k[0] * y[0], k[1] * y[1] * y[3], k[2] * y[4] * y[1], k[3] * y[6], k[4] * y[6],
         k[5] * y[6] * y[5], k[6] * y[8], k[7] * y[8] * y[5], k[8] * y[10] * y[1],
         k[9] * y[10] * y[0], k[10] * y[12], k[11] * y[9] * y[1], k[12] * y[13],
         k[13] * y[0] * y[5], k[14] * y[2], k[15] * y[3], k[16] * y[3], k[17] * y[15],
         k[18] * y[15], k[19] * y[16] * y[5], k[20] * y[18], k[21] * y[18],
         k[22] * y[0] * y[3], k[23] * y[18] * y[0], k[24] * y[19]]
    r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13 = r[:13]
    r14, r15, r16, r17, r18, r19, r20, r21, r22, r23, r24, r25 = r[13:]
    f = np.empty_like(y)
    f[0] = -r1 - r10 - r14 - r23 - r24 + r2 + r3 + r9 + r11 + r12 + r22 + r25
    f[1] = -r2 - r3 - r9 - r12 + r1 + r21
    f[2] = -r15 + r1 + r17 + r19 + r22
    f[3] = -r2 - r16 - r17 - r23 + r15
    f[4] = -r3 + r4 + r4 + r6 + r7 + r13 + r20
    f[5] = -r6 - r8 - r14 - r20 + r3 + r18 + r18
    f[6] = -r4 - r5 - r6 + r13
    f[7] = r4 + r5 + r6 + r7
    f[8] = -r7 - r8
    f[9] = -r12 + r7 + r9
    f[10] = -r9 - r10 + r8 + r11
    f[11] = r9
    f[12] = -r11 + r10
    f[13] = -r13 + r12
    f[14] = r14
    f[15] = -r18 - r19 + r16
    f[16] = -r20
    f[17] = r20
    f[18] = -r21 - r22 - r24 + r23 + r25
    f[19] = -r25 + r24
    return f


POLLU_Y0 = np.zeros(20)
POLLU_Y0[[1, 3, 6, 7, 8, 16]] = [0.2, 0.04, 0.1, 0.3, 0.01, 0.007]


def akzo(N: int) -> tuple[Callable[[Any, Any], Any], np.ndarray]:
    """Medical Akzo Nobel problem, method of lines with N points (n = 2N), boundary φ = 2."""
    dz = 1.0 / N
    z = np.arange(1, N + 1) * dz
    alpha = 2 * (z - 1) ** 3 / 16.0
    beta = (z - 1) ** 4 / 16.0
    k = 100.0

    def rhs(t: Any, y: Any) -> Any:
        u, v = y[0::2], y[1::2]
        left = np.concatenate([np.full(1, 2.0), u[:-1]])
        right = np.concatenate([u[1:], u[-1:]])
        du = (alpha * (right - left) / (2 * dz) + beta * (left - 2 * u + right) / dz**2
              - k * u * v)
        dv = -k * u * v
        return np.stack([du, dv], axis=1).ravel()

    y0 = np.zeros(2 * N)
    y0[1::2] = 1.0
    return rhs, y0


# ---------------------------------------------------------------------------------------------
# least squares and constrained optimisation
# ---------------------------------------------------------------------------------------------


def chain_constraints(x: Any) -> Any:
    """A chain of nonlinear equalities c_i = x_i² + x_{i+1}² + x_i x_{i+1} - 1 (n - 1 rows)."""
    return x[:-1] ** 2 + x[1:] ** 2 + x[:-1] * x[1:] - 1.0


def chain_objective(x: np.ndarray) -> float:
    return float(np.sum((x - 0.3) ** 2) + 0.1 * np.sum(x ** 4))


def chain_gradient(x: np.ndarray) -> np.ndarray:
    return 2 * (x - 0.3) + 0.4 * x ** 3


def chain_hessian(x: np.ndarray) -> sp.csr_array:
    """The objective's Hessian (diagonal), written by hand: the same in both runs."""
    return sp.diags_array(2.0 + 1.2 * x ** 2, format="csr")


def chain_constraint_hessian(x: np.ndarray, v: np.ndarray) -> sp.csr_array:
    """sum_i v_i * Hessian(c_i), by hand (2 on both diagonal entries, 1 off the diagonal)."""
    diag = np.zeros(x.size)
    diag[:-1] += 2 * v
    diag[1:] += 2 * v
    return sp.diags_array([v, diag, v], offsets=[-1, 0, 1], format="csr")


# ---------------------------------------------------------------------------------------------
# the two contenders per case
# ---------------------------------------------------------------------------------------------

Run = Callable[[], tuple[int, float, float]]   # -> (Jacobians, preparation s, Jacobian s)


class Timed:
    """A Jacobian callable that adds up the seconds spent inside it (``seconds``)."""

    def __init__(self, jac: Callable[..., Any]) -> None:
        self.jac = jac
        self.seconds = 0.0

    def __call__(self, *args: Any) -> Any:
        t = time.perf_counter()
        out = self.jac(*args)
        self.seconds += time.perf_counter() - t
        return out


def ivp_case(rhs: Callable[..., Any], y0: np.ndarray, t1: float, method: str,
             rtol: float = 1e-6, atol: float = 1e-9) -> tuple[Run, Run]:
    pattern = sparsejac.jacobian_sparsity(lambda y: rhs(0.0, y), y0)

    def ours() -> tuple[int, float, float]:
        t = time.perf_counter()
        jac = Timed(sparsejac.ode_jacobian(rhs, 0.0, y0))
        prep = time.perf_counter() - t
        sol = solve_ivp(rhs, (0.0, t1), y0, method=method, jac=jac, rtol=rtol, atol=atol)
        assert sol.success, sol.message
        return sol.njev, prep, jac.seconds

    def fd() -> tuple[int, float, float]:
        sol = solve_ivp(rhs, (0.0, t1), y0, method=method, jac_sparsity=pattern, rtol=rtol,
                        atol=atol)
        assert sol.success, sol.message
        return sol.njev, 0.0, 0.0

    return ours, fd


def lsq_case(n: int) -> tuple[Run, Run]:
    x0 = -np.ones(n)
    pattern = sparsejac.jacobian_sparsity(broyden, x0)

    def ours() -> tuple[int, float, float]:
        t = time.perf_counter()
        jac = Timed(sparsejac.least_squares_jacobian(broyden, x0))
        prep = time.perf_counter() - t
        res = least_squares(broyden, x0, jac=jac)
        assert res.success
        return res.njev, prep, jac.seconds

    def fd() -> tuple[int, float, float]:
        res = least_squares(broyden, x0, jac_sparsity=pattern)
        assert res.success
        return res.njev, 0.0, 0.0

    return ours, fd


def constrained_case(n: int) -> tuple[Run, Run]:
    x0 = np.full(n, 0.5)
    pattern = sparsejac.jacobian_sparsity(chain_constraints, x0)
    def run(jac: Any, **extra: Any) -> int:
        con = NonlinearConstraint(chain_constraints, 0.0, 0.0, jac=jac,
                                  hess=chain_constraint_hessian, **extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = minimize(chain_objective, x0, jac=chain_gradient, hess=chain_hessian,
                           method="trust-constr", constraints=[con],
                           options={"maxiter": 200, "gtol": 1e-8})
        assert np.abs(chain_constraints(res.x)).max() < 1e-5, res.message
        return int(res.constr_njev[0])

    def ours() -> tuple[int, float, float]:
        t = time.perf_counter()
        jac = Timed(sparsejac.SparseJacobian(chain_constraints, x0))
        prep = time.perf_counter() - t
        return run(jac), prep, jac.seconds

    def fd() -> tuple[int, float, float]:
        return run("2-point", finite_diff_jac_sparsity=pattern), 0.0, 0.0

    return ours, fd


def cases(quick: bool) -> list[tuple[str, str, Callable[[], tuple[Run, Run]]]]:
    out: list[tuple[str, str, Callable[[], tuple[Run, Run]]]] = []
    for method in ("BDF", "Radau"):
        out.append((f"solve_ivp {method}", "HIRES (n=8)",
                    lambda m=method: ivp_case(hires, HIRES_Y0, 321.8122, m)))
        out.append((f"solve_ivp {method}", "POLLU (n=20)",
                    lambda m=method: ivp_case(pollu, POLLU_Y0, 60.0, m)))
        out.append((f"solve_ivp {method}", "Akzo Nobel N=200 (n=400)",
                    lambda m=method: ivp_case(*akzo(200), 5.0, m, 1e-6, 1e-8)))
    for N in (32,) if quick else (32, 64, 128):
        def bruss(N: int = N) -> tuple[Run, Run]:
            rhs, y0 = brusselator_bdf.make_problem(N)
            return ivp_case(rhs, y0, 1.5, "BDF", 1e-6, 1e-6)
        out.append(("solve_ivp BDF", f"Brusselator N={N} (n={2 * N * N:,})", bruss))
    for n in (10_000,) if quick else (10_000, 100_000):
        out.append(("least_squares trf", f"Broyden tridiagonal n={n:,}",
                    lambda n=n: lsq_case(n)))
    for n in (2_000,) if quick else (2_000, 20_000):
        out.append(("minimize trust-constr", f"chain constraints n={n:,}",
                    lambda n=n: constrained_case(n)))
    return out


def warm_up() -> None:
    """Compile every kernel once, untimed (a warm kernel cache, as after the first use)."""
    for make in (lambda: ivp_case(hires, HIRES_Y0, 1.0, "BDF"), lambda: lsq_case(50),
                 lambda: constrained_case(20)):
        ours, fd = make()
        ours()
        fd()




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs per case")
    parser.add_argument("--without-numba", action="store_true",
                        help="numba not imported up front: each case in a fresh process that "
                             "loads it only when its fallback budget is spent")
    args = parser.parse_args(argv)
    if args.without_numba:
        return _without_numba(args)
    warm_up()
    print(machine())
    print(f"best of {args.repeats} alternating runs; sparsejac's time includes its preparation")
    print()
    head = (f"| {'solver':<22} | {'problem':<30} | {'njev':>5} | {'sparsejac s':>11} | "
            f"{'of it prep':>10} | {'of it J':>7} | {'FD s':>8} | {'FD/ours':>7} | "
            f"{'FD/floor':>8} |")
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    worst = np.inf
    for solver, problem, make in cases(args.quick):
        ours, fd = make()
        best_ours, best_fd, prep, in_jac, njev = np.inf, np.inf, np.inf, np.inf, 0
        for _ in range(args.repeats):
            t = time.perf_counter()
            njev, p, j = ours()
            elapsed = time.perf_counter() - t
            if elapsed < best_ours:
                best_ours, prep, in_jac = elapsed, p, j
            t = time.perf_counter()
            fd()
            best_fd = min(best_fd, time.perf_counter() - t)
        ratio = best_fd / best_ours
        # the solver's own work in sparsejac's run: what no Jacobian, however fast, removes
        floor = best_fd / max(best_ours - prep - in_jac, 1e-12)
        worst = min(worst, ratio)
        print(f"| {solver:<22} | {problem:<30} | {njev:>5} | {best_ours:>11.3f} | "
              f"{prep:>10.3f} | {in_jac:>7.4f} | {best_fd:>8.3f} | {ratio:>7.2f} | "
              f"{floor:>8.2f} |", flush=True)
    print()
    print(f"smallest FD/sparsejac ratio: {worst:.2f}")
    return 0


def _without_numba(args: argparse.Namespace) -> int:
    """Each case in a fresh process without numba imported up front (after an untimed run
    of its own case, as ``warm_up`` does in-process; numba loads only if that process's
    fallback budget runs out or a preparation expects more work: ``sparsejac.kernels``)."""
    import os
    import subprocess

    env = {**os.environ, "SPARSEJAC_BENCH_NUMBA": "0"}
    print(f"each case in a fresh process without numba imported up front; best of "
          f"{args.repeats} alternating runs; sparsejac's time includes its preparation\n")
    print("| solver | problem | njev | sparsejac s | FD s | FD/ours | numba loaded |")
    print("|---|---|--:|--:|--:|--:|---|")
    worst = np.inf
    for k, (solver, problem, _) in enumerate(cases(args.quick)):
        out = subprocess.run([sys.executable, __file__, "--case", str(k), "--repeats",
                              str(args.repeats), *(["--quick"] if args.quick else [])],
                             env=env, capture_output=True, text=True, check=True)
        njev, ours, fd, loaded = out.stdout.split()
        worst = min(worst, float(fd) / float(ours))
        print(f"| {solver} | {problem} | {njev} | {float(ours):.3f} | {float(fd):.3f} | "
              f"{float(fd) / float(ours):.2f} | {loaded} |", flush=True)
    print(f"\nsmallest FD/sparsejac ratio: {worst:.2f}")
    return 0


def _one_case(k: int, quick: bool, repeats: int) -> None:
    """``--case k``: case ``k`` alone, one untimed run of each side then the best of
    ``repeats``; prints njev, both times and whether numba got loaded."""
    ours, fd = cases(quick)[k][2]()
    njev = ours()[0]
    fd()
    best_ours = best_fd = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        ours()
        best_ours = min(best_ours, time.perf_counter() - t)
        t = time.perf_counter()
        fd()
        best_fd = min(best_fd, time.perf_counter() - t)
    print(njev, best_ours, best_fd, "yes" if "numba" in sys.modules else "no")


if __name__ == "__main__":
    if "--case" in sys.argv:
        i = sys.argv.index("--case")
        _one_case(int(sys.argv[i + 1]), "--quick" in sys.argv,
                  int(sys.argv[sys.argv.index("--repeats") + 1]))
        raise SystemExit(0)
    raise SystemExit(main())
