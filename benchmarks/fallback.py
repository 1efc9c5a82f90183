"""What a process pays for running numpy twins instead of compiled kernels, per entry.

Before numba is loaded (``sparsejac.kernels``), a kernel with a numpy twin runs the twin, and
each call draws budget units (about 10 ns each) from the process's fallback budget: once the
budget is spent, numba loads and the compiled kernels take over. A twin's draw should be what
it costs *more* than its compiled kernel (the rent of not having bought numba's start), so
this script measures both on the calls real preparations make.

It prepares and evaluates a few problems with numba loaded (Broyden's tridiagonal function,
n = 10⁵; the 2-D Brusselator, N = 128, in every mode), keeps the arguments of every call of a
kernel that has a twin (up to ``--calls`` per kernel, of at least ``--min-size`` entries),
then times each kept call compiled and twinned on fresh copies of its arguments (the least of
``--repeats``), and prints per kernel: the entries, nanoseconds per entry each way, the
excess, and the units per entry that excess is worth (:attr:`LazyKernel.twin_weight` is set
from it, rounded up).

    .venv/bin/python benchmarks/fallback.py           # about half a minute
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from common import machine  # benchmarks/common.py (imports numba: every kernel compiled)

REPO = Path(__file__).resolve().parent.parent


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _least(fn: Any, args: tuple[Any, ...], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        a = _copies(args)
        t = time.perf_counter()
        fn(*a)
        best = min(best, time.perf_counter() - t)
    return best


def capture(calls: int, min_size: int) -> dict[str, list[tuple[Any, tuple[Any, ...], int]]]:
    """Each twinned kernel's calls (kernel, argument copies, entries) in a few preparations."""
    sys.path.insert(0, str(REPO / "examples"))
    sys.path.insert(0, str(REPO / "benchmarks"))
    import brusselator_bdf  # examples/ is not a package
    from problems import broyden

    import sparsejac
    from sparsejac import kernels

    kept: dict[str, list[tuple[Any, tuple[Any, ...], int]]] = defaultdict(list)
    original = kernels.LazyKernel.__call__

    def keeping(self: Any, *args: Any) -> Any:
        if self.twin is not None:
            size = sum(a.size for a in args if hasattr(a, "size"))
            if size >= min_size and len(kept[self.__name__]) < calls:
                kept[self.__name__].append((self, _copies(args), size))
        return original(self, *args)

    kernels.LazyKernel.__call__ = keeping  # type: ignore[method-assign]
    try:
        x0 = -np.ones(100_000)
        jac = sparsejac.SparseJacobian(broyden, x0)
        jac(x0 + 0.1)
        rhs, y0 = brusselator_bdf.make_problem(128)
        for mode in ("auto", "forward", "reverse", "mixed"):
            jac = sparsejac.SparseJacobian(lambda y: rhs(0.0, y), y0, mode=mode)
            jac(y0 + 0.01)
    finally:
        kernels.LazyKernel.__call__ = original  # type: ignore[method-assign]
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=12, help="calls kept per kernel")
    parser.add_argument("--min-size", type=int, default=10_000,
                        help="least entries of a kept call")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(machine())
    kept = capture(args.calls, args.min_size)
    print(f"{'kernel':16s} {'calls':>5s} {'entries':>10s} {'compiled ns':>11s} "
          f"{'twin ns':>8s} {'excess ns':>9s} {'units':>6s} {'weight':>6s}")
    for name in sorted(kept):
        compiled = twin = 0.0
        entries = 0
        for kernel_, call_args, size in kept[name]:
            compiled += _least(kernel_.compiled, call_args, args.repeats)
            twin += _least(kernel_.twin, call_args, args.repeats)
            entries += size
        c, t = 1e9 * compiled / entries, 1e9 * twin / entries
        units = max(t - c, 0.0) / 10.0
        weight = kept[name][0][0].twin_weight
        print(f"{name:16s} {len(kept[name]):5d} {entries:10,d} {c:11.2f} {t:8.2f} "
              f"{t - c:9.2f} {units:6.2f} {weight:6.2f}")
    print("(per entry of the call's arrays; units: the excess in budget units of 10 ns; weight:"
          " what a twin's call draws per entry now)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
