"""Hand-written fast paths against the rules derived from the local Jacobian.

Every primitive states ``impl`` and ``linearize``; its pattern, jvp and vjp are derived from
the local Jacobian (``sparsejac.primitives.derive``). A primitive keeps a hand-written rule
only where it is measurably faster. This script times, for each kept fast path, the
hand-written rule and the derived one on the same node (minimum of ``--repeats`` runs, p = 8
seeds), and prints their ratio; a ratio above 1 means the fast path pays for itself.

Usage: ``python benchmarks/rules.py [--quick] [--repeats N]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import sparsejac  # noqa: F401  (installs the registry)
from sparsejac.primitives import depsets, derive
from sparsejac.primitives.core import Primitive
from sparsejac.tracing import trace
from sparsejac.tracing.walk import Values

P = 8


def _cases(n: int) -> dict[str, tuple[str, object]]:
    """Name -> (primitive measured, function whose trace contains it)."""
    a = np.random.default_rng(0).normal(size=(20, 20))
    pairs = sp.csc_array(sp.eye_array(n) - 0.1 * sp.kron(
        sp.eye_array(n // 2), sp.csr_array([[-2.0, 1.0], [1.0, -3.0]])))
    cases = {
        "gather (np.roll)": ("gather", lambda x: np.roll(x, 1)),
        "gather (slice)": ("gather", lambda x: x[1:]),
        "reduce_sum (rows of 10)": ("reduce_sum", lambda x: x.reshape(-1, 10).sum(axis=1)),
        "cumsum (lanes of 10)": ("cumsum", lambda x: np.cumsum(x.reshape(-1, 10), axis=1)),
        "einsum (constant 20x20 @ X)": ("einsum", lambda x: a @ x.reshape(20, -1)),
        "elementwise (sin)": ("sin", lambda x: np.sin(x)),
        "const_solve (spsolve, 2x2 blocks)": ("const_solve", lambda x: spla.spsolve(pairs, x)),
    }
    m = 20
    a20 = np.random.default_rng(2).normal(size=(m, m)) + m * np.eye(m)
    cases["solve (traced 20 x 20 matrices)"] = (
        "solve", lambda x: np.linalg.solve(x[:(x.size // (m * m)) * m * m].reshape(-1, m, m)
                                           + a20, np.ones(m)))
    if n <= 2_000:  # a dense inverse: the derived rules need n^2 entries
        tri = sp.csc_array(sp.diags_array([-1.0, 4.0, -1.0], offsets=[-1, 0, 1], shape=(n, n)))
        cases["const_solve (spsolve, tridiagonal)"] = (
            "const_solve", lambda x: spla.spsolve(tri, x))
    return cases


def _best(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _node(prim_name: str, f, n: int):
    prog = trace(f, np.linspace(0.5, 1.5, n))
    node = next(nd for nd in prog.nodes if nd.prim.name == prim_name and nd.out.active)
    return prog, node


def _rules(node, args, out, deps, tangents, ct) -> dict[str, tuple[object, object]]:
    """(hand-written, derived) callables of each rule on one node."""
    prim = node.prim
    return {
        "pattern": (lambda: prim.pattern(node, deps, False),
                    lambda: derive.derived_pattern(node, deps, False)),
        "jvp": (lambda: prim.jvp(node, args, tangents, out),
                lambda: derive.derived_jvp(node, args, tangents, out)),
        "vjp": (lambda: prim.vjp(node, args, out, ct),
                lambda: derive.derived_vjp(node, args, out, ct)),
    }


def measure(n: int, repeats: int) -> list[tuple[str, str, int, float, float]]:
    """(case, rule, n, fast seconds, derived seconds) for every hand-written rule."""
    rows = []
    rng = np.random.default_rng(1)
    for name, (prim_name, f) in _cases(n).items():
        prog, node = _node(prim_name, f, n)
        prim = node.prim
        vals = Values(prog).complete()
        args, out = vals.args(node), vals[node.out]
        deps = [depsets.identity(v.size) if v.active else None for v in node.inputs]
        tangents = [rng.normal(size=(P, *v.shape)) if v.active else None for v in node.inputs]
        ct = rng.normal(size=(P, *node.out.shape))
        derive.local_jacobians(node)  # built once per node, as in a replay
        checks = _rules(node, args, out, deps, tangents, ct)
        for rule, (fast, derived) in checks.items():
            if getattr(type(prim), rule) is getattr(Primitive, rule):
                continue  # no fast path: the derived rule is the rule
            rows.append((name, rule, n, _best(fast, repeats), _best(derived, repeats)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 10^3 and 10^5 only")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    sizes = (1_000, 100_000) if args.quick else (1_000, 100_000, 1_000_000)
    print("| primitive (case) | rule | n | fast path ms | derived ms | derived / fast |")
    print("|---|---|--:|--:|--:|--:|")
    for n in sizes:
        for name, rule, size, fast, derived in measure(n, args.repeats):
            print(f"| {name} | {rule} | {size:,} | {fast * 1e3:.3f} | {derived * 1e3:.3f} | "
                  f"{derived / fast:.1f}x |")


if __name__ == "__main__":
    main()
