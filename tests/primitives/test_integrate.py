"""scipy.integrate's quadratures of samples, traced through scipy's own numpy code.

They are linear in the samples ``y``: the oracle is scipy's own function applied to each
unit vector (column j of the Jacobian is F(e_j)), independent of sparsejac. A traced grid
``x`` is checked against central differences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.integrate as si

import sparsejac

CASES = {
    "simpson dx odd": (lambda y: si.simpson(y, dx=0.3), (9,)),
    "simpson dx even": (lambda y: si.simpson(y, dx=0.3), (8,)),
    "simpson two": (lambda y: si.simpson(y, dx=0.3), (2,)),
    "simpson x even": (lambda y: si.simpson(y, x=np.linspace(0, 1, 8) ** 2), (8,)),
    "simpson 2-D axis 0": (lambda y: si.simpson(y.reshape(6, 3), dx=0.5, axis=0), (18,)),
    "trapezoid x": (lambda y: si.trapezoid(y, x=np.geomspace(1, 3, 7)), (7,)),
    "cumulative_trapezoid": (lambda y: si.cumulative_trapezoid(y, dx=0.1), (7,)),
    "cumulative_trapezoid initial": (
        lambda y: si.cumulative_trapezoid(y, x=np.linspace(0, 2, 7) ** 2, initial=0), (7,)),
    "cumulative_trapezoid 2-D": (
        lambda y: si.cumulative_trapezoid(y.reshape(3, 5), dx=0.2, axis=1), (15,)),
    "cumulative_simpson": (lambda y: si.cumulative_simpson(y, dx=0.1), (8,)),
    "cumulative_simpson initial": (
        lambda y: si.cumulative_simpson(y, x=np.linspace(0, 1, 7) ** 1.5, initial=0), (7,)),
}


def _linear_oracle(f: Any, n: int) -> np.ndarray:
    return np.array([np.ravel(f(e)) for e in np.eye(n)]).T


@pytest.mark.parametrize("name", list(CASES))
def test_quadratures_are_scipy_s_weights(name: str) -> None:
    f, shape = CASES[name]
    n = int(np.prod(shape))

    def g(y: Any) -> Any:  # a nonlinear use: the quadrature of y**2, scaled by y[0]
        return np.atleast_1d(f(y ** 2)) * y[0]

    rng = np.random.default_rng(len(name))
    y = rng.uniform(0.5, 1.5, n)
    want = _linear_oracle(lambda e: np.atleast_1d(f(e)), n)
    for mode in ("forward", "reverse"):
        got = sparsejac.jacobian(lambda u: np.atleast_1d(f(u)), y, mode=mode).toarray()
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    # chain rule through it: d(F(y^2) y0) = F(2 y e_j) y0 + F(y^2) e_0
    chain = want * (2 * y)[None, :] * y[0]
    chain[:, 0] += np.ravel(f(y ** 2))
    np.testing.assert_allclose(sparsejac.SparseJacobian(g, y)(y).toarray(), chain,
                               rtol=1e-12, atol=1e-14)


def test_traced_grid_against_central_differences() -> None:
    """The samples at a traced grid: both x and y move (trapezoid and cumulative_trapezoid
    read x through np.diff, which the tracer follows)."""
    def f(z: Any) -> Any:
        x = np.cumsum(np.exp(z[:6]))
        y = np.sin(z[6:])
        return np.concatenate([si.cumulative_trapezoid(y, x=x),
                               np.atleast_1d(si.trapezoid(y * y, x=x))])

    z = np.random.default_rng(2).uniform(-0.5, 0.5, 12)
    want = np.array([(f(z + 1e-6 * e) - f(z - 1e-6 * e)) / 2e-6 for e in np.eye(12)]).T
    np.testing.assert_allclose(sparsejac.jacobian(f, z).toarray(), want, rtol=1e-7, atol=1e-9)


def test_ufunc_where_with_out_and_the_out_return_value() -> None:
    """np.true_divide(a, b, out=buf, where=b != 0) (scipy's simpson writes it): the selected
    elements computed, the others kept from buf; the call returns buf itself (a one-element
    tuple before). where= without out= is refused. Oracle: by hand."""
    def f(y: Any) -> Any:
        buf = np.zeros_like(y)
        den = y[::-1] - 2.0  # zero at the middle element when y = 2
        r = np.true_divide(y, den, out=buf, where=den != 0)
        assert r is buf
        return r + 0.0

    y = np.array([1.0, 2.0, 3.0])
    den = y[::-1] - 2.0
    want = np.zeros((3, 3))
    for i in (0, 2):
        want[i, i] = 1 / den[i]
        want[i, 2 - i] = -y[i] / den[i] ** 2
    np.testing.assert_allclose(sparsejac.jacobian(f, y).toarray(), want, rtol=1e-15)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="without `out=`"):
        sparsejac.jacobian(lambda u: np.sqrt(u, where=u > 0), y)
