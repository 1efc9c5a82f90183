"""Compiled kernels load on first call; the numpy paths for small inputs agree with them."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.coloring import _kernels
from sparsejac.coloring.graph import BipartiteGraph
from sparsejac.coloring.greedy import _greedy_python, kernel_array
from sparsejac.kernels import LazyKernel, kernel, loaded
from sparsejac.pattern import as_pattern
from sparsejac.primitives import depsets


def _child_output(code: str) -> list[str]:
    """The words ``code`` prints in a fresh Python process (which must succeed)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split()


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


@pytest.mark.parametrize("seed", range(20))
def test_scipy_grouping_is_the_natural_first_fit(seed: int) -> None:
    """Before numba is loaded, a natural-order first fit may take scipy's compiled
    Curtis-Powell-Reid grouping: the same colouring as the Python first fit and the kernel
    (empty vertices and nets included), and none where a dense net could make it
    quadratic."""
    import scipy.optimize  # noqa: F401  (the grouping is used only where it is loaded)

    from sparsejac.coloring.greedy import SCIPY_MAX_COLOURS, _greedy_scipy

    rng = np.random.default_rng(seed)
    pattern = as_pattern(sp.random_array((rng.integers(1, 60), rng.integers(1, 60)),
                                         density=rng.uniform(0.0, 0.2), rng=rng))
    for partition in ("column", "row"):
        g = BipartiteGraph(pattern, partition)
        got = _greedy_scipy(g.vptr, g.vidx)
        if got is None:  # only where some vertex could need too many colours
            sizes = np.bincount(g.vidx)
            assert max(int(np.sum(sizes[g.vidx[a:b]] - 1)) for a, b in
                       zip(g.vptr[:-1], g.vptr[1:], strict=True)) + 1 > SCIPY_MAX_COLOURS
            continue
        want = _kernels.greedy(g.vptr, g.vidx, g.nptr, g.nidx,
                               kernel_array(np.arange(g.n_vertices)))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, _greedy_python(g.vptr, g.vidx, None))
    n = 200  # a dense row: every column could need its own colour
    dense = BipartiteGraph(as_pattern(np.vstack([np.eye(n), np.ones((1, n))])), "column")
    assert _greedy_scipy(dense.vptr, dense.vidx) is None


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
    out = _child_output(code)
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
    out = _child_output(code)
    assert int(out[0]) == 3000

_NUMBA_STARTS_IN_A_TRACE = (
    "import sys\n"
    "import numpy as np\n"
    "import numba  # the user's program imports numba; its compiler has not started\n"
    "import sparsejac\n"
    "if sys.argv[2] == 'unguarded':\n"
    "    import sparsejac.tracing.buffers as b\n"
    "    b._NUMBA_IMPORTS.find_spec = lambda *a, **kw: None\n"
    "if sys.argv[1] == 'kernel':\n"
    "    def f(u):\n"
    "        s = u.reshape(50, 100)  # checks its index with a kernel: numba starts here\n"
    "        return (np.roll(s, 1, 0) - 2 * s + s ** 2).ravel()\n"
    "    sparsejac.SparseJacobian(f, np.linspace(0.0, 1.0, 5000))\n"
    "else:  # the user's own numba function, called by f, starts numba\n"
    "    @numba.njit\n"
    "    def double(y):\n"
    "        return 2.0 * y\n"
    "    try:\n"
    "        sparsejac.jacobian(lambda y: double(y), np.ones(3))\n"
    "    except sparsejac.TracedConversionError as exc:\n"
    "        assert 'numba-compiled function' in str(exc)\n"
    "@numba.njit\n"
    "def g(n):\n"
    "    return np.empty(n).size + np.zeros(n).size\n"
    "print(g(3))\n")


@pytest.mark.parametrize("route", ["kernel", "user"])
def test_numba_started_inside_a_trace_still_knows_numpy(route: str) -> None:
    """numba's compiler starting while a trace has wrapped ``np.empty`` and friends must not
    leave numba knowing the wrappers: a later compilation calling ``np.empty`` (the user's,
    or a sparsejac kernel missing from the cache) failed with numba's 'unsupported NumPy
    function'. Two routes: a sparsejac kernel first called inside a trace (the traced
    ``reshape``), and the user's ``@numba.njit`` function called by ``f`` (which also gets a
    sparsejac error, not numba's). numba's modules are imported with numpy's functions in
    place; without that, the same child fails (so the test can fail)."""
    def child(how: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _NUMBA_STARTS_IN_A_TRACE, route, how],
                              capture_output=True, text=True, timeout=300)

    guarded = child("guarded")
    assert guarded.returncode == 0, guarded.stderr
    assert guarded.stdout.split() == ["6"]
    unguarded = child("unguarded")
    assert unguarded.returncode != 0
    assert "numpy.empty" in unguarded.stderr or "numpy.zeros" in unguarded.stderr



