"""Array creation and array queries.

``zeros_like`` and friends, ``np.zeros(shape, like=x)``, ``np.array``/``np.asarray`` with
``like=``, ``np.shape``, ``np.ndim``, ``np.isclose`` ...

Arrays created from a traced array are *constant* Tracers: they depend on nothing, but unlike a
plain numpy array they can receive traced values (``out = np.zeros_like(x); out[1:] = x[:-1]``).
``np.zeros(shape)`` without a traced argument reaches no handler here; while a trace runs it
is made traceable by :mod:`sparsejac.tracing.buffers` when the traced function calls it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsejac.primitives.core import (
    find_trace,
    register_function,
    register_library,
    wrap_const,
)
from sparsejac.tracing.callers import user_line
from sparsejac.tracing.tracer import Tracer, concretize

__all__ = ["as_traced_array"]


def _make_like(fill: float) -> Any:
    def handler(a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
                shape: Any = None, **kw: Any) -> Any:
        trace = find_trace([a])
        proto = a._var.value if isinstance(a, Tracer) else np.asarray(a)
        dt = proto.dtype if dtype is None else np.dtype(dtype)
        # numpy's layout too (order="K": a transpose's buffer is Fortran-ordered), which
        # ravel(order="K") of the buffer reads
        made: Any = np.full_like  # (numpy's overloads want a literal order)
        return wrap_const(trace, made(proto, fill, dtype=dt, order=order, subok=False,
                                      shape=shape))

    return handler


register_function(np.zeros_like, family="creation", via="constant")(_make_like(0.0))
register_function(np.empty_like, family="creation", via="constant",
                  note="filled with zeros")(_make_like(0.0))
register_function(np.ones_like, family="creation", via="constant")(_make_like(1.0))


@register_function(np.full_like, family="creation", via="constant | gather",
                   note="a traced fill value is broadcast")
def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K",
                     subok: bool = True, shape: Any = None, **kw: Any) -> Any:
    """``np.full_like`` in a trace (also reached from the buffer wrappers, for a plain ``a``)."""
    trace = find_trace([a, fill_value])
    proto = a if isinstance(a, Tracer) else np.asarray(a)
    shp = proto.shape if shape is None else shape
    dt = proto.dtype if dtype is None else np.dtype(dtype)
    if _varies(fill_value):
        return np.broadcast_to(_stacked(fill_value), shp).astype(dt)
    fv = fill_value._var.value if isinstance(fill_value, Tracer) else fill_value
    return wrap_const(trace, np.full(shp, fv, dtype=dt))


def _with_like(func: Any) -> Any:
    def handler(*args: Any, like: Any = None, **kwargs: Any) -> Any:
        trace = find_trace([like] if like is not None else list(args))
        args = tuple(concretize(a, f"an argument of numpy.{func.__name__}") for a in args)
        kwargs = {k: concretize(v, f"`{k}` of numpy.{func.__name__}") for k, v in kwargs.items()}
        return wrap_const(trace, func(*args, **kwargs))

    return handler


for _f in (np.zeros, np.ones, np.empty, np.arange, np.identity, np.eye):
    register_function(_f, family="creation", via="constant",
                      note="also without `like=`: a buffer made inside f is traceable"
                      if _f is not np.arange else "without `like=` a plain array (an index "
                      "array, a grid): to fill one, np.arange(n, like=x) or np.zeros"
                      )(_with_like(_f))


@register_function(np.full, family="creation", via="constant | gather",
                   note="a traced fill value is broadcast")
def _full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", *,
                like: Any = None, **kwargs: Any) -> Any:
    """``np.full`` in a trace (also reached from the buffer wrappers, without ``like=``).

    A fill value that varies (with x or the parameters; a list of traced scalars too) is
    broadcast to ``shape``, cast to ``dtype``; a constant one gives a constant array.
    """
    if not _varies(fill_value):
        return _with_like(np.full)(shape, fill_value, dtype=dtype, order=order, like=like,
                                   **kwargs)
    shp = concretize(shape, "the shape of numpy.full")
    out = np.broadcast_to(_stacked(fill_value), shp)
    return np.copy(out) if dtype is None else out.astype(dtype)


def _varies(v: Any) -> bool:
    """A traced fill value (or a list of them) that is not a constant."""
    if isinstance(v, (list, tuple)):
        return any(_varies(b) for b in v)
    return isinstance(v, Tracer) and not v._var.is_const


def _stacked(v: Any) -> Any:
    """A list or tuple of (traced) scalars as one array; anything else as it is."""
    if isinstance(v, (list, tuple)) and any(isinstance(b, Tracer) for b in v):
        return np.stack([b if isinstance(b, Tracer) else np.asarray(b) for b in v])
    return v


@register_function(np.linspace, family="creation", via="composite: multiply, add",
                   note="traced `start`/`stop` are differentiated; `num` constant")
def _linspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True,
              retstep: bool = False, dtype: Any = None, axis: int = 0, *,
              device: Any = None, like: Any = None) -> Any:
    if not (_varies(start) or _varies(stop)):  # (a parameter such as ODE time t varies too)
        return _with_like(np.linspace)(start, stop, num, endpoint=endpoint, retstep=retstep,
                                       dtype=dtype, axis=axis, like=like)
    # numpy: y = start + k * step, step = (stop - start) / div, and y[-1] = stop exactly
    num = int(concretize(num, "`num` of numpy.linspace"))
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    delta = stop - start
    shape = np.broadcast_shapes(np.shape(start), np.shape(stop))
    frac = (np.arange(num, dtype=np.float64) / div if div > 0 else
            np.zeros(num)).reshape((num,) + (1,) * len(shape))
    y = start + frac * delta
    if endpoint and num > 1:
        last = (np.arange(num) == num - 1).reshape((num,) + (1,) * len(shape))
        y = np.where(last, stop, y)
    y = np.broadcast_to(y, (num, *shape))
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None:
        y = y.astype(dtype)
    if retstep:
        return y, (delta / div if div > 0 else delta * np.nan)
    return y


def as_traced_array(obj: Any, dtype: Any = None) -> Any:
    """``np.array(obj)`` for an object that may hold Tracers (nested lists are stacked)."""
    res: Any
    if isinstance(obj, Tracer):
        res = obj
    elif isinstance(obj, (list, tuple)):
        if not any(_holds_tracer(o) for o in obj):
            res = np.array(obj)
        else:
            parts = [as_traced_array(o) for o in obj]
            shapes = {np.shape(p) for p in parts}
            if len(shapes) > 1:  # numpy's own error, with the shapes it found
                raise ValueError(
                    "setting an array element with a sequence. The requested array has an "
                    f"inhomogeneous shape after 1 dimensions: its elements have shapes "
                    f"{sorted(shapes)}{user_line()} (a (1,) array among scalars: index it "
                    "with [0], or np.concatenate the parts)")
            res = np.stack(parts)
    else:
        res = obj
    if dtype is not None and isinstance(res, Tracer) and np.dtype(dtype) != res.dtype:
        res = res.astype(dtype)
    return res


def _holds_tracer(obj: Any) -> bool:
    if isinstance(obj, Tracer):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_holds_tracer(o) for o in obj)
    return False


def _array(obj: Any, dtype: Any = None, *args: Any, copy: Any = True, order: Any = "K",
           like: Any = None, **kwargs: Any) -> Any:
    if not _holds_tracer(obj):
        trace = find_trace([like])
        return wrap_const(trace, np.array(obj, dtype=dtype, order=order))
    res = as_traced_array(obj, dtype)
    mode = getattr(np, "_CopyMode", None)  # (the array API's asarray passes numpy's enum)
    if mode is not None and isinstance(copy, mode):
        copy = {mode.ALWAYS: True, mode.NEVER: False}.get(copy)
    res = np.copy(res) if copy and res is obj else res
    ndmin = int(kwargs.get("ndmin", 0))
    if res.ndim < ndmin:
        res = res.reshape((1,) * (ndmin - res.ndim) + res.shape)
    return _in_layout(res, order)


def _in_layout(res: Any, order: Any) -> Any:
    """``res``, copied into ``order``'s memory layout ("C" or "F") unless it has it.

    What numpy does, and what ``ravel(order="K")`` after it reads (the traced value has the
    layout numpy's would have).
    """
    if order not in ("C", "F") or not isinstance(res, Tracer):
        return res
    value = res._var.value
    if isinstance(value, np.ndarray) and (
            value.flags.c_contiguous if order == "C" else value.flags.f_contiguous):
        return res
    return np.copy(res, order=order)


def _as_layout(order: Any) -> Any:
    def handler(obj: Any, dtype: Any = None, *args: Any, like: Any = None,
                **kwargs: Any) -> Any:
        want = order if order is not None else kwargs.get("order", args[0] if args else None)
        return _in_layout(_array(obj, dtype, copy=False, like=like), want)

    return handler


register_function(np.array, family="creation", via="stack | constant",
                  note="with `like=x`, or of traced values in f's own code")(_array)
_AS_ARRAY: tuple[tuple[Any, Any], ...] = ((np.asarray, None), (np.asanyarray, None),
                                          (np.ascontiguousarray, "C"), (np.asfortranarray, "F"))
for _as, _order in _AS_ARRAY:
    register_function(_as, family="creation", via="identity",
                      note="with `like=x`, or of a traced array in f's own code")(
                          _as_layout(_order))


# -- queries that need no tracing -----------------------------------------------------------


@register_function(np.shape, family="creation", via="query")
def _np_shape(a: Any) -> tuple[int, ...]:
    return tuple(a.shape)


@register_function(np.ndim, family="creation", via="query")
def _np_ndim(a: Any) -> int:
    return len(a.shape)


@register_function(np.size, family="creation", via="query")
def _np_size(a: Any, axis: Any = None) -> int:
    return int(a.size) if axis is None else int(a.shape[axis])


@register_function(np.result_type, family="creation", via="query")
def _result_type(*arrays_and_dtypes: Any) -> np.dtype[Any]:
    return np.result_type(*[a.dtype if isinstance(a, Tracer) else a for a in arrays_and_dtypes])


@register_function(np.common_type, family="creation", via="query")
def _common_type(*arrays: Any) -> Any:
    return np.common_type(*[np.empty(0, dtype=a.dtype) if isinstance(a, Tracer) else a
                            for a in arrays])


@register_function(np.iscomplexobj, family="creation", via="query")
def _iscomplexobj(x: Any) -> bool:
    return bool(np.dtype(x.dtype).kind == "c")


@register_function(np.isrealobj, family="creation", via="query")
def _isrealobj(x: Any) -> bool:
    return bool(np.dtype(x.dtype).kind != "c")


@register_function(np.isclose, family="creation", via="composite: comparisons (zero derivative)")
def _isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    tol = atol + rtol * np.abs(b)
    if not isinstance(tol, Tracer) and not np.any(tol):  # no tolerance: a == b (a tie check)
        close = np.equal(a, b)
    else:
        close = np.less_equal(np.abs(np.subtract(a, b)), tol)
    if equal_nan:
        close = np.logical_or(close, np.logical_and(np.isnan(a), np.isnan(b)))
    return close


@register_function(np.allclose, family="creation", via="composite: isclose, all",
                   note="a Python bool: local mode only")
def _allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
              equal_nan: bool = False) -> bool:
    return bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@register_function(np.nan_to_num, family="creation", via="composite: where")
def _nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> Any:
    finfo = np.finfo(np.float64)
    posinf = finfo.max if posinf is None else posinf
    neginf = finfo.min if neginf is None else neginf
    y = np.where(np.isnan(x), nan, x)
    y = np.where(np.isinf(y) & (y > 0), posinf, y)
    y = np.where(np.isinf(y) & (y < 0), neginf, y)
    if not copy and isinstance(x, Tracer) and x.dtype.kind == "f":  # in place, as numpy
        x[...] = y
        return x
    return y


@register_library(np.require, name="numpy.require", family="creation", via="identity",
                  note="the array itself, as numpy (a copy of a view for requirement 'O')")
def _require(a: Any, dtype: Any = None, requirements: Any = None, *, like: Any = None) -> Any:
    a = as_traced_array(a, dtype)
    wants = {str(r).upper()[:1] for r in ([requirements] if isinstance(requirements, str)
                                          else requirements or ())}
    owns = not isinstance(a, Tracer) or a._base is None  # (a view does not own its data)
    return a if "O" not in wants or owns else np.copy(a)


@register_library(np.asarray_chkfinite, name="numpy.asarray_chkfinite", family="creation",
                  via="identity", note="the array itself, as numpy (after its check)")
def _asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> Any:
    a = as_traced_array(a, dtype)
    if isinstance(a, Tracer) and a.dtype.kind in "fc" and not np.isfinite(
            np.asarray(a._var.value)).all():  # numpy's own check, on the values at x
        raise ValueError("array must not contain infs or NaNs")
    return a

