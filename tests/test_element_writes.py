"""Element writes ``out[i] = v`` are kept on the traced array and merged into one operation.

Every case compares the traced program's value with numpy's on plain arrays (the same code),
and the Jacobian with complex-step or hand-derived derivatives, in every mode, at the trace
point and at another point (prepared replays).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import evaluate
from sparsejac.tracing import trace


def complex_step(f: Any, x: np.ndarray) -> np.ndarray:
    h = 1e-30
    cols = []
    for j in range(x.size):
        z = x.astype(complex)
        z.flat[j] += 1j * h
        cols.append(np.imag(np.asarray(f(z))).ravel() / h)
    return np.column_stack(cols)


def loop(x: Any) -> Any:
    n = x.shape[0]
    out = np.zeros(n, dtype=x.dtype)
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        right = x[i + 1] if i < n - 1 else 0.0
        out[i] = left - 2.0 * x[i] + right - x[i] ** 3
    return out


def overwrite_and_read(x: Any) -> Any:
    out = np.zeros(5, dtype=x.dtype)
    out[0] = x[0]
    out[0] = x[1] * x[0]          # the last write wins
    out[-1] = 2.5                 # a constant, negative index
    out[2] = x[2]
    a = out[2] * out[0]           # reads of pending positions
    b = out[1] + 1.0              # a read of an unwritten position
    out[1] = a + b
    head = out[:3] * 2.0          # a slice read merges the writes
    out[3] = x[3] ** 2            # a write after the merge
    return np.concatenate([head, out])


def matrix_writes(x: Any) -> Any:
    out = np.ones((3, 3), dtype=x.dtype)
    for i in range(3):
        for j in range(3):
            if (i + j) % 2:
                out[i, j] = x[i] * x[j]
    out[np.int64(2), np.int64(-1)] = np.sin(x[0])
    out[1, 1] += x[2]             # augmented: read, then write
    return out.ravel() * np.arange(1.0, 10.0)


def views_see_writes(x: Any) -> Any:
    out = np.zeros(4, dtype=x.dtype)
    out[0] = x[0]                 # pending, then a view is made (merged)
    v = out[1:3]
    out[1] = x[1] * 3.0           # through the base: the view sees it
    v[1] = x[2] ** 2              # through the view: the base sees it
    return np.concatenate([out, v])


#: triangles of a small mesh (a repeated node in one of them: numpy's last write wins)
TRIANGLES = np.array([[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [5, 0, 2], [4, 4, 1]])


def assemble(x: Any) -> Any:
    """A finite-element residual assembled element by element: ``R[t] += r_e``."""
    r = np.zeros(6, dtype=x.dtype)
    for t in TRIANGLES:
        k = 1.0 + np.mean(x[t]) ** 2
        r[t] += k * (x[t] - np.mean(x[t])) + 0.1 * x[t] ** 2
    r[[0, -1]] = x[[0, -1]]       # Dirichlet rows (a fancy write of two)
    return r


def fancy_reads_and_writes(x: Any) -> Any:
    """Fancy reads of pending writes: numbers, blocks, elements, unwritten positions, 2-D."""
    out = np.zeros(6, dtype=x.dtype)
    out[1] = 2.0                          # a number
    out[2:4] = x[1:3] * x[0]              # a block
    out[5] = x[5] ** 2                    # an element
    a = out[np.array([3, -1, 0, 1, 2])]   # mixed, a negative index, an unwritten position
    out[[4, 0]] = a[:2] * x[4]
    m = np.ones((2, 3), dtype=x.dtype)
    m[[0, 1], [2, 0]] = x[:2] * x[3]
    b = m[np.array([1, 0]), 0] + m[1, [0, 2]]
    return np.concatenate([out, a, b, m.ravel()])


def over_a_traced_base(x: Any) -> Any:
    """Pending writes over an array that is already traced (x's copy), read back fancily."""
    y = x * 2.0
    y[[1, 3]] += x[[0, 2]] ** 2
    y[[3, 4]] -= y[[1, 3]] * x[5]
    return y


CASES = [loop, overwrite_and_read, matrix_writes, views_see_writes, assemble,
         fancy_reads_and_writes, over_a_traced_base]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_values_and_jacobians(f: Any) -> None:
    rng = np.random.default_rng(0)
    x0 = rng.uniform(0.5, 1.5, 6)
    x1 = rng.uniform(0.5, 1.5, 6)
    prog = trace(f, x0)
    np.testing.assert_allclose(evaluate(prog)[prog.out.id], f(x0), rtol=1e-15)
    np.testing.assert_allclose(evaluate(prog, x=x1)[prog.out.id], f(x1), rtol=1e-14)
    for x in (x0, x1):
        want = complex_step(f, x)
        pattern = sparsejac.jacobian_sparsity(f, x).toarray()
        assert not ((want != 0) & ~pattern).any()
        for mode in ("forward", "reverse", "mixed"):
            jac = sparsejac.SparseJacobian(f, x0, mode=mode)
            np.testing.assert_allclose(jac(x).toarray(), want, rtol=1e-12, atol=1e-14,
                                       err_msg=mode)


def test_loop_pattern_is_tridiagonal_and_records_one_write() -> None:
    prog = trace(loop, np.ones(50))
    pattern = sparsejac.jacobian_sparsity(loop, np.ones(50)).toarray()
    i, j = np.nonzero(pattern)
    assert (np.abs(i - j) <= 1).all()
    assert pattern.sum() == 50 + 2 * 49
    gathers_of_size_n = [nd for nd in prog.nodes if nd.prim.name == "gather"
                         and nd.out.size == 50]
    assert len(gathers_of_size_n) == 1  # the 50 writes are one operation


def test_an_assembly_loop_records_no_operation_of_the_buffers_size_per_element() -> None:
    """Found from outside: ``R[t] += r_e`` merged the pending writes at every read of
    ``R[t]``: one gather of the whole buffer per element (a 10,201-unknown mesh's one-off
    Jacobian: 33 s, its pattern and products quadratic in the number of elements). The
    reads now gather the written values directly; the writes merge once."""
    n, m = 400, 300
    rng = np.random.default_rng(3)
    tri = rng.integers(0, n, size=(m, 3))

    def f(x: Any) -> Any:
        r = np.zeros(n, dtype=x.dtype)
        for t in tri:
            r[t] += x[t] * np.sum(x[t])
        return r

    x = rng.uniform(0.5, 1.5, n)
    prog = trace(f, x)
    whole = [nd for nd in prog.nodes if nd.out.size == n]
    assert len(whole) == 1  # the final merge alone
    got = sparsejac.jacobian(f, x, mode="reverse").toarray()
    np.testing.assert_allclose(got, complex_step(f, x), rtol=1e-13, atol=1e-14)


def test_reading_the_shape_in_the_loop_merges_nothing() -> None:
    """``out.shape``/``len(out)`` read inside the loop keep the writes pending (one merge)."""
    def f(x: Any) -> Any:
        out = np.zeros_like(x)
        for i in range(len(out)):
            out[i] = x[i] ** 2 if i < out.shape[0] - 1 else x[i] * x[0] * out.size
        return out

    prog = trace(f, np.ones(40))
    assert len([nd for nd in prog.nodes if nd.prim.name == "gather"
                and nd.out.size == 40]) == 1
    x = np.linspace(0.5, 1.5, 40)
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), complex_step(f, x),
                               rtol=1e-13)