def test_no_kernel_call_takes_numba_slow_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """After warm-up, the adapters' paths call every kernel through numba's fast dispatch.

    A call numba cannot match by argument types in C (for instance one relying on default
    arguments) goes through ``Dispatcher._compile_for_args``: tens of microseconds per call,
    which a small Jacobian's preparation pays several times.
    """
    dispatcher = pytest.importorskip("numba.core.dispatcher")
    if not hasattr(dispatcher.Dispatcher, "_compile_for_args"):
        pytest.skip("this numba has no _compile_for_args")

    def work() -> None:
        def kinetics(t: float, y: np.ndarray) -> np.ndarray:
            f = np.empty_like(y)
            f[0] = -0.04 * y[0] + 1e4 * y[1] * y[2]
            f[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2
            f[2] = 3e7 * y[1] ** 2
            return f

        y = np.array([1.0, 0.0, 0.0])
        sparsejac.ode_jacobian(kinetics, 0.0, y)(0.0, y)
        x = np.linspace(0.5, 1.5, 300)
        chain = sparsejac.SparseJacobian(lambda z: z[1:] * z[:-1] + np.sum(z), x, mode="mixed")
        chain(x)
        sparsejac.jacobian(lambda z: np.sin(z[1:]) - z[:-1] ** 2, x)
        sparsejac.SparseHessian(lambda z: np.sum(z[1:] * z[:-1] ** 2), x[:50])(x[:50])

    work()
    work()
    slow: list[str] = []
    original = dispatcher.Dispatcher._compile_for_args

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        slow.append(getattr(self, "__name__", repr(self)))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(dispatcher.Dispatcher, "_compile_for_args", spy)
    work()
    assert not slow, f"kernels dispatched through numba's slow path: {sorted(set(slow))}"


# ---------------------------------------------------------------------------------------------
# telling the user when kernels compile (KernelCompilationWarning), and warm-up
# ---------------------------------------------------------------------------------------------


def _fake_dispatcher(tmp_path: Any, index_age: float | None, stale: bool = True) -> Any:
    """A stand-in for a numba dispatcher: its source file and (age relative to it) index,
    which numba's own test finds ``stale`` (the source's stamp changed) or not."""
    import os
    from types import SimpleNamespace

    source = tmp_path / "kern.py"
    source.write_text("def f(): pass\n")
    index = tmp_path / "kern.f-1.py311.nbi"
    if index_age is not None:
        index.write_text("index")
        stamp = os.stat(source).st_mtime + index_age
        os.utime(index, (stamp, stamp))
    calls: list[Any] = []
    return SimpleNamespace(
        _cache=SimpleNamespace(_cache_file=SimpleNamespace(
            _index_path=str(index), _load_index=lambda: {} if stale else {"overload": 1})),
        py_func=SimpleNamespace(__code__=SimpleNamespace(co_filename=str(source))),
        compile=lambda sig: calls.append(sig) or sig, calls=calls)


@pytest.mark.parametrize(("age", "stale", "missing"), [
    (None, True, True),      # no index: compiled
    (10.0, True, False),     # an index newer than the source: loaded
    (-10.0, True, True),     # older, and numba finds it stale (an upgrade): compiled
    (-10.0, False, False),   # older, but the source was only touched (a reinstall): loaded
])
def test_cache_missing_reads_the_index_against_the_source(tmp_path: Any, age: float | None,
                                                         stale: bool, missing: bool) -> None:
    """Whether numba will compile: no index, or an older one that numba's test finds stale."""
    from sparsejac.kernels import cache_missing

    assert cache_missing(_fake_dispatcher(tmp_path, age, stale)) is missing
    assert cache_missing(object()) is False  # nothing to inspect: no claim


def test_compilation_is_announced_once_at_the_users_line(tmp_path: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The first compilation in a process warns once, pointing at the caller's code; a kernel
    found in the cache never warns."""
    import warnings

    from sparsejac import kernels as kmod
    from sparsejac.errors import KernelCompilationWarning

    monkeypatch.setattr(kmod, "_NOTICED", [False])
    (tmp_path / "cached").mkdir()
    cached = _fake_dispatcher(tmp_path / "cached", 10.0)
    fresh = _fake_dispatcher(tmp_path, None)
    kmod._notice_compilation(cached)
    kmod._notice_compilation(fresh)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cached.compile("sig0")
        assert seen == []
        assert fresh.compile("sig1") == "sig1"  # the compilation itself still happens
        fresh.compile("sig2")
    assert [w.category for w in seen] == [KernelCompilationWarning]
    assert seen[0].filename == __file__
    assert "sparsejac warm-up" in str(seen[0].message)
    assert fresh.calls == ["sig1", "sig2"]


def test_compilation_notice_skips_standard_library_frames(tmp_path: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Reached through a standard-library frame (a cached_property), the warning still names
    the caller's line, not functools'."""
    import functools
    import warnings

    from sparsejac import kernels as kmod

    monkeypatch.setattr(kmod, "_NOTICED", [False])
    fresh = _fake_dispatcher(tmp_path, None)
    kmod._notice_compilation(fresh)

    class Lazy:
        value = functools.cached_property(fresh.compile)  # functools calls the kernel

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        lazy = Lazy()
        assert lazy.value is lazy
    assert [w.filename for w in seen] == [__file__]


def test_warm_up_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                         ) -> None:
    """`sparsejac warm-up` runs sparsejac.warm_up and says how long it took."""
    from sparsejac import warmup
    from sparsejac.cli import main

    monkeypatch.setattr(warmup, "warm_up", lambda: 1.25)
    assert main(["warm-up"]) == 0
    out = capsys.readouterr().out
    assert "done in 1.2 s" in out or "done in 1.3 s" in out


@pytest.mark.parametrize(("sizes", "error"), [
    ((), TypeError), ((10.0,), TypeError), ((True,), TypeError), ("12", TypeError),
    ((12, 2), ValueError),
])
def test_warm_up_refuses_bad_sizes(sizes: Any, error: type) -> None:
    """Bad `sizes`: a clear error naming the argument, before any work."""
    with pytest.raises(error, match="`sizes`"):
        sparsejac.warm_up(sizes=sizes)


#: Robertson's stiff kinetics (``rhs``, ``y0``), as source for the fresh-process tests.
_ROBERTSON = (
    "def rhs(t, y):\n"
    "    f = np.empty_like(y)\n"
    "    f[0] = -0.04 * y[0] + 1e4 * y[1] * y[2]\n"
    "    f[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2\n"
    "    f[2] = 3e7 * y[1] ** 2\n"
    "    return f\n"
    "y0 = np.array([1.0, 0.0, 0.0])\n")


@pytest.mark.slow
def test_first_use_after_installing_warns_and_warm_up_prevents_it(tmp_path: Any) -> None:
    """With an empty kernel cache a first prepared Jacobian warns once; after
    `sparsejac warm-up`, a fresh process running solvers compiles nothing."""
    import os

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "first")}
    probe = (
        "import warnings, numpy as np, sparsejac\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    f = lambda x: x[1:] ** 2 - 2.5 * x[:-1] + np.sin(x[1:])\n"
        "    x = np.linspace(0, 1, 1_000_000)\n"  # large enough for compiled kernels
        "    J = sparsejac.SparseJacobian(f, x)\n"
        "    J(x)\n"
        "print(sum(w.category is sparsejac.KernelCompilationWarning for w in seen))\n")
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                           text=True, check=True)
    assert first.stdout.strip() == "1"
    again = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                           text=True, check=True)
    assert again.stdout.strip() == "0"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "warm")}
    subprocess.run([sys.executable, "-m", "sparsejac", "warm-up"], env=env, check=True,
                   capture_output=True)
    use = (
        "import warnings, numpy as np, sparsejac\n"
        "from scipy.integrate import solve_ivp\n"
        "from scipy.optimize import least_squares\n"
        "warnings.simplefilter('error', sparsejac.KernelCompilationWarning)\n"
        + _ROBERTSON +
        "solve_ivp(rhs, (0, 100), y0, method='BDF', jac=sparsejac.ode_jacobian(rhs, 0, y0))\n"
        "def g(x):\n"
        "    r = (3 - 2 * x) * x + 1\n"
        "    r[1:] -= x[:-1]\n"
        "    r[:-1] -= 2 * x[1:]\n"
        "    return r\n"
        "x0 = -np.ones(5000)\n"
        "least_squares(g, x0, jac=sparsejac.least_squares_jacobian(g, x0))\n"
        "sparsejac.jacobian(g, x0)\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", use], env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


