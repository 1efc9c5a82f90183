"""The fused call of a compiled tape (sweeps and decompression in one kernel) against the
unfused products and the colouring's own decompression, bit for bit.

The fused path is what a prepared :class:`~sparsejac.SparseJacobian` of a small program takes
at every call; these tests hold it to the path it replaces, on every partition, with the
fallbacks (non-finite values, parameters, symmetric colourings) and verify's check of a
changed global.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.special as sc

import sparsejac
from sparsejac.ad import Tape
from sparsejac.engines import _decompress
from sparsejac.tracing import trace

K = [1.5]


def kinetics(x: np.ndarray) -> np.ndarray:
    """A stiff-kinetics-like right-hand side: element writes, products, a dense row."""
    f = np.empty_like(x)
    n = x.size
    for i in range(n):
        f[i] = -K[0] * x[i] * x[(i + 1) % n] + 0.5 * x[i - 1] - np.exp(0.1 * x[i])
    f[0] = f[0] + np.sum(x ** 2)
    return f


def kinetics_jacobian(x: np.ndarray) -> np.ndarray:
    """Hand-derived Jacobian of :func:`kinetics`."""
    n = x.size
    J = np.zeros((n, n))
    for i in range(n):
        J[i, i] += -K[0] * x[(i + 1) % n] - 0.1 * np.exp(0.1 * x[i])
        J[i, (i + 1) % n] += -K[0] * x[i]
        J[i, i - 1] += 0.5
    J[0] += 2 * x
    return J


def unfused(tape: Tape, c: Any, x: np.ndarray) -> np.ndarray:
    """The products of :class:`Tape` and the colouring's decompression, separately."""
    cg, p, rg, q = c._seed_groups
    b = cmat = None
    if c.partition == "column":
        _, b = tape.forward(x, cg, p)
    elif c.partition == "row":
        _, cmat = tape.reverse(x, rg, q)
    elif p and q:
        _, b, cmat = tape.mixed(x, cg, p, rg, q)
    elif p:
        _, b = tape.forward(x, cg, p)
    else:
        _, cmat = tape.reverse(x, rg, q)
    return _decompress(c, b, cmat, None)


@pytest.mark.parametrize("partition", ["column", "row", "bidirectional"])
@pytest.mark.parametrize("n", [3, 8, 40])
def test_fused_equals_products_and_decompression(partition: str, n: int,
                                                 rng: np.random.Generator) -> None:
    x0 = rng.uniform(0.5, 1.5, n)
    prog = trace(kinetics, x0)
    tape = Tape.build(prog)
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(kinetics, x0), partition)
    for x in (x0, rng.uniform(-2, 2, n)):
        got = tape.jacobian_data(x, c)
        assert got is not None
        data, fx = got
        np.testing.assert_array_equal(data, unfused(tape, c, x))  # bit for bit
        np.testing.assert_allclose(fx, kinetics(x), rtol=1e-15, atol=1e-14)  # tape's order
        J = c.pattern.to_csr_array().astype(float)
        J.data = data
        np.testing.assert_allclose(J.toarray(), kinetics_jacobian(x), rtol=1e-13, atol=1e-13)


def test_fused_kernel_refuses_non_finite_values_and_the_call_falls_back() -> None:
    """A non-finite value makes the fused kernel decline; the chain engine then answers."""
    def f(x: np.ndarray) -> np.ndarray:
        return np.log(x) * x[::-1]

    x0 = np.array([1.0, 2.0, 3.0])
    tape = Tape.build(trace(f, x0))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(f, x0), "column")
    assert tape.jacobian_data(np.array([0.0, 2.0, 3.0]), c) is None
    jac = sparsejac.SparseJacobian(f, x0, engine="tape")
    chain = sparsejac.SparseJacobian(f, x0, engine="chain")
    assert jac._state.fast is not None
    with np.errstate(all="ignore"):
        got = jac(np.array([0.0, 2.0, 3.0])).toarray()
        want = chain(np.array([0.0, 2.0, 3.0])).toarray()
    np.testing.assert_array_equal(got, want)
    assert got[0, 0] == np.inf
    assert got[0, 2] == -np.inf
    assert got[2, 2] == 0.0


