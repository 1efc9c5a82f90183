"""Sparsity-detection benchmark: time and peak memory of ``sparsejac.jacobian_sparsity``.

Problems (every detected pattern is compared with the analytic one; a mismatch aborts):

* the 2D Brusselator on a periodic N × N grid (``np.roll``), N = 32 … 512 (n = 2 N²);
* a tridiagonal Burgers residual built with ``out = np.zeros_like(u); out[1:-1] = ...``,
  n = 1e3 … 1e6;
* a 3D 7-point periodic stencil ``lap(u) + u**2`` on N³ grids, N = 32, 64, 100.

Each problem runs in a fresh subprocess: the time is the best of a few runs after a warm-up on
a small instance (numba kernels loaded), the memory is the growth of the process's peak RSS
during one detection (inputs and the warm-up excluded). If the optional peer ``asdex`` (JAX) is
importable, it is timed on the same problems (``pip install asdex jax``; not a dependency of
sparsejac, see ``pip install -e '.[bench]'``).

Usage::

    python benchmarks/detection.py            # the full table (a few minutes)
    python benchmarks/detection.py --quick    # the small sizes only
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy
import scipy.sparse as sp

# ---------------------------------------------------------------------------------------------
# problems: numpy function, input, analytic pattern (and a JAX twin for asdex)
# ---------------------------------------------------------------------------------------------


def brusselator(xp: Any) -> Callable[[Any], Any]:
    """The 2D Brusselator right-hand side on x of shape (N, N, 2), for numpy or jax.numpy."""
    alpha, a, b = 10.0, 3.4, 1.0

    def lap(z: Any) -> Any:
        return (xp.roll(z, 1, axis=0) + xp.roll(z, -1, axis=0)
                + xp.roll(z, 1, axis=1) + xp.roll(z, -1, axis=1) - 4 * z)

    def f(x: Any) -> Any:
        u, v = x[..., 0], x[..., 1]
        du = alpha * lap(u) + b + u * u * v - (a + 1) * u
        dv = alpha * lap(v) + a * u - u * u * v
        return xp.stack([du, dv], axis=-1)

    return f


def brusselator_pattern(n_grid: int) -> sp.csr_array:
    """Analytic pattern: 5-point periodic stencil per species plus the u-v coupling."""
    i, j, c = np.meshgrid(np.arange(n_grid), np.arange(n_grid), np.arange(2), indexing="ij")
    i, j, c = i.ravel(), j.ravel(), c.ravel()
    row = (i * n_grid + j) * 2 + c
    cols = [((i + di) % n_grid * n_grid + (j + dj) % n_grid) * 2 + c
            for di, dj in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))]
    cols.append((i * n_grid + j) * 2 + (1 - c))
    n = 2 * n_grid * n_grid
    return _pattern(np.tile(row, 6), np.concatenate(cols), n, n)


def burgers(u: Any) -> Any:
    """Viscous Burgers residual with Dirichlet rows (the zeros_like + slice-assign idiom)."""
    dx, nu = 1e-3, 1e-2
    out = np.zeros_like(u)
    out[1:-1] = -u[1:-1] * (u[2:] - u[:-2]) / (2 * dx) + nu * (u[2:] - 2 * u[1:-1] + u[:-2]) / dx**2
    out[0] = u[0] - 1.0
    out[-1] = u[-1]
    return out


def burgers_jax(u: Any) -> Any:
    """The same residual with JAX's functional updates."""
    dx, nu = 1e-3, 1e-2
    inner = -u[1:-1] * (u[2:] - u[:-2]) / (2 * dx) + nu * (u[2:] - 2 * u[1:-1] + u[:-2]) / dx**2
    out = u * 0.0
    out = out.at[1:-1].set(inner)
    out = out.at[0].set(u[0] - 1.0)
    return out.at[-1].set(u[-1])


def burgers_pattern(n: int) -> sp.csr_array:
    """Tridiagonal inside, one diagonal entry in each boundary row."""
    i = np.arange(1, n - 1)
    rows = np.concatenate([i, i, i, [0, n - 1]])
    cols = np.concatenate([i - 1, i, i + 1, [0, n - 1]])
    return _pattern(rows, cols, n, n)


