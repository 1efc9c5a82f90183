"""scipy.interpolate splines at traced points, against hand-derived Jacobians and scipy itself.

The oracle of a spline's derivative is scipy's own ``spline(x, nu=1)`` (and ``nu=2`` for
Hessians), evaluated outside any trace; the Jacobians around it are derived by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.interpolate import (
    Akima1DInterpolator,
    CubicSpline,
    PchipInterpolator,
    make_interp_spline,
)

import sparsejac
from sparsejac.errors import UnsupportedPrimitiveError

T_DATA = np.linspace(0.0, 10.0, 21)
FORCE = CubicSpline(T_DATA, np.sin(T_DATA) ** 2)  # a forcing tabulated in time
U_DATA = np.linspace(0.0, 3.0, 9)
SPLINES = [CubicSpline(U_DATA, 1.0 + 0.5 * np.sin(2 * U_DATA)),
           PchipInterpolator(U_DATA, np.exp(-U_DATA)),
           Akima1DInterpolator(U_DATA, np.cos(U_DATA)),
           make_interp_spline(U_DATA, U_DATA ** 2 / (1 + U_DATA), k=3)]


def decay(t: float, y: np.ndarray) -> np.ndarray:
    """A stiff chain driven by a forcing tabulated in time."""
    dy = -50.0 * y ** 3
    dy[1:] += 10.0 * y[:-1]
    dy[0] += FORCE(t)
    return dy


def test_a_forcing_tabulated_in_time_is_recomputed_at_each_call() -> None:
    """``CubicSpline(t_data, u_data)(t)`` in an ODE right-hand side: one preparation serves
    every t (it was refused: the spline converts t with np.asarray)."""
    y0 = np.full(6, 0.2)
    jac = sparsejac.ode_jacobian(decay, 0.0, y0)
    rng = np.random.default_rng(3)
    for t in (0.0, 3.3, 7.9):
        y = rng.uniform(0.1, 1.0, 6)
        want = np.diag(-150.0 * y ** 2) + 10.0 * np.eye(6, k=-1)
        got = jac(t, y)  # (dense at this size, as scipy's solvers prefer)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)
    ours = solve_ivp(decay, (0.0, 10.0), y0, method="BDF", jac=jac, rtol=1e-8, atol=1e-10)
    fd = solve_ivp(decay, (0.0, 10.0), y0, method="BDF", rtol=1e-8, atol=1e-10)
    assert ours.success
    assert fd.success
    np.testing.assert_allclose(ours.y[:, -1], fd.y[:, -1], rtol=1e-5)


@pytest.mark.parametrize("spline", SPLINES, ids=lambda s: type(s).__name__)
def test_a_law_tabulated_in_the_state_is_differentiated(spline: object) -> None:
    """``k(u)`` of measured data in a flux: its derivative is the spline's (scipy's nu=1)."""
    def flux(u: np.ndarray) -> np.ndarray:
        k = spline(u)  # type: ignore[operator]
        return k[1:] * (u[1:] - u[:-1])

    u = np.array([0.2, 0.55, 1.1, 1.7, 2.35, 2.9])
    k, dk = spline(u), spline(u, 1)  # type: ignore[operator]
    want = np.zeros((5, 6))
    for i in range(5):
        want[i, i] = -k[i + 1]
        want[i, i + 1] = k[i + 1] + dk[i + 1] * (u[i + 1] - u[i])
    np.testing.assert_allclose(sparsejac.jacobian(flux, u).toarray(), want, rtol=1e-13,
                               atol=1e-15)
    prepared = sparsejac.SparseJacobian(flux, u[::-1].copy())
    np.testing.assert_allclose(prepared(u).toarray(), want, rtol=1e-13, atol=1e-15)


def test_hessian_of_a_spline_term() -> None:
    """d²/du² of sum(k(u) u²) = k'' u² + 4 k' u + 2 k, elementwise (scipy's nu = 1, 2)."""
    k = SPLINES[0]
    u = np.array([0.3, 1.2, 2.6])
    h = sparsejac.hessian(lambda v: np.sum(k(v) * v ** 2), u).toarray()
    want = k(u, 2) * u ** 2 + 4 * k(u, 1) * u + 2 * k(u)
    np.testing.assert_allclose(h, np.diag(want), rtol=1e-12, atol=1e-14)


def test_splines_of_vector_values_are_stacked_channels() -> None:
    """A spline of (m, 2) data at traced points gives (n, 2) values, channel by channel."""
    spline = CubicSpline(U_DATA, np.stack([np.sin(U_DATA), U_DATA ** 3], axis=1))
    u = np.array([0.4, 1.3, 2.2])
    J = sparsejac.jacobian(lambda v: spline(v).ravel(), u).toarray()
    d = spline(u, 1)
    want = np.zeros((6, 3))
    want[0::2, :] = np.diag(d[:, 0])
    want[1::2, :] = np.diag(d[:, 1])
    np.testing.assert_allclose(J, want, rtol=1e-13, atol=1e-15)


def test_derivative_orders_and_refusals() -> None:
    k = SPLINES[0]
    u = np.array([0.5, 2.0])
    np.testing.assert_allclose(sparsejac.jacobian(lambda v: k(v, 1), u).toarray(),
                               np.diag(k(u, 2)), rtol=1e-13)
    with pytest.raises(UnsupportedPrimitiveError, match=r"`nu=-1`"):
        sparsejac.jacobian(lambda v: k(v, -1), u)
    vec = make_interp_spline(U_DATA, np.stack([U_DATA, U_DATA], axis=0), axis=1)
    with pytest.raises(UnsupportedPrimitiveError, match="along axis 1"):
        sparsejac.jacobian(lambda v: vec(v), u)
    assert float(k(0.5)) == float(CubicSpline(U_DATA, 1.0 + 0.5 * np.sin(2 * U_DATA))(0.5))


# -- interp1d ---------------------------------------------------------------------------------

XK = np.linspace(0.0, 2.0, 9)
YK = np.sin(3 * XK)


def _slope(x: np.ndarray) -> np.ndarray:
    """By hand: the slope of the data segment holding each x (interior points)."""
    i = np.clip(np.searchsorted(XK, x, side="right") - 1, 0, XK.size - 2)
    return (YK[i + 1] - YK[i]) / (XK[i + 1] - XK[i])


def test_interp1d_linear_is_exact_and_recomputed_in_time() -> None:
    """interp1d(xk, yk)(u): the segment slopes (by hand) in every mode and prepared at other
    points; interp1d(tk, fk)(t) in a right-hand side, recomputed at each t (it was refused)."""
    from scipy.interpolate import interp1d

    lin = interp1d(XK, YK)

    def f(u: np.ndarray) -> np.ndarray:
        return lin(u) * u

    x = np.array([0.13, 0.77, 1.51, 1.99])
    want = np.diag(_slope(x) * x + lin(x))
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(sparsejac.jacobian(f, x, mode=mode).toarray(), want,
                                   rtol=1e-13)
    jac = sparsejac.SparseJacobian(f, x)
    x2 = np.array([0.4, 1.1, 0.05, 1.7])
    np.testing.assert_allclose(jac(x2).toarray(), np.diag(_slope(x2) * x2 + lin(x2)),
                               rtol=1e-13)
    ode = sparsejac.ode_jacobian(lambda t, y: -lin(t) * y ** 2, 0.1, np.ones(3), format="csr")
    for t in (0.3, 1.9):
        np.testing.assert_allclose(ode(t, np.full(3, 2.0)).toarray(), -4 * lin(t) * np.eye(3),
                                   rtol=1e-14)


@pytest.mark.parametrize("case", ["cubic", "quadratic_channels", "linear_channels",
                                  "extrapolate", "fill"])
def test_interp1d_kinds_against_central_differences(case: str) -> None:
    from scipy.interpolate import interp1d

    y2 = np.stack([YK, YK ** 2, np.cos(XK)], axis=1)
    f = {
        "cubic": lambda u: interp1d(XK, YK, kind="cubic")(u),
        "quadratic_channels": lambda u: interp1d(XK, y2, kind="quadratic", axis=0)(u).ravel(),
        "linear_channels": lambda u: interp1d(XK, y2.T, axis=1)(u).ravel(),
        "extrapolate": lambda u: interp1d(XK, YK, fill_value="extrapolate")(3 * u - 1),
        "fill": lambda u: interp1d(XK, YK, bounds_error=False, fill_value=(-1.0, 5.0))(
            3 * u - 1) + u,
    }[case]
    x = np.array([0.13, 0.77, 0.21, 0.97])
    want = np.array([(f(x + 1e-7 * e) - f(x - 1e-7 * e)) / 2e-7 for e in np.eye(4)]).T
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", ["previous", "next", "nearest", "nearest-up"])
def test_interp1d_piecewise_constant_kinds_hold_the_data_values(kind: str) -> None:
    """A zero-order hold, interp1d(tk, uk, kind="previous")(t) in a right-hand side: scipy's
    own values (bit for bit, at data points and midpoints too, where scipy's tie rules pick)
    recomputed at each t, derivative 0; fill values outside. Oracle: scipy's values, and
    d(hold(u) * u) = hold(u) by hand."""
    from scipy.interpolate import interp1d

    from sparsejac.tracing import trace

    hold = interp1d(XK, YK, kind=kind, bounds_error=False, fill_value=(-1.0, 3.0))
    x = np.concatenate([XK, (XK[1:] + XK[:-1]) / 2, [-0.5, 2.5, 0.31]])
    np.testing.assert_array_equal(trace(lambda u: hold(u), x).out.value, hold(x))
    np.testing.assert_array_equal(sparsejac.jacobian(lambda u: hold(u) * u, x).toarray(),
                                  np.diag(hold(x)))
    ode = sparsejac.ode_jacobian(lambda t, y: -hold(t) * y, 0.0, np.ones(3), format="csr")
    for t in (0.3, 1.1, 1.75):
        np.testing.assert_array_equal(ode(t, np.ones(3)).toarray(), -hold(t) * np.eye(3))


def test_interp1d_refusals() -> None:
    """A piecewise-constant kind extrapolated is refused by name; a point outside the data
    gives scipy's own ValueError at the trace point."""
    from scipy.interpolate import interp1d

    x = np.array([0.5, 1.0])
    with pytest.raises(UnsupportedPrimitiveError, match="kind='nearest'"):
        sparsejac.jacobian(lambda u: interp1d(XK, YK, kind="nearest",
                                              fill_value="extrapolate")(u), x)
    with pytest.raises(ValueError, match="above the interpolation range"):
        sparsejac.jacobian(lambda u: interp1d(XK, YK)(u + 2.0), x)


@pytest.mark.parametrize("fill", ["extrapolate", "nan"])
def test_interp1d_linear_at_its_last_data_point_has_the_last_segment_slope(fill: str) -> None:
    """Found from outside: at x == xp[-1], np.interp's right-hand slope is that of its flat
    extension (0), where scipy's interp1d continues the last segment (or, without
    extrapolation, ends with it): the derivative there is the last segment's slope, by hand,
    one-off and prepared at other points; a repeated last point keeps np.interp's value."""
    from scipy.interpolate import interp1d

    xp = np.array([0.0, 1.0, 2.0, 3.0, 5.0])
    fp = np.array([1.0, 3.0, 2.0, 0.0, 4.0])
    kw = {"fill_value": "extrapolate"} if fill == "extrapolate" else {"bounds_error": False}
    lin = interp1d(xp, fp, kind="linear", **kw)

    def f(x):
        return lin(x) * 1.0

    x = np.array([5.0, 0.0, 4.0, 3.0, 2.5])
    want = np.diag([2.0, 2.0, 2.0, 2.0, -2.0])  # segment slopes (right-hand at a knot)
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want)
    jac = sparsejac.SparseJacobian(f, np.array([4.0, 0.5, 3.5, 1.0, 2.2]))
    np.testing.assert_allclose(jac(x).toarray(), want)
    np.testing.assert_allclose(jac(x).toarray(), want)
    np.testing.assert_array_equal(f(x), lin(x))
    repeated = interp1d(np.r_[xp, 5.0], np.r_[fp, 4.0], kind="linear", **kw)
    got = sparsejac.jacobian(lambda u: repeated(u) * 1.0, np.array([5.0, 2.5]))
    assert np.isfinite(got.toarray()).all()
    np.testing.assert_array_equal(repeated(np.array([5.0])), [4.0])


