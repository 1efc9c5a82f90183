"""Hessians of code written as loops over elements: exact, and a gradient program that grows
with the loop, not with the loop times the vector it reads or writes.

The recorded reverse sweep pulls each read ``x[i]`` back to a cotangent of the whole of
``x``, and each write ``out[k] = ...`` past a cotangent of the whole buffer. Summed node by
node, K reads of an n-vector recorded K nodes of size n (Rosenbrock as a loop at n = 2,000:
9.5 s to prepare, 503 ms a Hessian). Those contributions are now gathered and recorded as
one linear map where the cotangent is read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad.second_order import gradient_program
from sparsejac.tracing import trace


def rosen_loop(x: Any) -> Any:
    s = 0.0
    for i in range(x.size - 1):
        s = s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def rosen_hessian(x: np.ndarray) -> np.ndarray:
    """Hand-derived Hessian of the chained Rosenbrock function."""
    n = x.size
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] -= 400.0 * x[i]
        h[i + 1, i] -= 400.0 * x[i]
    return h


def _elements(f: Any, x: np.ndarray, params: tuple[Any, ...] = ()) -> int:
    """The entries of every node of ``f``'s recorded gradient program, summed."""
    prog = gradient_program(f, x, params=params)
    return sum(int(node.out.size) for node in prog.nodes)


def test_a_loop_of_element_reads_has_a_linear_gradient_program(
        rng: np.random.Generator) -> None:
    """Rosenbrock written as a scalar loop: the Hessian equals the hand-derived one, and
    doubling n doubles the gradient program (it quadrupled: every read's cotangent was a
    vector of n)."""
    small, large = (_elements(rosen_loop, np.linspace(-1.0, 1.2, n)) for n in (100, 200))
    assert large < 2.2 * small
    x0 = rng.uniform(-1.0, 1.5, 40)
    hess = sparsejac.SparseHessian(rosen_loop, x0)
    for x in (x0, rng.uniform(-2.0, 2.0, 40)):
        np.testing.assert_allclose(hess(x).toarray(), rosen_hessian(x), rtol=1e-13,
                                   atol=1e-10)
    np.testing.assert_allclose(sparsejac.hessian(rosen_loop, x0).toarray(),
                               rosen_hessian(x0), rtol=1e-13, atol=1e-10)


def _defects(K: int) -> Any:
    """Trapezoidal defects of a pendulum, written interval by interval into one buffer."""
    h = 3.0 / K

    def c(z: Any) -> Any:
        th, om, u = z[:K + 1], z[K + 1:2 * K + 2], z[2 * K + 2:]
        out = np.zeros(2 * K)
        for k in range(K):
            out[k] = th[k + 1] - th[k] - 0.5 * h * (om[k + 1] + om[k])
            out[K + k] = om[k + 1] - om[k] - 0.5 * h * ((-np.sin(th[k + 1]) + u[k + 1])
                                                        + (-np.sin(th[k]) + u[k]))
        return out
    return c


