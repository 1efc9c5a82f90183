"""Reductions and scans, and the composites built on them.

``sum``, ``prod``, ``max``, ``min``, ``cumsum``, ``cumprod``; composites ``mean``, ``var``,
``std``, ``average``, ``trace``, ``ptp``.

Every reduction over ``axes`` groups the input elements by output element: its local Jacobian
is the group matrix (one entry per input element, built from index arrays), from which the
pattern ``deps_out = R @ deps_in`` and the jvp are derived (:mod:`sparsejac.primitives.derive`).
Fast paths, measured faster than the derived sparse products by ``benchmarks/rules.py``: the
vjp of ``sum`` (a broadcast view of the cotangent) and the jvp and vjp of ``cumsum`` (numpy's
``cumsum`` on blocks with the seed axis leading, linear in the lane length where the local
Jacobian is quadratic).

``max``/``min`` have a value-dependent derivative: the global pattern is the whole group (any
element can be the largest for some x); the local pattern is the group's extrema, and ``k`` tied
extrema share the derivative equally (``1/k`` each, the convention of ``np.maximum`` at a tie).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.errors import TracedConversionError, UnsupportedPrimitiveError
from sparsejac.numeric import einsum0, mul0
from sparsejac.primitives import depsets
from sparsejac.primitives.core import (
    Deps,
    LocalJac,
    Primitive,
    bind,
    contiguous,
    floats,
    register_function,
    register_ufunc,
)
from sparsejac.tracing.program import Node
from sparsejac.tracing.tracer import Tracer

__all__ = ["CUMPROD", "CUMSUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_SUM",
           "normalize_axes"]

_NoValue = np._NoValue


def normalize_axes(axis: Any, ndim: int, name: str) -> tuple[int, ...]:
    """Sorted non-negative axes of a reduction (``None``: all)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.isscalar(axis) or isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: duplicate value in 'axis'")
    return tuple(sorted(out))


def _keep_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _out_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return _keep_shape(shape, axes)
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _lanes(a: np.ndarray, axes: tuple[int, ...], lead: int = 0) -> np.ndarray:
    """View ``a`` (with ``lead`` leading axes kept) as ``(*lead_shape, out_size, L)``."""
    nd = a.ndim - lead
    rest = [i for i in range(nd) if i not in axes]
    perm = list(range(lead)) + [lead + i for i in rest] + [lead + i for i in axes]
    moved = np.transpose(a, perm)
    lead_shape = a.shape[:lead]
    out_size = int(np.prod([a.shape[lead + i] for i in rest], dtype=np.int64))
    length = int(np.prod([a.shape[lead + i] for i in axes], dtype=np.int64))
    return moved.reshape((*lead_shape, out_size, length))


