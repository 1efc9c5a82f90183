"""Indexing: ``x[key]``, ``out[key] = value``, ``np.add.at`` and ``np.bincount``.

Reading ``x[key]`` is data movement (the position array is indexed with the same key), so it
binds the gather of :mod:`sparsejac.primitives.movement`. Assignment ``out[key] = value`` is a
gather too: a position array of ``out`` in which the positions of ``value`` are written at
``key``; the traced ``out`` is then rebound to the result (numpy's in-place semantics, for the
array itself). Scatter-add (``np.add.at``, ``np.bincount(..., weights=...)``) is linear with a
constant 0/1 matrix and binds :data:`~sparsejac.primitives.linear.LINEAR_MAP`.

Index arrays and masks must be constants (or, in local mode, traced values that are then read
at the trace point): a global pattern cannot depend on which elements a traced index picks.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import scipy.sparse as sp

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives import views
from sparsejac.primitives.core import find_trace, register_function, register_ufunc
from sparsejac.primitives.linear import apply_sparse_map
from sparsejac.primitives.movement import (
    GATHER,
    GatherPlan,
    apply_movement,
    first_arg,
    gather_from_positions,
    is_writeable,
    position_range,
)
from sparsejac.tracing.keys import is_basic_key
from sparsejac.tracing.program import Trace, Var
from sparsejac.tracing.tracer import Tracer, concretize

#: numpy's own asarray, bound at import: a trace wraps np.asarray (user code's
#: conversions of buffers), and this package's hot paths need none of that
_asarray = np.asarray


__all__ = ["getitem", "scatter_add", "setitem"]


def _index_key(key: Any, what: str = "an index array or mask used in x[...]") -> Any:
    return concretize(key, what)


def getitem(x: Tracer, key: Any) -> Any:
    """Traced ``x[key]`` for every numpy indexing form (basic, fancy, boolean mask)."""
    key = _index_key(key)
    if is_basic_key(key):
        return _basic_getitem(x, key)
    return apply_movement(operator.getitem, "indexing x[...]", (x, key), {}, first_arg)


def _basic_getitem(x: Tracer, key: Any) -> Any:
    """``x[key]`` for a basic key, built directly: the general path's gather and view link.

    The positions are a slice of a cached ``arange``: no operand specification and no
    second numpy call on positions through it.
    """
    var = x._var
    if var.is_const:
        return apply_movement(operator.getitem, "indexing x[...]", (x, key), {}, first_arg)
    base_value = np.asarray(var.value)
    value = base_value[key]
    positions = position_range(1, var.size).reshape(var.shape)[key]
    result = gather_from_positions(x._trace, [var], positions, value,
                                   lambda vals: np.asarray(vals[0])[key])
    if views.is_view_of(value, base_value):
        views.link_view(x, result, lambda: np.asarray(positions) - 1, is_writeable(value))
    return result


def element(trace: Trace, var: Var, flat: int) -> Tracer:
    """Element ``flat`` (C order) of ``var`` as a 0-d traced value: ``x[i]``, ``x[i, j]``.

    The fast path of scalar indexing (a Python loop over elements): one gather of one
    element, without the general indexing machinery.
    """
    value = _asarray(_asarray(var.value).reshape(-1)[flat])
    if var.is_const:
        return Tracer(trace, trace.const(value))
    identity = var.size == 1 and var.shape == ()
    plan = GatherPlan(index=np.array([flat], dtype=np.int64), shape=(), dtype=value.dtype,
                      sizes=(var.size,), fill_mask=None, fill_values=None, identity=identity)
    return Tracer(trace, trace.emit(GATHER, (var,), {"plan": plan}, value))


def _operand_start(block: Var, seen: dict[int, int], in_vars: list[Var], offset: int
                   ) -> tuple[int, int]:
    """Where ``block`` starts among a gather's operands (added once), and the next offset."""
    start = seen.get(block.id)
    if start is None:
        start = seen[block.id] = offset
        offset += block.size
        in_vars.append(block)
    return start, offset