def test_writes_that_take_the_general_path() -> None:
    """Other dtypes, casting and non-scalar values keep numpy's semantics."""
    def f(x: Any) -> Any:
        out32 = np.zeros(3, dtype=np.float32)
        out32[0] = x[0]                      # float64 into float32: cast
        ints = np.zeros(3, dtype=np.int64)
        ints[1] = 7                          # integer buffer
        out = np.zeros((3, 1))
        out[2] = x[1:2]                      # a row (one element) of a 2-D buffer
        return out32.astype(np.float64) + ints + out[:, 0]

    x = np.array([1.25, 2.0])
    prog = trace(f, x)
    np.testing.assert_allclose(evaluate(prog)[prog.out.id], f(x))
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), [[1, 0], [0, 0], [0, 1]])


def test_out_of_bounds_and_bad_values_fail_as_numpy_does() -> None:
    def oob(x: Any) -> Any:
        out = np.zeros(3)
        out[3] = x[0]
        return out

    with pytest.raises(IndexError):
        sparsejac.jacobian_sparsity(oob, np.ones(2))

    def read_oob(x: Any) -> Any:
        return x[5]

    with pytest.raises(IndexError):
        sparsejac.jacobian_sparsity(read_oob, np.ones(2))

    def complex_into_float(x: Any) -> Any:
        out = np.zeros(2)
        out[0] = 1j * x[0]
        return out

    with pytest.raises((TypeError, ValueError, sparsejac.UnsupportedPrimitiveError)):
        sparsejac.jacobian(complex_into_float, np.ones(2))


