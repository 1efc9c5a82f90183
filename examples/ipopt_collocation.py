"""Cart-pole swing-up by direct collocation, solved by IPOPT with sparsejac's constraint Jacobian.

Trapezoidal collocation on N intervals (Kelly, "An introduction to trajectory optimization",
SIAM Review 2017, section 6): states (cart position, pole angle, their rates) and the force
at N + 1 nodes, n = 5 (N + 1) unknowns (N = 1000: n = 5,005), m = 4 N defect constraints
(4,000), minimise the integral of u² with the end states and force limits as bounds.

IPOPT (through cyipopt) asks once for the constraint Jacobian's structure ``(rows, cols)``
and then, at every iteration, for the values in exactly that order:
``SparseJacobian.structure()`` and ``SparseJacobian.values(z, out=buffer)`` answer both. The
same problem is solved again with scipy's compressed finite differences
(``approx_derivative`` with the pattern), and the two are printed side by side.

    pip install 'sparsejac-numpy[ipopt]'            # cyipopt (or the cyipopt-wheels build)
    python examples/ipopt_collocation.py      # N = 1000
    python examples/ipopt_collocation.py --quick

Without cyipopt the example says so and exits.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np

# scipy's compressed finite differences (what least_squares uses with jac_sparsity=); the
# functions live in a private module of scipy (scipy.optimize._numdiff)
from scipy.optimize._numdiff import approx_derivative, group_columns

import sparsejac

QUICK = "--quick" in sys.argv or os.environ.get("SPARSEJAC_EXAMPLE_SMALL") == "1"
N = 40 if QUICK else 1000
T, DIST, U_MAX, D_MAX = 2.0, 1.0, 20.0, 2.0
M1, M2, L, G = 1.0, 0.3, 0.5, 9.81
H = T / N


def dynamics(s: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Cart-pole right-hand side, vectorised over nodes: ``s`` is ``(4, k)``, ``u`` ``(k,)``."""
    q2, dq1, dq2 = s[1], s[2], s[3]
    sin, cos = np.sin(q2), np.cos(q2)
    den = M1 + M2 * (1 - cos ** 2)
    ddq1 = (L * M2 * sin * dq2 ** 2 + u + M2 * G * cos * sin) / den
    ddq2 = -(L * M2 * cos * sin * dq2 ** 2 + u * cos + (M1 + M2) * G * sin) / (L * den)
    return np.stack([dq1, dq2, ddq1, ddq2])