#: Run twice: in a fresh process where numba cannot be imported (every kernel interpreted:
#: LazyKernel.python) and in this one with numba loaded (every kernel compiled). Prints one
#: line per result, floats as hex, so the two runs compare bit for bit.
_BOTH_WAYS = r'''
import numpy as np, scipy.sparse as sp, sparsejac, sparsejac.kernels as K
K._BUDGET[0] = 10 ** 12
lines = []
rng = np.random.default_rng(7)
for k in range(6):
    a = sp.random_array((int(rng.integers(2, 30)), int(rng.integers(2, 30))),
                        density=float(rng.uniform(0.05, 0.5)), rng=rng, format="csr")
    for partition in ("column", "row"):
        c = sparsejac.color(a, partition, "natural")
        groups = c.column_groups if partition == "column" else c.row_groups
        lines.append(f"{k} {partition} {c.n_colors} {groups.tolist()}")
    for order in ("natural", "random"):
        c = sparsejac.color(a, "bidirectional", order)
        lines.append(f"{k} bi {c.n_colors} {c.column_groups.tolist()} {c.row_groups.tolist()}")

def kinetics(t, y):
    f = np.empty_like(y)
    f[0] = -0.04 * y[0] + 1e4 * y[1] * y[2] / (1.0 + y[3] ** 2)
    f[1] = np.exp(-y[0]) * np.sqrt(y[2]) - np.log1p(y[1]) * np.tanh(y[3])
    f[2] = np.arctan(y[2] * y[3]) - np.abs(y[1] - 0.5) + y[0] ** 2.5 + np.cos(t * y[1])
    f[3] = np.sinh(y[0]) / np.cosh(y[2]) + np.expm1(y[3]) * np.log(y[0]) - np.tan(y[1])
    f[4] = np.sum(y[:4] * y[1:5]) + 1.0 / y[4] + np.sin(y[4]) - y[4] ** 3
    return f

def chain(x):
    r = (3 - 2 * x) * x + 1
    r[1:] -= x[:-1]
    r[:-1] -= 2 * x[1:]
    return r

y0 = np.array([0.7, 0.3, 0.9, 0.2, 1.1])
import sparsejac.ad._tape_python as TP
kept = TP.UNITS_PER_TERM
for units in (kept, 0):  # then the tapes' straight-line code from their first call
    TP.UNITS_PER_TERM = units
    for mode in ("auto", "forward", "reverse", "mixed"):
        jac = sparsejac.SparseJacobian(lambda y: kinetics(0.3, y), y0, mode=mode)
        for y in (y0, y0 * 1.3, np.array([0.0, 0.5, 0.0, 0.0, 1.0])):
            lines.append(f"kinetics {mode} {[v.hex() for v in jac(y).data.tolist()]}")
    ode = sparsejac.ode_jacobian(kinetics, 0.0, y0)
    for t in (0.5, 0.7):
        lines.append(f"ode {[v.hex() for v in ode(t, y0 + 0.1).ravel().tolist()]}")
    lsq = sparsejac.least_squares_jacobian(chain, -np.ones(60))
    got = np.asarray(lsq(np.linspace(-1, 1, 60))).ravel().tolist()
    lines.append(f"lsq {[v.hex() for v in got]}")
TP.UNITS_PER_TERM = kept

def objective(x):  # a chained Rosenbrock plus a coupling through a sum (an arrowhead)
    return (np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
            + np.log1p(np.sum(x[::7]) ** 2))

x0 = np.linspace(0.3, 1.2, 40)
for method in ("star", "acyclic"):
    H = sparsejac.hessian(objective, x0, method=method)
    lines.append(f"hessian {method} {[v.hex() for v in H.toarray().ravel().tolist()]}")
    h = sparsejac.SparseHessian(objective, x0, method=method)
    for x in (x0, x0[::-1].copy()):
        lines.append(f"prepared hessian {method} "
                     f"{[v.hex() for v in h(x).toarray().ravel().tolist()]}")
print("\n".join(lines))
'''

_NO_NUMBA = (
    "import sys\n"
    "class _Refuse:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'numba' or name.startswith(('numba.', 'llvmlite')):\n"
    "            raise ImportError('numba is blocked in this test')\n"
    "sys.meta_path.insert(0, _Refuse())\n")


