"""Finite differences of a slow black box on parallel workers (``workers=``).

The black box sleeps 50 ms per call (a stand-in for a simulation) and has a banded Jacobian
of 16 colours, so one 2-point Jacobian is 17 calls: about 0.85 s in one process. Rows:
serial; a ``multiprocessing`` pool of 2 (created per Jacobian, as ``workers=2`` does, and
reused: ``workers=pool.map``); a ``dask.distributed`` LocalCluster of 4 single-threaded worker
processes when dask is installed (the optional ``[distributed]`` extra). Every Jacobian is
checked bit-identical to the serial one. Best of ``--repeats``.

    .venv/bin/python benchmarks/workers.py
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import time
from typing import Any

import numpy as np
from common import machine  # benchmarks/common.py

import sparsejac

N, BAND = 64, 16


def black_box(x: np.ndarray) -> np.ndarray:
    time.sleep(0.05)
    out = np.zeros(N)
    for k in range(BAND):  # row i reads columns i .. i + 15 (wrapping): 16 colours
        out += np.roll(x, -k) ** 2 / (k + 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    x = np.linspace(0.1, 1.0, N)
    rows = (np.arange(N)[:, None] + np.arange(BAND)[None, :]) % N
    pattern = np.zeros((N, N), dtype=bool)
    pattern[np.repeat(np.arange(N), BAND), rows.ravel()] = True

    def timed(workers: Any) -> tuple[float, np.ndarray, int]:
        jac = sparsejac.SparseJacobian(black_box, x, mode="fd", sparsity=pattern,
                                       workers=workers)
        best = np.inf
        for _ in range(args.repeats):
            t = time.perf_counter()
            data = jac(x).data
            best = min(best, time.perf_counter() - t)
        return best, data, jac.n_products

    print(machine())
    print("| how f is evaluated | evaluations | seconds per Jacobian | speed-up |")
    print("|---|--:|--:|--:|")
    serial, ref, calls = timed(None)
    print(f"| serial (one process) | {calls} | {serial:.2f} | 1.00 |")
    t, data, _ = timed(2)
    assert np.array_equal(data, ref)
    print(f"| workers=2 (a new pool per Jacobian) | {calls} | {t:.2f} | {serial / t:.2f} |")
    with multiprocessing.Pool(2) as pool:
        t, data, _ = timed(pool.map)
    assert np.array_equal(data, ref)
    print(f"| workers=pool.map (2 processes, reused) | {calls} | {t:.2f} | {serial / t:.2f} |")
    if importlib.util.find_spec("distributed") is None:
        print("| dask LocalCluster, 4 workers | - | skipped: dask.distributed not installed | - |")
        return 0
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        def dask_map(fn: Any, points: Any) -> list[Any]:
            return client.gather(client.map(fn, list(points), pure=False))

        t, data, _ = timed(dask_map)
    assert np.array_equal(data, ref)
    print(f"| dask LocalCluster, 4 worker processes | {calls} | {t:.2f} | {serial / t:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