def test_non_finite_x_is_still_refused_by_the_fast_call() -> None:
    jac = sparsejac.SparseJacobian(kinetics, np.ones(4))
    assert jac._state.fast is not None
    with pytest.raises(ValueError, match="`x` must be finite; element 2"):
        jac(np.array([1.0, 1.0, np.nan, 1.0]))


def test_fast_call_sees_a_changed_global(rng: np.random.Generator) -> None:
    """verify runs on the fast call too: a changed constant prepares again, exactly."""
    x0 = rng.uniform(0.5, 1.5, 6)
    jac = sparsejac.SparseJacobian(kinetics, x0)
    assert jac._state.fast is not None
    np.testing.assert_allclose(jac(x0).toarray(), kinetics_jacobian(x0), rtol=1e-13)
    try:
        K[0] = 3.0
        np.testing.assert_allclose(jac(x0).toarray(), kinetics_jacobian(x0), rtol=1e-13)
        assert jac.stats()["preparations"] == 2
    finally:
        K[0] = 1.5


def test_fast_call_matches_the_general_call(rng: np.random.Generator) -> None:
    """jac(x) (fused) and jac.evaluate(x) (engine path) agree bit for bit in every mode."""
    x0 = rng.uniform(0.5, 1.5, 12)
    for mode in ("forward", "reverse", "mixed"):
        jac = sparsejac.SparseJacobian(kinetics, x0, mode=mode)
        assert jac._state.fast is not None
        x = rng.uniform(-1, 1, 12)
        a, b = jac(x), jac.evaluate(x)
        np.testing.assert_array_equal(a.toarray(), b.toarray())
        assert a.indices is not jac(x).indices  # every matrix owns its index arrays


def test_fast_call_with_parameters() -> None:
    """Parameters are written into their slots by the fused kernel, at every new value."""
    jac = sparsejac.SparseJacobian(lambda x, t: t * x ** 2, np.ones(3), params=(2.0,))
    assert jac._state.fast is not None
    np.testing.assert_allclose(jac(np.ones(3)).toarray(), 4 * np.eye(3))
    np.testing.assert_allclose(jac.values(np.ones(3), params=(3.0,)), [6.0, 6.0, 6.0])
    np.testing.assert_allclose(jac.values(2 * np.ones(3), params=(np.float64(5.0),)),
                               [20.0, 20.0, 20.0])
    np.testing.assert_allclose(jac.values(np.ones(3), params=(np.array([7.0]),)),
                               [14.0, 14.0, 14.0])
    # the engine's path (CSC output) packs the parameters for the same kernel
    np.testing.assert_allclose(jac.evaluate(np.ones(3), params=(3.0,), format="csc").toarray(),
                               6 * np.eye(3))
    unread = sparsejac.SparseJacobian(lambda x, t: x ** 2, np.ones(3), params=(1.0,))
    np.testing.assert_allclose(unread.values(np.arange(3.0), params=(9.0,)), [0.0, 2.0, 4.0])
    with pytest.raises(ValueError, match="parameter"):
        jac.values(np.ones(3), params=(np.ones(2),))


def test_ode_jacobian_with_a_time_dependent_rhs(rng: np.random.Generator) -> None:
    """``t`` is a parameter: the fused call at every new t equals the hand-derived J."""
    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        f = np.empty_like(y)
        f[0] = -np.cos(t) * y[0] * y[1]
        f[1] = np.sin(t) * y[0] - y[1] ** 2
        f[2] = t * y[2] + y[0]
        return f

    def want(t: float, y: np.ndarray) -> np.ndarray:
        return np.array([[-np.cos(t) * y[1], -np.cos(t) * y[0], 0.0],
                         [np.sin(t), -2 * y[1], 0.0],
                         [1.0, 0.0, t]])

    y0 = rng.uniform(0.5, 1.5, 3)
    jac = sparsejac.ode_jacobian(rhs, 0.0, y0)
    assert jac.prepared._state.fast is not None
    for t in (0.0, 0.3, 1.7, 0.3):
        y = rng.uniform(-1, 1, 3)
        np.testing.assert_allclose(jac(t, y), want(t, y), rtol=1e-14, atol=1e-14)


def test_no_fast_call_for_a_hessian() -> None:
    hess = sparsejac.SparseHessian(lambda x: np.sum(x[1:] * x[:-1] ** 2), np.ones(4))
    x = np.arange(1.0, 5.0)
    want = np.zeros((4, 4))
    for i in range(3):
        want[i, i] += 2 * x[i + 1]
        want[i, i + 1] += 2 * x[i]
        want[i + 1, i] += 2 * x[i]
    np.testing.assert_allclose(hess(x).toarray(), want, rtol=1e-14)