def _both_ways(source: str, *argv: str) -> tuple[list[str], list[str]]:
    """``source``'s printed lines from a child where numba cannot be imported, and from this
    process with numba loaded (every kernel compiled); ``argv`` as ``sys.argv[1:]`` in both."""
    import contextlib
    import io

    pytest.importorskip("numba")
    child = subprocess.run([sys.executable, "-c", _NO_NUMBA + source, *argv],
                           capture_output=True, text=True, check=False)
    assert child.returncode == 0, child.stderr
    import numba  # noqa: F401  (loaded here: every kernel below runs compiled)

    here = io.StringIO()
    with contextlib.redirect_stdout(here), pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "argv", ["-c", *argv])
        exec(compile(source, "<both ways>", "exec"), {})
    return child.stdout.splitlines(), here.getvalue().splitlines()


def test_interpreted_kernels_give_the_compiled_results_bit_for_bit() -> None:
    """Before numba is loaded, the one-pass kernels run their own code in the interpreter on
    small inputs: first-fit and star bicolourings, small prepared Jacobians (the tape's fused
    kernel, every elementary function, every mode) and Hessians (star and acyclic colourings,
    their decompression) come out exactly as compiled, and numba is never imported (it is
    blocked in the child process)."""
    got, want = _both_ways(_BOTH_WAYS)
    assert len(got) == len(want) > 30
    for g, w in zip(got, want, strict=True):
        assert g == w


def test_a_small_prepared_jacobian_and_ode_solve_do_not_import_numba() -> None:
    """A fresh process preparing a small Jacobian and solving a stiff ODE with it runs the
    kernels interpreted (the start pays no numba import); a large one (10^6 unknowns: the
    fallback paths would cost more than numba's start) still loads numba."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "from scipy.integrate import solve_ivp\n"
        + _ROBERTSON +
        "sol = solve_ivp(rhs, (0, 100), y0, method='BDF', jac=sparsejac.ode_jacobian(rhs, 0, y0))\n"
        "assert sol.success and sol.njev > 3\n"
        "jac = sparsejac.SparseJacobian(lambda x: x[1:] ** 2 - 2.5 * x[:-1], np.ones(100))\n"
        "jac(np.linspace(0, 1, 100))\n"
        "print('numba' in sys.modules)\n"
        "sparsejac.SparseJacobian(lambda x: x[1:] ** 2 - 2.5 * x[:-1], np.ones(10 ** 6))\n"
        "print('numba' in sys.modules)\n")
    out = _child_output(code)
    assert out == ["False", "True"]


def test_short_solves_of_a_few_hundred_unknowns_do_not_import_numba() -> None:
    """Found from outside (fresh processes): a periodic Burgers with 200 unknowns under BDF
    (59 Jacobians) imported numba mid-solve (the ODE adapter's calls took the general path,
    whose verification ran an interpreted kernel; 3.7 times slower than finite differences),
    and Broyden's banded function written with a constant 200 x 200 band matrix did at its
    first Jacobian (a tape too large to interpret; 16 times slower): both now run the tape's
    numpy twin, and a small pattern's colour search waits for calls that pay numba's start."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "from scipy.integrate import solve_ivp\n"
        "from scipy.optimize import least_squares\n"
        "def burgers(t, u, nu=0.01):\n"
        "    dx = 1.0 / u.size\n"
        "    F = 0.5 * np.maximum(u, 0.0) ** 2 + 0.5 * np.roll(np.minimum(u, 0.0), -1) ** 2\n"
        "    return -(F - np.roll(F, 1)) / dx + nu * (np.roll(u, -1) - 2 * u"
        " + np.roll(u, 1)) / dx ** 2\n"
        "x = np.linspace(0, 1, 200, endpoint=False)\n"
        "y0 = np.sin(2 * np.pi * x) + 0.5\n"
        "sol = solve_ivp(burgers, (0, 0.5), y0, method='BDF', rtol=1e-6, atol=1e-8,\n"
        "                jac=sparsejac.ode_jacobian(burgers, 0.0, y0))\n"
        "assert sol.success and sol.njev > 40, sol.njev\n"
        "i, j = np.arange(200)[:, None], np.arange(200)[None, :]\n"
        "B = ((j >= i - 5) & (j <= i + 1) & (j != i)).astype(float)\n"
        "def banded(x):\n"
        "    return x * (2 + 5 * x ** 2) + 1 - np.einsum('ij,j->i', B, x * (1 + x))\n"
        "res = least_squares(banded, -np.ones(200),\n"
        "                    jac=sparsejac.least_squares_jacobian(banded, -np.ones(200)))\n"
        "assert res.success\n"
        "print('numba' in sys.modules)\n")
    assert _child_output(code) == ["False"]


