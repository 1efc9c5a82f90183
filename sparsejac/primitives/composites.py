"""Common scientific numpy functions written with the families' primitives.

Each entry here is either one more elementwise primitive (``np.sinc``, ``np.interp`` with a
traced ``x``) or a *composite*: a traced re-implementation of numpy's own algorithm out of
supported calls (``np.select`` and ``np.piecewise`` from ``where``, ``np.polyval`` by Horner's
rule, ``np.gradient`` and ``np.trapezoid`` from slices, ``np.convolve`` from an outer product
and a constant 0/1 summation matrix). Composites need no rules of their own: their pattern,
JVP and VJP are those of the calls they make, so they are exact whenever those are.

Static arguments (spacings, breakpoints ``xp``, index-like arguments) must be constants: a
global pattern cannot depend on them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives import elementwise as _ew
from sparsejac.primitives.core import (
    bind,
    find_trace,
    register_function,
    register_library,
    register_ufunc,
    wrap_const,
)
from sparsejac.primitives.linalg import _norm
from sparsejac.primitives.linear import apply_sparse_map
from sparsejac.tracing.tracer import Tracer, concretize

__all__ = ["INTERP", "SINC"]


def _traced(a: Any) -> bool:
    """Tell whether ``a`` is a Tracer that is not a constant."""
    return isinstance(a, Tracer) and not a._var.is_const


def _static(a: Any, func: str, arg: str) -> Any:
    """Return the plain value of argument ``arg`` of ``func`` (it must not depend on x)."""
    if _traced(a) and a._var.active:
        raise UnsupportedPrimitiveError(func, f"a traced {arg}")
    return np.asarray(concretize(a, f"{arg} of {func}"))


# -- sinc: one more elementwise primitive ----------------------------------------------------


def _sinc_d(x: Any, out: Any) -> Any:
    # d/dx sin(pi x) / (pi x) = (cos(pi x) - sinc(x)) / x, with the limit 0 at x = 0; near 0
    # that difference cancels, so |x| < 0.1 takes the series sum_k (-1)^k pi^2k 2k x^(2k-1) /
    # (2k+1)!, k = 1..6 (the next term is below 1e-17 of the sum there)
    with np.errstate(divide="ignore", invalid="ignore"):  # (traceable: Hessians trace it)
        exact = (np.cos(np.pi * x) - out) / np.where(np.equal(x, 0), 1.0, x)
    x2 = x * x
    series: Any = _SINC_D_SERIES[-1]
    for c in _SINC_D_SERIES[-2::-1]:  # Horner in x^2
        series = series * x2 + c
    return np.where(np.abs(x) < 0.1, series * x, exact)


#: coefficients of x^(2k-1), k = 1..6, in the series of sinc's derivative
_SINC_D_SERIES = [(-1) ** k * np.pi ** (2 * k) * 2 * k / math.factorial(2 * k + 1)
                  for k in range(1, 7)]


SINC = _ew.Elementwise(np.sinc, (_sinc_d,), name="sinc")
_ew.ELEMENTWISE["sinc"] = SINC


@register_function(np.sinc, family="elementwise", via="sinc")
def _sinc(x: Any) -> Any:
    return bind(SINC, (x,))


# -- interp: elementwise in x (constant breakpoints), linear in fp -------------------------------


def _interp_slope(x: Any, xp: Any, fp: Any, out: Any) -> Any:
    """Slope of the piece that contains ``x`` (0 outside ``[xp[0], xp[-1])``)."""
    xp = np.asarray(xp, dtype=np.float64)
    fp = np.asarray(fp, dtype=np.float64)
    if xp.size < 2:
        return np.zeros(np.shape(x))
    slopes = np.diff(fp) / np.diff(xp)
    j = np.searchsorted(xp, x, side="right") - 1
    inside = (j >= 0) & (j < xp.size - 1)
    return np.where(inside, slopes[np.clip(j, 0, slopes.size - 1)], 0.0)


INTERP = _ew.Elementwise(np.interp, (_interp_slope, None, None), name="interp")
_ew.ELEMENTWISE["interp"] = INTERP


def _interp_weights(x: np.ndarray, xp: np.ndarray, left: Any, right: Any
                    ) -> tuple[sp.csr_array, np.ndarray]:
    """``interp(x, xp, fp) = M @ fp + c`` for a constant ``x``: the matrix M and offset c."""
    xf = np.ravel(x).astype(np.float64)
    m, n = xf.size, xp.size
    rows = np.arange(m)
    j = np.clip(np.searchsorted(xp, xf, side="right") - 1, 0, max(n - 2, 0))
    below, above = xf < xp[0], xf > xp[-1]
    inside = ~(below | above)
    if n > 1:
        w = np.where(inside, (xf - xp[j]) / (xp[j + 1] - xp[j]), 0.0)
        hi = np.minimum(j + 1, n - 1)
    else:
        w, hi = np.zeros(m), j
    lo_w = np.where(inside, 1.0 - w, 0.0)
    hi_w = w.copy()
    offset = np.zeros(m)
    # outside the breakpoints: fp[0] / fp[-1] by default, or the constants left / right
    if left is None:
        lo_w = np.where(below, 1.0, lo_w)
        j = np.where(below, 0, j)
    else:
        offset = np.where(below, float(left), offset)
    if right is None:
        hi_w = np.where(above, 1.0, hi_w)
        hi = np.where(above, n - 1, hi)
    else:
        offset = np.where(above, float(right), offset)
    mat = sp.csr_array((np.r_[lo_w, hi_w], (np.r_[rows, rows], np.r_[j, hi])), shape=(m, n))
    mat.sum_duplicates()
    mat.eliminate_zeros()
    return mat, offset.reshape(np.shape(x))


def _interp_both(x: Any, xp: np.ndarray, fp: Any, left: Any, right: Any) -> Any:
    """``interp`` with traced ``x`` and ``fp``.

    Global mode: ``sum_k hat_k(x) fp[k]`` with ``hat_k = interp(x, xp, e_k)`` (any output may
    read any ``fp[k]``). Local mode: the piece of every ``x`` at the trace point, so that the
    local pattern is exact (``x`` and the two ends of its piece, or the end value outside).
    """
    n = xp.size
    if np.ndim(fp) != 1 or np.shape(fp)[0] != n or n < 2:
        raise UnsupportedPrimitiveError("numpy.interp", "`fp` not 1-D of the size of `xp` (>= 2)")
    lz = None if left is None else 0.0
    rz = None if right is None else 0.0
    if find_trace((x, fp)).local:
        # comparisons have no derivative: reading them makes the program value-dependent
        ge = np.asarray(concretize(np.expand_dims(x, -1) >= xp, "numpy.interp pieces"),
                        dtype=bool)
        count = ge.sum(axis=-1)  # searchsorted(xp, x, side="right")
        j = np.clip(count - 1, 0, n - 2)
        below = count == 0
        above = np.asarray(concretize(x > xp[-1], "numpy.interp pieces"), dtype=bool)
        at_end = ge[..., -1] & ~above
        inside = ~(below | above | at_end)
        w = (x - xp[j]) / (xp[j + 1] - xp[j])
        lo_v, hi_v = fp[j], fp[j + 1]
        res = np.where(inside, lo_v + (hi_v - lo_v) * w, 0.0)
        if below.any():
            res = np.where(below, fp[0] if left is None else float(left), res)
        if above.any():
            res = np.where(above, fp[n - 1] if right is None else float(right), res)
        if at_end.any():
            res = np.where(at_end, fp[n - 1], res)
        return res
    hats = np.stack([bind(INTERP, (x, xp, np.eye(n)[k]), {"left": lz, "right": rz})
                     for k in range(n)])
    res = np.tensordot(fp, hats, axes=1)
    if left is None and right is None:
        return res
    return res + bind(INTERP, (x, xp, np.zeros(n)), {"left": left, "right": right})


@register_function(np.interp, family="elementwise", via="interp | linear_map",
                   note="constant `xp`; `x` and/or `fp` traced; no `period=`")
def _interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
            period: Any = None) -> Any:
    if period is not None:
        raise UnsupportedPrimitiveError("numpy.interp", "the `period=` argument")
    xp_c = _static(xp, "numpy.interp", "`xp`").astype(np.float64)
    left = None if left is None else _static(left, "numpy.interp", "`left`")
    right = None if right is None else _static(right, "numpy.interp", "`right`")
    if _traced(x) and _traced(fp):
        return _interp_both(x, xp_c, fp, left, right)
    if _traced(fp):
        x_c = np.asarray(concretize(x, "numpy.interp points `x`"), dtype=np.float64)
        mat, offset = _interp_weights(x_c, xp_c, left, right)
        res = apply_sparse_map((fp,), (mat,), x_c.shape)
        return res + offset if np.any(offset) else res
    fp_c = _static(fp, "numpy.interp", "`fp`").astype(np.float64)
    return bind(INTERP, (x, xp_c, fp_c), {"left": left, "right": right})


# -- select and piecewise: where, first true condition wins --------------------------------------


@register_function(np.select, family="elementwise", via="composite: where")
def _select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    res = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist), strict=True):
        res = np.where(cond, choice, res)
    shape = np.broadcast_shapes(*(np.shape(c) for c in (*condlist, *choicelist, default)))
    return res if np.shape(res) == shape else np.broadcast_to(res, shape)


@register_function(np.piecewise, family="elementwise", via="composite: where | indexing",
                   note="elementwise functions; traced conditions in global mode evaluate every "
                        "function on all of x")
def _piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    ndim = np.ndim(x)
    first = None if np.isscalar(condlist) else condlist[0]
    if np.isscalar(condlist) or (  # numpy's test; an element of a traced mask is a 0-d Tracer
        not (isinstance(first, (list, np.ndarray)) or (isinstance(first, Tracer)
                                                       and first.ndim > 0)) and ndim != 0
    ):
        condlist = [condlist]
    conds = list(condlist)
    if len(funclist) == len(conds) + 1:
        conds.append(np.logical_not(functools.reduce(np.logical_or, conds)))
    elif len(funclist) != len(conds):
        raise ValueError(
            f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} "
            "functions are expected"
        )
    trace = find_trace([x, *conds])
    out = np.zeros_like(x) if isinstance(x, Tracer) else wrap_const(trace, np.zeros_like(x))
    value_free = any(_traced(c) for c in conds) and not trace.local
    for cond, func in zip(conds, funclist, strict=True):
        if value_free:
            # global mode: which elements a traced condition picks is unknown, so every
            # function is evaluated on all of x and chosen by where (a union of patterns)
            with np.errstate(all="ignore"):
                val = func(x, *args, **kw) if callable(func) else func
            out = np.where(cond, val, out)
        else:
            mask = np.broadcast_to(
                np.asarray(concretize(cond, "a condition of numpy.piecewise"), dtype=bool),
                np.shape(x))
            if callable(func):
                if mask.any():
                    out[mask] = func(x[mask], *args, **kw)
            else:
                out[mask] = func
    return out


# -- polyval: Horner's rule ---------------------------------------------------------------------


@register_function(np.ediff1d, family="movement", via="composite: indexing, concatenate")
def _ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    flat = np.ravel(ary)
    parts = [flat[1:] - flat[:-1]]
    if to_begin is not None:
        parts.insert(0, np.ravel(to_begin))
    if to_end is not None:
        parts.append(np.ravel(to_end))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


@register_function(np.polyval, family="elementwise", via="composite: multiply, add",
                   note="coefficients and points may both be traced")
def _polyval(p: Any, x: Any) -> Any:
    if isinstance(p, np.poly1d):  # (len() of a poly1d is its order, p[i] the x**i term)
        p = p.coeffs
    y = np.zeros_like(x) if isinstance(x, Tracer) else np.zeros(np.shape(x))
    for i in range(len(p)):
        y = y * x + p[i]
    return y


# -- numpy.polynomial's *val: numpy's own code, with the reshape it skips for a Tracer --------


def _series_val(func: Callable[..., Any]) -> Callable[..., Any]:
    """``polyval``, ``chebval`` ... of ``numpy.polynomial`` on a traced ``x``.

    numpy's code reshapes a multidimensional ``c`` for ``tensor=True`` only where ``x`` is
    an ndarray (a Tracer is not): done here, then numpy's own arithmetic runs on ``x``
    (``tensor=False``). Traced coefficients reach numpy's ``np.array(c)``: refused there.
    """
    from sparsejac.tracing import library

    def handler(x: Any, c: Any, tensor: bool = True) -> Any:
        if isinstance(x, Tracer) and not (isinstance(c, Tracer) and not c._var.is_const):
            c = np.array(c._var.value if isinstance(c, Tracer) else c, ndmin=1, copy=None)
            if tensor and c.ndim > 1:
                c = c.reshape(c.shape + (1,) * x.ndim)
            tensor = False
        return library.own_code(func)(x, c, tensor=tensor)

    return handler


for _module, _name in (("polynomial", "polyval"), ("chebyshev", "chebval"),
                       ("legendre", "legval"), ("hermite", "hermval"),
                       ("hermite_e", "hermeval"), ("laguerre", "lagval")):
    _func = getattr(getattr(np.polynomial, _module), _name)
    register_library(_func, name=f"numpy.polynomial.{_module}.{_name}", family="elementwise",
                     via="its own numpy code, traced through",
                     note="constant coefficients (any shape, `tensor=`)")(_series_val(_func))


# -- convolve and correlate: outer product, then a constant sum along anti-diagonals -----------


def _convolution(a: Any, v: Any, mode: str, name: str) -> Any:
    na, nv = int(np.size(a)), int(np.size(v))
    if np.ndim(a) != 1 or np.ndim(v) != 1:
        raise ValueError(f"{name}: object too deep for desired array (1-D operands only)")
    if na == 0 or nv == 0:
        raise ValueError(f"{name}: operands cannot be empty")
    full = na + nv - 1
    short = min(na, nv)
    if mode == "full":
        start, length = 0, full
    elif mode == "same":
        start, length = (short - 1) // 2, max(na, nv)
    elif mode == "valid":
        start, length = short - 1, max(na, nv) - short + 1
    else:
        raise ValueError(f"{name}: mode must be one of 'full', 'same', 'valid'; got {mode!r}")
    # out_full[i + j] += a[i] * v[j]: a 0/1 matrix over the (na * nv) outer product
    k = (np.arange(na)[:, None] + np.arange(nv)[None, :]).ravel() - start
    cols = np.arange(na * nv)
    keep = (k >= 0) & (k < length)
    mat = sp.csr_array((np.ones(int(keep.sum())), (k[keep], cols[keep])), shape=(length, na * nv))
    return apply_sparse_map((np.outer(a, v),), (mat,), (length,))


@register_function(np.convolve, family="linalg", via="composite: outer, linear_map",
                   note="1-D; either or both operands traced")
def _convolve(a: Any, v: Any, mode: str = "full") -> Any:
    a, v = (np.reshape(o, (1,)) if np.ndim(o) == 0 else o for o in (a, v))  # numpy's ndmin=1
    return _convolution(a, v, mode, "numpy.convolve")


@register_function(np.correlate, family="linalg", via="composite: outer, linear_map",
                   note="1-D real; mode='same' needs len(a) >= len(v)")
def _correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    if mode == "same" and np.size(v) > np.size(a):
        raise UnsupportedPrimitiveError("numpy.correlate", "mode='same' with `v` longer than `a`")
    return _convolution(a, v[::-1], mode, "numpy.correlate")


# -- gradient and trapezoid: numpy's own slicing algorithms on traced arrays --------------------


def _spacings(f: Any, varargs: Sequence[Any], axes: Sequence[int]) -> list[Any]:
    """numpy.gradient's spacing per axis: a scalar, or the 1-D differences of coordinates."""
    n = len(varargs)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and np.ndim(varargs[0]) == 0:  # a scalar spacing may be traced (h(t), h(x)):
        h = varargs[0]                         # the formulas only divide by it
        return [h if _traced(h) else float(_static(h, "numpy.gradient", "spacing"))] * len(axes)
    if n != len(axes):
        raise TypeError("invalid number of arguments")
    dx: list[Any] = []
    for i, d in enumerate(varargs):
        if _traced(d) and np.ndim(d) == 0:
            dx.append(d)
            continue
        arr = _static(d, "numpy.gradient", "spacing").astype(np.float64)
        if arr.ndim == 0:
            dx.append(float(arr))
            continue
        if arr.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if arr.size != np.shape(f)[axes[i]]:
            raise ValueError("when 1d, distances must match the length of the corresponding "
                             "dimension")
        diffx = np.diff(arr)
        dx.append(float(diffx[0]) if (diffx == diffx[0]).all() else diffx)
    return dx


