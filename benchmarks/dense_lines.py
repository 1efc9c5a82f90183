"""Dense rows and columns: colouring time and peak memory against n, for every order.

Three pattern families, n = 2,000 ... 256,000 (doubling):

* ``arrow``       -- the diagonal, a dense first row and a dense first column (they cross at
  the apex, entry (0, 0));
* ``arrow-apart`` -- the diagonal, a dense first row over columns 0..n-2 and a dense last
  column over rows 1..n-1 (they share no entry);
* ``bvp``         -- the Jacobian of a boundary-value problem with an unknown parameter and a
  normalisation row, ``F(z)`` with ``u, lam = z[:-1], z[-1]``: rows ``u[i-1] - 2 u[i] +
  u[i+1] + lam u[i]`` (a tridiagonal block and a dense last column) and ``sum(u**2) - 1``
  (a dense last row).

For each family and n, every partition and order is one case: ``column`` and ``row`` with
every order of ``sparsejac.coloring.ORDERS`` and ``best``; ``bidirectional`` and ``auto``
with every order of ``BIDIRECTIONAL_ORDERS`` and ``best``; for ``bvp`` also
``sparsejac.SparseJacobian(F, z)`` (tracing, detection, colouring, engine). Each case runs
in its own forked subprocess of a process that has built the pattern and loaded every
kernel (on a small instance): the time is that of ``sparsejac.color(pattern, partition,
order)`` (the minimum of three runs when one takes under 0.2 s), the memory the growth of
the subprocess's peak resident set during the first run (``VmHWM`` after resetting it
through ``/proc/self/clear_refs``; where that is unavailable, the growth of ``ru_maxrss``).
A case taking longer than ``--timeout`` seconds is killed and shown as ``>T``.

The table gives, per case: the colours at the largest n (forward+reverse), the seconds at
every n, ``t×2`` -- the time ratio per doubling of n over the last three doublings,
``(t(N) / t(N/8)) ** (1/3)``: 2 is linear, 4 quadratic -- the peak MB at the largest n and
``m×2``, the same ratio for memory (``-`` below 1 MB). ``best`` is bounded by its work
budget (``--effort``, default 2 as in ``sparsejac.color``), so beyond small n its time stops
growing.

Usage::

    python benchmarks/dense_lines.py            # n = 2,000 ... 256,000 (about 10 minutes)
    python benchmarks/dense_lines.py --quick    # n = 2,000 ... 16,000, effort 0.25 (2 min)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import scipy
import scipy.sparse as sp

import sparsejac
from sparsejac.coloring import BIDIRECTIONAL_ORDERS, ORDERS
from sparsejac.pattern import SparsityPattern, as_pattern

SIZES = [2_000 * 2**k for k in range(8)]
QUICK_SIZES = SIZES[:4]
FAMILIES = ("arrow", "arrow-apart", "bvp")

# -- patterns --------------------------------------------------------------------------------


def arrow(n: int) -> sp.csr_array:
    """Diagonal, dense first row and dense first column (crossing at (0, 0))."""
    i = np.arange(n)
    r = np.concatenate([i, np.zeros(n - 1, dtype=int), i[1:]])
    c = np.concatenate([i, i[1:], np.zeros(n - 1, dtype=int)])
    return sp.csr_array((np.ones(r.size), (r, c)), shape=(n, n))


def arrow_apart(n: int) -> sp.csr_array:
    """Diagonal, row 0 over columns 0..n-2, column n-1 over rows 1..n-1: no common entry."""
    i = np.arange(n)
    r = np.concatenate([i, np.zeros(n - 2, dtype=int), i[1:-1]])
    c = np.concatenate([i, i[1:-1], np.full(n - 2, n - 1)])
    return sp.csr_array((np.ones(r.size), (r, c)), shape=(n, n))


def bvp_function(z: np.ndarray) -> np.ndarray:
    """The BVP residual: 3-point second difference + lam u, and the normalisation row."""
    u, lam = z[:-1], z[-1]
    up = np.concatenate([[0.0], u, [0.0]])
    return np.concatenate([up[:-2] - 2 * up[1:-1] + up[2:] + lam * u, [np.sum(u**2) - 1.0]])


def bvp(n: int) -> sp.csr_array:
    """The Jacobian pattern of :func:`bvp_function` at a point of size n (checked below)."""
    k = n - 1
    i = np.arange(k)
    r = np.concatenate([i, i[1:], i[:-1], i, np.full(k, k)])
    c = np.concatenate([i, i[1:] - 1, i[:-1] + 1, np.full(k, k), i])
    return sp.csr_array((np.ones(r.size), (r, c)), shape=(n, n))


MAKE: dict[str, Callable[[int], sp.csr_array]] = {
    "arrow": arrow, "arrow-apart": arrow_apart, "bvp": bvp}


def cases() -> list[tuple[str, str]]:
    """(partition, order) of every case."""
    out = []
    for part in ("column", "row", "bidirectional", "auto"):
        names = ORDERS if part in ("column", "row") else BIDIRECTIONAL_ORDERS
        out += [(part, name) for name in [*names, "best"]]
    return out


# -- measuring in a forked subprocess ----------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _measure(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run ``fn`` (the first run measured for memory), in this (child) process."""
    exact = _reset_peak()
    base = _status_kb("VmRSS") if exact else resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    peak = (_status_kb("VmHWM") if exact else resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss) - base
    if seconds < 0.2:
        for _ in range(2):
            t0 = time.perf_counter()
            fn()
            seconds = min(seconds, time.perf_counter() - t0)
    return {"seconds": seconds, "peak_mb": max(peak, 0) / 1024.0, "result": out}


