"""Composites (``sparsejac.primitives.composites``): np.sinc, interp, select, piecewise,
polyval, convolve, correlate, gradient, trapezoid and linalg.vector_norm give numpy's values
and exact patterns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import jvp
from tests.primitives.util import check_exact, rand

X7 = rand((7,), 81)
X34 = rand((3, 4), 82)


def test_sinc_is_elementwise_and_smooth_at_zero() -> None:
    """np.sinc is diagonal; its derivative at 0 is exactly 0 (not nan)."""
    check_exact(np.sinc, np.array([-1.3, 0.4, 2.2]), np.eye(3, dtype=bool))
    np.testing.assert_array_equal(jvp(np.sinc, np.zeros(2), np.eye(2)), np.zeros((2, 2)))


XP, FP = np.array([0.0, 0.8, 1.1, 2.0]), np.array([1.0, 3.0, 2.0, 5.0])


@pytest.mark.parametrize("kw", [pytest.param({}, id="default"),
                                pytest.param({"left": -1.0, "right": 9.0}, id="left_right")])
def test_interp_traced_x(kw: dict[str, Any]) -> None:
    """np.interp(x, xp, fp) in x: elementwise (diagonal) for points inside the breakpoints."""
    check_exact(lambda x: np.interp(x, XP, FP, **kw), X34, np.eye(12, dtype=bool))


def test_interp_traced_x_outside_breakpoints_is_conservative() -> None:
    """Outside [xp[0], xp[-1]] the value is flat: the global pattern still keeps the entry."""
    x = np.array([-1.0, 0.5, 3.0])
    pat = sparsejac.jacobian_sparsity(lambda t: np.interp(t, XP, FP), x)
    assert pat.nnz == 3
    np.testing.assert_array_equal(jvp(lambda t: np.interp(t, XP, FP), x, np.eye(3)),
                                  np.diag([0.0, 2.5, 0.0]))


@pytest.mark.parametrize("kw", [pytest.param({}, id="default"),
                                pytest.param({"left": 0.5, "right": -2.0}, id="left_right")])
def test_interp_traced_fp(kw: dict[str, Any]) -> None:
    """np.interp(x, xp, fp) in fp: each point reads the two values around it."""
    pts = np.array([-0.5, 0.3, 1.0, 1.9, 2.5])
    check_exact(lambda f: np.interp(pts, XP, f, **kw), FP)


def test_interp_traced_xp_is_refused() -> None:
    """Traced breakpoints are refused by name."""
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="traced `xp`"):
        sparsejac.jacobian_sparsity(lambda x: np.interp(0.5, x, FP), XP + 0.1)


def test_select_with_constant_conditions_is_exact() -> None:
    """np.select with constant conditions: each element reads the first true choice only."""
    c1 = np.array([True, False, False, True])
    c2 = np.array([True, True, False, False])
    pat = check_exact(lambda x: np.select([c1, c2], [x[:4] ** 2, x[4:]], default=0.5),
                      rand((8,), 83))
    np.testing.assert_array_equal(pat.sum(axis=1), [1, 1, 0, 1])


def test_select_with_traced_conditions() -> None:
    """Traced conditions: union of the candidates globally, the chosen one locally."""
    x = np.array([0.2, 1.7, 1.1])

    def f(t: Any) -> Any:
        return np.select([t < 0.5, t > 1.5], [t**2, -t[0]], default=t[2])

    glob = sparsejac.jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(glob, [[1, 0, 1], [1, 1, 1], [1, 0, 1]])
    check_exact(f, x, [[1, 0, 0], [1, 0, 0], [0, 0, 1]], local=True)


def _pw(t: Any) -> Any:
    return np.piecewise(t, [t < 1.0, t > 1.3], [lambda s: s**2, lambda s: np.sqrt(s), -1.0])


def test_piecewise_traced_conditions() -> None:
    """np.piecewise with traced conditions: every element globally, only live pieces locally."""
    x = np.array([0.5, 1.5, 1.1, 0.9])
    assert sparsejac.jacobian_sparsity(_pw, x).nnz == 4
    check_exact(_pw, x, np.diag([True, True, False, True]), local=True)


def test_piecewise_constant_conditions_and_scalar_pieces() -> None:
    """Constant conditions pick exact subsets; scalar pieces are constants."""
    cond = np.array([[True, False, True, False]] * 3)
    check_exact(lambda x: np.piecewise(x, [cond], [np.exp, 2.0]), X34)
    check_exact(lambda x: np.piecewise(x, [cond, ~cond], [np.sin, lambda s: s * s[0]]), X34)


def test_piecewise_of_scalar() -> None:
    """A 0-d input with a constant condition list."""
    check_exact(lambda x: np.piecewise(x, [True], [lambda s: s**3]), np.array(1.2),
                [[True]])


POLYVAL = [
    pytest.param(lambda x: np.polyval([2.0, -1.0, 0.5], x), id="constant_coefficients"),
    pytest.param(lambda x: np.polyval(x[:3], 1.5), id="traced_coefficients"),
    pytest.param(lambda x: np.polyval(x[:2], x[2:]), id="both_traced"),
    pytest.param(lambda x: np.polyval(np.array([1.0, 0.0, 0.0]), x), id="monomial"),
]


@pytest.mark.parametrize("f", POLYVAL)
def test_polyval(f: Callable[[Any], Any]) -> None:
    """Horner's rule with constant or traced coefficients and points."""
    check_exact(f, X7)