def test_a_first_preparation_of_a_thousand_unknowns_does_not_import_numba() -> None:
    """Found from outside (fresh processes): Fisher's equation with n = 1,000 written with
    np.gradient twice loaded numba in its first preparation (0.44 s), for the mandatory star
    bicolouring of mixed mode, though the natural one-sided colourings (4 colours) were good;
    that pass now waits for the deferred search."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "x = np.linspace(0, 100, 1000)\n"
        "def f(t, u):\n"
        "    return np.gradient(np.gradient(u, x[1] - x[0]), x[1] - x[0]) + u * (1 - u)\n"
        "jac = sparsejac.ode_jacobian(f, 0.0, np.where(x < 10, 1.0, 0.0))\n"
        "jac(0.0, np.full(1000, 0.5))\n"
        "print(jac.prepared.stats()['colors']['mixed'], 'numba' in sys.modules)\n")
    assert _child_output(code) == ["4", "False"]


def test_interpreted_kernels_keep_compiled_float_semantics() -> None:
    """Where the interpreter would raise or warn (``math.exp`` overflow, int64 wrap-around in
    a hash), the interpreted call gives what the compiled kernel gives, silently."""
    import math
    import warnings

    @kernel(cache=False, interpret=True)
    def grow(a, k):  # type: ignore[no-untyped-def]
        out = np.empty(a.size)
        for i in range(a.size):
            out[i] = math.exp(a[i])
        return out, (k * np.int64(0x5851F42D4C957F2D)) >> 17

    a = np.array([1.0, 800.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, h = grow.interpreted(a, np.int64(123456789))
    want, hw = grow.compiled(a, np.int64(123456789))
    np.testing.assert_array_equal(got, want)
    assert got[1] == np.inf
    assert h == hw


#: The Moré–Garbow–Hillstrom problems (tests/test_mgh.py), one-off and prepared in every
#: mode: run interpreted (numba blocked) and compiled, compared bit for bit.
_MGH_BOTH_WAYS = r'''
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, sparsejac, sparsejac.kernels as K
K._BUDGET[0] = 10 ** 12
import sparsejac.ad._tape_python as TP
from tests.test_mgh import PROBLEMS, LARGE
out = []
kept = TP.UNITS_PER_TERM
for units in (kept, 0):  # then the tapes' straight-line code from their first call
    TP.UNITS_PER_TERM = units
    for f, x0 in PROBLEMS + LARGE:
        name = f"{f.__name__}-{x0.size}"
        x1 = x0 + np.random.default_rng(x0.size).uniform(-0.5, 0.5, x0.size)
        lines = []
        try:
            J = sparsejac.jacobian(f, x1)
            lines.append(f"{name} oneoff {[v.hex() for v in J.toarray().ravel().tolist()]}")
            for mode in ("auto", "forward", "reverse", "mixed"):
                j = sparsejac.SparseJacobian(f, x0, mode=mode)
                for x in (x0, x1):
                    got = j(x).toarray().ravel().tolist()
                    lines.append(f"{name} {mode} {[v.hex() for v in got]}")
        except ImportError:  # a colour search at preparation: compiled kernels only
            lines = [f"{name} needs numba"]
        out += lines
TP.UNITS_PER_TERM = kept
print("\n".join(out))
'''


def test_published_problems_give_the_same_jacobians_interpreted_and_compiled() -> None:
    """Outside in: 28 Moré–Garbow–Hillstrom problems, one-off and prepared in every mode,
    computed in a child where numba cannot be imported equal the compiled results bit for
    bit (their preparations' mandatory colourings, DSATUR and the other one-pass orders,
    run interpreted too; only the colour search's tabu stage stays compiled)."""
    from pathlib import Path

    got, here = _both_ways(_MGH_BOTH_WAYS, str(Path(__file__).resolve().parents[1]))
    want = set(here)
    interpreted = [line for line in got if not line.endswith("needs numba")]
    assert len(interpreted) > 200
    assert len(got) == len(interpreted)
    missing = [line[:80] for line in interpreted if line not in want]
    assert not missing


def test_a_solve_is_the_same_bit_for_bit_however_the_kernels_run() -> None:
    """A stiff solve whose Jacobians run compiled from the start, interpreted throughout, or
    interpreted for two calls until the process's budget runs out mid-solve follows the same
    trajectory, bit for bit: which way the kernels run is invisible in the results."""
    code = (
        "import sys, hashlib\n"
        "how = sys.argv[1]\n"
        "if how == 'compiled':\n"
        "    import numba\n"
        "import numpy as np, sparsejac, sparsejac.kernels as K\n"
        "from scipy.integrate import solve_ivp\n"
        + _ROBERTSON +
        "K._BUDGET[0] = 10 ** 9\n"
        "jac = sparsejac.ode_jacobian(rhs, 0.0, y0)\n"
        "if how == 'switch':  # enough for two interpreted Jacobians, then numba loads\n"
        "    K._BUDGET[0] = int(2.5 * K.INTERPRET_WEIGHT * jac.prepared._state.fast[1][-1])\n"
        "calls = []\n"
        "def counted(t, y):\n"
        "    calls.append('numba' in sys.modules)\n"
        "    return jac(t, y)\n"
        "sol = solve_ivp(rhs, (0, 1e3), y0, method='BDF', rtol=1e-8, atol=1e-10, jac=counted)\n"
        "print(calls.count(False), calls.count(True),\n"
        "      hashlib.sha256(sol.y.tobytes() + sol.t.tobytes()).hexdigest())\n")
    runs = {how: subprocess.run([sys.executable, "-c", code, how], capture_output=True,
                                text=True, check=True).stdout.split()
            for how in ("compiled", "interpreted", "switch")}
    # (Jacobians before numba was loaded, after, the trajectory's digest)
    assert runs["compiled"][0] == "0"
    assert int(runs["compiled"][1]) > 3
    assert runs["interpreted"][1] == "0"
    assert runs["switch"][0] == "3"  # two interpreted, the third loads numba
    assert runs["compiled"][2] == runs["interpreted"][2] == runs["switch"][2]


def _same(a: Any, b: Any) -> None:
    """Equal bit for bit: arrays of the same dtype and bytes, or equal scalars / tuples."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple)
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        assert a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    else:
        assert a == b


def _both(twin: Any, kernel_: Any, *args: Any) -> None:
    """A kernel's numpy twin and the compiled kernel on copies of ``args``: same outputs,
    same arrays written."""
    import copy

    a1, a2 = copy.deepcopy(args), copy.deepcopy(args)
    with np.errstate(all="ignore"):
        got = twin(*a1)
    want = getattr(kernel_, "compiled", kernel_)(*a2)  # numba's dispatcher, once bound
    _same(got, want)
    for x, y in zip(a1, a2, strict=True):
        if isinstance(x, np.ndarray):
            _same(x, y)


def _increasing(rng: np.random.Generator, size: int, top: int) -> np.ndarray:
    return np.sort(rng.choice(top, size=min(size, top), replace=False)).astype(np.int64)


@pytest.mark.parametrize("seed", range(25))
def test_numpy_twins_equal_the_kernels(seed: int) -> None:
    """Each kernel's numpy twin (taken before numba is loaded) gives its outputs bit for bit:
    merges and positions of key arrays, range expansion, the fused contribution with zeros
    against inf and nan, repeated targets and scalar operands, the spreads, recoverability
    and the two-block gather."""
    from sparsejac.ad import kernels as ak
    from sparsejac.coloring import _bikernels

    rng = np.random.default_rng(seed)
    top = int(rng.integers(1, 200))
    a = _increasing(rng, int(rng.integers(0, 80)), top)
    b = _increasing(rng, int(rng.integers(0, 80)), top)
    k = ak.union_size(a, b)
    z = np.zeros
    _both(ak._merge2_numpy, ak.merge2, a, b, z(k, np.int64), z(a.size, np.int64),
          z(b.size, np.int64))
    _both(ak._union_size_numpy, ak.union_size, a, b)
    u = np.union1d(a, b).astype(np.int64)
    assert k == u.size
    _both(ak._positions_in_numpy, ak.positions_in, u, b, z(b.size, np.int64))
    # several runs merged at once: through a heap, and a row at a time (rows above bit 3,
    # so a row holds up to 8 keys); positions as int32 and int64
    runs = [_increasing(rng, int(rng.integers(0, 40)), top) for _ in range(int(rng.integers(1, 6)))]
    allk = np.concatenate(runs)
    starts = np.cumsum([0] + [r.size for r in runs]).astype(np.int64)
    for pos_dtype in (np.int32, np.int64):
        _both(ak._merge_many_numpy, ak.merge_many, allk, starts, z(allk.size, np.int64),
              z(allk.size, pos_dtype))
        _both(ak._merge_rows_numpy, ak.merge_rows, allk, starts, 3, z(allk.size, np.int64),
              z(allk.size, pos_dtype))
    got_u, got_inv = z(allk.size, np.int64), z(allk.size, np.int64)
    size = ak.merge_rows(allk, starts, 3, got_u, got_inv)  # oracle: np.unique
    want_u = np.unique(allk)
    assert size == want_u.size
    np.testing.assert_array_equal(got_u[:size], want_u)
    np.testing.assert_array_equal(want_u[got_inv], allk)
    for shift, stride in ((0, 1), (3, 1), (1, 2), (5, 3)):  # rows moved, fields below kept
        _both(ak._move_rows_numpy, ak.move_rows, allk, 3, shift, stride,
              z(allk.size, np.int64))
        moved = z(allk.size, np.int64)
        ak.move_rows(allk, 3, shift, stride, moved)
        np.testing.assert_array_equal(moved >> 3, (allk >> 3) * stride + shift)
        np.testing.assert_array_equal(moved & 7, allk & 7)
    cols = rng.integers(0, 8, size=int(rng.integers(0, 40))).astype(np.int32)
    indptr = np.sort(rng.integers(0, cols.size + 1, size=6)).astype(np.int64)
    indptr[0], indptr[-1] = 0, cols.size
    rows = np.repeat(np.arange(5, dtype=np.int64), np.diff(indptr))
    pattern_keys = (rows << 5) | cols
    _both(ak._keys_are_pattern_numpy, ak.keys_are_pattern, pattern_keys, indptr, cols, 5)
    assert ak.keys_are_pattern(pattern_keys, indptr, cols, 5)
    if cols.size:
        other = pattern_keys.copy()
        other[-1] += 1 << 3  # a source field that is not zero
        _both(ak._keys_are_pattern_numpy, ak.keys_are_pattern, other, indptr, cols, 5)
        assert not ak.keys_are_pattern(other, indptr, cols, 5)
    mark = rng.random(int(rng.integers(0, 60))) < 0.6
    for rank_dtype in (np.int32, np.int64):
        _both(ak._rank_marked_numpy, ak.rank_marked, mark,
              z(int(mark.sum()), np.int64), z(mark.size, rank_dtype))
    dyn, rank = z(int(mark.sum()), np.int64), z(mark.size, np.int32)
    ak.rank_marked(mark, dyn, rank)  # oracle: numpy's two passes
    np.testing.assert_array_equal(dyn, np.flatnonzero(mark))
    np.testing.assert_array_equal(rank, np.cumsum(mark))
    ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 4, size=30))]).astype(np.int64)
    keys = rng.integers(0, 30, size=int(rng.integers(0, 40)))
    total = int(np.sum(ptr[keys + 1] - ptr[keys]))
    _both(ak._expand_ranges_numpy, ak.expand_ranges, ptr, keys, z(total, np.int64),
          z(total, np.int64))
    # a selection's keys: operand keys (row above bit 7, source and column below), rows
    # re-numbered above bit 9; oracle: the expansion and the fields by hand
    in_keys = (np.repeat(np.arange(30), np.diff(ptr)) << 7) | rng.integers(0, 128, ptr[-1])
    _both(ak._gather_keys_numpy, ak.gather_keys, ptr, keys, in_keys, 7, 9,
          z(total, np.int64), z(total, np.int64))
    got_keys, got_pos = z(total, np.int64), z(total, np.int64)
    ak.gather_keys(ptr, keys, in_keys, 7, 9, got_keys, got_pos)
    owner, pos = z(total, np.int64), z(total, np.int64)
    ak.expand_ranges(ptr, keys, owner, pos)
    np.testing.assert_array_equal(got_pos, pos)
    np.testing.assert_array_equal(got_keys, (owner << 9) | (in_keys[pos] & 127))

    n = int(rng.integers(1, 60))
    specials = np.array([0.0, np.inf, -np.inf, np.nan, 1e308, -0.0])
    r = rng.normal(size=n + 5)
    r[rng.integers(0, r.size, size=4)] = rng.choice(specials, size=4)
    j = rng.normal(size=n + 5)
    j[rng.integers(0, j.size, size=4)] = rng.choice(specials, size=4)
    none = np.zeros(0, dtype=np.int64)
    for target in (none, rng.integers(0, 10, size=n)):  # repeated targets
        for r_, ri in ((r, none), (r, rng.integers(0, r.size, size=n)), (r[:1], none)):
            for j_, ji in ((j, none), (j, rng.integers(0, j.size, size=n)), (j[:1], none)):
                for assign in (False, True):
                    acc = rng.normal(size=max(n, 10))
                    _both(ak._contribute_numpy, ak.contribute, acc, target, r_, ri, j_, ji,
                          n, assign, 1.5)

    m, k = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    rows = rng.integers(0, m, size=50)
    cols = rng.integers(0, k, size=50)
    vals = rng.normal(size=50)
    vals[::7] = 0.0
    groups = rng.integers(-1, 4, size=k)
    _both(ak._spread_onehot_numpy, ak.spread_onehot, rows, cols, vals, groups, np.zeros((m, 4)))
    src = rng.normal(size=(k, 3))
    src[0, 0] = np.inf
    _both(ak._spread_dense_numpy, ak.spread_dense, rows, cols, vals, src, np.zeros((m, 3)))

    pattern = as_pattern(sp.random_array((m, k), density=0.3, rng=rng) + sp.eye_array(m, k))
    cg = rng.integers(-1, 3, size=k)
    rg = rng.integers(-1, 3, size=m)
    _both(_bikernels._recoverable_numpy, _bikernels.recoverable, pattern.indptr,
          pattern.indices, pattern.col_indptr, pattern.col_indices, pattern.csc_to_csr, cg, rg,
          3, 3)
    index = rng.integers(-10, 10, size=30)
    _both(_bikernels._gather2_numpy, _bikernels.gather2, rng.normal(size=10),
          rng.normal(size=10), index, np.empty(30))


def test_a_preparation_the_budget_cannot_cover_loads_the_kernels_at_once() -> None:
    """After detection a preparation says what it will cost the fallback paths
    (``kernels.expect``): within the budget it runs them (numba never imported); beyond it
    the compiled kernels serve it from the start, with no fallback work thrown away; a
    prepared tape is charged TAPE_CALLS_CHARGED calls of its numpy twin or interpreted kernel
    (which serve its calls while the budget lasts)."""
    code = (
        "import sys, numpy as np, sparsejac, sparsejac.kernels as K\n"
        "import sparsejac.coloring.greedy as G\n"
        "K._BUDGET[0] = int(sys.argv[1])\n"
        "calls = []\n"
        "python_fit = G._greedy_python\n"
        "G._greedy_python = lambda *a: calls.append(1) or python_fit(*a)\n"
        "def f(x):\n"
        "    r = (3 - 2 * x) * x + 1\n"
        "    r[1:] -= x[:-1]\n"
        "    r[:-1] -= 2 * x[1:]\n"
        "    return r\n"
        "sparsejac.SparseJacobian(f, -np.ones(10_000), engine=sys.argv[2])\n"
        "print(len(calls), 'numba' in sys.modules)\n")

    def run(budget: int, engine: str = "auto") -> list[str]:
        return subprocess.run([sys.executable, "-c", code, str(budget), engine],
                              capture_output=True, text=True, check=True).stdout.split()

    # the Python first fit, of the columns only: a column's 3 nonzeros bound every row
    # colouring below by the columns' 3 colours (sparsejac.coloring.by_mode.identity_colouring)
    assert run(10 ** 9) == ["1", "False"]
    assert run(10 ** 6) == ["0", "True"]   # 30,000 nonzeros need more: compiled at once
    # a tape of 10^4 elements per node is not charged the whole budget (the first fits run
    # in Python); the full colour search that engine="tape" asks for then loads numba
    assert run(10 ** 9, "tape") == ["2", "True"]
    assert run(10 ** 6, "tape") == ["0", "True"]


def test_a_twin_draws_its_call_and_its_measured_excess_per_entry() -> None:
    """Before numba is loaded a numpy twin's call draws TWIN_CALL_UNITS plus its weight (its
    measured cost beyond the compiled kernel's, benchmarks/fallback.py) per entry of its
    arrays: a merge of 2 x 10^4 keys, not 4 x 10^4 units."""
    code = (
        "import sys, numpy as np, sparsejac.kernels as K\n"
        "from sparsejac.ad.kernels import merge2\n"
        "a, b = np.arange(0, 20_000, 2), np.arange(1, 20_000, 2)\n"
        "u, ia, ib = np.empty(20_000, np.int64), np.empty(10_000, np.int64), "
        "np.empty(10_000, np.int64)\n"
        "before = K._BUDGET[0]\n"
        "merge2(a, b, u, ia, ib)\n"
        "assert (u == np.arange(20_000)).all() and (ia == 2 * np.arange(10_000)).all()\n"
        "print(before - K._BUDGET[0], K.TWIN_CALL_UNITS + int(merge2.twin_weight * 60_000),"
        " merge2.twin_weight < 1, 'numba' in sys.modules)\n")
    drawn, expected, light, numba = _child_output(code)
    assert drawn == expected
    assert light == "True"
    assert numba == "False"


def test_a_least_squares_of_a_hundred_thousand_unknowns_stays_off_numba() -> None:
    """Measured from outside (fresh processes): Broyden's tridiagonal least squares at
    n = 10^5 loaded numba at once (its preparation was expected to cost the fallback paths
    140 units a nonzero, 14-22 measured, its twins charged ten times their excess), 0.78 of
    finite differences' time; it now runs on the numpy paths, with the same solution."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "from scipy.optimize import least_squares\n"
        "import scipy.sparse as sp\n"
        "def f(x):\n"
        "    r = (3 - 2 * x) * x + 1\n"
        "    r[1:] -= x[:-1]\n"
        "    r[:-1] -= 2 * x[1:]\n"
        "    return r\n"
        "n = 10 ** 5\n"
        "x0 = -np.ones(n)\n"
        "res = least_squares(f, x0, jac=sparsejac.least_squares_jacobian(f, x0))\n"
        "print('numba' in sys.modules)\n"
        "pattern = sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)],"
        " offsets=[-1, 0, 1])\n"
        "fd = least_squares(f, x0, jac_sparsity=pattern)\n"
        "print(res.success, np.abs(res.x - fd.x).max() < 1e-6)\n")
    assert _child_output(code) == ["False", "True", "True"]


