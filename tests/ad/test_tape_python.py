"""Straight-line Python generated from a tape (:mod:`sparsejac.ad._tape_python`) against the
compiled kernel it stands in for before numba is loaded: the same values and Jacobian bit
for bit, the same refusals, and the kernel's own answer wherever the generated code cannot
give it (a division by zero, an infinite Jacobian entry)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.special as sc

import sparsejac
from sparsejac.ad import Tape
from sparsejac.ad import _tape as k
from sparsejac.ad._tape_python import MAX_TERMS, straight_line, terms
from sparsejac.ad.fused import Fused, packed0_numpy
from sparsejac.tracing import trace

from ..test_kernels import _child_output
from .test_fused import kinetics


def _many_ops(x: np.ndarray, t: float) -> np.ndarray:
    """Every instruction the generator writes, a parameter among the operands."""
    y = np.zeros(x.size + 2)
    y[1:-1] = x  # a shared buffer
    y[0] = x[-1] * t
    s = np.sum(x * x[::-1]) + np.cumsum(y)[2:] * 1e-3 + np.sum(y) / 3
    u = (np.exp(-x) * np.sqrt(np.abs(x)) - np.log1p(x * x) * np.tanh(x) + np.arctan(x)
         + np.sin(x) * np.cos(x) + np.sinh(x) / np.cosh(x) + np.expm1(x) - np.tan(x) / 7
         + np.log(1.5 + x ** 2) + np.abs(x) ** 2.5 + 1.0 / (2.0 + x) + np.square(x)
         + np.reciprocal(3.0 + x) + x / (1.5 + np.roll(x, 1)) + x ** (1.0 + 0.1 * x[::-1]))
    lim = np.maximum(x, x[::-1]) - np.minimum(np.clip(x, -0.5, 1.2), 0.9)
    up = np.where(np.logical_or(x > t, ~(y[1:-1] < -0.5)), x ** 2, np.sin(x) * x[::-1])
    m = x[:4].reshape(2, 2)
    prods = np.sum(m @ m.T) + np.sum(np.outer(x[:2], x[-2:])) + x[:3] @ x[-3:]
    lim = lim + (np.log2(2.0 + x * x) + np.log10(1.5 + x) + np.exp2(x) + sc.expit(3 * x)
                 + sc.erf(x) - sc.erfc(x / 2) + np.hypot(x, x[::-1]) + np.arcsinh(x)
                 + np.arctanh(x / 4) + np.arcsin(x / 4) - np.arccos(x / 5)
                 + np.arccosh(2.0 + x * x) + np.arctan2(x, 1.0 + x[::-1] ** 2)
                 + np.remainder(3.0 * x, 0.7)
                 + np.sign(np.maximum(x - 0.9, -1e300)) * x)  # (a gradient's sign of abs)
    return u - 2 * y[1:-1] + y[:-2] + y[2:] + s + lim + up + prods * t


class _Loaded:
    """A lazy kernel once numba is loaded (what :class:`Fused` falls back to)."""

    def __init__(self, kernel: Any) -> None:
        self._compiled = getattr(kernel, "compiled", kernel)


def _kernel_call(kernel: Any, ints: np.ndarray, floats: np.ndarray, x: np.ndarray,
                 pv: np.ndarray, y: np.ndarray, m: int, nnz: int) -> tuple[Any, ...]:
    data, fx, fy = np.full(nnz, 7.0), np.full(m, 7.0), np.full(m, 7.0)
    with np.errstate(all="ignore"):
        ok = kernel(ints, floats, x, pv, y, data, fx, fy)
    return bool(ok), data.tobytes(), fx.tobytes(), fy.tobytes()


@pytest.mark.parametrize("partition", ["column", "row", "bidirectional"])
@pytest.mark.parametrize(("f", "n", "params"), [(_many_ops, 9, (0.8,)), (kinetics, 12, ()),
                                                (kinetics, 30, ())])
def test_generated_code_is_the_kernel_bit_for_bit(
        f: Any, n: int, params: tuple[float, ...], partition: str,
        rng: np.random.Generator) -> None:
    """At points inside and outside the functions' domains, with zeros where abs, sqrt and
    products have zero or infinite partials: the generated code returns the kernel's
    values, Jacobian and verdict, bit for bit (signs of zeros included), or hands the call
    to the kernel (``Fused.run``), whose answer it then is."""
    x0 = rng.uniform(0.5, 1.5, n)
    tape = Tape.build(trace(f, x0, params=params))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(lambda x: f(x, *params), x0), partition)
    _, _, ints, floats, nnz, m, _, _ = tape.fused_call(c)
    compiled = getattr(k.jacobian_packed, "compiled", k.jacobian_packed)
    fused = Fused(_Loaded(k.jacobian_packed), None, 0, ints, floats, n, False)  # type: ignore[arg-type]
    fused.straight = straight_line(ints, floats, n)
    assert fused.straight
    pv = np.array(params, dtype=np.float64)
    points = [x0, rng.uniform(-1.0, 1.0, n), np.where(np.arange(n) % 3 == 0, 0.0, x0),
              np.full(n, -3.0), np.full(n, 0.0)]
    answered = 0
    for x in points:
        y = x[::-1].copy()
        want = _kernel_call(compiled, ints, floats, x, pv, y, m, nnz)
        assert _kernel_call(fused.run, ints, floats, x, pv, y, m, nnz) == want
        data, fx = np.full(nnz, 7.0), np.full(m, 7.0)
        try:
            ok = fused.straight[0](x, pv, data, fx)
        except (ArithmeticError, ValueError):
            continue
        if ok is not None:  # the generated code's own answer
            answered += 1
            assert (ok, data.tobytes(), fx.tobytes()) == (want[0], want[1], want[2]) if ok \
                else ok == want[0]
    assert answered >= 2


def test_generated_code_without_a_second_point_or_parameters(rng: np.random.Generator) -> None:
    """``jacobian_packed0``'s arguments (no parameters, no second point) and the values
    function alone (verify's second point)."""
    x0 = rng.uniform(0.5, 1.5, 10)
    tape = Tape.build(trace(kinetics, x0))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(kinetics, x0), "row")
    _, _, ints, floats, nnz, m, _, _ = tape.fused_call(c)
    fused = Fused(_Loaded(k.jacobian_packed0), packed0_numpy, 1, ints, floats, 10, True)  # type: ignore[arg-type]
    fused.straight = straight_line(ints, floats, 10)
    data, fx = np.empty(nnz), np.empty(m)
    assert fused.run(ints, floats, x0, data, fx) is True
    want, want_fx = np.zeros(nnz), np.empty(m)
    ok = packed0_numpy(ints, floats, x0, want, want_fx)
    assert ok
    assert data.tobytes() == want.tobytes()
    assert fx.tobytes() == want_fx.tobytes()
    np.testing.assert_allclose(fx, kinetics(x0), rtol=1e-14)
    y = x0[::-1].copy()
    fy, want_fy = np.empty(m), np.empty(m)
    fused.straight[1](y, np.zeros(0), fy)
    packed0_numpy(ints, floats, y, np.empty(nnz), want_fy)
    assert fy.tobytes() == want_fy.tobytes()