def _unlanes(g: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`_lanes` with one leading axis: ``(q, out_size, L)`` -> ``(q, *shape)``."""
    rest = [i for i in range(len(shape)) if i not in axes]
    moved_shape = (g.shape[0], *[shape[i] for i in rest], *[shape[i] for i in axes])
    perm = [0] + [1 + i for i in rest] + [1 + i for i in axes]
    inv = np.argsort(perm)
    return np.transpose(g.reshape(moved_shape), inv)


def _group_rows(shape: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """Output element of every input element (C order) of a reduction over ``axes``."""
    keep = _keep_shape(shape, axes)
    out_size = int(np.prod(keep, dtype=np.int64))
    return np.ascontiguousarray(
        np.broadcast_to(np.arange(out_size, dtype=np.int64).reshape(keep), shape)).ravel()


class _Reduction(Primitive):
    """Shared rules: the group matrix (a whole group in global mode)."""

    #: whether the local Jacobian's values depend on x (False: all ones, as for a sum)
    dynamic = False

    def _values(self, vals: Sequence[Any], out: Any, *, axes: tuple[int, ...]) -> Any:
        """Entries of the local Jacobian, one per input element; None: constant 1."""
        return None

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Group matrix structure; values from :meth:`_values` (constant 1 for a sum)."""
        if not node.inputs[0].active:
            return [None]
        shape = node.inputs[0].shape
        axes = node.params["axes"]
        rows = _group_rows(shape, axes)
        cols = np.arange(rows.size, dtype=np.int64)
        if not self.dynamic:
            return [LocalJac(rows, cols, const=1.0)]
        return [LocalJac(rows, cols, dyn=functools.partial(_call_values, self, axes))]


def _call_values(prim: _Reduction, axes: tuple[int, ...], vals: Sequence[Any], out: Any) -> Any:
    return prim._values(vals, out, axes=axes)


class ReduceSum(_Reduction):
    """``np.sum`` over ``axes``."""

    name = "reduce_sum"

    def impl(self, *vals: Any, axes: tuple[int, ...], keepdims: bool, **p: Any) -> np.ndarray:
        """``np.sum``."""
        return np.asarray(np.sum(vals[0], axis=axes, keepdims=keepdims, dtype=p.get("dtype")))

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """Broadcast the cotangent back over the reduced axes (a fast path: a view, no work)."""
        shape = node.inputs[0].shape
        keep = _keep_shape(shape, node.params["axes"])
        g = ct.reshape((ct.shape[0], *keep))
        return [np.broadcast_to(g, (ct.shape[0], *shape))]


class ReduceProd(_Reduction):
    """``np.prod`` over ``axes``; partials are exclusive products (exact with zeros)."""

    name = "reduce_prod"
    dynamic = True

    def impl(self, *vals: Any, axes: tuple[int, ...], keepdims: bool, **p: Any) -> np.ndarray:
        """``np.prod``."""
        return np.asarray(np.prod(vals[0], axis=axes, keepdims=keepdims, dtype=p.get("dtype")))

    @staticmethod
    def _partials(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        lanes = _lanes(floats(x), axes)  # (out_size, L)
        left = np.ones_like(lanes)
        right = np.ones_like(lanes)
        if lanes.shape[1] > 1:
            left[:, 1:] = np.cumprod(lanes[:, :-1], axis=1)
            right[:, :-1] = np.cumprod(lanes[:, :0:-1], axis=1)[:, ::-1]
        return floats(left * right)

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        """``sum_lane partial * t``."""
        t = tangents[0]
        if t is None:
            return None
        axes = node.params["axes"]
        part = self._partials(vals[0], axes)
        tl = _lanes(t, axes, lead=1)
        if np.isfinite(part).all():
            res = np.einsum("pol,ol->po", tl, part)
        else:  # an overflowed partial times a zero tangent contributes nothing (mul0)
            res = mul0(tl, part[None]).sum(axis=2)
        return np.asarray(res).reshape((t.shape[0], *node.out.shape))

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """``partial * ct`` broadcast over each lane."""
        axes = node.params["axes"]
        part = self._partials(vals[0], axes)
        g = mul0(ct.reshape(ct.shape[0], -1)[:, :, None], part[None])
        return [_unlanes(g, node.inputs[0].shape, axes)]

    def _values(self, vals: Sequence[Any], out: Any, *, axes: tuple[int, ...]) -> Any:
        """Exclusive products, in input order."""
        x = floats(vals[0])
        part = self._partials(x, axes)
        return contiguous(_unlanes(part[None], x.shape, axes)).ravel()


class ReduceExtremum(_Reduction):
    """``np.max`` / ``np.min``: derivative shared equally by the tied extrema of each group."""

    dynamic = True
    piecewise_constant = True

    def __init__(self, name: str, fn: Any, argfn: Any) -> None:
        self.name = name
        self.fn = fn
        self.argfn = argfn

    def impl(self, *vals: Any, axes: tuple[int, ...], keepdims: bool, **p: Any) -> np.ndarray:
        """``np.max`` or ``np.min``."""
        return np.asarray(self.fn(vals[0], axis=axes, keepdims=keepdims))

    def _chosen(self, x: Any, axes: tuple[int, ...]) -> tuple[np.ndarray, bool]:
        """The ``(out_size, L)`` mask of each group's extrema, and whether a group has two.

        A group whose extremum is NaN keeps its first NaN, as ``np.argmax`` does. (Whole-array
        counts, not per-group ones: reductions along a short last axis are slow in numpy.)
        """
        lanes = _lanes(np.asarray(x), axes)
        ext = self.fn(lanes, axis=1)
        with np.errstate(invalid="ignore"):
            hit = np.asarray(lanes == ext[:, None])
        nan = np.flatnonzero(np.isnan(ext)) if ext.dtype.kind in "fc" else ext[:0]
        if nan.size:
            hit[nan, self.argfn(lanes[nan], axis=1)] = True
        return hit, int(np.count_nonzero(hit)) > hit.shape[0]

    def _weights(self, x: Any, axes: tuple[int, ...]) -> np.ndarray:
        """``(out_size, L)`` partials: 1/k on each of a group's k tied extrema, 0 elsewhere."""
        hit, ties = self._chosen(x, axes)
        if not ties:  # the usual case: one-hot rows
            return hit.astype(np.float64)
        return np.asarray(hit / hit.sum(axis=1, keepdims=True))

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        """The whole group (global) or its extrema (local)."""
        if deps[0] is None:
            return None
        if not local:
            return super().pattern(node, deps, local)
        axes = node.params["axes"]
        x = node.inputs[0].value
        hit, _ = self._chosen(x, axes)
        keep = _unlanes(hit[None], np.shape(x), axes).ravel()
        return super().pattern(node, [depsets.keep_rows(deps[0], keep)], local)

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        """Mean tangent of the group's extrema."""
        t = tangents[0]
        if t is None:
            return None
        axes = node.params["axes"]
        w = self._weights(vals[0], axes)
        res = mul0(_lanes(t, axes, lead=1), w[None]).sum(axis=2)
        return np.asarray(res).reshape((t.shape[0], *node.out.shape))

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """Cotangent shared by the group's extrema, zero elsewhere."""
        axes = node.params["axes"]
        w = self._weights(vals[0], axes)
        g = mul0(ct.reshape(ct.shape[0], -1)[:, :, None], w[None])
        return [_unlanes(g, node.inputs[0].shape, axes)]

    def _values(self, vals: Sequence[Any], out: Any, *, axes: tuple[int, ...]) -> Any:
        """The partials, in input order."""
        x = np.asarray(vals[0])
        return contiguous(_unlanes(self._weights(x, axes)[None], x.shape, axes)).ravel()


REDUCE_SUM = ReduceSum()
REDUCE_PROD = ReduceProd()
REDUCE_MAX = ReduceExtremum("reduce_max", np.max, np.argmax)
REDUCE_MIN = ReduceExtremum("reduce_min", np.min, np.argmin)


def _scan_entries(shape: tuple[int, ...], axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of a scan's lower-triangular local Jacobian, lane by lane (k >= j)."""
    pos = _lanes(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape), (axis,))
    kk, jj = np.tril_indices(pos.shape[1])
    return pos[:, kk].ravel(), pos[:, jj].ravel()


class CumSum(Primitive):
    """``np.cumsum`` along one axis."""

    name = "cumsum"

    def impl(self, *vals: Any, axis: int, **p: Any) -> np.ndarray:
        """``np.cumsum``."""
        return np.cumsum(vals[0], axis=axis, dtype=p.get("dtype"))

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        """Cumulative sum of the tangent block."""
        t = tangents[0]
        return None if t is None else np.cumsum(t, axis=node.params["axis"] + 1)

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """Reverse cumulative sum."""
        a = node.params["axis"] + 1
        return [np.flip(np.cumsum(np.flip(ct, a), axis=a), a)]

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Lower-triangular ones in every lane."""
        if not node.inputs[0].active:
            return [None]
        rows, cols = _scan_entries(node.inputs[0].shape, node.params["axis"])
        return [LocalJac(rows, cols, const=1.0)]


class CumProd(Primitive):
    """``np.cumprod`` along one axis; the lane Jacobian is built exactly (zeros allowed)."""

    name = "cumprod"

    def impl(self, *vals: Any, axis: int, **p: Any) -> np.ndarray:
        """``np.cumprod``."""
        return np.cumprod(vals[0], axis=axis, dtype=p.get("dtype"))

    @staticmethod
    def _lane_jacobian(x: np.ndarray, axis: int) -> np.ndarray:
        """``D[o, k, j] = d y_k / d x_j`` for each lane o (zero for j > k)."""
        lanes = _lanes(floats(x), (axis,))  # (M, L)
        length = lanes.shape[1]
        excl = np.ones_like(lanes)
        if length > 1:
            excl[:, 1:] = np.cumprod(lanes[:, :-1], axis=1)
        # tail[o, j, k] = prod_{j < i <= k} x_i (1 for k <= j)
        upper = np.triu(np.ones((length, length), dtype=bool), 1)
        a = np.where(upper[None], lanes[:, None, :], 1.0)
        tail = np.cumprod(a, axis=2)
        d = excl[:, :, None] * tail  # [o, j, k]
        d = np.where(np.tril(np.ones((length, length), dtype=bool))[None].transpose(0, 2, 1),
                     d, 0.0)
        return d.transpose(0, 2, 1)  # [o, k, j]

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        """Lane Jacobian times the tangent lanes."""
        t = tangents[0]
        if t is None:
            return None
        axis = node.params["axis"]
        d = self._lane_jacobian(vals[0], axis)
        tl = _lanes(t, (axis,), lead=1)
        # an overflowed entry times a zero tangent contributes nothing (mul0)
        res = einsum0("okj,poj->pok", d, tl)
        return _unlanes(res, node.out.shape, (axis,))

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """Transposed lane Jacobian times the cotangent lanes."""
        axis = node.params["axis"]
        d = self._lane_jacobian(vals[0], axis)
        cl = _lanes(ct, (axis,), lead=1)
        g = einsum0("okj,pok->poj", d, cl)
        return [_unlanes(g, node.inputs[0].shape, (axis,))]

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Lower-triangular lane Jacobians, valued at each evaluation."""
        if not node.inputs[0].active:
            return [None]
        axis = node.params["axis"]
        rows, cols = _scan_entries(node.inputs[0].shape, axis)
        return [LocalJac(rows, cols, dyn=functools.partial(_cumprod_values, axis))]


def _cumprod_values(axis: int, vals: Sequence[Any], out: Any) -> np.ndarray:
    d = CumProd._lane_jacobian(vals[0], axis)  # [lane, k, j]
    kk, jj = np.tril_indices(d.shape[1])
    return contiguous(d[:, kk, jj]).ravel()


CUMSUM = CumSum()
CUMPROD = CumProd()


# ---------------------------------------------------------------------------------------
# handlers
# ---------------------------------------------------------------------------------------


def _check_plain(name: str, out: Any = None, where: Any = _NoValue, initial: Any = _NoValue,
                 **extra: Any) -> None:
    if where is not _NoValue and where is not True:
        raise UnsupportedPrimitiveError(name, "the `where=` argument is not supported")
    if initial is not _NoValue and initial is not None:
        raise UnsupportedPrimitiveError(name, "the `initial=` argument is not supported")
    if extra:
        raise UnsupportedPrimitiveError(name, f"keyword arguments {sorted(extra)}")


def _finish(res: Any, out: Any) -> Any:
    if out is None:
        return res
    if not isinstance(out, Tracer):  # the same refusal as for ufuncs with a plain `out=`
        raise TracedConversionError(
            "a reduction with `out=` writes a traced result into a plain numpy array, which "
            "would lose its dependence on x; drop `out=` or create the output with "
            "np.empty_like(x) / np.zeros(shape, like=x)."
        )
    out[...] = res
    return out


def _reduce(prim: Primitive, name: str, a: Any, axis: Any, keepdims: Any, dtype: Any = None
            ) -> Any:
    a_shape = np.shape(a._var.value) if isinstance(a, Tracer) else np.shape(a)
    axes = normalize_axes(axis, len(a_shape), name)
    params: dict[str, Any] = {"axes": axes, "keepdims": bool(keepdims)}
    if dtype is not None:
        params["dtype"] = np.dtype(dtype)
    return bind(prim, (a,), params)


@register_function(np.sum, family="reductions", via="reduce_sum")
def _sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False,
         **kw: Any) -> Any:
    where = kw.pop("where", _NoValue)
    if where is not _NoValue and where is not True:  # masked-out elements add 0
        a = np.where(where, a, 0.0)
    _check_plain("numpy.sum", **kw)
    return _finish(_reduce(REDUCE_SUM, "numpy.sum", a, axis, keepdims, dtype), out)


@register_function(np.prod, family="reductions", via="reduce_prod")
def _prod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False,
          **kw: Any) -> Any:
    _check_plain("numpy.prod", **kw)
    return _finish(_reduce(REDUCE_PROD, "numpy.prod", a, axis, keepdims, dtype), out)


