"""One-off Jacobians: ``sparsejac.jacobian(f, x)`` against scipy's grouping + finite differences.

For a single Jacobian there is nothing to prepare once and reuse: sparsejac traces ``f``,
detects the pattern, colours it and evaluates (exact); scipy's recipe, given the pattern for
free, is ``group_columns`` then ``approx_derivative`` (2-point, approximate). The function is
a stencil with a nonlinear diagonal and an anti-diagonal coupling (4 nonzeros per row), at
n = 10 … 10⁶; times are the minimum of interleaved repeats after one untimed call each.

    .venv/bin/python benchmarks/oneoff.py            # about a minute
    .venv/bin/python benchmarks/oneoff.py --quick    # up to n = 10^5
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from common import best_interleaved, machine  # benchmarks/common.py
from scipy.optimize._numdiff import approx_derivative, group_columns

import sparsejac


def f(x: Any) -> Any:
    r = x ** 3 - 2 * x
    r[1:] += x[:-1]
    r[:-1] += x[1:]
    return r + 0.1 * x[::-1]




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="up to n = 10^5")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [10, 100, 1_000, 10_000, 100_000] + ([] if args.quick else [1_000_000])
    print(machine())
    print("| n | sparsejac.jacobian ms | products | group_columns + approx_derivative ms | "
          "groups | FD / sparsejac |")
    print("|--:|--:|--:|--:|--:|--:|")
    for n in sizes:
        x = np.linspace(0.1, 1.0, n)
        pattern = sparsejac.jacobian_sparsity(f, x)
        # interleaved, so that both see the same state of the machine (at n = 10^6 a run's
        # time depends on fresh memory pages and varies up to 2-3x between runs)
        # sub-millisecond calls: many more rounds (they cost nothing), so that the minimum
        # is not one lucky or unlucky round
        ours, fd = best_interleaved(
            [lambda x=x: sparsejac.jacobian(f, x),
             lambda x=x, p=pattern: approx_derivative(f, x, sparsity=(p, group_columns(p)))],
            args.repeats if n > 1_000 else max(args.repeats, 100))
        plan = sparsejac.pipeline.prepare(f, x, one_shot=True)
        groups = int(group_columns(pattern).max()) + 1
        exact = sparsejac.jacobian(f, x)
        approx = approx_derivative(f, x, sparsity=(pattern, group_columns(pattern)))
        assert abs(exact - approx).max() < 1e-5 * max(1.0, abs(exact).max())
        print(f"| {n:,} | {ours * 1e3:.2f} | {plan.n_products} | {fd * 1e3:.2f} | {groups} | "
              f"{fd / ours:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