def merge_writes(trace: Trace, var: Var, writes: dict[int, Any]) -> Var:
    """``var`` after the element writes ``{flat: value}``, recorded as one gather.

    ``out[i] = v`` in a Python loop records nothing per write: the writes are kept on the
    traced array and merged here when the array is next read as a whole, so ``n`` writes
    cost one operation of size ``n`` instead of ``n`` copies of the array (``value`` is a
    :class:`~sparsejac.tracing.program.Var` or a number of the array's dtype, or
    ``(block, j)`` for element ``j`` of a small block written at once: ``x[2 * k:2 * k + 2] =
    v``).
    """
    size = var.size
    new_value = np.array(var.value, copy=True, order="C")  # reshape(-1) below must be a view
    flat_value = new_value.reshape(-1)
    in_vars: list[Var] = []
    if var.is_const:
        positions = np.zeros(size, dtype=np.int64)
        offset = 1
    else:
        positions = np.arange(1, size + 1, dtype=np.int64)
        in_vars.append(var)
        offset = 1 + size
    seen: dict[int, int] = {}
    for flat, item in writes.items():
        block, j = item if type(item) is tuple else (item, 0)  # (a block's element j)
        if isinstance(block, Var):
            pos, offset = _operand_start(block, seen, in_vars, offset)
            positions[flat] = pos + j
            flat_value[flat] = block.value if type(item) is not tuple else \
                np.reshape(block.value, -1)[j]
        else:
            positions[flat] = 0
            flat_value[flat] = item
    res: Tracer = gather_from_positions(trace, in_vars, positions.reshape(var.shape), new_value)
    return res._var


def read_writes(trace: Trace, var: Var, writes: dict[int, Any], positions: np.ndarray
                ) -> Tracer:
    """``x[key]`` at the flat ``positions`` of ``var`` with pending element ``writes``.

    A small read of an array whose element writes are still pending (``R[t] += r_e`` in a
    finite-element loop reads ``R[t]`` before it writes it) gathers the written values and
    ``var``'s other elements directly, leaving the writes pending: merging them for each
    read recorded one operation of the array's whole size per element, a program quadratic
    in the loop's length (found from outside).
    """
    flat = positions.reshape(-1)
    value = np.empty(flat.size, dtype=var.dtype)
    pos = np.zeros(flat.size, dtype=np.int64)
    base = np.asarray(var.value).reshape(-1)
    in_vars: list[Var] = []
    seen: dict[int, int] = {}
    offset = 1
    for i, p in enumerate(flat.tolist()):
        item = writes.get(p)
        if item is None:
            value[i] = base[p]
            if var.is_const:
                continue  # (position 0: the constant value)
            block, j = var, p
        else:
            block, j = item if type(item) is tuple else (item, 0)
            if not isinstance(block, Var):  # a number written
                value[i] = block
                continue
            value[i] = np.reshape(block.value, -1)[j]
        start, offset = _operand_start(block, seen, in_vars, offset)
        pos[i] = start + j
    result: Tracer = gather_from_positions(trace, in_vars, pos.reshape(positions.shape),
                                           value.reshape(positions.shape))
    return result


def setitem(x: Tracer, key: Any, value: Any) -> Tracer:
    """The traced array equal to ``x`` after ``x[key] = value``."""
    if (isinstance(key, Tracer) and not key._var.is_const and key._var.dtype == bool
            and key.shape == x.shape and np.ndim(value) == 0 and x._var.dtype.kind == "f"):
        # y[y < 0] = 0 (a mask moving with x, one value): np.where(mask, value, y), which
        # holds for every x (the mask is recomputed at each call)
        return cast(Tracer, np.where(key, value, x))
    key = _index_key(key, "an index array or mask used in an assignment y[...] = v")
    trace = find_trace([x, value])
    xvar = x._var
    v_traced = isinstance(value, Tracer) and not value._var.is_const
    v_val = value._var.value if isinstance(value, Tracer) else value
    if v_traced and value._var.active and xvar.dtype.kind not in "fc":
        raise TypeError(
            f"assigning a traced value that depends on x into an array of dtype {xvar.dtype} "
            "would truncate it; create the array with a float dtype (np.zeros_like(x))"
        )
    in_vars = []
    offset = 1
    if not xvar.is_const:
        pos = np.arange(offset, offset + xvar.size, dtype=np.int64).reshape(xvar.shape)
        offset += xvar.size
        in_vars.append(xvar)
    else:
        pos = np.zeros(xvar.shape, dtype=np.int64)
    if v_traced:
        vvar = value._var
        pos_v = np.arange(offset, offset + vvar.size, dtype=np.int64).reshape(vvar.shape)
        in_vars.append(vvar)
    else:
        pos_v = np.zeros(np.shape(v_val), dtype=np.int64)
    positions = pos  # a fresh array: written in place
    positions[key] = pos_v
    new_value = np.array(xvar.value, copy=True)
    new_value[key] = v_val
    x_const = xvar.value if xvar.is_const else None

    def replay(vals: Sequence[Any]) -> np.ndarray:
        it = iter(vals)
        out = np.array(x_const if x_const is not None else next(it), copy=True)
        out[key] = next(it) if v_traced else v_val
        return out

    return gather_from_positions(trace, in_vars, positions, new_value,  # type: ignore[no-any-return]
                                 replay)


