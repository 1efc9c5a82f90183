"""Colouring benchmark: sparsejac's orders and `best` against ColPack and scipy, one table.

For every matrix of ../shared/data/matrices (column and row colouring) and for synthetic
5-point (2D) and 7-point (3D) Laplacians up to 10**6 columns (column colouring; they are
symmetric), the table lists:

    LB        lower bound (largest row count for columns, column count for rows)
    nat ... dsat
              colours of first-fit greedy in each named order (rand: seeded random order)
    best      colours of order="best" (default time budget), and its time `best s`
    ColPack   ColPack's best over its orders (colpack_reference.csv), "-" where not measured
    gc        colours of scipy's group_columns with its default order (random, seed 0)
    gc nat s  time of scipy.optimize._numdiff.group_columns(A, order=np.arange(n)) on CSC input
    nat s     time of sparsejac's natural-order pass on the same pattern (kernels compiled)
    speedup   gc nat s / nat s (both produce the same groups)

Times are the minimum over repeats, after one untimed warm-up call. Rows use the
transposed matrix for scipy.

    .venv/bin/python benchmarks/coloring.py            # everything (several minutes)
    .venv/bin/python benchmarks/coloring.py --quick    # skip the inputs above 10**5 columns
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
import scipy
import scipy.sparse as sp
from scipy.optimize._numdiff import group_columns

import sparsejac
from sparsejac.coloring import ORDERS, BipartiteGraph, warm_up
from sparsejac.coloring.greedy import greedy_color

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "matrices"
ORDER_COLUMNS = {
    "natural": "nat",
    "largest_first": "LF",
    "smallest_last": "SL",
    "incidence_degree": "ID",
    "dynamic_largest_first": "DLF",
    "dsatur": "dsat",
    "random": "rand",
}


def laplacian(N: int, dim: int) -> sp.csc_array:
    """5-point (dim=2) or 7-point (dim=3) Laplacian on an N**dim grid."""
    T = sp.diags_array([np.ones(N - 1), 2 * np.ones(N), np.ones(N - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(N)
    if dim == 2:
        A = sp.kron(T, eye) + sp.kron(eye, T)
    else:
        A = (
            sp.kron(sp.kron(T, eye), eye)
            + sp.kron(sp.kron(eye, T), eye)
            + sp.kron(sp.kron(eye, eye), T)
        )
    return sp.csc_array(A)


def colpack_best() -> dict[tuple[str, str], int]:
    best: dict[tuple[str, str], int] = {}
    path = SHARED / "colpack_reference.csv"
    if not path.is_file():
        return best
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            problem = {"column_pd2": "column", "row_pd2": "row"}.get(row["problem"])
            if problem and row["ordering"] != "lower_bound":
                key = (row["matrix"], problem)
                best[key] = min(best.get(key, 1 << 62), int(row["colors"]))
    return best


def timed(fn: Callable[[], object], repeats: int) -> tuple[object, float]:
    fn()  # warm-up (compilation, caches)
    best = float("inf")
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


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
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, numba {numba.__version__}, "
        f"sparsejac {sparsejac.__version__}"
    )


def bench(
    name: str, A: sp.sparray, partition: str, reference: int | None, repeats: int
) -> list[str]:
    pattern = sparsejac.as_pattern(A)
    graph = BipartiteGraph(pattern, partition)
    counts = {}
    for order, fn in ORDERS.items():
        if order == "dsatur":
            groups = sparsejac.color(pattern, partition, order="dsatur").groups
        else:
            groups = greedy_color(graph, fn(graph, partition, np.random.default_rng(0)))
        counts[order] = int(groups.max()) + 1
    best = sparsejac.color(pattern, partition)
    M = sp.csc_array(A if partition == "column" else sp.csr_array(A).T)
    M = sp.csc_array(M != 0)
    n = M.shape[1]
    gc_default = group_columns(M)
    order = np.arange(n)
    gc_nat, t_gc = timed(lambda: group_columns(M, order=order), repeats)
    ours, t_nat = timed(lambda: greedy_color(graph), repeats)
    assert np.array_equal(gc_nat, ours), f"{name}: natural order differs from group_columns"
    m_, n_ = pattern.shape
    return [
        name,
        partition,
        f"{m_}×{n_}",
        str(pattern.nnz),
        str(graph.lower_bound),
        *(str(counts[o]) for o in ORDER_COLUMNS),
        f"**{best.n_colors}**",
        f"{best.seconds:.2f}",
        "-" if reference is None else str(reference),
        str(int(gc_default.max()) + 1),
        f"{t_gc:.4f}",
        f"{t_nat:.4f}",
        f"{t_gc / t_nat:.1f}×",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip inputs above 1e5 columns")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (min is kept)")
    args = parser.parse_args(argv)
    warm_up()
    reference = colpack_best()
    cases: list[tuple[str, sp.sparray, str, int | None]] = []
    for path in sorted(SHARED.glob("*.mtx")) if SHARED.is_dir() else []:
        A = sp.csc_array(sparsejac.as_pattern(path).to_csr_array())
        for partition in ("column", "row"):
            cases.append((path.stem, A, partition, reference.get((path.stem, partition))))
    sizes2 = [100, 300] if args.quick else [100, 300, 1000]
    sizes3 = [10, 30] if args.quick else [10, 30, 50, 100]
    for N in sizes2:
        cases.append((f"lap2d {N}²", laplacian(N, 2), "column", None))
    for N in sizes3:
        cases.append((f"lap3d {N}³", laplacian(N, 3), "column", None))
    header = [
        "matrix",
        "part",
        "m×n",
        "nnz",
        "LB",
        *ORDER_COLUMNS.values(),
        "best",
        "best s",
        "ColPack",
        "gc",
        "gc nat s",
        "nat s",
        "speedup",
    ]
    print(f"# sparsejac colouring benchmark, {datetime.date.today().isoformat()}")
    print(f"# command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"# machine: {machine()}")
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    fewer = equal = worse = 0
    for name, A, partition, ref in cases:
        row = bench(name, A, partition, ref, args.repeats)
        print("| " + " | ".join(row) + " |", flush=True)
        if ref is not None:
            got = int(row[len(ORDER_COLUMNS) + 5].strip("*"))
            fewer += got < ref
            equal += got == ref
            worse += got > ref
    print()
    print(
        f"# best vs ColPack's best: fewer colours on {fewer}, equal on {equal}, more on {worse} "
        f"(of {fewer + equal + worse} matrix/partition pairs)"
    )
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
