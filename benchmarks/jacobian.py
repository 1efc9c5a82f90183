"""Jacobian benchmark: sparsejac's prepared Jacobian against scipy's finite differences, one table.

Problems (all as plain numpy functions, the same code for every contender):

* small ones, where per-call overhead shows: HIRES (n = 8) and POLLU (n = 20) of the stiff
  test set (``benchmarks/solvers.py``), Burgers at n = 100, and the kinetics loop of
  ``benchmarks/idioms.py`` at n = 100 and 1,000;
* the periodic 2D Brusselator of ``examples/brusselator_bdf.py`` (SciML/asdex definition) at
  N = 32, 64, 128, 256 (n = 2 N²), at t = 0;
* tridiagonal viscous Burgers, ``-u u_x + ν u_xx`` with central differences and zero
  boundary values, at n = 10³ … 10⁶;
* the synthetic bundle adjustment of ``examples/bundle_adjustment.py`` (20 cameras, 4,000
  points, 16,000 observations; 12 nonzeros per row);
* ``examples/mixed_mode.py``'s tridiagonal system with a dense last row (a total), and with
  a dense row and a dense column (a global parameter), at n = 10³ … 10⁵.

Columns of the main table:

    n, nnz       Jacobian size and nonzeros (square except bundle adjustment: m x n)
    mode         mode chosen by SparseJacobian(f, x0) (mode="auto": the cost rule)
    prep s       preparation: detection, colouring ("best"), recording, the auto-mode timing
    f ms         one evaluation of f
    J ms         one prepared Jacobian in the chosen mode, J = jac(x), as a csr_array
    J/f          J ms / f ms
    prod         compressed products per Jacobian (JVPs + VJPs)
    FD ms        scipy.optimize._numdiff.approx_derivative(f, x, sparsity=(structure, groups))
                 with CSC structure and the same column groups as a forward colouring of
                 sparsejac (2-point; approximate), csr result; "~" marks an estimate,
                 (groups + 1) x f, where that would take more than a minute
    FD/J         speedup of the exact prepared Jacobian over those finite differences
    asdex ms     asdex (JAX, XLA-compiled) one Jacobian, converted to scipy.sparse, if asdex
                 and jax are importable (an optional extra: `pip install asdex jax`), else "-";
                 also "-" where JAX cannot trace f (the dense-row problems write in place)

The modes table times every mode's prepared Jacobian on the same problems (forward: column
colouring, reverse: row colouring, mixed: bidirectional colouring; products in brackets;
"-" where the compressed matrix would exceed sparsejac's 10⁸-entry guard), and scipy's finite
differences grouped as ``least_squares(jac_sparsity=...)`` and ``solve_ivp(jac_sparsity=...)``
group them (``group_columns``, in column order).

Times are the minimum over repeats (interleaved), after one untimed call; every kernel is
compiled by a small untimed preparation first, so "prep s" is the work of that problem.

    .venv/bin/python benchmarks/jacobian.py            # everything (a few minutes)
    .venv/bin/python benchmarks/jacobian.py --quick    # small sizes only (under a minute)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy
import scipy.sparse as sp
from common import best_interleaved  # benchmarks/common.py
from scipy.optimize._numdiff import approx_derivative, group_columns

import sparsejac

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))

import brusselator_bdf  # noqa: E402  (examples/ is not a package)
import bundle_adjustment  # noqa: E402
import mixed_mode  # noqa: E402

# ---------------------------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------------------------


def brusselator(N: int) -> tuple[Callable[[np.ndarray], Any], np.ndarray]:
    rhs, y0 = brusselator_bdf.make_problem(N)

    def f(y):
        return rhs(0.0, y)

    return f, y0


def burgers(n: int) -> tuple[Callable[[np.ndarray], Any], np.ndarray]:
    dx = 1.0 / (n + 1)
    nu = 0.01

    def f(u):
        up = np.concatenate([np.zeros(1), u, np.zeros(1)])
        left, right = up[:-2], up[2:]
        return -u * (right - left) / (2 * dx) + nu * (right - 2 * u + left) / dx**2

    grid = np.linspace(dx, 1 - dx, n)
    return f, np.sin(np.pi * grid) + 0.1 * np.sin(7 * np.pi * grid)


def bundle(n_cameras: int, n_points: int) -> tuple[Callable[[np.ndarray], Any], np.ndarray]:
    x0, args = bundle_adjustment.synthetic_problem(n_cameras, n_points, 4)

    def f(x):
        return bundle_adjustment.residuals(x, *args)

    return f, x0


def dense_row(n: int) -> tuple[Callable[[np.ndarray], Any], np.ndarray]:
    """Tridiagonal plus a dense last row (forward mode needs n products)."""

    def f(x):
        y = x**2 - 2.0 * x
        y[1:] += x[:-1]
        y[:-1] += x[1:]
        y[-1] = np.sum(x**2)
        return y

    return f, np.random.default_rng(0).uniform(0.5, 1.5, n)


def dense_row_col(n: int) -> tuple[Callable[[np.ndarray], Any], np.ndarray]:
    """Tridiagonal plus a dense row and a dense column (one-sided modes need n products)."""
    return mixed_mode.f, np.random.default_rng(0).uniform(0.5, 1.5, n)


def stiff(name: str) -> tuple[Callable[[np.ndarray], Any], np.ndarray]:
    """HIRES (n=8) or POLLU (n=20) of the stiff test set, written element by element."""
    import solvers  # benchmarks/solvers.py: the same definitions

    rhs, y0 = {"hires": (solvers.hires, solvers.HIRES_Y0),
               "pollu": (solvers.pollu, solvers.POLLU_Y0)}[name]

    def f(y):
        return rhs(0.0, y)

    return f, y0 + 0.1


def kinetics(n: int) -> tuple[Callable[[np.ndarray], Any], np.ndarray]:
    """The kinetics loop over species of benchmarks/idioms.py."""
    import idioms

    return idioms.kinetics, np.linspace(0.5, 1.5, n)


PROBLEMS: list[tuple[str, Callable[[], tuple[Callable[[np.ndarray], Any], np.ndarray]], bool]] = [
    # (name, builder, in --quick)
    ("HIRES n=8", lambda: stiff("hires"), True),
    ("POLLU n=20", lambda: stiff("pollu"), True),
    ("Burgers n=100", lambda: burgers(100), True),
    ("kinetics loop n=100", lambda: kinetics(100), True),
    ("kinetics loop n=1000", lambda: kinetics(1000), True),
    ("Brusselator N=32", lambda: brusselator(32), True),
    ("Brusselator N=64", lambda: brusselator(64), True),
    ("Brusselator N=128", lambda: brusselator(128), False),
    ("Brusselator N=256", lambda: brusselator(256), False),
    ("Burgers n=1e3", lambda: burgers(1_000), True),
    ("Burgers n=1e4", lambda: burgers(10_000), True),
    ("Burgers n=1e5", lambda: burgers(100_000), False),
    ("Burgers n=1e6", lambda: burgers(1_000_000), False),
    ("bundle adj. 20x4000", lambda: bundle(20, 4000), False),
    ("bundle adj. 4x200", lambda: bundle(4, 200), True),
    ("dense row n=1e3", lambda: dense_row(1_000), True),
    ("dense row n=1e4", lambda: dense_row(10_000), False),
    ("dense row n=1e5", lambda: dense_row(100_000), False),
    ("dense row+col n=1e3", lambda: dense_row_col(1_000), True),
    ("dense row+col n=1e4", lambda: dense_row_col(10_000), False),
    ("dense row+col n=1e5", lambda: dense_row_col(100_000), False),
]

#: Finite differences estimated (not run) above this many seconds.
FD_LIMIT_SECONDS = 60.0

# ---------------------------------------------------------------------------------------------
# contenders
# ---------------------------------------------------------------------------------------------


def asdex_jacobian(f: Callable[[Any], Any], x0: np.ndarray) -> Callable[[np.ndarray], Any] | None:
    """A jitted asdex Jacobian returning scipy.sparse, or None if asdex/jax are missing.

    ``f`` is the numpy function; JAX traces it through ``jax.numpy`` via the array API
    (``f`` must be written with ``np`` functions that dispatch on jax arrays: here each
    problem is re-bound to ``jax.numpy``).
    """
    try:
        import asdex
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jac_fn = jax.jit(asdex.jacobian(f, jnp.asarray(x0)))

    def call(x: np.ndarray) -> Any:
        j = jac_fn(jnp.asarray(x))
        j = jax.block_until_ready(j)
        data = np.asarray(j.data)
        idx = np.asarray(j.indices)
        return sp.csr_array((data, (idx[:, 0], idx[:, 1])), shape=j.shape)

    return call


def with_jax_numpy(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``f`` with ``np`` rebound to ``jax.numpy`` in the modules that define the problems.

    The problems are written against ``np``; for the asdex column the very same code runs on
    ``jax.numpy`` (rebinding is active while JAX traces it).
    """
    import jax.numpy as jnp

    modules = [sys.modules[__name__], brusselator_bdf, bundle_adjustment]

    def g(x: Any) -> Any:
        saved = [m.np for m in modules]
        for m in modules:
            m.np = jnp
        try:
            return f(x)
        finally:
            for m, old in zip(modules, saved, strict=True):
                m.np = old

    return g