def unpack(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return z[:4 * (N + 1)].reshape(4, N + 1), z[4 * (N + 1):]


def defects(z: np.ndarray) -> np.ndarray:
    """Trapezoidal defects ``s[k+1] - s[k] - h/2 (f[k] + f[k+1])``, flattened (4 N)."""
    s, u = unpack(z)
    f = dynamics(s, u)
    return (s[:, 1:] - s[:, :-1] - 0.5 * H * (f[:, 1:] + f[:, :-1])).ravel()


def objective(z: np.ndarray) -> float:
    u = unpack(z)[1]
    return float(0.5 * H * np.sum(u[1:] ** 2 + u[:-1] ** 2))


def gradient(z: np.ndarray) -> np.ndarray:
    u = unpack(z)[1]
    g = np.zeros_like(z)
    w = np.full(N + 1, 2.0)
    w[[0, -1]] = 1.0
    g[4 * (N + 1):] = H * w * u
    return g


def bounds() -> tuple[np.ndarray, np.ndarray]:
    lb, ub = np.full(5 * (N + 1), -np.inf), np.full(5 * (N + 1), np.inf)
    sl, sh = unpack(lb)[0], unpack(ub)[0]   # views into lb, ub
    sl[0], sh[0] = -D_MAX, D_MAX
    sl[:, 0] = sh[:, 0] = 0.0                          # start: at rest, hanging down
    sl[:, -1] = sh[:, -1] = [DIST, np.pi, 0.0, 0.0]    # end: moved by DIST, pole up
    unpack(lb)[1][:], unpack(ub)[1][:] = -U_MAX, U_MAX
    return lb, ub


def initial_guess() -> np.ndarray:
    t = np.linspace(0, 1, N + 1)
    s = np.vstack([DIST * t, np.pi * t, np.zeros_like(t), np.zeros_like(t)])
    return np.concatenate([s.ravel(), np.zeros(N + 1)])


class Problem:
    """The cyipopt problem object; ``jacobian_values`` is the Jacobian being compared."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, jacobian_values: Any) -> None:
        self.rows, self.cols, self.jacobian_values = rows, cols, jacobian_values
        self.jac_seconds = 0.0
        self.jac_calls = 0

    def objective(self, z: np.ndarray) -> float:
        return objective(z)

    def gradient(self, z: np.ndarray) -> np.ndarray:
        return gradient(z)

    def constraints(self, z: np.ndarray) -> np.ndarray:
        return defects(z)

    def jacobianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self.rows, self.cols

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        t = time.perf_counter()
        v = self.jacobian_values(z)
        self.jac_seconds += time.perf_counter() - t
        self.jac_calls += 1
        return v


def solve(cyipopt: Any, problem: Problem) -> tuple[np.ndarray, dict[str, Any], float]:
    lb, ub = bounds()
    m = 4 * N
    nlp = cyipopt.Problem(n=lb.size, m=m, problem_obj=problem, lb=lb, ub=ub,
                          cl=np.zeros(m), cu=np.zeros(m))
    nlp.add_option("hessian_approximation", "limited-memory")
    nlp.add_option("print_level", 0)
    nlp.add_option("sb", "yes")
    nlp.add_option("tol", 1e-6)
    nlp.add_option("max_iter", 500)
    t = time.perf_counter()
    z, info = nlp.solve(initial_guess())
    return z, info, time.perf_counter() - t


def main() -> None:
    try:
        import cyipopt
    except ImportError:
        print("ipopt_collocation: skipped, cyipopt is not installed "
              "(pip install 'sparsejac-numpy[ipopt]', or the cyipopt-wheels build)")
        return
    z0 = initial_guess()
    t = time.perf_counter()
    jac = sparsejac.SparseJacobian(defects, z0)
    t_prep = time.perf_counter() - t
    rows, cols = jac.structure()
    print(f"cart-pole swing-up, trapezoidal collocation, N = {N}: n = {z0.size:,}, "
          f"m = {4 * N:,}, Jacobian nnz = {rows.size:,}")
    print(f"{jac}\npreparation: {t_prep:.2f} s (once)")

    buf = np.empty(rows.size)
    exact = Problem(rows, cols, lambda z: jac.values(z, out=buf))

    pattern = jac.sparsity
    groups = group_columns(pattern)
    position = sp_positions(pattern.shape, rows, cols)

    def fd_values(z: np.ndarray) -> np.ndarray:
        J = approx_derivative(defects, z, sparsity=(pattern, groups)).tocsr()
        J.sum_duplicates()
        if position is None or J.nnz != rows.size:  # not the same pattern: look each entry up
            return np.asarray(J[rows, cols]).ravel()
        return J.data[position]

    fd = Problem(rows, cols, fd_values)
    print(f"finite differences: {int(groups.max()) + 1} column groups "
          f"(scipy approx_derivative, 2-point)\n")

    results = []
    for name, prob in (("sparsejac structure()/values()", exact),
                       ("scipy finite differences", fd)):
        z, info, secs = solve(cyipopt, prob)
        results.append((name, secs, prob.jac_seconds, prob.jac_calls, info["obj_val"],
                        info["status"], np.abs(defects(z)).max()))
    print(f"{'Jacobian':32s} {'total':>8s} {'in jac':>8s} {'calls':>6s} {'per call':>9s} "
          f"{'objective':>10s} {'status':>6s} {'max defect':>10s}")
    for name, secs, jsecs, calls, obj, status, dmax in results:
        print(f"{name:32s} {secs:7.2f}s {jsecs:7.2f}s {calls:6d} {jsecs / calls * 1e3:7.2f}ms "
              f"{obj:10.4f} {status:6d} {dmax:10.1e}")


def sp_positions(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray
                 ) -> np.ndarray | None:
    """Positions of (rows, cols) in a canonical CSR matrix with exactly that pattern.

    ``structure()`` lists the nonzeros row by row with sorted columns: the canonical CSR order
    itself, so the positions are 0..nnz-1 (checked here rather than assumed).
    """
    key = rows.astype(np.int64) * shape[1] + cols
    return np.arange(rows.size) if np.all(np.diff(key) > 0) else None


if __name__ == "__main__":
    main()