def _extremum(prim: Primitive, name: str, a: Any, axis: Any, keepdims: Any, kw: dict[str, Any]
              ) -> Any:
    """``np.max``/``np.min`` with numpy's ``initial=`` (and ``where=``, which needs it).

    The extremum of the group and ``initial``; ``initial`` for an empty or masked-out group.
    """
    initial = kw.pop("initial", _NoValue)
    where = kw.pop("where", _NoValue)
    _check_plain(name, **kw)
    if initial is _NoValue or initial is None:
        if where is not _NoValue and where is not True:
            raise ValueError(f"reduction operation '{name[6:]}imum' does not have an identity, "
                             "so to use a where mask one has to specify 'initial'")
        return _reduce(prim, name, a, axis, keepdims)
    if np.ndim(initial) != 0:
        raise ValueError(f"{name}: `initial` must be a scalar; got shape {np.shape(initial)}")
    big = -np.inf if prim is REDUCE_MAX else np.inf
    both = np.maximum if prim is REDUCE_MAX else np.minimum
    shape = np.shape(a._var.value) if isinstance(a, Tracer) else np.shape(a)
    if where is not _NoValue and where is not True:
        if np.broadcast_shapes(np.shape(where), shape) != shape:  # as numpy: no growing
            raise ValueError(f"{name}: `where` of shape {np.shape(where)} does not broadcast "
                             f"to the array's shape {shape}")
        a = np.where(where, a, big)  # a masked-out element never wins (nor ties)
    axes = normalize_axes(axis, len(shape), name)
    if any(shape[i] == 0 for i in axes):  # empty groups: initial alone, in numpy's dtype
        dtype = np.result_type(a._var.dtype if isinstance(a, Tracer) else np.asarray(a),
                               initial)
        return np.full(_out_shape(shape, axes, bool(keepdims)), initial, dtype=dtype)
    return both(_reduce(prim, name, a, axis, keepdims), initial)


