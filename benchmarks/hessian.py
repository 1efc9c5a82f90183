"""Sparse Hessians: symmetric colour counts against ColPack, and the time of one Hessian.

Four parts:

1. the symmetric colouring table of ``benchmarks/coloring.py --symmetric-only``: star and
   acyclic colours per structurally symmetric matrix of the shared data (every named order,
   ``order="best"``), against ColPack's best star and acyclic counts from the reference file
   and the lower bound; matrices the reference lacks are listed;
2. one Hessian of a sparse objective, a 2-D Ginzburg-Landau energy
   ``E(u) = h² Σ (½|∇u|² + ¼(1 - u²)²)`` on a periodic N × N grid, at n = 10⁴ and 10⁵:
   ``SparseHessian`` (preparation once, then per Hessian) against scipy's finite differences
   of the exact (hand-written) gradient with the same pattern and ``group_columns`` groups
   (``approx_derivative``, approximate: its error is printed), and against asdex (JAX) when
   it is installed;
3. a Hessian with one dense row and column (CUTEst's LIARWHD, whose every term involves
   ``x[0]``): ``SparseHessian`` preparation with the hub first (``x[0]``) and last, at
   n = 2.5·10⁴ to 2·10⁵ (and the acyclic colouring's with the hub first); the symmetric
   colourings no longer walk the hub's neighbours for every vertex coloured after it, so
   both take about the same time;
4. a Hessian of code written as a loop over elements (Rosenbrock's chained function as
   ``for i in range(n - 1): s = s + ...``) against the same function with slices, at
   n = 500, 1,000 and 2,000: preparation and one Hessian, and how the loop's preparation
   grows with n (linearly: the recorded gradient gathers each read's cotangent into one
   linear map).

Run ``python benchmarks/hessian.py`` (``--quick``: n = 10⁴ only, the small generated
matrices, loops of 250 and 500; ``--repeats K``: timed repeats, the minimum is kept).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from common import best, machine
from scipy.optimize._numdiff import approx_derivative, group_columns

import sparsejac


def energy(n_side: int):  # type: ignore[no-untyped-def]
    """The Ginzburg-Landau energy on an ``n_side`` × ``n_side`` periodic grid, and its gradient."""
    h = 1.0 / n_side

    def f(x):  # type: ignore[no-untyped-def]
        u = x.reshape(n_side, n_side)
        dx = (np.roll(u, -1, 0) - u) / h
        dy = (np.roll(u, -1, 1) - u) / h
        return h**2 * np.sum(0.5 * (dx**2 + dy**2) + 0.25 * (1.0 - u**2) ** 2)

    def grad(x: np.ndarray) -> np.ndarray:
        u = x.reshape(n_side, n_side)
        lap = (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
               - 4.0 * u) / h**2
        return (h**2 * (-lap - u * (1.0 - u**2))).ravel()

    return f, grad


def asdex_line(n: int) -> str:
    try:
        import asdex  # type: ignore[import-not-found]  # noqa: F401
        import jax  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return (f"| n = {n:,} | asdex | not run: JAX/asdex are not installed here (an optional "
                "comparison; `pip install asdex` in a scratch environment) | | | |")
    return f"| n = {n:,} | asdex | installed, but no comparison is scripted yet | | | |"


def time_table(sizes: list[int], repeats: int) -> None:
    sparsejac.SparseHessian(energy(8)[0], np.ones(64))  # load the kernels, untimed
    print()
    print("| size | method | preparation (s) | one Hessian (ms) | products | max rel. error |")
    print("|---|---|---|---|---|---|")
    for n_side in sizes:
        n = n_side * n_side
        f, grad = energy(n_side)
        rng = np.random.default_rng(0)
        x = rng.uniform(-1.0, 1.0, n)
        t0 = time.perf_counter()
        hess = sparsejac.SparseHessian(f, x, verify=False)
        prep = time.perf_counter() - t0
        h_ref = hess(x)
        t_one = best(lambda hess=hess, x=x: hess(x), repeats)
        direct = hess.stats()["path"] == "direct"
        how = "assembled directly" if direct else f"{hess.n_products} HVPs"
        print(f"| n = {n:,} | sparsejac SparseHessian | {prep:.3f} | "
              f"{1e3 * t_one:.2f} | {how} | exact |", flush=True)

        pattern = sp.csr_array(hess.sparsity, dtype=np.int8)
        t0 = time.perf_counter()
        groups = group_columns(pattern)
        t_groups = time.perf_counter() - t0

        def fd(pattern=pattern, groups=groups, grad=grad, x=x):  # type: ignore[no-untyped-def]
            return sp.csr_array(approx_derivative(grad, x, sparsity=(pattern, groups)))

        h_fd = fd()
        t_fd = best(fd, repeats)
        dense_err = abs(h_fd - h_ref).max() / abs(h_ref).max()
        print(f"| n = {n:,} | scipy FD of the exact gradient (group_columns) | {t_groups:.3f} | "
              f"{1e3 * t_fd:.2f} | {groups.max() + 1} gradients | {dense_err:.1e} |")
        print(asdex_line(n))
        print(f"# n = {n:,}: one Hessian {t_fd / t_one:.2f}x faster than FD of the gradient "
              f"({how} vs {groups.max() + 1} gradients); sparsejac's preparation "
              f"{prep:.3f} s pays back after {prep / max(t_fd - t_one, 1e-12):.0f} Hessians",
              flush=True)


def hub_table(sizes: list[int]) -> None:
    """Preparation of LIARWHD's Hessian with its hub first and last (part 3)."""
    sparsejac.SparseHessian(lambda x: np.sum((x ** 2 - x[0]) ** 2), np.ones(1000))  # warm
    print("\n| n | hub x[0]: prepare s | of it colouring s | hub x[-1]: prepare s | ratio "
          "| acyclic, hub x[0]: prepare s |")
    print("|--:|--:|--:|--:|--:|--:|")
    for n in sizes:
        x0 = np.linspace(0.1, 0.9, n)
        times = []
        for hub, method in ((0, "star"), (-1, "star"), (0, "acyclic")):
            def liarwhd(x, hub=hub):  # type: ignore[no-untyped-def]
                return np.sum(4.0 * (x ** 2 - x[hub]) ** 2 + (x - 1.0) ** 2)

            t = time.perf_counter()
            h = sparsejac.SparseHessian(liarwhd, x0, method=method)
            times.append((time.perf_counter() - t, h.stats()["seconds"]["coloring"]))
        (first, colouring), (last, _), (acyclic, _) = times
        print(f"| {n:,} | {first:.3f} | {colouring:.3f} | {last:.3f} | {first / last:.2f} "
              f"| {acyclic:.3f} |")


