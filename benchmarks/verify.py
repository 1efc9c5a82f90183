"""The cost of ``verify``: a prepared Jacobian's check that ``f`` still computes what it recorded.

At every call a prepared Jacobian (``verify=True``, the default) replays the recorded
program's values at a fixed generic offset of ``x`` and compares them with a real call of
``f``, so that a changed global, closure variable or container is noticed (it then prepares
again). This script times one Jacobian with and without the check on the benchmark problems
of ``benchmarks/jacobian.py`` and prints the overhead in milliseconds and in evaluations of
``f`` (minimum of ``--repeats`` interleaved rounds).

Usage: ``python benchmarks/verify.py [--quick] [--repeats N]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import sparsejac

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jacobian import PROBLEMS


def _time(fn, x) -> float:
    t0 = time.perf_counter()
    fn(x)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the small problems only")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    print("| problem | n | f ms | J ms (verify) | J ms (verify=False) | overhead ms | "
          "overhead / f |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for name, make, small in PROBLEMS:
        if args.quick and not small:
            continue
        f, x0 = make()
        on = sparsejac.SparseJacobian(f, x0)
        off = sparsejac.SparseJacobian(f, x0, verify=False)
        x = x0 * 1.01
        on(x)
        off(x)
        t_f = t_on = t_off = np.inf
        for _ in range(args.repeats):  # interleaved: both see the same machine load
            t_f = min(t_f, _time(f, x))
            t_on = min(t_on, _time(on, x))
            t_off = min(t_off, _time(off, x))
        extra = t_on - t_off
        print(f"| {name} | {x0.size:,} | {t_f * 1e3:.3f} | {t_on * 1e3:.3f} | "
              f"{t_off * 1e3:.3f} | {extra * 1e3:.3f} | {extra / t_f:.1f} |")


if __name__ == "__main__":
    main()
