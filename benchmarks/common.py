"""Helpers shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import datetime
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy

import sparsejac

# The in-process benchmarks time a process past its start: with numba imported, every kernel
# runs compiled from its first call. (Before numba is loaded, a process runs small inputs on
# numpy paths and interpreted kernels, for about 0.25 s of such work: `sparsejac.kernels`;
# benchmarks/startup.py times fresh processes.) SPARSEJAC_BENCH_NUMBA=0 leaves it unloaded:
# the paths of a process that has not loaded it yet (`solvers.py --without-numba`).
if os.environ.get("SPARSEJAC_BENCH_NUMBA", "1") != "0":
    import numba  # noqa: F401

def machine() -> str:
    """Interpreter, numpy, scipy and sparsejac versions, architecture and date."""
    return (f"{platform.python_implementation()} {platform.python_version()}, numpy "
            f"{np.__version__}, scipy {scipy.__version__}, sparsejac {sparsejac.__version__}, "
            f"{platform.machine()}, {datetime.date.today().isoformat()}")


def best_interleaved(fns: list[Callable[[], Any]], repeats: int) -> list[float]:
    """The minimum wall time of each of ``fns`` over ``repeats`` rounds calling each once.

    One untimed call of each first; rounds alternate the contenders so that a slow phase of
    the machine (fresh memory pages, another process) hits them alike.
    """
    for fn in fns:
        fn()
    out = [float("inf")] * len(fns)
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            out[k] = min(out[k], time.perf_counter() - t)
    return out


def best(fn: Callable[[], Any], repeats: int) -> float:
    """The minimum wall time of ``repeats`` calls of ``fn``, after one untimed call."""
    fn()
    out = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out