def test_a_lookup_in_a_plain_table_by_a_computed_index_array() -> None:
    """Found from outside: i = searchsorted(xp, x) - 1, then xp[i], fp[i] of plain tables
    (linear interpolation by hand): the one-off Jacobian is the segment slopes (an index
    array has zero derivative, read at this x), where it raised a conversion error; a
    prepared Jacobian refuses it (the index follows x) unless given a pattern, then traces
    at every call and is exact across intervals."""
    xp = np.array([-2.0, -0.5, 1.0, 2.5, 4.0])
    fp = np.array([0.0, 1.0, 3.0, 2.0, 5.0])

    def f(x):
        i = np.clip(np.searchsorted(xp, x) - 1, 0, len(xp) - 2)
        w = (x - xp[i]) / (xp[i + 1] - xp[i])
        return fp[i] * (1 - w) + fp[i + 1] * w

    def slopes(x):
        k = np.clip(np.searchsorted(xp, x) - 1, 0, len(xp) - 2)
        return np.diag((fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k]))

    x = np.array([-1.3, 0.4, 1.7, 2.6, 3.3])
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), slopes(x))
    with pytest.raises(sparsejac.errors.ConcretizationError, match="index"):
        sparsejac.SparseJacobian(f, x)
    jac = sparsejac.SparseJacobian(f, x, sparsity=np.eye(5))
    other = np.array([-0.7, 1.4, 1.7, 3.6, 0.3])  # other intervals
    np.testing.assert_allclose(jac(other).toarray(), slopes(other))


def test_an_interpolator_class_refused_is_named() -> None:
    """Found from outside: a scipy interpolator whose __call__ converts a traced point was
    named `scipy.interpolate.__call__`; the class is named now."""
    from scipy.interpolate import RegularGridInterpolator

    grid = RegularGridInterpolator((np.arange(4.0), np.arange(3.0)), np.ones((4, 3)))
    with pytest.raises(sparsejac.errors.TracedConversionError,
                       match=r"scipy\.interpolate\.RegularGridInterpolator received"):
        sparsejac.jacobian(lambda x: grid(x.reshape(1, 2)), np.array([1.5, 0.5]))
