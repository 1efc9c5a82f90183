"""Buffers made inside f with np.zeros(n) & co are traced (sparsejac/tracing/buffers.py).

Every program fills a buffer made without a traced argument, the way right-hand sides are
written; its Jacobian is checked against fourth-order central differences (and its pattern
against their nonzeros) in global and local detection, every exact mode and a prepared replay
at a second point. numpy itself is unchanged outside a trace, and in other threads during one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from tests.test_rules import fd4_jacobian

N = 8


def _slices(u):
    out = np.zeros(u.size)
    out[1:-1] = u[2:] - 2.0 * u[1:-1] + u[:-2]
    out[0] = u[0] ** 2 - 1.0
    out[-1] += u[-1]
    return out


def _element_loop(u):
    out = np.empty(u.size)
    for i in range(u.size):
        out[i] = u[i] * u[(i + 1) % u.size]
    return out


def _mask_and_fancy(u):
    out = np.ones(u.size)
    mask = np.zeros(u.size, dtype=bool)
    mask[::3] = True
    out[mask] = np.sin(u[mask])
    out[[1, 4, 4]] *= u[2]
    return out


def _add_at(u):
    out = np.zeros(5)
    np.add.at(out, [0, 1, 1, 4, 2, 2, 2, 3], u)
    np.subtract.at(out, [0, 4], u[:2] ** 2)
    return out


def _put(u):
    out = np.zeros(u.size + 2)
    np.put(out, [0, 3, 5, 3], u[:4] * 2.0)
    out.put([-1], u[-1] ** 3)
    return out


def _matrix(u):
    a = np.zeros((4, 4))
    a[np.diag_indices(4)] = u[:4]
    a[0, 1:] = u[5:]
    a[2:, 0] += u[4]
    return (a @ a.T).ravel()


def _full_and_like(u):
    b = np.full((2, N // 2), 0.5)
    b *= u.reshape(2, -1) ** 2
    c = np.zeros_like(np.empty(N))  # a plain prototype
    c[:] = np.cumsum(u)
    d = np.ones_like(np.ones((2, 2)), dtype=np.float64)
    d += b[:, :2]
    return np.concatenate([b.ravel(), c, d.ravel()])


def _reshaped_and_returned(u):
    grid = np.zeros((2, N // 2))
    grid[0] = u[: N // 2]
    grid[1, 1:] = u[N // 2 + 1:] * u[0]
    flat = grid.reshape(-1)
    flat[-1] = 7.0
    return grid.T


def _int_buffer_as_index(u):
    idx = np.zeros(3, dtype=np.int64)
    idx[1:] = [2, 5]
    out = np.zeros(3)
    out[:] = u[idx]
    return out * u[-1]


def _ufunc_out(u):
    out = np.empty(u.size)
    np.multiply(u, u, out=out)
    np.add(out, 1.0, out=out)
    return out


def _traced_fill(u):
    """np.full / np.full_like with a traced fill (numpy fills it by copyto, which no rule
    serves: the fill is broadcast instead), also a list of traced scalars and a plain
    prototype, then filled in place."""
    a = np.full(3, u[0], dtype=float) * u[1:4]
    b = np.full((2, N), u).ravel()
    c = np.full((2, 2), [u[1], u[2] ** 2])
    d = np.full_like(np.zeros(3), u[3])
    d[1] = u[4] * u[5]
    return np.concatenate([a, b[N - 2:N + 2], c.ravel(), d])


#: Programs whose pattern is an upper bound (a product of two traced matrices counts every
#: element of a traced operand as a possible nonzero, also the buffer's untouched zeros).
UPPER_BOUND = {"_matrix", "_eye_and_identity", "_constants_without_rules"}

def _eye_and_identity(u):
    a = np.eye(N)  # a matrix filled with traced entries (a rotation, a Jacobian block)
    a[0, 1:] = u[1:] ** 2
    b = np.identity(N)
    b[np.arange(1, N), np.arange(N - 1)] = -u[:-1]
    return a @ u + b @ u


def _loop_over_a_buffer_written_ahead(u):
    a = np.zeros(N)
    a[:] = np.arange(1.0, N + 1.0)  # iterated as numpy's scalars while it is constant ...
    out = np.zeros(N)
    for k, v in enumerate(a):  # ... and read afresh at each step, as numpy iterates
        if k + 1 < N:
            a[k + 1] = u[k]
        out[k] = v * u[k]
    return out


def _constants_without_rules(u):
    boundary = np.zeros(N, dtype=bool)
    boundary[[0, -1]] = True
    interior = np.flatnonzero(~boundary)  # no rule: numpy's value of the constant mask
    a = np.eye(N)
    np.fill_diagonal(a, 3.0)  # no rule: numpy writes into the constant buffer
    idx = np.zeros(N, dtype=int)
    idx[:] = np.arange(N)
    w = np.gcd(idx, 4)  # a ufunc without a rule, on a buffer holding constants
    out = a @ u + w * u
    out[interior] += u[interior - 1] ** 2
    return out


PROGRAMS = [_slices, _element_loop, _mask_and_fancy, _add_at, _put, _matrix, _full_and_like,
            _eye_and_identity, _constants_without_rules,
            _loop_over_a_buffer_written_ahead,
            _reshaped_and_returned, _int_buffer_as_index, _ufunc_out, _traced_fill]


def _check(f: Callable[[Any], Any], x: np.ndarray, got: Any) -> None:
    want = fd4_jacobian(f, x)
    scale = 1.0 + np.abs(want).max()
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-7, atol=1e-7 * scale,
                               err_msg=f.__name__)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__.strip("_"))
def test_buffer_programs(f, rng):
    """The Jacobian and the patterns of a buffer-filling f, in every mode and in a replay."""
    x0 = rng.uniform(0.5, 1.5, N)
    x1 = rng.uniform(0.5, 1.5, N)
    want = fd4_jacobian(f, x0)
    nonzero = np.abs(want) > 1e-7 * (1.0 + np.abs(want).max())
    for local in (False, True):
        pattern = sparsejac.jacobian_sparsity(f, x0, local=local).toarray()
        assert not (nonzero & ~pattern).any(), f"{f.__name__}: the pattern misses entries"
        if f.__name__ not in UPPER_BOUND:
            np.testing.assert_array_equal(pattern, nonzero,
                                          err_msg=f"{f.__name__} local={local}")
    _check(f, x0, sparsejac.jacobian(f, x0))
    for mode in ("forward", "reverse", "mixed"):
        jac = sparsejac.SparseJacobian(f, x0, mode=mode)
        _check(f, x0, jac(x0))
        _check(f, x1, jac(x1))


def test_numpy_is_unchanged_outside_a_trace():
    """np.zeros & co are numpy's own functions again after a trace; np.add.at works as ever."""
    before = {name: getattr(np, name) for name in ("zeros", "empty", "ones", "full",
                                                   "zeros_like")}
    sparsejac.jacobian(_slices, np.ones(N))
    for name, fn in before.items():
        assert getattr(np, name) is fn
    out = np.zeros(3)
    np.add.at(out, [0, 0, 2], 1.0)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, [2.0, 0.0, 1.0])