def scatter_add(a: Any, indices: Any, b: Any, sign: float = 1.0) -> Any:
    """Traced ``a`` after ``np.add.at(a, indices, b)`` (``sign=-1``: ``np.subtract.at``)."""
    indices = concretize(indices, "the indices of numpy.add.at")
    shape = np.shape(a._var.value if isinstance(a, Tracer) else a)
    size = int(np.prod(shape, dtype=np.int64))
    targets = np.arange(size, dtype=np.int64).reshape(shape)[indices]
    b_shape = np.shape(b._var.value if isinstance(b, Tracer) else b)
    b_size = int(np.prod(b_shape, dtype=np.int64))
    b_pos = np.broadcast_to(np.arange(b_size, dtype=np.int64).reshape(b_shape), targets.shape)
    tgt = targets.ravel()
    src = np.ascontiguousarray(b_pos).ravel()
    m = sp.csr_array((np.full(tgt.size, sign), (tgt, src)), shape=(size, b_size))
    m.sum_duplicates()
    dtype = np.result_type(_dtype_of(a), _dtype_of(b))
    return apply_sparse_map((a, b), (None, m), shape, dtype)


def _dtype_of(a: Any) -> Any:
    return a.dtype if isinstance(a, Tracer) else np.asarray(a).dtype


def _add_at(a: Any, indices: Any, b: Any = None) -> None:
    if not isinstance(a, Tracer):
        raise UnsupportedPrimitiveError(
            "numpy.add.at", "the target must be a traced array (create it with np.zeros_like(x))"
        )
    a._rebind(scatter_add(a, indices, b))


def _subtract_at(a: Any, indices: Any, b: Any = None) -> None:
    if not isinstance(a, Tracer):
        raise UnsupportedPrimitiveError(
            "numpy.subtract.at",
            "the target must be a traced array (create it with np.zeros_like(x))",
        )
    a._rebind(scatter_add(a, indices, b, sign=-1.0))


def _add_reduceat(a: Any, indices: Any, axis: int = 0, dtype: Any = None) -> Any:
    """``np.add.reduceat``: segment sums along ``axis``, a constant 0/1 map.

    numpy's rule: segment ``i`` is ``a[idx[i]:idx[i+1]]``, or the element ``a[idx[i]]`` where
    ``idx[i] >= idx[i+1]``; the last runs to the end.
    """
    idx = np.asarray(concretize(indices, "the `indices` of numpy.add.reduceat"))
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise TypeError("numpy.add.reduceat: `indices` must be a 1-D array of integers; got "
                        f"{idx.dtype} of shape {idx.shape}")
    a = a if isinstance(a, Tracer) else np.asarray(a)
    axis = operator.index(axis)
    if not -a.ndim <= axis < a.ndim:
        raise np.exceptions.AxisError(axis, a.ndim)
    axis %= a.ndim
    length = a.shape[axis]
    bad = (idx < 0) | (idx >= length)
    if bad.any():
        raise IndexError(f"index {int(idx[bad][0])} out-of-bounds in add.reduceat "
                         f"[0, {length})")
    idx = idx.astype(np.int64)
    ends = np.append(idx[1:], length)
    ends = np.where(ends > idx, ends, idx + 1)  # (idx[i] >= idx[i+1]: the element alone)
    counts = ends - idx
    rows = np.repeat(np.arange(idx.size, dtype=np.int64), counts)
    starts = np.repeat(idx - np.cumsum(counts) + counts, counts)
    cols = starts + np.arange(rows.size, dtype=np.int64)
    mat = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(idx.size, length))
    moved = np.moveaxis(a, axis, 0)
    flat = moved.reshape(length, -1)
    out = (mat @ flat).reshape((idx.size, *moved.shape[1:]))
    out = np.moveaxis(out, 0, axis)
    return out.astype(dtype) if dtype is not None else out