def _gradient_axis(f: Any, axis: int, h: Any, edge_order: int) -> Any:
    nd = np.ndim(f)

    def at(i: Any) -> tuple[Any, ...]:
        s: list[Any] = [slice(None)] * nd
        s[axis] = i
        return tuple(s)

    def along(c: np.ndarray) -> np.ndarray:  # a coefficient per position along `axis`
        shape = [1] * nd
        shape[axis] = -1
        return c.reshape(shape)

    out = np.empty_like(f)
    if np.ndim(h) == 0:
        out[at(slice(1, -1))] = (f[at(slice(2, None))] - f[at(slice(None, -2))]) / (2.0 * h)
    else:
        d1, d2 = h[:-1], h[1:]
        a = along(-d2 / (d1 * (d1 + d2)))
        b = along((d2 - d1) / (d1 * d2))
        c = along(d1 / (d2 * (d1 + d2)))
        out[at(slice(1, -1))] = (a * f[at(slice(None, -2))] + b * f[at(slice(1, -1))]
                                 + c * f[at(slice(2, None))])
    if edge_order == 1:
        h0 = h if np.ndim(h) == 0 else h[0]
        hn = h if np.ndim(h) == 0 else h[-1]
        out[at(0)] = (f[at(1)] - f[at(0)]) / h0
        out[at(-1)] = (f[at(-1)] - f[at(-2)]) / hn
        return out
    if np.ndim(h) == 0:
        a0, b0, c0 = -1.5 / h, 2.0 / h, -0.5 / h
        an, bn, cn = 0.5 / h, -2.0 / h, 1.5 / h
    else:
        d1, d2 = h[0], h[1]
        a0 = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
        b0 = (d1 + d2) / (d1 * d2)
        c0 = -d1 / (d2 * (d1 + d2))
        d1, d2 = h[-2], h[-1]
        an = d2 / (d1 * (d1 + d2))
        bn = -(d2 + d1) / (d1 * d2)
        cn = (2.0 * d2 + d1) / (d2 * (d1 + d2))
    out[at(0)] = a0 * f[at(0)] + b0 * f[at(1)] + c0 * f[at(2)]
    out[at(-1)] = an * f[at(-3)] + bn * f[at(-2)] + cn * f[at(-1)]
    return out