CONV = [
    pytest.param(lambda x: np.convolve(x, [1.0, -2.0, 1.0]), id="full_constant_kernel"),
    pytest.param(lambda x: np.convolve(x, [1.0, -2.0, 1.0], "same"), id="same"),
    pytest.param(lambda x: np.convolve(x, [1.0, 0.0, 1.0], "valid"), id="valid_kernel_zero"),
    pytest.param(lambda x: np.convolve([0.5, 2.0], x, "same"), id="kernel_first"),
    pytest.param(lambda x: np.convolve(x[:2], x[2:], "same"), id="both_traced_short_first"),
    pytest.param(lambda x: np.convolve(x[:4], x[4:], "valid"), id="both_traced_valid"),
    pytest.param(lambda x: np.correlate(x, [1.0, 2.0, 0.5], "full"), id="correlate_full"),
    pytest.param(lambda x: np.correlate(x, [1.0, 2.0]), id="correlate_valid"),
    pytest.param(lambda x: np.correlate(x[:5], x[5:], "same"), id="correlate_both"),
    pytest.param(lambda x: np.convolve(x[0], x) + np.convolve(x, 2.5), id="zero_d_operands"),
]


@pytest.mark.parametrize("f", CONV)
def test_convolution(f: Callable[[Any], Any]) -> None:
    """np.convolve/np.correlate in every mode, kernel constant or traced, values as numpy's."""
    check_exact(f, X7)


def test_convolve_constant_kernel_is_banded() -> None:
    """A 3-point stencil kernel gives the tridiagonal pattern ('same' mode)."""
    n = 6
    expected = np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
    check_exact(lambda x: np.convolve(x, [1.0, -2.0, 1.0], "same"), rand((n,), 84), expected)


GRADIENT = [
    pytest.param(lambda x: np.gradient(x[0]), id="vector"),
    pytest.param(lambda x: np.gradient(x[0], 0.1, edge_order=2), id="vector_edge2"),
    pytest.param(lambda x: np.gradient(x[0], np.array([0.0, 0.5, 2.0, 2.2])),
                 id="coordinates"),
    pytest.param(lambda x: np.gradient(x[0], np.array([0.0, 0.5, 2.0, 2.2]), edge_order=2),
                 id="coordinates_edge2"),
    pytest.param(lambda x: np.gradient(x, axis=-1), id="matrix_last_axis"),
    pytest.param(lambda x: np.stack(np.gradient(x, 2.0, 0.5)), id="matrix_both_axes"),
    pytest.param(lambda x: np.gradient(x, np.array([0.0, 1.0, 3.0]), axis=0), id="axis0"),
]


@pytest.mark.parametrize("f", GRADIENT)
def test_gradient(f: Callable[[Any], Any]) -> None:
    """np.gradient with scalar or coordinate spacings, both edge orders, chosen axes."""
    check_exact(f, X34)


TRAPEZOID = [
    pytest.param(lambda x: np.trapezoid(x), id="default"),
    pytest.param(lambda x: np.trapezoid(x, dx=0.5, axis=0), id="dx_axis0"),
    pytest.param(lambda x: np.trapezoid(x, x=[0.0, 1.0, 3.0, 3.5]), id="constant_x"),
    pytest.param(lambda x: np.trapezoid(x[1:], x=x[0]), id="traced_x"),
]