def in_subprocess(fn: Callable[[], Any], timeout: float) -> dict[str, Any]:
    """:func:`_measure` ``fn`` in a forked child; ``{"timeout": True}`` if it runs too long."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, send one JSON line, exit without cleanup
        os.close(read)
        try:
            payload = json.dumps(_measure(fn))
        except BaseException as exc:  # reported by the parent
            payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        os.write(write, payload.encode())
        os._exit(0)
    os.close(write)
    chunks = []
    deadline = time.perf_counter() + timeout
    timed_out = False
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read], [], [], left)
        if not ready:
            continue
        data = os.read(read, 1 << 16)
        if not data:
            break
        chunks.append(data)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read)
    if timed_out:
        return {"timeout": True}
    return json.loads(b"".join(chunks).decode())  # type: ignore[no-any-return]


def _colour(pattern: SparsityPattern, part: str, order: str, effort: float
            ) -> Callable[[], str]:
    def run() -> str:
        r = sparsejac.color(pattern, part, order, effort=effort)
        return f"{r.n_forward}+{r.n_reverse}"
    return run


def _prepare(n: int) -> Callable[[], str]:
    z = np.linspace(0.5, 1.5, n)

    def run() -> str:
        jac = sparsejac.SparseJacobian(bvp_function, z)
        return f"{jac.n_products} products ({jac.mode})"
    return run


def warm_up(effort: float) -> None:
    """Load every kernel and import everything the cases use, on small instances."""
    for make in MAKE.values():
        p = as_pattern(make(300))
        for part, order in cases():
            sparsejac.color(p, part, order, effort=min(effort, 0.01))
    sparsejac.SparseJacobian(bvp_function, np.linspace(0.5, 1.5, 300))


# -- the table ---------------------------------------------------------------------------


def machine() -> str:
    """CPU, cores and versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, "
            f"numpy {np.__version__}, scipy {scipy.__version__}, numba {numba.__version__}, "
            f"sparsejac {sparsejac.__version__}")


def _ratio(values: list[float | None], floor: float) -> str:
    """``(v[-1] / v[-4]) ** (1/3)``: growth per doubling over the last three doublings."""
    if len(values) < 4 or values[-1] is None or values[-4] is None or values[-4] < floor:
        return "-"
    return f"{(values[-1] / values[-4]) ** (1 / 3):.2f}"


def _seconds(cell: dict[str, Any], timeout: float) -> str:
    if cell.get("timeout"):
        return f">{timeout:g}"
    if "error" in cell:
        return "error"
    s = float(cell["seconds"])
    return f"{s:.3f}" if s < 10 else f"{s:.1f}"


def run(sizes: list[int], effort: float, timeout: float, families: list[str]) -> int:
    """Print the table; return 1 if a case failed or timed out."""
    warm_up(effort)
    failed = 0
    header = ["family", "partition", "order", "colours", *(f"{n // 1000}k s" for n in sizes),
              "t×2", "peak MB", "m×2"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for family in families:
        rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for n in sizes:
            pattern = as_pattern(MAKE[family](n))
            _ = pattern.col_indptr, pattern.csc_to_csr, pattern.rows  # shared by every case
            todo = [(part, order, _colour(pattern, part, order, effort))
                    for part, order in cases()]
            if family == "bvp":
                todo.append(("prepared", "SparseJacobian", _prepare(n)))
            for part, order, fn in todo:
                cell = in_subprocess(fn, timeout)
                failed += int("seconds" not in cell)
                rows.setdefault((part, order), []).append(cell)
            del pattern
        for (part, order), cells in rows.items():
            ok = [c if "seconds" in c else None for c in cells]
            seconds = [None if c is None else float(c["seconds"]) for c in ok]
            peaks = [None if c is None else float(c["peak_mb"]) for c in ok]
            last = ok[-1]
            line = [family, part, order, "-" if last is None else str(last["result"]),
                    *(_seconds(c, timeout) for c in cells), _ratio(seconds, 0.002),
                    "-" if last is None else f"{last['peak_mb']:.1f}", _ratio(peaks, 1.0)]
            print("| " + " | ".join(line) + " |", flush=True)
    return int(failed > 0)


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 2,000 ... 16,000 only")
    parser.add_argument("--effort", type=float, default=None,
                        help="effort of order='best' (default 2, or 0.25 with --quick)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds after which a case is killed (default 120)")
    parser.add_argument("--family", choices=FAMILIES, action="append",
                        help="only these families (repeatable)")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    effort = args.effort if args.effort is not None else (0.25 if args.quick else 2.0)
    # the pattern of bvp() is the one sparsejac detects for bvp_function
    small = np.linspace(0.5, 1.5, 40)
    detected = sparsejac.jacobian_sparsity(bvp_function, small)
    assert (sp.csr_array(detected, dtype=float) != bvp(40)).nnz == 0, "bvp pattern mismatch"
    print(f"# sparsejac dense-line colouring benchmark, {datetime.date.today().isoformat()}")
    print(f"# command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"# machine: {machine()}")
    print(f"# effort of best: {effort:g}; times in seconds; peak = growth of the peak RSS")
    print()
    return run(sizes, effort, args.timeout, args.family or list(FAMILIES))


if __name__ == "__main__":
    sys.exit(main())