@register_function(np.gradient, family="reductions", via="composite: indexing, arithmetic",
                   note="scalar spacings (traced too), constant coordinate arrays")
def _gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    nd = np.ndim(f)
    if axis is None:
        axes: tuple[int, ...] = tuple(range(nd))
    else:
        axes = tuple(int(a) % nd for a in np.atleast_1d(axis))
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if np.dtype(f.dtype).kind not in "fc":
        f = f.astype(np.float64)
    outs = []
    for ax, h in zip(axes, _spacings(f, varargs, axes), strict=True):
        if np.shape(f)[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        outs.append(_gradient_axis(f, ax, h, edge_order))
    return outs[0] if len(outs) == 1 else tuple(outs)


@register_function(np.trapezoid, family="reductions", via="composite: indexing, sum")
def _trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    nd = np.ndim(y)
    ax = int(axis) % nd
    if x is None:
        d: Any = dx
    else:
        d = np.diff(x)
        if np.ndim(x) == 1:
            shape = [1] * nd
            shape[ax] = -1
            d = np.reshape(d, shape)
        else:
            d = np.diff(x, axis=ax)
    hi: list[Any] = [slice(None)] * nd
    lo: list[Any] = [slice(None)] * nd
    hi[ax] = slice(1, None)
    lo[ax] = slice(None, -1)
    return np.sum(d * (y[tuple(hi)] + y[tuple(lo)]) / 2.0, axis=ax)


# -- multi_dot: a chain of matmuls ----------------------------------------------------------------


@register_function(np.linalg.multi_dot, family="linalg", via="composite: matmul",
                   note="evaluated left to right")
def _multi_dot(arrays: Sequence[Any], *, out: Any = None) -> Any:
    if out is not None:
        raise UnsupportedPrimitiveError("numpy.linalg.multi_dot", "the `out=` argument")
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    res = arrays[0]
    for a in arrays[1:]:
        res = np.matmul(res, a)
    return res


# -- the array-API norm ---------------------------------------------------------------------------


@register_function(np.linalg.vector_norm, family="linalg", via="composite: linalg.norm")
def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    nd = np.ndim(x)
    if axis is None:
        res = _norm(np.ravel(x), ord=ord)
        return np.reshape(res, (1,) * nd) if keepdims else res
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(int(a) % nd for a in axes)
    if len(axes) == 1:
        return _norm(x, ord=ord, axis=axes[0], keepdims=keepdims)
    rest = [i for i in range(nd) if i not in axes]
    moved = np.transpose(x, (*rest, *axes))
    flat = np.reshape(moved, (*[np.shape(x)[i] for i in rest], -1))
    res = _norm(flat, ord=ord, axis=-1)
    if keepdims:
        res = np.reshape(res, tuple(1 if i in axes else s for i, s in enumerate(np.shape(x))))
    return res



# -- numpy 2's array-API spellings of supported functions -----------------------------------------


def _array_api(func: Any, via: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return register_function(func, family="linalg", via=f"composite: {via}",
                             note="numpy 2's array-API spelling")


@_array_api(np.linalg.matmul, "matmul")
def _la_matmul(x1: Any, x2: Any, /) -> Any:
    return np.matmul(x1, x2)


@_array_api(np.linalg.outer, "outer")
def _la_outer(x1: Any, x2: Any, /) -> Any:
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={np.ndim(x1)} and x2.ndim={np.ndim(x2)}.")
    return np.outer(x1, x2)


@_array_api(np.linalg.vecdot, "multiply, sum")
def _la_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return np.sum(np.multiply(x1, x2), axis=axis)


@_array_api(np.linalg.trace, "trace over the last two axes")
def _la_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return np.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


@_array_api(np.linalg.diagonal, "diagonal of the last two axes")
def _la_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return np.diagonal(x, offset=offset, axis1=-2, axis2=-1)


@_array_api(np.linalg.cross, "cross")
def _la_cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    if np.shape(x1)[axis] != 3 or np.shape(x2)[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they are {np.shape(x1)[axis]} and {np.shape(x2)[axis]} dimensional "
                         "instead.")
    return np.cross(x1, x2, axis=axis)


@_array_api(np.linalg.matrix_transpose, "matrix_transpose")
def _la_matrix_transpose(x: Any, /) -> Any:
    return np.matrix_transpose(x)


@_array_api(np.linalg.tensordot, "tensordot")
def _la_tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    return np.tensordot(x1, x2, axes=axes)


def _vec_ufunc(name: str) -> Any:
    def handler(x1: Any, x2: Any, **kwargs: Any) -> Any:
        if set(kwargs) - {"out"} or kwargs.get("out") is not None:
            raise UnsupportedPrimitiveError(f"numpy.{name}", f"keyword arguments {sorted(kwargs)}")
        if name == "vecdot":  # (n),(n)->() (real: no conjugate)
            return np.sum(np.multiply(x1, x2), axis=-1)
        if name == "matvec":  # (m,n),(n)->(m)
            return np.matmul(x1, np.expand_dims(x2, -1))[..., 0]
        return np.matmul(np.expand_dims(x1, -2), x2)[..., 0, :]  # vecmat: (n),(n,m)->(m)

    return handler


for _name in ("vecdot", "matvec", "vecmat"):
    if hasattr(np, _name):
        register_ufunc(getattr(np, _name), "__call__", _vec_ufunc(_name), family="linalg",
                       via="composite: multiply, sum | matmul",
                       note="numpy 2's vector products")
