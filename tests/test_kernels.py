"""Compiled kernels load on first call; the numpy paths for small inputs agree with them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from sparsejac.coloring import _kernels
from sparsejac.coloring.graph import BipartiteGraph
from sparsejac.coloring.greedy import _greedy_python, kernel_array
from sparsejac.kernels import LazyKernel, kernel, loaded
from sparsejac.pattern import as_pattern
from sparsejac.primitives import depsets


def random_csr(rng: np.random.Generator, m: int, n: int, density: float
               ) -> tuple[np.ndarray, np.ndarray]:
    a = sp.random_array((m, n), density=density, rng=rng, format="csr")
    a.sort_indices()
    return a.indptr.astype(np.int64), a.indices.astype(np.int64)


@pytest.mark.parametrize("seed", range(20))
def test_numpy_paths_equal_the_kernels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = rng.integers(0, 30), rng.integers(1, 30)
    ap, ai = random_csr(rng, m, n, rng.uniform(0, 0.5))
    bp, bi = random_csr(rng, m, n, rng.uniform(0, 0.5))
    rows = rng.integers(-1, max(m, 1), size=rng.integers(0, 40)) if m else \
        -np.ones(3, dtype=np.int64)
    for got, want in ((depsets._take_rows_numpy(ap, ai, rows),
                       depsets._take_rows_kernel(ap, ai, rows)),
                      (depsets._union2_numpy(ap, ai, bp, bi, n),
                       depsets._union2_kernel(ap, ai, bp, bi))):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("seed", range(20))
def test_python_first_fit_equals_the_kernel(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pattern = as_pattern(sp.random_array((rng.integers(1, 40), rng.integers(1, 40)),
                                         density=rng.uniform(0.02, 0.6), rng=rng))
    for partition in ("column", "row"):
        g = BipartiteGraph(pattern, partition)
        arrays = (g.vptr, g.vidx, g.nptr, g.nidx)
        order = rng.permutation(g.n_vertices)
        for o in (None, order):
            want = _kernels.greedy(*arrays, kernel_array(np.arange(g.n_vertices) if o is None
                                                          else o))
            np.testing.assert_array_equal(_greedy_python(g.vptr, g.vidx, o), want)


def test_lazy_kernel_compiles_on_first_call() -> None:
    @kernel(cache=False)
    def twice(a):  # type: ignore[no-untyped-def]
        return 2 * a

    assert isinstance(twice, LazyKernel)
    assert "not loaded" in repr(twice)
    assert twice(21) == 42
    assert "compiled" in repr(twice)
    assert loaded()


def test_a_small_first_jacobian_does_not_import_numba() -> None:
    code = (
        "import sys, numpy as np, sparsejac\n"
        "def f(x):\n"
        "    y = x ** 2 - np.sin(x)\n"
        "    y[1:] += x[:-1]\n"
        "    return y\n"
        "J = sparsejac.jacobian(f, np.linspace(0.1, 1.0, 50))\n"
        "assert J.nnz == 99\n"
        "print('numba' in sys.modules)\n"
        "import sparsejac.coloring._dense as d\n"   # kernels imported from other modules
        "print(d._above.__class__.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "LazyKernel"]


def test_cross_module_kernels_bind_in_a_fresh_process() -> None:
    """A kernel module whose kernels call kernels of another binds both."""
    code = (
        "import numpy as np, sparsejac\n"
        "from sparsejac.coloring.dense import DenseNets\n"
        "p = sparsejac.jacobian_sparsity(lambda x: np.concatenate([x[1:] * x[:-1],"
        " [np.sum(x ** 2)]]), np.ones(3000))\n"
        "c = sparsejac.color(p, 'column', 'dsatur')\n"
        "print(c.n_colors)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert int(out[0]) == 3000