@register_function(np.max, np.amax, family="reductions", via="reduce_max")
def _max(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    return _finish(_extremum(REDUCE_MAX, "numpy.max", a, axis, keepdims, kw), out)


@register_function(np.min, np.amin, family="reductions", via="reduce_min")
def _min(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    return _finish(_extremum(REDUCE_MIN, "numpy.min", a, axis, keepdims, kw), out)


def _nan_extremum(prim: Primitive, name: str, a: Any, axis: Any, out: Any, keepdims: Any,
                  kw: dict[str, Any]) -> Any:
    """``np.nanmax``/``np.nanmin``: NaN elements never win; an all-NaN group gives NaN."""
    kw = {k: v for k, v in kw.items() if v is not _NoValue}
    big = -np.inf if prim is REDUCE_MAX else np.inf
    nan = np.isnan(a)
    has_initial = kw.get("initial") is not None
    res = _extremum(prim, name, np.where(nan, big, a), axis, keepdims, dict(kw))
    if not has_initial:  # (with initial=, numpy's all-NaN group gives initial)
        shape = np.shape(a._var.value) if isinstance(a, Tracer) else np.shape(a)
        if np.size(a) and not any(shape[i] == 0 for i in normalize_axes(axis, len(shape),
                                                                          name)):
            res = np.where(np.all(nan, axis=axis, keepdims=bool(keepdims)), np.nan, res)
    return _finish(res, out)


def _nan_handler(prim: Primitive, name: str) -> Any:
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: Any = _NoValue,
                initial: Any = _NoValue, where: Any = _NoValue) -> Any:
        return _nan_extremum(prim, name, a, axis, out,
                             False if keepdims is _NoValue else keepdims,
                             {"initial": initial, "where": where})

    return handler


register_function(np.nanmax, family="reductions", via="where, reduce_max")(
    _nan_handler(REDUCE_MAX, "numpy.nanmax"))
register_function(np.nanmin, family="reductions", via="where, reduce_min")(
    _nan_handler(REDUCE_MIN, "numpy.nanmin"))


def _scan(prim: Primitive, name: str, a: Any, axis: Any, dtype: Any) -> Any:
    if axis is None:
        a = np.ravel(a)
        axis = 0
    ndim = len(np.shape(a._var.value)) if isinstance(a, Tracer) else np.ndim(a)
    (ax,) = normalize_axes(axis, ndim, name)
    params: dict[str, Any] = {"axis": ax}
    if dtype is not None:
        params["dtype"] = np.dtype(dtype)
    return bind(prim, (a,), params)


@register_function(np.cumsum, np.cumulative_sum, family="reductions", via="cumsum")
def _cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            include_initial: bool = False) -> Any:
    if include_initial:
        raise UnsupportedPrimitiveError("numpy.cumulative_sum", "include_initial=True")
    return _finish(_scan(CUMSUM, "numpy.cumsum", a, axis, dtype), out)