@pytest.mark.parametrize("f", TRAPEZOID)
def test_trapezoid(f: Callable[[Any], Any]) -> None:
    """np.trapezoid with dx, constant or traced sample points, any axis."""
    check_exact(f, X34)


VECTOR_NORM = [
    pytest.param(lambda x: np.linalg.vector_norm(x), id="all"),
    pytest.param(lambda x: np.linalg.vector_norm(x, axis=0, ord=1), id="axis0_ord1"),
    pytest.param(lambda x: np.linalg.vector_norm(x, axis=(0, 1), keepdims=True), id="axes"),
    pytest.param(lambda x: np.linalg.vector_norm(x, keepdims=True, ord=3), id="keepdims_ord3"),
]


@pytest.mark.parametrize("f", VECTOR_NORM)
def test_vector_norm(f: Callable[[Any], Any]) -> None:
    """The array-API vector norm over all elements or chosen axes."""
    check_exact(f, X34)


def test_multi_dot_is_a_matmul_chain() -> None:
    """np.linalg.multi_dot of a constant, a traced matrix and a traced vector."""
    a = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])
    check_exact(lambda x: np.linalg.multi_dot([a, x, x[0]]), X34[:, :3])


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_with_a_traced_scalar_spacing(edge_order):
    """np.gradient(u, dx) with dx computed from an ODE's t (a domain growing in time) or from
    x itself was refused as a 'branch chosen by the values'; the formulas only divide by a
    scalar spacing, so it is followed exactly (checked against central differences)."""
    n = 12
    grid = np.linspace(0.0, 1.0, n)

    def rhs(t, u):
        dx = (1.0 + t) / (n - 1)
        return 0.1 * np.gradient(np.gradient(u, dx, edge_order=edge_order), dx) - u**2

    jac = sparsejac.ode_jacobian(rhs, 0.0, grid, format="dense")
    u = np.cos(3 * grid) + 0.1
    for t in (0.0, 0.7):
        want = np.array([(rhs(t, u + 1e-6 * e) - rhs(t, u - 1e-6 * e)) / 2e-6
                         for e in np.eye(n)]).T
        np.testing.assert_allclose(jac(t, u), want, rtol=1e-7, atol=1e-7 * np.abs(want).max())

    def g(x):  # a spacing that depends on x: differentiated through the division
        return np.gradient(x[:-1] ** 2, x[-1], edge_order=edge_order)

    x = np.array([1.0, 2.0, 4.0, 7.0, 0.5])
    want = np.array([(g(x + 1e-6 * e) - g(x - 1e-6 * e)) / 2e-6 for e in np.eye(5)]).T
    np.testing.assert_allclose(sparsejac.jacobian(g, x).toarray(), want, atol=1e-6)


_C2 = np.arange(12.0).reshape(4, 3) / 5


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: np.polynomial.chebyshev.chebval(x, _C2).ravel(), id="chebval_2d_c"),
    pytest.param(lambda x: np.polynomial.polynomial.polyval(x, _C2).ravel(), id="polyval_2d_c"),
    pytest.param(lambda x: np.polynomial.legendre.legval(x, _C2[:, 0]), id="legval_1d_c"),
    pytest.param(lambda x: np.polynomial.hermite.hermval(x, [0.5, -1.0, 0.25]), id="hermval"),
    pytest.param(lambda x: np.polynomial.hermite_e.hermeval(x, _C2[:, :1], tensor=False).ravel(),
                 id="hermeval_untensored"),
    pytest.param(lambda x: np.polynomial.laguerre.lagval(x, _C2).ravel(), id="lagval_2d_c"),
    pytest.param(lambda x: np.polynomial.chebyshev.chebval(2 * x[:6] - 1, np.eye(4)[:, 1:])
                 .mean(axis=1), id="chebyquad"),
])
def test_numpy_polynomial_series(f: Callable[[Any], Any]) -> None:
    """numpy.polynomial's *val with constant coefficients of any shape (numpy reshapes a
    multidimensional c only for an ndarray x: found from outside, the Chebyquad residual)."""
    check_exact(f, X7)


def test_numpy_polynomial_traced_coefficients_are_refused() -> None:
    """Traced coefficients reach numpy's np.array(c): a clear TracedConversionError."""
    with pytest.raises(sparsejac.TracedConversionError, match="chebval"):
        sparsejac.jacobian(lambda x: np.polynomial.chebyshev.chebval(0.5, x), X7)