def test_a_tape_whose_first_calls_would_spend_the_budget_loads_the_kernels_when_prepared(
) -> None:
    """A right-hand side written as a scalar loop records a tape of 10^4 instructions whose
    calls before numba is loaded (its numpy twin, about 0.15 s each) would spend the fallback
    budget in a few calls: the preparation charges TAPE_CALLS_CHARGED of them and loads the
    compiled kernels at once; the same loop over 20 points stays on the fallback paths."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "N = int(sys.argv[1])\n"
        "def f(y):\n"
        "    u, v = y[:N], y[N:]\n"
        "    du, dv = np.empty(N), np.empty(N)\n"
        "    for i in range(N):\n"
        "        ul = 1.0 if i == 0 else u[i - 1]\n"
        "        ur = 1.0 if i == N - 1 else u[i + 1]\n"
        "        vl = 3.0 if i == 0 else v[i - 1]\n"
        "        vr = 3.0 if i == N - 1 else v[i + 1]\n"
        "        du[i] = 1 + u[i] ** 2 * v[i] - 4 * u[i] + 3.0 * (ul - 2 * u[i] + ur)\n"
        "        dv[i] = 3 * u[i] - u[i] ** 2 * v[i] + 3.0 * (vl - 2 * v[i] + vr)\n"
        "    return np.concatenate([du, dv])\n"
        "y = np.linspace(0.5, 1.5, 2 * N)\n"
        "jac = sparsejac.SparseJacobian(f, y)\n"
        "print(jac.stats()['engine']['engine'], 'numba' in sys.modules)\n")

    def run(n: int) -> list[str]:
        return subprocess.run([sys.executable, "-c", code, str(n)], capture_output=True,
                              text=True, check=True).stdout.split()

    assert run(500) == ["tape", "True"]
    assert run(20) == ["tape", "False"]


def test_an_interpreted_call_that_raises_hands_over_with_its_inputs_restored() -> None:
    """A kernel that adds into an array it was given and then hits what the interpreter
    raises on (``math.exp`` overflow) leaves the compiled kernel its inputs as they were:
    the result is the compiled kernel's, not the partial sums counted twice."""
    import math

    @kernel(cache=False, interpret=True)
    def add_exp(a, out):  # type: ignore[no-untyped-def]
        for i in range(a.size):
            out[i] += math.exp(a[i])

    a = np.array([1.0, 800.0, 2.0])
    got = np.ones(3)
    add_exp.interpreted(a, got)
    want = np.ones(3)
    add_exp.compiled(a, want)
    _same(got, want)
    assert got[0] == 1.0 + math.e