def test_other_threads_get_plain_arrays_while_one_traces():
    """While one thread traces, np.zeros and np.add.at in another thread are plain numpy."""
    inside, release = threading.Event(), threading.Event()

    def slow(u):
        out = np.zeros(u.size)
        inside.set()
        release.wait(10)
        out[:] = u ** 2
        return out

    result: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: result.update(jac=sparsejac.jacobian(slow, np.arange(1.0, 4.0))))
    worker.start()
    assert inside.wait(10)
    try:
        plain = np.zeros(4)
        np.add.at(plain, [1, 1], 2.0)
        ones = np.ones_like(plain)
        assert type(plain) is np.ndarray
        assert type(ones) is np.ndarray
        np.testing.assert_array_equal(plain, [0.0, 4.0, 0.0, 0.0])
    finally:
        release.set()
        worker.join(10)
    np.testing.assert_array_equal(result["jac"].toarray(), np.diag([2.0, 4.0, 6.0]))


def test_library_calls_inside_f_get_plain_arrays():
    """numpy and scipy functions that make buffers internally are unaffected inside f."""
    import scipy.sparse as sp

    lap = sp.diags_array([1.0, -2.0, 1.0], offsets=[-1, 0, 1], shape=(N, N)).tocsr()

    def f(u):
        out = np.zeros(N)
        out[:] = lap @ u + np.linspace(0.0, 1.0, N) * u ** 2
        return out

    x = np.linspace(0.5, 1.5, N)
    want = lap.toarray() + np.diag(2 * np.linspace(0.0, 1.0, N) * x)
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-14)