@register_function(np.cumprod, np.cumulative_prod, family="reductions", via="cumprod")
def _cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
             include_initial: bool = False) -> Any:
    if include_initial:
        raise UnsupportedPrimitiveError("numpy.cumulative_prod", "include_initial=True")
    return _finish(_scan(CUMPROD, "numpy.cumprod", a, axis, dtype), out)


# ufunc methods: np.add.reduce(x, axis) and friends (axis defaults to 0 for ufunc.reduce)

def _ufunc_reduce(prim: Primitive, name: str) -> Any:
    def handler(a: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
                keepdims: bool = False, **kw: Any) -> Any:
        _check_plain(name, **kw)
        return _finish(_reduce(prim, name, a, axis, keepdims, dtype), out)

    return handler


def _ufunc_accumulate(prim: Primitive, name: str) -> Any:
    def handler(a: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        return _finish(_scan(prim, name, a, axis, dtype), out)

    return handler


register_ufunc(np.add, "reduce", _ufunc_reduce(REDUCE_SUM, "numpy.add.reduce"),
               family="reductions", via="reduce_sum")
register_ufunc(np.multiply, "reduce", _ufunc_reduce(REDUCE_PROD, "numpy.multiply.reduce"),
               family="reductions", via="reduce_prod")
register_ufunc(np.maximum, "reduce", _ufunc_reduce(REDUCE_MAX, "numpy.maximum.reduce"),
               family="reductions", via="reduce_max")
register_ufunc(np.minimum, "reduce", _ufunc_reduce(REDUCE_MIN, "numpy.minimum.reduce"),
               family="reductions", via="reduce_min")
register_ufunc(np.add, "accumulate", _ufunc_accumulate(CUMSUM, "numpy.add.accumulate"),
               family="reductions", via="cumsum")
register_ufunc(np.multiply, "accumulate", _ufunc_accumulate(CUMPROD, "numpy.multiply.accumulate"),
               family="reductions", via="cumprod")


# -- composites ----------------------------------------------------------------------------


def _count(a: Any, axis: Any) -> int:
    shape = np.shape(a._var.value) if isinstance(a, Tracer) else np.shape(a)
    axes = normalize_axes(axis, len(shape), "count")
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


@register_function(np.mean, family="reductions", via="composite: sum")
def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False,
          **kw: Any) -> Any:
    _check_plain("numpy.mean", **kw)
    return _finish(np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims) / _count(a, axis), out)


