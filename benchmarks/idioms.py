"""The numpy people actually write: buffers filled in place and loops over scalars.

Three right-hand sides in the styles the tracer must take as they are, each prepared once
(``SparseJacobian``: tracing, detection, colouring, recording) and then evaluated; against
scipy's ``approx_derivative`` with the same column groups (2-point, approximate):

* **buffer 2-D reaction-diffusion** (N = 128, n = 2 N² = 32,768): ``np.zeros`` buffers filled
  by slices, ``+=`` on interior slices, no-flux boundaries written row by row;
* **scalar-loop tridiagonal** (n = 1,000 and 10,000): ``out[i] = ...`` in a Python loop over
  elements, reading ``y[i - 1]``, ``y[i]``, ``y[i + 1]`` as scalars;
* **kinetics loop**: a chain of reversible reactions A_k <-> A_{k+1} written as a loop over
  species accumulating rates into a buffer (40 species).

Columns: tracing alone (s), preparation (s, tracing included), one prepared Jacobian (ms),
which engine runs it, scipy's FD with the same groups (ms), and FD / sparsejac for one
Jacobian. Times are the minimum of repeats
after one untimed call.

    .venv/bin/python benchmarks/idioms.py            # every case (about a minute)
    .venv/bin/python benchmarks/idioms.py --quick    # without n = 10,000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import best, machine  # benchmarks/common.py
from scipy.optimize._numdiff import approx_derivative

import sparsejac
from sparsejac.tracing import trace


def reaction_diffusion(N: int) -> tuple[Callable[[Any], Any], np.ndarray]:
    """Gray–Scott-like 2-D reaction-diffusion written with buffers and slices."""
    h2 = (1.0 / N) ** 2
    du, dv, feed, kill = 2e-5, 1e-5, 0.04, 0.06

    def f(y: Any) -> Any:
        u = y[: N * N].reshape(N, N)
        v = y[N * N:].reshape(N, N)
        lu = np.zeros((N, N))
        lv = np.zeros((N, N))
        lu[1:-1, 1:-1] = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                          - 4 * u[1:-1, 1:-1])
        lv[1:-1, 1:-1] = (v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:]
                          - 4 * v[1:-1, 1:-1])
        lu[0, :] = u[1, :] - u[0, :]        # no-flux edges, one row at a time
        lu[-1, :] = u[-2, :] - u[-1, :]
        lv[0, :] = v[1, :] - v[0, :]
        lv[-1, :] = v[-2, :] - v[-1, :]
        out = np.zeros(2 * N * N)
        uvv = u * v * v
        out[: N * N] = (du / h2 * lu - uvv + feed * (1 - u)).ravel()
        out[N * N:] = (dv / h2 * lv + uvv - (feed + kill) * v).ravel()
        out[N * N:] += 1e-3 * np.sin(u).ravel()
        return out

    rng = np.random.default_rng(1)
    return f, rng.uniform(0.2, 0.8, 2 * N * N)


def scalar_loop(y: Any) -> Any:
    """A tridiagonal right-hand side as a loop over scalars."""
    n = y.size
    out = np.zeros(n)
    for i in range(n):
        left = y[i - 1] if i > 0 else 0.0
        right = y[i + 1] if i < n - 1 else 0.0
        out[i] = (left - 2.0 * y[i] + right) * 100.0 - y[i] ** 3
    return out


def kinetics(y: Any) -> Any:
    """Reversible reactions A_k <-> A_{k+1} (mass action) and a dimerisation, by species."""
    n = y.size
    dydt = np.zeros(n)
    for k in range(n - 1):
        forward = (1.0 + 0.1 * k) * y[k]
        backward = 0.5 * y[k + 1] * y[k + 1]
        dydt[k] -= forward - backward
        dydt[k + 1] += forward - backward
    dydt[0] += 0.3 * y[n - 1] * y[n - 2]
    return dydt






def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip n = 10,000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    cases: list[tuple[str, Callable[[Any], Any], np.ndarray]] = [
        ("buffer reaction-diffusion N=128", *reaction_diffusion(128)),
        ("scalar-loop tridiagonal n=1,000", scalar_loop, np.linspace(0.1, 1.0, 1000)),
    ]
    if not args.quick:
        cases.append(("scalar-loop tridiagonal n=10,000", scalar_loop,
                      np.linspace(0.1, 1.0, 10_000)))
    cases.append(("kinetics loop, 40 species", kinetics, np.linspace(0.5, 1.5, 40)))
    sparsejac.SparseJacobian(scalar_loop, np.ones(20))  # compile the kernels, untimed
    print(machine())
    head = (f"| {'case':<34} | {'n':>6} | {'trace s':>7} | {'prep s':>7} | {'J ms':>8} | "
            f"{'engine':>6} | "
            f"{'FD ms':>8} | {'FD/J':>6} |")
    print(head)
    print("|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|")
    for label, f, x in cases:
        t = time.perf_counter()
        trace(f, x)
        t_trace = time.perf_counter() - t
        t = time.perf_counter()
        jac = sparsejac.SparseJacobian(f, x, mode="forward")
        prep = time.perf_counter() - t
        x1 = x * 1.01
        t_j = best(lambda jac=jac, x1=x1: jac(x1), args.repeats)
        structure = jac.sparsity.tocsc()
        groups = jac.coloring.column_groups
        t_fd = best(lambda f=f, x1=x1, s=structure, g=groups:
                    approx_derivative(f, x1, sparsity=(s, g)), max(1, args.repeats // 2))
        exact = jac(x1).toarray() if x.size <= 2000 else None
        if exact is not None:  # a sanity check against the approximate Jacobian
            fd = approx_derivative(f, x1, sparsity=(structure, groups)).toarray()
            assert np.allclose(exact, fd, rtol=1e-4, atol=1e-4 * np.abs(exact).max())
        engine = jac.stats()["engine"]["engine"]
        print(f"| {label:<34} | {x.size:>6,} | {t_trace:>7.2f} | {prep:>7.2f} | "
              f"{t_j * 1e3:>8.3f} | "
              f"{engine:>6} | {t_fd * 1e3:>8.2f} | {t_fd / t_j:>6.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
