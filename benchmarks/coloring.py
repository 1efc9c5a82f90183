"""Colouring benchmark: sparsejac's orders and `best` against ColPack and scipy; bicolouring.

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

A second table compares bidirectional colouring (mixed mode) with ColPack's implicit-covering
star bicolouring (`star_bicoloring_implicit` in colpack_reference.csv, forward plus reverse
passes, the neutral colour excluded), on every shared matrix, on an arrowhead with
n = 46,500 and on a tridiagonal matrix with n = 16,000 plus one dense row and one dense
column:

    col, row  passes of the one-sided `best` colourings
    star      fewest passes of a star bicolouring (implicit covering; "/full": full covering)
    split     fewest passes of a split construction (dense rows in reverse, rest forward, or
              the transpose), coloured by DSATUR
    recolor   fewest passes after re-colouring a candidate with the one-sided search
    bidi      passes of order="best" for partition="bidirectional" (forward+reverse), and
              `bidi s` its time (it includes both one-sided searches; minimum of repeats)
    ColPack   ColPack's best star bicolouring over its orders, and the order
    auto      what partition="auto" picks (default reverse cost 1.5) and its passes

A third table compares symmetric colouring (Hessians) with ColPack's star and acyclic
colourings, on every structurally symmetric shared matrix (the others are listed as skipped;
a symmetric matrix without ColPack counts is listed too) and on generated ones:

    colB      the column colouring's lower bound (largest row count), for comparison
    LB        the symmetric lower bound (symmetric_lower_bound: edges per vertex)
    star ...  star colours in each named order (nat LF SL ID DLF dsat rand), of
              order="best" (**bold**) and its time, and ColPack's best star count (order)
    acyc ...  the same for acyclic colouring

    .venv/bin/python benchmarks/coloring.py            # everything (several minutes)
    .venv/bin/python benchmarks/coloring.py --quick    # skip the inputs above 10**5 columns
    .venv/bin/python benchmarks/coloring.py --bidirectional-only
    .venv/bin/python benchmarks/coloring.py --symmetric-only
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
from sparsejac.pattern import SparsityPattern, as_pattern

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


def colpack_bicoloring() -> dict[str, tuple[int, str]]:
    """ColPack's fewest star-bicolouring passes per matrix, and the order that gave them."""
    best: dict[str, tuple[int, str]] = {}
    path = SHARED / "colpack_reference.csv"
    if not path.is_file():
        return best
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["problem"] == "star_bicoloring_implicit":
                got = (int(row["colors"]), row["ordering"])
                best[row["matrix"]] = min(best.get(row["matrix"], got), got)
    return best


def arrowhead(n: int) -> SparsityPattern:
    """Dense first row and first column plus the diagonal."""
    i = np.arange(n)
    zeros = np.zeros(n, dtype=np.int64)
    return SparsityPattern((n, n), np.concatenate((zeros, i, i)), np.concatenate((i, zeros, i)))