_RANDOM_CONSTANTS = (
    "import sys, numpy as np, scipy.stats, sparsejac\n"
    "x = np.array([0.3, 1.2, 2.5])\n"
    "makers = {\n"
    "    'seed+rand': lambda: (np.random.seed(0), np.random.rand(3))[1],\n"
    "    'seed+normal': lambda: (np.random.seed(1), np.random.normal(size=3))[1],\n"
    "    'Generator': lambda: np.random.default_rng(0).random(3),\n"
    "    'RandomState': lambda: np.random.RandomState(0).rand(3),\n"
    "    'Sobol': lambda: scipy.stats.qmc.Sobol(1, seed=0).random(4)[:3, 0],\n"
    "}\n"
    "for name, make in makers.items():\n"
    "    J = sparsejac.jacobian(lambda y: y * make(), x)\n"
    "    assert np.array_equal(J.toarray(), np.diag(make())), name\n"
    "try:\n"
    "    sparsejac.jacobian(lambda y: y * np.random.rand(3), x)  # unseeded: another each call\n"
    "except sparsejac.TraceMismatchError:\n"
    "    print('refused')\n")


def test_compiled_code_making_arrays_inside_f_gets_plain_ones():
    """numpy's random generators (C code) make their arrays with ``np.empty``; called inside
    f on constants, they must get plain arrays, not traced ones. Compiled code leaves no
    Python frame, so the wrappers see the user's frame calling ``rand``, not ``np.empty``:
    before the callee check, ``np.random.rand(3)`` inside f crashed the interpreter (a
    segmentation fault), and ``default_rng(0).random(3)`` raised numpy's TypeError. Seeded,
    they are constants (the Jacobian is exact); unseeded, the values differ between the trace
    and a real call, which the trace's check refuses. In a child process (a crash must not
    take the test run down)."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _RANDOM_CONSTANTS], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["refused"]


def test_creation_through_a_local_alias_is_traced():
    """``z = np.ones`` inside f, then ``z(3)``: the callee is resolved to the wrapper."""
    def f(y):
        z = np.ones
        w = z(3)
        w[0] = y[2]
        return w * y

    x = np.array([0.5, 1.5, 2.5])
    want = np.diag([2.5, 1.0, 1.0])
    want[0, 2] += 0.5
    np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), want)


def test_a_model_installed_as_a_package_fills_its_buffers(tmp_path, monkeypatch):
    """Code of the traced function's own package counts as the user's even when it is
    installed (``site-packages``): its ``np.zeros`` buffers are traced. Another installed
    package called by f is still a library."""
    site = tmp_path / "site-packages"
    (site / "mymodel").mkdir(parents=True)
    (site / "mymodel" / "__init__.py").write_text(
        "import numpy as np\n"
        "def rhs(y):\n"
        "    out = np.zeros(y.size)\n"
        "    out[1:-1] = y[2:] - 2 * y[1:-1] + y[:-2]\n"
        "    out[0] = -y[0] ** 2\n"
        "    return out\n")
    monkeypatch.syspath_prepend(str(site))
    import importlib

    mymodel = importlib.import_module("mymodel")
    x = np.linspace(1.0, 2.0, 5)
    want = np.zeros((5, 5))
    want[0, 0] = -2.0
    for i in range(1, 4):
        want[i, i - 1:i + 2] = [1.0, -2.0, 1.0]
    np.testing.assert_array_equal(sparsejac.jacobian(mymodel.rhs, x).toarray(), want)


def test_type_dependent_branches_are_refused():
    """f that answers ``isinstance(y, np.ndarray)`` or ``np.isscalar(y[0])`` differently for
    the traced array would give the Jacobian of another function: the trace is compared with a
    real call and refused, in the one-off, prepared and pattern entry points."""
    def f(y):
        return y ** 2 if isinstance(y, np.ndarray) else np.zeros(3)

    def g(y):
        return 2.0 * y if np.isscalar(y[0]) else y ** 2

    x = np.array([0.5, 1.5, 2.5])
    for fn in (f, g):
        for entry in (sparsejac.jacobian, sparsejac.SparseJacobian,
                      sparsejac.jacobian_sparsity):
            with pytest.raises(sparsejac.TraceMismatchError, match="type"):
                entry(fn, x)
    with pytest.raises(sparsejac.TraceMismatchError):
        sparsejac.hessian(lambda y: np.sum(y ** 2) if isinstance(y, np.ndarray) else
                          np.sum(y), x)


@pytest.mark.parametrize("name", ["mixed constants", "dtype", "asarray dtype", "list of arrays",
                                  "ndmin", "where list", "outer list", "interp fp list",
                                  "isnan", "order F"])
def test_lists_of_traced_values_become_traced_arrays(name, rng):
    """np.array/np.asarray of a list holding traced values (constants among them), and such a
    list given to a traced call, are the arrays numpy makes. Before: numpy's object loops
    failed on the constants ('float has no callable cos method'), `f` 'returned dtype object'
    for np.where/np.outer of a list, dtype=float was refused. Oracle: central differences of
    numpy's f, and its output's shape."""
    fs = {
        "mixed constants": lambda u: np.cos(np.array([u[0], 0.0, u[1]])) * u[2],
        "dtype": lambda u: np.array([u[0], u[1] ** 2], dtype=float),
        "asarray dtype": lambda u: np.asarray([u[0], 2.0], dtype=np.float64) * u[:2],
        "list of arrays": lambda u: np.array([u[:2], u[2:4] ** 2]),
        "ndmin": lambda u: np.array([u[0], u[1]], ndmin=3),
        "where list": lambda u: np.where(np.array([True, False, True]), u[:3],
                                         [u[1], u[0], 2.0]),
        "outer list": lambda u: np.outer([u[1], u[0]], u[:3]),
        "interp fp list": lambda u: np.interp(u[:2], [0.0, 1.0, 5.0], [0.0, u[3], 3.0]),
        "isnan": lambda u: np.where(np.isnan(np.array([u[1], u[0]])), 0.0, u[:2]),
        "order F": lambda u: np.array([[u[0], u[1]], [u[2], u[3]]], order="F").ravel("K"),
    }
    f = fs[name]
    x = rng.uniform(0.5, 1.5, 4)
    want = np.array([(np.asarray(f(x + 1e-6 * e)) - np.asarray(f(x - 1e-6 * e))).ravel() / 2e-6
                     for e in np.eye(4)]).T
    got = sparsejac.jacobian(f, x).toarray()
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    from sparsejac.tracing import trace
    assert trace(f, x).out.shape == np.shape(f(x))
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, x)(x).toarray(), want, rtol=1e-7,
                               atol=1e-9)


def test_copy_of_a_constant_made_in_f_is_a_buffer():
    """rates = np.copy(k); rates[0] *= y[0] * y[1] (a kinetics idiom) was refused as a store
    into a plain array; k.copy() stays plain and its refusal says what to write. Oracle:
    by hand, d(rates * y)."""
    k = np.array([1.0, 2.0, 3.0])

    def f(y):
        rates = np.copy(k)
        rates[0] *= y[0] * y[1]
        return rates * y

    y = np.array([1.0, 2.0, 3.0])
    want = np.diag(k).astype(float)
    want[0] = [2 * y[0] * y[1], y[0] ** 2, 0.0]
    np.testing.assert_array_equal(sparsejac.jacobian(f, y).toarray(), want)
    assert np.array_equal(k, [1.0, 2.0, 3.0])  # the constant is untouched

    def g(y):
        rates = k.copy()
        rates[0] *= y[0] * y[1]
        return rates * y

    with pytest.raises(sparsejac.TracedConversionError, match=r"np\.copy\(k\)"):
        sparsejac.jacobian(g, y)


def test_an_index_computed_from_x_into_a_plain_table():
    """table[i] with i = floor(x[0]) (a piecewise-constant lookup): numpy asks the integer
    scalar for its value, which has zero derivative: followed at x by a one-off Jacobian,
    ConcretizationError for a global pattern (numpy's IndexError before). Oracle: by hand."""
    table = np.array([1.0, 2.0, 3.0])

    def f(x):
        i = np.minimum(np.floor(x[0]), 2).astype(int)
        return x * table[i]

    x = np.array([1.5, 2.0, 3.0])
    np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), 2.0 * np.eye(3))
    with pytest.raises(sparsejac.ConcretizationError, match="index"):
        sparsejac.SparseJacobian(f, x)