def test_no_code_for_a_solve_or_a_large_tape(rng: np.random.Generator) -> None:
    """A small linear solve (``SOLVE``) is left to the kernel and its twin, and so is a tape
    beyond :data:`MAX_TERMS` (its compilation would cost more than the twin's calls)."""
    def solves(x: np.ndarray) -> np.ndarray:
        a = np.diag(2.0 + x[:3] ** 2) + 0.1 * np.outer(x[:3], x[-3:])
        return np.linalg.solve(a, x[3:6]) * x[:3]

    x0 = rng.uniform(0.5, 1.5, 6)
    tape = Tape.build(trace(solves, x0))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(solves, x0), "column")
    ints, floats = tape.fused_call(c)[2:4]
    assert straight_line(ints, floats, 6) is None
    big = rng.uniform(0.5, 1.5, 400)
    tape = Tape.build(trace(kinetics, big))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(kinetics, big), "column")
    ints, floats = tape.fused_call(c)[2:4]
    assert terms(ints) > MAX_TERMS
    assert straight_line(ints, floats, 400) is None


def test_a_fresh_process_generates_code_after_a_few_calls() -> None:
    """Before numba is loaded, HIRES's first Jacobians run the kernel interpreted; once they
    cost about what generating costs, the generated code answers: the same Jacobians as the
    hand-derived one, numba is never imported, and ``stats()`` says which way calls run."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "def hires(t, y):\n"
        "    f = np.empty_like(y)\n"
        "    f[0] = -1.71 * y[0] + 0.43 * y[1] + 8.32 * y[2] + 0.0007\n"
        "    f[1] = 1.71 * y[0] - 8.75 * y[1]\n"
        "    f[2] = -10.03 * y[2] + 0.43 * y[3] + 0.035 * y[4]\n"
        "    f[3] = 8.32 * y[1] + 1.71 * y[2] - 1.12 * y[3]\n"
        "    f[4] = -1.745 * y[4] + 0.43 * y[5] + 0.43 * y[6]\n"
        "    f[5] = -280.0 * y[5] * y[7] + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y[5] "
        "+ 0.69 * y[6]\n"
        "    f[6] = 280.0 * y[5] * y[7] - 1.81 * y[6]\n"
        "    f[7] = -f[6]\n"
        "    return f\n"
        "y = np.array([1.0, 0.5, 0.2, 0.1, 0.3, 0.2, 0.1, 0.0057])\n"
        "jac = sparsejac.SparseJacobian(lambda y, t: hires(t, y), y, params=(0.0,))\n"
        "fused = jac._state.fast[1][0]\n"
        "seen, kinds = [], set()\n"
        "for i in range(40):\n"
        "    x = y * (1.0 + 0.01 * i)\n"
        "    J = jac.values(x, params=(0.1 * i,))\n"
        "    want = np.zeros((8, 8))\n"
        "    want[0, :3] = -1.71, 0.43, 8.32\n"
        "    want[1, :2] = 1.71, -8.75\n"
        "    want[2, 2:5] = -10.03, 0.43, 0.035\n"
        "    want[3, 1:4] = 8.32, 1.71, -1.12\n"
        "    want[4, 4:7] = -1.745, 0.43, 0.43\n"
        "    want[5, 3:8] = 0.69, 1.71, -0.43 - 280 * x[7], 0.69, -280 * x[5]\n"
        "    want[6, 5:8] = 280 * x[7], -1.81, 280 * x[5]\n"
        "    want[7] = -want[6]\n"
        "    got = jac.sparsity.toarray().astype(float)\n"
        "    got[jac.sparsity.toarray()] = J\n"
        "    assert np.allclose(got, want, rtol=1e-15, atol=0), i\n"
        "    seen.append(bool(fused.straight))\n"
        "    kinds.add(jac.stats()['engine']['kernel'])\n"
        "print(type(fused).__name__, seen.index(True), all(seen[seen.index(True):]),\n"
        "      'numba' in sys.modules, sorted(kinds) == ['generated Python',\n"
        "                                                'interpreted or numpy twin'])\n")
    out = _child_output(code)
    assert out[0] == "Fused"
    assert 1 <= int(out[1]) <= 20
    assert out[2:] == ["True", "False", "True"]


def test_an_overflowing_exp_is_infinite_as_compiled_not_an_exception() -> None:
    """Found from outside: a trial point where ``exp`` overflows (a least-squares step) made
    the interpreted kernel and the generated code raise (Python's ``math.exp``), and the
    process then imported numba for that one call (24.7 s with a cold kernel cache). The
    kernel's exp is now inf above the C library's threshold in the interpreter too: the
    call declines the non-finite value as the compiled kernel does, and numba stays out."""
    code = (
        "import sys, numpy as np, sparsejac\n"
        "from sparsejac.ad import _tape\n"
        "import sparsejac.ad._tape_python as TP\n"
        "TP.UNITS_PER_TERM = 0  # the generated code from the first call\n"
        "def resid(p, t):\n"
        "    return p[0] * np.exp(-p[1] * t) + p[2] * np.expm1(p[3] * t)\n"
        "t = np.linspace(0, 4, 12)\n"
        "jac = sparsejac.least_squares_jacobian(resid, [2.0, 0.7, 0.5, 1.3], args=(t,))\n"
        "good = np.asarray(jac(np.array([2.0, 0.7, 0.5, 1.3]), t))\n"
        "with np.errstate(all='ignore'):\n"
        "    bad = np.asarray(jac(np.array([1e3, -200.0, 1.0, 1.0]), t))\n"
        "edge = [_tape._unary.python(_tape.EXP, a) for a in\n"
        "        (_tape.EXP_MAX, np.nextafter(_tape.EXP_MAX, 1e9), 1e6, float('nan'))]\n"
        "print(np.isfinite(good).all(), np.isinf(bad).any(), 'numba' in sys.modules,\n"
        "      np.isfinite(edge[0]), edge[1:3] == [float('inf')] * 2, edge[3] != edge[3])\n")
    out = _child_output(code)
    assert out == ["True", "True", "False", "True", "True", "True"]


def test_a_tie_in_generated_code_declines_the_call(rng: np.random.Generator) -> None:
    """An element's tie-checked ``np.sign`` at exactly 0 makes the generated code hand the
    call to the kernel, whose verdict (False: a value is NaN) it returns; the numpy twin
    agrees; elsewhere the generated code is the kernel bit for bit."""
    from sparsejac.ad._tape_numpy import jacobian_packed_numpy

    from .test_tape import _sign_loop

    x0 = rng.uniform(-1.0, 1.0, 10)
    tape = Tape.build(trace(_sign_loop, x0))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(_sign_loop, x0), "column")
    _, _, ints, floats, nnz, m, _, _ = tape.fused_call(c)
    compiled = getattr(k.jacobian_packed, "compiled", k.jacobian_packed)
    fused = Fused(_Loaded(k.jacobian_packed), None, 0, ints, floats, 10, False)  # type: ignore[arg-type]
    fused.straight = straight_line(ints, floats, 10)
    assert fused.straight
    pv, none = np.zeros(0), np.zeros(0)
    tie = x0.copy()
    tie[3] = tie[2]
    for x, verdict in ((x0, True), (tie, False)):
        want = _kernel_call(compiled, ints, floats, x, pv, none, m, nnz)
        assert want[0] is verdict
        assert _kernel_call(fused.run, ints, floats, x, pv, none, m, nnz)[0] is verdict
        twin = _kernel_call(jacobian_packed_numpy, ints, floats, x, pv, none, m, nnz)
        assert twin[0] is verdict
        if verdict:
            assert _kernel_call(fused.run, ints, floats, x, pv, none, m, nnz) == want
