"""Memory and time per Jacobian nonzero: the 2-D Brusselator from N = 128 up to n = 10⁷.

Each size runs in its own process (``--worker``), after a small warm-up instance (numba
kernels loaded), with ``examples/brusselator_bdf.py``'s right-hand side (n = 2 N²,
6 nonzeros per row). Steps, each timed:

* ``detect``: ``sparsejac.jacobian_sparsity(f, y0)``;
* ``prepare``: ``SparseJacobian(f, y0)`` (trace, detection, colouring, recording), its split
  printed after the table from ``stats()["seconds"]``;
* ``J``: its first call, then the least of three more (in place, ``out=``).

Memory is read from the kernel: the peak resident set of each step (``VmHWM``, reset
before it) over the process's resident set before it, and the resident set
(``/proc/self/statm``) after preparation with the Jacobian object alive, both per Jacobian
nonzero (the Jacobian itself, float64 values with int32 indices, is 12 bytes per nonzero plus
the row pointers). A goal line follows the table: resident at most 60 and peak at most 150
bytes per nonzero.

    .venv/bin/python benchmarks/memory.py                 # N = 128 ... 2,236 (n = 10^7),
                                                          # about 5 minutes, 16 GB at the top
    .venv/bin/python benchmarks/memory.py --quick         # N = 128, 256, 512
    .venv/bin/python benchmarks/memory.py --sizes 1024    # chosen grid sizes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import machine  # benchmarks/common.py

REPO = Path(__file__).resolve().parent.parent
RESIDENT_GOAL, PEAK_GOAL = 60.0, 150.0


def _reset_peak() -> None:
    """Start a new peak: Linux resets VmHWM when "5" is written to clear_refs."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _peak() -> float:
    """Peak resident set since the last :func:`_reset_peak`, bytes (VmHWM)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) * 1024.0
    raise RuntimeError("no VmHWM in /proc/self/status")


def _rss() -> float:
    """Current resident set, bytes."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _step(out: dict[str, Any], name: str, fn: Any) -> Any:
    """Run ``fn`` once: its seconds and peak over the resident set before it into ``out``."""
    base = _rss()
    _reset_peak()
    t = time.perf_counter()
    result = fn()
    out[f"{name}_s"] = time.perf_counter() - t
    out[f"{name}_peak"] = _peak() - base
    return result


def worker(N: int) -> dict[str, Any]:
    """One size in this process: time and memory of each step."""
    import numpy as np

    sys.path.insert(0, str(REPO / "examples"))
    import brusselator_bdf  # examples/ is not a package

    import sparsejac
    import sparsejac.memory

    rhs, y_small = brusselator_bdf.make_problem(16)
    small = sparsejac.SparseJacobian(lambda y: rhs(0.0, y), y_small)
    small(y_small)
    del small
    rhs, y0 = brusselator_bdf.make_problem(N)

    def f(y: Any) -> Any:
        return rhs(0.0, y)

    out: dict[str, Any] = {"N": N, "n": int(y0.size)}
    pattern = _step(out, "detect", lambda: sparsejac.jacobian_sparsity(f, y0))
    nnz = out["nnz"] = int(pattern.nnz)
    del pattern
    # what detection freed goes back to the system first: the preparation's growth is then
    # what it keeps, not what it keeps less the detection's freed heap it reused
    sparsejac.memory.return_freed_memory()
    base = _rss()
    jac = _step(out, "prepare", lambda: sparsejac.SparseJacobian(f, y0))
    out["resident"] = _rss() - base
    out["path"] = jac.stats()["engine"].get("path")
    out["seconds"] = jac.stats()["seconds"]  # the preparation's own split
    y1 = y0 + 1e-3 * np.cos(np.arange(y0.size))
    _reset_peak()
    t = time.perf_counter()
    J = jac(y1)
    out["J1_s"] = time.perf_counter() - t
    times = []
    for _ in range(3):  # the next calls, in place: the least of three
        t = time.perf_counter()
        J = jac(y1, out=J)
        times.append(time.perf_counter() - t)
    out["J2_s"] = min(times)
    out["eval_peak"] = _peak() - base
    assert J.nnz == nnz
    out["matrix_bytes"] = int(J.data.nbytes + J.indices.nbytes + J.indptr.nbytes)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 128, 256, 512")
    parser.add_argument("--sizes", type=int, nargs="*", help="grid sizes N (n = 2 N^2)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    sizes = args.sizes or ([128, 256, 512] if args.quick else [128, 256, 512, 1024, 2236])
    print(machine())
    print("| N | n | nnz | detect s | detect peak B/nnz | prepare s | prepare peak B/nnz "
          "| resident B/nnz | first J s | J s | eval peak B/nnz | path |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    worst_res = worst_peak = 0.0
    splits = []
    for N in sizes:
        proc = subprocess.run([sys.executable, __file__, "--worker", str(N)],
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            print(f"| {N} | failed: {proc.stderr.strip().splitlines()[-1:]} |", flush=True)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        nnz = r["nnz"]
        peak = max(r["prepare_peak"], r["eval_peak"], r["detect_peak"]) / nnz
        worst_peak = max(worst_peak, peak)
        worst_res = max(worst_res, r["resident"] / nnz)
        print(f"| {N:,} | {r['n']:,} | {nnz:,} | {r['detect_s']:.2f} | "
              f"{r['detect_peak'] / nnz:.0f} | {r['prepare_s']:.2f} | "
              f"{r['prepare_peak'] / nnz:.0f} | {r['resident'] / nnz:.0f} | "
              f"{r['J1_s']:.3f} | {r['J2_s']:.3f} | {r['eval_peak'] / nnz:.0f} | "
              f"{r['path']} |", flush=True)
        splits.append((N, r["seconds"]))
    print(f"\nworst resident {worst_res:.0f} B/nnz (goal <= {RESIDENT_GOAL:.0f}), worst peak "
          f"{worst_peak:.0f} B/nnz (goal <= {PEAK_GOAL:.0f}); the Jacobian itself is about "
          "12 B/nnz")
    print("\nwithin each preparation (stats()[\"seconds\"]): tracing and detection, colouring, "
          "recording (the prepared engine's symbolic chain rule)")
    for N, sec in splits:
        rec, det = sec.get("preparation", 0.0), sec.get("detection", 0.0)
        print(f"  N = {N:,}: detection {det:.2f} s, colouring {sec.get('coloring', 0.0):.2f} s, "
              f"recording {rec:.2f} s (recording / detection {rec / max(det, 1e-9):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
