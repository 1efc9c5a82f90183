"""``scipy.interpolate`` splines evaluated at traced points.

``CubicSpline``, ``PchipInterpolator``, ``Akima1DInterpolator``, ``CubicHermiteSpline``,
``PPoly`` and ``BPoly`` (scipy's ``_PPolyBase.__call__``) and ``BSpline`` (what
``make_interp_spline`` returns) convert their argument with ``np.asarray``, so numpy never
hands it to the tracer. They are intercepted while a trace runs
(:mod:`sparsejac.tracing.library`): a spline at a traced point is an elementwise operation
whose value is the spline's own and whose partial derivative is the spline's derivative
(``spline(x, nu + 1)``), exact to rounding where the spline is differentiable. At a knot of a
spline whose derivative jumps there (``PchipInterpolator``, a linear ``BSpline``), the
derivative is the one of the piece scipy evaluates (the right-hand one). Two uses:

* a forcing tabulated in time, ``CubicSpline(t_data, u_data)(t)`` in an ODE right-hand side
  (``t`` is traced so that one preparation serves every time): the value is recomputed at
  each call, with its derivative in ``t`` never needed;
* a constitutive law tabulated in the state, ``conductivity(u)`` with ``conductivity`` a
  spline of measured data: its derivative enters the Jacobian.

A spline of vector values (``y`` of shape ``(m, k)``) is evaluated channel by channel and
stacked on the last axis, as scipy does; a ``BSpline`` with ``axis`` other than 0 is refused.

``interp1d`` (``_Interpolator1D.__call__``) is intercepted too: its linear kind is
``np.interp`` per channel (what scipy itself evaluates), its spline kinds its ``BSpline``, its
piecewise-constant kinds (``previous``, ``next``, ``nearest``: a zero-order hold of an input in
time) the data value it picks, recomputed at each call with derivative 0, with its fill values
(or extrapolation, for the linear and spline kinds) outside the data; scipy's other
``_Interpolator1D`` subclasses run their own code (which refuses a traced point with a
message).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.interpolate as si

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives.core import bind, register_library
from sparsejac.primitives.creation import as_traced_array
from sparsejac.primitives.elementwise import Elementwise
from sparsejac.tracing.tracer import Tracer

__all__ = ["spline_at"]

#: the method of scipy's piecewise polynomials (CubicSpline and the others) and of BSpline
_PPOLY_CALL = si.PPoly.__mro__[1].__call__  # _PPolyBase.__call__
_BSPLINE_CALL = si.BSpline.__call__


def _spline_prim(spline: Any, nu: int, extrapolate: Any, name: str) -> Elementwise:
    """The elementwise operation ``spline(x, nu)``, its partial ``spline(x, nu + 1)``."""

    def value(x: Any) -> Any:
        return spline(x, nu, extrapolate)

    def partial(x: Any, out: Any) -> Any:
        return spline(x, nu + 1, extrapolate)

    return Elementwise(value, (partial,), name=name)


def _channels(spline: Any) -> list[Any]:
    """The scalar splines of a spline of vector values (its trailing value axes, flattened)."""
    if isinstance(spline, si.BSpline):
        c = spline.c.reshape(spline.c.shape[0], -1)
        return [si.BSpline.construct_fast(spline.t, c[:, j].copy(), spline.k,
                                          spline.extrapolate) for j in range(c.shape[1])]
    c = spline.c.reshape((*spline.c.shape[:2], -1))
    cls = si.BPoly if isinstance(spline, si.BPoly) else si.PPoly
    return [cls.construct_fast(c[:, :, j].copy(), spline.x, spline.extrapolate)
            for j in range(c.shape[2])]


def spline_at(spline: Any, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
    """``spline(x, nu, extrapolate)`` for a traced ``x``: a recorded elementwise operation.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from scipy.interpolate import CubicSpline
    >>> k = CubicSpline([0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 1.5, 3.0])
    >>> x = np.array([0.5, 1.7])
    >>> J = sparsejac.jacobian(lambda u: k(u) * u, x).toarray()
    >>> bool(np.allclose(np.diag(J), k(x, 1) * x + k(x)))
    True
    """
    name = f"scipy.interpolate.{type(spline).__name__}"
    if int(nu) != nu or nu < 0:
        raise UnsupportedPrimitiveError(name, f"`nu={nu!r}` (a derivative order >= 0 only)")
    x = as_traced_array(x)
    if isinstance(spline, si.BSpline):
        trailing = spline.c.shape[1:]
        if trailing and spline.axis != 0:
            raise UnsupportedPrimitiveError(
                name, f"a spline of vector values along axis {spline.axis} (axis=0 only)")
    else:
        trailing = spline.c.shape[2:]
    if not trailing:
        return bind(_spline_prim(spline, int(nu), extrapolate, name), (x,))
    parts = [bind(_spline_prim(s, int(nu), extrapolate, name), (x,))
             for s in _channels(spline)]
    return np.stack(parts, axis=-1).reshape(np.shape(x) + tuple(trailing))


@register_library(_PPOLY_CALL, name="scipy.interpolate.CubicSpline", family="elementwise",
                  via="spline and its derivative",
                  note="every PPoly and BPoly: PchipInterpolator, Akima1DInterpolator, ...")
def _ppoly_call(spline: Any, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
    return spline_at(spline, x, nu, extrapolate)


@register_library(_BSPLINE_CALL, name="scipy.interpolate.BSpline", family="elementwise",
                  via="spline and its derivative", note="make_interp_spline's splines")
def _bspline_call(spline: Any, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
    return spline_at(spline, x, nu, extrapolate)


# -- interp1d: linear (np.interp per channel) and its spline kinds (its BSpline) ------------

_INTERP1D_CALL = si.interp1d.__mro__[1].__call__  # _Interpolator1D.__call__


@register_library(_INTERP1D_CALL, name="scipy.interpolate.interp1d", family="elementwise",
                  via="interp | spline and its derivative",
                  note="every kind (previous, next, nearest: derivative 0); fill values, "
                       "and fill_value='extrapolate' for the linear and spline kinds")
def _interp1d_call(f: Any, x: Any) -> Any:
    """``interp1d(xk, yk, kind=...)(x)`` at a traced ``x`` (constant data).

    ``kind="linear"`` is ``np.interp`` per channel of ``yk`` (scipy's own evaluation for one
    channel), extrapolated along the end segments with ``fill_value="extrapolate"``; the
    spline kinds evaluate the interpolant's ``BSpline``; outside the data, the fill values
    (NaN by default) with zero derivative, or scipy's ``ValueError`` at the trace point with
    ``bounds_error``. The piecewise-constant kinds (``previous``, ``next``, ``nearest``,
    ``nearest-up``) give the data value scipy picks, with derivative 0.
    """
    if not isinstance(f, si.interp1d):  # other _Interpolator1D: scipy's own code (refuses)
        from sparsejac.tracing.library import own_code

        return own_code(_INTERP1D_CALL)(f, x)
    kind = f._kind
    if kind in _STEPS and f._extrapolate:
        raise UnsupportedPrimitiveError(
            "scipy.interpolate.interp1d", f"kind={kind!r} with fill_value='extrapolate' has no "
            "rule; give fill values (or bounds_error) instead",
            problem=f"kind={kind!r} extrapolated at a traced point")
    xt = as_traced_array(x) if not isinstance(x, np.ndarray) else x
    x_shape = np.shape(xt)
    flat = np.ravel(xt)
    xk = f.x
    if not f._extrapolate:
        _check_bounds(f, flat)
    if kind == "spline":
        y = f._spline(flat)
        y = np.reshape(y, (flat.shape[0], -1))
    elif kind in _STEPS:
        y = _steps(kind, flat, xk) @ f._y
    else:
        cols = [_linear(flat, xk, f._y[:, c], f._extrapolate) for c in range(f._y.shape[1])]
        y = cols[0][:, None] if len(cols) == 1 else np.stack(cols, axis=1)
    if not f._extrapolate:
        below = (flat < xk[0])[:, None]
        above = (flat > xk[-1])[:, None]
        fill_below = np.broadcast_to(np.ravel(f._fill_value_below), (f._y.shape[1],))
        fill_above = np.broadcast_to(np.ravel(f._fill_value_above), (f._y.shape[1],))
        y = np.where(below, fill_below[None, :], np.where(above, fill_above[None, :], y))
    return f._finish_y(y, x_shape)


#: the piecewise-constant kinds: which data point a point takes (scipy's tie rules)
_STEPS = ("previous", "next", "nearest", "nearest-up")


def _steps(kind: str, x: Any, xk: np.ndarray) -> Any:
    """``(len(x), len(xk))`` one-hot rows: the data point each point takes, as scipy picks it.

    Built from steps (``np.heaviside``, derivative 0) of the points against the data points or
    their midpoints (``xk / 2`` summed, as scipy computes them), so the values are the data's
    own, recomputed at each call, and the derivative is zero (a zero-order hold in time).
    """
    col = x[:, None]
    if kind == "previous":  # the last data point at or before x
        at_or_after = np.heaviside(col - xk[None, :], 1.0)
        return at_or_after - np.concatenate([at_or_after[:, 1:], 0.0 * col], axis=1)
    if kind == "next":  # the first data point at or after x
        at_or_before = np.heaviside(xk[None, :] - col, 1.0)
        return at_or_before - np.concatenate([0.0 * col, at_or_before[:, :-1]], axis=1)
    half = xk / 2.0
    mid = half[1:] + half[:-1]
    past = np.heaviside(col - mid[None, :], 1.0 if kind == "nearest-up" else 0.0)
    return (np.concatenate([1.0 + 0.0 * col, past], axis=1)
            - np.concatenate([past, 0.0 * col], axis=1))


def _linear(x: Any, xk: np.ndarray, yk: np.ndarray, extrapolate: bool) -> Any:
    """Piecewise-linear interpolation of ``(xk, yk)`` at ``x``, its end segments extended.

    At the last data point the last segment's slope: ``np.interp`` takes the slope to the
    right of a data point, which beyond the last one is flat (its constant extension, not
    scipy's), so a point there had derivative 0 where the extrapolated line (or, without
    extrapolation, the data's own last segment) has that slope (found from outside).
    """
    inside = np.interp(x, xk, yk)
    if xk.size < 2:
        return inside
    with np.errstate(divide="ignore", invalid="ignore"):  # (a repeated last data point)
        slope = (yk[-1] - yk[-2]) / (xk[-1] - xk[-2])
    high = yk[-1] + (x - xk[-1]) * slope
    # (a repeated last data point has no last segment: np.interp's value there, as before)
    last = (x >= xk[-1]) if xk[-1] > xk[-2] else (x > xk[-1])
    if not extrapolate:  # (beyond the data, the caller's fill values replace it)
        return np.where(last, high, inside) if xk[-1] > xk[-2] else inside
    low = yk[0] + (x - xk[0]) * ((yk[1] - yk[0]) / (xk[1] - xk[0]))
    return np.where(x < xk[0], low, np.where(last, high, inside))


def _check_bounds(f: Any, x: Any) -> None:
    """Raise scipy's ``ValueError`` for a point outside the data at the trace point."""
    if not f.bounds_error:
        return
    value = np.asarray(x._var.value if isinstance(x, Tracer) else x)
    for mask, side, bound in ((value < f.x[0], "below", "minimum"),
                              (value > f.x[-1], "above", "maximum")):
        if mask.any():
            limit = f.x[0] if side == "below" else f.x[-1]
            raise ValueError(f"A value ({value[np.argmax(mask)]}) in x_new is {side} the "
                             f"interpolation range's {bound} value ({limit}).")