def test_local_mode_and_hessians_see_the_writes() -> None:
    def energy(x: Any) -> Any:
        r = np.zeros(x.size - 1)
        for i in range(x.size - 1):
            r[i] = x[i + 1] - x[i] ** 2
        return np.sum(r ** 2)

    x = np.linspace(0.2, 1.0, 6)
    loc = sparsejac.jacobian_sparsity(loop, x, local=True).toarray()
    np.testing.assert_array_equal(loc, sparsejac.jacobian_sparsity(loop, x).toarray())
    h = sparsejac.hessian(energy, x).toarray()
    i, j = np.nonzero(h)
    assert (np.abs(i - j) <= 1).all()


def test_writes_into_fortran_ordered_arrays_keep_their_values():
    """numpy gives Fortran-ordered results for exp of a transpose; a write into such an array
    was applied to a temporary copy of its values (reshape(-1) of an F-ordered copy), so the
    values the trace carried on were stale: the one-off Jacobian was silently wrong where the
    outputs happened to agree, and refused elsewhere. Also writes through y.real of a real
    array, which numpy makes a view."""
    import sparsejac
    from tests.test_rules import fd4_jacobian

    def element(x):
        y = np.exp(x[:4].reshape(2, 2).T)
        y[0, 1] = x[0] ** 2
        return y.ravel() * x[4]

    def through_transpose(x):
        y = x[:4].reshape(2, 2) * 1.0
        y.T[0] *= 3.0
        return y.ravel() * x[4]

    def rows(x):
        y = np.exp(x.reshape(2, 3).T)
        y[1:] -= y[:-1]
        np.add.at(y, (0, 1), x[0])
        return y.ravel()

    def real_view(x):
        y = x[:2] * 1.0
        y.real[0] = 3.0 * x[0]
        return y * x[2]

    cases = [(element, np.array([0.1, 0.2, 0.3, 0.4, 0.0])),
             (through_transpose, np.array([1.0, 2.0, 3.0, 4.0, 0.0])),
             (rows, np.linspace(0.1, 0.6, 6)), (real_view, np.array([1.0, 2.0, 0.0]))]
    for fn, x0 in cases:
        np.testing.assert_allclose(sparsejac.jacobian(fn, x0).toarray(), fd4_jacobian(fn, x0),
                                   rtol=1e-7, atol=1e-9)
        jac = sparsejac.SparseJacobian(fn, x0, mode="reverse", verify=False)
        np.testing.assert_allclose(jac(x0 + 0.5).toarray(), fd4_jacobian(fn, x0 + 0.5),
                                   rtol=1e-7, atol=1e-9)


def test_pad_forms_without_a_gather_and_complex_writes_are_refused():
    import sparsejac

    x = np.arange(1.0, 4.0)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="mode='empty'"):
        sparsejac.jacobian(lambda z: np.pad(z, 2, mode="empty")[2:5], x)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="reflect_type='odd'"):
        sparsejac.jacobian(lambda z: np.pad(z, 2, mode="reflect", reflect_type="odd"), x)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="item assignment"):
        sparsejac.jacobian(lambda z: ((w := z + 1j * z).__setitem__(0, z[1]), w.real)[1], x)