def test_linspace_ends_from_a_parameter():
    """np.linspace(0, t, n) with the ODE time t (a parameter, not x) was concretised: a
    ConcretizationError. Oracle: d(y * linspace(0, t, n))/dy = diag(linspace(0, t, n))."""
    def rhs(t, y):
        return y * np.linspace(0.0, t, y.size)

    jac = sparsejac.ode_jacobian(rhs, 0.5, np.ones(3), format="csr")
    for t in (0.5, 2.0):
        np.testing.assert_allclose(jac(t, np.ones(3)).toarray(),
                                   np.diag(np.linspace(0.0, t, 3)), rtol=1e-15)


def test_lists_with_complex_constants_or_dtype_object_keep_numpy_s_object_path():
    """np.array([y0, 1j, y1]) holds a complex constant: numpy's object array, followed
    element by element (lifting it was refused as a complex operand). Oracle: central
    differences."""
    def f(u):
        return np.abs(np.array([u[0], 1j, u[1]]))

    x = np.array([1.3, 2.6])
    want = np.array([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(2)]).T
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-7, atol=1e-9)


def test_object_arrays_from_numpy_s_own_asarray():
    """`from numpy import asarray` binds numpy's function before the trace: asarray of a list
    of traced scalars is numpy's object array. Binary object loops (np.arctan2, np.hypot,
    np.fmod) failed with 'Tracer has no attribute arctan2'; an object array of plain numbers
    returned by f was refused as dtype object; np.sqrt of a list mixing a float constant and
    traced values (scipy's Cola benchmark) raised numpy's TypeError. Oracle: central
    differences; the mixed case must name the call and the way out."""
    from numpy import asarray

    fs = [lambda u: np.arctan2(asarray([u[0], u[1]]), asarray([u[2], u[0]])),
          lambda u: np.hypot(asarray([u[0], u[1]]), asarray([u[2], u[0]])),
          lambda u: np.fmod(asarray([u[0], u[1]]), 5.0) * u[2]]
    x = np.array([1.3, 2.6, 0.7])
    for f in fs:
        want = np.array([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(3)]).T
        np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-7,
                                   atol=1e-9)

    def picks(u):  # at x the comparison picks constants only: J = 0 there
        a = asarray([1.0, u[1]])
        return np.where(a > 1.5, 1.0, a)

    with pytest.warns(RuntimeWarning, match="does not depend on x"):
        np.testing.assert_array_equal(sparsejac.jacobian(picks, x).toarray(), np.zeros((2, 3)))

    def cola(u):
        xi = asarray([0.0, u[0], *list(u[1:])])
        return np.atleast_1d(np.sum(np.sqrt(xi ** 2 + 1.0)))

    with pytest.raises(sparsejac.TracedConversionError,
                       match=r"np\.sqrt received an object array.*plain float.*np\.asarray"):
        sparsejac.jacobian(cola, x)