register_ufunc(np.add, "at", _add_at, family="indexing", via="linear_map")
register_ufunc(np.add, "reduceat", _add_reduceat, family="reductions", via="linear_map")
register_ufunc(np.subtract, "at", _subtract_at, family="indexing", via="linear_map")


@register_function(np.bincount, family="indexing", via="linear_map",
                   note="constant bins; traced `weights=`")
def _bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    bins = np.asarray(concretize(x, "the bins of numpy.bincount")).ravel()
    if weights is None or (isinstance(weights, Tracer) and weights._var.is_const):
        w = None if weights is None else weights._var.value
        return np.bincount(bins, w, minlength)
    size = max(int(minlength), int(bins.max()) + 1 if bins.size else 0)
    if np.shape(weights) != bins.shape:
        raise ValueError("The weights and list don't have the same length.")
    m = sp.csr_array(
        (np.ones(bins.size), (bins, np.arange(bins.size))), shape=(size, bins.size)
    )
    m.sum_duplicates()
    return apply_sparse_map((weights,), (m,), (size,), np.float64)


@register_function(np.copyto, family="indexing", via="gather")
def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    if not isinstance(dst, Tracer):
        raise UnsupportedPrimitiveError(
            "numpy.copyto", "the destination must be a traced array (np.empty_like(x))"
        )
    if where is True:
        dst[...] = src
    else:
        dst._rebind(np.where(where, src, dst))


@register_function(np.put_along_axis, family="indexing", via="gather")
def _put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    if not isinstance(arr, Tracer):
        raise UnsupportedPrimitiveError("numpy.put_along_axis", "the target must be traced")
    indices = concretize(indices, "the indices of numpy.put_along_axis")
    shape = arr.shape
    pos = np.arange(arr.size).reshape(shape)
    sel = np.take_along_axis(pos, indices, axis)
    flat = arr.reshape(-1)
    flat[sel.ravel()] = np.reshape(np.broadcast_to(values, sel.shape), -1)
    arr._rebind(flat.reshape(shape))



@register_function(np.put, family="indexing", via="gather",
                   note="constant indices; `v` repeated as numpy does")
def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    if not isinstance(a, Tracer):
        raise UnsupportedPrimitiveError(
            "numpy.put", "the target must be a traced array (made inside f, or from x)")
    ind = np.asarray(concretize(ind, "the indices of numpy.put"), dtype=np.int64).ravel()
    size = a.size
    if mode == "wrap":
        ind = np.mod(ind, size)
    elif mode == "clip":
        ind = np.clip(ind, 0, size - 1)
    elif mode == "raise":
        if ind.size and (ind.max() >= size or ind.min() < -size):
            raise IndexError(f"index {int(ind.max())} is out of bounds for size {size}")
        ind = np.where(ind < 0, ind + size, ind)
    else:
        raise ValueError(f"Unknown `mode` {mode!r} of numpy.put; expected 'raise', 'wrap' or "
                         "'clip'.")
    if ind.size == 0:
        return
    values = np.ravel(v)
    if np.size(values) != ind.size:  # numpy repeats v over the indices
        values = np.take(values, np.arange(ind.size) % np.size(values))
    # numpy writes in order, so the last of repeated indices wins
    last = np.unique(ind[::-1], return_index=True)[1]
    keep = np.sort(ind.size - 1 - last)
    flat = a.reshape(-1)
    flat[ind[keep]] = values[keep] if isinstance(values, Tracer) else np.asarray(values)[keep]
    a._rebind(flat.reshape(a.shape))
