"""Measure the cost of a reverse product relative to a forward one (``DEFAULT_REVERSE_COST``).

``mode="auto"`` (by default) and ``sparsejac.color(..., partition="auto")`` rank
modes by forward products + ``reverse_cost`` × reverse products. This script measures the
ratio it stands for on the benchmark problems, with the same number of seeds both ways (8
one-hot seeds), for the eager interpreters (one-shot ``sparsejac.jacobian``) and the prepared
engine (``SparseJacobian``), and prints the median the default is set from.

    .venv/bin/python benchmarks/reverse_cost.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from jacobian import brusselator, bundle, burgers, dense_row  # noqa: E402

from sparsejac.ad import (  # noqa: E402
    PreparedProgram,
    program_jvp,
    program_vjp,
)
from sparsejac.coloring.interface import DEFAULT_REVERSE_COST  # noqa: E402
from sparsejac.tracing import trace  # noqa: E402

SEEDS = 8


def best(fn: Callable[[], Any], repeats: int = 7) -> float:
    """Minimum wall time of ``repeats`` calls (after one untimed call)."""
    fn()
    t = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def ratios(f: Callable[[np.ndarray], Any], x: np.ndarray) -> tuple[float, float]:
    """(eager, prepared) time of a reverse sweep over that of a forward sweep, 8 seeds each."""
    prog = trace(f, x)
    m, n = prog.n_out, prog.n_in
    s = np.zeros((SEEDS, n))
    s[np.arange(SEEDS), np.arange(SEEDS)] = 1.0
    w = np.zeros((SEEDS, m))
    w[np.arange(SEEDS), np.arange(SEEDS)] = 1.0
    eager = best(lambda: program_vjp(prog, w.reshape((SEEDS, *prog.out.shape)))) / best(
        lambda: program_jvp(prog, s.reshape((SEEDS, *x.shape))))
    pp = PreparedProgram(prog, width=SEEDS)
    cg, rg = np.arange(n) % SEEDS, np.arange(m) % SEEDS
    prepared = best(lambda: pp.reverse(x, rg, SEEDS)) / best(lambda: pp.forward(x, cg, SEEDS))
    return eager, prepared


def main() -> int:
    problems = [
        ("Brusselator N=64", lambda: brusselator(64)),
        ("Brusselator N=128", lambda: brusselator(128)),
        ("Burgers n=1e5", lambda: burgers(100_000)),
        ("bundle adj. 20x4000", lambda: bundle(20, 4000)),
        ("dense row n=1e4", lambda: dense_row(10_000)),
    ]
    print("command: python benchmarks/reverse_cost.py")
    print("| problem | eager rev/fwd | prepared rev/fwd |\n|---|--:|--:|")
    all_ratios = []
    for name, build in problems:
        f, x = build()
        e, p = ratios(f, x)
        all_ratios += [e, p]
        print(f"| {name} | {e:.2f} | {p:.2f} |")
    print(f"\nmedian of all ratios: {np.median(all_ratios):.2f} "
          f"(DEFAULT_REVERSE_COST = {DEFAULT_REVERSE_COST})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