@pytest.mark.parametrize("alias", ["np.real", "astype", "asarray", "asanyarray",
                                   "ascontiguousarray"])
def test_aliases_of_a_buffer_write_through(alias):
    """numpy gives the buffer itself (np.real of a real array: a view; astype(copy=False)
    and asarray: the array): writes through the alias land in the buffer. They were lost
    (a zero Jacobian and a pattern without (0, 2), (1, 3) at x0 = 0). Oracle: by hand."""

    def f(u):
        out = np.zeros(4)
        if alias == "np.real":
            a = np.real(out)
        elif alias == "astype":
            a = out.astype(np.float64, copy=False)
        elif alias == "asarray":
            a = np.asarray(out)
        elif alias == "asanyarray":
            a = np.asanyarray(out)
        else:
            a = np.ascontiguousarray(out)
        a[:2] = np.sin(u[2:])
        return out + u ** 2

    want = np.zeros((4, 4))
    want[0, 2] = want[1, 3] = 1.0
    np.testing.assert_array_equal(sparsejac.jacobian(f, np.zeros(4)).toarray(), want)
    assert sparsejac.jacobian_sparsity(f, np.zeros(4)).nnz == 6
    x = np.array([0.1, 0.2, 0.3, 0.4])
    want = np.diag(2 * x)
    want[0, 2], want[1, 3] = np.cos(0.3), np.cos(0.4)
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, np.zeros(4))(x).toarray(), want,
                               rtol=1e-15)


def test_asarray_of_the_traced_input_is_the_input():
    """np.asarray(x) in f is x itself, as numpy's of an ndarray (it was refused)."""
    np.testing.assert_array_equal(
        sparsejac.jacobian(lambda x: np.asarray(x) * 2.0, np.ones(3)).toarray(), 2 * np.eye(3))


