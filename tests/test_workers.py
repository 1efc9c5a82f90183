"""``workers=`` for finite differences: the same Jacobian, bit for bit, however f is evaluated.

Oracles: the serial finite-difference Jacobian itself (bit-identical), and the exact one.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import time
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.fd import check_workers, worker_map


def black_box(x: np.ndarray) -> np.ndarray:
    """A module-level function (pickles for worker processes): tridiagonal, nonlinear."""
    r = np.exp(0.3 * x) - x ** 2
    r[1:] += np.sin(x[:-1])
    r[:-1] -= 0.5 * x[1:]
    return r


def with_args(x: np.ndarray, a: float, *, b: float = 1.0) -> np.ndarray:
    return a * black_box(x) + b


X = np.linspace(0.1, 1.3, 40)
PATTERN = sparsejac.jacobian_sparsity(black_box, X)


@pytest.mark.parametrize("method", ["2-point", "3-point"])
def test_threads_processes_and_custom_maps_give_identical_jacobians(method: str) -> None:
    serial = sparsejac.SparseJacobian(black_box, X, mode="fd", sparsity=PATTERN,
                                      fd_method=method)(X)
    seen: list[int] = []

    def counting_map(fn: Any, points: Any) -> list[Any]:
        points = list(points)
        seen.append(len(points))
        return [fn(p) for p in reversed(points)][::-1]  # evaluated in another order

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        for workers in (1, 2, pool.map, counting_map):
            jac = sparsejac.SparseJacobian(black_box, X, mode="fd", sparsity=PATTERN,
                                           fd_method=method, workers=workers)
            got = jac(X)
            np.testing.assert_array_equal(got.data, serial.data)
            np.testing.assert_array_equal(got.indices, serial.indices)
    assert seen == [jac.n_products]
    exact = sparsejac.jacobian(black_box, X)
    assert abs(serial - exact).max() < 1e-5


def test_arguments_reach_worker_processes() -> None:
    jac = sparsejac.SparseJacobian(with_args, X, mode="fd", sparsity=PATTERN, args=(2.0,),
                                   kwargs={"b": 3.0}, workers=2)
    ref = sparsejac.SparseJacobian(with_args, X, mode="fd", sparsity=PATTERN, args=(2.0,),
                                   kwargs={"b": 3.0})
    np.testing.assert_array_equal(jac(X).data, ref(X).data)
    one_off = sparsejac.jacobian(with_args, X, mode="fd", sparsity=PATTERN, args=(2.0,),
                                 workers=2)
    np.testing.assert_array_equal(one_off.data,
                                  sparsejac.jacobian(with_args, X, mode="fd", sparsity=PATTERN,
                                                     args=(2.0,)).data)


def test_bad_workers_are_refused() -> None:
    with pytest.raises(ValueError, match="`workers` must be None, a positive int"):
        check_workers(0)
    with pytest.raises(ValueError, match="`workers` must be None"):
        check_workers("four")
    with pytest.raises(ValueError, match=r"`workers` applies to mode='fd'"):
        sparsejac.SparseJacobian(black_box, X, workers=2)
    short = sparsejac.SparseJacobian(black_box, X, mode="fd", sparsity=PATTERN,
                                     workers=lambda fn, pts: [fn(p) for p in list(pts)[:2]])
    with pytest.raises(ValueError, match="`workers` returned 2 results for"):
        short(X)
    with worker_map(None) as m:
        assert m is map


def _sleepy(x: np.ndarray) -> np.ndarray:
    time.sleep(0.05)
    return black_box(x)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_serial_jacobian() -> None:
    """A real dask.distributed LocalCluster (processes, loopback) as the map."""
    if importlib.util.find_spec("distributed") is None:
        pytest.skip("dask.distributed is not installed (the optional [distributed] extra)")
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        def dask_map(fn: Any, points: Any) -> list[Any]:
            return client.gather(client.map(fn, list(points), pure=False))

        got = sparsejac.SparseJacobian(black_box, X, mode="fd", sparsity=PATTERN,
                                       workers=dask_map)(X)
    serial = sparsejac.SparseJacobian(black_box, X, mode="fd", sparsity=PATTERN)(X)
    np.testing.assert_array_equal(got.data, serial.data)


def test_a_jacobian_with_a_pools_map_copies_and_says_why_it_does_not_pickle():
    """Found from outside: copy.deepcopy and pickle of a prepared Jacobian whose `workers=`
    is an executor's map failed with pickle's own message. A copy shares the map; pickle
    names `workers` and the ways out."""
    import copy
    import pickle

    x = np.linspace(0.5, 1.5, 6)
    pattern = np.eye(6, dtype=bool) | np.eye(6, k=1, dtype=bool)
    serial = sparsejac.SparseJacobian(_module_f, x, mode="fd", sparsity=pattern)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        jac = sparsejac.SparseJacobian(_module_f, x, mode="fd", sparsity=pattern,
                                       workers=ex.map)
        twin = copy.deepcopy(jac)
        np.testing.assert_array_equal(twin(x * 1.1).toarray(), serial(x * 1.1).toarray())
        with pytest.raises(TypeError, match=r"workers=.*cannot be pickled.*deepcopy shares"):
            pickle.dumps(jac)
    plain = pickle.loads(pickle.dumps(sparsejac.SparseJacobian(
        _module_f, x, mode="fd", sparsity=pattern, workers=map)))
    np.testing.assert_array_equal(plain(x).toarray(), serial(x).toarray())


def _module_f(x: np.ndarray) -> np.ndarray:
    return np.append(x[:-1] * x[1:], x[-1] ** 2)