def stencil3d(xp: Any) -> Callable[[Any], Any]:
    """Periodic 7-point Laplacian plus a reaction term on u of shape (N, N, N)."""
    def f(u: Any) -> Any:
        lap = -6 * u
        for axis in range(3):
            lap = lap + xp.roll(u, 1, axis=axis) + xp.roll(u, -1, axis=axis)
        return lap + u * u

    return f


def stencil3d_pattern(n_grid: int) -> sp.csr_array:
    """Each point reads itself and its six periodic neighbours."""
    i, j, k = np.meshgrid(*(np.arange(n_grid),) * 3, indexing="ij")
    i, j, k = i.ravel(), j.ravel(), k.ravel()
    row = (i * n_grid + j) * n_grid + k
    cols = [row]
    for di, dj, dk in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
        cols.append(((i + di) % n_grid * n_grid + (j + dj) % n_grid) * n_grid
                    + (k + dk) % n_grid)
    n = n_grid**3
    return _pattern(np.tile(row, 7), np.concatenate(cols), n, n)


def _pattern(rows: np.ndarray, cols: np.ndarray, m: int, n: int) -> sp.csr_array:
    pat = sp.csr_array((np.ones(rows.size, dtype=bool), (rows, cols)), shape=(m, n))
    pat.sum_duplicates()
    return pat


def problem(family: str, size: int) -> tuple[Callable[[Any], Any], np.ndarray,
                                              Callable[[], sp.csr_array], int]:
    """(f, x, analytic pattern thunk, n) for a family and a size."""
    rng = np.random.default_rng(0)
    if family == "brusselator":
        return (brusselator(np), rng.uniform(0.5, 1.5, (size, size, 2)),
                lambda: brusselator_pattern(size), 2 * size * size)
    if family == "burgers":
        return burgers, rng.uniform(0.5, 1.5, size), lambda: burgers_pattern(size), size
    if family == "stencil3d":
        return (stencil3d(np), rng.uniform(0.5, 1.5, (size,) * 3),
                lambda: stencil3d_pattern(size), size**3)
    raise ValueError(f"unknown family {family!r}")


SIZES = {
    "brusselator": [32, 64, 128, 256, 512],
    "burgers": [1_000, 10_000, 100_000, 1_000_000],
    "stencil3d": [32, 64, 100],
}
QUICK = {"brusselator": [32, 64, 128], "burgers": [1_000, 100_000], "stencil3d": [32]}
WARMUP = {"brusselator": 8, "burgers": 50, "stencil3d": 6}
#: the project's detection-time targets (seconds)
BARS = {("brusselator", 128): 0.05, ("brusselator", 512): 2.0, ("burgers", 1_000_000): 2.0}


def _label(family: str, size: int) -> str:
    return {"brusselator": f"Brusselator N={size}", "burgers": f"Burgers n={size:.0e}",
            "stencil3d": f"7-point 3D N={size}"}[family]


# ---------------------------------------------------------------------------------------------
# workers (one subprocess per problem)
# ---------------------------------------------------------------------------------------------


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def worker_sparsejac(family: str, size: int, repeats: int) -> dict[str, Any]:
    """Time and measure sparsejac on one problem; check the pattern."""
    import sparsejac

    f_small, x_small, _, _ = problem(family, WARMUP[family])
    sparsejac.jacobian_sparsity(f_small, x_small)  # load numba kernels, import everything
    f, x, analytic, n = problem(family, size)
    base = _maxrss_mb()
    t0 = time.perf_counter()
    pat = sparsejac.jacobian_sparsity(f, x)
    first = time.perf_counter() - t0
    peak = _maxrss_mb() - base
    times = [first]
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        sparsejac.jacobian_sparsity(f, x)
        times.append(time.perf_counter() - t0)
    expected = analytic()
    ok = (pat.shape == expected.shape and pat.nnz == expected.nnz
          and (pat != expected).nnz == 0)
    nbytes = pat.indices.nbytes + pat.indptr.nbytes + pat.data.nbytes
    return {"n": n, "nnz": int(pat.nnz), "time": min(times), "peak_mb": peak,
            "pattern_mb": nbytes / 2**20, "ok": bool(ok)}