@register_function(np.var, family="reductions", via="composite: sum")
def _var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
         keepdims: Any = False, *, mean: Any = None, correction: Any = None, **kw: Any) -> Any:
    _check_plain("numpy.var", **kw)
    if correction is not None:  # numpy 2's array-API name of ddof
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    centre = np.mean(a, axis=axis, keepdims=True) if mean is None else mean
    dev = a - centre
    res = np.sum(dev * dev, axis=axis, keepdims=keepdims) / (_count(a, axis) - ddof)
    return _finish(res, out)


@register_function(np.std, family="reductions", via="composite: sum, sqrt")
def _std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
         keepdims: Any = False, *, mean: Any = None, correction: Any = None, **kw: Any) -> Any:
    _check_plain("numpy.std", **kw)
    return _finish(np.sqrt(np.var(a, axis=axis, ddof=ddof, keepdims=keepdims, mean=mean,
                                  correction=correction)), out)


@register_function(np.average, family="reductions", via="composite: sum")
def _average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
             keepdims: Any = False) -> Any:
    if weights is None:
        avg = np.mean(a, axis=axis, keepdims=keepdims)
        scl = np.full(np.shape(avg), float(_count(a, axis)))  # as numpy: the average's shape
    else:
        if np.ndim(weights) != np.ndim(a):
            if axis is None or np.ndim(weights) != 1:
                raise UnsupportedPrimitiveError("numpy.average", "weights of another shape")
            ax = normalize_axes(axis, np.ndim(a), "numpy.average")[0]
            shape = [1] * np.ndim(a)
            shape[ax] = -1
            weights = np.reshape(weights, shape)
        scl = np.sum(weights * np.ones_like(a), axis=axis, keepdims=keepdims)
        avg = np.sum(a * weights, axis=axis, keepdims=keepdims) / scl
    return (avg, scl) if returned else avg