def banded_dense(n: int) -> SparsityPattern:
    """Tridiagonal plus one dense row (n // 2) and one dense column (n // 3)."""
    i = np.arange(n)
    rows = np.concatenate((i, i[1:], i[:-1], np.full(n, n // 2), i))
    cols = np.concatenate((i, i[:-1], i[1:], i, np.full(n, n // 3)))
    return SparsityPattern((n, n), rows, cols)


def bench_bidirectional(
    name: str, pattern: SparsityPattern, reference: tuple[int, str] | None, repeats: int
) -> tuple[list[str], int]:
    times = []
    r = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = sparsejac.color(pattern, "bidirectional")
        times.append(time.perf_counter() - t0)
    assert r is not None
    sparsejac.coloring.check_bicoloring(pattern, r.column_groups, r.row_groups)
    best: dict[str, tuple[int, str]] = {}
    for c in r.candidates:
        if c.n_colors < 0:
            continue
        kind = (
            "col"
            if c.name == "column"
            else "row"
            if c.name == "row"
            else "split"
            if c.name.startswith("split")
            else "recolor"
            if "recolor" in c.name
            else "star"
        )
        best[kind] = min(best.get(kind, (c.n_colors, c.name)), (c.n_colors, c.name))
    auto = sparsejac.color(pattern, "auto")
    m, n = pattern.shape

    def cell(kind: str) -> str:
        if kind not in best:
            return "-"
        k, label = best[kind]
        suffix = "/full" if label.endswith("/full") else ""
        return f"{k}{suffix}"

    row = [
        name,
        f"{m}×{n}",
        str(pattern.nnz),
        cell("col"),
        cell("row"),
        cell("star"),
        cell("split"),
        cell("recolor"),
        f"**{r.n_colors}** ({r.n_forward}+{r.n_reverse})",
        f"{min(times):.2f}",
        "-" if reference is None else f"{reference[0]} ({reference[1]})",
        f"{auto.partition} {auto.n_forward}+{auto.n_reverse}",
    ]
    return row, r.n_colors


def bidirectional_table(args: argparse.Namespace) -> int:
    reference = colpack_bicoloring()
    cases: list[tuple[str, SparsityPattern]] = []
    for path in sorted(SHARED.glob("*.mtx")) if SHARED.is_dir() else []:
        cases.append((path.stem, as_pattern(path)))
    cases.append(("arrowhead 46500", arrowhead(46_500)))
    cases.append(("tridiag+dense 16000", banded_dense(16_000)))
    header = [
        "matrix",
        "m×n",
        "nnz",
        "col",
        "row",
        "star",
        "split",
        "recolor",
        "bidi (fwd+rev)",
        "bidi s",
        "ColPack bicolour",
        "auto",
    ]
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    fewer = equal = worse = 0
    for name, pattern in cases:
        ref = reference.get(name)
        row, got = bench_bidirectional(name, pattern, ref, max(1, min(args.repeats, 3)))
        print("| " + " | ".join(row) + " |", flush=True)
        if ref is not None:
            fewer += got < ref[0]
            equal += got == ref[0]
            worse += got > ref[0]
    print()
    print(
        f"# bidirectional best vs ColPack's best star bicolouring: fewer passes on {fewer}, "
        f"equal on {equal}, more on {worse} (of {fewer + equal + worse} matrices)"
    )
    return 1 if worse else 0


def colpack_symmetric() -> dict[tuple[str, str], tuple[int, str]]:
    """ColPack's fewest star and acyclic colours per matrix, and the order that gave them."""
    best: dict[tuple[str, str], tuple[int, str]] = {}
    path = SHARED / "colpack_reference.csv"
    if not path.is_file():
        return best
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["problem"] in ("star", "acyclic"):
                key = (row["matrix"], row["problem"])
                got = (int(row["colors"]), row["ordering"])
                best[key] = min(best.get(key, got), got)
    return best


def is_symmetric(pattern: SparsityPattern) -> bool:
    m, n = pattern.shape
    return m == n and bool(
        np.array_equal(pattern.indptr, pattern.col_indptr)
        and np.array_equal(pattern.indices, pattern.col_indices))


def bench_symmetric(
    name: str, pattern: SparsityPattern, reference: dict[tuple[str, str], tuple[int, str]]
) -> tuple[list[str], list[tuple[str, int, int]]]:
    from sparsejac.coloring.symmetric import AdjacencyGraph, symmetric_groups

    graph = AdjacencyGraph(pattern)
    cells = [name, f"{pattern.shape[0]}", str(pattern.nnz),
             str(int(pattern.row_counts.max())), str(graph.lower_bound)]
    compared = []
    for method in ("star", "acyclic"):
        for order in ORDER_COLUMNS:  # the header's sequence
            fn = ORDERS[order]
            perm = fn(graph, "symmetric", np.random.default_rng(0))  # type: ignore[arg-type]
            cells.append(str(int(symmetric_groups(graph, method, perm).max()) + 1))
        r = sparsejac.color(pattern, "symmetric", method=method)
        cells += [f"**{r.n_colors}**", f"{r.seconds:.2f}"]
        ref = reference.get((name, method))
        cells.append("-" if ref is None else f"{ref[0]} ({ref[1]})")
        if ref is not None:
            compared.append((method, r.n_colors, ref[0]))
    return cells, compared


def symmetric_table(args: argparse.Namespace) -> int:
    reference = colpack_symmetric()
    cases: list[tuple[str, SparsityPattern]] = []
    skipped, missing = [], []
    for path in sorted(SHARED.glob("*.mtx")) if SHARED.is_dir() else []:
        pattern = as_pattern(path)
        if not is_symmetric(pattern):
            skipped.append(path.stem)
            continue
        cases.append((path.stem, pattern))
        if not all((path.stem, m) in reference for m in ("star", "acyclic")):
            missing.append(path.stem)
    cases.append(("lap2d 100²", as_pattern(laplacian(100, 2))))
    cases.append(("lap3d 20³", as_pattern(laplacian(20, 3))))
    if not args.quick:
        cases.append(("lap2d 300²", as_pattern(laplacian(300, 2))))
    cases.append(("arrowhead 10000", arrowhead(10_000)))
    short = list(ORDER_COLUMNS.values())
    header = ["matrix", "n", "nnz", "colB", "LB",
              *(f"star {o}" for o in short), "star best", "s", "ColPack star",
              *(f"acyc {o}" for o in short), "acyc best", "s", "ColPack acyclic"]
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    counts = {"fewer": 0, "equal": 0, "more": 0}
    for name, pattern in cases:
        row, compared = bench_symmetric(name, pattern, reference)
        print("| " + " | ".join(row) + " |", flush=True)
        for _, got, ref in compared:
            counts["fewer" if got < ref else "equal" if got == ref else "more"] += 1
    print()
    print(
        f"# symmetric best vs ColPack's best star/acyclic: fewer colours on {counts['fewer']}, "
        f"equal on {counts['equal']}, more on {counts['more']} "
        f"(of {sum(counts.values())} matrix/method pairs)"
    )
    print(f"# not structurally symmetric (skipped): {', '.join(skipped) or 'none'}")
    print(f"# symmetric without ColPack star/acyclic counts: {', '.join(missing) or 'none'}")
    return 1 if counts["more"] else 0


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
    pattern = as_pattern(A)
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
    parser.add_argument(
        "--bidirectional-only", action="store_true", help="only the bidirectional table"
    )
    parser.add_argument(
        "--symmetric-only", action="store_true", help="only the symmetric (Hessian) table"
    )
    args = parser.parse_args(argv)
    warm_up()
    if args.symmetric_only:
        print(f"# sparsejac symmetric colouring benchmark, {datetime.date.today().isoformat()}")
        print(f"# command: {' '.join([Path(sys.executable).name, *sys.argv])}")
        print(f"# machine: {machine()}")
        return symmetric_table(args)
    if args.bidirectional_only:
        print(f"# sparsejac bicolouring benchmark, {datetime.date.today().isoformat()}")
        print(f"# command: {' '.join([Path(sys.executable).name, *sys.argv])}")
        print(f"# machine: {machine()}")
        return bidirectional_table(args)
    reference = colpack_best()
    cases: list[tuple[str, sp.sparray, str, int | None]] = []
    for path in sorted(SHARED.glob("*.mtx")) if SHARED.is_dir() else []:
        A = sp.csc_array(as_pattern(path).to_csr_array())
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
    worse_bi = bidirectional_table(args)
    worse_sym = symmetric_table(args)
    return 1 if worse or worse_bi or worse_sym else 0


if __name__ == "__main__":
    sys.exit(main())