def worker_asdex(family: str, size: int, repeats: int) -> dict[str, Any]:
    """Time asdex's detection on the JAX twin of one problem; check the pattern."""
    import asdex
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    fj = {"brusselator": brusselator(jnp), "burgers": burgers_jax,
          "stencil3d": stencil3d(jnp)}[family]
    _, x, analytic, n = problem(family, size)
    _, x_small, _, _ = problem(family, WARMUP[family])

    def detect(xs: np.ndarray) -> Any:
        return asdex.jacobian_sparsity(fj, jnp.asarray(xs))

    detect(x_small)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = detect(x)
        times.append(time.perf_counter() - t0)
    expected = analytic()
    got = _pattern(np.asarray(res.rows), np.asarray(res.cols), *res.shape)
    ok = got.shape == expected.shape and (got != expected).nnz == 0
    return {"n": n, "time": min(times), "ok": bool(ok)}


def _run_worker(kind: str, family: str, size: int, repeats: int, timeout: float
                ) -> dict[str, Any] | None:
    cmd = [sys.executable, __file__, "--worker", kind, family, str(size), str(repeats)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} worker for {family} {size} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run every problem, print one table, check the acceptance bars."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per problem")
    parser.add_argument("--no-asdex", action="store_true", help="skip the asdex comparison")
    parser.add_argument("--asdex-timeout", type=float, default=300.0,
                        help="seconds allowed per asdex problem")
    parser.add_argument("--worker", nargs=4, metavar=("KIND", "FAMILY", "SIZE", "REPEATS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        kind, family, size, repeats = args.worker
        fn = worker_sparsejac if kind == "sparsejac" else worker_asdex
        print(json.dumps(fn(family, int(size), int(repeats))))
        return 0

    have_asdex = (not args.no_asdex and importlib.util.find_spec("asdex") is not None
                  and importlib.util.find_spec("jax") is not None)
    import sparsejac

    print(f"sparsejac {sparsejac.__version__} detection benchmark, "
          f"{datetime.date.today().isoformat()}")
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"scipy {scipy.__version__}, {platform.machine()}, {_cpu()}")
    if have_asdex:
        from importlib.metadata import version

        print(f"asdex {version('asdex')}, jax {version('jax')}")
    else:
        print("asdex: skipped (not importable; `pip install asdex jax` to compare)")
    print()
    head = (f"{'problem':<22} {'n':>9} {'nnz':>10} {'time [s]':>9} {'peak RSS [MB]':>14} "
            f"{'pattern [MB]':>13} {'check':>6}")
    if have_asdex:
        head += f" {'asdex [s]':>10} {'speed-up':>9}"
    print(head)
    print("-" * len(head))
    sizes = QUICK if args.quick else SIZES
    failures = []
    asdex_gave_up = set()
    for family, family_sizes in sizes.items():
        for size in family_sizes:
            res = _run_worker("sparsejac", family, size, args.repeats, 1800.0)
            assert res is not None
            if not res["ok"]:
                raise AssertionError(f"{_label(family, size)}: pattern differs from the "
                                     "analytic one")
            line = (f"{_label(family, size):<22} {res['n']:>9} {res['nnz']:>10} "
                    f"{res['time']:>9.4f} {res['peak_mb']:>14.1f} {res['pattern_mb']:>13.1f} "
                    f"{'ok':>6}")
            if have_asdex:
                ares = None if family in asdex_gave_up else _run_worker(
                    "asdex", family, size, 1 if size >= 256 else args.repeats,
                    args.asdex_timeout)
                if ares is None:
                    asdex_gave_up.add(family)
                    line += f" {'> ' + str(int(args.asdex_timeout)):>10} {'':>9}"
                else:
                    mark = "" if ares["ok"] else " (pattern differs)"
                    line += f" {ares['time']:>10.3f} {ares['time'] / res['time']:>8.0f}x{mark}"
            print(line, flush=True)
            bar = BARS.get((family, size))
            if bar is not None and res["time"] >= bar:
                failures.append(f"{_label(family, size)}: {res['time']:.3f} s >= {bar} s")
    print()
    for (family, size), bar in BARS.items():
        if size in sizes.get(family, []):
            status = "FAIL" if any(_label(family, size) in f for f in failures) else "pass"
            print(f"acceptance: {_label(family, size)} under {bar} s: {status}")
    return 1 if failures else 0


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        return f"{len(names)} x {names[0]}" if names else platform.processor()
    except OSError:
        return platform.processor()


if __name__ == "__main__":
    sys.exit(main())