def test_copies_in_a_layout_and_converters_in_helpers(rng):
    """np.ascontiguousarray of a transposed buffer is a copy (writes stay in it); a helper's
    np.asarray(buffer) returns the buffer (they were refused). Oracle: differences."""

    def apply_bc(a):
        a = np.asarray(a)
        a[0] = 0.0
        return a

    def f(u):
        out = np.zeros((2, 3))
        tmp = np.ascontiguousarray(out.T)
        tmp[:] = u.reshape(3, 2) ** 2
        same = np.ascontiguousarray(tmp)
        same[0, 0] = 7.0
        return np.concatenate([tmp.ravel(), out.ravel(), apply_bc(u ** 3)])

    x = rng.standard_normal(6)
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), fd4_jacobian(f, x),
                               rtol=1e-8, atol=1e-9)


def test_a_conversion_error_names_the_line():
    """A traced array converted by a call the tracer cannot follow (a ufunc method given a
    list) names the line of f that did it."""

    def f(r):
        return np.maximum.reduce([np.zeros_like(r), np.minimum(2 * r, 1)])

    with pytest.raises(sparsejac.TracedConversionError,
                       match=r"plain numpy array \(at test_buffers.py:\d+: `return np.maximum"):
        sparsejac.jacobian(f, np.linspace(-1.0, 1.0, 4))


def test_grids_and_index_arrays_stay_plain_and_buffers_deep_copy():
    """np.arange and np.linspace made in f are plain arrays (index arrays and grids: their
    ndarray methods, isinstance and in-place integer updates work as in numpy); a buffer
    (np.eye) copies with copy.deepcopy as a traced copy."""
    import copy

    x = np.arange(1.0, 5.0)

    def f(x):
        i = np.arange(4)
        np.add.at(i, [0, 0], 1)  # an integer index array updated in place
        g = np.linspace(1.0, 0.0, 4)
        assert isinstance(g, np.ndarray)
        np.ndarray.sort(g)
        return x * i * g + copy.deepcopy(np.eye(4)) @ x + copy.copy(np.eye(4)) @ x

    want = np.diag(np.array([2, 1, 2, 3]) * np.linspace(0.0, 1.0, 4)) + 2 * np.eye(4)
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want)


@pytest.mark.parametrize("alias", [
    lambda b: np.asarray_chkfinite(b),
    lambda b: np.nan_to_num(b, copy=False),
    lambda b: np.require(b, dtype=float, requirements=["C", "W"]),
], ids=["asarray_chkfinite", "nan_to_num_in_place", "require"])
def test_functions_that_return_their_argument_alias_a_buffer(alias):
    """numpy returns the buffer itself from these; the tracer returned a copy (or numpy's own
    code a plain alias of the buffer's value), which missed the values written afterwards:
    at a zero state the trace check could not tell, and the Jacobian lost them."""

    def f(u):
        state = np.zeros(u.size)
        s = alias(state)
        state[:] = u
        return s**2 + 3.0 * s - u

    u0 = np.zeros(4)
    np.testing.assert_array_equal(sparsejac.jacobian(f, u0).toarray(), 2 * np.eye(4))


def test_a_view_of_a_buffer_from_a_function_without_a_rule_is_refused():
    def f(u):
        b = np.zeros(6)
        w = np.lib.stride_tricks.sliding_window_view(b, 3)  # a view, numpy's own code
        b[:] = u
        return w.sum(axis=1)

    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="returns a view"):
        sparsejac.jacobian(f, np.ones(6))