def run(name: str, build: Callable[[], tuple[Callable[[np.ndarray], Any], np.ndarray]],
        repeats: int, use_asdex: bool) -> dict[str, Any]:
    f, x0 = build()
    x = x0 * (1.0 + 1e-3 * np.cos(np.arange(x0.size)))  # a new point, not the preparation's
    t0 = time.perf_counter()
    jac = sparsejac.SparseJacobian(f, x0)
    prep = time.perf_counter() - t0
    m, n = jac.sparsity.shape
    fwd = jac.coloring if jac.coloring.partition == "column" else \
        sparsejac.color(jac.sparsity, "column")
    groups = fwd.column_groups
    structure = sp.csc_matrix(jac.sparsity)

    def fd() -> Any:
        return sp.csr_array(approx_derivative(f, x, sparsity=(structure, groups)))

    t_f, t_j = best_interleaved([lambda: f(x), lambda: jac(x)], repeats)
    n_groups = int(groups.max()) + 1
    scipy_groups = group_columns(structure)
    n_scipy = int(scipy_groups.max()) + 1
    fd_estimated = (n_groups + 1) * t_f > FD_LIMIT_SECONDS / 10
    if fd_estimated:
        t_fd, err = (n_groups + 1) * t_f, float("nan")
    else:
        (t_fd,) = best_interleaved([fd], max(3, repeats // 4))  # each costs (groups + 1) f and more
        err = abs(fd() - jac(x)).max() / max(1e-300, abs(jac(x)).max())
    if (n_scipy + 1) * t_f > FD_LIMIT_SECONDS / 10:
        t_fd_scipy, scipy_estimated = (n_scipy + 1) * t_f, True
    else:
        (t_fd_scipy,) = best_interleaved(
            [lambda: approx_derivative(f, x, sparsity=(structure, scipy_groups))],
            max(3, repeats // 4))
        scipy_estimated = False
    modes: dict[str, tuple[int, float | None]] = {}
    for mode in ("forward", "reverse", "mixed"):
        mj = sparsejac.SparseJacobian(f, x0, mode=mode)
        try:
            (t_mode,) = best_interleaved([lambda mj=mj: mj(x)], max(3, repeats // 2))
        except MemoryError:
            t_mode = None
        modes[mode] = (mj.n_products, t_mode)
    row = {
        "problem": name, "m": m, "n": n, "nnz": jac.sparsity.nnz, "mode": jac.mode,
        "colors": jac.n_products, "fd_groups": n_groups, "prep": prep,
        "f": t_f, "J": t_j, "fd": t_fd, "fd_estimated": fd_estimated, "fd_rel_err": err,
        "asdex": None, "modes": modes, "fd_scipy": t_fd_scipy, "scipy_groups": n_scipy,
        "fd_scipy_estimated": scipy_estimated,
    }
    if use_asdex:
        try:
            call = asdex_jacobian(with_jax_numpy(f), x0)
        except TypeError as exc:  # JAX arrays are immutable: f writes in place (y[1:] += ...)
            print(f"  asdex skipped for {name}: {str(exc).splitlines()[0]}", file=sys.stderr)
            call = None
        if call is not None:
            (row["asdex"],) = best_interleaved([lambda: call(x)], repeats)
    return row


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    text = (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, numpy "
            f"{np.__version__}, scipy {scipy.__version__}, sparsejac {sparsejac.__version__}")
    try:
        import asdex  # noqa: F401
        import jax
    except ImportError:
        return text
    from importlib.metadata import version

    return text + f", asdex {version('asdex')}, jax {jax.__version__} (x64, CPU)"


def _ms(t: float, estimated: bool = False) -> str:
    return ("~" if estimated else "") + f"{t * 1e3:.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| problem | n | nnz | mode | prep s | f ms | J ms | J/f | prod | FD ms (groups) "
             "| FD/J | asdex ms |",
             "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        size = f"{r['n']:,}" if r["m"] == r["n"] else f"{r['m']:,} x {r['n']:,}"
        asdex = "-" if r["asdex"] is None else f"{r['asdex'] * 1e3:.2f}"
        lines.append(
            f"| {r['problem']} | {size} | {r['nnz']:,} | {r['mode']} | {r['prep']:.2f} "
            f"| {r['f'] * 1e3:.3f} | {r['J'] * 1e3:.3f} | {r['J'] / r['f']:.1f} "
            f"| {r['colors']} | {_ms(r['fd'], r['fd_estimated'])} ({r['fd_groups']}) "
            f"| {r['fd'] / r['J']:.1f}x | {asdex} |")
    return "\n".join(lines)


def modes_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| problem | forward ms (prod) | reverse ms (prod) | mixed ms (prod) | auto picks "
             "| scipy FD ms (group_columns groups) | scipy FD / auto |",
             "|---|--:|--:|--:|---|--:|--:|"]
    for r in rows:
        cells = []
        for mode in ("forward", "reverse", "mixed"):
            k, t = r["modes"][mode]
            cells.append(f"{'-' if t is None else f'{t * 1e3:.2f}'} ({k:,})")
        lines.append(
            f"| {r['problem']} | {' | '.join(cells)} | {r['mode']} "
            f"| {_ms(r['fd_scipy'], r['fd_scipy_estimated'])} ({r['scipy_groups']:,}) "
            f"| {r['fd_scipy'] / r['J']:.1f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeats", type=int, default=20, help="timed rounds (min kept)")
    parser.add_argument("--no-asdex", action="store_true", help="skip the asdex column")
    args = parser.parse_args(argv)

    use_asdex = not args.no_asdex
    if use_asdex:
        try:
            import asdex  # noqa: F401
            import jax  # noqa: F401
        except ImportError:
            use_asdex = False
            print("asdex/JAX column skipped: not importable (optional; to compare, install it "
                  "into the environment with `pip install asdex jax`)\n")

    # compile and load every kernel once (numba caches, colouring warm-up) outside the timings
    warm, wx = burgers(50)
    sparsejac.SparseJacobian(warm, wx)(wx)
    sparsejac.SparseJacobian(lambda y: brusselator_bdf.make_problem(4)[0](0.0, y),
                             brusselator_bdf.make_problem(4)[1])

    print(f"command: python benchmarks/jacobian.py{' --quick' if args.quick else ''}")
    print(f"date: {datetime.date.today().isoformat()}")
    print(f"machine: {machine()}\n")
    rows = []
    for name, build, quick in PROBLEMS:
        if args.quick and not quick:
            continue
        if not args.quick and name == "bundle adj. 4x200":
            continue
        rows.append(run(name, build, args.repeats, use_asdex))
        print(f"  done: {name}", file=sys.stderr, flush=True)
    print(table(rows))
    print("\nevery mode, and scipy's finite differences as least_squares / solve_ivp group them:\n")
    print(modes_table(rows))
    worst = max((r["fd_rel_err"] for r in rows if not np.isnan(r["fd_rel_err"])), default=0.0)
    print(f"\nmax |J_FD - J| / max |J| over the rows: {worst:.1e} (finite differences are "
          "approximate; sparsejac's J is exact)")
    print("\nsmall problems called until their generated numba code is built (rent, then buy: "
          "sparsejac.ad.native), then timed in batches of 1,000 calls:\n")
    print(steady_table([steady(name, build, args.repeats) for name, build, _ in PROBLEMS
                        if name in ("HIRES n=8", "POLLU n=20")]))
    return 0


def steady(name: str, build: Callable[[], tuple[Callable[[np.ndarray], Any], np.ndarray]],
           repeats: int) -> dict[str, Any]:
    """Calls until the generated code runs, and J/f before and after (batches of 1,000)."""
    from sparsejac.ad import native

    f, x0 = build()
    x = x0 * (1.0 + 1e-3 * np.cos(np.arange(x0.size)))
    jac = sparsejac.SparseJacobian(f, x0)
    jac(x)

    def batch(fn: Callable[[], Any]) -> Callable[[], None]:
        def run_batch() -> None:
            for _ in range(1000):
                fn()
        return run_batch

    t_f, t_j = (t / 1000 for t in best_interleaved([batch(lambda: f(x)), batch(lambda: jac(x))],
                                                    max(3, repeats // 4)))
    _, kernels = jac._state.fast  # (the prepared tape's fused kernels: see stats())
    cached = native.cached(kernels[2], kernels[3], x0.size)
    t0, calls = time.perf_counter(), 0
    while jac.stats()["engine"].get("kernel") != "compiled, generated" and calls < 3_000_000:
        for _ in range(1000):
            jac(x)
        calls += 1000
    took = time.perf_counter() - t0
    t_f2, t_j2 = (t / 1000 for t in best_interleaved(
        [batch(lambda: f(x)), batch(lambda: jac(x))], max(3, repeats // 4)))
    return {"problem": name, "f": t_f, "J": t_j, "f2": t_f2, "J2": t_j2, "calls": calls,
            "seconds": took, "cached": cached,
            "kernel": jac.stats()["engine"].get("kernel")}


def steady_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| problem | f µs | J µs before | J/f before | calls until built (s) | disk cache "
             "| J µs after | J/f after |", "|---|--:|--:|--:|--:|---|--:|--:|"]
    for r in rows:
        after = (f"{r['J2'] * 1e6:.2f} | {r['J2'] / r['f2']:.2f}"
                 if r["kernel"] == "compiled, generated" else "not built | -")
        lines.append(
            f"| {r['problem']} | {r['f2'] * 1e6:.2f} | {r['J'] * 1e6:.2f} | {r['J'] / r['f']:.2f} "
            f"| {r['calls']:,} ({r['seconds']:.1f}) | {'warm' if r['cached'] else 'cold'} "
            f"| {after} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
