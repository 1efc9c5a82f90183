"""Colouring a scipy matrix, conversion included, against scipy's ``group_columns``.

The 5-point Laplacian on an N × N grid given as ``sp.csr_array(sp.kron(I, T) +
sp.kron(T, I))`` (N = 1000: 10⁶ columns, 5·10⁶ nonzeros), coloured by
``sparsejac.color(A, "column", "natural")`` (the pattern is built from the canonical CSR
arrays in linear time, then one first-fit pass) and by
``scipy.optimize._numdiff.group_columns(A)`` (scipy's default, which converts to CSC
itself), interleaved in one process, minimum of ``--repeats`` runs each after one untimed
call. Also the same with CSC input.

Run ``python benchmarks/conversion.py`` (``--sizes 300 1000``, ``--repeats 7``).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp
from common import machine
from scipy.optimize._numdiff import group_columns

import sparsejac


def laplacian(n: int, fmt: str) -> sp.sparray:
    t = sp.diags([np.ones(n - 1), -2.0 * np.ones(n), np.ones(n - 1)], [-1, 0, 1])
    i = sp.identity(n)
    a = sp.kron(i, t) + sp.kron(t, i)
    return sp.csr_array(a) if fmt == "csr" else sp.csc_array(a)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"# {machine()}")
    print("| input | n | nnz | sparsejac natural s (colours) | group_columns s (groups) | "
          "ratio |")
    print("|---|---|---|---|---|---|")
    sparsejac.color(laplacian(10, "csr"), "column", "natural")  # load the kernels, untimed
    group_columns(laplacian(10, "csr"))
    for n in args.sizes:
        for fmt in ("csr", "csc"):
            a = laplacian(n, fmt)
            ours, theirs = [], []
            c = sparsejac.color(a, "column", "natural")
            g = group_columns(a)
            for _ in range(args.repeats):
                t = time.perf_counter()
                sparsejac.color(a, "column", "natural")
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                group_columns(a)
                theirs.append(time.perf_counter() - t)
            print(f"| {fmt}_array | {a.shape[1]:,} | {a.nnz:,} | {min(ours):.3f} "
                  f"({c.n_colors}) | {min(theirs):.3f} ({int(g.max()) + 1}) | "
                  f"{min(theirs) / min(ours):.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