def _defects_hessian(K: int, z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Hand-derived Hessian of ``v @ c(z)``: only the sines have second derivatives."""
    h = 3.0 / K
    hess = np.zeros((z.size, z.size))
    for k in range(K):
        for j in (k, k + 1):  # d2/dth_j2 of 0.5 h sin(th_j) v[K + k]
            hess[j, j] -= 0.5 * h * np.sin(z[j]) * v[K + k]
    return hess


@pytest.mark.parametrize("K", [6, 20])
def test_a_loop_writing_into_a_buffer_has_a_linear_constraint_hessian(
        K: int, rng: np.random.Generator) -> None:
    """The constraint Hessian of collocation defects written into a buffer element by
    element, with multipliers that change (traced): exact, and its tape grows with K (it
    held 2·10⁷ slots at K = 1,000, the cotangent of the whole buffer past every write)."""
    c = _defects(K)
    z0 = rng.uniform(-1.0, 1.0, 3 * K + 3)
    ch = sparsejac.constraint_hessian(c, z0)
    for z, v in ((z0, rng.uniform(-1, 1, 2 * K)), (z0[::-1].copy(), rng.uniform(-1, 1, 2 * K))):
        np.testing.assert_allclose(ch(z, v).toarray(), _defects_hessian(K, z, v),
                                   rtol=1e-13, atol=1e-14)


def test_the_buffer_loop_gradient_grows_linearly() -> None:
    """Doubling K about doubles the Lagrangian's gradient program (it quadrupled)."""
    sizes = []
    for K in (40, 80):
        c = _defects(K)
        v = np.linspace(0.5, 1.5, 2 * K)

        def lagrangian(z: Any, c: Any = c, v: Any = v) -> Any:
            return v @ c(z)

        sizes.append(_elements(lagrangian, np.linspace(0.0, 1.0, 3 * K + 3)))
    assert sizes[1] < 2.2 * sizes[0]


def _slice_writes(x: Any) -> Any:
    k_ = x.shape[0] - 1
    c = np.zeros(2 * k_)
    for k in range(k_):
        c[2 * k:2 * k + 2] = np.stack([x[k + 1] - x[k] ** 2, x[k] * np.sin(x[k + 1])])
    return c


def _writes_2d(x: Any) -> Any:
    k_ = x.shape[0] - 1
    c = np.zeros((k_, 2))
    for k in range(k_):
        c[k, 0] = x[k + 1] - x[k] ** 2
        c[k, 1] = x[k] * np.sin(x[k + 1])
    return c.ravel()


def _writes_hessian(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Hand-derived Hessian of ``v @ c(x)`` for the two writes above."""
    n = x.size
    h = np.zeros((n, n))
    for k in range(n - 1):
        a, b = v[2 * k], v[2 * k + 1]
        h[k, k] -= 2.0 * a
        h[k, k + 1] += b * np.cos(x[k + 1])
        h[k + 1, k] += b * np.cos(x[k + 1])
        h[k + 1, k + 1] -= b * x[k] * np.sin(x[k + 1])
    return h


@pytest.mark.parametrize("c", [_slice_writes, _writes_2d])
def test_slice_and_2d_buffer_writes_are_exact_and_linear(c: Any,
                                                         rng: np.random.Generator) -> None:
    """Found from outside: a loop writing two elements at a time (``c[2k:2k + 2] = ...``)
    or into a 2-D buffer (``c[k, 0] = ...``) still grew with n² (the buffer's cotangent
    recorded past each slice write; a 2-D cotangent reshaped once per input): 4·10⁶ tape
    slots and 324 ms a Hessian at n = 2,000. Constant steps now map the kept entries."""
    x0 = rng.uniform(-1.0, 1.0, 30)
    ch = sparsejac.constraint_hessian(c, x0)
    for x in (x0, rng.uniform(-1.0, 1.0, 30)):
        v = rng.standard_normal(58)
        np.testing.assert_allclose(ch(x, v).toarray(), _writes_hessian(x, v), rtol=1e-13,
                                   atol=1e-14)
    sizes = []
    for n in (40, 80):  # the multipliers traced, as constraint_hessian has them
        v = np.linspace(0.5, 1.5, 2 * (n - 1))
        z = np.linspace(0.0, 1.0, n)
        grad = _elements(lambda z, v: v @ c(z), z, (v,))
        own = sum(int(node.out.size) for node in trace(lambda z, v: v @ c(z), z,
                                                       params=(v,)).nodes)
        assert grad < 4 * own
        sizes.append(grad)
    if c is _writes_2d:  # (a slice write records a buffer of n entries: f's own trace
        # grows with n², and its gradient with it)
        assert sizes[1] < 2.2 * sizes[0]


def _buffer_then_vector(x: Any) -> Any:
    r = np.zeros(x.shape[0] - 1)
    for i in range(x.shape[0] - 1):
        r[i] = 10.0 * (x[i + 1] - x[i] ** 2)
    return 0.5 * r @ r


def _read_after_write(x: Any) -> Any:
    out = np.zeros(x.shape[0])
    for k in range(x.shape[0]):
        out[k] = x[k] ** 2 + (x[k - 1] if k > 0 else 0.0)
        out[k] += x[k] * out[k]
    return np.sum(out ** 2)


@pytest.mark.parametrize("f", [_buffer_then_vector, _read_after_write])
def test_buffers_written_by_element_and_read_whole_stay_linear(
        f: Any, rng: np.random.Generator) -> None:
    """Found from outside (a draft of the gathering above): a buffer written element by
    element and then read whole (``r @ r``) or read back took 8·10⁶ tape slots at n =
    2,000, every element's cotangent concatenating the whole buffer's. A part of which few
    positions are read contributes only those."""
    sizes = [_elements(f, np.linspace(0.1, 0.9, n)) for n in (40, 80)]
    assert sizes[1] < 2.2 * sizes[0]
    x = rng.uniform(-1.0, 1.0, 12)
    got = sparsejac.SparseHessian(f, x)(x).toarray()
    if f is _buffer_then_vector:  # 50 (x[i+1] - x[i]^2)^2 summed: by hand
        want = np.zeros((12, 12))
        for i in range(11):
            want[i, i] += 600.0 * x[i] ** 2 - 200.0 * x[i + 1]
            want[i, i + 1] -= 200.0 * x[i]
            want[i + 1, i] -= 200.0 * x[i]
            want[i + 1, i + 1] += 100.0
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-11)
        return
    # (x[k]^2 + x[k-1]) (1 + x[k]) squared and summed: written with slices, and by central
    # differences of its gradient written by hand
    def vectorised(z: Any) -> Any:
        prev = np.concatenate([[0.0], z[:-1]])
        return np.sum(((z ** 2 + prev) * (1.0 + z)) ** 2)

    def gradient(z: np.ndarray) -> np.ndarray:
        prev = np.concatenate([[0.0], z[:-1]])
        u = (z ** 2 + prev) * (1.0 + z)
        g = 2 * u * (2 * z * (1.0 + z) + z ** 2 + prev)
        g[:-1] += 2 * u[1:] * (1.0 + z[1:])
        return g

    np.testing.assert_allclose(got, sparsejac.hessian(vectorised, x).toarray(), rtol=1e-13,
                               atol=1e-12)
    h = 1e-6
    fd = np.array([(gradient(x + h * e) - gradient(x - h * e)) / (2 * h) for e in np.eye(12)])
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)


def test_mapped_cotangents_equal_the_recorded_map(rng: np.random.Generator) -> None:
    """:meth:`Scattered.mapped` (entries pushed through a constant step without recording
    it) gives what the step's transposed map applied to the recorded value gives, duplicate
    paths summed, and declines a step that would multiply the entries."""
    import scipy.sparse as sp

    from sparsejac.ad.cotangents import Scattered
    from sparsejac.tracing import trace

    class Step:
        def __init__(self, r: sp.csr_array) -> None:
            self.const, self.indices, self.indptr = r.data, r.indices, r.indptr

    r = sp.random_array((6, 9), density=0.4, rng=rng, format="csr")
    targets = rng.integers(0, 6, 10)

    def both(x: Any) -> Any:
        s = Scattered(x[:5], targets[:5], np.arange(5), np.arange(1.0, 6.0), (6,))
        s = s + Scattered(x[3], targets[5:6], np.zeros(1, dtype=np.int64), np.ones(1), (6,))
        s = s + Scattered(x[:5], targets[6:], np.array([0, 1, 1, 4]), np.full(4, 2.0), (6,))
        mapped = s.mapped(Step(r), (9,))
        assert mapped is not None
        dense = Step(sp.csr_array(np.ones((6, 50))))  # 6 entries to 300: declined
        big = Scattered(x[:3], np.arange(6), np.arange(6) % 3, np.ones(6), (6,))
        assert big.mapped(dense, (50,)) is None
        return np.concatenate([mapped.value(), r.T @ s.value()])

    x = rng.standard_normal(7)
    out = trace(both, x).out.value
    np.testing.assert_allclose(out[:9], out[9:], rtol=1e-14, atol=1e-14)


def test_an_arrowhead_loop_keeps_the_tape(rng: np.random.Generator) -> None:
    """Found from outside: ARWHEAD written as a loop took 0.65 ms a Hessian at n = 1,000
    and 91 ms at n = 1,200. The engine was chosen for the natural column colouring's n
    products (x[-1] meets every variable), not the symmetric colouring's 2 it uses, and
    past n = 1,100 that rule took the chain engine (a walk in Python per step)."""
    def arwhead(x: Any) -> Any:
        n, s = x.shape[0], 0.0
        for i in range(n - 1):
            s += -4.0 * x[i] + 3.0 + (x[i] ** 2 + x[n - 1] ** 2) ** 2
        return s

    n = 1200
    x = rng.uniform(-1.0, 1.0, n)
    hess = sparsejac.SparseHessian(arwhead, x)
    assert hess.stats()["engine"]["engine"] == "tape"
    assert hess.n_products == 2
    got = hess(x).toarray()
    q = x[:-1] ** 2 + x[-1] ** 2  # d2/dx2 of (x_i^2 + x_n^2)^2, by hand
    want = np.zeros((n, n))
    want[np.arange(n - 1), np.arange(n - 1)] = 4 * q + 8 * x[:-1] ** 2
    want[-1, -1] = np.sum(4 * q + 8 * x[-1] ** 2)
    want[:-1, -1] = want[-1, :-1] = 8 * x[:-1] * x[-1]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_np_float64_of_the_result_names_its_way_out() -> None:
    """Found from outside: ``return np.float64(s)`` (a plain scalar, as scipy's optimisers
    accept) is refused, and the message named other causes only; it now names this one and
    its spelling that is traced (``s.astype(np.float64)``)."""
    from sparsejac.errors import TracedConversionError

    with pytest.raises(TracedConversionError, match=r"np\.float64\(s\).*s\.astype\(np\.float64\)"):
        sparsejac.hessian(lambda x: np.float64(np.sum(x ** 3)), np.ones(3))
    got = sparsejac.hessian(lambda x: np.sum(x ** 3).astype(np.float64), np.ones(3))
    np.testing.assert_allclose(got.toarray(), 6.0 * np.eye(3))


def _kinks(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        s = s + np.abs(d) ** 3 + np.maximum(x[i], 0.3) ** 2 + np.clip(x[i + 1], -0.5, 0.5) * d
    return s


def test_kinks_in_a_loop_keep_the_tape(rng: np.random.Generator) -> None:
    """Found from outside: loops with np.abs, np.maximum, np.minimum, np.where or np.clip
    took the chain engine for their Hessians (their gradient's ``sign`` and the partials'
    ``astype`` were not encoded), 50-100 times slower a Hessian. The tape now encodes both
    (a sign that f itself compares stays tie-checked on the chain engine). Exact against
    the derivatives written by hand, and at kinks equal to the one-off Hessian (the same
    conventions: abs' is 0 at 0, max's derivative one half at a tie)."""
    x = rng.uniform(-1.0, 1.0, 30)
    hess = sparsejac.SparseHessian(_kinks, x)
    assert hess.stats()["engine"]["engine"] == "tape"
    kinked = x.copy()
    kinked[7] = kinked[6]  # |d| at its kink
    kinked[10] = 0.3  # max(x, 0.3) at its tie: the one-off Hessian's conventions, exactly
    np.testing.assert_array_equal(hess(kinked).toarray(),
                                  sparsejac.hessian(_kinks, kinked).toarray())
    for z in (x, rng.uniform(-1.0, 1.0, 30)):
        n = z.size
        want = np.zeros((n, n))
        for i in range(n - 1):
            d = z[i + 1] - z[i]
            c = 6.0 * abs(d)  # (|d|^3)'' = 6 |d|
            want[i, i] += c
            want[i + 1, i + 1] += c
            want[i, i + 1] -= c
            want[i + 1, i] -= c
            want[i, i] += 2.0 if z[i] > 0.3 else 0.0
            inside = 1.0 if -0.5 < z[i + 1] < 0.5 else 0.0  # clip's slope times d
            want[i + 1, i + 1] += 2.0 * inside
            want[i, i + 1] -= inside
            want[i + 1, i] -= inside
        np.testing.assert_allclose(hess(z).toarray(), want, rtol=1e-13, atol=1e-13)


def test_small_block_writes_into_a_buffer_are_merged(rng: np.random.Generator) -> None:
    """``c[2 * k:2 * k + 2] = v`` in a loop records nothing per write (as element writes):
    f's own trace grows with n, not n² (a buffer per write); later writes win, overlapping
    blocks and a read of the buffer between writes included (central differences agree)."""
    from scipy.optimize._numdiff import approx_derivative

    sizes = [sum(int(node.out.size) for node in trace(_slice_writes, np.ones(n)).nodes)
             for n in (40, 80)]
    assert sizes[1] < 2.2 * sizes[0]

    def overlapping(x: Any) -> Any:
        c = np.zeros(7)
        c[0:3] = x[:3] * 2.0
        c[1:4] = x[1:4] ** 2  # overwrites two of the first block's
        c[2] = x[5]
        c[3:5] = c[0:2] + x[4]  # a read between writes
        c[5:7] = np.zeros(2, like=x) + 1.5  # a constant block
        return c

    for f, n in ((overlapping, 6), (_slice_writes, 9)):
        x = rng.uniform(0.5, 1.5, n)
        want = approx_derivative(f, x, method="3-point")
        np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, atol=1e-8)
        jac = sparsejac.SparseJacobian(f, x)
        z = rng.uniform(0.5, 1.5, n)
        np.testing.assert_allclose(jac(z).toarray(), approx_derivative(f, z, method="3-point"),
                                   atol=1e-8)
        np.testing.assert_array_equal(jac.values(z), jac(z).data)


def test_an_element_read_after_a_block_write_and_a_dead_write(
        rng: np.random.Generator) -> None:
    """Found from outside (this session's drafts): reading one element of a small block just
    written (``c[0:2] = ...; c[2] = c[1] * ...``) raised a TypeError, and a Hessian of a
    function whose written value is overwritten before any read (``c[1:3] = a; c[1:3] = b``
    beside a view of the buffer) raised from the kept cotangents (every contribution mapped
    away). Checked against the Jacobian and Hessian written by hand."""
    def reads(x: Any) -> Any:
        c = np.zeros(4)
        c[0:2] = x[0:2] * x[2]
        c[2] = c[1] * x[3]
        return c

    x = rng.uniform(0.5, 1.5, 4)
    want = np.zeros((4, 4))
    want[0, [0, 2]] = x[2], x[0]
    want[1, [1, 2]] = x[2], x[1]
    want[2, [1, 2, 3]] = x[2] * x[3], x[1] * x[3], x[1] * x[2]
    np.testing.assert_allclose(sparsejac.jacobian(reads, x).toarray(), want, rtol=1e-15)
    np.testing.assert_allclose(sparsejac.SparseJacobian(reads, x)(x).toarray(), want,
                               rtol=1e-15)

    def dead(x: Any) -> Any:
        c = np.zeros(10)
        c[4:6] += x[2:4] * x[4]
        c[1:3] = x[0:2] * x[2]  # overwritten by the next line
        c[1:3] = x[3:5]
        return np.sum(c * c)

    z = rng.uniform(0.5, 1.5, 6)
    h = np.zeros((6, 6))  # (x2 x4)^2 + (x3 x4)^2 + x3^2 + x4^2, by hand
    for i in (2, 3):
        h[i, i] += 2 * z[4] ** 2
        h[i, 4] += 4 * z[i] * z[4]
        h[4, i] += 4 * z[i] * z[4]
        h[4, 4] += 2 * z[i] ** 2
    h[3, 3] += 2.0
    h[4, 4] += 2.0
    np.testing.assert_allclose(sparsejac.hessian(dead, z).toarray(), h, rtol=1e-14)
    np.testing.assert_allclose(sparsejac.SparseHessian(dead, z)(z).toarray(), h, rtol=1e-14)