def test_an_array_of_constants_made_in_f_is_a_buffer():
    """d = np.array([0.0] * n) filled element by element (CellML's exported models, found by
    the idioms hunt): refused before, as a plain array; now a buffer as np.zeros(n). An
    array from a list of integers stays plain (an index array). Oracle: by hand."""
    def f(y):
        d = np.array([0.0] * 3)
        d[0] = y[0] * y[1]
        d[1] = -y[1]
        d[2] = y[2] ** 2
        idx = np.array([2, 0])
        return d + y[idx].sum()

    y = np.array([1.0, 2.0, 3.0])
    want = np.array([[2.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 6.0]]) + np.array(
        [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(sparsejac.jacobian(f, y).toarray(), want)
    np.testing.assert_array_equal(sparsejac.SparseJacobian(f, y)(y).toarray(), want)


_LEGACY_MODEL = '''
from numpy import *

def rates(voi, states, constants):
    r = zeros(3)
    r[0] = -constants[0] * states[0] * states[1]
    r[1] = constants[0] * states[0] * states[1] - constants[1] * states[1]
    r[2] = constants[1] * states[1]
    resid = array([0.0] * 2)
    resid[0] = states[2] - 1.0
    resid[1] = states[0] * 2.0
    return r + resid.sum()
'''


def test_buffers_made_by_bare_imported_numpy_names(tmp_path, monkeypatch):
    """A model module written `from numpy import *` (models exported from CellML, legacy
    scripts) fills zeros(n) and array([0.0] * n) element by element: numpy's own functions,
    bound before the trace, which the wrappers on the numpy module do not reach; refused
    before (the idioms hunt). Its names are bound to the wrappers for the trace only, through
    a lambda, ode_jacobian's adapter and args. Oracle: by hand; the module's names are numpy's
    again afterwards."""
    import importlib

    (tmp_path / "legacy_model_for_test.py").write_text(_LEGACY_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    model = importlib.import_module("legacy_model_for_test")
    c = np.array([0.3, 0.1])
    y = np.array([0.9, 0.1, 0.0])
    k0, k1 = c
    want = np.array([[-k0 * y[1], -k0 * y[0], 0.0],
                     [k0 * y[1], k0 * y[0] - k1, 0.0],
                     [0.0, k1, 0.0]]) + np.array([2.0, 0.0, 1.0])
    np.testing.assert_allclose(sparsejac.jacobian(lambda s: model.rates(0.0, s, c), y).toarray(),
                               want, rtol=1e-15)
    jac = sparsejac.ode_jacobian(model.rates, 0.0, y, args=(c,), format="csr")
    np.testing.assert_allclose(jac(0.0, y, c).toarray(), want, rtol=1e-15)
    assert model.zeros is np.zeros
    assert model.array is np.array


_BENCHMARK_MODULE = '''
from numpy import zeros, sin, sum


class Problem:
    def fun(self, x):
        xx = zeros(len(x) + 2)
        xx[1:-1] = x
        xx[0] = x[-1]
        xx[-1] = x[0]
        return sum(xx[:-2] * sin(xx[1:-1]) + xx[2:] ** 2)
'''


def test_bare_names_reached_through_an_instance(tmp_path, monkeypatch):
    """scipy's global-optimisation benchmarks are classes in modules that import numpy's names
    (`from numpy import zeros`); `lambda y: prob.fun(y)`, a closure over the instance, a bound
    method as a default argument or a method of another object calling it were refused (the
    benchmark hunt), a bound method passed directly was not. Oracle: by hand."""
    import importlib

    (tmp_path / "benchmark_module_for_test.py").write_text(_BENCHMARK_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    prob = importlib.import_module("benchmark_module_for_test").Problem()
    x = np.array([0.3, 0.4, 0.5])
    xx = np.concatenate([[x[-1]], x, [x[0]]])
    # d/dx_k of sum_i xx_i sin(xx_{i+1}) + xx_{i+2}^2 over the periodic extension
    want = np.zeros(3)
    for i in range(3):
        terms = {i: np.sin(xx[i + 1]), i + 1: xx[i] * np.cos(xx[i + 1]), i + 2: 2 * xx[i + 2]}
        for j, d in terms.items():
            want[(j - 1) % 3] += d

    def make(p):
        return lambda y: np.atleast_1d(p.fun(y))

    class Model:
        def rhs(self, t, y):
            return prob.fun(y) * np.ones_like(y)

    for f in (lambda y: np.atleast_1d(prob.fun(y)), make(prob),
              lambda y, m=prob.fun: np.atleast_1d(m(y))):
        np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray().ravel(), want,
                                   rtol=1e-14)
    jac = sparsejac.ode_jacobian(Model().rhs, 0.0, x, format="csr")
    np.testing.assert_allclose(jac(0.0, x).toarray(), np.tile(want, (3, 1)), rtol=1e-14)


def test_common_type_is_a_query():
    """np.common_type of traced arrays (scipy_dae's example residual): their dtypes' type."""
    def f(y):
        kind = np.common_type(y, np.ones(2))
        return np.asarray(y ** 2, dtype=kind)

    np.testing.assert_array_equal(sparsejac.jacobian(f, np.array([1.0, 3.0])).toarray(),
                                  np.diag([2.0, 6.0]))


def test_a_store_through_a_mask_moving_with_x():
    """y[y < 0] = 0 and y[y > 1] = 1 (clipping a state, a ReLU written in place; the idioms
    hunt) were refused in a global pattern and prepared Jacobians: the mask moves with x. With
    one value it is np.where(mask, value, y), exact at every point. Oracle: by hand at points
    on both sides of the masks."""
    def f(y):
        z = y ** 2 - 1.0
        z[z < 0] = 0.0
        w = np.copy(y)
        w[w > 0.5] = 0.5
        return z + w

    def by_hand(p):
        return np.diag(np.where(p ** 2 - 1.0 < 0, 0.0, 2 * p) + np.where(p > 0.5, 0.0, 1.0))

    x = np.array([0.3, 1.5, 0.7, -2.0])
    assert sparsejac.jacobian_sparsity(f, x).nnz == 4
    jac = sparsejac.SparseJacobian(f, x)
    for p in (x, np.array([2.0, 0.1, -0.4, 0.9])):
        np.testing.assert_array_equal(jac(p).toarray(), by_hand(p))


V_SET = np.array([1.04, 1.0, 1.02, 1.0])
PQ = np.array([1, 3])


def test_np_array_of_a_plain_array_in_f_is_a_buffer_as_np_copy() -> None:
    """Found from outside: power-flow code starts with ``V = np.array(V_set, dtype=float)``
    and writes the unknowns into it; that copy was plain (refused at the write) where
    ``np.copy(V_set)`` was a buffer. ``np.asarray`` (the same object: writing into it would
    change the caller's array) stays plain, and so does ``np.array(..., copy=False)``."""
    def mismatch(x: Any, v_set: Any) -> Any:
        v = np.array(v_set, dtype=float)
        v[PQ] = x
        return v[1:] * v[:-1] - 1.0

    x = np.array([0.98, 0.97])
    want = np.array([[1.04, 0.0], [1.02, 0.0], [0.0, 1.02]])
    np.testing.assert_array_equal(sparsejac.jacobian(mismatch, x, args=(V_SET,)).toarray(),
                                  want)
    jac = sparsejac.SparseJacobian(mismatch, x, args=(V_SET,))
    np.testing.assert_allclose(jac(np.array([1.0, 0.9])).toarray(), [[1.04, 0], [1.02, 0],
                                                                      [0, 1.02]])
    np.testing.assert_array_equal(V_SET, [1.04, 1.0, 1.02, 1.0])  # the caller's, untouched

    def into_the_callers(x: Any) -> Any:
        v = np.asarray(V_SET)
        v[PQ] = x
        return v

    def no_copy(x: Any) -> Any:
        v = np.array(V_SET, copy=False)
        v[PQ] = x
        return v

    for f in (into_the_callers, no_copy):
        with pytest.raises(sparsejac.TracedConversionError):
            sparsejac.jacobian(f, x)
    np.testing.assert_array_equal(V_SET, [1.04, 1.0, 1.02, 1.0])


_TWO_FUNCTIONS = '''
from numpy import zeros


def fa(x):
    out = zeros(x.size)
    out[:] = x ** 2
    return out


def fb(x):
    out = zeros(2)
    out[0] = x[0] * x[1]
    out[1] = x[1] ** 2
    return out
'''


def test_bare_names_stay_bound_while_any_trace_of_the_module_runs(tmp_path, monkeypatch):
    """Found from outside: two threads preparing two functions of one module that writes
    `from numpy import zeros`: the first trace to end bound `zeros` back to numpy's while
    the second still ran, which then refused its own `out[0] = ...`. The names are bound
    back when the last trace of the module ends."""
    import importlib

    from sparsejac.tracing.buffers import bare_names_traced, buffers_traced

    (tmp_path / "two_functions_for_test.py").write_text(_TWO_FUNCTIONS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("two_functions_for_test")
    original = module.zeros
    x = np.array([0.5, 1.5])
    with buffers_traced():  # (the wrappers installed, as while any trace runs)
        first, second = bare_names_traced(module.fa), bare_names_traced(module.fb)
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert module.zeros is not original  # fb's trace still runs: still the wrapper
        np.testing.assert_allclose(sparsejac.jacobian(module.fb, x).toarray(),
                                   [[x[1], x[0]], [0.0, 2 * x[1]]], rtol=1e-15)
        second.__exit__(None, None, None)
        assert module.zeros is original
    errors: list[BaseException] = []

    def prepare(f: Any) -> None:
        try:
            for _ in range(30):
                sparsejac.SparseJacobian(f, x)(x)
        except BaseException as exc:  # (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=prepare, args=(f,)) for f in (module.fa, module.fb)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert module.zeros is original