@pytest.mark.parametrize("seed", range(4))
def test_sorted_unique_equals_numpy_unique(seed: int) -> None:
    """The sort-based distinct values (the numpy paths' union) equal ``np.unique``'s."""
    from sparsejac.numeric import sorted_unique

    rng = np.random.default_rng(seed)
    for size in (0, 1, 2, 17, 1000):
        a = rng.integers(-50, 50, size)
        runs = np.concatenate([np.sort(a), np.sort(rng.integers(0, 80, size))])
        for x in (a, runs, a.astype(np.int32)):
            got = sorted_unique(x)
            np.testing.assert_array_equal(got, np.unique(x))
            assert got.dtype == x.dtype


def test_tapes_prepared_before_and_after_numba_loads_mid_process() -> None:
    """A tape prepared before numba loads (its fused kernel's numpy twin) and one prepared
    after the kernels were bound (numba's dispatchers replace the lazy kernels in their
    module) both evaluate, to the same values (preparing the second crashed with
    "'CPUDispatcher' object has no attribute '_compiled'" in a draft)."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "from sparsejac.ad import _tape\n"
        "def f(x):\n"
        "    return (3 - 2 * x) * x - np.roll(x, 1) - 2 * np.roll(x, -1) + 1\n"
        "x = np.linspace(-1, 1, 100)\n"
        "a = sparsejac.SparseJacobian(f, x)\n"
        "first = a(x).toarray()\n"
        "assert 'numba' not in sys.modules\n"
        "_tape.jacobian_packed.compiled  # binds the module: dispatchers replace the kernels\n"
        "b = sparsejac.SparseJacobian(f, x)\n"
        "print(np.array_equal(first, b(x).toarray()), np.array_equal(first, a(x).toarray()),\n"
        "      b.stats()['engine']['engine'])\n")
    out = _child_output(code)
    assert out == ["True", "True", "tape"]


def test_numba_disable_jit_runs_the_kernels_as_python() -> None:
    """Found from outside: NUMBA_DISABLE_JIT=1 (numba's debugging switch) made the notice
    of a first compilation fail with a raw AttributeError; the kernels now run as Python."""
    import os

    code = ("import numpy as np, sparsejac\n"
            "f = lambda y: np.append(y[1:] * y[:-1], y[0] ** 2)\n"
            "y = np.linspace(0.5, 1.5, 6)\n"
            "jac = sparsejac.SparseJacobian(f, y)\n"
            "for i in range(300):\n"
            "    J = jac(y * (1 + 1e-3 * i))\n"
            "print(np.allclose(J.toarray(), sparsejac.jacobian(f, y * 1.299).toarray()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "NUMBA_DISABLE_JIT": "1"}).stdout
    assert out.split() == ["True"]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork (POSIX)")
def test_a_child_forked_while_the_kernel_lock_is_held_gets_its_own() -> None:
    """Found from outside: a child forked while another thread held the kernels' lock waited
    for it forever; the child gets a new lock (numba already loaded here)."""
    import os
    import threading

    from sparsejac import kernels

    jac = sparsejac.SparseJacobian(lambda y: y[1:] * y[:-1], np.ones(5))
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with kernels._LOCK:
            held.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: a kernel that binds under the lock
            code = 1
            try:
                with kernels._LOCK:
                    code = 0 if jac(np.arange(1.0, 6.0)).nnz == 8 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    finally:
        done.set()
        thread.join()
    assert os.WIFEXITED(status)
    assert os.WEXITSTATUS(status) == 0
