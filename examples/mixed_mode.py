"""Mixed mode: a banded Jacobian with one dense row and one dense column.

A tridiagonal system coupled to everything twice: one global parameter that enters every
equation (``x[0] * sin(x)``: a dense *column*) and one equation that sums all unknowns (a
total, ``sum(x**2)``: a dense *row*)::

    y = x² - 2x + x₀ sin(x)  +  (x[i-1] + x[i+1])      (tridiagonal + dense column 0)
    y[-1] = Σ x²                                         (dense last row)

Forward mode needs one product per column of a row, so the dense row forces n products;
reverse mode needs one per row of a column, so the dense column forces n as well. Every
one-sided tool (scipy's finite differences with ``jac_sparsity``, forward or reverse AD) pays
about n passes here. A bidirectional colouring recovers the dense row from a reverse product,
the dense column from a forward one, and the band from either: a handful of products.

The script prints, for each mode, the number of products, the preparation time and the time
of one prepared Jacobian, and checks that all modes give the same matrix; then the
``auto`` choice at a larger size, where the one-sided modes would need an n × n compressed
matrix and are not even timed.

    python examples/mixed_mode.py                       # n = 2,000 and n = 16,000
    SPARSEJAC_EXAMPLE_SMALL=1 python examples/mixed_mode.py   # n = 300 and 2,000 (smoke test)
"""

from __future__ import annotations

import os
import time

import numpy as np
from scipy.optimize._numdiff import approx_derivative

import sparsejac


def f(x):
    """Tridiagonal + dense column 0 + dense last row."""
    y = x**2 - 2.0 * x + x[0] * np.sin(x)
    y[1:] += x[:-1]
    y[:-1] += x[1:]
    y[-1] = np.sum(x**2)
    return y


def best_time(fn, repeats):
    """Minimum wall time of ``repeats`` calls."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def compare_modes(n, repeats):
    """Every mode at size n: products, preparation, one Jacobian; all equal."""
    x = np.random.default_rng(0).uniform(0.5, 1.5, n)
    print(f"n = {n:,}: Jacobian {n:,} x {n:,}")
    print(f"  {'mode':<14} {'products':>9} {'prepare [s]':>12} {'one J [ms]':>11}")
    ref = None
    for mode in ("forward", "reverse", "mixed", "auto"):
        t0 = time.perf_counter()
        jac = sparsejac.SparseJacobian(f, x, mode=mode)
        prep = time.perf_counter() - t0
        t = best_time(lambda jac=jac: jac(x), repeats)
        J = jac(x)
        if ref is None:
            ref = J
        diff = abs(J - ref).max()
        label = f"auto -> {jac.mode}" if mode == "auto" else mode
        print(f"  {label:<14} {jac.n_products:>9,} {prep:>12.2f} {t * 1e3:>11.2f}"
              f"   max |J - J_forward| = {diff:.1e}")
        if diff > 1e-13 * max(1.0, abs(ref).max()):  # the modes sum in different orders
            raise SystemExit(f"mode {mode} disagrees with forward mode")
    fd = sparsejac.SparseJacobian(f, x, mode="forward")
    groups = fd.coloring.column_groups
    t_fd = best_time(lambda: approx_derivative(f, x, sparsity=(fd.sparsity, groups)), 1)
    print(f"  scipy approx_derivative with sparsity: {groups.max() + 1:,} f evaluations, "
          f"{t_fd * 1e3:.1f} ms (approximate)")
    return jac


def auto_at(n, repeats):
    """mode='auto' at a size where one-sided modes are hopeless."""
    x = np.random.default_rng(1).uniform(0.5, 1.5, n)
    t0 = time.perf_counter()
    jac = sparsejac.SparseJacobian(f, x)
    prep = time.perf_counter() - t0
    t = best_time(lambda: jac(x), repeats)
    colors = jac.stats()["colors"]
    print(f"\nn = {n:,}: {jac!r}")
    print(f"  products per mode: {colors}; preparation {prep:.2f} s; one Jacobian "
          f"{t * 1e3:.2f} ms")
    print(f"  why: {jac.reason}")
    # spot-check against reverse-mode rows computed directly (exact)
    rows = np.array([0, n // 2, n - 1])
    w = np.zeros((rows.size, n))
    w[np.arange(rows.size), rows] = 1.0
    exact = sparsejac.ad.vjp(f, x, w)
    err = np.abs(jac(x)[rows].toarray() - exact).max()
    print(f"  rows 0, n/2, n-1 against reverse mode: max difference {err:.1e}")
    if err > 1e-12 * max(1.0, np.abs(exact).max()):
        raise SystemExit("mixed-mode Jacobian disagrees with reverse mode")


def main():
    small = os.environ.get("SPARSEJAC_EXAMPLE_SMALL") == "1"
    compare_modes(300 if small else 2_000, 3 if small else 10)
    auto_at(2_000 if small else 16_000, 3 if small else 20)


if __name__ == "__main__":
    main()