def rosen_loop(x: Any) -> Any:
    """Rosenbrock's chained function written as a scalar loop over elements."""
    s = 0.0
    for i in range(x.size - 1):
        s = s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def rosen_vec(x: Any) -> Any:
    """The same function written with slices."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def loop_table(sizes: list[int], repeats: int) -> None:
    """A Hessian of code written as an element loop against the same code with slices (part
    4): preparation and one Hessian, and how each grows from one size to the next."""
    sparsejac.SparseHessian(rosen_loop, np.linspace(-1.0, 1.2, 20))  # warm
    print("\n| n | loop: prepare s | loop: one Hessian ms | slices: prepare s "
          "| slices: one Hessian ms | loop prepare growth |")
    print("|--:|--:|--:|--:|--:|--:|")
    first = 0.0
    for n in sizes:
        x0 = np.linspace(-1.0, 1.2, n)
        row = []
        for f in (rosen_loop, rosen_vec):
            t = time.perf_counter()
            h = sparsejac.SparseHessian(f, x0)
            prep = time.perf_counter() - t
            x = x0 + 0.1
            h(x)
            fastest = np.inf
            for _ in range(repeats):
                t = time.perf_counter()
                h(x)
                fastest = min(fastest, time.perf_counter() - t)
            row.append((prep, fastest))
        first = first or row[0][0]
        growth = f"{row[0][0] / first:.2f}x at {n / sizes[0]:.0f}x the size"
        print(f"| {n:,} | {row[0][0]:.2f} | {1e3 * row[0][1]:.2f} | {row[1][0]:.3f} "
              f"| {1e3 * row[1][1]:.2f} | {growth} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 1e4 only; small matrices")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (min is kept)")
    parser.add_argument("--time-only", action="store_true", help="skip the colour table")
    args = parser.parse_args(argv)
    print(f"# sparsejac Hessian benchmark; command: "
          f"{' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"# machine: {machine()}")
    status = 0
    if not args.time_only:
        import coloring

        status = coloring.symmetric_table(argparse.Namespace(quick=args.quick))
    time_table([100] if args.quick else [100, 316], args.repeats)
    hub_table([25_000, 50_000] if args.quick else [25_000, 50_000, 100_000, 200_000])
    loop_table([250, 500] if args.quick else [500, 1000, 2000], args.repeats)
    return status


if __name__ == "__main__":
    sys.exit(main())