@register_function(np.ptp, family="reductions", via="composite: max, min")
def _ptp(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False) -> Any:
    return _finish(np.max(a, axis=axis, keepdims=keepdims) - np.min(a, axis=axis,
                                                                    keepdims=keepdims), out)


@register_function(np.trace, family="reductions", via="composite: diagonal, sum")
def _trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
           out: Any = None) -> Any:
    return _finish(np.sum(np.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype), out)


@register_function(np.diff, family="reductions", via="composite: indexing, subtract")
def _diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = _NoValue, append: Any = _NoValue
          ) -> Any:
    if np.ndim(a) == 0:
        raise ValueError("diff requires input that is at least one dimensional")  # numpy's
    n = int(n)
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    if n == 0:
        return a
    if prepend is not _NoValue or append is not _NoValue:
        parts = []
        nd = np.ndim(a)
        ax = normalize_axes(axis, nd, "numpy.diff")[0]
        for extra in (prepend,):
            if extra is not _NoValue:
                parts.append(_along(extra, a, ax))
        parts.append(a)
        if append is not _NoValue:
            parts.append(_along(append, a, ax))
        a = np.concatenate(parts, axis=ax)
    nd = np.ndim(a)
    ax = normalize_axes(axis, nd, "numpy.diff")[0]
    for _ in range(int(n)):
        hi = [slice(None)] * nd
        lo = [slice(None)] * nd
        hi[ax] = slice(1, None)
        lo[ax] = slice(None, -1)
        a = a[tuple(hi)] - a[tuple(lo)]
    return a


def _along(extra: Any, a: Any, ax: int) -> Any:
    if np.ndim(extra) == 0:
        shape = list(np.shape(a))
        shape[ax] = 1
        return np.broadcast_to(extra, tuple(shape))
    return extra


# zero-derivative reductions and queries (results carry no dependencies)


class _ZeroReduction(Primitive):
    zero_derivative = True

    def __init__(self, name: str, fn: Any) -> None:
        self.name = name
        self.fn = fn

    def impl(self, *vals: Any, **params: Any) -> np.ndarray:
        return np.asarray(self.fn(*vals, **params))

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        return None

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        return None

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        return [None] * len(node.inputs)


def _zero_reduction(func: Any, name: str) -> None:
    prim = _ZeroReduction(name, func)

    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False,
                **kw: Any) -> Any:
        params: dict[str, Any] = {"axis": axis}
        if keepdims:
            params["keepdims"] = True
        params.update(kw)
        return _finish(bind(prim, (a,), params), out)

    register_function(func, family="reductions", via=f"{name} (zero derivative)")(handler)


for _f, _n in ((np.all, "all"), (np.any, "any"), (np.argmax, "argmax"), (np.argmin, "argmin"),
               (np.count_nonzero, "count_nonzero")):
    _zero_reduction(_f, _n)


# lookups: where values fall in a sorted table, an index (piecewise constant, zero
# derivative). Used to index, it is read as a value: a branch on the parameters alone (an
# ODE's `rates[np.searchsorted(times, t)]`) is followed as `int(t)` is (ParamGuards); one on
# x is refused in a global trace, as any index computed from x.

_SEARCHSORTED = _ZeroReduction("searchsorted", np.searchsorted)
_DIGITIZE = _ZeroReduction("digitize", np.digitize)


@register_function(np.searchsorted, family="reductions", via="searchsorted (zero derivative)",
                   note="an index; used to index, a branch on its value (followed where it "
                        "depends on the parameters alone)")
def _searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    if isinstance(sorter, Tracer):
        raise UnsupportedPrimitiveError("numpy.searchsorted", "a traced `sorter`")
    params: dict[str, Any] = {"side": side}
    if sorter is not None:
        params["sorter"] = np.asarray(sorter)
    return bind(_SEARCHSORTED, (a, v), params)


@register_function(np.digitize, family="reductions", via="digitize (zero derivative)",
                   note="an index, as np.searchsorted")
def _digitize(x: Any, bins: Any, right: bool = False) -> Any:
    return bind(_DIGITIZE, (x, bins), {"right": bool(right)})