def _every_op(x: np.ndarray) -> np.ndarray:
    """Every instruction of the tape: gathers into a shared buffer, sums, every function."""
    y = np.zeros(x.size + 2)
    y[1:-1] = x
    y[0] = x[-1]
    y[-1] = 0.37  # a constant in the sums below (their affine part)
    s = np.sum(x * x[::-1]) + np.cumsum(y)[2:] * 1e-3 + np.sum(y) / 3
    u = (np.exp(-x) * np.sqrt(np.abs(x)) - np.log1p(x * x) * np.tanh(x) + np.arctan(x)
         + np.sin(x) * np.cos(x) + np.sinh(x) / np.cosh(x) + np.expm1(x) - np.tan(x) / 7
         + np.log(1.5 + x ** 2) + np.abs(x) ** 2.5 + 1.0 / (2.0 + x) + np.square(x))
    # selections per call: limiters with ties (x == x[::-1] at the middle), upwinding
    lim = np.maximum(x, x[::-1]) - np.minimum(np.clip(x, -0.5, 1.2), 0.9)
    up = np.where(np.logical_or(x > 1.0, ~(y[1:-1] < -0.5)), x ** 2, np.sin(x) * x[::-1])
    # products of operands that both move (a 2 x 2 matrix product, outer, dot)
    m = x[:4].reshape(2, 2)
    prods = np.sum(m @ m.T) + np.sum(np.outer(x[:2], x[-2:])) + x[:3] @ x[-3:]
    a = np.diag(2.0 + x[:3] ** 2) + 0.1 * np.outer(x[:3], x[-3:])  # a small system
    lim = lim + (np.log2(2.0 + x * x) + np.log10(1.5 + x) + np.exp2(x) + sc.expit(3 * x)
                 + sc.erf(x) - sc.erfc(x / 2) + np.hypot(x, x[::-1]) + np.arcsinh(x)
                 + np.arctanh(x / 4) + np.arcsin(x / 4) - np.arccos(x / 5)
                 + np.arccosh(2.0 + x * x))
    prods = prods + np.sum(np.linalg.solve(a, x[3:6]) * x[:3])
    return u - 2 * y[1:-1] + y[:-2] + y[2:] + s - np.cumsum(x) ** 3 + lim + up + prods


@pytest.mark.parametrize("partition", ["column", "row", "bidirectional"])
@pytest.mark.parametrize(("f", "n"), [(_every_op, 9), (kinetics, 12), (_every_op, 150)])
def test_numpy_twin_of_the_fused_kernel_is_the_kernel_bit_for_bit(
        f: Any, n: int, partition: str, rng: np.random.Generator) -> None:
    """The vectorised numpy twin a fresh process runs before numba is loaded (an n = 100
    tape: 0.16 ms a Jacobian against 1.8 ms interpreted) gives the compiled kernel's values
    and Jacobian bit for bit, zeros of abs and sqrt included; both decline a non-finite
    value alike."""
    from sparsejac.ad import _tape as k
    from sparsejac.ad._tape_numpy import jacobian_packed_numpy

    x0 = rng.uniform(0.5, 1.5, n)
    tape = Tape.build(trace(f, x0))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(f, x0), partition)
    _, _, ints, floats, nnz, m, _, _ = tape.fused_call(c)
    compiled = getattr(k.jacobian_packed, "compiled", k.jacobian_packed)
    points = [x0, rng.uniform(-1.0, 1.0, n), np.where(np.arange(n) % 3 == 0, 0.0, x0),
              np.full(n, -3.0)]  # -3: log1p's and 1/(2 + x)'s domain is left at some point
    for x in points:
        results = []
        for kernel in (jacobian_packed_numpy, compiled):
            data, fx, fy = np.full(nnz, 7.0), np.full(m, 7.0), np.full(m, 7.0)
            with np.errstate(all="ignore"):
                ok = kernel(ints, floats, x, np.zeros(0), x[::-1].copy(), data, fx, fy)
            results.append((bool(ok), data.tobytes(), fx.tobytes(), fy.tobytes()))
        assert results[0] == results[1]
